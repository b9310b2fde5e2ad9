"""A literal's value is the constant Python reads (`analysis.values.Lit.value`), not its
text: `enabled=False` turns a GradScaler off, the string `"False"` (truthy) does not, and an
`error_if_nonfinite` / `fused` flag is off only for a literal `False` or `None`."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner
from evaluated import one_module

from amp_clipfix.analysis.values import Lit, Opaque, constant_of, is_off
from amp_clipfix.cli import main
from amp_clipfix.rules import RULES

SCALER = 'scaler = torch.amp.GradScaler("cuda")'


def check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enabled: str) -> list[str]:
    code = RULES["ACF004"].example_before.replace(SCALER, SCALER[:-1] + f", enabled={enabled})")
    (tmp_path / "train.py").write_text(code, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "."], catch_exceptions=False)
    return [line for line in result.output.splitlines() if ": ACF004 " in line]


def test_a_scaler_enabled_false_is_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert check(tmp_path, monkeypatch, "False") == []


def test_a_scaler_enabled_true_is_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (finding,) = check(tmp_path, monkeypatch, "True")
    assert finding.startswith("train.py:11:5: ACF004 ")
    assert not finding.endswith(", if the GradScaler is enabled")  # certain


def test_the_string_false_is_no_false(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`enabled="False"` is a truthy string: the scaler is not known to be off (a review)."""
    (finding,) = check(tmp_path, monkeypatch, '"False"')
    assert finding.startswith("train.py:11:5: ACF004 ")
    assert finding.endswith(", if the GradScaler is enabled")


@pytest.mark.parametrize(
    ("code", "constant", "off", "text"),
    [
        ("False", False, True, "False"),
        ("None", None, True, "None"),
        ("True", True, False, "True"),
        ("0", 0, False, "0"),
        ('"False"', "False", False, "False"),
        ("-1.5", -1.5, False, "-1.5"),
        ("-0", 0, False, "-0"),
        ('b"16"', b"16", False, "b'16'"),
    ],
)
def test_a_literal_holds_its_constant(code: str, constant: object, off: bool, text: str) -> None:
    node = ast.parse(code, mode="eval").body
    known, value = constant_of(node)
    lit = Lit(value, node, None)  # type: ignore[arg-type] - no summary needed
    assert known and lit.value == constant and type(lit.value) is type(constant)
    assert is_off(lit) is off
    assert lit.text == text  # shown as written, for display only


@pytest.mark.parametrize("code", ["x", '-"x"', "-True", "1j", "...", "f'{x}'"])
def test_other_expressions_are_no_literal(code: str) -> None:
    assert constant_of(ast.parse(code, mode="eval").body) == (False, None)


def test_a_value_decided_at_run_time_is_not_off() -> None:
    assert not is_off(Opaque(ast.Name("flag"), None))  # type: ignore[arg-type]


KEYS = """\
d = {}
d[1] = True
d["1"] = False
t = (True, False)
a = d["1"]
b = t[1]
c = t["1"]
"""


def test_keys_and_indexes_are_compared_as_constants(tmp_path: Path) -> None:
    """`d[1]` is no `d["1"]`, and a string indexes no tuple (both were the text `1`)."""
    evaluator, summary = one_module(tmp_path, KEYS)
    shown = {}
    for node in summary.tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else None
        if isinstance(target, ast.Name) and target.id in ("a", "b", "c"):
            value = node.value  # type: ignore[union-attr]
            values = evaluator.force(evaluator.ev(value, evaluator.ctx_of(summary, value)))
            shown[target.id] = [v.text if isinstance(v, Lit) else "?" for v in values]
    assert shown == {"a": ["False"], "b": ["False"], "c": ["?"]}
