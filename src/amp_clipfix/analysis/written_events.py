"""Whether the project writes the one call a rule's every finding is made of, asked before its
search: where no file writes it, the search cannot find anything and is not run.

ACF004's finding is a clip between a scaled backward and the scaler's step; its classifier
(rules/acf004.py) makes a scaled backward only of a call written `<x>.scale(...).backward(...)`
(the receiver a call of a `scale` attribute) whose `x` may hold a value a library GradScaler
call made (training.is_scaler: asked of `x` in its own function's context, whichever reading
meets the call). Such a call is a node of some project file: where none holds one, or no
such call's `x` may hold a GradScaler (analysis/scaler_backwards.py), no reading of any
function (its helpers and callers included) meets a backward, and the search (every call of
the clips' functions asked what it runs, the `self.cfg.get(...)` kind of question that
follows a value through every caller) is left out. NeMo and the Lightning repository make
GradScalers and clip, but write no scaled backward.

ACF006's finding is a clip after a Fabric's backward; its classifier (rules/acf006.py) makes a
backward of a call written `<x>.backward(<arguments>)` whose receiver holds a Fabric, or of a
call of a Fabric's `backward` handed on as a value (`backward = fabric.backward`). Where no file
hands a `backward` attribute on, and no such call's receiver holds a Fabric (each asked of the
evaluator: NeMo writes three, all `super().backward(*args, **kwargs)`), the search is left out.

A file is looked at in its text first, then parsed: it must hold `scale` and a `backward`
attribute written after a closing bracket (`).backward`, with any spaces, line breaks,
continuations or comments between), in the text Python reads: a file not all ASCII is read
after NFKC normalisation (`ｂackward` is `backward` to Python). A file that holds them but does
not parse counts as writing one. The scan is noted (recording.py), so an edit that adds such a
call runs the search again.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.name_uses import ATTR_READ, ATTR_STORED, ATTR_WRITTEN, name_uses
from amp_clipfix.analysis.nodes import walk
from amp_clipfix.analysis.recording import PREDICATES, exists, scan
from amp_clipfix.analysis.values import FabricV
from amp_clipfix.sources.prefilter import GAP, python_text

if TYPE_CHECKING:
    from amp_clipfix.analysis.evaluate import Evaluator

SCALED_BACKWARD = "writes_scaled_backward"  # the scan's predicate (recording.PREDICATES)
# `)` then `.backward`, with only spaces, line breaks, continuations or comments between
# (possessive: a gap is read once, never tried again in pieces).
AFTER_BRACKET = re.compile(rb"\)" + GAP + rb"\." + GAP + rb"backward(?![A-Za-z0-9_])")
BACKWARD_WITH_ARGUMENTS = "writes_backward_with_arguments"
BACKWARD_HANDED_ON = "hands_backward_on"
BACKWARD = frozenset(("backward",))
# `.backward(` then something other than `)`: a call that passes an argument (a gap first).
_ATTRIBUTE = rb"\." + GAP + rb"backward(?![A-Za-z0-9_])"
WITH_ARGUMENTS = re.compile(_ATTRIBUTE + GAP + rb"\(" + GAP + rb"[^)\s\\#]")
# `.backward` not called where it is written: handed on as a value.
NOT_CALLED = re.compile(_ATTRIBUTE + rb"(?!" + GAP + rb"\()")


def writes_scaled_backward(path: Path | None, data: bytes) -> bool:
    """The file may make a call `<x>.scale(...).backward(...)` (see the module docstring)."""
    if data.isascii() and (b"scale" not in data or b"backward" not in data):
        return False
    text = python_text(data)
    if b"scale" not in text or AFTER_BRACKET.search(text) is None:
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True  # not read as Python here: it may
    return any(is_scaled_backward(node) for node in ast.walk(tree))


def is_scaled_backward(node: ast.AST) -> bool:
    """The call shape ACF004's classifier makes a scaled backward of."""
    return scaler_written(node) is not None


def scaler_written(node: ast.AST) -> ast.expr | None:
    """`x` of a call written `<x>.scale(...).backward(...)`; None for any other node."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    receiver = node.func.value
    if (
        node.func.attr == "backward"
        and isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr == "scale"
    ):
        return receiver.func.value
    return None


def writes_backward_with_arguments(path: Path | None, data: bytes) -> bool:
    """The text may call a `backward` attribute with an argument (`fabric.backward(loss)`)."""
    if b"backward" not in data and data.isascii():
        return False
    return WITH_ARGUMENTS.search(python_text(data)) is not None


def hands_backward_on(path: Path | None, data: bytes) -> bool:
    """The file may write a `backward` attribute other than as a call's callee (`f =
    fabric.backward`, `partial(fabric.backward)`): only such code hands the method on (as
    name_uses.called_only says of torch's clip). The text first (a docstring's `.backward`
    passes it), then the tree; a file that does not parse may."""
    if b"backward" not in data and data.isascii():
        return False
    text = python_text(data)
    if NOT_CALLED.search(text) is None:
        return False
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return name_uses(tree, BACKWARD, ATTR_READ | ATTR_STORED | ATTR_WRITTEN) is None


def any_fabric_backward(evaluator: Evaluator) -> bool:
    """Some project file may run a Fabric's backward as ACF006's classifier sees one: a
    `backward` handed on as a value somewhere, or a call `<x>.backward(<arguments>)` whose
    receiver may hold a Fabric (asked of the evaluator, as the classifier asks it). The scans
    are noted; the evaluator's reads are its own."""
    contents = evaluator.contents
    if exists(contents, ("fn", BACKWARD_HANDED_ON)):
        return True
    for path in scan(contents, ("fn", BACKWARD_WITH_ARGUMENTS)):
        summary = evaluator.summary(path)
        if summary is None:
            return True  # not read as Python here: it may
        for node in walk(summary.tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "backward"
                and node.args
            ):
                receiver = node.func.value
                found = evaluator.force(evaluator.ev(receiver, evaluator.ctx_of(summary, receiver)))
                if any(isinstance(value, FabricV) for value in found):
                    return True
    return False


PREDICATES[SCALED_BACKWARD] = writes_scaled_backward
PREDICATES[BACKWARD_WITH_ARGUMENTS] = writes_backward_with_arguments
PREDICATES[BACKWARD_HANDED_ON] = hands_backward_on
