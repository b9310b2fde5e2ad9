"""Each pin file's readers' answers are kept in the analysis cache by the file's bytes
(project/pin_answers.py, issue 35): a run after one whose pin files are unchanged parses none of
them, answers exactly as a run without the cache, and sees every edit of a pin file."""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_clipfix.analysis.cache import Cache
from amp_clipfix.kinds import Strategy
from amp_clipfix.pipeline import Options, project_target
from amp_clipfix.project import pin_files, pins
from amp_clipfix.project.pin_readers import requirements_reader

FILES = {
    "requirements.txt": "-r requirements/base.txt\nrich\n",
    "requirements/base.txt": "numpy\nlightning==2.1." + "9" * 5000 + "\n",  # past the limit
    "requirements/docs.txt": "sphinx\nlightning==2.1.0\ntorch>=2.1,<2.3 ; python_version > '3.8'\n",
    "setup.cfg": "[options\ninstall_requires = torch\n",  # a warning
}
CACHED = Options(Strategy.AUTO)
UNCACHED = Options(Strategy.AUTO, cache=False)
MEMO = "pins"  # pin_answers.KIND: the kind of the project's entry


@pytest.fixture(autouse=True)
def project(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Pins only (not the Lightning or torch installed next to the tests)."""
    monkeypatch.setattr(pins, "installed_target", lambda: None)
    monkeypatch.setattr(pins, "installed_version", lambda name: None)
    monkeypatch.chdir(tmp_path)
    for name, text in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def counted_parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The readers' parses (pin_files.parse_pins), by the first bytes they were given."""
    parses: list[str] = []
    real = pin_files.parse_pins

    def parse_pins(read, data, packages):  # type: ignore[no-untyped-def]
        parses.append(data[:12].decode("utf-8", "replace"))
        return real(read, data, packages)

    monkeypatch.setattr(pin_files, "parse_pins", parse_pins)
    return parses


def test_unchanged_pin_files_are_not_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cold = project_target(tmp_path, UNCACHED)
    parses = counted_parses(monkeypatch)
    first = project_target(tmp_path, CACHED)
    assert parses, "the first run parses"
    parses.clear()
    second = project_target(tmp_path, CACHED)
    assert parses == []
    assert first == second == cold
    assert cold[0].source == "requirements/docs.txt" and cold[0].torch.source == cold[0].source
    assert [line.split(":")[0] for line in cold[1]] == ["setup.cfg"]  # one per file
    assert [error.path.name for error in cold[2]] == ["base.txt"]  # PastLimit, kept as one


def test_an_edited_pin_file_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project_target(tmp_path, CACHED)
    parses = counted_parses(monkeypatch)
    (tmp_path / "requirements/base.txt").write_text("numpy\nlightning==2.2.0\n", encoding="utf-8")
    warm = project_target(tmp_path, CACHED)
    assert parses == ["numpy\nlightn"] * 2  # the edited file only, once per search
    assert warm == project_target(tmp_path, UNCACHED)
    assert warm[0].source == "requirements/base.txt" and "2.2.0" in str(warm[0]), warm
    (tmp_path / "requirements/base.txt").write_text("numpy\nlightning==2.1.0\n", encoding="utf-8")
    assert project_target(tmp_path, CACHED) == project_target(tmp_path, UNCACHED)


def test_without_the_cache_nothing_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project_target(tmp_path, UNCACHED)
    parses = counted_parses(monkeypatch)
    project_target(tmp_path, UNCACHED)
    assert parses
    assert Cache(tmp_path).load(Cache(tmp_path).project_entry(MEMO, "")) is None


@pytest.mark.parametrize(
    "kept",
    [
        ("pins", (("lightning", "not a specifier", "x", False),)),
        ("pins", (("lightning", "==9.9", "x"),)),
        ("pins", [("lightning", "==9.9", "x", False)]),
        ("other", "a line"),
        ("error", 3),
        (["error"], "a line"),
        None,
    ],
)
def test_a_malformed_answer_is_parsed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept: object
) -> None:
    cold = project_target(tmp_path, UNCACHED)
    project_target(tmp_path, CACHED)
    cache = Cache(tmp_path)
    name = cache.project_entry(MEMO, "")
    stored = cache.load(name)
    assert isinstance(stored, dict) and stored
    cache.store(name, {key: kept for key in stored})
    parses = counted_parses(monkeypatch)
    assert project_target(tmp_path, CACHED) == cold
    assert len(parses) == len(stored)


def test_only_amp_clipfix_s_readers_have_names() -> None:
    from amp_clipfix.project import pin_answers

    assert pin_answers.KIND == MEMO
    assert pin_answers.reader_name(requirements_reader(True)) != pin_answers.reader_name(
        requirements_reader(False)
    )
    assert pin_answers.reader_name(pins.pyproject_pins) == (
        "amp_clipfix.project.pin_readers.pyproject_pins"
    )
    assert pin_answers.reader_name(lambda data, packages: []) is None
    assert pin_answers.reader_name(len) is None  # type: ignore[arg-type]
