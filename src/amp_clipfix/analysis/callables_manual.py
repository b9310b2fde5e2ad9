"""Manual optimization through callables: a helper (a project callable given the module's
`self.manual_backward`, a method of a task object holding the module) that runs both the
module's backward and torch's clip, called by the module's step. ACF005 scales the clip's limit
there; this says where the clip is and how the module is written in the helper.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis.callables import bound_receivers, shared_level
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.manual import module_code
from amp_clipfix.analysis.order import Event
from amp_clipfix.records import replace


def helper_clip(
    facts: ProjectFacts, clip: Event, backward: Event
) -> tuple[FileFacts, Event, str] | None:
    """The helper's file, its clip (as the helper reads it) and the module's code there: the
    backward's receiver as written (`self.model.manual_backward(loss)`), or, for the module's
    bound method held as a value (`self.backward_fn(loss)`), its `__self__`, when every value
    the callee may hold is a module's `manual_backward`. None where the two do not meet in one
    helper's own body."""
    level = shared_level(backward, clip)
    if level is None:
        return None
    inner_backward, inner_clip = level
    assert isinstance(inner_backward, Event) and isinstance(inner_clip, Event)
    if inner_clip.via or inner_backward.via or inner_clip.file is not inner_backward.file:
        return None
    where, func = inner_clip.file, inner_backward.call.func
    module = None
    if isinstance(func, ast.Attribute) and func.attr == "manual_backward":
        module = module_code(where, inner_clip, inner_backward)
    elif isinstance(func, (ast.Name, ast.Attribute)) and chain(func):
        bound = bound_receivers(facts, where, func, "manual_backward")
        if bound and len(bound) == len(facts.values(where, func)):
            module = f"{where.code(func)}.__self__"
    return None if module is None else (where, replace(inner_clip, via=()), module)


def chain(node: ast.expr) -> bool:
    """A name or a chain of attributes of one (reading it runs nothing)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name)
