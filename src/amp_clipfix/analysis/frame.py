"""The evaluator's frame: its bounds, the context an expression is evaluated in, an argument not
evaluated yet, and the state the evaluator's parts share.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from amp_clipfix.analysis.relevance import ClassLines
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import ClsV, DictV, Opaque

MAX_DEPTH = 6
# Values one expression may hold before the run-time ones merge: flow-insensitive following
# doubles them at every `x = x.f()` reassignment (neuralforecast has dozens in a row).
MAX_VALUES = 64
BUDGET = 400_000  # evaluations per project; beyond it everything is decided at run time
# Evaluations one question of the resolution may cost (a call in a module's method, a site's
# value): real projects stay under ~8,000; one call into a compiler's own code (lightning-thunder)
# used the whole project budget, 9 s, and left nothing for the questions after it.
QUESTION_BUDGET = 25_000
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
        # (also `Thread(target=fn, args=...)`: passed.py)
        self.launched: dict[int, tuple[ast.Call, ast.Call]] = {}
        self.passing_index: dict[Path, dict[str, list[ast.Call]]] = {}  # passed.passing
        self.passed_nesting = 0  # passed.passed_calls running inside one another
        self.param_uses: dict[int, tuple[frozenset[str], frozenset[str]]] = {}  # by function
        # Searches cut short: a bound that is not part of a memo's key (the budgets,
        # passed.MAX_NESTED) or a cycle (an evaluation, a parameter's callers, an attribute, a
        # class's bases or an import asked again inside itself). A value made while this grew
        # is kept for its question only (`remember`), never in the run's memos.
        self.cuts = 0
        self.frames = 0  # memoised evaluations running (ev, parameter, attribute, mro)
        self.following: set[tuple[str, object]] = set()  # parameter, attribute, mro running
        self.question_cache: dict[tuple[str, object], list[object]] = {}
        self.callers_cache: dict[tuple[int, str], list[object]] = {}
        self.caller_files_cache: dict[tuple[str, Path], list[Path]] = {}
        self.name_files: dict[bytes, list[Path]] = {}  # callers.files_naming
        # per file, its `class Name(bases):` lines as (name, words of the bases)
        self.class_index: dict[Path, list[tuple[bytes, set[bytes]]]] = {}
        self.import_index: dict[Path, frozenset[bytes]] = {}
        self.call_texts: dict[tuple[str, Path], bool] = {}  # callers.may_call
        self.pass_texts: dict[tuple[str, Path], bool] = {}  # callers.may_pass
        self.attr_cache: dict[tuple[int, str], list[object]] = {}
        self.mro_cache: dict[int, list[object]] = {}
        self.assignments_cache: dict[int, dict[str, list[ast.AST]]] = {}
        self.word_files: dict[bytes, list[Path]] = {}
        self.size = sum(len(data) for data in contents.values())
        self.budget = BUDGET
        self.question_budget = self.question_limit = QUESTION_BUDGET
        self.resolving: set[str] = set()

    # -- memos: the run's, and the question's ------------------------------------------------

    def recall(self, cache: dict, kind: str, key: object) -> list[object] | None:  # type: ignore[type-arg]
        """A value remembered: the run's (made without a cut, so the same whenever asked), else
        this question's (made while something was cut below it: reading it is a cut too)."""
        if key in cache:
            return cache[key]  # type: ignore[no-any-return]
        if self.frames == 0:
            return None  # a new question: the cache of cut values is the last question's
        found = self.question_cache.get((kind, key))
        if found is not None:
            self.cuts += 1
        return found

    def enter(self) -> int:
        """Start a memoised evaluation (the caller leaves it with `frames -= 1`, also when it
        raises); with none running, a new question: its own budget and its own memo of cut
        values. The cut count to compare with at the end."""
        if self.frames == 0:
            self.question_budget = self.question_limit
            self.question_cache.clear()
        self.frames += 1
        return self.cuts

    def remember(
        self,
        cache: dict,  # type: ignore[type-arg]
        kind: str,
        key: object,
        values: list[object],
        cuts: int,
    ) -> None:
        """Keep the value of an evaluation started when `cuts` cuts were counted (its frame
        left): a value nothing cut is the run's; a cut one stays with its question (asked again
        there, it is read, not searched again: a cycle in a chain would cost a search per path),
        and a later question searches again from its own start."""
        if self.cuts == cuts:
            cache[key] = values
        else:
            self.question_cache[(kind, key)] = values

    def cycle(self, kind: str, key: object) -> bool:
        """Whether that evaluation is running already (a cycle): then it is cut here."""
        if (kind, key) in self.following:
            self.cuts += 1
            return True
        return False

    # -- what the parts ask of each other (each defined by the part that owns it) --------------

    def summary(self, path: Path) -> Summary | None:
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
        raise NotImplementedError

    def ev(self, node: ast.AST, ctx: Ctx) -> list[object]:
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

    def local_bindings(self, function: ast.AST) -> dict[str, list[ast.AST]]:
        raise NotImplementedError

    def bind(
        self, function: ast.AST, call: ast.Call, caller: Ctx, is_method: bool, owner: Summary
    ) -> dict[str, list[object]]:
        raise NotImplementedError

    def attribute_of(self, value: object, attr: str, node: ast.AST) -> list[object]:
        raise NotImplementedError

    def mro(self, cls: ClsV) -> list[object]:
        raise NotImplementedError

    def derives_from(self, cls: ClsV, qualified: frozenset[str]) -> bool:
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
