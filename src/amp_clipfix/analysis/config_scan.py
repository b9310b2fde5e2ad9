"""The cheap key scan of a YAML config (config_sites.read_config asks it before composing):
whether the text can give a site or a fit at all, read as lines, and the value words the reader
and the scan both judge by.
"""

from __future__ import annotations

import re

from amp_clipfix.analysis import names
from amp_clipfix.analysis.lightning_api import CLIP_VAL_ARGUMENT, PRECISION_ARGUMENT
from amp_clipfix.patterns import lazy

# LightningCLI (jsonargparse) and Hydra (OmegaConf) read YAML 1.1, where no/off are booleans.
FALSE_WORDS = frozenset({"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})


NULL_WORDS = frozenset({"", "~", "null", "Null", "NULL"})


def positive(text: str) -> bool:
    try:
        return float(text.replace("_", "")) > 0
    except ValueError:
        return False


FUSED_KEY = "fused"  # torch's optimizers' argument (names.FUSABLE_OPTIMIZERS take it)
# The keys the reader makes a site of, each with whether a value (one plain or quoted word,
# alone on its line) certainly makes none: the reader's own tests (ConfigReader.optimizer,
# .precision, .clip).
VALUE_KEYS = {
    FUSED_KEY: lambda value, quoted: not quoted and value in (FALSE_WORDS | NULL_WORDS),
    PRECISION_ARGUMENT: lambda value, quoted: not names.is_mixed_precision(value),
    CLIP_VAL_ARGUMENT: lambda value, quoted: not positive(value),
}
MODEL_KEY = "model"  # a `model:` mapping with a target is the class the config fits
TARGET_KEYS = ("class_path", "_target_")
# `key: value`, alone on its line (after the indentation and a sequence's dashes): the key
# plain or quoted, the value one word (plain or quoted, no `${`) or none, then at most a comment.
KEY_LINE = lazy(
    r"(?P<indent>[ ]*(?:-[ ]+)*)(?P<kq>['\"]?)(?P<key>\w+)(?P=kq)[ \t]*:"
    r"(?:[ \t]+(?P<vq>['\"]?)(?P<value>[A-Za-z0-9_.+-]+)(?P=vq))?[ \t]*(?:#[^\r\n]*)?\r?"
)
# Where a key may be spelled with an escape: a line with a double quote and a backslash (an
# implicit key is one line), or an explicit key (`? "...`) that may span lines.
ESCAPED_KEY = lazy(r'^[^\n]*(?:"[^\n]*\\|\\[^\n]*")|^[ \t-]*\?(?:[ \t]|$)', re.MULTILINE)
# A flow collection (`{`, `[`; not `${`): its plain values may go on at any indentation.
FLOW = lazy(r"(?<!\$)\{|\[")
WORD_KEYS = lazy("|".join(sorted({*VALUE_KEYS, *TARGET_KEYS})))
# The line that starts a block scalar under a plain block key (`run: |`, `- script: >-  # x`, a
# tag before the indicator; no anchor: an anchored scalar's text may be an alias's key).
BLOCK_SCALAR_KEY = lazy(
    r"(?P<indent>[ ]*(?:-[ ]+)*)(?P<kq>['\"]?)\w+(?P=kq)[ \t]*:[ \t]+"
    r"(?:![^ \t\r\n]*[ \t]+)?[|>][0-9+-]*[ \t]*(?:#[^\r\n]*)?\r?"
)


def may_hold_sites(text: str) -> bool:
    """Whether a config's text can give a site or a fit (the cheap key scan before composing).

    No, when no key may be spelled with an escape (no line holds both `"` and a backslash,
    no explicit `?` key), each `fused` / `precision` / `gradient_clip_val` in it is a block
    `key: value` line whose value the reader makes no site of (`precision: 32`,
    `gradient_clip_val: 0.0`, `fused: false`) and which the next line does not continue,
    and each `class_path` / `_target_` is a block key line whose mapping is no `model:`'s.
    The words may also be in a comment line or in another key's one-word line
    (`output_precision: 3`, `name: fused_adam`, a trailing comment). Any other text (a flow
    mapping, an anchored or aliased key, a block scalar) is composed. An alias or a merge key
    only repeats text the scan reads where it is anchored (an anchor's line is no key line).
    A line of a block scalar's text is no key line either (`block_scalar_end`): a CI
    workflow's `run: |` step that passes `--trainer.precision=16` is not composed."""
    scalar_end = 0  # the text before is a block scalar's: no key is read in it
    if "\\" in text:
        for escaped in ESCAPED_KEY.finditer(text):
            if escaped.start() >= scalar_end:
                scalar_end = block_scalar_end(text, escaped.start())
                if scalar_end < 0:
                    return True
    scalar_end = 0
    for found in WORD_KEYS.finditer(text):
        if found.start() < scalar_end:
            continue
        start = text.rfind("\n", 0, found.start()) + 1
        if may_give_site(text, start):
            scalar_end = block_scalar_end(text, start)  # a CI step's `run: |` text: no key
            if scalar_end < 0:
                return True
    return False


def may_give_site(text: str, start: int) -> bool:
    """may_hold_sites' test of one line holding one of its words (starting at `start`)."""
    end = text.find("\n", start)
    end = len(text) if end < 0 else end
    if text[start:end].lstrip(" ").startswith("#"):
        return False  # a comment line: no key
    line = KEY_LINE.fullmatch(text, start, end)
    if line is None:
        return True
    key, value, column = line.group("key"), line.group("value"), line.end("indent") - start
    if key not in VALUE_KEYS and key not in TARGET_KEYS:
        return False  # the word is in another key's line: that key is read by no one
    if key in TARGET_KEYS:
        return value is None or parent_key(text, start, column) in (MODEL_KEY, None)
    if value is None or not VALUE_KEYS[key](value, bool(line.group("vq"))):
        return True
    # a flow mapping's `fused: false` may go on at any indent ("false x")
    return continues(text, end, column) or (key == FUSED_KEY and FLOW.search(text) is not None)


def continues(text: str, end: int, column: int) -> bool:
    """Whether the first line after `end` that is not blank may continue a plain value whose
    key is at `column` (indented deeper, or by a tab)."""
    while end < len(text):
        start = end + 1
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        line = text[start:end]
        if line.strip(" \r"):
            indent = len(line) - len(line.lstrip(" "))
            return indent > column or line[indent] == "\t"
    return False


def parent_key(text: str, start: int, column: int) -> str | None:
    """The key of the block mapping entry that holds a key line at `column` (a sequence's
    items are their key's); "" at the top level; None when the lines above are not plain
    block key lines."""
    while start > 0:
        end = start - 1
        start = text.rfind("\n", 0, end) + 1
        line = text[start:end]
        content = line.lstrip(" ")
        if not content.strip() or content.startswith("#"):
            continue
        if len(line) - len(content) >= column:
            continue  # a sibling, or deeper
        entry = KEY_LINE.fullmatch(text, start, end)
        if entry is None:
            if content.rstrip() == "-":
                continue  # an item of the sequence whose key holds it
            return None
        if entry.end("indent") - start >= column:
            continue  # a sibling item of the same sequence
        return entry.group("key") if entry.group("value") is None else None
    return ""


def block_scalar_end(text: str, start: int) -> int:
    """Where the block scalar ends whose text the line at `start` is (-1: none is known): a
    BLOCK_SCALAR_KEY line above it whose key is at a column less than the indentation of
    every line from there to this one (blank lines aside: a line of spaces). Its text goes
    on to the first line after that is not indented deeper than the key. In YAML that parses
    (a text that does not is reported by `check_parses` whatever the scan says) such a line
    is the scalar's text: a line indented less than the scalar's first, or a comment line
    left of it, ends the scalar, and then the parser refuses the deeper line that follows."""
    line_end = text.find("\n", start)
    least = indentation(text[start : len(text) if line_end < 0 else line_end])
    end = start
    while end > 0 and least > 0:
        end -= 1  # the line break that ends the line above
        begin = text.rfind("\n", 0, end) + 1
        line = text[begin:end]
        if not line.strip(" \r"):
            end = begin
            continue  # blank
        header = BLOCK_SCALAR_KEY.fullmatch(text, begin, end)
        if header is not None and header.end("indent") - begin < least:
            return scalar_end(text, end, header.end("indent") - begin)
        least = min(least, indentation(line))
        end = begin
    return -1


def scalar_end(text: str, end: int, column: int) -> int:
    """The start of the first line after `end` (a block scalar's header line's end) that is not
    blank and not indented deeper than `column`; the text's end when there is none."""
    while end < len(text):
        begin = end + 1
        end = text.find("\n", begin)
        end = len(text) if end < 0 else end
        line = text[begin:end]
        if line.strip(" \r") and indentation(line) <= column:
            return begin
    return len(text)


def indentation(line: str) -> int:
    """The spaces a line starts with (a tab is no indentation)."""
    return len(line) - len(line.lstrip(" "))
