"""Cheap tests that decide which files need parsing with libcst at all.

Every site has a tell-tale word in its file, and the few files that have the word are then
searched for the call the site needs, under any import alias (as text: the reader parses the
files that pass, once):
- a fused optimizer: `Adam` / `AdamW` / `SGD` / `Adagrad` / `partial` called with `fused=` or a
  `**spread` (configs: a `fused:` key);
- a Trainer's precision or clipping: a call to `Trainer` or a `MixedPrecision...` plugin
  (configs: `precision`, `gradient_clip_val`).
A finding always needs a fused optimizer, so a project in which no file builds one needs nothing
else parsed; a Fabric made in a module no stage passes (a factory) is read by the project
resolution when a clip's receiver reaches it (analysis/resolve_entries.py). The tests check that
results with and without this prefilter are identical.
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from amp_clipfix.patterns import lazy

# The bytes of a word as `\w` in a bytes pattern reads it (ASCII letters, digits, `_`): the
# characters `word_start`'s look-behind refuses before a word.
WORD_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
VALUE_BYTES = WORD_BYTES | {ord("-")}  # a settled precision value's (`16-mixed`)
BLANK_BYTES = frozenset(b" \t")

# What may stand between two tokens of a statement as a text test reads it: spaces, line breaks
# (inside brackets), backslash continuations, comments (possessive: a gap is read once, never
# tried again in pieces).
GAP = rb"(?:\s|\\|#[^\r\n]*+)*+"


def word_start(word: bytes) -> bytes:
    """A pattern's start for `word` at the start of a whole word, written with the word first
    and the look-behind after it: `re` then skips to the word's occurrences as a plain text
    search does (a leading `\\b` or look-behind is tried at every byte: 8-20 times slower on
    a module), and matches at the same places as `\\b` + word (a bytes pattern's `\\w` is
    ASCII)."""
    escaped = re.escape(word)
    return escaped + rb"(?<![A-Za-z0-9_]" + escaped + rb")"


def literal_starts(data: bytes, literal: bytes) -> list[int]:
    """Where `literal` (not empty) starts in `data`, left to right and not overlapping: the
    starts `re.finditer(re.escape(literal), data)` gives, without compiling a pattern per
    literal (a project of thousands of factories asks thousands of names, each once)."""
    starts, at = [], data.find(literal)
    while at != -1:
        starts.append(at)
        at = data.find(literal, at + len(literal))
    return starts


def whole_word_starts(data: bytes, name: bytes) -> list[int]:
    """Where the ASCII identifier `name` is written as a whole word (no ASCII letter, digit or
    `_` right before or after it): the starts of `text_tests.whole_word(name)`'s matches.
    Matches of an identifier passing that test never overlap, so each occurrence is tested."""
    found, size, at = [], len(name), data.find(name)
    while at != -1:
        end = at + size
        if (at == 0 or data[at - 1] not in WORD_BYTES) and (
            end == len(data) or data[end] not in WORD_BYTES
        ):
            found.append(at)
        at = data.find(name, at + 1)
    return found


FUSED_WORD = b"fused"
FUSED_ARGUMENT = lazy(word_start(FUSED_WORD) + rb"\s*=(?!=)|[\'\"]fused[\'\"]")
OPTIMIZER_WORDS = (b"Adam", b"SGD", b"Adagrad")
OPTIMIZER_CALLS = frozenset({"Adam", "AdamW", "SGD", "Adagrad", "partial"})
TRAINER_WORDS = (b"Trainer", b"MixedPrecision")
TRAINER_CALLS = frozenset(
    {
        "Trainer",
        "MixedPrecision",
        "MixedPrecisionPlugin",
        "NativeMixedPrecisionPlugin",
        "from_argparse_args",  # pytorch-lightning 1.x: `Trainer.from_argparse_args(args)`
    }
)
CONFIG_FUSED = lazy(word_start(FUSED_WORD) + rb"\s*:")  # `\bfused\s*:`
# A config document written in Python (`OmegaConf.create({...})`, `DictConfig({...})`): its
# optimizer and trainer mappings are read as a YAML config's (analysis/python_configs.py).
CONFIG_DOCUMENT_CALLS = frozenset({"create", "DictConfig"})
CONFIG_WORDS = (b"precision", b"gradient_clip_val")
# The words one of which a project must hold for a rule with its own search to look at it (each
# rule names them in its own module, `Rule.needed_words`), kept here as well so that a run knows
# which projects can matter before any rule is imported; tests/test_rules.py checks that every
# searching rule's words are here.
SEARCH_WORDS: tuple[bytes, ...] = (
    b"clip_grad_norm_",
    b"clip_grad_value_",
    b"clip_gradients",
    b"manual_backward",
    b"automatic_optimization",
    b"amp_backend",
    b"amp_level",
    b"precision",
    b"cuda.amp",
    b"cpu.amp",
    b"cuda import amp",
    b"cpu import amp",
    b"fsdp",
    b"FSDP",
)

# ACF011's words (rules/acf011.WORDS is this tuple): its search
# reads only files holding one of them, though the project must only hold `precision` for it to
# search at all. Where `precision` is the only searching word of a project, the search is started
# only when some file may hold an old spelling (may_need_search).
PRECISION_WORD = b"precision"
LEGACY_PRECISION_WORDS: tuple[bytes, ...] = (
    b"precision=16",
    b"precision = 16",
    b"precision: 16",
    b"precision: bf16",
    b'"16"',
    b"'16'",
    b'"bf16"',
    b"'bf16'",
    b'"precision": 16',  # a dict spread into the call (`Trainer(**cfg)`)
    b"'precision': 16",
    b'"precision"] = 16',
    b"'precision'] = 16",
)
LEGACY_PIECE = b"16"  # in each of LEGACY_PRECISION_WORDS (tests/test_search_need.py)


Mentions = Callable[[bytes, bytes], bool]  # whether a file's text may hold a word


def holds(data: bytes, word: bytes) -> bool:
    """`word in data`, by `find`: CPython's `in` on bytes first reads the word as an integer
    (`b"a" in data` and `97 in data` are both allowed), raising and clearing a formatted
    TypeError each time (~1,000 instructions more than `find`); the hot text tests call find."""
    return data.find(word) >= 0


SearchFile = tuple[Path, bytes, bool, Mentions]  # (path, data, is_config, mentions)
OTHER_SEARCH_WORDS = tuple(word for word in SEARCH_WORDS if word != PRECISION_WORD)


def may_need_search(
    files: Iterable[SearchFile], root: Path | None = None, cleared: frozenset[Path] = frozenset()
) -> bool:
    """Whether a rule with its own search may find something in a project, from the text of its
    files (`(path, data, is_config, mentions)`) alone, before any rule or analysis module is
    imported: some file holds a searching word other than `precision`; or `precision` is there
    and some Python file holds one of ACF011's words, or some config holds one and may set an
    old spelling (a `precision:` that is not a settled dashed value, or an escape that may
    spell a key). With the project's `root` (the pipeline, deciding which rules to import), a
    file holding one of ACF011's words counts only where that search could read it: a Python
    file that may call a Trainer or a Fabric (`may_call_for_precision`), a config with `16` /
    `bf16` off comment lines (`may_spell_old_value`). Without it (the collection, deciding
    which texts it reads, and so which of their read errors it reports), as before that test.
    `mentions(data, word)`: whether the text may hold the word (`holds` for decoded text; a
    notebook's raw bytes: `json_may_contain`). `cleared`: files known to hold no searching word
    but `precision` (search_need's answer), asked only whether they hold `precision`."""
    files = list(files)
    kept = [file for file in files if file[0] not in cleared] if cleared else files
    if holds_any(kept, OTHER_SEARCH_WORDS):
        return True
    if not holds_any(files, (PRECISION_WORD,)):
        return False
    return any(may_read_old_spelling(file, root) for file in kept if holds_legacy_word(file))


def search_need(files: Iterable[SearchFile]) -> tuple[bool, frozenset[Path]]:
    """`may_need_search` without a root (the collection's question, of each file's raw bytes),
    and the files then found to hold no searching word but `precision`, which the pipeline's
    question (with the root, of the searchable texts) need not ask again: `mentions` may only
    say a word is absent from the raw bytes where the searchable text cannot hold it. Where
    some file may hold another word no file is cleared (the answer is known at that word)."""
    files = list(files)
    if holds_any(files, OTHER_SEARCH_WORDS):
        return True, frozenset()
    if not holds_any(files, (PRECISION_WORD,)):
        return False, frozenset()
    legacy = [file for file in files if holds_legacy_word(file)]
    cleared = frozenset(file[0] for file in files) - {file[0] for file in legacy}
    return any(may_read_old_spelling(file, None) for file in legacy), cleared


def holds_any(files: list[SearchFile], words: tuple[bytes, ...]) -> bool:
    """Whether some file's text may hold one of the words."""
    return texts_hold_any(((data, mentions) for _, data, _, mentions in files), words)


# How many bytes of texts `texts_hold_any` joins for one scan per word: a few scans of a small
# project's texts instead of one call per word and text (each a few hundred instructions more
# than the scan of a short text), and a scan of a big tree's ends not far past a text that holds
# the word.
JOINED_BYTES = 1 << 16


def texts_hold_any(texts: Iterable[tuple[bytes, Mentions]], words: tuple[bytes, ...]) -> bool:
    """Whether some text (with its `mentions`) may hold one of the words (none holding a line
    break): the texts whose `mentions` is `holds` are joined by line breaks, up to
    JOINED_BYTES, and each word is looked for in the joined text, where it is exactly when it
    is in one of them; a text of another `mentions` is asked after the texts before it, in
    order, as `any` over the texts asks it."""
    joined: list[bytes] = []
    size = 0
    for data, mentions in texts:
        if mentions is holds:
            joined.append(data)
            size += len(data)
            if size < JOINED_BYTES:
                continue
        if joined and _joined_hold_any(joined, words):
            return True
        joined, size = [], 0
        if mentions is not holds and any(mentions(data, word) for word in words):
            return True
    return bool(joined) and _joined_hold_any(joined, words)


def _joined_hold_any(texts: list[bytes], words: tuple[bytes, ...]) -> bool:
    text = texts[0] if len(texts) == 1 else b"\n".join(texts)
    return any(text.find(word) >= 0 for word in words)  # find: see holds


def holds_legacy_word(file: SearchFile) -> bool:
    """Whether the file's text may hold one of ACF011's words (LEGACY_PRECISION_WORDS), each of
    which holds LEGACY_PIECE: a text that cannot hold the piece is asked for no word (a
    `mentions` that may say a text holds a word says it may hold each piece of it)."""
    _, data, _, mentions = file
    return mentions(data, LEGACY_PIECE) and any(
        mentions(data, word) for word in LEGACY_PRECISION_WORDS
    )


def may_read_old_spelling(file: SearchFile, root: Path | None) -> bool:
    """Whether ACF011's search may read an old spelling in this file, which holds one of its
    words (may_need_search)."""
    path, data, is_config, _ = file
    if not is_config:
        # without the root, any; with it, ACF011's search tests the file and never parses
        # it where it cannot call for precision (calls.library_call_files)
        return root is None or may_call_for_precision(path, data, root)
    return (b"\\" in data or unsettled_precision(data)) and (
        root is None or config_may_spell_old_value(data)
    )


def unsettled_precision(data: bytes) -> bool:
    """Whether some `precision` in a config's bytes is not the key of a settled value: a
    `precision:` whose value is one plain or quoted word with a dash (`16-mixed`,
    `"bf16-true"`), alone on its line but for a comment, which is never a legacy spelling
    (`16`, `bf16`) whatever YAML does. Read with string methods: the pattern it was cost ~1 M
    instructions to compile, 0.5% of a small project's `check` (a comment `# precision: 16`)."""
    end, start = 0, data.find(PRECISION_WORD)
    while start != -1:
        if start < end:  # in the value or the comment of the one before
            return True
        end = _settled_end(data, start + len(PRECISION_WORD))
        if end == -1:
            return True
        start = data.find(PRECISION_WORD, start + len(PRECISION_WORD))
    return False


def _settled_end(data: bytes, at: int) -> int:
    """Where the settled value after a key ending at `at` ends (a line break or the text's
    end), or -1: blanks, `:`, blanks, a quote or none, word bytes, `-`, word bytes or `-`, the
    same quote, blanks, a comment or none."""
    at = _past(data, at, BLANK_BYTES)
    if data[at : at + 1] != b":":
        return -1
    at = _past(data, at + 1, BLANK_BYTES)
    quote = data[at : at + 1] if data[at : at + 1] in (b"'", b'"') else b""
    word = _past(data, at + len(quote), WORD_BYTES)
    if word == at + len(quote) or data[word : word + 1] != b"-":
        return -1
    at = _past(data, word + 1, VALUE_BYTES)
    if at == word + 1 or data[at : at + len(quote)] != quote:
        return -1
    at = _past(data, at + len(quote), BLANK_BYTES)
    if data[at : at + 1] == b"#":
        line_end = data.find(b"\n", at)
        line_end = len(data) if line_end == -1 else line_end
        carriage = data.find(b"\r", at, line_end)
        at = line_end if carriage == -1 else carriage
    return at if at == len(data) or data[at] in b"\r\n" else -1


def _past(data: bytes, at: int, allowed: frozenset[int]) -> int:
    """The first position from `at` whose byte is not in `allowed` (or the text's end)."""
    while at < len(data) and data[at] in allowed:
        at += 1
    return at


# What ACF011's search asks of a Python file holding an old spelling before parsing it
# (analysis/calls.CallTest of `Trainer(...)` and `Fabric(...)`): the text writes the callee's
# last name (`Trainer`, `Fabric`, `from_argparse_args`), or imports it from a Lightning package
# (whose names all hold `lightning`), or the module is in one (its path holds `lightning`).
# tests/test_precision_gate.py checks that each word and package CallTest looks for holds one
# of these.
PRECISION_CALL_WORDS = (b"Trainer", b"Fabric", b"from_argparse_args", b"lightning")


def may_call_for_precision(path: Path, data: bytes, root: Path) -> bool:
    """Whether ACF011's search may parse this Python file (`data`: its bytes as read, or a
    notebook's code): its path below `root` or its text as Python reads it (decoded by its own
    encoding, names NFKC-normalised) holds one of PRECISION_CALL_WORDS. A file of another kind
    than `.py` (a notebook) and one that cannot be decoded count as calling."""
    if path.suffix != ".py":
        return True
    try:
        module = path.relative_to(root).as_posix()
    except ValueError:
        module = path.as_posix()
    if any(word.decode("ascii") in module for word in PRECISION_CALL_WORDS):
        return True
    if python_holds(data, PRECISION_CALL_WORDS):
        return True
    from amp_clipfix.sources.text import SourceError, decode_source

    try:  # a declared encoding other than UTF-8 may write the words in other bytes
        text = decode_source(path, data).text.encode("utf-8")
    except SourceError:
        return True
    return python_holds(text, PRECISION_CALL_WORDS)


# `16` / `bf16` as a whole scalar token: not inside a longer one (`16-mixed`, `bf16-true`,
# `x16`, `16.0`, `-16`), whatever quotes, tag or anchor come before it.
OLD_VALUE_TOKEN = lazy(r"(?<![\w.+-])(?:bf)?16(?![\w.+-])")


def may_spell_old_value(text: str) -> bool:
    """Whether a config's scalars can hold `16` or `bf16` (rules/acf011.NEW_SPELLING's keys),
    from its text: a plain or quoted token writes them as they are, only a double-quoted escape
    (`"\\x31\\x36"`) can hide them. A line whose first character after blanks is `#` holds
    none: it is a comment (`# precision: 16`, a setting turned off), or the text of a block
    or quoted scalar, which then holds the `#` too."""
    if "\\" in text:
        return True
    if OLD_VALUE_TOKEN.search(text) is None:
        return False
    lines = text.splitlines()
    return any(OLD_VALUE_TOKEN.search(line) for line in lines if line.lstrip(" \t")[:1] != "#")


def config_may_spell_old_value(data: bytes) -> bool:
    """`may_spell_old_value` of a YAML config's bytes, decoded as its reader decodes them
    (UTF-8, a BOM left out); one that does not decode counts as holding one."""
    try:
        text = data.removeprefix(codecs.BOM_UTF8).decode("utf-8")
    except UnicodeDecodeError:
        return True
    return may_spell_old_value(text)


def may_have_fused_optimizer(data: bytes) -> bool:
    """A call of a fusable optimizer (or `partial`, or an import alias of one) in a file that
    passes `fused` somewhere."""
    if not (
        FUSED_WORD in data
        and any(word in data for word in OPTIMIZER_WORDS)
        and FUSED_ARGUMENT.search(data) is not None
    ):
        return False
    from amp_clipfix.sources.call_texts import calls_any  # where a text passes the words

    return calls_any(data, OPTIMIZER_CALLS) or calls_any(data, CONFIG_DOCUMENT_CALLS)


def may_configure_trainer(data: bytes) -> bool:
    """A `Trainer(...)` call with arguments or a Trainer precision plugin (their arguments are
    checked later)."""
    if not any(word in data for word in TRAINER_WORDS):
        return False
    from amp_clipfix.sources.call_texts import calls_any

    return calls_any(data, TRAINER_CALLS, with_arguments=True) or (
        any(word in data for word in CONFIG_WORDS)
        and calls_any(data, CONFIG_DOCUMENT_CALLS, with_arguments=True)
    )


def may_clip(data: bytes) -> bool:
    """A `clip_gradients` call (a Fabric whose optimizer is built elsewhere, a Callback)."""
    return b"clip_gradients" in data


def may_configure_fused_optimizer(data: bytes) -> bool:
    """A YAML config with a `fused:` key (LightningCLI `init_args`, Hydra, a flat optimizer)."""
    return FUSED_WORD in data and CONFIG_FUSED.search(data) is not None


def may_configure_trainer_in_config(data: bytes) -> bool:
    return any(word in data for word in CONFIG_WORDS)


# JSON may write any character as `\uXXXX`; a printable ASCII character so written (a letter,
# a digit, `.`, `=`, a quote) is 0x20-0x7F.
ESCAPED_ASCII = lazy(rb"\\u00[2-7][0-9a-fA-F]")


def json_may_contain(data: bytes, word: bytes) -> bool:
    """Whether a JSON document's strings (a notebook's code) can contain the ASCII `word`: it is
    written as is (a `"` of it as `\"`), or some ASCII character is escaped (never by Jupyter,
    but valid JSON). Asked of the raw bytes, so a notebook that cannot matter is never decoded."""
    if word in data or (b'"' in word and word.replace(b'"', b'\\"') in data):
        return True
    return ESCAPED_ASCII.search(data) is not None


def python_text(data: bytes) -> bytes:
    """The text as Python reads its names: the bytes themselves (the same object) where it
    reads them as written (all ASCII, or NFKC-normalised already: `nfkc_stable`), else the text
    NFKC-normalised (`ｃfg` is `cfg`). What a text test reads before a file is parsed, so that a
    name written in letters Python folds to it is found as the parser finds it."""
    folded = folded_text(data)
    return data if folded is None else folded


@functools.lru_cache(maxsize=1 << 15)
def folded_text(data: bytes) -> bytes | None:
    """The text NFKC-normalised where that changes it, else None; once per text: every test of
    every scan asks it (NeMo: 79,000 times), and a text's hash is kept by its bytes. Let go with
    the project, as `nfkc_stable`'s memo is."""
    if data.isascii() or nfkc_stable(data):
        return None
    return nfkc_bytes(data)


def python_holds(data: bytes, words: tuple[bytes, ...]) -> bool:
    """Whether the text writes one of the ASCII `words` as Python reads it: in its bytes, or,
    in a text that is not all ASCII, once NFKC-normalised (`nfkc_holds`)."""
    return any(word in data for word in words) or nfkc_holds(data, words)


def nfkc_holds(data: bytes, words: Iterable[bytes]) -> bool:
    """Whether a text that is not all ASCII holds one of the ASCII `words` once NFKC-normalised,
    as Python reads its identifiers (`ｌightning` is `lightning`, `ﬁt` is `fit`); False for a
    text Python reads as written (`nfkc_stable`), whose bytes are its reading: the caller
    tests them."""
    if data.isascii() or nfkc_stable(data):
        return False
    text = nfkc_text(data)
    return any(word.decode("ascii") in text for word in words)


@functools.lru_cache(maxsize=4096)
def nfkc_stable(data: bytes) -> bool:
    """Whether a text (not all ASCII) is NFKC-normalised already: its names are read as they
    are written (most texts: an em dash, a `©` or CJK prose are). Several gates ask it of every
    file of a project (the rules' imports and names, a search's calls): the normalisation is
    checked once per text, and the memo let go with the project (project_resolve.end_analysis)."""
    import unicodedata

    return unicodedata.is_normalized("NFKC", data.decode("utf-8", "replace"))


@functools.lru_cache(maxsize=1024)
def nfkc_bytes(data: bytes) -> bytes:
    """`nfkc_text` encoded, once per text (python_text: every text test of the file reads it)."""
    return nfkc_text(data).encode("utf-8", "replace")


@functools.lru_cache(maxsize=1024)
def nfkc_text(data: bytes) -> str:
    """The text NFKC-normalised, once per text: the gates ask each text that NFKC changes
    (not `nfkc_stable`) for every name and import they look for, and normalising is the
    cost (diffusers: 48 such texts, 1.8 MB, normalised 152 times). Let go with the project,
    as `nfkc_stable`'s memo is."""
    import unicodedata

    return unicodedata.normalize("NFKC", data.decode("utf-8", "replace"))


def forget_texts() -> None:
    """Let go of the texts the memos above hold (a project's analysis is over)."""
    for memo in (folded_text, nfkc_stable, nfkc_bytes, nfkc_text):
        memo.cache_clear()
