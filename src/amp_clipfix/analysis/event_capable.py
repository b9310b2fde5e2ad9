"""Which calls ACF004's readings may enter: those of the statements before a function's first
clip (`BeforeClip`), and those of every reading (`AnyEvent`).

ACF004 reads a function's statements from the first one that can clip on (analysis/clip_tail.py)
and reads the statements before it only when a step comes after a clip there (`Tail.whole`).
What that reading is for is the scaled backward before the clip and the `unscale_` calls
between the two (rules/acf004.py `unscaled_clip`: the last backward before the clip, the
optimizers unscaled since; `first_clip` and the step search read only what comes after the
backward up to the clip and after the clip). No statement before the first that can clip
clips, itself or in a helper, so a step there comes before every clip and no finding reads it.
A helper there that can make neither a scaled backward nor an `unscale_`, itself or in the
helpers it enters, adds nothing to the reading: it is not entered, and its callee is not asked
for (the evaluator's question a long `main()` asks of every call it makes).

Those functions are found as clip_tail.ClipCapable finds the ones that clip: from the calls the
classifier makes these events of, which it knows by how they are written
(`<x>.scale(...).backward(...)`, `<x>.unscale_(<optimizer>)`, whatever `x` holds), up through
the names they are called by, HELPER_DEPTH levels; a function of the index that may be a value
(a decorator's argument, `fn = f`, an instance's `__call__`) opens it: every call may enter.

Every reading (`AnyEvent`): its events are the calls the classifier makes one of (torch's clip
by value, a scaled backward, an `unscale_`, a step `<x>.step(<optimizer>)` whose receiver holds
a GradScaler: training.is_scaler), so a helper that can make none, itself or in the helpers it
enters, adds nothing to any reading, and its callee is not asked for. From its first clip on, a
training loop asks what each of its calls runs (`lr_scheduler.step()`, a checkpoint helper):
kohya's sd-scripts asked 13,724 such questions (3.3 s of 3.6), 28 with this index. Its roots are
the clip index's and BeforeClip's, and the steps: the files whose text calls a `step` attribute
with an argument, each call's receiver asked as the classifier asks it (a diffusion pipeline's
`self.scheduler.step(noise, t, latents)` in its `__call__` is no root, so it does not open the
index). It opens at once where the clip index opened for a function it holds, and before any
question where a root's callers are past the parse budget (a `backward` or `step` method).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from pathlib import Path

from amp_clipfix.analysis.clip_tail import (
    INDEX_PARSES,
    MOST_FUNCTIONS,
    ClipCapable,
    Found,
    Function,
    Open,
)
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.facts import FileFacts
from amp_clipfix.analysis.order import Body
from amp_clipfix.analysis.reach import CallReach
from amp_clipfix.analysis.recording import (
    earlier_result,
    holds,
    matches,
    python_texts,
    raw,
    scan,
    tested,
)
from amp_clipfix.analysis.scaler_calls import ScalerCalls, made_scaler
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.text_lines import TextLines
from amp_clipfix.analysis.value_sites import handed_sites
from amp_clipfix.analysis.written_events import (
    AFTER_BRACKET,
    SCALED_BACKWARD,
    is_scaled_backward,
    writes_scaled_backward,
)
from amp_clipfix.sources.prefilter import GAP

# `.step(` then something other than `)` (a gap first): a call of a `step` attribute with an
# argument, the only step the classifier makes an event of (`<x>.step(<optimizer>)`).
STEP_WITH_ARGUMENT = re.compile(
    rb"\." + GAP + rb"step(?![A-Za-z0-9_])" + GAP + rb"\(" + GAP + rb"[^)\s\\#]"
)
STEPS = (matches(STEP_WITH_ARGUMENT),)
SCALED = (("fn", SCALED_BACKWARD),)  # the scan's test of one file (written_events.py)


class BeforeClip(ClipCapable):
    """The project functions that can make a scaled backward or an `unscale_` within the
    helper levels a reading enters (see the module's docstring)."""

    def escaped(self) -> bool:
        return False  # the events are known by how their call is written, never by a value

    def root_calls(self) -> Iterator[tuple[ast.Call, Function, Summary, bool]]:
        """The roots (`kinds`); a root's callers are searched next (`build`): where that
        search is past the parse budget the index opens before any question is asked."""
        asked: set[int] = set()
        for found in self.kinds():
            _, function, summary, method = found
            if id(function) not in asked and not self.held(function):
                asked.add(id(function))
                root = Found(function, summary, method)
                seen = self.seen_from(root)
                word = function.name.encode()
                paths = self.evaluator.files_naming(word) if seen is None else seen
                self.affordable([p for p in paths if self.evaluator.may_call(p, function.name)])
            yield found

    def kinds(self) -> Iterator[tuple[ast.Call, Function, Summary, bool]]:
        yield from self.backward_roots(self.scaled_backward_files())

    def held(self, node: Function) -> Found | None:
        """Another index's entry of the function, taken as it is there (none here)."""
        return None

    def scaled_backward_files(self) -> list[Path]:
        """The files that may write a scaled backward (`scan(contents, ("fn",
        SCALED_BACKWARD))`), as far as the index can use them: the text test is a noted scan,
        then each file passing it is asked in turn (noted as that test of its text). Once more
        of them than INDEX_PARSES allows are files the index would parse itself, it opens
        before it parses any (`affordable`, in `calls_named`): the rest are not asked."""
        contents = self.reach.contents
        texts = raw(contents)
        found: list[Path] = []
        parses = self.parsed
        for path in scan(contents, holds(b"scale"), matches(AFTER_BRACKET)):
            if not tested(contents, path, SCALED, self.writes_scaled_backward(path, texts[path])):
                continue
            found.append(path)
            if not self.evaluator.has_summary(path) and self.evaluator.may_call(path, "backward"):
                parses += 1
                if parses > INDEX_PARSES:
                    break  # these alone open it
        return found

    def writes_scaled_backward(self, path: Path, data: bytes) -> bool:
        return scaled_backward_in(self.evaluator, self.reach.contents, path, data)

    def backward_roots(
        self, written: list[Path]
    ) -> Iterator[tuple[ast.Call, Function, Summary, bool]]:
        """The scaled backwards in `written` (files that may write one), then every
        `<x>.unscale_(<arg>)`."""
        for found in self.calls_named("backward", written):
            if is_scaled_backward(found[0]):
                yield found
        for found in self.calls_named("unscale_"):
            call = found[0]
            if isinstance(call.func, ast.Attribute) and call.args:
                yield found

    def may_enter(self, file: FileFacts, function: ast.AST | None, call: ast.Call) -> bool:
        """The call may run a project function of the index (an order.Enters)."""
        self.build()
        summary = self.reach.summary_of(file.path)
        if self.open or summary is None or summary.tree is not file.tree:
            return True
        return self.call_clips(call, summary)

    def may_meet_backward(self, file: FileFacts, function: Body) -> bool:
        """A reading of `function` (its own or a caller reading) may meet a scaled backward:
        a call it makes itself is written as one, or may run a function of the index (a call
        spelled with its name, or a library call it is handed to: a step's closure). A
        backward is an event only of a call so written, in the reading or in a helper it
        enters (HELPER_DEPTH levels, which the index holds), so where none may, the reading
        has no backward before any clip and reports nothing (rules/acf004.py
        `unscaled_clip`). Only the calls spelled with those names are looked at (the
        summary's index of calls by name), each kept where it is the function's own: no
        function, lambda or class between them (order.calls_of's, and a `match` case's)."""
        self.build()
        summary = self.reach.summary_of(file.path)
        if self.open or summary is None or summary.tree is not file.tree:
            return True
        top = list(self.levels[-1].values()) if self.levels else []
        candidates = [
            *(call for call in summary.calls("backward") if is_scaled_backward(call)),
            *(call for found in top for call, held in found.sites if held.tree is summary.tree),
        ]
        for name in sorted(self.named):
            named = self.named[name]
            candidates += (
                call
                for call in summary.calls(name)
                if any(self.may_call(call, summary, found) for found in named)
            )
        return any(made_by(summary, function, call) for call in candidates)


class AnyEvent(BeforeClip):
    """The project functions that can make any event of ACF004's readings within the helper
    levels a reading enters: a clip (ClipCapable's roots), a scaled backward or an `unscale_`
    (BeforeClip's), or a step of a GradScaler: `<x>.step(<optimizer>)` whose receiver the
    classifier can say holds one (training.is_scaler). A helper that can make none adds no
    event to any reading, so a call that can run none is not entered, and its callee is not
    asked for (the question every call of a long training loop asks after its clip)."""

    def __init__(
        self, reach: CallReach, clips: ClipCapable, scalers: ScalerCalls | None = None
    ) -> None:
        super().__init__(reach)
        self.clips = clips
        self.scalers = scalers  # the calls that may make a GradScaler (the classifier's)
        self.written = clips.written  # how modules write names as values: the same answers
        self.stars = clips.stars  # which texts import `*`: the same answers

    def build(self) -> None:
        """Open at once where the clip index opened for a function it holds (a value, or one
        past MOST_FUNCTIONS) or for torch's clip handed on: this index holds its functions
        too, so it would open for the same one. Where the clip index spent its parses on the
        question whether a function is a value, that question is asked first, within this
        index's own parses: a value opens this one too."""
        if not self.built:
            clips = self.clips
            clips.build()
            asked = clips.asked
            if clips.open and (not clips.spent or asked is not None and self.a_value(asked)):
                self.built = self.open = True
        super().build()

    def a_value(self, function: Found) -> bool:
        """The function may be a value (value_sites.py); False where the question is past this
        index's parses (the index then builds as it would have)."""
        try:
            return handed_sites(self, function) is None
        except Open:
            self.spent = False
            return False

    def escaped(self) -> bool:
        return ClipCapable.escaped(self)  # torch's clip handed on: any call may clip

    def add(self, found: dict[int, Found], node: Function, summary: Summary, method: bool) -> None:
        """A function of the clip index (built, closed) joins as it is there: it was asked
        whether it may be a value."""
        held = self.held(node)
        if held is None or id(node) in found or len(found) >= MOST_FUNCTIONS:
            super().add(found, node, summary, method)
        else:
            found[id(node)] = held

    def kinds(self) -> Iterator[tuple[ast.Call, Function, Summary, bool]]:
        """ClipCapable's roots and BeforeClip's (known by how they are written), then the
        steps (an evaluator question each)."""
        yield from ClipCapable.root_calls(self)
        contents = self.reach.contents
        # BeforeClip's roots, from the files whose text may write a scaled backward (a noted
        # scan, its text test only), those the evaluator read first: no file is parsed twice
        written = scan(contents, holds(b"scale"), matches(AFTER_BRACKET))
        written.sort(key=lambda path: not self.evaluator.has_summary(path))  # stable
        yield from self.backward_roots(written)
        texts = python_texts(contents)
        written = [  # noted tests of the texts, as scans are
            path
            for path in self.evaluator.files_naming(b"step")
            if tested(contents, path, STEPS, STEP_WITH_ARGUMENT.search(texts[path]) is not None)
        ]
        for found in self.calls_named("step", written):
            call, _, summary, _ = found
            func = call.func
            if (
                isinstance(func, ast.Attribute)
                and call.args
                and holds_scaler(self.evaluator, summary, func.value, self.scalers)
            ):
                yield found

    def held(self, node: Function) -> Found | None:
        """The clip index's entry of the function (built and closed: it was asked whether
        its callers are within the parse budget and whether it may be a value)."""
        return self.clips.levels[-1].get(id(node)) if self.clips.levels else None


def scaled_backward_in(
    evaluator: Evaluator, contents: Mapping[Path, bytes], path: Path, data: bytes
) -> bool:
    """written_events.writes_scaled_backward's answer, from the tree the evaluator made of the
    same text when it made one (a second parse of a long module costs as much as the first),
    else from the predicate's own parse (or the earlier entry's note, the file unchanged
    since). Not noted: the caller notes it (`tested`)."""
    earlier = earlier_result(contents, path, SCALED)
    if earlier is not None:
        return earlier
    summary = evaluator.summaries.get(path)
    if summary is not None and same_source(summary, data):
        return bool(summary.calls_kept(is_scaled_backward, "backward"))
    return writes_scaled_backward(path, data)


def same_source(summary: Summary, data: bytes) -> bool:
    """The summary's tree is `ast.parse(data)`'s, as the scan's predicate parses it: its text
    is these bytes, all ASCII (`python_text` leaves them as they are), with no coding cookie
    (its first two lines do not write `coding`: bytes and text are read alike). A large
    module's tree leaves out only statements that call nothing (analysis/parse.py)."""
    lines = summary.lines
    if not (data.isascii() and isinstance(lines, TextLines) and lines.data == data):
        return False
    return b"coding" not in b"\n".join(data.split(b"\n", 2)[:2])


def holds_scaler(
    evaluator: Evaluator, summary: Summary, node: ast.expr, calls: ScalerCalls | None = None
) -> bool:
    """The classifier's question of a step's receiver (training.is_scaler: a value a library
    `GradScaler(...)` call made), asked of the module's summary as the evaluator reads it;
    `calls`: the calls that may make one (analysis/scaler_calls.py; None: any call)."""
    values = evaluator.force(evaluator.ev(node, evaluator.ctx_of(summary, node)))
    return made_scaler(evaluator, values, calls)


def made_by(summary: Summary, function: Body, call: ast.Call) -> bool:
    """The call is `function`'s own (no function, lambda or class between them)."""
    node = summary.parent(call)
    while node is not None and node is not function:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            return False
        node = summary.parent(node)
    return node is function
