"""A search's parts keep each read value equal to another part's as that one object
(candidate_answers.shared_reads): the entry pickles it once, and a warm run reuses the parts
read back from it as a cold run computes them."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_candidate_answers import PYPROJECT, answered, edit, reused
from test_incremental import same_as_cold, write

from amp_clipfix.analysis import candidate_answers, queries
from amp_clipfix.analysis.candidate_answers import Kept, Part, shared_reads

__all__ = ["answered", "reused"]  # the fixtures, shared

# Each passes its config to a `main` whose callers the search looks for: both candidates scan
# the project for the word `main`, and find the same files.
CALLED = """import lightning as L


def main(cfg):
    return L.Trainer(**cfg)


if __name__ == "__main__":
    main({"precision": "16", "max_epochs": 1})
"""
OWN = """import lightning as L

trainer = L.Trainer(precision="bf16")
"""
EVERY = ["a_called.py", "b_own.py", "c_called.py"]


@pytest.fixture
def project(cached_root: Path) -> Path:
    root = cached_root
    write(root, "a_called.py", CALLED)
    write(root, "b_own.py", OWN)
    write(root, "c_called.py", CALLED)
    write(root, "pyproject.toml", PYPROJECT)
    return root


@pytest.fixture
def kept(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Kept]]:
    """The `Kept` records the queries stored, run after run."""
    found: list[Kept] = []
    share = queries.Queries.share

    def spied(self: queries.Queries, field: object) -> object:
        if isinstance(field, Kept):
            found.append(field)
        return share(self, field)

    monkeypatch.setattr(queries.Queries, "share", spied)
    yield found


def shared_values(parts: tuple[Part, ...]) -> tuple[int, int]:
    """Over every two parts, the equal scan values and text tests they hold: how many pairs,
    and how many of them are one object."""
    equal = same = 0
    for index, part in enumerate(parts):
        for other in parts[index + 1 :]:
            for mine, theirs in ((part.reads[1], other.reads[1]), (part.reads[7], other.reads[7])):
                for key, value in mine.items():
                    if key in theirs and theirs[key] == value:
                        equal += 1
                        same += theirs[key] is value
    return equal, same


def test_equal_reads_of_two_candidates_are_one_object(
    project: Path, answered: list[str], reused: list[str], kept: list[Kept]
) -> None:
    """The two candidates calling a `main` scan the same word and test the same texts: stored,
    each such value is one object (pickled once), and the parts read back are reused after an
    edit of the third candidate, the output a cold run's."""
    first = same_as_cold(project)
    assert answered == [*EVERY, *EVERY]
    stored = kept[-1]
    assert [Path(part.path).name for part in stored.parts] == EVERY
    equal, same = shared_values(stored.parts)
    assert equal >= 1
    assert same == equal
    answered.clear()
    edit(project, "b_own.py", 'precision="bf16"', 'precision="bf16", devices=1')
    warm = same_as_cold(project)
    assert reused == ["a_called.py", "c_called.py"]
    assert answered == ["b_own.py", *EVERY]
    assert warm == first


def part(path: str, reads: tuple[object, ...]) -> Part:
    return Part(path, (), reads, None, (), (), (), (), frozenset())  # type: ignore[arg-type]


def reads_of(scan: frozenset[str], tests: dict[str, dict[object, bool]]) -> tuple[object, ...]:
    files = frozenset({"a.py", "b.py"})
    return (files, {("in", b"w"): scan}, {}, {}, frozenset(), frozenset(), {}, tests)


def test_the_values_are_kept_and_what_cannot_be_a_key_stays_apart() -> None:
    """Equal values (a scan, a file's tests, the files read) become one object and compare as
    they did; another file's tests stay its own; a part that read every text (no reads) is
    left as it is; the pickle is smaller."""
    parts = (
        part("a.py", reads_of(frozenset({"x.py", "y.py"}), {"x.py": {("in", b"w"): True}})),
        part("b.py", reads_of(frozenset({"y.py", "x.py"}), {"x.py": {("in", b"w"): True}})),
        part("c.py", reads_of(frozenset({"x.py"}), {"x.py": {("in", b"v"): True}})),
        part("d.py", ()),
    )
    made = shared_reads(parts)
    assert [p.reads for p in made] == [p.reads for p in parts]
    first, second, third, fourth = made
    assert first.reads[0] is second.reads[0] is third.reads[0]
    assert first.reads[1][("in", b"w")] is second.reads[1][("in", b"w")]
    assert first.reads[7]["x.py"] is second.reads[7]["x.py"]
    assert third.reads[7]["x.py"] is parts[2].reads[7]["x.py"]  # type: ignore[index]
    assert fourth is parts[3]
    assert len(pickle.dumps(made)) < len(pickle.dumps(parts))
    assert candidate_answers.Kept(made) == candidate_answers.Kept(parts)
