"""Library knowledge lives in one registry (analysis/names.py), by qualified name.

The analysis, the rules and the fixes compare the objects they meet against library qualified
names (`lightning.fabric.Fabric`, `torch.optim.AdamW`, `functools.partial`, ...). Each of those
names is an entry of `names.LIBRARY`; a name written anywhere else is a second, drifting copy
of a library fact, and this test fails on it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.names import Kind, Shards, Side

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "amp_clipfix"
SEARCHED = ("analysis", "rules", "fixes")
REGISTRY = PACKAGE / "analysis" / "names.py"
# The roots of the libraries the analysis models.
ROOTS = (
    "torch",
    "lightning",
    "pytorch_lightning",
    "lightning_fabric",
    "functools",
    "builtins",
    "dataclasses",
    "argparse",
    "os",
    "hydra",
    "omegaconf",
    "jsonargparse",
)
# A whole string that is a dotted name under one of them (`"torch.optim.AdamW"`), a prefix
# (`"lightning.pytorch."`, also the text of an f-string before a placeholder) or a pattern.
QUALIFIED = re.compile(rf"^(?:{'|'.join(ROOTS)})(?:\.[A-Za-z_]\w*)*\.(?:[A-Za-z_]\w*|\*)?$")
# Strings that are no library fact, each with its reason.
ALLOWED = {
    # libcst names a builtin `builtins.print`: the scope analysis makes names, it compares none
    ("analysis/scopes.py", "builtins."),
}


def library_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = [
        (node.lineno, node.col_offset, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and QUALIFIED.match(node.value)
    ]
    return [(line, text) for line, _, text in sorted(found)]


def test_no_library_qualified_name_is_written_outside_the_registry() -> None:
    found = []
    for folder in SEARCHED:
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            if path == REGISTRY:
                continue
            relative = path.relative_to(PACKAGE).as_posix()
            for line, text in library_literals(path):
                if (relative, text) not in ALLOWED:
                    found.append(f"{relative}:{line}: {text!r}")
    assert found == []


def test_the_check_sees_a_qualified_name_where_one_is_written(tmp_path: Path) -> None:
    """The test above can fail: each way of writing a library name is caught."""
    module = tmp_path / "rule.py"
    module.write_text(
        "FSDP = {'lightning.pytorch.strategies.FSDPStrategy'}\n"
        "PACKAGES = ('lightning.fabric.', 'pytorch_lightning.')\n"
        "def optimizer(name):\n"
        "    return f'torch.optim.{name}' == 'functools.partial'\n"
        "MESSAGE = 'use torch.amp.GradScaler instead'  # display text: no name of its own\n",
        encoding="utf-8",
    )
    assert [text for _, text in library_literals(module)] == [
        "lightning.pytorch.strategies.FSDPStrategy",
        "lightning.fabric.",
        "pytorch_lightning.",
        "torch.optim.",
        "functools.partial",
    ]


def test_the_views_other_modules_read_are_the_registry() -> None:
    """The sets the analysis compares against are the table's entries of one kind."""
    fabrics = {name for name, entry in names.LIBRARY.items() if entry.kind is Kind.FABRIC}
    assert fabrics == names.FABRIC_CLASSES
    assert "lightning.Fabric" in names.FABRIC_CLASSES
    assert "pytorch_lightning.Trainer" in names.TRAINER_CLASSES
    assert names.kind_of("torch.optim.adamw.AdamW") is Kind.OPTIMIZER
    assert names.kind_of("functools.partial") is Kind.PARTIAL
    assert names.kind_of("mypkg.Trainer") is None
    assert names.plugin_scaler_index("lightning.fabric.plugins.FSDPPrecision") == ("fabric", 1)
    assert names.plugin_scaler_index("pytorch_lightning.plugins.MixedPrecisionPlugin") == (
        "trainer",
        2,
    )
    assert names.strategy_shards("lightning.fabric.strategies.DeepSpeedStrategy") is (
        Shards.DEEPSPEED
    )
    assert "lightning.pytorch.strategies.fsdp.FSDPStrategy" in names.strategy_classes(
        Side.TRAINER, Shards.FSDP
    )
    assert names.TORCH_CLIPS["torch.nn.utils.clip_grad_norm_"] == "max_norm"


def test_the_starters_say_where_their_callable_and_its_arguments_are() -> None:
    """`Thread(group, target, name, args, kwargs)` and `Process(...)`: passed.py reads the
    positions from the entry, not from an order written of its own."""
    for starter in ("threading.Thread", "multiprocessing.Process"):
        entry = names.entry_of(starter)
        assert entry is not None and entry.kind is Kind.CALLABLE_STARTER
        assert entry.starts is not None
        assert [(p.name, p.position) for p in entry.starts] == [
            ("target", 1),
            ("args", 3),
            ("kwargs", 4),
        ]
