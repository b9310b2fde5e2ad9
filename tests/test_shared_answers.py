"""A large answer of a query's `derived` reads is stored apart on its own (queries.Shared inside
the field, branch `edit6`): the fields that hold the relevance core differ from query to query
(each adds its own analyses), the core does not, so a run loads it once; its check on the
changed files is asked once a run (derived.still_holds). An answer gone is a miss; every warm
run prints a cold run's bytes."""

from __future__ import annotations

from collections import Counter
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

from amp_clipfix.analysis import derived, queries
from amp_clipfix.analysis.cache import Cache
from amp_clipfix.analysis.recording import READ_FIELDS

asked = pytest.fixture(name="asked")(spied_queries)


def relevance_holders(root: Path) -> dict[str, str]:
    """Each stored query whose `derived` reads hold the relevance core: the key of the entry
    that holds its `derived` field, and of the one that holds the core."""
    cache = Cache(root)
    found = {}
    for name in query_entries(root):
        entry = cache.load(name)
        if not isinstance(entry, queries.Entry):
            continue
        field = entry.reads[READ_FIELDS.index("derived")]
        key = field.key if isinstance(field, queries.Shared) else ""
        values = cache.load(key) if key else field
        assert isinstance(values, dict)
        core = values.get(("relevant",))
        if isinstance(core, queries.Shared):
            found[key] = core.key
    return found


def test_the_relevance_core_is_stored_and_loaded_once(
    project: Path,  # noqa: F811 - the fixture
    asked: list[tuple[str, bool]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Several queries' `derived` fields (each its own entry) name one entry for the core; a
    warm run that checks them all loads it once and checks it once against the edit."""
    monkeypatch.setattr(queries, "SHARED_BYTES", 0)
    first = same_as_cold(project)
    holders = relevance_holders(project)
    assert len(holders) >= 2 and len(set(holders.values())) == 1, holders
    (core,) = set(holders.values())
    loads: Counter[str] = Counter()
    checks: list[int] = []
    load, relevant = Cache.load, derived.DERIVED["relevant"]

    def counted(self: Cache, key: str) -> object | None:
        loads[key] += 1
        return load(self, key)

    def checked(*arguments: object) -> object:
        checks.append(1)
        return relevant(*arguments)

    monkeypatch.setattr(Cache, "load", counted)
    monkeypatch.setitem(derived.DERIVED, "relevant", checked)
    asked.clear()
    EDITS["helper edited"](project)  # a file no query reads: every entry checked and reused
    assert same_as_cold(project) == first
    assert asked and computed(asked) == [], asked
    assert loads[core] == 1 and all(loads[key] == 1 for key in holders), loads
    assert len(checks) == 1, checks  # the check asked once for every entry holding the core


def test_the_core_s_entry_gone_is_a_miss(
    project: Path,  # noqa: F811 - the fixture
    asked: list[tuple[str, bool]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only the core's entry removed (the fields that name it kept): the queries that hold it
    are computed as a cold run computes them, and the bytes are the cold run's."""
    monkeypatch.setattr(queries, "SHARED_BYTES", 0)
    first = same_as_cold(project)
    (core,) = set(relevance_holders(project).values())
    for found in (project / ".amp_clipfix_cache").rglob(core):
        found.unlink()
    asked.clear()
    edit_line("pkg/helper_1.py", "return x + 1", "return x + 10")(project)
    assert same_as_cold(project) == first
    assert {"trial", "resolve", "rule ACF004"} <= set(computed(asked)), asked
    assert all(name.startswith("may_") for name in reused(asked)), asked  # pure: no core read


def test_every_edit_with_shared_answers_gives_the_bytes_of_a_cold_run(
    project: Path,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The edits of test_incremental with every answer shared and every check asked once a
    run: each warm run equals a cold one, and the findings follow the edits."""
    monkeypatch.setattr(queries, "SHARED_BYTES", 0)
    seen = {same_as_cold(project, "--format", "json")}
    for edit in EDITS.values():
        edit(project)
        seen.add(same_as_cold(project, "--format", "json"))
    assert len(seen) >= 6
