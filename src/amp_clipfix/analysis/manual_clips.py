"""Whether any call of the project may be a clip as manual optimization's classifier sees one
(rules/acf005.py), asked before its search: where none may, no reading of any function (its
helpers included) meets a clip, so the search cannot find anything and is not run.

The classifier makes a clip of a call in only two ways:

- the module's `clip_gradients`: a call written `<x>.clip_gradients(<arguments>)`, or a call
  of that method handed on as a value (its value is the attribute `<x>.clip_gradients` as
  written, callables.bound_receivers);
- torch's clip functions by value (`training.is_torch_clip`): a value made from code that
  writes the function's name (an import, an attribute), so a call of it is written with that
  name as its callee (`clip_grad_norm_(...)`, `nn_utils.clip_grad_value_(...)`) unless the
  project hands the function on (`clip = torch.nn.utils.clip_grad_norm_`, `partial(
  clip_grad_norm_, ...)`, an import under another name, `getattr(utils, "clip_grad_norm_")`:
  name_uses.called_only's forms).

So the project may clip only where a file writes one of those names (NFKC-normalised), and
a file that does writes one only as the callee of its calls, imported under its own name,
not as a string, and not as `<x>.clip_gradients(...)` with arguments, clips nowhere unless
one of those calls' callees is torch's clip by value: each is asked of the evaluator, the
question the classifier asks of it (memoised). NeMo writes `clip_grad_value_(...)` only of its
own helper of that name, so its search of 211 modules and 13,000 evaluations (every method of
its manually optimized TTS models and their helpers, whose callees follow `cfg` through every
model's construction) is left out.

A text witness opens the gate without a parse (`.clip_gradients(` with an argument, in code or
not); then the files the evaluator already read, then the others, parsed. A file that does not
parse may clip. The scan is noted (recording.py), and so is each file's read, so an edit that
writes the first clip runs the search again.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.lightning_api import MODULE_CLIP
from amp_clipfix.analysis.name_uses import called_only
from amp_clipfix.analysis.names import TORCH_CLIP_NAMES, TORCH_CLIPS
from amp_clipfix.analysis.partials import library_callables
from amp_clipfix.analysis.recording import PREDICATES, python_texts, scan
from amp_clipfix.analysis.text_tests import whole_word
from amp_clipfix.sources.prefilter import GAP, python_text

if TYPE_CHECKING:
    from amp_clipfix.analysis.evaluate import Evaluator

CLIP_NAMES = frozenset({MODULE_CLIP, *TORCH_CLIP_NAMES})
WORDS = tuple(sorted(name.encode("ascii") for name in CLIP_NAMES))
WRITES_CLIP_NAME = "writes_clip_name"  # the scan's predicate (recording.PREDICATES)
# `.clip_gradients(` then something other than `)`: a call of it with an argument, maybe.
MODULE_CLIP_CALL = re.compile(
    rb"\."
    + GAP
    + MODULE_CLIP.encode("ascii")
    + rb"(?![A-Za-z0-9_])"
    + GAP
    + rb"\("
    + GAP
    + rb"[^)\s\\#]"
)


def writes_clip_name(path: Path | None, data: bytes) -> bool:
    """The text may write a clip's name (in the text Python reads: NFKC-normalised) as a whole
    word: `clip_calls` reads a name, an attribute's last name, an import or a string equal to
    one, and Python reads an identifier whole, so `clip_grad_norm_fp32` (a helper's name)
    writes none."""
    text = data if data.isascii() else python_text(data)
    return any(word in text and whole_word(word).search(text) for word in WORDS)


def any_manual_clip(evaluator: Evaluator) -> bool:
    """Some call of the project may be a clip as ACF005's classifier sees one (see the module
    docstring); the scan is noted, each file asked is read through the evaluator."""
    contents = evaluator.contents
    writing = scan(contents, ("fn", WRITES_CLIP_NAME))
    texts = python_texts(contents)
    for path in writing:
        if MODULE_CLIP_CALL.search(texts[path]):
            contents.get(path)  # the answer relies on the witness's file: noted as read
            return True
    for path in sorted(writing, key=lambda path: not evaluator.has_summary(path)):  # stable
        summary = evaluator.summary(path)
        if summary is None:
            return True  # not read as Python here: it may
        spelled = clip_calls(summary.tree)
        if spelled is None:
            return True
        for call in spelled:
            values = evaluator.force(evaluator.ev(call.func, evaluator.ctx_of(summary, call.func)))
            if library_callables(evaluator, values) & TORCH_CLIPS.keys():
                return True
    return False


def clip_calls(tree: ast.Module) -> list[ast.Call] | None:
    """The calls whose callee is written with a torch clip's name; None when the module writes
    a clip's name otherwise: handed on (name_uses.called_only) or the module's `clip_gradients`
    called with an argument."""
    found = called_only(tree, CLIP_NAMES)
    if found is None:
        return None
    torch: list[ast.Call] = []
    for call in found:
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == MODULE_CLIP:
            if call.args:
                return None
        elif (func.attr if isinstance(func, ast.Attribute) else func.id) in TORCH_CLIP_NAMES:  # type: ignore[attr-defined]
            torch.append(call)
    return torch


PREDICATES[WRITES_CLIP_NAME] = writes_clip_name
