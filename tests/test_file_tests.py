"""Tests of one file's text kept in the cache by the file's sha256 (analysis/file_tests.py,
branch `edit6`): the Trainer stage's prefilter and the searching rules' candidate list test only
the files whose bytes are not the stored ones. A stale result is never used: edits, reverts,
renames, a test that raises, an entry that is not one; from the command line, edits that make a
changed file pass or fail a test give a cold run's bytes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_incremental import MODULE, project, same_as_cold, write  # noqa: F401 - a fixture

from amp_clipfix.analysis import file_tests, per_file_entry
from amp_clipfix.analysis.cache import Cache
from amp_clipfix.analysis.file_tests import FileTests

TEXTS = [b"fused", b"Trainer(x=1)", b"clip_grad_norm_", b"", b"\xef\xac\x81used", b"x = 1"]


def cache_of(root: Path, monkeypatch: pytest.MonkeyPatch) -> Cache:
    monkeypatch.setenv("XDG_CACHE_HOME", str(root.parent / "user-cache"))
    root.mkdir(exist_ok=True)
    return Cache(root)


def run(root: Path, contents: dict[Path, bytes], monkeypatch: pytest.MonkeyPatch) -> int:
    """One run's tests of every file (`b"fused" in data`) checked against the test itself, the
    results saved as a run saves them: how many files were tested."""
    cache = cache_of(root, monkeypatch)
    tests = file_tests.file_tests(cache, "fused")
    assert tests is not None
    for path, data in contents.items():
        assert tests.result(path, data, lambda data=data: b"fused" in data) == (b"fused" in data)
    tested = tests.misses
    cache.save_per_file()
    return tested


def edited(
    generator: random.Random,
    contents: dict[Path, bytes],
    rounds: int,
    kinds: list[str],
    texts: list[bytes] = TEXTS,
) -> Iterator[dict[Path, bytes]]:
    """The project's files after each of `rounds` random changes of `kinds` (an edit of one to
    four files, a revert to an earlier state, a rename, a file added, a file removed), the
    files' bytes made of `texts`."""
    root = next(iter(contents)).parent
    history = [dict(contents)]
    for _ in range(rounds):
        kind = generator.choice(kinds)
        paths = list(contents)
        if kind == "edit":
            for path in generator.sample(paths, generator.randrange(1, 5)):
                contents[path] = generator.choice(texts) + b" " + generator.choice(texts)
        elif kind == "revert":
            earlier = generator.choice(history)
            contents = {path: earlier.get(path, data) for path, data in contents.items()}
        elif kind == "rename":
            old = generator.choice(paths)
            new = old.with_name(f"r{generator.randrange(10**6)}.py")
            contents = {new if path == old else path: data for path, data in contents.items()}
        elif kind == "removed" and len(contents) > 2:
            del contents[generator.choice(paths)]
        else:
            contents[root / f"a{generator.randrange(10**6)}.py"] = generator.choice(texts)
        history.append(dict(contents))
        yield contents


def test_random_edits_test_only_the_files_not_stored_with_their_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edits, reverts, renames, files added: each result is the test's; the files tested are
    those whose path and bytes the stored entry does not hold (a file or two are tested again
    each run until three are: then the entry is written)."""
    generator = random.Random(35)
    root = tmp_path / "project"
    contents = {root / f"m{i}.py": generator.choice(TEXTS) for i in range(12)}
    assert run(root, contents, monkeypatch) == 12
    stored = dict(contents)
    for now in edited(generator, contents, 150, ["edit", "revert", "rename", "added"]):
        expected = sum(stored.get(path) != data for path, data in now.items())
        assert run(root, now, monkeypatch) == expected
        if expected >= per_file_entry.STORED_AFTER:
            stored.update(now)


def test_a_test_that_raises_is_not_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    cache = cache_of(root, monkeypatch)
    tests = FileTests(cache, "boom")

    def boom() -> bool:
        raise ValueError("a bug of ours")

    with pytest.raises(ValueError):
        tests.result(root / "a.py", b"x", boom)
    assert tests.now == {} and tests.misses == 0


@pytest.mark.parametrize("stored", [["not", "a dict"], {"a": "not a result"}, None])
def test_an_entry_that_is_not_one_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stored: object
) -> None:
    """Another shape, a result that is not one, a changed byte: every file is tested."""
    root = tmp_path / "project"
    contents = {root / f"{name}.py": b"fused" for name in "abcd"}
    assert run(root, contents, monkeypatch) == 4
    cache = cache_of(root, monkeypatch)
    key = FileTests(cache, "fused").key
    if stored is None:
        entry = next(cache.folder.rglob(key))
        data = bytearray(entry.read_bytes())
        data[-1] ^= 1
        entry.write_bytes(bytes(data))
    else:
        if isinstance(stored, dict):
            stored = {str(path): "not a result" for path in contents}
        cache.store(key, stored)
    assert run(root, contents, monkeypatch) == 4


def test_warm_runs_test_the_changed_files_and_give_the_cold_bytes(
    project: Path,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """From the command line: after a cold run, an edit tests only the edited file; edits
    that make a file (a module, a config) pass the Trainer stage's prefilter or hold a rule's
    word, and back, each give a cold run's bytes."""
    for i in range(12):
        write(project, f"pkg/other_{i}.py", f"def other_{i}(x):\n    return x\n")
    tested: dict[str, int] = {}
    save = FileTests.save

    def spied(self: FileTests) -> None:
        tested[self.key] = tested.get(self.key, 0) + self.misses
        save(self)

    monkeypatch.setattr(FileTests, "save", spied)
    seen = {same_as_cold(project)}
    assert tested and min(tested.values()) > 12, tested  # the cold run tested every file
    texts = [
        MODULE.format(fused="True").replace("class Module", "class Other")
        + "\n\nL.Trainer(precision='16-mixed', gradient_clip_val=1.0).fit(Other())\n",
        "def other_0(x):\n    return x\n",
        "import torch\n\ndef clip(m):\n    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)\n",
        "def other_0(x):\n    return x\n",
    ]
    configs = [  # a config the rules' queries read when it holds one of their words
        "trainer:\n  max_epochs: 1\n",
        "trainer:\n  precision: 16\n  gradient_clip_val: 1.0\n",
        "trainer:\n  max_epochs: 1\n",
    ]
    edits = [("pkg/other_0.py", text) for text in texts] + [("conf/train.yaml", c) for c in configs]
    for name, text in edits:
        write(project, name, text)
        tested.clear()
        warm = amp_clipfix(project, "check", entry=False)
        assert warm == amp_clipfix(project, "check", "--no-cache", entry=False)
        seen.add(warm.stdout)
        assert tested and max(tested.values()) <= 1, tested  # the edited file alone
    assert len(seen) >= 2, seen  # an edit changed the report
