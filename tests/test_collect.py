"""Sites read with the stdlib `ast` carry libcst's terms: character columns, spans without the
node's own parentheses, code with them, qualified names by scope, suppression comments."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from amp_clipfix.analysis.collect import collect_sites
from amp_clipfix.analysis.resolve import resolve_module
from amp_clipfix.models import ALL_CODES, Certainty, SiteKind, Span

PATH = Path("train.py")


def sites(code: str):
    return collect_sites(PATH, code).sites


def test_parenthesised_value_keeps_its_parentheses_in_the_text_not_the_span() -> None:
    code = 'import lightning as L\nt = L.Trainer(precision=( "16-mixed" ), gradient_clip_val=1)\n'
    precision, clip = sites(code)
    assert precision.detail == 'L.Trainer(precision=( "16-mixed" ))'
    assert precision.span == Span(2, 26, 2, 36)
    assert precision.value == "16-mixed"
    assert clip.detail == "L.Trainer(gradient_clip_val=1)"


def test_columns_count_characters_after_non_ascii_and_tabs() -> None:
    code = 'import torch\nnäme = "ü";\topt = torch.optim.AdamW(p, fused=True)\n'
    (fused,) = sites(code)
    assert fused.kind is SiteKind.FUSED_OPTIMIZER
    assert fused.span == Span(2, 45, 2, 49)  # characters, not the 47 bytes before `True`


def test_a_spread_argument_reads_as_libcst_printed_it() -> None:
    code = "import lightning as L\n\ndef f(kw):\n    L.Trainer(\n        **kw,\n    )\n"
    precision, clip = sites(code)
    assert precision.detail == "L.Trainer(**kw,\n) may set precision"
    assert precision.certainty is Certainty.RUNTIME
    assert clip.span == Span(5, 8, 5, 12)


def test_names_resolve_by_scope() -> None:
    code = (
        "import torch.optim as optim\n"
        "from .local import AdamW\n"  # a project class that happens to share the name
        "a = optim.AdamW(p, fused=True)\n"
        "b = AdamW(p, fused=True)\n"
        "def build(p):\n"
        "    from torch.optim import AdamW\n"
        "    return AdamW(p, fused=True)\n"
        "def later(p):\n"
        "    return SGD(p, fused=True)\n"
        "from torch.optim import SGD\n"
    )
    lines = [site.span.line for site in sites(code)]
    assert lines == [3, 7, 9]


def test_the_collector_writes_down_syntax_and_the_evaluator_decides_values(
    tmp_path: Path,
) -> None:
    """A name and a `**spread` are run-time sites for the collector (it follows no value); the
    project resolution follows them to their literals, reported at the literal."""
    code = (
        "import lightning as L\n"
        'PRECISION = "16-mixed"\n'
        "opts = dict(fused=True)\n"
        "L.Trainer(precision=PRECISION)\n"
        "def f(p):\n"
        "    import torch\n"
        "    return torch.optim.Adam(p, **opts)\n"
    )
    precision, fused = sites(code)
    assert (precision.span.line, precision.certainty) == (4, Certainty.RUNTIME)
    assert (fused.span.line, fused.detail) == (7, "torch.optim.Adam(**opts)")
    assert fused.certainty is Certainty.RUNTIME
    path = tmp_path / "train.py"
    path.write_text(code, encoding="utf-8")
    resolved = {site.kind: site for site in resolve_module(path, code).sites}
    precision = resolved[SiteKind.TRAINER_PRECISION]
    fused = resolved[SiteKind.FUSED_OPTIMIZER]
    assert (precision.span.line, precision.value) == (2, "16-mixed")
    assert precision.certainty is Certainty.KNOWN
    assert (fused.span.line, fused.value) == (3, "True")
    assert fused.detail == "torch.optim.Adam(**opts) with fused=True"
    assert fused.certainty is Certainty.KNOWN


def test_suppression_comments_but_not_lookalikes_in_strings() -> None:
    code = (
        "import torch\n"
        'a = torch.optim.AdamW(p, fused=True, name="# noqa: ACF001")\n'
        "b = torch.optim.AdamW(p, fused=True)  # noqa: ACF001\n"
        "c = torch.optim.AdamW(  # amp-clipfix: ignore\n"
        "    p, fused=True)\n"
    )
    a, b, c = sites(code)
    assert a.suppressed_codes is None
    assert b.suppressed_codes == frozenset({"ACF001"})
    assert c.suppressed_codes is None  # the comment is on another line than the value
    code = code.replace("    p, fused=True)", "    p, fused=True)  # noqa")
    assert sites(code)[2].suppressed_codes == frozenset({ALL_CODES})


def test_only_a_clip_alone_on_its_line_can_be_guarded() -> None:
    # A Fabric's clip is the project resolution's (resolve_entries.py): the module resolved alone.
    code = (
        "import torch\n"
        "OPT = torch.optim.AdamW([], fused=True)\n"
        "def train(fabric, model, opt):\n"
        "    fabric.clip_gradients(model, opt, max_norm=1.0)\n"
        "    fabric.clip_gradients(model, opt, max_norm=1.0); x = 1\n"
        "    if x: fabric.clip_gradients(model, opt, max_norm=1.0)\n"
        "    fabric.clip_gradients(model, make(), max_norm=1.0)\n"
    )
    clips = [s for s in resolve_module(PATH, code).sites if s.kind is SiteKind.FABRIC_CLIP]
    assert [site.fixable for site in clips] == [True, False, False, False]


def test_base_classes_keep_their_qualified_names() -> None:
    code = (
        "import lightning.pytorch as pl\n"
        "from typing import Generic\n"
        "class Base(pl.LightningModule): ...\n"
        "class Model(Base, Generic[T], mixin()): ...\n"
    )
    base, model = collect_sites(PATH, code).classes
    assert base.base_names == ("lightning.pytorch.LightningModule",)
    assert base.is_lightning_module
    assert model.base_names == ("Base", "typing.Generic", "mixin()")


def test_check_never_imports_libcst(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "train.py").write_text("import torch\nopt = torch.optim.AdamW(p, fused=True)\n")
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "amp_clipfix", "check", "--no-cache", "."],
        capture_output=True,
        cwd=tmp_path,
        check=False,
        timeout=120,
    )
    assert b"fused" in result.stdout + result.stderr or result.returncode in (0, 1)
    assert b"libcst" not in result.stderr
