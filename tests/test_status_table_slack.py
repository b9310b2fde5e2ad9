"""The table of settled reads (replay.STATUSES) is written again only when more than
replay.TABLE_SLACK of its files differ from the stored one (`drifted`): a stored status still
means its bytes however old the table is, so after an edit the next runs hash the edited files
again instead of every run sealing and writing the whole table. The output is a cold run's."""

from __future__ import annotations

import io
import shutil
import sys
from pathlib import Path

import pytest
from spied import first_arguments

from amp_clipfix import observed, replay
from amp_clipfix.cache_layout import version_folder

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def entry(number: int) -> tuple[observed.Status, bytes]:
    return (1, number, 3, 4, 5), bytes([number]) * observed.DIGEST_BYTES


def test_a_table_within_the_slack_of_the_stored_one_is_not_written() -> None:
    stored: dict[str, object] = {f"/p/{n}.py": entry(n) for n in range(100)}
    same = {f"/p/{n}.py": entry(n) for n in range(100)}
    assert not replay.drifted(same, stored)
    slack = replay.TABLE_SLACK
    changed = {**same, **{f"/p/{n}.py": entry(n + 1) for n in range(slack)}}
    assert not replay.drifted(changed, stored)
    assert replay.drifted({**changed, "/p/99.py": entry(0)}, stored)
    new = {**same, **{f"/q/{n}.py": entry(n) for n in range(slack + 1)}}
    assert replay.drifted(new, stored)
    gone = {f"/p/{n}.py": entry(n) for n in range(100 - slack)}
    assert not replay.drifted(gone, stored)
    assert replay.drifted(dict(list(gone.items())[1:]), stored)


def test_a_table_with_none_stored_is_written() -> None:
    assert replay.drifted({"/p/a.py": entry(1)}, {})


def run(folder: Path, monkeypatch: pytest.MonkeyPatch, *arguments: str) -> tuple[int, str]:
    """`amp-clipfix check ARGUMENTS .` in process, from `folder`, its output piped."""
    stdout, stderr = io.TextIOWrapper(io.BytesIO()), io.TextIOWrapper(io.BytesIO())
    with monkeypatch.context() as patched:
        patched.chdir(folder)
        patched.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
        patched.setattr(sys, "argv", ["amp-clipfix", "check", "--format", "json", *arguments, "."])
        patched.setattr(sys, "stdout", stdout)
        patched.setattr(sys, "stderr", stderr)
        with pytest.raises(SystemExit) as end:
            replay._main()
        stdout.flush()
    return int(end.value.code or 0), stdout.buffer.getvalue().decode()  # type: ignore[attr-defined]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", root)
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    for number in range(replay.TABLE_SLACK + 4):
        (root / f"extra{number:02}.py").write_text(f"value = {number}\n", encoding="utf-8")
    return root


def test_after_an_edit_the_table_is_kept_and_the_next_runs_hash_the_edited_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hashed = first_arguments(monkeypatch, observed, "_raw_digest")
    monkeypatch.setattr(observed, "SETTLE_NS", 0)  # every file settled once read
    run(project, monkeypatch)
    table = Path(version_folder(project)) / "replay" / replay.STATUSES
    stored = table.read_bytes()

    edited = project / "optim.py"
    for round_ in range(3):  # each run after an edit: the table stays, the edit is hashed
        edited.write_text(edited.read_text() + f"\nunused{round_} = 1\n", encoding="utf-8")
        del hashed[:]
        warm = run(project, monkeypatch)
        assert table.read_bytes() == stored
        texts = {path.read_bytes() for path in project.glob("*.py")}
        assert {data for data in hashed if data in texts} == {edited.read_bytes()}
        assert warm == run(project, monkeypatch, "--no-cache")


def test_edits_beyond_the_slack_write_the_table_again(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observed, "SETTLE_NS", 0)
    run(project, monkeypatch)
    table = Path(version_folder(project)) / "replay" / replay.STATUSES
    stored = table.read_bytes()
    extras = sorted(project.glob("extra*.py"))
    for path in extras[: replay.TABLE_SLACK]:
        path.write_text(path.read_text() + "more = 1\n", encoding="utf-8")
    run(project, monkeypatch)
    assert table.read_bytes() == stored
    extras[-1].write_text(extras[-1].read_text() + "more = 1\n", encoding="utf-8")
    hashed = first_arguments(monkeypatch, observed, "_raw_digest")
    warm = run(project, monkeypatch)
    assert table.read_bytes() != stored  # 17 files differ: written
    assert warm == run(project, monkeypatch, "--no-cache")
    del hashed[:]
    run(project, monkeypatch, "--select", "ACF002")  # not replayed: another command line
    texts = {path.read_bytes() for path in project.glob("*.py")}
    assert not [data for data in hashed if data in texts]
