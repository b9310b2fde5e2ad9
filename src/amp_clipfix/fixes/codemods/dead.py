"""Remove what a fix made dead: lines nothing reads any more and imports nothing uses.

A fix must not leave a new ruff diagnostic behind (an unused import, F401; an unused variable,
F841), nor break the blank lines around what it removes (E30x). Only names the removed code read
are candidates: an import the user already left unused is theirs to keep.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TypeVar

import libcst as cst
from libcst.metadata import ImportAssignment, MetadataWrapper, ScopeProvider

Body = TypeVar("Body", cst.Module, cst.IndentedBlock)


def names_in(node: cst.CSTNode) -> set[str]:
    """The plain names an expression or statement reads (`torch` for `torch.amp.GradScaler()`)."""
    found: set[str] = set()

    class Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

        def visit_Attribute(self, attribute: cst.Attribute) -> bool:
            attribute.value.visit(self)  # `.attr` is no name of its own
            return False

    node.visit(Names())
    return found


def blank_run(lines: Sequence[cst.EmptyLine], from_end: bool) -> int:
    ordered = reversed(lines) if from_end else iter(lines)
    count = 0
    for line in ordered:
        if line.comment is not None:
            break
        count += 1
    return count


def merged_leading_lines(
    removed: Sequence[cst.EmptyLine], following: Sequence[cst.EmptyLine]
) -> list[cst.EmptyLine]:
    """The next statement's leading lines once the statement before it is removed.

    Comments right above the removed statement (no blank line between) were about it and go
    with it; comments further up stay. Where the blank lines of both meet, the longer run is
    kept, so there are never more blank lines than either had (no E303).
    """
    removed = list(removed)
    while removed and removed[-1].comment is not None:
        removed.pop()
    removed_tail = blank_run(removed, from_end=True)
    following_head = blank_run(following, from_end=False)
    longer = removed[len(removed) - removed_tail :] if removed_tail > following_head else following
    blanks = list(longer[: max(removed_tail, following_head)])
    head = removed[: len(removed) - removed_tail]
    return [*head, *blanks, *following[following_head:]]


Statement = TypeVar("Statement", bound=cst.CSTNode)


def drop_statements(statements: Sequence[Statement], dead: Collection[int]) -> list[Statement]:
    """The statements without the dead positions, blank lines and comments looked after."""
    kept: list[Statement] = []
    carried: list[cst.EmptyLine] = []
    for index, statement in enumerate(statements):
        leading = getattr(statement, "leading_lines", ())
        if index in dead:
            carried = merged_leading_lines(carried, leading)
            continue
        if carried:
            statement = statement.with_changes(leading_lines=merged_leading_lines(carried, leading))
            carried = []
        kept.append(statement)
    return kept


def remove_lines(original: Body, updated: Body, dead: Collection[cst.CSTNode]) -> Body:
    """`updated` without the statements whose original nodes are in `dead`."""
    positions = {index for index, statement in enumerate(original.body) if statement in dead}
    if not positions or len(original.body) != len(updated.body):
        return updated
    body = drop_statements(updated.body, positions)
    if not body and isinstance(updated, cst.IndentedBlock):
        body = [cst.SimpleStatementLine([cst.Pass()])]
    return updated.with_changes(body=body)


def unused_imports(module: cst.Module, candidates: Collection[str]) -> set[str]:
    """Candidates that a top-level import binds and nothing reads any more."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    global_scope = wrapper.resolve(ScopeProvider)[wrapper.module]
    unused: set[str] = set()
    if global_scope is None:
        return unused
    for name in candidates:
        if "." in name or name not in global_scope:
            continue
        assignments = list(global_scope[name])
        if assignments and all(
            isinstance(assignment, ImportAssignment) and not assignment.references
            for assignment in assignments
        ):
            unused.add(name)
    return unused


def bound_name(alias: cst.ImportAlias) -> str:
    target = alias.asname.name if alias.asname is not None else alias.name
    return cst.Module([]).code_for_node(target)


def without_aliases(
    statement: cst.BaseStatement, unused: Collection[str]
) -> cst.BaseStatement | None:
    """An import line without the aliases that bind unused names; None when none is left."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return statement
    small = statement.body[0]
    if not isinstance(small, (cst.Import, cst.ImportFrom)) or isinstance(
        small.names, cst.ImportStar
    ):
        return statement
    aliases = [alias for alias in small.names if bound_name(alias) not in unused]
    if len(aliases) == len(small.names):
        return statement
    if not aliases:
        return None
    aliases[-1] = aliases[-1].with_changes(comma=small.names[-1].comma)
    return statement.with_changes(body=[small.with_changes(names=aliases)])


def remove_unused_imports(module: cst.Module, candidates: Collection[str]) -> cst.Module:
    """Drop the top-level imports of candidate names that nothing reads any more."""
    unused = unused_imports(module, candidates) if candidates else set()
    if not unused:
        return module
    body: list[cst.SimpleStatementLine | cst.BaseCompoundStatement] = []
    dead = set()
    for index, statement in enumerate(module.body):
        kept = without_aliases(statement, unused)
        body.append(statement if kept is None else kept)  # type: ignore[arg-type]
        if kept is None:
            dead.add(index)
    return module.with_changes(body=drop_statements(body, dead))
