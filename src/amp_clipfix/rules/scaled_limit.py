"""ACF005's scaled limit: where a clip cannot move into `on_before_optimizer_step`, its limit is
multiplied by the GradScaler's current scale, bound to a name once per step and block
(`scale_binding`); a limit already multiplied by it (inline, or by a name bound to it) is seen
as scaled (`is_scaled`), so the fix is never made twice."""

from __future__ import annotations

import ast

from amp_clipfix.analysis.facts import FileFacts
from amp_clipfix.analysis.lightning_api import MODULE_CLIP_BOUND
from amp_clipfix.analysis.names import TORCH_CLIP_BOUNDS
from amp_clipfix.analysis.order import Event, EventKind
from amp_clipfix.models import Edit, Span

# The GradScaler's current scale as the module reads it: 1.0 without a scaler (bf16, 32-bit).
SCALE_OF = (
    'getattr(getattr({module}.trainer.precision_plugin, "scaler", None), "get_scale", '
    "lambda: 1.0)()"
)


def limit_of(call: ast.Call, detail: object) -> ast.expr | None:
    """The clip's limit as written at the call (`max_norm`, `clip_value`, `gradient_clip_val`)."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None
    names = TORCH_CLIP_BOUNDS if detail == "torch" else {MODULE_CLIP_BOUND}
    for keyword in call.keywords:
        if keyword.arg in names:
            return keyword.value
    return call.args[1] if len(call.args) > 1 else None


def is_scaled(file: FileFacts, call: ast.Call, limit: ast.expr | None) -> bool:
    """The limit is already multiplied by the loss scale the way `limit_scaled` writes it (for
    `self` or a module another object holds): by the scale itself, or by the name a statement
    of the clip's function binds to it."""
    if not (isinstance(limit, ast.BinOp) and isinstance(limit.op, ast.Mult)):
        return False
    if isinstance(limit.right, ast.Name):
        function = file.summary.enclosing(call)[0] or file.tree
        return limit.right.id in scale_names(function)
    return is_scale(limit.right)


def is_scale(node: ast.expr) -> bool:
    """`node` is the GradScaler's scale as `SCALE_OF` writes it, for any module code."""
    module: object = node
    for field in ("func", "args", "args", "value", "value"):  # M of M.trainer.precision_plugin
        module = getattr(module, field, None)
        module = module[0] if isinstance(module, list) and module else module
    if not isinstance(module, ast.expr):
        return False
    written = ast.parse(SCALE_OF.format(module=ast.unparse(module)), mode="eval").body
    return ast.dump(node) == ast.dump(written)


def scale_names(function: ast.AST) -> dict[str, ast.Assign]:
    """The names the function binds to the GradScaler's scale (`loss_scale = getattr(...)()`,
    as `limit_scaled` writes it), with their statements."""
    return {
        node.targets[0].id: node
        for node in ast.walk(function)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and is_scale(node.value)
    }


def scale_binding(
    file: FileFacts, function: ast.AST, order: list[Event], index: int, module: str
) -> tuple[str, tuple[Edit, ...]]:
    """The name the clip at `index` reads the scale from, and the edit that binds it: one
    statement before the step's first clip written in the same block (every clip of the step
    there gives the same edit, made once), or none when the function binds it there already.
    The statement is split by magic trailing commas, so ruff format and black keep it as it is
    at any line length."""
    clip = order[index]
    block = block_of(file, clip.statement)
    anchor = clip.statement
    for event in reversed(order[:index]):
        if event.kind is EventKind.BACKWARD:
            break
        same_block = block_of(file, event.statement) is block
        if event.kind is EventKind.CLIP and not event.via and same_block:
            anchor = event.statement
    scale = ast.dump(ast.parse(SCALE_OF.format(module=module), mode="eval").body)
    bound = scale_names(function)
    for name, statement in bound.items():
        if (
            ast.dump(statement.value) == scale
            and statement.lineno < anchor.lineno
            and block_of(file, statement) in (block, getattr(function, "body", None))
        ):
            return name, ()
    used = {node.id for node in ast.walk(function) if isinstance(node, ast.Name)}
    used |= {node.arg for node in ast.walk(function) if isinstance(node, ast.arg)}
    name, number = "loss_scale", 1
    while name in used:
        number += 1
        name = f"loss_scale_{number}"
    indent = file.indentation(anchor.lineno)
    ending = file.newline(anchor.lineno)
    lines = (
        f"{name} = getattr(",
        f'    getattr({module}.trainer.precision_plugin, "scaler", None),',
        '    "get_scale",',
        "    lambda: 1.0,",
        ")()",
    )
    text = "".join(f"{indent}{line}{ending}" for line in lines)
    return name, (Edit(file.path, Span(anchor.lineno, 0, anchor.lineno, 0), text),)


def block_of(file: FileFacts, statement: ast.stmt) -> list[ast.stmt] | None:
    """The list of statements (a body, an `else`, ...) the statement is one of."""
    parent = file.summary.parent(statement) or file.tree
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(item is statement for item in block):
            return block
    return None
