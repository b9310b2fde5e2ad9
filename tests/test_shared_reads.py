"""What a query read is stored apart from its entry when it is large (queries.Shared: a
`reads-<sha256>` entry), shared by the queries of a run that read the same and loaded once a
run. A shared entry gone is a miss (the queries are computed), never a wrong report; every
warm run prints a cold `--no-cache` run's bytes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_incremental import (
    EDITS,
    computed,
    edit_line,
    project,  # noqa: F401 - the fixture
    reused,
    same_as_cold,
    spied_queries,
)
from test_incremental_rules import query_entries

from amp_clipfix.analysis import queries
from amp_clipfix.analysis.cache import Cache

asked = pytest.fixture(name="asked")(spied_queries)


@pytest.fixture
def shared(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """Every read field stored apart (a small project's are below SHARED_BYTES); the loads of
    shared entries counted, run after run."""
    monkeypatch.setattr(queries, "SHARED_BYTES", 0)
    loads: Counter[str] = Counter()
    load = Cache.load

    def counted(self: Cache, key: str) -> object | None:
        if key.startswith("reads-"):
            loads[key] += 1
        return load(self, key)

    monkeypatch.setattr(Cache, "load", counted)
    yield loads


def shared_entries(root: Path) -> set[str]:
    return {name for name in query_entries(root) if name.startswith("reads-")}


def test_shared_reads_are_loaded_once_a_run_and_reused(
    project: Path,  # noqa: F811 - the fixture
    asked: list[tuple[str, bool]],
    shared: Counter[str],
) -> None:
    """The rules' queries read what the ones before them read: their entries name the same
    shared reads, each loaded once by a run that reuses them all."""
    first = same_as_cold(project)
    names = shared_entries(project)
    rules = sum(1 for name, _ in asked if name.startswith("rule "))
    assert rules >= 2 and len(names) >= 3, (asked, names)
    asked.clear()
    shared.clear()
    EDITS["helper edited"](project)  # a file no query reads
    assert same_as_cold(project) == first
    assert asked and computed(asked) == [], asked
    assert shared and max(shared.values()) == 1, shared
    assert set(shared) <= names


def test_every_edit_with_shared_reads_gives_the_bytes_of_a_cold_run(
    project: Path,  # noqa: F811 - the fixture
    asked: list[tuple[str, bool]],
    shared: Counter[str],
) -> None:
    """The edits of test_incremental, the read fields all shared: the warm run equals the cold
    one each time, and the findings follow the edits."""
    seen = {same_as_cold(project, "--format", "json")}
    for edit in EDITS.values():
        edit(project)
        seen.add(same_as_cold(project, "--format", "json"))
    assert len(seen) >= 6


def test_a_shared_read_gone_is_a_miss(
    project: Path,  # noqa: F811 - the fixture
    asked: list[tuple[str, bool]],
    shared: Counter[str],
) -> None:
    """The shared entries removed (pruned, or the cache folder half cleaned): the queries that
    named them are computed as a cold run computes them, and the bytes are the cold run's."""
    first = same_as_cold(project)
    names = shared_entries(project)
    assert names
    for name in names:
        for found in (project / ".amp_clipfix_cache").rglob(name):
            found.unlink()
    asked.clear()
    edit_line("pkg/helper_1.py", "return x + 1", "return x + 10")(project)
    assert same_as_cold(project) == first
    assert "rule ACF004" in computed(asked) and reused(asked) == [], asked
