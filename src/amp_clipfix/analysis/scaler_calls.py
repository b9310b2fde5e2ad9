"""Which calls can make a GradScaler: where the project writes a GradScaler class's name only to
call it there, only a call so spelled can.

ACF004's classifier asks of a step's receiver whether a library `GradScaler(...)` call made its
value (training.is_scaler, event_capable.holds_scaler): each call that may have made it
(an `Opaque` of that call) has its callee evaluated. A callee that is a parameter is followed
through every caller of its function: allennlp's `self._momentum_scheduler.step(metric)`
was made by `constructor_to_call(**kwargs)` in `FromParams.from_params`, whose callers are
138 files.

The evaluator gives a value the library class `torch.amp.GradScaler` (an `Ext` of a
GRAD_SCALERS name) only where a project module writes its name: an import binding it
(`from torch.cuda.amp import GradScaler`, its reads then write the name too), an attribute
`.GradScaler` of a module, or a string literal naming it (`getattr(amp, "GradScaler")`: the
evaluator joins no strings). So where every such writing, in every file that may write the
name as Python reads it (`gate_texts.may_name`), is the callee of a call written right there
(`amp.GradScaler(...)`), an import under its own name, a type annotation (read only to
test for Fabric, callers.declares_fabric: never a value) or a docstring, the class is never
handed on as a value: the only calls whose callee may be it are those spelled with its name.
Anything else (`scaler_cls = amp.GradScaler`, `partial(GradScaler, ...)`, `import ... as S`,
a base class, a string naming it, a file that does not parse, a large module's pruned data
statements, a non-Python file) hands it on, and every callee is asked as before.

The answer reads the files that write the name (a noted scan, then their summaries: a read of
each), so an edit there asks it again in a warm run.

An instance of a project class is a GradScaler where the class scales, unscales and steps as a
library one (`scaler_base`): a library GradScaler class is among its bases by value, and
neither it nor a project class among its bases defines a method torch's class runs for that
(names.GRAD_SCALER_METHODS). The project's own class of that name derives from none.
"""

from __future__ import annotations

import ast
from pathlib import Path

from amp_clipfix.analysis.bodies import peeked_child_nodes
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.names import GRAD_SCALER_METHODS, GRAD_SCALERS
from amp_clipfix.analysis.parse import LargeModule
from amp_clipfix.analysis.recording import scan
from amp_clipfix.analysis.values import ClsV, Ext, Inst, Opaque

# The names the library's GradScaler classes are written with (`GradScaler`, `ShardedGradScaler`).
SCALER_WORDS = frozenset(qname.rsplit(".", 1)[1] for qname in GRAD_SCALERS)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


class ScalerCalls:
    """Per search: whether the GradScaler classes are called only where written
    (`called_where_written`, asked once, on first need), and so which calls may make one."""

    def __init__(self, evaluator: Evaluator) -> None:
        self.evaluator = evaluator
        self.kept: bool | None = None

    def may_make(self, call: ast.Call) -> bool:
        """The call's callee may be a library GradScaler class (see the module's docstring)."""
        return spelled(call.func) or not self.called_where_written()

    def called_where_written(self) -> bool:
        if self.kept is None:
            self.kept = self.every_writing_called()
        return self.kept

    def every_writing_called(self) -> bool:
        contents = self.evaluator.contents
        paths: set[Path] = set()
        for word in sorted(SCALER_WORDS):
            paths.update(scan(contents, ("fn", "may_name", word.encode("ascii"))))
        for path in sorted(paths, key=str):
            try:
                summary = self.evaluator.summary(path)
            except Exception:  # noqa: BLE001 - a file the evaluator cannot read: it may hand on
                return False
            if summary is None or not names_called(summary.tree):
                return False
        return True


def made_scaler(evaluator: Evaluator, values: list[object], calls: ScalerCalls | None) -> bool:
    """Some value was made by a library GradScaler call: an `Opaque` of a call whose callee is
    a GRAD_SCALERS class, each callee evaluated where `calls` says it may be one (None: every
    callee), or an instance of a project subclass that scales, unscales and steps as one
    (`scaler_base`)."""
    for value in values:
        if isinstance(value, Inst) and scaler_base(evaluator, value.cls) is not None:
            return True
        if (
            isinstance(value, Opaque)
            and isinstance(value.node, ast.Call)
            and value.summary is not None  # an Opaque of a config has no module
            and (calls is None or calls.may_make(value.node))
        ):
            callee, made_in = value.node.func, value.summary
            made = evaluator.force(evaluator.ev(callee, evaluator.ctx_of(made_in, callee)))
            if any(isinstance(v, Ext) and v.qname in GRAD_SCALERS for v in made):
                return True
    return False


def scaler_base(evaluator: Evaluator, cls: ClsV) -> str | None:
    """The library GradScaler class a project class scales, unscales and steps as (the first
    by name): one of its bases by value (`class Scaler(torch.amp.GradScaler)`, through an
    alias, another module or a project class between), where neither it nor any project class
    among its bases defines a method torch's class runs for that (names.GRAD_SCALER_METHODS)
    and every other base is such a project class or `object`. A project class of its own
    (ColossalAI's copy of torch's class) derives from none: None."""
    found = library_bases(evaluator, cls, set())
    return min(found) if found else None


def library_bases(evaluator: Evaluator, cls: ClsV, seen: set[int]) -> set[str] | None:
    """The GRAD_SCALERS classes among the class's bases, through project classes that define
    none of GRAD_SCALER_METHODS; None where a class may define one (a decorator, a metaclass,
    a statement of the body that may bind a name other than as a method or an assignment) or
    a base is anything else (a library class of another kind, a value not known)."""
    node = cls.node
    if id(node) in seen or node.decorator_list or node.keywords or may_define(evaluator, node):
        return None
    seen.add(id(node))  # the classes being read: a class among its own bases is refused
    try:
        found: set[str] = set()
        ctx = evaluator.ctx_of(cls.summary, node)
        for base in node.bases:
            for value in evaluator.force(evaluator.ev(base, ctx)):
                if isinstance(value, Ext) and value.qname in GRAD_SCALERS:
                    found.add(value.qname)
                elif isinstance(value, ClsV):
                    inner = library_bases(evaluator, value, seen)
                    if inner is None:
                        return None
                    found |= inner
                elif not is_object(base, value):
                    return None
        return found
    finally:
        seen.discard(id(node))


def is_object(base: ast.expr, value: object) -> bool:
    """The base is Python's `object`: the name `object` bound nowhere in its module (the
    evaluator's value of a name it finds no binding of is an `Opaque` of the name itself)."""
    return (
        isinstance(base, ast.Name)
        and base.id == "object"
        and isinstance(value, Opaque)
        and value.node is base
    )


def may_define(evaluator: Evaluator, node: ast.ClassDef) -> bool:
    """The class body may give the class one of GRAD_SCALER_METHODS (a method, an assignment,
    a method's `self.<name> = ...`: classes.class_members), or binds names in statements it
    does not read (an `if`, a `try`, a loop)."""
    if GRAD_SCALER_METHODS & evaluator.class_members(node).keys():
        return True
    plain = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign, ast.AnnAssign, ast.Expr, ast.Pass)
    return not all(isinstance(statement, plain) for statement in node.body)


def spelled(func: ast.expr) -> bool:
    """The callee is written with a GradScaler's name (`GradScaler`, `amp.GradScaler`)."""
    if isinstance(func, ast.Name):
        return func.id in SCALER_WORDS
    return isinstance(func, ast.Attribute) and func.attr in SCALER_WORDS


def names_called(tree: ast.Module) -> bool:
    """Every writing of a GradScaler's name in the module is a call's callee, an import under
    its own name, an annotation or a docstring (a body nothing has read stays unread)."""
    if isinstance(tree, LargeModule) and tree.pruned:
        return False  # statements left out of the tree may hand the class on
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        if hands_on(node):
            return False
        todo.extend(value_children(node))
    return True


def hands_on(node: ast.AST) -> bool:
    """The node, reached as a value (not a callee, annotation or docstring), writes a name."""
    if isinstance(node, ast.Name):
        return node.id in SCALER_WORDS
    if isinstance(node, ast.Attribute):
        return node.attr in SCALER_WORDS
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
        text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
        return any(word in text for word in SCALER_WORDS)
    if isinstance(node, ast.ImportFrom):
        return any(a.name in SCALER_WORDS and a.asname not in (None, a.name) for a in node.names)
    if isinstance(node, ast.Import):
        return any(SCALER_WORDS & set(a.name.split(".")) for a in node.names)
    return False


def value_children(node: ast.AST) -> list[ast.AST]:
    """The children of `node` that may be values: not a spelled callee (its receiver is), an
    annotation or a docstring."""
    children = peeked_child_nodes(node)
    left_out: ast.AST | None = None
    if isinstance(node, ast.Call) and spelled(node.func):
        left_out = node.func
        if isinstance(node.func, ast.Attribute):
            children.append(node.func.value)
    elif isinstance(node, ast.arg):
        left_out = node.annotation
    elif isinstance(node, FUNCTIONS):
        left_out = node.returns
    elif isinstance(node, ast.AnnAssign):
        left_out = node.annotation
    elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        left_out = node.value
    return children if left_out is None else [c for c in children if c is not left_out]
