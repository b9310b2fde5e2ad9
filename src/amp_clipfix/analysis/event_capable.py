"""Which calls ACF004's reading of the statements before a function's first clip may enter.

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
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from amp_clipfix.analysis.clip_tail import ClipCapable, Function
from amp_clipfix.analysis.facts import FileFacts
from amp_clipfix.analysis.recording import scan
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.written_events import SCALED_BACKWARD, is_scaled_backward


class BeforeClip(ClipCapable):
    """The project functions that can make a scaled backward or an `unscale_` within the
    helper levels a reading enters (see the module's docstring)."""

    def escaped(self) -> bool:
        return False  # the events are known by how their call is written, never by a value

    def root_calls(self) -> Iterator[tuple[ast.Call, Function, Summary, bool]]:
        # the files whose text may write a scaled backward (a noted scan)
        written = scan(self.reach.contents, ("fn", SCALED_BACKWARD))
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
