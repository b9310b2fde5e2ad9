"""ACF006's fix: torch's clip rewritten to clip through the Fabric (`through_fabric`), and the
edits it makes beside the rewritten clip: the Fabric unscale helper inserted after the module's
imports, and the import the clip was the only use of taken out.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.names import FABRIC_UNSCALE_HELPER, TORCH_CLIPS
from amp_clipfix.analysis.order import Event
from amp_clipfix.helper_sources import FABRIC_HELPER_SOURCE
from amp_clipfix.models import Edit, Site, Span, Strategy
from amp_clipfix.rules.base import RuleFix
from amp_clipfix.rules.fabric_steps import optimizer_may_be_fused

FIX = (
    "rewrites the clip to `fabric.clip_gradients(model, optimizer, max_norm=..., "
    "error_if_nonfinite=False)` (`clip_val=` for `clip_grad_value_`): Fabric unscales the "
    "optimizer's gradients with the run's GradScaler before clipping, and an overflow step the "
    "scaler skips does not raise"
)

FIX_FUSED = (
    f"rewrites the clip to `{FABRIC_UNSCALE_HELPER}(fabric, model, optimizer, max_norm=..., "
    "error_if_nonfinite=False)` (`clip_val=` for `clip_grad_value_`), a helper inserted once "
    "per module, because the optimizer may be fused and `fabric.clip_gradients` refuses a fused "
    "one: the helper unscales a fused optimizer with the run's GradScaler and clips it with "
    "torch (the scaler's step then passes no scale to the fused kernel and skips an overflow "
    "step), and hands any other optimizer to `fabric.clip_gradients`; an overflow step does "
    "not raise"
)


def is_import_block(statement: ast.stmt) -> bool:
    """An import, or a `try`/`if` block of simple lines that exists to import (as the unscale
    fix's helper insertion reads a module's import section)."""
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return True
    if not isinstance(statement, (ast.Try, ast.If)):
        return False
    if isinstance(statement, ast.If):
        test = statement.test
        name = test.attr if isinstance(test, ast.Attribute) else getattr(test, "id", None)
        if name == "TYPE_CHECKING":
            return True
    inner = [node for node in ast.iter_child_nodes(statement) if isinstance(node, ast.stmt)]
    inner += [line for handler in getattr(statement, "handlers", []) for line in handler.body]
    return all(
        isinstance(s, (ast.Import, ast.ImportFrom, *SIMPLE_STATEMENTS)) or is_import_block(s)
        for s in inner
    ) and any(is_import_block(s) for s in inner)


def helper_insertion(file: FileFacts) -> list[Edit] | None:
    """The edit that puts the Fabric unscale helper after the module's imports with PEP 8 blank
    lines, as the unscale fix inserts it (the same text, so a second fix adds nothing: equal
    edits are made once); none when the module defines it already, None when the module has
    no statement after its imports to put it before."""
    body = file.tree.body
    if any(isinstance(s, ast.FunctionDef) and s.name == FABRIC_UNSCALE_HELPER for s in body):
        return []
    index = 0
    for position, statement in enumerate(body):
        docstring = (
            position == 0
            and isinstance(statement, ast.Expr)
            and isinstance(statement.value, ast.Constant)
            and isinstance(statement.value.value, str)
        )
        if is_import_block(statement) or docstring:
            index = position + 1
        elif isinstance(statement, SIMPLE_STATEMENTS) and not any(
            isinstance(n, ast.Name) and n.id == FABRIC_UNSCALE_HELPER for n in ast.walk(statement)
        ):
            continue
        else:
            break
    if index == 0 or index >= len(body):
        return None
    following = body[index]
    first = min([following.lineno, *(d.lineno for d in getattr(following, "decorator_list", []))])
    start = (body[index - 1].end_lineno or body[index - 1].lineno) + 1
    kept = first
    for line in range(start, first):
        if file.line(line).strip():
            kept = line  # comments above the next statement stay with it
            break
    ending = file.newline(start)
    helper = FABRIC_HELPER_SOURCE.replace("\n", ending)
    text = f"{ending}{ending}{helper}{ending}{ending}"
    return [Edit(file.path, Span(start, 0, kept, 0), text)]


SIMPLE_STATEMENTS = (
    ast.Expr,
    ast.Assign,
    ast.AnnAssign,
    ast.AugAssign,
    ast.Pass,
    ast.Delete,
    ast.Global,
    ast.Assert,
    ast.Raise,
)


def unused_import(file: FileFacts, func: ast.expr) -> list[Edit]:
    """The `from ... import clip_grad_norm_` the rewritten call was its only use of, taken out
    (the whole statement when it imports nothing else), so the fix leaves no unused import."""
    if not isinstance(func, ast.Name):
        return []
    uses = [n for n in ast.walk(file.tree) if isinstance(n, ast.Name) and n.id == func.id]
    if len(uses) != 1:
        return []
    for statement in file.tree.body:
        if not isinstance(statement, ast.ImportFrom):
            continue
        names = statement.names
        for index, alias in enumerate(names):
            if (alias.asname or alias.name) != func.id:
                continue
            if len(names) == 1:
                start, end = statement.lineno, statement.end_lineno or statement.lineno
                if file.line(start)[: file.span(statement).column].strip():
                    return []
                return [Edit(file.path, Span(start, 0, end + 1, 0), "")]
            here = file.span(alias)
            if index + 1 < len(names):
                after = file.span(names[index + 1])
                return [Edit(file.path, Span(here.line, here.column, after.line, after.column), "")]
            before = file.span(names[index - 1])
            span = Span(before.end_line, before.end_column, here.end_line, here.end_column)
            return [Edit(file.path, span, "")]
    return []


def through_fabric(
    facts: ProjectFacts,
    file: FileFacts,
    clip: Event,
    backward: Event,
    steps: list[Event],
    target: Site,
) -> tuple[RuleFix, ...]:
    """`fabric.clip_gradients(model, optimizer, max_norm=...)` in place of torch's clip, when
    the clip is written where the backward and the step are, on `model.parameters()`, one
    optimizer steps and it is not fused."""
    call = clip.call
    if clip.via or backward.via or len({s.optimizer for s in steps}) != 1 or steps[0].via:
        return ()
    if backward.scaler_code is None or steps[0].optimizer_code is None:
        return ()
    params = call.args[0] if call.args else None
    for keyword in call.keywords:
        if keyword.arg == "parameters":
            params = keyword.value
    if not (
        isinstance(params, ast.Call)
        and isinstance(params.func, ast.Attribute)
        and params.func.attr == "parameters"
        and not params.args
    ):
        return ()
    fused = False
    for step in steps:  # one optimizer; in a helper's callers, the one each caller steps
        assert isinstance(step.call.func, ast.Attribute)
        fused = fused or optimizer_may_be_fused(facts, step.file, step.call.func.value)
    if fused and (not isinstance(backward.call.func, ast.Attribute) or backward.via):
        return ()
    qualified = facts.qualified_names(file, call.func) & TORCH_CLIPS.keys()
    if not qualified:
        return ()  # a partial of the clip: its arguments are not all written here
    bound = TORCH_CLIPS[sorted(qualified)[0]]
    limit = call.args[1] if len(call.args) > 1 else None
    norm_type = call.args[2] if len(call.args) > 2 else None
    for keyword in call.keywords:
        if keyword.arg == bound:
            limit = keyword.value
        elif keyword.arg == "norm_type":
            norm_type = keyword.value
        elif keyword.arg not in ("parameters", "error_if_nonfinite", "foreach"):
            return ()
    if limit is None or any(isinstance(a, ast.Starred) for a in call.args):
        return ()
    model = file.code(params.func.value)
    arguments = [model, steps[0].optimizer_code]
    if bound == "max_norm":
        arguments.append(f"max_norm={file.code(limit)}")
        if norm_type is not None:
            arguments.append(f"norm_type={file.code(norm_type)}")
        arguments.append("error_if_nonfinite=False")
    else:
        arguments.append(f"clip_val={file.code(limit)}")
    if fused:
        inserted = helper_insertion(file)
        if inserted is None:
            return ()
        code = f"{FABRIC_UNSCALE_HELPER}({', '.join([backward.scaler_code, *arguments])})"
        edits = (file.replace(call, code), *inserted, *unused_import(file, call.func))
        return (RuleFix(Strategy.UNSCALE, edits, safe=True, safety=FIX_FUSED, targets=(target,)),)
    code = f"{backward.scaler_code}.clip_gradients({', '.join(arguments)})"
    edits = (file.replace(call, code), *unused_import(file, call.func))
    return (RuleFix(Strategy.UNSCALE, edits, safe=True, safety=FIX, targets=(target,)),)
