"""Whether the project writes the one call a rule's every finding is made of, asked before its
search: where no file writes it, the search cannot find anything and is not run.

ACF004's finding is a clip between a scaled backward and the scaler's step; its classifier
(rules/acf004.py) makes a scaled backward only of a call written `<x>.scale(...).backward(...)`
(the receiver a call of a `scale` attribute), whatever values it holds. Such a call is a node
of some project file: where none holds one, no reading of any function (its helpers and
callers included) meets a backward, and the search (every call of the clips' functions asked
what it runs, the `self.cfg.get(...)` kind of question that follows a value through every
caller) is left out. NeMo and the Lightning repository make GradScalers and clip, but write no
scaled backward.

A file is looked at in its text first, then parsed: it must hold `scale` and a `backward`
attribute written after a closing bracket (`).backward`, with any spaces, line breaks,
continuations or comments between), in the text Python reads: a file not all ASCII is read
after NFKC normalisation (`ｂackward` is `backward` to Python). A file that holds them but does
not parse counts as writing one. The scan is noted as the query's `exists` question
(recording.py), so an edit that adds such a call runs the search again.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Mapping
from pathlib import Path

from amp_clipfix.analysis.recording import PREDICATES, exists

SCALED_BACKWARD = "writes_scaled_backward"  # the scan's predicate (recording.PREDICATES)
# `)` then `.backward`, with only spaces, line breaks, continuations or comments between
# (possessive: a gap is read once, never tried again in pieces).
_GAP = rb"(?:\s|\\|#[^\r\n]*+)*+"
AFTER_BRACKET = re.compile(rb"\)" + _GAP + rb"\." + _GAP + rb"backward(?![A-Za-z0-9_])")


def python_text(data: bytes) -> bytes:
    """The text as Python reads its names: NFKC-normalised where it is not all ASCII."""
    if data.isascii():
        return data
    text = data.decode("utf-8", "replace")
    return unicodedata.normalize("NFKC", text).encode("utf-8", "replace")


def writes_scaled_backward(path: Path | None, data: bytes) -> bool:
    """The file may make a call `<x>.scale(...).backward(...)` (see the module docstring)."""
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
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    receiver = node.func.value
    return (
        node.func.attr == "backward"
        and isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr == "scale"
    )


def any_scaled_backward(contents: Mapping[Path, bytes]) -> bool:
    """Some project Python file (the evaluator's texts, library code included) may write a
    scaled backward; noted with the first that does."""
    return exists(contents, ("fn", SCALED_BACKWARD))


PREDICATES[SCALED_BACKWARD] = writes_scaled_backward
