"""How deep a parse runs: `ast.parse` and the symbol table give up at a nesting that depends on
the Python frames already running, so a file parsed late (a search's first ask) must be parsed
as deep as it would have been at the start (project_resolve.py's searches and settle).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import ast

    from amp_clipfix.analysis.summary import Summary

T = TypeVar("T")
# The frames a text test's own parse has above its caller (kept_call_test.py): the same answer
# at any depth.
TEST_FRAMES = 1000


def may_parse(text: str) -> bool:
    """Whether Python surely parses `text`, from its symbol table (`symtable`): the parser runs,
    but no `ast` objects are made (a quarter of `ast.parse`'s time). The symbol table refuses
    more than the parser does (`nonlocal` at module level), so False only means "parse it to
    know". It runs a hundred frames below the recursion limit: code nested to within a few
    levels of the limit (where `ast.parse` gives up a level or two before the symbol table)
    is parsed to know as well. Large modules are parsed in pieces (analysis/parse.py) and never
    judged here."""
    import symtable

    from amp_clipfix.analysis.parse import LARGE_MODULE

    if len(text) >= LARGE_MODULE:
        return False
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(max(limit - 100, 200))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            symtable.symtable(text, "<amp-clipfix>", "exec")
    except Exception:  # noqa: BLE001 - any refusal (a RecursionError too): parse it to know
        return False
    finally:
        sys.setrecursionlimit(limit)
    return True


def with_frames(frames: int, call: Callable[[], T]) -> T:
    """`call()` with `frames` Python frames left above this one, whatever runs below: a text
    test that parses (kept_call_test.py, questions.py) gives the same answer at any depth."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(frame_depth() + frames)
    try:
        return call()
    finally:
        sys.setrecursionlimit(limit)


def frame_depth() -> int:
    """How many Python frames are running (what the parser's recursion limit counts)."""
    depth, frame = 0, sys._getframe(1)
    while frame is not None:
        depth, frame = depth + 1, frame.f_back  # type: ignore[assignment]
    return depth


def parse_at_depth(load: Callable[[], Summary | None], depth: int) -> Summary | None:
    """`load()` with the recursion limit moved by how much deeper than `depth` it is called:
    `ast.parse` gives up at a nesting that depends on the frames already running, and a file
    read when a search first asks for it must parse exactly when it would have parsed at the
    start of the searches."""
    limit = sys.getrecursionlimit()
    # `depth` is how deep `read` ran then, and it called the loader directly; now `read` is
    # this frame's caller (`frame_depth() - 1`) and calls it through this frame and a lambda.
    moved = limit + (frame_depth() - 1) + 2 - depth
    if moved == limit:
        return load()
    sys.setrecursionlimit(moved)
    try:
        return load()
    finally:
        sys.setrecursionlimit(limit)


def handed_tree(text: str, tested: tuple[str, ast.Module] | None) -> ast.Module | None:
    """The tree a text test parsed of `text` with `TEST_FRAMES` frames (kept_call_test.py), for
    a parse of the same text that has at least as many frames: `ast.parse` is deterministic,
    so that parse would give an equal tree (a parse with fewer frames may fail: parse it)."""
    if tested is None or tested[0] != text:
        return None
    if sys.getrecursionlimit() - frame_depth() < TEST_FRAMES:
        return None
    return tested[1]
