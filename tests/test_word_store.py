"""The word index kept in the cache (analysis/word_store.py, branch `edit6`): a run takes the
stored index and splits only the files changed since, and what it answers is, word for word
and file for file, the index `words_of` makes of today's texts. A stale entry is never used:
edits, reverts, renames, added and removed files, many files changed, a file that changes
between runs, an entry that is not one."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_incremental import edit_line, project, rename, same_as_cold, write  # noqa: F401

from amp_clipfix.analysis import word_store
from amp_clipfix.analysis.cache import Cache
from amp_clipfix.analysis.word_index import WordIndex, words_of
from amp_clipfix.analysis.word_store import WordStore

WORDS = [
    b"fused",
    b"step",
    b"clip_grad_norm_",
    b"Trainer",
    b"x1",
    b"_",
    b"self",
    b"\xef\xac\x81eld",  # NFKC `field`: not a word of ASCII bytes, split where `words_of` splits
    b"field",
    b"caf\xc3\xa9",
    b"a.b",
    b"def make(): pass",
    b"import pkg.m",
]


def cache_of(root: Path, monkeypatch: pytest.MonkeyPatch) -> Cache:
    """A run's cache of `root` (a new one each run, as a new process has)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(root.parent / "user-cache"))
    root.mkdir(exist_ok=True)
    return Cache(root)


STORED: dict[Path, dict[Path, bytes]] = {}  # by root: the texts when the index was last stored


def indexed(root: Path, contents: dict[Path, bytes], monkeypatch: pytest.MonkeyPatch) -> int:
    """Index `contents` through the store, check it against `words_of`: the texts it split."""
    store = WordStore(cache_of(root, monkeypatch))
    index = WordIndex(contents)
    index.store = store
    made = index.files_by_words()
    expected = words_of(contents)
    assert {word: made[word] for word in made} == expected
    assert len(made) == len(expected) and all(word in made for word in expected)
    assert made.get(b"no-such-word") is None and b"not_a_word_here" not in made
    if store.wrote:
        STORED[root] = dict(contents)
    assert store.wrote is (store.split >= word_store.STORED_AFTER)
    return store.split


def text(generator: random.Random) -> bytes:
    return b" ".join(generator.choice(WORDS) for _ in range(generator.randrange(0, 6)))


def test_random_edits_give_the_index_of_today_s_texts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run after run of random edits, the stored index brought up to date is `words_of`'s, and
    it splits only the changed files when the list of files is the same and few changed."""
    generator = random.Random(35)
    root = tmp_path / "project"
    contents = {root / f"m{i}.py": text(generator) for i in range(24)}
    history = [dict(contents)]
    assert indexed(root, contents, monkeypatch) == 24  # nothing stored yet: every text
    kinds = {"edit": 0, "revert": 0, "many": 0, "rename": 0, "added": 0, "removed": 0, "none": 0}
    for _ in range(120):
        kind = generator.choice(list(kinds))
        kinds[kind] += 1
        paths = list(contents)
        if kind == "edit":
            for path in generator.sample(paths, generator.randrange(1, 4)):
                contents[path] = text(generator)
        elif kind == "revert":
            earlier = generator.choice(history)
            contents = {path: earlier.get(path, data) for path, data in contents.items()}
        elif kind == "many":
            for path in generator.sample(paths, 12):
                contents[path] = text(generator)
        elif kind == "rename":
            old = generator.choice(paths)
            new = old.with_name(f"r{generator.randrange(10**6)}.py")
            contents = {new if path == old else path: data for path, data in contents.items()}
        elif kind == "added":
            contents[root / f"a{generator.randrange(10**6)}.py"] = text(generator)
        elif kind == "removed" and len(contents) > 4:
            del contents[generator.choice(paths)]
        history.append(dict(contents))
        before = STORED[root]  # what the stored index was made of
        split = indexed(root, contents, monkeypatch)
        if list(contents) != list(before):
            assert split == len(contents)  # another list of files: every text split again
        else:
            changed = sum(contents[path] != before[path] for path in contents)
            few = changed * word_store.UPDATED_SHARE <= len(contents)
            assert split == (changed if few else len(contents)), (kind, changed)
    assert min(kinds.values()) >= 8, kinds


def test_a_file_changed_and_changed_back_between_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A word the edit removes, one it adds, the edit undone: each run answers today's text
    (a file or two changed since the index was stored are split again by each run)."""
    root = tmp_path / "project"
    a, b = root / "a.py", root / "b.py"
    contents = {a: b"def step(): fused\n", b: b"step()\n"}
    contents.update({root / f"other{i}.py": b"x = 1\n" for i in range(14)})  # few changed
    indexed(root, contents, monkeypatch)
    contents[a] = b"def step(): clip\n"
    assert indexed(root, contents, monkeypatch) == 1
    made = WordIndex(contents)
    made.store = WordStore(cache_of(root, monkeypatch))
    assert made.files_by_words().get(b"fused") is None
    assert made.files_by_words()[b"clip"] == [a]
    contents[a] = b"def step(): fused\n"  # back to the stored text: the index as stored
    assert indexed(root, contents, monkeypatch) == 0
    contents[b] = b"fused = step()\n"
    assert indexed(root, contents, monkeypatch) == 1
    made = WordIndex(contents)
    made.store = WordStore(cache_of(root, monkeypatch))
    assert made.files_by_words()[b"fused"] == [a, b]  # in the project's order
    assert made.files_by_words()[b"x"] == list(contents)[2:]


@pytest.mark.parametrize(
    "stored",
    [
        ("not", "an index"),
        (("a.py",), (b"0" * 32,), {b"w": b"\0\0\0\0"}),  # another list of files
        None,
    ],
)
def test_an_entry_that_is_not_today_s_index_is_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stored: object
) -> None:
    """What the key holds is not an index of these files (another shape, another list of
    files, bytes changed on disk): every text is split, the answers are `words_of`'s."""
    root = tmp_path / "project"
    contents = {root / f"{name}.py": b"fused step\n" for name in "abcd"}
    indexed(root, contents, monkeypatch)
    store = WordStore(cache_of(root, monkeypatch))
    if stored is None:  # one byte of the sealed entry changed: not this user's entry
        entry = next(store.cache.folder.rglob(store.key))
        data = bytearray(entry.read_bytes())
        data[-1] ^= 1
        entry.write_bytes(bytes(data))
    else:
        store.cache.store(store.key, stored)
    assert indexed(root, contents, monkeypatch) == 4


def test_a_warm_run_splits_only_the_edited_file(
    project: Path,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The command line: after a cold run, a run that asks the index splits again only the
    texts changed since it was stored (taken from the cache); a rename or an added file, all of
    them; every warm run prints a cold run's bytes."""
    split: list[tuple[int, bool]] = []
    index = WordStore.index

    def spied(self: WordStore, contents: dict[Path, bytes]) -> object:
        try:
            return index(self, contents)
        finally:
            split.append((self.split, self.wrote))

    monkeypatch.setattr(WordStore, "index", spied)
    for i in range(16):  # files no search reads: one changed file is few of them
        write(project, f"pkg/other_{i}.py", f"def other_{i}(x):\n    return x\n")
    same_as_cold(project)
    texts = {path: path.read_bytes() for path in project.rglob("*.py")}  # as last indexed
    steps = [
        edit_line("pkg/module.py", "fused=False", "fused=True"),
        edit_line("pkg/helper_1.py", "return x + 1", "return x + 10"),
        edit_line("pkg/module.py", "fused=True", "fused=False"),
        edit_line("pkg/factory.py", "def ", "_edited = 1\ndef "),
        rename("pkg/helper_3.py", "pkg/helper_9.py"),
        lambda root: write(root, "pkg/user.py", "from pkg.factory import make\n"),
    ]
    asked = []
    for step in steps:
        step(project)
        split.clear()
        warm = amp_clipfix(project, "check", entry=False)
        assert warm == amp_clipfix(project, "check", "--no-cache", entry=False)
        if not split:
            continue  # nothing asked the index: the stored one stays as it was
        now = {path: path.read_bytes() for path in project.rglob("*.py")}
        if sorted(now) == sorted(texts):  # only the files changed since it was stored
            asked.append(sum(now[path] != texts[path] for path in now))
            assert split[0][0] == asked[-1]
        else:
            asked.append(-1)
            assert split[0][0] == len(now)
        if split[0][1]:
            texts = now
    assert -1 in asked and 1 in asked and 2 in asked, asked  # a rename, an edit, two edits
