"""The checks that a whole-project text analysis of resolve_base.py still gives its answer
after an edit (`recording.derive`; `query_checks.still` runs them on the changed files):
kept apart from resolve_base, which imports the evaluator, so that a run whose queries are all
reused checks them without importing it."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.recording import DERIVED
from amp_clipfix.analysis.relevance import (
    NOT_WORD_TO_SPACE,
    class_lines,
    imported_modules,
    text_words,
    top_level_names,
)

if TYPE_CHECKING:
    from amp_clipfix.analysis.frame import RelevantCore

FUSED = b"fused"


def _still_relevant(
    texts: Mapping[Path, bytes],
    changed: Mapping[Path, bytes],
    answer: RelevantCore,
) -> bool:
    """Whether the relevant files are as they were, with only `changed` files edited (`texts`:
    every searchable file's): no changed file outside the core holds the word or writes a name
    the core defines (none joins); each changed file of the core imports the modules it did,
    defines the names it did and maybe new ones no file outside the core writes, and stays in
    for the reason it was in (holds the word; or, by increasing round, writes a name a file of
    an earlier round defines), so none leaves."""
    rounds, defined, modules = answer
    names = set().union(*defined.values())
    words = {path: text_words(data) for path, data in changed.items()}
    added: set[bytes] = set()
    for path in changed:
        if path in rounds:
            now = top_level_names(changed[path])
            if not now >= defined[path] or imported_modules(changed[path]) != modules[path]:
                return False  # a name gone may take files out of the core; an import, add one
            added |= now - names
    if added:  # new names: no file outside the core may write one
        outside = (data for path, data in texts.items() if path not in rounds)
        if any(not added.isdisjoint(data.translate(NOT_WORD_TO_SPACE).split()) for data in outside):
            return False
    for path, data in changed.items():
        if path not in rounds and (FUSED in data or not names.isdisjoint(words[path])):
            return False
    for path in sorted((p for p in changed if p in rounds), key=rounds.__getitem__):
        data, level = changed[path], rounds[path]
        if FUSED in data:
            continue
        if level == 0:
            return False
        earlier = set().union(*(defined[p] for p, r in rounds.items() if r < level))
        if earlier.isdisjoint(words[path]):
            return False
    return True


def today_relevant(
    texts: Mapping[Path, bytes],
    changed: Mapping[Path, bytes],
    answer: RelevantCore,
) -> RelevantCore | None:
    """The relevance core a cold run computes today (relevance.relevant_core: each file's round,
    names defined, modules imported), from `answer`, noted when only `changed` files differed
    (`texts`: every searchable file's); None where that is not certain. The rounds are a
    breadth-first search's: a file is in round 0 when it holds the word, else one round after
    the earliest file whose names it writes. They stay the search's answer when each changed
    file stays out (no word, no name of the core written) or keeps its round and its imports
    and defines the names it did and maybe more, that no other file writes (no file joins or
    moves to an earlier round through them)."""
    rounds, defined, modules = answer
    now = dict(defined)
    for path, data in changed.items():
        if path in rounds:
            names = frozenset(top_level_names(data))
            if not names >= defined[path] or imported_modules(data) != modules[path]:
                return None
            now[path] = names
    every = set().union(*now.values())
    added = set().union(*(now[path] - defined[path] for path in changed if path in rounds))
    for path, data in texts.items():  # a name newly defined is written by that file alone
        if any(name in data for name in added):
            words = text_words(data) & added
            if not words <= now.get(path, frozenset()) - defined.get(path, frozenset()):
                return None
    for path, data in changed.items():
        words = text_words(data)
        if path not in rounds:
            if FUSED in data or not every.isdisjoint(words):
                return None
            continue
        writes = [rounds[p] for p, names in now.items() if p != path and names & words]
        level = 0 if FUSED in data else min(writes, default=-2) + 1
        if level != rounds[path]:
            return None
    return rounds, now, modules


TextReasons = tuple[frozenset[Path], frozenset[Path], frozenset[bytes]]


def _still_searched(
    texts: Mapping[Path, bytes],
    changed: Mapping[Path, bytes],
    answer: TextReasons,
    kind: str,
    names: tuple[str, ...],
    body: bytes | None,
    within: bytes | None,
) -> bool:
    """Whether a text search gives what it gave, with only `changed` files edited: none of them
    decided it, and none does now (writes a word that reaches the answer: a class line with such
    a base, or such a name); and each is in the answer now as it was."""
    found, deciding, words = answer
    if not all(word.isascii() for word in words):
        return False  # the words of a text are split as ASCII
    for path, data in changed.items():
        if path in deciding or path in found:
            return False
        text = text_words(data)
        if kind == "subclasses":
            if any(bases & words for _, _, bases in class_lines({path: data}).get(path, ())):
                return False
        elif not words.isdisjoint(text):
            return False
    return True


def still_holds(
    known: dict[tuple[object, ...], tuple[object, bool]],
    texts: Mapping[Path, bytes],
    edited: Mapping[Path, bytes],
    key: tuple[object, ...],
    answer: object,
) -> bool:
    """`DERIVED[key[0]]`: whether `answer` still holds with only `edited` files changed, asked
    once a run (`known`, the run's) per answer and set of changed files: a large answer is one
    object in every entry that holds it (queries.Shared), and the texts are the run's. On
    fairseq, every entry but the first holds the same relevance core."""
    asked = (key, id(answer), tuple(edited))
    if asked not in known or known[asked][0] is not answer:
        holds = DERIVED[str(key[0])](texts, edited, answer, *key[1:])
        known[asked] = (answer, bool(holds))  # the answer kept with it: so is its id
    return known[asked][1]


DERIVED["relevant"] = _still_relevant
DERIVED["text_search"] = _still_searched
