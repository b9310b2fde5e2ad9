"""The files a reused computation loaded, put back as promised (lazy_files.LazyFiles.promise,
certificate.Watch.put_back): each read when a search first asks for it, at the place in
`loaded` its load had, and never parsed when nothing asks; the output a cold run's."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_candidate_answers import edit
from test_detached_queries import AMP, FSDP, PYPROJECT, SPREAD
from test_incremental import same_as_cold, write

from amp_clipfix.analysis import summary
from amp_clipfix.analysis.lazy_files import LazyFiles


def lazy_files(reads: list[Path]) -> LazyFiles[str]:
    """LazyFiles of no candidates whose `read` notes each path it reads."""

    def read(path: Path) -> str | None:
        reads.append(path)
        return None if path.name == "broken.py" else f"facts of {path.name}"

    return LazyFiles([], lambda path: None, read)


def test_a_promised_file_is_read_on_first_get_at_its_place() -> None:
    reads: list[Path] = []
    lazy = lazy_files(reads)
    lazy.loaded[Path("a.py")] = "facts of a.py"
    lazy.promise(Path("b.py"))
    lazy.loaded[Path("c.py")] = "facts of c.py"
    lazy.promise(Path("a.py"))  # loaded already: stays as it is
    assert reads == []
    assert list(lazy) == [Path("a.py"), Path("b.py"), Path("c.py")]
    assert lazy.get(Path("b.py")) == "facts of b.py"
    assert lazy.get(Path("b.py")) == "facts of b.py"
    assert reads == [Path("b.py")]
    assert list(lazy.loaded.items()) == [
        (Path("a.py"), "facts of a.py"),
        (Path("b.py"), "facts of b.py"),
        (Path("c.py"), "facts of c.py"),
    ]


def test_a_promised_file_that_does_not_read_is_no_load() -> None:
    reads: list[Path] = []
    lazy = lazy_files(reads)
    lazy.promise(Path("broken.py"))
    assert lazy.get(Path("broken.py")) is None
    assert Path("broken.py") not in lazy.loaded
    assert reads == [Path("broken.py")]


@pytest.fixture
def summarised(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The files whose summary a run made (parsed), run after run, by name."""
    names: list[str] = []
    summarise = summary.summarise

    def spied(root: Path, path: Path, *arguments: object, **named: object) -> object:
        names.append(path.name)
        return summarise(root, path, *arguments, **named)

    monkeypatch.setattr(summary, "summarise", spied)
    yield names


def test_a_file_a_reused_search_loaded_is_not_parsed_when_no_later_search_asks(
    cached_root: Path, summarised: list[str]
) -> None:
    """ACF011 loads settings.py (no candidate: it holds no old spelling) to follow the spread.
    b_amp.py edited: ACF011 is reused and ACF012 computed after it, what ACF011 left put back;
    nothing after ACF011 reads settings.py, so the warm run does not parse it (loaded again
    at once, it was)."""
    write(cached_root, "a_spread.py", SPREAD)
    write(cached_root, "settings.py", 'CONFIG = {"precision": "bf16-mixed", "max_epochs": 1}\n')
    write(cached_root, "b_amp.py", AMP)
    write(cached_root, "c_fsdp.py", FSDP)
    write(cached_root, "pyproject.toml", PYPROJECT)
    same_as_cold(cached_root)
    assert "settings.py" in summarised
    summarised.clear()
    edit(cached_root, "b_amp.py", "scaler =", "first = torch.cuda.amp.GradScaler()\nscaler =")
    warm = same_as_cold(cached_root)
    assert b"b_amp.py:4" in warm
    assert summarised.count("settings.py") == 1  # the `--no-cache` run's alone


def test_a_file_a_reused_search_loaded_is_read_when_a_later_search_asks(
    cached_root: Path, summarised: list[str]
) -> None:
    """The same, but ACF013 (computed after ACF012: it counts ACF012's reads) follows the
    Trainer's spread into settings.py for where its `strategy` is written: the promised file
    is read then, and the output is a cold run's."""
    spread = SPREAD.replace("L.Trainer(**CONFIG)", "L.Trainer(gradient_clip_val=1.0, **CONFIG)")
    write(cached_root, "a_spread.py", spread)
    write(cached_root, "settings.py", 'CONFIG = {"strategy": "fsdp", "precision": "bf16-mixed"}\n')
    write(cached_root, "b_amp.py", AMP)
    write(cached_root, "pyproject.toml", PYPROJECT)
    same_as_cold(cached_root)
    summarised.clear()
    edit(cached_root, "b_amp.py", "scaler =", "first = torch.cuda.amp.GradScaler()\nscaler =")
    warm = same_as_cold(cached_root)
    assert b"b_amp.py:4" in warm
    assert summarised.count("settings.py") == 2  # the warm run's, when ACF013 asks, and cold's
