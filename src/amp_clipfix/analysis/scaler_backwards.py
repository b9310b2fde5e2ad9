"""Whether some call written `<x>.scale(...).backward(...)` may be a scaled backward as ACF004's
classifier makes one, asked before its search.

The classifier (rules/acf004.py `classifier`) makes a backward event only of such a call whose
`x` may hold a value a library GradScaler call made (training.is_scaler: `x` evaluated in its
own function's context, whichever reading meets the call, then scaler_calls.made_scaler), and
every finding needs one. So where no such call's `x` may hold one, no reading of any function
meets a backward and the search can find nothing. ColossalAI writes one scaled backward, on
its own copy of torch's GradScaler class (a project class): its search made 435 parses and
22,643 evaluations for no finding.

The question is the classifier's own, with its `ScalerCalls`, and must stay so: were the
classifier to ask `x` in the context a reading entered its helper with, this would have to
ask every such context (a helper handed on as a value, `run = scaled; run(scaler, loss)`, has
its `scaler` from no caller in its own context: neither reports it). Two answers count as "may"
without being asked to their end: one the evaluator cut (its `cuts` moved: a budget or a bound
outside the question's key, so the same question asked later, in the search, may hold more),
and a file that is not read as Python here. The files whose summary the evaluator already
has (or a cold run would have by now) are asked first; where more than INDEX_PARSES of the
files are not, it answers "may" before it parses any (the search's own index, event_capable.
BeforeClip, opens at that many files it would parse itself, and parses none of them).

A file is looked at in its text first, as Python reads it: it must write `.scale(` and
`).backward` (each with any spaces, line breaks, continuations or comments between: the only
texts such a call is written in), then whether its tree holds such a call (the evaluator's
tree, else the predicate's parse: event_capable.scaled_backward_in), then each call's `x` is
asked; the first that may ends it. ColossalAI: 11 files hold `scale` and `).backward`, 2 of
them `.scale(`, 1 such a call. The scan and each file's test are noted and the files asked are
read through the evaluator (queries.py), so an edit that writes such a call, or changes what
its `x` may hold, runs the search again.
"""

from __future__ import annotations

import re
from pathlib import Path

from amp_clipfix.analysis.clip_tail import INDEX_PARSES
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.event_capable import SCALED, scaled_backward_in
from amp_clipfix.analysis.order import Outside
from amp_clipfix.analysis.recording import holds, matches, raw, scan, tested
from amp_clipfix.analysis.scaler_calls import ScalerCalls, made_scaler
from amp_clipfix.analysis.written_events import AFTER_BRACKET, scaler_written
from amp_clipfix.sources.prefilter import GAP

# `.scale(`, with only spaces, line breaks, continuations or comments between: where a text
# Python reads does not hold it, no call of a `scale` attribute is written in it.
SCALE_CALL = re.compile(rb"\." + GAP + rb"scale" + GAP + rb"\(")


def any_scaler_backward(evaluator: Evaluator, calls: ScalerCalls | None) -> bool:
    """Some project Python file (the evaluator's texts, library code included) may make a
    backward event of ACF004's classifier (see the module's docstring)."""
    contents = evaluator.contents
    written = scan(contents, holds(b"scale"), matches(AFTER_BRACKET), matches(SCALE_CALL))
    unread = [path for path in written if not evaluator.has_summary(path)]
    if len(unread) > INDEX_PARSES:
        return True  # more than the search's own index parses before it opens: it may
    texts = raw(contents)
    for path in [*(path for path in written if evaluator.has_summary(path)), *unread]:
        if not tested(
            contents, path, SCALED, scaled_backward_in(evaluator, contents, path, texts[path])
        ):
            continue
        summary = evaluator.summary(path)
        if summary is None:
            return True  # not read as Python here: it may
        for call in summary.calls("backward"):
            receiver = scaler_written(call)
            if receiver is None:
                continue
            cuts = evaluator.cuts
            found = evaluator.force(evaluator.ev(receiver, evaluator.ctx_of(summary, receiver)))
            if made_scaler(evaluator, found, calls) or evaluator.cuts != cuts:
                return True
    return False


def scaled_backward_modules(evaluator: Evaluator) -> Outside:
    """The modules holding none of the searches' words whose helpers ACF004's readings enter
    (order.events `outside`): those whose text may write a scaled backward
    (written_events.writes_scaled_backward, the gate's own shape: the only call the classifier
    makes a backward of). A training loop's `backward_of(scaler, loss)` of such a module is
    then read as it runs; a module writing none holds no backward a reading could meet
    (an `unscale_` or a step there, or a helper entered only on the way to such a module, is
    not looked for: session 33, bench/README.md). Each module's text is read once (a read the
    query notes), its answer from the evaluator's tree of it where it has one (the helper's
    callee was found there), else from the predicate's parse (scaled_backward_in)."""
    contents = evaluator.contents
    known: dict[Path, bool] = {}

    def writes(path: Path) -> bool:
        if path not in known:
            known[path] = scaled_backward_in(evaluator, contents, path, contents[path])
        return known[path]

    return writes
