"""Follow values across the project: an evaluator of expressions over the files' summaries.

It answers "what may this expression hold?" with symbolic values (values.py), following
assignments (also tuple unpacking), parameters and their defaults (from the call that is being
followed, else from every call of the function in the project), dict literals, `dict(...)`,
`x["k"] = v` and `**` spreads, `functools.partial`, lambdas, returns of functions and factories
across modules, attributes set on `self` and `self.hparams`, and base classes. Anything it cannot
follow is `Opaque`: decided at run time. Depth and budgets (per question, per run) bound the
work; what a bound or a cycle cut short is never memoised for other questions (frame.py).
"""

from __future__ import annotations

import ast
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.callers import CallerIndex
from amp_clipfix.analysis.classes import ClassModel
from amp_clipfix.analysis.containers import CONTAINER_NODES, Containers, RecordMethod
from amp_clipfix.analysis.cycles import cut_value, settled_ev
from amp_clipfix.analysis.dict_stores import DictStores
from amp_clipfix.analysis.fields import DataclassFields
from amp_clipfix.analysis.frame import (
    MAX_DEPTH,
    MAX_NESTING,
    Ctx,
    Given,
    Thunk,
    UniqueAdds,
)
from amp_clipfix.analysis.library import BUILTINS, CALLBACK_CLASSES, LibraryModel
from amp_clipfix.analysis.own_names import OwnNames
from amp_clipfix.analysis.recording import read
from amp_clipfix.analysis.returns import CallReturns
from amp_clipfix.analysis.self_imports import imports_itself
from amp_clipfix.analysis.shapes import (
    all_params,
    contains,
    first_param,
    forwards_kwargs,
    global_rebinds,
    is_method,
    literal_of,
    super_init_call,
    target_path,
)
from amp_clipfix.analysis.summary import Summary, shared_folders
from amp_clipfix.analysis.text_tests import writes_global
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
    constant_of,
)

# Names other modules imported from here before the evaluator was split into its parts.
__all__ = [
    "CALLBACK_CLASSES",
    "Ctx",
    "Evaluator",
    "Thunk",
    "all_params",
    "first_param",
    "is_method",
    "literal_of",
    "super_init_call",
]


class Evaluator(
    Containers,
    CallerIndex,
    ClassModel,
    DataclassFields,
    DictStores,
    LibraryModel,
    OwnNames,
    CallReturns,
):
    """Evaluates expressions of one project; summaries are loaded on first use."""

    # -- modules -------------------------------------------------------------------------------

    def index_modules(self, paths: dict[str, Path]) -> None:
        for module, path in paths.items():
            self.module_key(module).append(path)

    def module_key(self, name: str) -> list[Path]:
        """The paths of the module name (a new name is also filed under each of its dotted
        tails, `.mod` and `.pkg.mod` of `src.pkg.mod`, in the order names are added)."""
        if name not in self.by_module:
            self.by_module[name] = []
            for index, char in enumerate(name):
                if char == ".":
                    self.module_tails.setdefault(name[index:], []).append(name)
        return self.by_module[name]

    def find_module(self, dotted: str, near: Summary | None = None) -> Summary | None:
        """The module of that dotted name, else one whose name ends with it (`src.pkg.mod`
        for `pkg.mod`); of several, the nearest to the importer `near` (a script's own folder
        first, as its sys.path[0]), never simply the first of that name."""
        paths = self.by_module.get(dotted)
        if paths is None:
            # the names that end with `.dotted`, in the order they were added (an index of
            # tails: a scan of every module name per name cost NeMo seconds)
            tails = self.module_tails.get("." + dotted, [])
            paths = [p for name in tails for p in self.by_module[name]]
            self.module_key(dotted).extend(paths)
        if near is not None and len(paths) > 1:
            paths = sorted(paths, key=lambda path: -shared_folders(path, near.path))
        for path in paths:
            summary = self.summary(path)
            if summary is not None:
                return summary
        return None

    def summary(self, path: Path) -> Summary | None:
        read(self.contents, path)  # what a query reads (queries.py)
        if path not in self.summaries:
            loaded = self.load(path)
            if loaded is None:
                return None
            self.summaries[path] = loaded
        return self.summaries[path]

    def resolve_qname(self, qname: str, node: ast.AST, summary: Summary) -> list[object]:
        """A qualified name: a project module's symbol when the project has that module."""
        if qname in self.resolving:  # an import cycle (`from . import x` in a package)
            self.cuts += 1
            return [Ext(qname)]
        self.resolving.add(qname)
        try:
            return self.resolve_project_name(qname, node, summary)
        finally:
            self.resolving.discard(qname)

    def resolve_project_name(self, qname: str, node: ast.AST, summary: Summary) -> list[object]:
        parts = qname.split(".")
        if parts[0] in names.EXTERNAL_ROOTS:
            return [Ext(qname)]
        for cut in range(len(parts), 0, -1):
            module = self.find_module(".".join(parts[:cut]), summary)
            if module is None or module is summary and cut == len(parts):
                continue
            values: list[object] = [ModuleV(module)]
            for attr in parts[cut:]:
                values = [v for value in values for v in self.attribute_of(value, attr, node)]
            return values
        return [Ext(qname)]

    def module_symbol(self, summary: Summary, name: str, node: ast.AST) -> list[object]:
        """A module-level name. One rebound by functions that declare it `global` is read once
        per question and place: read again while its bindings are followed (`FUSED
        = v or FUSED` in each of a hundred setters), it adds nothing the outer read does not
        hold already, so the read costs a walk of its bindings, not one per path through them."""
        rebinds = self.rebinds(summary).get(name, [])
        if not rebinds:
            return self.module_bindings(summary, name, node, [])
        reading = (id(summary), name)
        # the node read decides which binding is left out and where a run-time value is
        key = (*reading, id(node))
        known = self.recall(self.global_memo, "global", key)
        if known is not None:
            return known
        place = self.global_reads.get(reading)
        if place is not None:  # a cycle through the outer read, which holds what this adds
            self.low = min(self.low, place)
            self.unsettled += 1  # a cycle of reads not settled (cycles.py)
            return []
        entered = self.enter("global", key)
        self.global_reads[reading] = entered.place
        values: list[object] | None = None
        try:
            values = self.module_bindings(summary, name, node, rebinds)
        finally:
            del self.global_reads[reading]
            self.leave(entered, self.global_memo, "global", key, values)
        return values

    def module_bindings(
        self, summary: Summary, name: str, node: ast.AST, rebinds: list[ast.AST]
    ) -> list[object]:
        ctx = self.ctx(summary, None, None)
        rebound = [  # by a function that declares it `global` (not the binding being read)
            v
            for binding in rebinds
            if not contains(binding, node)
            for v in self.binding(binding, name, self.ctx_of(summary, binding))
        ]
        if name in summary.top:
            values = [v for binding in summary.top[name] for v in self.binding(binding, name, ctx)]
            return values + rebound
        if rebound:
            return rebound
        if name in summary.imports:
            qname = summary.imports[name]
            if imports_itself(self, summary, name, qname):  # what its cycle's cut gives
                return [Ext(qname)]
            return self.resolve_qname(qname, node, summary)
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
        """The shared context of the code around `node`, once per node (its parents are walked
        at every call that is followed from it: NeMo asked 400,000 times)."""
        key = (id(summary), id(node))
        known = self.node_contexts.get(key)
        if known is None:
            function, cls = summary.enclosing(node)
            known = (node, self.ctx(summary, function, cls))  # the node kept: its id stays its
            self.node_contexts[key] = known
        return known[1]

    def note_contexts(self, summary: Summary, function: ast.AST, nodes: list[ast.AST]) -> None:
        """ctx_of's answer noted for `nodes`, whose innermost function is `function` (a module:
        its own code): the calls of a function read in run order (order.events), each asked
        about at once, where ctx_of went down from the module's statement to each first. A
        module's context is shared with its class bodies' (the first made keeps its class):
        never made here, only one made already is noted."""
        if isinstance(function, ast.Module):
            known = self.contexts.get((id(summary), id(None)))
            if known is None:
                return
            ctx = known
        else:
            ctx = self.ctx(summary, function, summary.enclosing(function)[1])
        for node in nodes:
            self.node_contexts.setdefault((id(summary), id(node)), (node, ctx))

    # -- expressions ---------------------------------------------------------------------------

    def ev(self, node: ast.AST, ctx: Ctx) -> list[object]:
        key = (id(node), id(ctx))
        known = self.memo.get(key)
        if known is not None and ("ev", key) not in self.heads:
            return known  # the run's value, no cycle's head: what recall gives, at once
        known = self.recall(self.memo, "ev", key)
        if known is not None:
            return known
        if ctx.depth > MAX_DEPTH:  # the depth is the context's, so the key's: not a cut
            return [Opaque(node, ctx.summary)]
        if self.cycle("ev", key):  # decided at run time (but while its cycle is settled)
            return cut_value(self, ("ev", key), [Opaque(node, ctx.summary)])
        # the value of the other calls' contexts (returns.py); most contexts bind nothing
        shared = None if ctx.bindings is None else self.shared_key(node, ctx)
        if shared is not None and (known := self.shared_memo.get(shared)) is not None:
            return known
        if len(self.serials) >= MAX_NESTING:
            self.cuts += 1  # a bound outside the key: never memoised
            return [Opaque(node, ctx.summary)]
        unsettled = self.unsettled
        entered = self.enter("ev", key)
        values: list[object] | None = None
        try:
            if self.budget <= 0 or self.question_budget <= 0:
                self.cuts += 1  # the run's or the question's budget spent (not the key's)
                values = [Opaque(node, ctx.summary)]
                return values
            self.budget -= 1
            self.question_budget -= 1
            values = settled_ev(self, entered, unsettled, node, ctx)
        finally:
            self.leave(entered, self.memo, "ev", key, values)
        if shared is not None and self.memo.get(key) is values and ("ev", key) not in self.heads:
            self.shared_memo[shared] = values  # the run's value, no cycle's head
        return values

    def ev_node(self, node: ast.AST, ctx: Ctx) -> list[object]:  # noqa: C901 - a dispatch
        if isinstance(node, Given):
            return self.force(node.values)
        known, constant = constant_of(node)
        if known:
            return [Lit(constant, node, ctx.summary)]
        if isinstance(node, ast.Name):
            return self.ev_name(node, ctx)
        if isinstance(node, ast.Attribute):
            return self.ev_attribute(node, ctx)
        if isinstance(node, ast.Call):
            return self.ev_call(node, ctx)
        if isinstance(node, ast.Dict):
            return [self.dict_literal(node, ctx)]
        if isinstance(node, ast.IfExp):
            return self.ev_ifexp(node, ctx)  # sequences.py: a test the code decides
        if isinstance(node, ast.BoolOp):
            return self.ev_boolop(node, ctx)  # sequences.py: `plugins or []`
        if isinstance(node, CONTAINER_NODES) and (made := self.ev_container(node, ctx)) is not None:
            return made  # `[*a, b]`, `a + b`, a dict comprehension: containers.py
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
        adds = UniqueAdds()
        for value in values:
            if isinstance(value, DictV):
                for key, items in value.entries.items():
                    adds.add(into.entries.setdefault(key, []), items)
                into.closed = into.closed and value.closed
            else:
                into.closed = False

    def ev_subscript(self, node: ast.Subscript, ctx: Ctx) -> list[object]:
        (known, key), base = constant_of(node.slice), node.value
        name = key if isinstance(key, str) else None  # a dict's key (dicts keep str keys)
        index = key if isinstance(key, int) and not isinstance(key, bool) else None
        if name is not None and isinstance(base, ast.Attribute) and base.attr == "hparams":
            owners = [v for v in self.ev(base.value, ctx) if isinstance(v, SelfV)]
            if owners:
                return [v for owner in owners for v in self.hparam(owner.cls, name, node)]
        values: list[object] = []
        for value in self.ev(base, ctx):
            if isinstance(value, DictV) and name is not None and name in value.entries:
                values.extend(self.force(value.entries[name]))
            elif isinstance(value, DictV) and not known and value.closed and value.entries:
                # A key decided at run time: one of the values (any other key raises KeyError).
                for entry in value.entries.values():
                    values.extend(self.force(entry))
            elif isinstance(value, TupleV) and index is not None:
                if -len(value.items) <= index < len(value.items):  # else IndexError
                    values.extend(self.force(value.items[index]))
            else:
                values.append(Opaque(node, ctx.summary))
        return values

    # -- names ---------------------------------------------------------------------------------

    def ev_name(self, node: ast.Name, ctx: Ctx) -> list[object]:
        name = node.id
        function = ctx.func
        while function is not None:
            if name in self.globals_declared(function):
                break  # `global name`: the module's, whatever the functions around it bind
            is_param = name in self.param_names(function)
            # Flow-insensitive: a parameter also holds what the body assigns to it, except in
            # the assignment being evaluated (`precision = precision or default()`).
            local = [
                binding
                for binding in self.local_bindings(function, ctx.summary).get(name, [])
                if not contains(binding, node)
            ]
            if is_param or local:
                fctx = ctx if function is ctx.func else self.ctx_of(ctx.summary, function)
                values = self.parameter(function, name, node, fctx) if is_param else []
                values += [v for binding in local for v in self.binding(binding, name, fctx)]
                return self.with_item_assignments(values, function, name, fctx)
            function, _ = ctx.summary.enclosing(function)
            if function is not None:  # a closure's free name: the enclosing function's own
                ctx = self.ctx(ctx.summary, function, ctx.summary.enclosing(function)[1])
        summary = ctx.summary
        if name in summary.top or name in summary.imports or name in self.rebinds(summary):
            values = self.module_symbol(summary, name, node)
            return self.with_item_assignments(values, summary.tree, name, ctx)
        if name in BUILTINS:
            return [Ext(BUILTINS[name])]
        return [Opaque(node, ctx.summary)]

    def rebinds(self, summary: Summary) -> dict[str, list[ast.AST]]:
        """shapes.global_rebinds, once per module."""
        key = id(summary)
        if key not in self.rebinds_cache:
            text = self.contents.get(summary.path)  # a module's bytes (a notebook's: JSON)
            written = (
                text is None
                or summary.path.suffix != ".py"
                or (b"global" in text and writes_global(text))
            )
            self.rebinds_cache[key] = global_rebinds(summary) if written else {}
        return self.rebinds_cache[key]

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
        if (
            isinstance(binding, ast.AugAssign)
            and (added := self.augmented(binding, ctx)) is not None
        ):
            return added  # `name += [x]` of a list: sequences.py
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
            if forwards_kwargs(callee.node) and not any(  # the signature first: few have it
                isinstance(v, Opt) and v.fused for v in values
            ):
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
            return [Inst(callee, call, ctx)]
        if isinstance(callee, Part):
            return self.call_partial(callee, call, ctx)
        if isinstance(callee, LambdaV):
            lctx: Ctx = callee.ctx  # type: ignore[assignment]
            bound = self.bind(callee.node, call, ctx, False, lctx.summary)
            inner = Ctx(lctx.summary, callee.node, lctx.cls, bound, ctx.depth + 1)
            self.keep.append(inner)
            return self.ev(callee.node.body, inner)
        if isinstance(callee, RecordMethod):  # `x._replace(...)`: dataclass_calls.py
            return self.call_record_method(callee, call, ctx)
        return self.unknown_callee(call, ctx)
