"""The text test of a Python config document's file (cli_config.config_documents): whether a
file may write `OmegaConf.create({...})` / `DictConfig({...})` with what a caller reads. A scan's
predicate (recording.PREDICATES): a warm run tests a changed file with it before the search's
module is imported, and this module imports no evaluator (cli_config.py imports the
resolution's)."""

from __future__ import annotations

from pathlib import Path

from amp_clipfix.analysis.recording import PREDICATES
from amp_clipfix.patterns import lazy
from amp_clipfix.sources.prefilter import CONFIG_DOCUMENT_CALLS, GAP, python_text, word_start

# The keys a document names its model class with (python_configs.model_targets).
TARGET_WORDS = (b"_target_", b"class_path")
MAY_WRITE_DOCUMENT = "may_write_document"  # the test of `config_documents`' files
# A document's `model` key: the string literal `"model"`, or `model=` (of a `dict(...)` call).
MODEL_KEY = lazy(word_start(b"model") + rb"(?![A-Za-z0-9_])(?:['\"]|" + GAP + rb"=(?!=))")
DICT_CALL = lazy(word_start(b"dict") + rb"(?![A-Za-z0-9_])" + GAP + rb"\(")
# `_target_` / `class_path` given a string literal, as a dict's key (maybe in brackets) or as
# `dict(...)`'s keyword (python_configs.target).
TARGET_STRING = lazy(
    rb"(?:_target_|class_path)(?![A-Za-z0-9_])['\"]*"
    + GAP
    + rb"(?:\)"
    + GAP
    + rb")*[:=]"
    + GAP
    + rb"(?:\("
    + GAP
    + rb")*[rRuUbBfF]{0,2}['\"]"
)
# A config document written in Python (analysis/python_configs.py), as its text calls it.
# Each name searched for on its own, from its word (`word_start`: `re` skips to it).
DOCUMENT_CALLS = tuple(
    lazy(word_start(name) + rb"\s*\(\s*(?:\{|dict\s*\()")
    for name in sorted(call.encode("ascii") for call in CONFIG_DOCUMENT_CALLS)
)


def writes_document_call(data: bytes) -> bool:
    """Whether the text calls `create` / `DictConfig` with a mapping written in the call, as
    the word-bounded pattern of both names finds it."""
    return any(pattern.search(data) is not None for pattern in DOCUMENT_CALLS)


def may_write_document(path: Path, data: bytes, words: tuple[bytes, ...]) -> bool:
    """Whether a project file's text may give `config_documents` a document: it writes a call
    of `create` / `DictConfig` with a mapping, and `may_give`. A scan's test (recording.py), so
    an edit asks the search again only where a file's answer changes, not for every file."""
    from amp_clipfix.paths import is_library

    if not (b"create" in data or b"DictConfig" in data) or is_library(path):
        return False  # the search needs one of them: most files are ruled out at once
    return may_give(data, words) and writes_document_call(data)


PREDICATES[MAY_WRITE_DOCUMENT] = may_write_document


def may_give(data: bytes, words: tuple[bytes, ...]) -> bool:
    """Whether the text may write a document `gives` keeps: one of the trainer keys among
    `words` (its word: a document's keys are string literals), or a model named, which takes a
    `model` key (a string literal, or `model=` in a `dict(...)` call) and a `_target_` or
    `class_path` whose value is a string literal (`"pkg.Model"`, `("pkg.Model")`), each spelled
    as the words are (a key written in escapes or in pieces is not read). Names are tested as
    Python reads them (NFKC)."""
    if any(word in data for word in words if word not in TARGET_WORDS):
        return True
    if not any(word in data for word in words if word in TARGET_WORDS):
        return False
    text = python_text(data)
    if TARGET_STRING.search(text) is None:
        return False
    keys = [match.group() for match in MODEL_KEY.finditer(text)]
    return any(key.endswith((b"'", b'"')) for key in keys) or bool(keys and DICT_CALL.search(text))
