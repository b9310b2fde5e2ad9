"""Which Lightning line a project's code can run on, read from the code itself.

Asked only where no pin decides (pins.resolve_target). Each fact below is something one release
line has and the other refuses or lacks, checked against the releases installed for the runtime
tests (pytorch-lightning 1.9.5, lightning 2.0.9.post0, 2.4.0, 2.6.6; their site-packages):

1.x only (the code cannot run on 2.x):
- a hook with an `optimizer_idx` parameter (`training_step`, `optimizer_step`,
  `configure_gradient_clipping`, `backward`, `optimizer_zero_grad`, `toggle_optimizer`): 1.9.5's
  `pytorch_lightning/core/module.py` declares it on each; 2.0.9.post0 has `optimizer_idx` in no
  Python file of `lightning/` (a hook that needs it is called without it), and 2.4.0 / 2.6.6
  refuse it (`lightning/pytorch/core/optimizer.py`: "Training with multiple optimizers is only
  supported with manual optimization. Remove the `optimizer_idx` argument").
- a `training_epoch_end` / `validation_epoch_end` / `test_epoch_end` method: 2.0.9.post0, 2.4.0
  and 2.6.6 raise "Support for `training_epoch_end` has been removed in v2.0.0"
  (`lightning/pytorch/trainer/configuration_validator.py`).
- `LoggerCollection`: in no 2.x release; 1.9.5 keeps it only in
  `pytorch_lightning/_graveyard/loggers.py` ("deprecated in v1.6 and removed as of v1.8").
- `pytorch_lightning.lite` / `LightningLite`: 1.9.5 has `pytorch_lightning/lite/`; 2.0.9.post0,
  2.4.0 and 2.6.6 have no `lite` package under `lightning/pytorch` or `pytorch_lightning`.

2.x only (the code cannot run on 1.x):
- `precision="16-mixed"`, `"bf16-mixed"`, `"32-true"`, ... written in a call: 1.9.5 accepts only
  `"64", "32", "16", "bf16"` and raises "Precision ... is invalid"
  (`pytorch_lightning/trainer/connectors/accelerator_connector.py`, `_PRECISION_INPUT_STR`;
  `lightning_fabric/plugins/precision/precision.py` likewise).

Not evidence: `import lightning`, `lightning.fabric`, `lightning_fabric` (the `lightning` 1.8/1.9
packages and pytorch-lightning 1.9.5's own `lightning_fabric` have them too).

Files are read as bytes (a pattern test first) and parsed with `ast` only where one matches.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix import observed
from amp_clipfix.paths import display_path
from amp_clipfix.patterns import lazy
from amp_clipfix.records import record

if TYPE_CHECKING:  # parsed only where a pattern matched
    import ast

OPTIMIZER_IDX_HOOKS = frozenset(
    {
        "training_step",
        "optimizer_step",
        "configure_gradient_clipping",
        "backward",
        "optimizer_zero_grad",
        "toggle_optimizer",
    }
)
REMOVED_EPOCH_END = frozenset({"training_epoch_end", "validation_epoch_end", "test_epoch_end"})
ONLY_1X_NAMES = frozenset({"LoggerCollection", "LightningLite"})
ONLY_2X_PRECISIONS = frozenset(
    {"16-mixed", "bf16-mixed", "32-true", "64-true", "16-true", "bf16-true"}
)
# What a file must hold for `ast` to be asked (a parse costs ~10 ms a large file; the
# patterns keep Lightning's own sources, which mention these names in strings, cheap).
MAY_HOLD = lazy(
    rb"def\s+(?:training_step|optimizer_step|configure_gradient_clipping|backward"
    rb"|optimizer_zero_grad|toggle_optimizer)\s*\([^)]*\boptimizer_idx\b"
    rb"|def\s+(?:training|validation|test)_epoch_end\s*\("
    rb"|\bLoggerCollection\b|\bLightningLite\b|pytorch_lightning\.lite"
    rb"|precision\s*=\s*[\"'](?:16|bf16|32|64)-(?:mixed|true)[\"']"
)
LIGHTNING_WORDS = (b"lightning",)  # a file that names no Lightning package says nothing


@record(frozen=True)
class Evidence:
    """One fact of the code that one line only runs: `is_2x` says which."""

    is_2x: bool
    what: str  # `optimizer_idx` in training_step
    path: Path
    line: int

    def describe(self) -> str:
        """`optimizer_idx in training_step at src/x.py:12`."""
        return f"{self.what} at {display_path(self.path)}:{self.line}"


def code_evidence(files: Iterable[Path], root: Path) -> tuple[Evidence | None, Evidence | None]:
    """The first 1.x-only and the first 2.x-only fact of the project's Python files (in path
    order); files that cannot be read or parsed say nothing."""
    only_1x: Evidence | None = None
    only_2x: Evidence | None = None
    for path in sorted(files):
        if path.suffix != ".py" or (only_1x is not None and only_2x is not None):
            continue
        try:
            data = observed.read_inside(path, root)
        except OSError:
            continue
        if not any(word in data for word in LIGHTNING_WORDS):
            continue
        if MAY_HOLD.search(data) is None:
            continue
        import ast

        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        for found in facts_of(tree, path):
            if found.is_2x and only_2x is None:
                only_2x = found
            elif not found.is_2x and only_1x is None:
                only_1x = found
    return only_1x, only_2x


def facts_of(tree: ast.AST, path: Path) -> Iterable[Evidence]:
    import ast

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            names = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
            names += [a.arg for a in arguments.kwonlyargs]
            if node.name in OPTIMIZER_IDX_HOOKS and "optimizer_idx" in names:
                yield Evidence(False, f"`optimizer_idx` in {node.name}", path, node.lineno)
            elif node.name in REMOVED_EPOCH_END and names[:1] == ["self"]:
                yield Evidence(False, f"`{node.name}`", path, node.lineno)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            imported = [alias.name for alias in node.names]
            if module.startswith("pytorch_lightning.lite") or any(
                name.startswith("pytorch_lightning.lite") for name in imported
            ):
                yield Evidence(False, "`pytorch_lightning.lite`", path, node.lineno)
            elif found := ONLY_1X_NAMES.intersection(imported):
                yield Evidence(False, f"`{sorted(found)[0]}`", path, node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr in ONLY_1X_NAMES:
            yield Evidence(False, f"`{node.attr}`", path, node.lineno)
        elif isinstance(node, ast.keyword) and node.arg == "precision":
            value = node.value
            if isinstance(value, ast.Constant) and value.value in ONLY_2X_PRECISIONS:
                yield Evidence(True, f'`precision="{value.value}"`', path, value.lineno)
