"""Where a reading can first clip: ACF004 reads the events of a function from there on first,
and reads the whole function only when a step comes after a clip there.

ACF004 reports a clip only when an optimizer step of the backward's scaler comes after it in a
later statement (rules/acf004.py `unscaled_clip`), and reads a function's callers only for a
clip the function makes itself with no step after it (`in_callers`). Events are read statement
by statement in source order (order.events), each statement's events its own, so every such
clip and step is an event of the statements from the first one that can clip on. The
statements before it (the scaled backward, the `unscale_` calls) are read only when a step
comes after a clip in the rest; a function where no statement can clip is not read at all.
A caller reading (`in_callers`) is read the same way from the statement that calls the helper.
Until the first clip of such a tail is met, a helper it enters is read from the helper's own
first statement that can clip (`Tail`): what comes before is no clip and comes before every
clip, so no step after a clip is left out.

Which statement can clip (`ClipCapable`): a call of torch's clip, in the reading or in a project
function it enters (a callee's `Fn`, an instance's `__call__`, a step's closure, HELPER_DEPTH
levels down). torch's clip is called under its own name unless the project hands it on
(reach.CallReach.clip_escapes: then every statement can). A project function is a callee's
value where its name is called, or where it is itself a value: written other than as a callee
(`fn = f`, `run(f)`, a renamed import), a string (`getattr`), a decorator's argument, a
`__call__` (an instance's, and a closure, followed where the evaluator can: instance_flow.py).
So the functions that can clip with `k` levels below them (`levels[k]`) are found from
torch's clip calls up (a call spelled like it whose callee is not torch's clip by value,
`accelerator.clip_grad_norm_(...)`, is none), by the names they are called with and the
library calls they are handed to (`mp.spawn(run)`: analysis/value_sites.py); if one of them
may be a value the evaluator follows, any call can run it: the index says "every statement"
(`open`). A
module-level function is called by its bare name only in its module and in files that import
that name (or `*`), and as an attribute only where a module object of its module (or of one
importing it by name) can be made: an import binds one of its name, or its package's object
can be made and some text writes its name as an attribute (analysis/module_holders.py; no
module is made from a string).

The statements before a reading's first clip are read for its scaled backward and `unscale_`
calls only, and enter only the helpers that can make one; every reading enters only the
helpers that can make an event (analysis/event_capable.py).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.instance_flow import Function
from amp_clipfix.analysis.module_holders import ModuleHolders
from amp_clipfix.analysis.module_objects import WRITES_VALUE, writes_value
from amp_clipfix.analysis.names import TORCH_CLIP_NAMES as CLIP_NAMES
from amp_clipfix.analysis.names import TORCH_CLIPS
from amp_clipfix.analysis.order import (
    FUNCTIONS,
    HELPER_DEPTH,
    Body,
    Classify,
    Enters,
    Event,
    EventKind,
    Outside,
    Seen,
    calls_of,
    events,
    gated,
    statements,
)
from amp_clipfix.analysis.partials import library_callables
from amp_clipfix.analysis.reach import CallReach
from amp_clipfix.analysis.recording import matches, python_texts, read, tested
from amp_clipfix.analysis.summary import Summary, called_name
from amp_clipfix.analysis.value_sites import Found, WrittenValues, enclosing_function, handed_sites
from amp_clipfix.analysis.values import Fn
from amp_clipfix.sources.prefilter import word_start

STAR_IMPORT = re.compile(word_start(b"import") + rb"\s+\*")  # `\bimport\s+\*`, searched fast
# Files the index parses itself (the evaluator has not) before it opens.
INDEX_PARSES = 24
# Most functions the index follows up before it answers "every statement" (a web of helpers
# that large costs more to index than to read).
MOST_FUNCTIONS = 200


class ClipCapable(ModuleHolders):
    """The project functions that can clip within the helper levels a reading enters, found
    once per run (see the module's docstring)."""

    def __init__(self, reach: CallReach) -> None:
        super().__init__()
        self.reach = reach
        self.facts = reach.facts
        self.evaluator = reach.evaluator
        self.built = False
        self.open = False  # every statement may clip
        # levels[k]: the functions that can clip with k helper levels entered below them
        self.levels: list[dict[int, Found]] = []
        self.parsed = 0  # files the index parsed itself
        self.spent = False  # it opened past INDEX_PARSES (not for a function it holds)
        self.before: Enters = None  # Tail.before (set by the rule: event_capable.BeforeClip)
        # the modules holding no search word whose helpers a reading enters (set by the rule)
        self.outside: Outside = None
        self.handed: set[int] = set()  # the index's library calls it is handed to (`sites`)
        # the top level's functions by name, in the level's order: `may_call` answers no for
        # a call not spelled with the function's name before it asks anything
        self.named: dict[str, list[Found]] = {}
        self.written: dict[tuple[int, str], tuple[ast.Module, WrittenValues]] = {}
        self.stars: dict[Path, bool] = {}  # `imports_star`'s answers (a file's text is fixed)
        self.asked: Found | None = None  # the function whose value question opened the index

    # -- the index ---------------------------------------------------------------------------

    def build(self) -> None:
        if self.built:
            return
        self.built = True
        self.open = True  # until the index is whole: every statement may clip
        if self.escaped():
            return
        found: dict[int, Found] = {}
        try:
            for _call, function, summary, method in self.root_calls():
                self.add(found, function, summary, method)
            levels = [dict(found)]
            for _ in range(HELPER_DEPTH - 1):
                for callee in list(found.values()):
                    for call, function, summary, method in self.calls_named(
                        callee.node.name, self.seen_from(callee)
                    ):
                        if self.may_call(call, summary, callee):
                            self.add(found, function, summary, method)
                    for site, summary in callee.sites:
                        for function, method in enclosing_function(site, summary):
                            self.add(found, function, summary, method)
                levels.append(dict(found))
        except Open:
            return
        self.levels = levels
        self.handed = {id(call) for f in levels[-1].values() for call, _ in f.sites}
        for top in levels[-1].values():
            self.named.setdefault(top.node.name, []).append(top)
        self.open = False

    def escaped(self) -> bool:
        """The roots' own call may be made where its name is not written: torch's clip is
        handed on as a value (reach.CallReach.clip_escapes)."""
        return self.reach.clip_escapes()

    def root_calls(self) -> Iterator[tuple[ast.Call, Function, Summary, bool]]:
        """The calls the index starts from: torch's clip called by its name, where the
        classifier can say it is (its callee's value is torch's clip: training.is_torch_clip).
        `accelerator.clip_grad_norm_(...)` is no clip of its own; a project method it may run
        that clips is a root itself, and the call's function joins the index a level above it
        (`calls_named`), as any caller of a clipping function does."""
        for word in sorted(CLIP_NAMES):
            for found in self.calls_named(word):
                if self.torch_clip(found[0], found[2]):
                    yield found

    def torch_clip(self, call: ast.Call, summary: Summary) -> bool:
        """The callee's value may be torch's clip (the classifier's question, asked as it asks
        it: its answer is the evaluator's, kept for the reading that meets the call)."""
        if not isinstance(call.func, (ast.Name, ast.Attribute)):
            return False  # a call of a call's result, of an item: a value (see `open`)
        evaluator = self.evaluator
        values = evaluator.force(evaluator.ev(call.func, evaluator.ctx_of(summary, call.func)))
        return bool(library_callables(evaluator, values) & TORCH_CLIPS.keys())

    def add(self, found: dict[int, Found], node: Function, summary: Summary, method: bool) -> None:
        """A function that can clip joins the index; one that may be a value, or one past
        MOST_FUNCTIONS, opens it."""
        if id(node) in found:
            return
        function = Found(node, summary, method)
        if len(found) >= MOST_FUNCTIONS:
            raise Open
        self.asked = function  # kept where the question opens the index
        sites = handed_sites(self, function)
        if sites is None:
            raise Open
        self.asked = None
        found[id(node)] = Found(node, summary, method, sites) if sites else function

    def summary(self, path: Path) -> Summary | None:
        """The file's summary as the evaluator reads it; past INDEX_PARSES files the index
        made itself, it opens (an index that costs a project's parse does not pay)."""
        if not self.evaluator.has_summary(path) and not self.levels:
            self.parsed += 1  # while the index is built (its answers after are kept)
            if self.parsed > INDEX_PARSES:
                self.spent = True
                raise Open
        read(self.reach.contents, path)
        return self.reach.summary_of(path)

    def affordable(self, paths: list[Path]) -> list[Path]:
        """`paths`, if parsing those the evaluator has not keeps within INDEX_PARSES (else the
        index opens before it parses any)."""
        new = sum(1 for path in paths if not self.evaluator.has_summary(path))
        if not self.levels and self.parsed + new > INDEX_PARSES:
            self.spent = True
            raise Open
        return paths

    def seen_from(self, function: Found) -> list[Path] | None:
        """The files that may call the function by its name: all that write it (a method, or a
        function of a module an object of which may be made), else its module and importers."""
        if function.method or self.attribute_reachable(function):
            return None
        word = function.node.name.encode("ascii")
        return [
            path
            for path in self.evaluator.files_naming(word)
            if path == function.summary.path
            or self.evaluator.imports_name(path, word)
            or self.imports_star(path)
        ]

    def calls_named(
        self, name: str, paths: list[Path] | None = None
    ) -> Iterator[tuple[ast.Call, Function, Summary, bool]]:
        """The calls spelled `name(...)` or `x.name(...)` in the project's functions (in
        `paths`, else in every file writing the name), with the function that makes each (a
        call in a lambda, a class body or a module's own code is no helper's)."""
        if paths is None:
            paths = self.evaluator.files_naming(name.encode("ascii"))
        # the text can call it (callers.may_call: a noted test of the text, not a read)
        paths = self.affordable([path for path in paths if self.evaluator.may_call(path, name)])
        for path in paths:
            summary = self.summary(path)
            if summary is None:
                continue
            # a call of `name` writes it
            for call in summary.calls_kept(lambda c: called_name(c.func) == name, name):
                for function, method in enclosing_function(call, summary):
                    yield call, function, summary, method

    def may_call(self, call: ast.Call, summary: Summary, function: Found) -> bool:
        """The call (in `summary`'s module) may run `function` by its name."""
        func = call.func
        name = function.node.name
        if called_name(func) != name:
            return False
        if function.method:
            return True
        if isinstance(func, ast.Attribute):  # in its own module too: `x.f()` is no `f()`
            return self.attribute_reachable(function)
        return summary is function.summary or self.imports_from(
            summary, name, self.exporters(function)
        )

    def imports_star(self, path: Path) -> bool:
        """The file's text may import `*` (`from m import *`): a noted test of its text (the
        text searched once a run: every function's `seen_from` asks of the files naming it)."""
        found = self.stars.get(path)
        if found is None:
            found = STAR_IMPORT.search(python_texts(self.reach.contents)[path]) is not None
            self.stars[path] = found
        return tested(self.reach.contents, path, (matches(STAR_IMPORT),), found)

    def writes_value(self, path: Path, word: bytes) -> bool:
        """The file's text writes the word other than right before a `(` (a call, a `def`):
        as a name or attribute read, an import clause, a string (the parse decides which). A
        noted test of its text, not a read."""
        found = writes_value(path, python_texts(self.reach.contents)[path], word.decode("ascii"))
        return tested(
            self.reach.contents, path, (("fn", WRITES_VALUE, word.decode("ascii")),), found
        )

    def escapes(self, function: Found) -> bool:
        """The function may be a value somewhere, a library's included (value_sites.py)."""
        return handed_sites(self, function) != ()

    # -- readings ----------------------------------------------------------------------------

    def first_clip(self, file: FileFacts, function: Body) -> ast.stmt | None:
        """The first statement of `function` (order.statements' order) that may clip, itself
        or in the helpers a reading enters; None when none can."""
        return self.first_in(self.reach.summary_of(file.path), file.tree, function)[0]

    def first_in(
        self, summary: Summary | None, tree: ast.Module, function: ast.AST
    ) -> tuple[ast.stmt | None, ast.Call | None]:
        """The first statement of `function` that may clip and its first call that may (None
        for the call: any may)."""
        self.build()
        for statement in statements(function.body):  # type: ignore[attr-defined]
            if self.open or summary is None or summary.tree is not tree:
                return statement, None
            for call in calls_of(statement):
                if self.call_clips(call, summary):
                    return statement, call
        return None, None

    def call_clips(self, call: ast.Call, summary: Summary) -> bool:
        if id(call) in self.handed:
            return True  # a library call an index function is handed to
        name = called_name(call.func)
        if name is None:
            return False  # a call of a call's result, an item: a value (see `open`)
        if name in CLIP_NAMES:
            return True
        return any(self.may_call(call, summary, f) for f in self.named.get(name, ()))

    def first_helper_clip(self, helper: Fn) -> ast.stmt:
        """The first statement of a project function entered as a helper that may clip
        (NOTHING when none can)."""
        statement = self.first_in(helper.summary, helper.summary.tree, helper.node)[0]
        return NOTHING if statement is None else statement


class Tail:
    """One reading of a tail: its classifier notes the first clip it meets; until then, a
    helper entered is read from its first statement that may clip on (`start`, order.events
    `starts`): what comes before is no clip, and comes before every clip of the tail, so no
    step after a clip is left out (neither is a clip, nor what follows one)."""

    def __init__(self, capable: ClipCapable, classify: Classify) -> None:
        self.capable = capable
        # which calls of the statements before the first that may clip may enter a helper
        # (event_capable.BeforeClip: only a scaled backward or an `unscale_` matters there)
        self.before: Enters = capable.before
        self.inner = classify
        self.clipped = False
        self.first: ast.stmt | None = None  # where the reading started
        self.cut = False  # a helper's statements were left out

    def classify(self, file: FileFacts, call: ast.Call) -> Seen | None:
        seen = self.inner(file, call)
        if seen is not None and seen.kind is EventKind.CLIP:
            self.clipped = True
        return seen

    def start(self, call: ast.Call, helper: Fn) -> ast.stmt | None:
        if self.clipped or self.capable.open:
            return None
        first = self.capable.first_helper_clip(helper)
        if first is not next(statements(helper.node.body), None):
            self.cut = True
        return first

    def events(
        self, facts: ProjectFacts, file: FileFacts, function: Body, first: ast.stmt, enters: Enters
    ) -> list[Event]:
        """The events of `function` from `first` on, helpers as `start` says."""
        self.first = first
        outside = self.capable.outside
        return events(
            facts,
            file,
            function,
            self.classify,
            0,
            enters,
            first,
            self.start,
            tail=True,
            outside=outside,
        )

    def whole(
        self,
        order: list[Event],
        facts: ProjectFacts,
        file: FileFacts,
        function: Body,
        classify: Classify,
        enters: Enters,
    ) -> list[Event]:
        """The reading whole: the statements before the first read, then `order` (read anew
        when a helper's statements were left out of it)."""
        outside = self.capable.outside
        if self.cut:
            return events(
                facts, file, function, classify, enters=enters, tail=True, outside=outside
            )
        enters = gated(self.before, enters)  # only where a backward or an unscale_ can be
        before = events(
            facts, file, function, classify, enters=enters, until=self.first, outside=outside
        )
        return before + order


class Open(Exception):
    """The index cannot tell: every statement may clip."""


# A statement no body holds: order.events reads no statement of a helper started there.
NOTHING = ast.Pass()


def step_after_clip(order: list[Event]) -> bool:
    """Some step comes after a clip in these events: a clip may then be reported."""
    clipped = False
    for event in order:
        if event.kind is EventKind.CLIP:
            clipped = True
        elif clipped and event.kind is EventKind.STEP:
            return True
    return False


def statement_of(file: FileFacts, function: Body, call: ast.Call) -> ast.stmt | None:
    """The statement of `function` (order.statements) that makes the call itself: the
    innermost statement around it, when no function, lambda or class is between."""
    node: ast.AST | None = file.summary.parent(call)
    while node is not None and node is not function:
        if isinstance(node, (*FUNCTIONS, ast.Lambda, ast.ClassDef)):
            return None
        if isinstance(node, ast.stmt):
            return node
        node = file.summary.parent(node)
    return None


def tail_events(
    facts: ProjectFacts,
    file: FileFacts,
    function: Body,
    call: ast.Call,
    classify: Classify,
    enters: Enters,
    clips: ClipCapable,
) -> list[Event]:
    """The events of a caller reading whose clips come through `call` (rules/acf004.py
    `in_callers`): from the statement making the call on (a Tail), and the whole reading only
    when a step comes after a clip there (a clip with no step after it is reported nowhere)."""
    first = statement_of(file, function, call)
    if first is None:
        return events(
            facts, file, function, classify, enters=enters, tail=True, outside=clips.outside
        )
    tail = Tail(clips, classify)
    order = tail.events(facts, file, function, first, enters)
    if not step_after_clip(order):
        return order
    return tail.whole(order, facts, file, function, classify, enters)
