"""The evaluator's frame: its bounds, the context an expression is evaluated in, an argument not
evaluated yet, and the state the evaluator's parts share.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from amp_clipfix.analysis.recording import raw
from amp_clipfix.analysis.relevance import ClassLines
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import ClsV, DictV, Inst, Opaque, TupleV, memo_key
from amp_clipfix.analysis.word_index import WordIndex

MAX_DEPTH = 6
# Values one expression may hold before the run-time ones merge: flow-insensitive following
# doubles them at every `x = x.f()` reassignment (neuralforecast has dozens in a row).
MAX_VALUES = 64
BUDGET = 400_000  # evaluations per project; beyond it everything is decided at run time
# Evaluations one question of the resolution may cost (a call in a module's method, a site's
# value): real projects stay under ~8,000; one call into a compiler's own code (lightning-thunder)
# used the whole project budget, 9 s, and left nothing for the questions after it.
QUESTION_BUDGET = 25_000
# Evaluations running inside one another (a chain of 3,000 `X1 = X0` names, setters reading
# what the others store): past this the rest is decided at run time, a review finding, well
# before Python's stack gives out (each level is ~10 frames; the stages that ask run with a
# 20,000-frame limit: project_resolve.deep_stack).
MAX_NESTING = 1_000
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
Memo = dict[Any, list[object]]  # one of the evaluator's memos, by its own key
NO_CYCLE = 1 << 30  # a frame's `low` when it met no running evaluation again


class Entered(NamedTuple):
    """An evaluation started: the hard cuts counted then, its place on the stack and serial,
    and the cycle bookkeeping of the evaluation around it (restored when it ends). A named
    tuple, made at every evaluation: a frozen dataclass's `__init__` cost twice as much."""

    cuts: int
    place: int
    serial: int
    low: int
    members: set[tuple[str, object]]


class Kept(NamedTuple):
    """A question's cut value, and the running evaluation it met again (a cycle), if any."""

    values: list[object]
    hard: bool  # a budget or a bound cut it
    low: int
    serial: int


class Thunk:
    """An argument not evaluated yet: the expression and the context it is written in. (Made
    by the thousand: written by hand, as `Ctx`, not by `@dataclass`, which compiles a class's
    methods at every import.)"""

    def __init__(self, expr: ast.expr, ctx: Ctx) -> None:
        self.expr = expr
        self.ctx = ctx


class Given(ast.expr):
    """An expression whose values are known already: what a call made through a
    `functools.partial` passes before the call's own arguments (passed.py)."""

    _fields = ()

    def __init__(self, values: list[object], at: ast.AST) -> None:
        super().__init__()
        self.values = values
        ast.copy_location(self, at)


class Ctx:
    """Where an expression is evaluated: its module, function, class and, when a particular
    call is followed, the values bound to the function's parameters."""

    def __init__(
        self,
        summary: Summary,
        func: ast.AST | None,
        cls: ast.ClassDef | None,
        bindings: dict[str, list[object]] | None = None,
        depth: int = 0,
        runtime: object = None,
    ) -> None:
        self.summary = summary
        self.func = func
        self.cls = cls
        self.bindings = bindings
        self.depth = depth
        # `self` is an instance of this subclass of `cls` (a ClsV): a base's method read for
        # the class actually instantiated (analysis/dispatch.py)
        self.runtime = runtime


# resolve_base.relevant_files: each core file's round, the names it defines, the modules it imports
RelevantCore = tuple[dict[Path, int], dict[Path, frozenset[bytes]], dict[Path, frozenset[str]]]


class EvaluatorBase:
    """The evaluator's state; the methods its parts (callers.py, classes.py, library.py,
    evaluate.py) ask of each other are declared here and defined by the part that owns them."""

    def __init__(
        self,
        summaries: dict[Path, Summary],
        load: Callable[[Path], Summary | None],
        contents: Mapping[Path, bytes],
    ) -> None:
        self.summaries = summaries
        # Files whose summary a cold run would have made by now, not made yet (reach.py's
        # `value_files` answered from a fact its query's earlier entry holds): counted as made
        # wherever what is made decides an order or a budget (`has_summary`); made on use.
        self.promised: set[Path] = set()
        self.promise_load: Callable[[Path], None] = lambda path: None  # the loader's own note
        self.load = load
        self.contents = contents  # the project's Python files, searched as text before parsing
        self.word_index = WordIndex(raw(contents))  # which files write a name, and their order
        self.relevant: set[Path] | None = None  # the files a fused value can reach (resolve.py)
        self.fused_keys: bool | None = None  # some dict may hold `fused` (library.py)
        # and what it is made of (resolve_base.relevant_files: rounds, names defined, imports)
        self.relevant_core: RelevantCore | None = None
        # (kind, names, body pattern) -> files: see resolve.text_search
        self.text_searches: dict[tuple[str, tuple[str, ...], bytes | None], set[Path]] = {}
        self.text_reasons: dict[object, object] = {}  # resolve_base.search_reasons, by search
        self.class_lines: ClassLines | None = None  # relevance.class_lines of `contents`
        self.by_module: dict[str, list[Path]] = {}
        self.module_tails: dict[str, list[str]] = {}  # evaluate.module_key: tail -> names
        self.memo: dict[tuple[int, int], list[object]] = {}
        # returns.shared_key: the run's values of expressions that read no parameter their
        # bound context binds, by expression and what of the context they depend on
        self.shared_memo: dict[tuple[int, ...], list[object]] = {}
        self.contexts: dict[tuple[int, int], Ctx] = {}
        self.node_contexts: dict[tuple[int, int], tuple[ast.AST, Ctx]] = {}  # evaluate.ctx_of
        self.runtime_contexts: dict[tuple[int, int, int], Ctx] = {}  # dispatch.runtime_ctx
        self.decorations: dict[int, list[Any]] = {}  # decorators.applications, by decorator
        self.returned: dict[int, list[Any]] = {}  # decorators.returned_functions, by function
        self.keep: list[object] = []  # contexts made for calls live as long as their memo
        self.entered: dict[tuple[object, ...], tuple[Ctx, object, ast.Call, Ctx]] = {}  # entered.py
        self.locals_cache: dict[int, dict[str, list[ast.AST]]] = {}
        self.body_cache: dict[int, list[ast.AST]] = {}  # function_body_nodes, by function
        # own_names.py: a function's own statements and parameter names, by function; whether a
        # module's text writes `:=`, by module
        self.statements_cache: dict[int, list[ast.AST]] = {}
        self.params_cache: dict[int, frozenset[str]] = {}
        self.walrus_cache: dict[int, bool] = {}
        self.item_cache: dict[int, dict[str, list[tuple[ast.stmt, bool]]]] = {}  # item_statements
        self.globals_cache: dict[int, frozenset[str]] = {}  # names a function declares global
        # fields.py: a dataclass's fields by class, and whether code may set an attribute from
        # outside its class, by the attribute's name
        self.layouts: dict[int, tuple[dict[str, list[ast.AnnAssign]], int | None] | None] = {}
        self.stored_outside: dict[str, bool] = {}
        self.rebinds_cache: dict[int, dict[str, list[ast.AST]]] = {}  # shapes.global_rebinds
        # evaluate.module_symbol: a rebound global's values by (module, name, the node read),
        # and the reads running, by (module, name), with their place on the stack
        self.global_memo: dict[tuple[int, str, int], list[object]] = {}
        self.global_reads: dict[tuple[int, str], int] = {}
        # `fabric.launch(fn, *args)` as the call `fn(fabric, *args)` it makes, by launch call
        # (also `Thread(target=fn, args=...)`: passed.py)
        self.launched: dict[int, tuple[ast.Call, ast.Call]] = {}
        # a call made through a `functools.partial` as the call of its function, by (partial,
        # call); the partial and the call kept alive with it (passed.partial_call)
        self.partial_calls: dict[tuple[int, int], tuple[object, ast.Call, ast.Call]] = {}
        self.passed_nesting = 0  # passed.passed_calls running inside one another
        self.param_uses: dict[int, tuple[frozenset[str], frozenset[str]]] = {}  # by function
        # The memos (see `enter` / `leave`): hard cuts counted (a budget spent, a bound such as
        # passed.MAX_NESTED outside a memo's key, a question's cut value read again), the
        # evaluations running (ev, parameter, attribute, mro) by (kind, key) with their place on
        # the stack, and the cut values kept for the current question only.
        self.cuts = 0
        self.unclean = 0  # values that may depend on the work before them (certificate.py)
        self.active: dict[tuple[str, object], int] = {}
        self.serials: list[int] = []  # by place on the stack, the running frame's serial
        self.serial = 0
        self.low = NO_CYCLE  # the outermost running frame the current one met again (a cycle)
        self.members: set[tuple[str, object]] = set()  # frames of the current cycle, done
        self.heads: dict[tuple[str, object], frozenset[tuple[str, object]]] = {}
        self.question_cache: dict[tuple[str, object], Kept] = {}
        # a question its own budget cut, by (kind, key): asked again as a question of its own,
        # it is answered as it was first (a budget more would give more: a changed answer)
        self.past_budget: dict[tuple[str, object], list[object]] = {}
        # cycles.py: the evaluations this question cut as cycles, the values cut members of a
        # cycle being settled read, and cuts that leave a cycle as it is (counted)
        self.cut_frames: set[tuple[str, object]] = set()
        self.assumed: dict[tuple[str, object], list[object]] = {}
        self.unsettled = 0
        # passon.py: the place of the chain's root (the first parameter a question follows to
        # its callers), walks that nest as before (a worklist given way, a cycle settled), and
        # the parameters a worklist is settling, with its chain
        self.passon_root: int | None = None
        self.defer_off = 0
        self.settling: dict[tuple[int, str], Any] = {}
        self.callers_cache: dict[tuple[int, str], list[object]] = {}
        # callers.callers: the calls of a function, by (function, class, module, depth)
        self.found_callers: dict[tuple[int, int, int, int], list[object]] = {}
        self.plain_binds: dict[tuple[object, ...], tuple[Any, ...]] = {}  # plain_binds.py
        self.caller_files_cache: dict[tuple[str, Path], list[Path]] = {}
        self.contained_cache: dict[int, object] = {}  # contained.contained, by class
        self.name_files: dict[bytes, list[Path]] = {}  # callers.files_naming
        # per file, its `class Name(bases):` lines as (name, words of the bases)
        self.class_index: dict[Path, list[tuple[bytes, set[bytes]]]] = {}
        self.import_index: dict[Path, frozenset[bytes]] = {}
        self.module_reach: dict[tuple[Path, bytes, bytes], bool] = {}  # name_texts.py
        self.made_modules: dict[bytes, bool] = {}  # name_texts.module_made, by module name
        self.project_folders: set[Path] | None = None  # every file's folders: package_of
        self.written_texts: dict[tuple[str, str, Path], bool] = {}  # callers.written, name_texts
        self.attr_cache: dict[tuple[int, str], list[object]] = {}
        # evaluate.returns: a function's return values by the values of the parameters it reads
        self.returns_cache: dict[tuple[object, ...], list[object]] = {}
        # returns.py: the parameters each of the run's answers read (by its key), the answers
        # by what they read, and the sets read by (function, class, receiver, depth); the
        # parameters read so far of the calls' contexts being evaluated, by context; the
        # parameters of bound contexts an argument's key looks at (argument_parts)
        self.returns_reads: dict[tuple[object, ...], frozenset[str]] = {}
        self.answers: dict[tuple[object, ...], tuple[list[object], frozenset[str]]] = {}
        self.answer_reads: dict[tuple[object, ...], list[frozenset[str]]] = {}
        self.param_reads: dict[int, set[str]] = {}
        self.consulted: list[tuple[int, str]] | None = None
        self.reads_cache: dict[int, tuple[str, ...]] = {}  # returns.read_params
        self.reach_cache: dict[tuple[int, int], tuple[str, ...]] = {}  # returns.reached_params
        # returns.name_reach / names_stored: by function and name
        self.name_reach_cache: dict[tuple[int, str], frozenset[str]] = {}
        self.stored_names: dict[tuple[int, str], set[str]] = {}
        self.passes_cache: dict[tuple[int, str, bool], bool] = {}  # returns.only_passes
        self.thunk_keys: dict[tuple[int, int, int], tuple[object, ...]] = {}  # returns.thunk_key
        self.returns_nodes: dict[int, list[ast.expr]] = {}  # returns.returned_expressions
        # classes.class_members: by class, the class (kept: the key is its id) and its members
        self.members_cache: dict[int, tuple[ast.ClassDef, dict[str, list[ast.stmt]]]] = {}
        self.mro_cache: dict[int, list[object]] = {}
        self.assignments_cache: dict[int, dict[str, list[ast.AST]]] = {}
        self.word_files: dict[bytes, list[Path]] = {}
        self.size = sum(len(data) for data in raw(contents).values())
        self.budget = BUDGET
        self.question_budget = self.question_limit = QUESTION_BUDGET
        self.resolving: set[str] = set()

    # -- memos: the run's, and the question's ------------------------------------------------

    def recall(self, cache: Memo, kind: str, key: object) -> list[object] | None:
        """A value remembered. The run's memo holds values that depend on their key only: made
        with no hard cut, and with every cycle they met closed within them (a cycle's head: the
        outermost evaluation of the cycle). A head is not read while an evaluation of its
        cycle runs (that one asks it anew, as it would first). Else this question's value, made
        while something was cut: reading it counts that cut again (a hard one, or the cycle it
        met, while that still runs; once the cycle has ended, the value is asked anew)."""
        if key in cache:
            members = self.heads.get((kind, key))
            if members is None or self.active.keys().isdisjoint(members):
                return cache[key]
            return None
        if not self.serials:  # a new question: the cut values kept are the last question's
            return self.past_budget.get((kind, key))
        kept = self.question_cache.get((kind, key))
        if kept is None:
            return None
        if kept.low != NO_CYCLE:
            if kept.low >= len(self.serials) or self.serials[kept.low] != kept.serial:
                return None  # the cycle it met has ended: what it left is partial, ask anew
            self.low = min(self.low, kept.low)  # the cycle it met is still running
        if kept.hard:
            self.cuts += 1
        return kept.values

    def cycle(self, kind: str, key: object) -> bool:
        """Whether that evaluation is running already (a cycle): then it is cut here."""
        place = self.active.get((kind, key))
        if place is None:
            return False
        self.low = min(self.low, place)
        self.cut_frames.add((kind, key))
        if kind not in ("callers", "ev"):
            self.unsettled += 1  # cycles.py: asked anew, or cut to a value of its own
        self.unclean += 1
        return True

    def enter(self, kind: str, key: object) -> Entered:
        """Start a memoised evaluation (`leave` ends it, also when it raises); with none
        running, a new question: its own budget and its own memo of cut values."""
        if not self.serials:
            self.question_budget = self.question_limit
            self.question_cache.clear()
            self.cut_frames.clear()
        self.serial += 1
        entered = Entered(self.cuts, len(self.serials), self.serial, self.low, self.members)
        self.active[(kind, key)] = entered.place
        self.serials.append(self.serial)
        self.low, self.members = NO_CYCLE, set()
        return entered

    def leave(
        self, entered: Entered, cache: Memo, kind: str, key: object, values: list[object] | None
    ) -> None:
        """End an evaluation with its value (None: it raised). A value nothing cut below it,
        or a cycle's head (every cycle it met closed at it), is the run's; any other is kept for
        its question only (asked again there it is read, not searched again: a cycle in a chain
        would cost a search per path) and searched again by a later question; but a question
        its own budget cut is answered again as it was (`past_budget`), not with a budget more."""
        del self.active[(kind, key)]
        self.serials.pop()
        low, members = self.low, self.members
        self.low, self.members = entered.low, entered.members
        if low < entered.place:  # a cycle through an evaluation still running outside this one
            self.low = min(self.low, low)
            self.members.update(members)
            self.members.add((kind, key))
        if values is None or members or self.cuts != entered.cuts or low < entered.place:
            self.unclean += 1  # raised, a cycle's head, or cut: not its key's value alone
        if values is None:
            return
        if self.cuts == entered.cuts and low >= entered.place:
            cache[key] = values
            if members:  # a cycle's head
                self.heads[(kind, key)] = frozenset(members)
        else:
            place = low if low < entered.place else NO_CYCLE
            serial = self.serials[low] if low < entered.place else 0
            hard = self.cuts != entered.cuts
            self.question_cache[(kind, key)] = Kept(values, hard, place, serial)
            if hard and not self.serials and self.question_budget <= 0:
                self.past_budget[(kind, key)] = values

    # -- what the parts ask of each other (each defined by the part that owns it) --------------

    def summary(self, path: Path) -> Summary | None:
        raise NotImplementedError

    def has_summary(self, path: Path) -> bool:
        """The file's summary is made, or a cold run would have made it by now (`promised`)."""
        return path in self.summaries or path in self.promised

    def globals_declared(self, function: ast.AST) -> frozenset[str]:
        raise NotImplementedError

    def callers(self, function: ast.AST, ctx: Ctx) -> list[tuple[ast.Call, Ctx]]:
        raise NotImplementedError

    def parameter_values(self, function: ast.AST, param: ast.arg, ctx: Ctx) -> list[object]:
        raise NotImplementedError

    def declared_fabric(self, values: list[object], param: ast.arg, ctx: Ctx) -> list[object]:
        raise NotImplementedError

    def entry_values(self, function: ast.AST, param: ast.arg, ctx: Ctx) -> list[object]:
        raise NotImplementedError

    def module_symbol(self, summary: Summary, name: str, node: ast.AST) -> list[object]:
        raise NotImplementedError

    def resolve_qname(self, qname: str, node: ast.AST, summary: Summary) -> list[object]:
        raise NotImplementedError

    def ctx(self, summary: Summary, func: ast.AST | None, cls: ast.ClassDef | None) -> Ctx:
        raise NotImplementedError

    def ctx_of(self, summary: Summary, node: ast.AST) -> Ctx:
        raise NotImplementedError

    def force(self, items: Iterable[object]) -> list[object]:
        """The values of `items`, each argument not evaluated yet (a Thunk) evaluated."""
        values: list[object] = []
        seen: set[tuple[int, int] | int] = set()  # add_unique's keys, kept across the items
        for item in items:
            for value in self.ev(item.expr, item.ctx) if isinstance(item, Thunk) else (item,):
                key = value_key(value)
                if key not in seen:
                    seen.add(key)
                    values.append(value)
        return values

    def ev(self, node: ast.AST, ctx: Ctx) -> list[object]:
        raise NotImplementedError

    def ev_node(self, node: ast.AST, ctx: Ctx) -> list[object]:
        raise NotImplementedError

    def merge_spread(self, into: DictV, values: list[object]) -> None:
        raise NotImplementedError

    def body(self, function: ast.AST) -> list[ast.AST]:
        raise NotImplementedError

    def binding(self, binding: ast.AST, name: str, ctx: Ctx) -> list[object]:
        raise NotImplementedError

    def ev_path(self, value: ast.expr, path: tuple[int, ...], ctx: Ctx) -> list[object]:
        raise NotImplementedError

    def parameter(self, function: ast.AST, name: str, node: ast.AST, ctx: Ctx) -> list[object]:
        raise NotImplementedError

    def bound_values(self, ctx: Ctx, name: str, node: ast.AST) -> list[object]:
        raise NotImplementedError

    def local_bindings(
        self, function: ast.AST, summary: Summary | None = None
    ) -> dict[str, list[ast.AST]]:
        raise NotImplementedError

    def statements(self, function: ast.AST) -> list[ast.AST]:
        raise NotImplementedError

    def item_statements(self, scope: ast.AST, name: str) -> list[tuple[ast.stmt, bool]]:
        raise NotImplementedError

    def list_statements(self, scope: ast.AST, name: str) -> list[tuple[ast.stmt, bool]]:
        raise NotImplementedError

    def bind(
        self, function: ast.AST, call: ast.Call, caller: Ctx, is_method: bool, owner: Summary
    ) -> dict[str, list[object]]:
        raise NotImplementedError

    def attribute_of(self, value: object, attr: str, node: ast.AST) -> list[object]:
        raise NotImplementedError

    def field_values(self, inst: Inst, attr: str) -> tuple[list[object], set[int]] | None:
        raise NotImplementedError

    def mro(self, cls: ClsV) -> list[object]:
        raise NotImplementedError

    def derives_from(self, cls: ClsV, qualified: frozenset[str]) -> bool:
        raise NotImplementedError

    def files_naming(self, name: bytes) -> list[Path]:
        raise NotImplementedError

    def subclass_names(self, base: bytes) -> set[bytes]:
        raise NotImplementedError

    def imports_name(self, path: Path, name: bytes) -> bool:
        raise NotImplementedError

    def instance_attribute(
        self, cls: ClsV, attr: str, node: ast.AST, bound: bool = True, skip_own: bool = False
    ) -> list[object]:
        raise NotImplementedError


def value_key(value: object) -> tuple[int, int] | int:
    """Two arguments are one value when they are one object, the same expression in the
    same context (a Thunk made again by another call of `bind`), or "decided at run time" at
    the same place (an Opaque made again along another path)."""
    if isinstance(value, Thunk):
        return (id(value.expr), id(value.ctx))
    if isinstance(value, Opaque):
        return (id(value.node), id(value.summary))
    return id(value)


def argument_key(value: object) -> object:
    """A value as a memo key's part: what it is (values.memo_key; a Thunk by its expression and
    context); a dict or tuple a call builds (`**kwargs`, `*args`) by what it holds, since each
    call of `bind` builds it anew."""
    if isinstance(value, DictV):
        entries = tuple((k, tuple(map(argument_key, v))) for k, v in value.entries.items())
        return ("dict", value.closed, entries)
    if isinstance(value, TupleV):
        return ("tuple", tuple(tuple(map(argument_key, item)) for item in value.items))
    if isinstance(value, Thunk):
        return ("thunk", id(value.expr), id(value.ctx))
    return memo_key(value)


def add_unique(target: list[object], items: Iterable[object]) -> None:
    """Extend `target` by the items it does not hold yet. The same argument reached along two
    paths (wrappers that each call the next in two branches, each passing `**kwargs` on) is
    one value: kept twice, the lists would double at every wrapper."""
    UniqueAdds().add(target, items)


class UniqueAdds:
    """add_unique over many adds to the same lists, each list's keys kept between them: a
    `**kwargs` spread of many dicts (every caller's) adds to one parameter's list once per
    dict, and working its keys out again at each add made that quadratic. Valid while the
    lists change by these adds only (one spread's merge)."""

    def __init__(self) -> None:
        self.keys: dict[int, tuple[list[object], set[object]]] = {}

    def add(self, target: list[object], items: Iterable[object]) -> None:
        entry = self.keys.get(id(target))
        if entry is None or entry[0] is not target:
            entry = self.keys[id(target)] = (target, {value_key(value) for value in target})
        seen = entry[1]
        for item in items:
            key = value_key(item)
            if key not in seen:
                seen.add(key)
                target.append(item)
