"""Manual optimization by value: which LightningModule a receiver holds, and the optimizers
Lightning gives it.

`self.manual_backward(loss)` in a module's method, `module.clip_gradients(...)` in a function
given the module, `self.model.manual_backward(loss)` in a task object that holds one: the
receiver is a LightningModule because its value is one (an instance or `self` of a module
class), never because of its name. `self` in a mixin's method counts as the module whose method
is being read when the mixin is one of that module's bases.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from amp_clipfix.analysis.callables import bound_receivers
from amp_clipfix.analysis.decorators import replaced
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.order import Body, Event, functions, key
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import ClsV, DictV, Inst, Opaque, Opt, SelfV, TupleV


def module_classes(
    facts: ProjectFacts, summary: Summary, node: ast.AST, owner: ClsV | None
) -> list[ClsV]:
    """The LightningModule classes the expression may be an instance of. `owner` is the class
    whose method is read (a `self` of one of its bases is that class's own instance)."""
    evaluator = facts.evaluator
    found: list[ClsV] = []
    for value in evaluator.force(evaluator.ev(node, evaluator.ctx_of(summary, node))):
        if not isinstance(value, (SelfV, Inst)):
            continue
        cls = value.cls
        if isinstance(value, SelfV) and owner is not None and facts.is_subclass(owner, cls):
            cls = owner
        if facts.is_lightning_module(cls) and not any(c.node is cls.node for c in found):
            found.append(cls)
    return found


def module_call(
    facts: ProjectFacts, file: FileFacts, call: ast.Call, attr: str, owner: ClsV | None
) -> list[ClsV]:
    """`<module>.<attr>(...)` where the receiver may be a LightningModule: its classes."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == attr):
        # the module's method as a value (`self.manual_backward` handed to a helper)
        found: list[ClsV] = []
        for summary, receiver in bound_receivers(facts, file, func, attr):
            found += [c for c in module_classes(facts, summary, receiver, owner) if c not in found]
        return found
    return module_classes(
        facts, facts.evaluator.summary(file.path) or file.summary, func.value, owner
    )


def optimizer_of(facts: ProjectFacts, file: FileFacts, node: ast.expr, owner: ClsV | None) -> bool:
    """The expression holds an optimizer Lightning gave a module (`<module>.optimizers()`, an
    item of it), or one the project built."""
    for value in facts.values(file, node):
        if isinstance(value, Opt):
            return True
        if isinstance(value, Opaque) and value.summary is not None:
            inner = value.node
            while isinstance(inner, (ast.Subscript, ast.Attribute)):
                inner = inner.value
            if (
                isinstance(inner, ast.Call)
                and isinstance(inner.func, ast.Attribute)
                and inner.func.attr == "optimizers"
                and module_classes(facts, value.summary, inner.func.value, owner)
            ):
                return True
    return False


def rest_is_comment(file: FileFacts, statement: ast.stmt) -> bool:
    """Nothing but a comment follows the statement on its last line (`a; b` cannot move)."""
    end = file.span(statement)
    rest = file.line(end.end_line)[end.end_column :].strip()
    return not rest or rest.startswith("#")


def moved_code(
    file: FileFacts, method: ast.FunctionDef, clip: Event, optimizer: str | None
) -> str | None:
    """The clip's code for the hook: the stepped optimizer (a name) becomes `optimizer`; any
    other local of the method makes it unmovable (None)."""
    local = {
        name.id
        for node in ast.walk(method)
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With))
        for name in ast.walk(node)
        if isinstance(name, ast.Name) and isinstance(name.ctx, ast.Store)
    } | {a.arg for a in method.args.args[1:] + method.args.kwonlyargs}
    replaced: list[ast.AST] = []
    call = clip.call
    if clip.detail == "module" and call.args:
        if key(call.args[0]) == optimizer:
            replaced.append(call.args[0])
        else:
            return None
    for node in ast.walk(call):
        if isinstance(node, ast.Name) and node.id in local and not covered(node, replaced):
            if key(node) == optimizer:
                replaced.append(node)
            else:
                return None
    text = file.code(call)
    start = file.span(call)
    lines = text.split("\n")
    for node in sorted(replaced, key=lambda n: file.span(n).line * 10**6 + file.span(n).column)[
        ::-1
    ]:
        span = file.span(node)
        row = span.line - start.line
        first = span.column - (start.column if row == 0 else 0)
        last = span.end_column - (start.column if row == 0 else 0)
        lines[row] = lines[row][:first] + "optimizer" + lines[row][last:]
    indent = file.indentation(start.line)
    return "\n".join([lines[0], *(line.removeprefix(indent) for line in lines[1:])])


def covered(node: ast.AST, replaced: list[ast.AST]) -> bool:
    return any(node is r or node in ast.walk(r) for r in replaced)


def manual_reads(facts: ProjectFacts, file: FileFacts) -> Iterator[tuple[Body, ClsV | None]]:
    """What a manual-optimization search reads in a file that writes `manual_backward`, with
    the class of each function: the methods of LightningModule classes that may optimize
    manually (their helpers are followed from there), and any other function, or the module's
    own code, whose lines write `manual_backward` (a task object, a function given the
    module). Other functions are reached as helpers of these, or not at all."""
    numbered = enumerate(file.data.splitlines(), 1)  # find, not `in`: see prefilter.holds
    written = {n for n, line in numbered if line.find(b"manual_backward") >= 0}
    inside: set[int] = set()
    manual: dict[int, bool] = {}  # id(class node) -> a module that may optimize by hand
    for function in functions(file):
        if isinstance(function, ast.Module):
            continue
        lines = set(range(function.lineno, (function.end_lineno or function.lineno) + 1))
        inside |= lines
        owner = facts.class_of(file, function)
        if owner is not None and id(owner.node) not in manual:
            manual[id(owner.node)] = (
                facts.is_lightning_module(owner) and facts.manual_optimization(owner) is not False
            )
        if not (lines & written or (owner is not None and manual[id(owner.node)])):
            continue  # the decorators of a function not read are not asked about
        if replaced(facts.evaluator, facts.evaluator.summary(file.path) or file.summary, function):
            continue  # a decorator's wrappers run instead, never this body (decorators.py)
        yield function, owner
    if written - inside:
        yield file.tree, None


def module_code(file: FileFacts, clip: Event, backward: Event) -> str | None:
    """The module's code where the clip is written, outside the module's own methods: the
    clip's receiver (`self.net.clip_gradients`), or for torch's clip the receiver of a
    `manual_backward` written in the same function; a name or attribute chain only (a call
    would run twice)."""
    call = clip.call if clip.detail == "module" else backward.call
    if call is backward.call and backward.via:
        return None
    receiver = call.func.value if isinstance(call.func, ast.Attribute) else None
    inner = receiver
    while isinstance(inner, ast.Attribute):
        inner = inner.value
    return file.code(receiver) if receiver is not None and isinstance(inner, ast.Name) else None


def items_of(evaluator: Evaluator, value: object, depth: int = 2) -> list[object]:
    """The optimizers a `configure_optimizers` return stands for: the items of a list or tuple
    (`[opt_a, opt_b]`, `[opt], [sched]`), a dict's `"optimizer"` (with its scheduler)."""
    if depth and isinstance(value, DictV) and value.closed and "optimizer" in value.entries:
        found = evaluator.force(value.entries["optimizer"])
    elif depth and isinstance(value, TupleV):
        found = [v for item in value.items for v in evaluator.force(item)]
    else:
        return [value]
    return [v for item in found for v in items_of(evaluator, item, depth - 1)]
