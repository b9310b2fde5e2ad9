"""Follow values across the project: an evaluator of expressions over the files' summaries.

It answers "what may this expression hold?" with symbolic values (values.py), following
assignments (also tuple unpacking), parameters and their defaults (from the call that is being
followed, else from every call of the function in the project), dict literals, `dict(...)`,
`x["k"] = v` and `**` spreads, `functools.partial`, lambdas, returns of functions and factories
across modules, attributes set on `self` and `self.hparams`, and base classes. Anything it cannot
follow is `Opaque`: decided at run time. Depth and a global budget bound the work.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.nodes import child_nodes, target_names
from amp_clipfix.analysis.relevance import ClassLines
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import (
    ClsV,
    DictV,
    Ext,
    FabricV,
    Fn,
    Inst,
    LambdaV,
    Lit,
    ModuleV,
    Opaque,
    Opt,
    Part,
    SelfV,
    TrainerV,
    TupleV,
)
from amp_clipfix.models import EntryId

MAX_DEPTH = 6
# Values one expression may hold before the run-time ones merge: flow-insensitive following
# doubles them at every `x = x.f()` reassignment (neuralforecast has dozens in a row).
MAX_VALUES = 64
BUDGET = 400_000  # evaluations per project; beyond it everything is decided at run time
# Evaluations one question of the resolution may cost (a call in a module's method, a site's
# value): real projects stay under ~8,000; one call into a compiler's own code (lightning-thunder)
# used the whole project budget, 9 s, and left nothing for the questions after it.
QUESTION_BUDGET = 25_000
UNKNOWN_OPTIMIZER = "torch.optim.*"  # getattr(torch.optim, name) with a name not in the code
BUILTINS = {"dict": "builtins.dict", "getattr": "builtins.getattr", "super": "builtins.super"}
CALLBACK_CLASSES = frozenset(
    f"{package}.{module}Callback"
    for package in ("lightning", "lightning.pytorch", "pytorch_lightning")
    for module in ("", "callbacks.", "callbacks.callback.")
)
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


@dataclass(eq=False)
class Thunk:
    """An argument not evaluated yet: the expression and the context it is written in."""

    expr: ast.expr
    ctx: Ctx


@dataclass(eq=False)
class Ctx:
    """Where an expression is evaluated: its module, function, class and, when a particular
    call is followed, the values bound to the function's parameters."""

    summary: Summary
    func: ast.AST | None
    cls: ast.ClassDef | None
    bindings: dict[str, list[object]] | None = None
    depth: int = 0


def literal_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, (bool, int, float, str)):
        return str(node.value)
    if isinstance(node, ast.Constant) and node.value is None:
        return "None"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = literal_of(node.operand)
        return None if inner is None else f"-{inner}"
    return None


def function_body_nodes(function: ast.AST) -> Iterable[ast.AST]:
    """The nodes of a function's own body (not of functions or classes defined inside)."""
    stack = child_nodes(function)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(child_nodes(node))


def all_params(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    found += [a for a in (args.vararg, args.kwarg) if a is not None]
    return found


class Evaluator:
    """Evaluates expressions of one project; summaries are loaded on first use."""

    def __init__(
        self,
        summaries: dict[Path, Summary],
        load: Callable[[Path], Summary | None],
        contents: Mapping[Path, bytes],
    ) -> None:
        self.summaries = summaries
        self.load = load
        self.contents = contents  # the project's Python files, searched as text before parsing
        self.relevant: set[Path] | None = None  # the files a fused value can reach (resolve.py)
        # (kind, names, body pattern) -> files: see resolve.text_search
        self.text_searches: dict[tuple[str, tuple[str, ...], bytes | None], set[Path]] = {}
        self.class_lines: ClassLines | None = None  # relevance.class_lines of `contents`
        self.by_module: dict[str, list[Path]] = {}
        self.memo: dict[tuple[int, int], list[object]] = {}
        self.running: set[tuple[int, int]] = set()
        self.contexts: dict[tuple[int, int], Ctx] = {}
        self.keep: list[object] = []  # contexts made for calls live as long as their memo
        self.locals_cache: dict[int, dict[str, list[ast.AST]]] = {}
        self.body_cache: dict[int, list[ast.AST]] = {}  # function_body_nodes, by function
        self.item_cache: dict[int, list[ast.stmt]] = {}  # item_statements, by scope
        # `fabric.launch(fn, *args)` as the call `fn(fabric, *args)` it makes, by launch call
        self.launched: dict[int, tuple[ast.Call, ast.Call]] = {}
        self.callers_cache: dict[tuple[int, str], list[object]] = {}
        self.caller_files_cache: dict[tuple[str, Path], list[Path]] = {}
        self.name_index: dict[bytes, list[Path]] | None = None
        self.import_index: dict[Path, frozenset[bytes]] = {}
        self.attr_cache: dict[tuple[int, str], list[object]] = {}
        self.mro_cache: dict[int, list[object]] = {}
        self.assignments_cache: dict[int, dict[str, list[ast.AST]]] = {}
        self.word_files: dict[bytes, list[Path]] = {}
        self.size = sum(len(data) for data in contents.values())
        self.budget = BUDGET
        self.question_budget = QUESTION_BUDGET
        self.resolving: set[str] = set()

    # -- modules -------------------------------------------------------------------------------

    def index_modules(self, paths: dict[str, Path]) -> None:
        for module, path in paths.items():
            self.by_module.setdefault(module, []).append(path)

    def find_module(self, dotted: str) -> Summary | None:
        paths = self.by_module.get(dotted)
        if paths is None:
            suffix = "." + dotted
            paths = [p for name, ps in self.by_module.items() if name.endswith(suffix) for p in ps]
            self.by_module[dotted] = paths
        for path in paths:
            summary = self.summary(path)
            if summary is not None:
                return summary
        return None

    def summary(self, path: Path) -> Summary | None:
        if path not in self.summaries:
            loaded = self.load(path)
            if loaded is None:
                return None
            self.summaries[path] = loaded
        return self.summaries[path]

    def resolve_qname(self, qname: str, node: ast.AST, summary: Summary) -> list[object]:
        """A qualified name: a project module's symbol when the project has that module."""
        if qname in self.resolving:  # an import cycle (`from . import x` in a package)
            return [Ext(qname)]
        self.resolving.add(qname)
        try:
            return self.resolve_project_name(qname, node, summary)
        finally:
            self.resolving.discard(qname)

    def resolve_project_name(self, qname: str, node: ast.AST, summary: Summary) -> list[object]:
        parts = qname.split(".")
        if parts[0] in ("torch", "lightning", "pytorch_lightning", "lightning_fabric", "builtins"):
            return [Ext(qname)]
        for cut in range(len(parts), 0, -1):
            module = self.find_module(".".join(parts[:cut]))
            if module is None or module is summary and cut == len(parts):
                continue
            values: list[object] = [ModuleV(module)]
            for attr in parts[cut:]:
                values = [v for value in values for v in self.attribute_of(value, attr, node)]
            return values
        return [Ext(qname)]

    def module_symbol(self, summary: Summary, name: str, node: ast.AST) -> list[object]:
        ctx = self.ctx(summary, None, None)
        if name in summary.top:
            return [v for binding in summary.top[name] for v in self.binding(binding, name, ctx)]
        if name in summary.imports:
            return self.resolve_qname(summary.imports[name], node, summary)
        if summary.is_package:
            sub = self.find_module(f"{summary.name}.{name}" if summary.name else name)
            if sub is not None:
                return [ModuleV(sub)]
        return [Opaque(node, summary)]

    # -- contexts ------------------------------------------------------------------------------

    def ctx(self, summary: Summary, func: ast.AST | None, cls: ast.ClassDef | None) -> Ctx:
        """The shared context of a function evaluated without a particular call."""
        key = (id(summary), id(func))
        if key not in self.contexts:
            self.contexts[key] = Ctx(summary, func, cls)
        return self.contexts[key]

    def ctx_of(self, summary: Summary, node: ast.AST) -> Ctx:
        function, cls = summary.enclosing(node)
        return self.ctx(summary, function, cls)

    def force(self, items: Iterable[object]) -> list[object]:
        values: list[object] = []
        for item in items:
            if isinstance(item, Thunk):
                add_unique(values, self.ev(item.expr, item.ctx))
            else:
                add_unique(values, (item,))
        return values

    # -- expressions ---------------------------------------------------------------------------

    def ev(self, node: ast.AST, ctx: Ctx) -> list[object]:
        key = (id(node), id(ctx))
        if key in self.memo:
            return self.memo[key]
        if not self.running:  # asked by the resolution, not by another evaluation
            self.question_budget = QUESTION_BUDGET
        if (
            key in self.running
            or self.budget <= 0
            or self.question_budget <= 0
            or ctx.depth > MAX_DEPTH
        ):
            return [Opaque(node, ctx.summary)]
        self.budget -= 1
        self.question_budget -= 1
        self.running.add(key)
        try:
            values = self.ev_node(node, ctx)
        finally:
            self.running.discard(key)
        if len(values) > MAX_VALUES:
            values = bounded(values, node, ctx)
        self.memo[key] = values
        return values

    def ev_node(self, node: ast.AST, ctx: Ctx) -> list[object]:  # noqa: C901 - a dispatch
        literal = literal_of(node)
        if literal is not None:
            return [Lit(literal, node, ctx.summary)]
        if isinstance(node, ast.Name):
            return self.ev_name(node, ctx)
        if isinstance(node, ast.Attribute):
            return self.ev_attribute(node, ctx)
        if isinstance(node, ast.Call):
            return self.ev_call(node, ctx)
        if isinstance(node, ast.Dict):
            return [self.dict_literal(node, ctx)]
        if isinstance(node, ast.IfExp):
            return self.ev(node.body, ctx) + self.ev(node.orelse, ctx)
        if isinstance(node, ast.BoolOp):
            return [v for value in node.values for v in self.ev(value, ctx)]
        if isinstance(node, (ast.Tuple, ast.List)):
            return [TupleV([[Thunk(element, ctx)] for element in node.elts])]
        if isinstance(node, ast.Lambda):
            return [LambdaV(node, ctx)]
        if isinstance(node, ast.NamedExpr):
            return self.ev(node.value, ctx)
        if isinstance(node, ast.Subscript):
            return self.ev_subscript(node, ctx)
        return [Opaque(node, ctx.summary)]

    def dict_literal(self, node: ast.Dict, ctx: Ctx) -> DictV:
        result = DictV()
        for key, value in zip(node.keys, node.values):
            if key is None:
                self.merge_spread(result, self.ev(value, ctx))
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                result.entries[key.value] = [Thunk(value, ctx)]
            else:
                result.closed = False
        return result

    def merge_spread(self, into: DictV, values: list[object]) -> None:
        for value in values:
            if isinstance(value, DictV):
                for key, items in value.entries.items():
                    add_unique(into.entries.setdefault(key, []), items)
                into.closed = into.closed and value.closed
            else:
                into.closed = False

    def ev_subscript(self, node: ast.Subscript, ctx: Ctx) -> list[object]:
        key = literal_of(node.slice)
        base = node.value
        if key is not None and isinstance(base, ast.Attribute) and base.attr == "hparams":
            owners = [v for v in self.ev(base.value, ctx) if isinstance(v, SelfV)]
            if owners:
                return [v for owner in owners for v in self.hparam(owner.cls, key, node)]
        values: list[object] = []
        for value in self.ev(base, ctx):
            if isinstance(value, DictV) and key is not None and key in value.entries:
                values.extend(self.force(value.entries[key]))
            elif isinstance(value, DictV) and key is None and value.closed and value.entries:
                # A key decided at run time: one of the values (any other key raises KeyError).
                for entry in value.entries.values():
                    values.extend(self.force(entry))
            elif isinstance(value, TupleV) and key is not None and key.lstrip("-").isdigit():
                index = int(key)
                if -len(value.items) <= index < len(value.items):
                    values.extend(self.force(value.items[index]))
            else:
                values.append(Opaque(node, ctx.summary))
        return values

    # -- names ---------------------------------------------------------------------------------

    def ev_name(self, node: ast.Name, ctx: Ctx) -> list[object]:
        name = node.id
        function = ctx.func
        while function is not None:
            params = all_params(function.args)  # type: ignore[attr-defined]
            is_param = any(param.arg == name for param in params)
            # Flow-insensitive: a parameter also holds what the body assigns to it, except in
            # the assignment being evaluated (`precision = precision or default()`).
            local = [
                binding
                for binding in self.local_bindings(function).get(name, [])
                if not contains(binding, node)
            ]
            if is_param or local:
                fctx = ctx if function is ctx.func else self.ctx_of(ctx.summary, function)
                values = self.parameter(function, name, node, ctx) if is_param else []
                values += [v for binding in local for v in self.binding(binding, name, fctx)]
                return self.with_item_assignments(values, function, name, fctx)
            function, _ = ctx.summary.enclosing(function)
            ctx = self.ctx_of(ctx.summary, function) if function is not None else ctx
        if name in ctx.summary.top or name in ctx.summary.imports:
            values = self.module_symbol(ctx.summary, name, node)
            return self.with_item_assignments(values, ctx.summary.tree, name, ctx)
        if name in BUILTINS:
            return [Ext(BUILTINS[name])]
        return [Opaque(node, ctx.summary)]

    def body(self, function: ast.AST) -> list[ast.AST]:
        """The nodes of a function's own body, walked once per run: the returns of a function
        are read at each of its calls (a framework's helpers are called thousands of times)."""
        key = id(function)
        if key not in self.body_cache:
            self.body_cache[key] = list(function_body_nodes(function))
        return self.body_cache[key]

    def local_bindings(self, function: ast.AST) -> dict[str, list[ast.AST]]:
        key = id(function)
        if key not in self.locals_cache:
            found: dict[str, list[ast.AST]] = {}
            for node in self.body(function):
                for name in bound_names(node):
                    found.setdefault(name, []).append(node)
            self.locals_cache[key] = found
        return self.locals_cache[key]

    def item_statements(self, scope: ast.AST) -> list[ast.stmt]:
        """The assignments and expression statements of a scope (what with_item_assignments
        reads), picked once per scope: a name is looked up there at every use."""
        key = id(scope)
        if key not in self.item_cache:
            nodes = self.body(scope) if not isinstance(scope, ast.Module) else scope.body
            self.item_cache[key] = [n for n in nodes if isinstance(n, (ast.Assign, ast.Expr))]
        return self.item_cache[key]

    def with_item_assignments(
        self, values: list[object], scope: ast.AST, name: str, ctx: Ctx
    ) -> list[object]:
        """`kwargs["fused"] = True` and `kwargs.update(fused=True)` set an entry of the dict
        `kwargs` holds; `kwargs.setdefault("fused", True)` adds one of its possible values.
        On a dict not known here (a `**kwargs` no caller fills) they make an open dict."""
        added, defaults = DictV(), DictV()
        for statement in self.item_statements(scope):
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    if (
                        isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == name
                        and isinstance(literal_of(target.slice), str)
                    ):
                        key = literal_of(target.slice)
                        added.entries.setdefault(key, []).append(Thunk(statement.value, ctx))  # type: ignore[arg-type]
            elif isinstance(statement, ast.Expr):
                dict_method_entries(statement.value, name, ctx, added, defaults)
        if not added.entries and not defaults.entries:
            return values
        if not any(isinstance(value, DictV) for value in values):
            return [*values, DictV({**defaults.entries, **added.entries}, closed=False)]
        return [
            DictV(
                {
                    **value.entries,
                    **{  # a key the dict surely holds keeps its value
                        key: [*value.entries.get(key, []), *items]
                        for key, items in defaults.entries.items()
                        if not (value.closed and key in value.entries)
                    },
                    **added.entries,
                },
                value.closed,
            )
            if isinstance(value, DictV)
            else value
            for value in values
        ]

    def binding(self, binding: ast.AST, name: str, ctx: Ctx) -> list[object]:
        if isinstance(binding, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return [Fn(binding, ctx.summary)]
        if isinstance(binding, ast.ClassDef):
            return [ClsV(binding, ctx.summary)]
        if isinstance(binding, ast.Assign):
            values: list[object] = []
            for target in binding.targets:
                path = target_path(target, name)
                if path is not None:
                    values.extend(self.ev_path(binding.value, path, ctx))
            return values
        if isinstance(binding, ast.AnnAssign) and binding.value is not None:
            return self.ev(binding.value, ctx)
        if isinstance(binding, (ast.Import, ast.ImportFrom)):
            for alias in binding.names:
                local = alias.asname or alias.name.split(".", 1)[0]
                if local == name:
                    base = binding.module if isinstance(binding, ast.ImportFrom) else None
                    qname = f"{base}.{alias.name}" if base else alias.name
                    return self.resolve_qname(qname, binding, ctx.summary)
        return [Opaque(binding, ctx.summary)]

    def ev_path(self, value: ast.expr, path: tuple[int, ...], ctx: Ctx) -> list[object]:
        """The part of `value` a tuple-unpacking target takes (`a, b = 1, True`)."""
        if not path:
            return self.ev(value, ctx)
        if isinstance(value, (ast.Tuple, ast.List)) and not any(
            isinstance(element, ast.Starred) for element in value.elts
        ):
            if path[0] < len(value.elts):
                return self.ev_path(value.elts[path[0]], path[1:], ctx)
            return [Opaque(value, ctx.summary)]
        values: list[object] = []
        for item in self.ev(value, ctx):
            if isinstance(item, TupleV) and path[0] < len(item.items):
                values.extend(self.force(item.items[path[0]]))  # deeper levels: run time
            else:
                values.append(Opaque(value, ctx.summary))
        return values

    # -- parameters ----------------------------------------------------------------------------

    def parameter(self, function: ast.AST, name: str, node: ast.AST, ctx: Ctx) -> list[object]:
        params = all_params(function.args)  # type: ignore[attr-defined]
        method = is_method(ctx.summary, function)
        positional = [*function.args.posonlyargs, *function.args.args]  # type: ignore[attr-defined]
        if method and positional and positional[0].arg == name and ctx.cls is not None:
            return [SelfV(ClsV(ctx.cls, ctx.summary))]
        if ctx.bindings is not None and function is ctx.func:
            return self.force(ctx.bindings.get(name, [Opaque(node, ctx.summary)]))
        if isinstance(function, ast.Lambda):
            return [Opaque(node, ctx.summary)]
        key = (id(function), name)
        if key not in self.callers_cache:
            self.callers_cache[key] = []  # a recursive call sees no value
            param = next(p for p in params if p.arg == name)
            self.callers_cache[key] = self.parameter_from_callers(function, param, ctx)
        return self.callers_cache[key]

    def parameter_from_callers(self, function: ast.AST, param: ast.arg, ctx: Ctx) -> list[object]:
        """Every value the project's calls of `function` give `param` (the default when no
        call is found; decided at run time when there is no default either)."""
        values: list[object] = []
        for call, caller in self.callers(function, ctx):
            method = is_method(ctx.summary, function)
            bound = self.bind(function, call, caller, method, ctx.summary)
            values.extend(self.force(bound.get(param.arg, [])))
        if values:
            return values
        # No call in the project: an entry point (a CLI, a test runner) calls it from outside,
        # so its default is one value among those decided at run time.
        default = self.default_of(function, param, ctx)
        if default is not None:
            values = self.ev(default, self.ctx_of(ctx.summary, function))
            return [*values, Opaque(param, ctx.summary)]
        if param is function.args.kwarg:  # type: ignore[attr-defined]
            return [DictV(closed=False)]
        return [Opaque(param, ctx.summary)]

    def default_of(self, function: ast.AST, param: ast.arg, ctx: Ctx) -> ast.expr | None:
        args: ast.arguments = function.args  # type: ignore[attr-defined]
        positional = [*args.posonlyargs, *args.args]
        if param in positional:
            index = positional.index(param) - (len(positional) - len(args.defaults))
            return args.defaults[index] if index >= 0 else None
        if param in args.kwonlyargs:
            return args.kw_defaults[args.kwonlyargs.index(param)]
        return None

    def callers(self, function: ast.AST, ctx: Ctx) -> list[tuple[ast.Call, Ctx]]:
        """The calls of `function` in the project (a class's `__init__`: its instantiations)."""
        name = function.name  # type: ignore[attr-defined]
        cls = ctx.cls
        wanted = cls.name if cls is not None and name == "__init__" else name
        found = []
        for path in self.caller_files(function, wanted, ctx):
            summary = self.summary(path)
            if summary is None:
                continue
            for call in summary.calls(wanted):
                caller = self.ctx_of(summary, call)
                if caller.depth + ctx.depth > MAX_DEPTH:
                    continue
                if self.calls_function(call, caller, function, cls):
                    found.append((call, caller))
            if cls is None:
                found.extend(self.launches_of(function, summary, ctx))
            elif name == "__init__":
                found.extend(self.super_inits_of(cls, summary, ctx))
        return found

    def super_inits_of(
        self, cls: ast.ClassDef, summary: Summary, ctx: Ctx
    ) -> list[tuple[ast.Call, Ctx]]:
        """`super().__init__(...)` in a subclass's method calls the base's `__init__` with
        those arguments (a subclass passes its config on to the base that uses it)."""
        found = []
        for call in summary.calls("__init__"):
            if not is_super_call(call.func):
                continue
            caller = self.ctx_of(summary, call)
            if caller.cls is None or caller.cls is cls or caller.depth + ctx.depth > MAX_DEPTH:
                continue
            mro = self.mro(ClsV(caller.cls, summary))
            if any(isinstance(base, ClsV) and base.node is cls for base in mro[1:]):
                found.append((call, caller))
        return found

    def launches_of(
        self, function: ast.AST, summary: Summary, ctx: Ctx
    ) -> list[tuple[ast.Call, Ctx]]:
        """`fabric.launch(fn, a, b)` calls `fn(fabric, a, b)`: Fabric passes itself first."""
        found = []
        for launch in summary.calls(names.FABRIC_LAUNCH):
            if not launch.args or not isinstance(launch.func, ast.Attribute):
                continue
            caller = self.ctx_of(summary, launch)
            if caller.depth + ctx.depth > MAX_DEPTH:
                continue
            if not any(isinstance(v, FabricV) for v in self.ev(launch.func.value, caller)):
                continue
            if not any(
                isinstance(v, Fn) and v.node is function for v in self.ev(launch.args[0], caller)
            ):
                continue
            if id(launch) not in self.launched:
                call = ast.Call(
                    launch.args[0], [launch.func.value, *launch.args[1:]], launch.keywords
                )
                self.launched[id(launch)] = (launch, ast.copy_location(call, launch))
            found.append((self.launched[id(launch)][1], caller))
        return found

    def files_with(self, word: bytes) -> list[Path]:
        if word not in self.word_files:
            self.word_files[word] = [path for path, data in self.contents.items() if word in data]
        return self.word_files[word]

    def caller_files(self, function: ast.AST, wanted: str, ctx: Ctx) -> list[Path]:
        """Files that can call `wanted`, found in their text before any is parsed: a function
        or class defined inside a function is called only in its own file; a module-level one
        only where it is imported by name or reached through its module's name; a method
        anywhere its name is written."""
        word = wanted.encode("utf-8")
        own = ctx.summary.path
        definition = function if wanted == getattr(function, "name", None) else ctx.cls
        if definition is None or not is_module_level(ctx.summary, definition):
            if definition is not None and not is_method(ctx.summary, definition):
                return [own]  # nested in a function: no other file can name it
            return self.files_with(word)
        key = (wanted, own)
        if key not in self.caller_files_cache:
            # once per name and defining file, from an index of each file's names made once
            # per run: asked from many places, the text scans cost minutes on a torch-sized tree
            module_word = ctx.summary.name.rsplit(".", 1)[-1].encode("utf-8")
            naming = {
                path
                for path in self.files_naming(word)
                if (module_word and module_word in self.contents[path])
                or word in self.imported_names(path)
            }
            self.caller_files_cache[key] = [
                path for path in self.contents if path == own or path in naming
            ]
        return self.caller_files_cache[key]

    def files_naming(self, name: bytes) -> list[Path]:
        """The files whose text writes `name` as a whole word (an ASCII identifier; others are
        looked for as text), from one pass over the project."""
        if not name.isascii():
            return self.files_with(name)
        if self.name_index is None:
            index: dict[bytes, list[Path]] = {}
            for path, data in self.contents.items():
                for token in set(IDENTIFIER.findall(data)):
                    index.setdefault(token, []).append(path)
            self.name_index = index
        return self.name_index.get(name, [])

    def imported_names(self, path: Path) -> frozenset[bytes]:
        """The names a file's `import` clauses write (`from m import a, b`, also in parentheses
        or after `import` on its line): where a module-level function can be imported by name."""
        if path not in self.import_index:
            data = self.contents[path]
            self.import_index[path] = frozenset(
                token
                for clause in IMPORT_CLAUSE.findall(data)
                for token in IDENTIFIER.findall(clause)
            )
        return self.import_index[path]

    def calls_function(
        self, call: ast.Call, caller: Ctx, function: ast.AST, cls: ast.ClassDef | None
    ) -> bool:
        for callee in self.ev(call.func, caller):
            if isinstance(callee, Fn) and callee.node is function:
                return True
            if (
                isinstance(callee, ClsV)
                and cls is not None
                and any(isinstance(base, ClsV) and base.node is cls for base in self.mro(callee))
            ):
                return True
        return False

    def bind(
        self, function: ast.AST, call: ast.Call, caller: Ctx, is_method: bool, owner: Summary
    ) -> dict[str, list[object]]:
        """The values a call gives the parameters of `function` (defaults for the rest)."""
        args: ast.arguments = function.args  # type: ignore[attr-defined]
        positional = [*args.posonlyargs, *args.args]
        if is_method and positional:
            positional = positional[1:]
        names_ = {p.arg for p in (*positional, *args.kwonlyargs)}
        bound: dict[str, list[object]] = {}
        extra = DictV()
        for index, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                for param in positional[index:]:
                    bound.setdefault(param.arg, [Opaque(arg, caller.summary)])
                break
            if index < len(positional):
                bound[positional[index].arg] = [Thunk(arg, caller)]
        for keyword in call.keywords:
            if keyword.arg is None:
                spread = self.ev(keyword.value, caller)
                for value in spread:
                    if not isinstance(value, DictV):
                        continue
                    for key, items in value.entries.items():
                        if key in names_:
                            add_unique(bound.setdefault(key, []), items)
                        else:
                            add_unique(extra.entries.setdefault(key, []), items)
                self.merge_spread(DictV(), spread)
                if not all(isinstance(value, DictV) and value.closed for value in spread):
                    extra.closed = False
            elif keyword.arg in names_:
                bound[keyword.arg] = [Thunk(keyword.value, caller)]
            else:
                extra.entries[keyword.arg] = [Thunk(keyword.value, caller)]
        for param in (*positional, *args.kwonlyargs):
            if param.arg not in bound:
                default = self.default_of(function, param, caller)
                if default is not None:
                    defining = self.ctx_of(owner, function)
                    bound[param.arg] = [Thunk(default, defining)]
                elif not extra.closed:
                    bound[param.arg] = [Opaque(call, caller.summary)]
        if args.kwarg is not None:
            bound[args.kwarg.arg] = [extra]
        if args.vararg is not None:
            bound[args.vararg.arg] = [Opaque(call, caller.summary)]
        return bound

    # -- attributes ----------------------------------------------------------------------------

    def ev_attribute(self, node: ast.Attribute, ctx: Ctx) -> list[object]:
        base = node.value
        if isinstance(base, ast.Attribute) and base.attr == "hparams":
            owners = [v for v in self.ev(base.value, ctx) if isinstance(v, SelfV)]
            if owners:
                return [v for owner in owners for v in self.hparam(owner.cls, node.attr, node)]
        return [
            v for value in self.ev(base, ctx) for v in self.attribute_of(value, node.attr, node)
        ]

    def attribute_of(self, value: object, attr: str, node: ast.AST) -> list[object]:
        if isinstance(value, Ext):
            return self.resolve_qname(f"{value.qname}.{attr}", node, None)  # type: ignore[arg-type]
        if isinstance(value, ModuleV):
            return self.module_symbol(value.summary, attr, node)
        if isinstance(value, SelfV):
            return self.instance_attribute(value.cls, attr, node, skip_own=value.is_super)
        if isinstance(value, Inst):
            return self.instance_attribute(value.cls, attr, node)
        if isinstance(value, ClsV):
            return self.instance_attribute(value, attr, node, bound=False)
        summary = getattr(value, "summary", None)
        return [Opaque(node, summary)]  # type: ignore[arg-type]

    def instance_attribute(
        self, cls: ClsV, attr: str, node: ast.AST, bound: bool = True, skip_own: bool = False
    ) -> list[object]:
        """A method of the class (or a base), or what its methods assign to `self.<attr>`."""
        key = (id(cls.node), attr + ("/super" if skip_own else "") + ("" if bound else "/cls"))
        if key in self.attr_cache:
            return self.attr_cache[key]
        self.attr_cache[key] = []
        values: list[object] = []
        classes = [c for c in self.mro(cls) if isinstance(c, ClsV)]
        for klass in classes[1:] if skip_own else classes:
            values.extend(self.class_attribute(klass, attr, bound))
            if values and any(isinstance(v, Fn) for v in values):
                break
        if not values:
            external = [c for c in self.mro(cls) if isinstance(c, Ext)]
            values = [Opaque(node, cls.summary)] if not external else [Opaque(node, cls.summary)]
        self.attr_cache[key] = values
        return values

    def class_attribute(self, klass: ClsV, attr: str, bound: bool) -> list[object]:
        values: list[object] = []
        for statement in klass.node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if statement.name == attr:
                    return [Fn(statement, klass.summary, klass.node, bound=bound)]
                assignments = self.self_assignments(statement).get(attr)
                if assignments:
                    ctx = self.ctx(klass.summary, statement, klass.node)
                    for inner in assignments:
                        values.extend(self.self_assignment(inner, attr, statement, ctx))
            elif isinstance(statement, ast.AnnAssign) and attr in bound_names(statement):
                # a dataclass / config field: the constructor may set it
                values.append(Opaque(statement, klass.summary))
            elif isinstance(statement, ast.Assign) and attr in bound_names(statement):
                values.extend(self.binding(statement, attr, self.ctx(klass.summary, None, None)))
        return values

    def self_assignments(self, method: ast.AST) -> dict[str, list[ast.AST]]:
        """The statements of a method that assign `self.<attr>`, by attr: one walk per method,
        not one per attribute asked about (big model classes are asked about hundreds)."""
        key = id(method)
        if key not in self.assignments_cache:
            self_name = first_param(method)
            found: dict[str, list[ast.AST]] = {}
            for node in self.body(method):
                if isinstance(node, ast.Assign):
                    targets = node.targets
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    targets = [node.target]
                else:
                    continue
                for target in targets:
                    for element, _ in attribute_targets(target):
                        if isinstance(element.value, ast.Name) and element.value.id == self_name:
                            found.setdefault(element.attr, []).append(node)
            self.assignments_cache[key] = found
        return self.assignments_cache[key]

    def self_assignment(self, node: ast.AST, attr: str, method: ast.AST, ctx: Ctx) -> list[object]:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        values: list[object] = []
        self_name = first_param(method)
        for target in targets:
            for element, path in attribute_targets(target):
                if (
                    element.attr == attr
                    and isinstance(element.value, ast.Name)
                    and element.value.id == self_name
                ):
                    assert value is not None, "targets come with their value"
                    values.extend(self.ev_path(value, path, ctx))
        return values

    def hparam(self, cls: ClsV, name: str, node: ast.AST) -> list[object]:
        """`self.hparams.<name>`: the `__init__` parameter of that name (save_hyperparameters)."""
        for klass in self.mro(cls):
            if not isinstance(klass, ClsV):
                continue
            for statement in klass.node.body:
                if (
                    isinstance(statement, ast.FunctionDef)
                    and statement.name == "__init__"
                    and any(p.arg == name for p in all_params(statement.args))
                ):
                    ctx = self.ctx(klass.summary, statement, klass.node)
                    return self.parameter(statement, name, node, ctx)
        return [Opaque(node, cls.summary)]

    def mro(self, cls: ClsV) -> list[object]:
        """The class and its bases, depth first: project classes as ClsV, others as Ext."""
        key = id(cls.node)
        if key in self.mro_cache:
            return self.mro_cache[key]
        self.mro_cache[key] = [cls]
        order: list[object] = [cls]
        ctx = self.ctx_of(cls.summary, cls.node)
        for base in cls.node.bases:
            for value in self.ev(base, ctx):
                if isinstance(value, ClsV):
                    order.extend(b for b in self.mro(value) if b not in order)
                elif isinstance(value, Ext):
                    order.append(value)
        self.mro_cache[key] = order
        return order

    def derives_from(self, cls: ClsV, qualified: frozenset[str]) -> bool:
        return any(isinstance(b, Ext) and b.qname in qualified for b in self.mro(cls))

    # -- calls ---------------------------------------------------------------------------------

    def ev_call(self, node: ast.Call, ctx: Ctx) -> list[object]:
        if isinstance(node.func, ast.Name) and node.func.id == "super" and ctx.cls is not None:
            return [SelfV(ClsV(ctx.cls, ctx.summary), is_super=True)]
        values: list[object] = []
        for callee in self.ev(node.func, ctx):
            values.extend(self.call_value(callee, node, ctx))
        return values or [Opaque(node, ctx.summary)]

    def call_value(self, callee: object, call: ast.Call, ctx: Ctx) -> list[object]:  # noqa: C901
        if isinstance(callee, Ext):
            return self.call_external(callee.qname, call, ctx)
        if isinstance(callee, Fn):
            values = self.returns(callee, call, ctx)
            lost = not any(isinstance(v, Opt) and v.fused for v in values)
            if lost and forwards_kwargs(callee.node):
                # `fused` handed to a function's **kwargs that the analysis loses inside (a
                # filter such as litgpt's signature check, a registry): only fusable
                # optimizers take it, so the optimizer the function builds takes it.
                fused = self.fused_of(call, ctx)
                if fused:
                    values = [v for v in values if not isinstance(v, Opt)]
                    values.append(Opt(call, ctx.summary, fused))
            return values
        if isinstance(callee, ClsV):
            if self.derives_from(callee, names.TRAINER_CLASSES):
                return [TrainerV(self.trainer_entry(callee) or ctx.summary.entry(call))]
            if self.derives_from(callee, names.FABRIC_CLASSES):
                return [FabricV(None)]
            return [Inst(callee, call)]
        if isinstance(callee, Part):
            return self.call_partial(callee, call, ctx)
        if isinstance(callee, LambdaV):
            lctx: Ctx = callee.ctx  # type: ignore[assignment]
            bound = self.bind(callee.node, call, ctx, False, lctx.summary)
            inner = Ctx(lctx.summary, callee.node, lctx.cls, bound, ctx.depth + 1)
            self.keep.append(inner)
            return self.ev(callee.node.body, inner)
        return self.unknown_callee(call, ctx)

    def unknown_callee(self, call: ast.Call, ctx: Ctx) -> list[object]:
        """Only torch's fusable optimizers take `fused`: a call that cannot be followed and
        passes `fused` builds a (possibly fused) optimizer."""
        fused = self.fused_of(call, ctx)
        if fused:
            return [Opt(call, ctx.summary, fused)]
        return [Opaque(call, ctx.summary)]

    def call_external(self, qname: str, call: ast.Call, ctx: Ctx) -> list[object]:
        if qname in names.FUSABLE_OPTIMIZERS or qname == UNKNOWN_OPTIMIZER:
            return [Opt(call, ctx.summary, self.fused_of(call, ctx))]
        if qname in names.PARTIAL_FUNCTIONS and call.args:
            keywords: dict[str, list[object]] = {
                k.arg: [Thunk(k.value, ctx)] for k in call.keywords if k.arg is not None
            }
            for keyword in call.keywords:
                if keyword.arg is None:
                    for value in self.ev(keyword.value, ctx):
                        if isinstance(value, DictV):
                            for key, items in value.entries.items():
                                add_unique(keywords.setdefault(key, []), items)
            return [Part(self.ev(call.args[0], ctx), keywords, call, ctx.summary)]
        if qname in names.DICT_CONSTRUCTORS:
            result = DictV({k.arg: [Thunk(k.value, ctx)] for k in call.keywords if k.arg})
            for keyword in call.keywords:
                if keyword.arg is None:
                    self.merge_spread(result, self.ev(keyword.value, ctx))
            if call.args:
                self.merge_spread(result, self.ev(call.args[0], ctx))
            return [result]
        if qname == "builtins.getattr" and len(call.args) >= 2:
            return self.call_getattr(call, ctx)
        if qname in names.TRAINER_CLASSES:
            return [TrainerV(ctx.summary.entry(call), call, ctx.summary)]
        if qname in names.FABRIC_CLASSES:
            return [FabricV(ctx.summary.entry(call), call, ctx.summary)]
        return self.unknown_callee(call, ctx)

    def call_getattr(self, call: ast.Call, ctx: Ctx) -> list[object]:
        name = literal_of(call.args[1])
        is_str = isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str)
        values: list[object] = []
        for value in self.ev(call.args[0], ctx):
            if is_str and name is not None:
                values.extend(self.attribute_of(value, name, call))
            elif isinstance(value, Ext) and value.qname in ("torch.optim", "torch.optim.*"):
                values.append(Ext(UNKNOWN_OPTIMIZER))
            else:
                values.append(Opaque(call, ctx.summary))
        return values

    def call_partial(self, part: Part, call: ast.Call, ctx: Ctx) -> list[object]:
        fused = self.force(part.keywords.get("fused", [])) + self.fused_of(call, ctx)
        values: list[object] = []
        for func in part.funcs:
            if (
                isinstance(func, Ext)
                and (func.qname in names.FUSABLE_OPTIMIZERS or func.qname == UNKNOWN_OPTIMIZER)
                or fused
            ):
                values.append(Opt(part.node, part.summary, fused))
            else:
                values.append(Opaque(call, ctx.summary))
        return values

    def fused_of(self, call: ast.Call, ctx: Ctx) -> list[object]:
        """The values the call's `fused` argument may take (also through `**` spreads)."""
        values: list[object] = []
        for keyword in call.keywords:
            if keyword.arg == "fused":
                values.extend(self.ev(keyword.value, ctx))
            elif keyword.arg is None:
                for spread in self.ev(keyword.value, ctx):
                    if isinstance(spread, DictV) and "fused" in spread.entries:
                        values.extend(self.force(spread.entries["fused"]))
        return values

    def returns(self, fn: Fn, call: ast.Call, ctx: Ctx) -> list[object]:
        if ctx.depth >= MAX_DEPTH:
            return [Opaque(call, ctx.summary)]
        bound = self.bind(fn.node, call, ctx, fn.bound, fn.summary)
        inner = Ctx(fn.summary, fn.node, fn.cls, bound, ctx.depth + 1)
        self.keep.append(inner)
        values: list[object] = []
        for node in self.body(fn.node):
            if isinstance(node, ast.Return) and node.value is not None:
                values.extend(self.ev(node.value, inner))
        return values or [Opaque(call, ctx.summary)]

    def trainer_entry(self, cls: ClsV) -> EntryId | None:
        """A Trainer subclass is configured where its `__init__` calls `super().__init__`."""
        for klass in self.mro(cls):
            if isinstance(klass, ClsV):
                call = super_init_call(klass.node)
                if call is not None:
                    return klass.summary.entry(call)
        return None


def value_key(value: object) -> tuple[int, int] | int:
    """Two arguments are one value when they are one object, the same expression in the
    same context (a Thunk made again by another call of `bind`), or "decided at run time" at
    the same place (an Opaque made again along another path)."""
    if isinstance(value, Thunk):
        return (id(value.expr), id(value.ctx))
    if isinstance(value, Opaque):
        return (id(value.node), id(value.summary))
    return id(value)


def add_unique(target: list[object], items: Iterable[object]) -> None:
    """Extend `target` by the items it does not hold yet. The same argument reached along two
    paths (wrappers that each call the next in two branches, each passing `**kwargs` on) is
    one value: kept twice, the lists would double at every wrapper."""
    seen = {value_key(value) for value in target}
    for item in items:
        key = value_key(item)
        if key not in seen:
            seen.add(key)
            target.append(item)


def bounded(values: list[object], node: ast.AST, ctx: Ctx) -> list[object]:
    """At most MAX_VALUES values: the distinct known ones first (literals, optimizers, dicts,
    classes...), everything decided at run time as one Opaque at `node`."""
    kept: list[object] = []
    seen: set[int] = set()
    for value in values:
        if isinstance(value, Opaque) or id(value) in seen:
            continue
        seen.add(id(value))
        kept.append(value)
    return [*kept[: MAX_VALUES - 1], Opaque(node, ctx.summary)]


def contains(outer: ast.AST, inner: ast.AST) -> bool:
    """Whether `inner` lies within `outer` (a `with` item spans its expression and target)."""
    first = last = outer
    if isinstance(outer, ast.withitem):
        first, last = outer.context_expr, outer.optional_vars or outer.context_expr
    if not hasattr(first, "lineno") or not hasattr(inner, "lineno"):
        return False
    start = (first.lineno, first.col_offset)  # type: ignore[attr-defined]
    end = (last.end_lineno, last.end_col_offset)  # type: ignore[attr-defined]
    where = (inner.lineno, inner.col_offset)  # type: ignore[attr-defined]
    return start <= where <= end


def forwards_kwargs(function: ast.AST) -> bool:
    args: ast.arguments = function.args  # type: ignore[attr-defined]
    named = {p.arg for p in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    return args.kwarg is not None and "fused" not in named


def dict_method_entries(call: ast.expr, name: str, ctx: Ctx, added: DictV, defaults: DictV) -> None:
    """`name.update(key=v)` / `name.update({"key": v})` set entries; `name.setdefault("key",
    v)` may set one (the dict may hold the key already)."""
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == name
    ):
        return
    if call.func.attr == "setdefault" and len(call.args) == 2:
        key = literal_of(call.args[0])
        if isinstance(key, str):
            defaults.entries.setdefault(key, []).append(Thunk(call.args[1], ctx))
    elif call.func.attr == "update":
        pairs: list[tuple[str | None, ast.expr]] = [
            (keyword.arg, keyword.value) for keyword in call.keywords if keyword.arg
        ]
        if call.args and isinstance(call.args[0], ast.Dict):
            pairs += [
                (literal_of(key), value)
                for key, value in zip(call.args[0].keys, call.args[0].values)
                if key is not None
            ]
        for name_key, value in pairs:
            if isinstance(name_key, str):
                added.entries.setdefault(name_key, []).append(Thunk(value, ctx))


def is_super_call(func: ast.expr) -> bool:
    """`super().name` (the method of a base class)."""
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Call)
        and isinstance(func.value.func, ast.Name)
        and func.value.func.id == "super"
    )


def is_method(summary: Summary, function: ast.AST) -> bool:
    """A function defined directly in a class body, not a staticmethod."""
    return isinstance(summary.parent(function), ast.ClassDef) and not any(
        isinstance(d, ast.Name) and d.id == "staticmethod"
        for d in getattr(function, "decorator_list", ())
    )


def is_module_level(summary: Summary, node: ast.AST) -> bool:
    """Defined at the top of its module (also inside a top-level `if` / `try`)."""
    parent = summary.parent(node)
    while isinstance(parent, (ast.If, ast.Try, ast.ExceptHandler)):
        parent = summary.parent(parent)
    return isinstance(parent, ast.Module)


IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
# What follows `import`: a parenthesized list up to its first parenthesis, or the rest of the line
# (`from m import name`, also as one of several names or inside parentheses).
IMPORT_CLAUSE = re.compile(rb"\bimport\s+(\([^()]*|[^\n]*)")


def super_init_call(cls: ast.ClassDef) -> ast.Call | None:
    for statement in cls.body:
        if isinstance(statement, ast.FunctionDef) and statement.name == "__init__":
            for node in function_body_nodes(statement):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "__init__"
                    and isinstance(node.func.value, ast.Call)
                    and isinstance(node.func.value.func, ast.Name)
                    and node.func.value.func.id == "super"
                ):
                    return node
    return None


def first_param(function: ast.AST) -> str | None:
    args: ast.arguments = function.args  # type: ignore[attr-defined]
    positional = [*args.posonlyargs, *args.args]
    return positional[0].arg if positional else None


def bound_names(node: ast.AST) -> list[str]:
    """Names a statement binds in its scope."""
    if isinstance(node, ast.Assign):
        return [n for target in node.targets for n in target_names(target)]
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return target_names(node.target)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return target_names(node.target)
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [alias.asname or alias.name.split(".", 1)[0] for alias in node.names]
    if isinstance(node, ast.withitem) and node.optional_vars is not None:
        return target_names(node.optional_vars)
    if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def target_path(target: ast.expr, name: str) -> tuple[int, ...] | None:
    """Where `name` sits in an unpacking target: () for `name = ...`, (1,) for `a, name = ...`."""
    if isinstance(target, ast.Name):
        return () if target.id == name else None
    if isinstance(target, (ast.Tuple, ast.List)):
        for index, element in enumerate(target.elts):
            if isinstance(element, ast.Starred):
                return None
            inner = target_path(element, name)
            if inner is not None:
                return (index, *inner)
    return None


def attribute_targets(target: ast.expr, path: tuple[int, ...] = ()):  # noqa: ANN201
    if isinstance(target, ast.Attribute):
        yield target, path
    elif isinstance(target, (ast.Tuple, ast.List)):
        for index, element in enumerate(target.elts):
            yield from attribute_targets(element, (*path, index))
