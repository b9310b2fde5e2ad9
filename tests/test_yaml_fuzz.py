"""Fuzz YAML scalar styles for `fused` and `precision` (issue 17).

Whatever the style of the value (plain, quoted, tagged, anchored, aliased, block, flow), after
`apply` the document loads, every other value is unchanged, and the value the fix targets is what
the fix says (`fused` false, precision `bf16-mixed`) — or, where the value is shared through an
alias or is not the literal the fix rewrites, the file is left exactly as it was.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from amp_clipfix.cli import main


@dataclass(frozen=True)
class Style:
    """How a value is written: `value` is the text after `key:` (with `{v}` for the literal),
    `before` lines the document needs first (an anchor), and whether the fix must rewrite it."""

    name: str
    value: str
    must_fix: bool
    before: str = ""


FUSED_STYLES = [
    Style("plain", "{v}", True),
    Style("tagged", "!!bool {v}", True),
    Style("anchored", "&f {v}", True),
    Style("tagged-anchored", "!!bool &f {v}", True),
    Style("double-quoted", '"{v}"', False),  # a string, not a boolean: decided at run time
    Style("single-quoted", "'{v}'", False),
    Style("str-tagged", "!!str {v}", False),
    Style("aliased", "*f", False, "shared: &f {v}\n"),
    Style("block", ">-\n      {v}", False),
]
PRECISION_STYLES = [
    Style("plain", "{v}", True),
    Style("double-quoted", '"{v}"', True),
    Style("single-quoted", "'{v}'", True),
    Style("str-tagged", "!!str {v}", True),
    Style("anchored", "&p {v}", True),
    Style("tagged-anchored", "!!str &p {v}", True),
    Style("folded-block", ">-\n    {v}", True),
    Style("literal-block", "|-\n    {v}", True),
    Style("aliased", "*p", False, "shared: &p {v}\n"),
]
TRUE_WORDS = ["true", "True", "TRUE", "yes", "on"]
FALSE_VALUES = (False, "no", "off", "No", "Off", "NO", "OFF")
KEYS = st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).filter(
    lambda key: (
        key not in {"fused", "precision", "init_args", "class_path", "plugins", "y", "n"}
        and key not in {"yes", "no", "on", "off", "true", "false", "null"}
    )
)
OTHER_VALUES = st.one_of(
    st.integers(-1000, 1000).map(str),
    st.sampled_from(["0.001", "'text'", '"quoted # not a comment"', "null", "[1, 2]", "{a: 1}"]),
)


def document(fused: str, precision: str, before: str, flow: bool, extra: list) -> str:
    trainer_extra = "".join(f"  {key}: {value}\n" for key, value in extra)
    optimizer_extra = "".join(f"    {key}_o: {value}\n" for key, value in extra)
    if flow:
        optimizer = f"optimizer: {{class_path: torch.optim.AdamW, init_args: {{fused: {fused}}}}}\n"
    else:
        optimizer = (
            "optimizer:\n  class_path: torch.optim.AdamW\n  init_args:\n"
            f"    fused: {fused}\n{optimizer_extra}"
        )
    return (
        f"{before}trainer:\n  precision: {precision}\n  gradient_clip_val: 1.0\n{trainer_extra}"
        f"{optimizer}"
    )


def load(text: str) -> object:
    return YAML(typ="safe", pure=True).load(text)


def apply(text: str, strategy: str) -> tuple[int, str, str]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text("")
        (root / "config.yaml").write_text(text)
        cwd = os.getcwd()
        os.chdir(root)
        try:
            result = CliRunner().invoke(
                main,
                # ACF011 also reports `precision: 16`; this test is about the token edits
                [
                    "apply",
                    "--yes",
                    "--strategy",
                    strategy,
                    "--lightning-version",
                    "2.7.0",
                    "--ignore",
                    "ACF011",
                    ".",
                ],
            )
        finally:
            os.chdir(cwd)
        return result.exit_code, result.output, (root / "config.yaml").read_text()


FLOW_FUSED = {"plain", "tagged", "anchored", "tagged-anchored", "double-quoted", "single-quoted"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    target=st.sampled_from(["fused", "precision"]),
    fused_style=st.sampled_from(FUSED_STYLES),
    precision_style=st.sampled_from(PRECISION_STYLES),
    word=st.sampled_from(TRUE_WORDS),
    precision=st.sampled_from(["16-mixed", "16"]),
    flow=st.booleans(),
    extra=st.lists(st.tuples(KEYS, OTHER_VALUES), max_size=3, unique_by=lambda kv: kv[0]),
)
def test_scalar_styles(
    target: str,
    fused_style: Style,
    precision_style: Style,
    word: str,
    precision: str,
    flow: bool,
    extra: list,
) -> None:
    # Vary one value; the other is written plainly so that the finding is certain.
    if target == "fused":
        style, precision_text, before = fused_style, precision, fused_style.before
        fused_text = style.value.format(v=word)
        before = before.format(v=word)
        flow = flow and style.name in FLOW_FUSED
    else:
        style, fused_text = precision_style, "true"
        precision_text = style.value.format(v=precision)
        before = style.before.format(v=precision)
    text = document(fused_text, precision_text, before, flow, extra)
    original = load(text)

    code, output, fixed_text = apply(text, "unfuse" if target == "fused" else "bf16")

    assert "Traceback" not in output
    fixed = load(fixed_text)  # the document still loads
    if not style.must_fix:
        assert fixed_text == text, output
        return
    assert code == 0, output
    if target == "fused":
        assert fixed["optimizer"]["init_args"]["fused"] in FALSE_VALUES
        fixed["optimizer"]["init_args"]["fused"] = original["optimizer"]["init_args"]["fused"]
    else:
        assert fixed["trainer"]["precision"] == "bf16-mixed"
        fixed["trainer"]["precision"] = original["trainer"]["precision"]
    assert fixed == original  # every other value unchanged
