"""A cheap byte-level test that decides which files need parsing at all.

Every site has a tell-tale word in its file: a fused optimizer `fused=` or a `"fused"` key plus
the optimizer's class name (`Adam`, `AdamW`, `SGD`, `Adagrad`, however it is imported), the
others a Lightning name (`Fabric`, `Trainer`, `...Precision`, `LightningModule`) or a clip
keyword. A finding always needs a fused optimizer, so a project in which no file has
a fused site needs nothing else parsed. The tests check that results with and without this
prefilter are identical.
"""

from __future__ import annotations

import ast
import re

FUSED_WORD = b"fused"
FUSED_ARGUMENT = re.compile(rb"\bfused\s*=(?!=)|[\'\"]fused[\'\"]")
OPTIMIZER_WORDS = (b"Adam", b"SGD", b"Adagrad")
OPTIMIZER_NAMES = ("Adam", "AdamW", "SGD", "Adagrad", "partial")
SITE_WORDS = (
    FUSED_WORD,
    b"clip_gradients",
    b"gradient_clip_val",
    b"Trainer",
    b"Fabric",
    b"Precision",
    b"LightningModule",
)


def may_have_fused_optimizer(data: bytes) -> bool:
    """Bytes first; then, for the few files that pass, Python's own (fast) parser looks for a
    call to an optimizer class or `partial` under any import alias with a `fused=` keyword or a
    `**spread` in a file that spells a `fused` key."""
    if not (
        FUSED_WORD in data
        and any(word in data for word in OPTIMIZER_WORDS)
        and FUSED_ARGUMENT.search(data) is not None
    ):
        return False
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True  # let the real parser report it
    names = set(OPTIMIZER_NAMES)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(alias.asname for alias in node.names if alias.asname)
    return any(
        isinstance(node, ast.Call)
        and called_name(node.func) in names
        and any(keyword.arg in ("fused", None) for keyword in node.keywords)
        for node in ast.walk(tree)
    )


def called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


CONFIG_FUSED = re.compile(rb"\bfused\s*:")
CONFIG_WORDS = (b"fused", b"precision", b"gradient_clip_val")


def may_configure_fused_optimizer(data: bytes) -> bool:
    """A YAML config with a `fused:` key (LightningCLI `init_args`, Hydra, a flat optimizer)."""
    return FUSED_WORD in data and CONFIG_FUSED.search(data) is not None


def may_configure_sites(data: bytes) -> bool:
    return any(word in data for word in CONFIG_WORDS)


def may_have_sites(data: bytes) -> bool:
    return any(word in data for word in SITE_WORDS)


def may_define_class(data: bytes, name: str) -> bool:
    """Whether the file may define class `name` (a base class of a LightningModule)."""
    return re.search(rb"\bclass\s+" + re.escape(name.encode()) + rb"\b", data) is not None
