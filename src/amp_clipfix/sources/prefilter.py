"""Cheap tests that decide which files need parsing with libcst at all.

Every site has a tell-tale word in its file, and the few files that have the word are then read
with Python's own (fast) parser, which looks for the call the site needs under any import alias:
- a fused optimizer: `Adam` / `AdamW` / `SGD` / `Adagrad` / `partial` called with `fused=` or a
  `**spread` (configs: a `fused:` key);
- a Trainer's precision or clipping: a call to `Trainer` or a `MixedPrecision...` plugin
  (configs: `precision`, `gradient_clip_val`).
A finding always needs a fused optimizer, so a project in which no file builds one needs nothing
else parsed, and a Fabric finding lies within one file. The tests check that results with and
without this prefilter are identical.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

FUSED_WORD = b"fused"
FUSED_ARGUMENT = re.compile(rb"\bfused\s*=(?!=)|[\'\"]fused[\'\"]")
OPTIMIZER_WORDS = (b"Adam", b"SGD", b"Adagrad")
OPTIMIZER_CALLS = frozenset({"Adam", "AdamW", "SGD", "Adagrad", "partial"})
TRAINER_WORDS = (b"Trainer", b"MixedPrecision")
TRAINER_CALLS = frozenset(
    {"Trainer", "MixedPrecision", "MixedPrecisionPlugin", "NativeMixedPrecisionPlugin"}
)
CONFIG_FUSED = re.compile(rb"\bfused\s*:")
CONFIG_WORDS = (b"precision", b"gradient_clip_val")


def may_have_fused_optimizer(data: bytes) -> bool:
    if not (
        FUSED_WORD in data
        and any(word in data for word in OPTIMIZER_WORDS)
        and FUSED_ARGUMENT.search(data) is not None
    ):
        return False
    return calls_any(
        data, OPTIMIZER_CALLS, lambda call: any(k.arg in ("fused", None) for k in call.keywords)
    )


def may_configure_trainer(data: bytes) -> bool:
    """A `Trainer(...)` call or a Trainer precision plugin (their arguments are checked later)."""
    if not any(word in data for word in TRAINER_WORDS):
        return False
    return calls_any(data, TRAINER_CALLS, lambda call: bool(call.args or call.keywords))


def calls_any(data: bytes, wanted: frozenset[str], accept: Callable[[ast.Call], bool]) -> bool:
    """Whether the code calls one of `wanted` (or an import alias of it) in a way `accept`s."""
    try:
        tree = ast.parse(data)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True  # the real parser will report it
    aliases: set[str | None] = set()
    calls = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            aliases.update(
                alias.asname
                for alias in node.names
                if alias.asname and alias.name.rsplit(".", 1)[-1] in wanted
            )
        elif isinstance(node, ast.Call):
            calls.append(node)
    names = wanted | aliases
    return any(called_name(call.func) in names and accept(call) for call in calls)


def called_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def may_clip(data: bytes) -> bool:
    """A `clip_gradients` call (a Fabric whose optimizer is built elsewhere, a Callback)."""
    return b"clip_gradients" in data


def may_configure_fused_optimizer(data: bytes) -> bool:
    """A YAML config with a `fused:` key (LightningCLI `init_args`, Hydra, a flat optimizer)."""
    return FUSED_WORD in data and CONFIG_FUSED.search(data) is not None


def may_configure_trainer_in_config(data: bytes) -> bool:
    return any(word in data for word in CONFIG_WORDS)


CLASS_NAME = re.compile(rb"\bclass\s+(\w+)")


def defined_class_names(data: bytes) -> frozenset[str]:
    """Names of the classes a file may define (to find base classes of a LightningModule)."""
    return frozenset(name.decode("ascii", "replace") for name in CLASS_NAME.findall(data))
