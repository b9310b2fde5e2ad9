"""A record's probe (replay.py `packed`, `probed`): the questions likeliest to have another
answer (those of the files the command line names, the files read unsettled, the files changed
last) are stored before the rest and asked first, so a run that is not replayed (the pre-commit
hook after an edit) does not load the whole record. Only an order: a replay still asks every
question, and an edit anywhere runs the check again."""

from __future__ import annotations

import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest

from amp_clipfix import observed, replay
from amp_clipfix.cache_layout import seal, secret, unseal, version_folder

MODULE = "import torch\n\nx{number} = torch.optim.AdamW([], fused=True)\n"


def check(project: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """`amp-clipfix check` as a user starts it, from the project, its output piped."""
    variables = {k: v for k, v in os.environ.items() if k != "AMP_CLIPFIX_NO_CACHE"}
    return subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", "--format", "json", *arguments],
        cwd=project,
        env=variables,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def records(project: Path) -> list[Path]:
    folder = Path(version_folder(project)) / "replay"
    return sorted(path for path in folder.iterdir() if replay._is_record_name(path.name))


def rewrite(project: Path, change: object) -> None:
    """Each record's value through `change(value) -> value`, sealed again as the run sealed it."""
    key = secret(project)
    assert key is not None
    for record in records(project):
        value = unseal(key, record.name, record.read_bytes())
        assert value is not None
        record.write_bytes(seal(key, record.name, change(value)))  # type: ignore[operator]


def marked(value: bytes) -> bytes:
    """The record printing `replayed` (its probe kept): what the next run prints says whether
    it replayed."""
    probe, probe_statuses, rest = marshal.loads(value)
    answers, _, code, statuses = marshal.loads(rest)
    noted = marshal.dumps((answers, [(1, b"replayed\n")], code, statuses))
    return marshal.dumps((probe, probe_statuses, noted))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    for number in range(replay.PROBED_READS + 8):  # more files read than the probe holds
        (root / "src" / f"m{number:02}.py").write_text(MODULE.format(number=number), "utf-8")
    return root


def test_the_probe_asks_of_the_named_paths_then_of_the_files_read_unsettled() -> None:
    statuses: dict[str, observed.Status | None] = {
        "/p/old.py": (1, 2, 3, 4, 5),
        "/p/named.py": None,
        "/p/new.py": None,
        "/p/newer.py": None,
    }
    assert replay.probe_paths(["/p/named.py", "/p/gone.py"], statuses) == [
        "/p/named.py",
        "/p/gone.py",
        "/p/new.py",
        "/p/newer.py",
    ]
    many: dict[str, observed.Status | None] = {f"/p/{number}.py": None for number in range(40)}
    assert replay.probe_paths([], many) == [f"/p/{n}.py" for n in range(replay.PROBED_READS)]


def test_the_probe_holds_every_question_of_its_paths_and_no_other() -> None:
    answers: dict[observed.Question, object] = {
        ("scandir", "/p", ""): ("a",),
        ("read", "/p/old.py", ""): "d1",
        ("identity", "/p/named.py", ""): (1, 2, 1),
        ("read", "/p/named.py", ""): "d3",
        ("realpath", "/p/named.py", ""): "/p/named.py",
        ("git", "/p/named.py", "ls-files"): b"",
        ("read", "/p/new.py", ""): "d4",
    }
    assert replay.probed(answers, ["/p/new.py", "/p/named.py", "/p/gone.py"]) == {
        ("read", "/p/new.py", ""): "d4",
        ("read", "/p/named.py", ""): "d3",
        ("identity", "/p/named.py", ""): (1, 2, 1),
        ("realpath", "/p/named.py", ""): "/p/named.py",
    }
    assert list(replay.probed(answers, ["/p/named.py"]))[0] == ("read", "/p/named.py", "")


def test_a_record_holds_its_probe_then_every_question() -> None:
    answers: dict[observed.Question, object] = {
        ("read", f"/p/{number}.py", ""): str(number) for number in range(40)
    }
    answers[("scandir", "/p", "")] = (("0.py", False, True, False),)
    statuses = {f"/p/{number}.py": (1, number, 3, 4, 5) for number in range(0, 40, 2)}
    value = replay.packed(answers, [(1, b"out\n")], 1, statuses, ["/p/3.py", "/p/4.py", "/p"])
    probe, probe_statuses, rest = marshal.loads(value)
    rest_answers, output, code, rest_statuses = marshal.loads(rest)
    assert list(probe) == [("read", "/p/3.py", ""), ("read", "/p/4.py", ""), ("scandir", "/p", "")]
    assert rest_answers == answers
    assert probe_statuses == {"/p/4.py": statuses["/p/4.py"]}
    assert (output, code, rest_statuses) == ([(1, b"out\n")], 1, statuses)
    assert replay.unpacked(value) == (answers, output, code, statuses)


def loads_counted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count replay's `marshal.loads` calls (the probe's, then the rest's)."""
    counted: list[int] = []
    loads = marshal.loads

    def counting(data: bytes) -> object:
        counted.append(len(data))
        return loads(data)

    monkeypatch.setattr(replay.marshal, "loads", counting)
    return counted


@pytest.mark.parametrize("where", ["named", "unnamed"])
def test_an_edit_runs_the_check_again_and_the_probe_stops_at_a_named_file(
    project: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    named = Path("src", "m00.py")
    first = check(project, "--", str(named))
    assert first.returncode == 0  # nothing found: noted all the same
    (record,) = records(project)
    rewrite(project, marked)
    value = unseal(secret(project), record.name, record.read_bytes())  # type: ignore[arg-type]
    assert value is not None
    probe, _, _ = marshal.loads(value)
    probed_paths = {path for _, path, _ in probe}
    assert str(project / named) in probed_paths
    unprobed = [
        path
        for path in sorted((project / "src").iterdir())
        if str(path) not in probed_paths and path != project / named
    ]
    assert unprobed  # more files than the probe holds: the rest is asked too

    edited = project / named if where == "named" else unprobed[0]
    edited.write_text(edited.read_text("utf-8") + "y = 1\n", "utf-8")
    monkeypatch.chdir(project)
    counted = loads_counted(monkeypatch)
    assert replay._record(record.name) is None
    # the named file's edit is seen by the probe: the rest of the record is never loaded
    assert len(counted) == (1 if where == "named" else 2)

    second = check(project, "--", str(named))
    uncached = check(project, "--no-cache", "--", str(named))
    assert second.stdout != "replayed\n"
    assert (second.stdout, second.returncode) == (uncached.stdout, uncached.returncode)


def test_an_unchanged_check_is_replayed_after_the_probe_and_the_rest(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = check(project, ".")
    assert first.returncode == 0  # nothing found: noted all the same
    assert check(project, ".").stdout == first.stdout
    rewrite(project, marked)
    assert check(project, ".").stdout == "replayed\n"
    monkeypatch.chdir(project)
    counted = loads_counted(monkeypatch)
    (record,) = records(project)
    assert replay._record(record.name) == ([(1, b"replayed\n")], 0)
    assert len(counted) == 2


def test_a_record_of_the_earlier_form_is_a_miss(project: Path) -> None:
    first = check(project, ".")

    def earlier(value: bytes) -> bytes:  # one marshalled tuple, no probe (3bd52d3d's records)
        answers, _, code, statuses = replay.unpacked(value)
        return marshal.dumps((answers, [(1, b"replayed\n")], code, statuses))

    rewrite(project, earlier)
    second = check(project, ".")
    assert (second.stdout, second.returncode) == (first.stdout, first.returncode)
