"""A function's return values asked once per question, not once per calling context (issue 35,
branch `memo`): `evaluate.returns` is memoised by the function, its receiver, the depth and the
values of the parameters it reads. A wrapper that calls the next one in several branches, each
passing its parameters on, made every path through the wrappers a context of its own, so the
innermost factory was evaluated width**levels times (mmengine's `Registry.get`, 15,000 times,
spent the whole budget of 400,000 evaluations; fairseq's wrapper datasets 17,000 times).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_hostile_budget import findings_of


def fanout(levels: int, width: int) -> str:
    """`wrap1` ... `wrap{levels}`: each returns the one below it from `width` branches, passing
    `model` and `fused` on; `make` at the bottom builds `AdamW(fused=fused)`; `main` calls the
    top one with `fused=True` and clips through a 16-mixed Fabric."""
    lines = [
        "import lightning as L",
        "import torch",
        "",
        "def make(model, fused):",
        "    return torch.optim.AdamW(model.parameters(), fused=fused)",
        "",
    ]
    below = "make"
    for level in range(1, levels + 1):
        lines.append(f"def wrap{level}(model, fused):")
        for branch in range(width - 1):
            lines += [f"    if model.size == {branch}:", f"        return {below}(model, fused)"]
        lines += [f"    return {below}(model, fused)", ""]
        below = f"wrap{level}"
    lines += [
        "def main(model):",
        '    fabric = L.Fabric(precision="16-mixed")',
        f"    optimizer = {below}(model, True)",
        "    fabric.clip_gradients(model, optimizer, max_norm=1.0)",
        "",
    ]
    return "\n".join(lines)


def test_wrappers_in_branches_cost_about_linear_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Five levels of three branches find what two levels find (the fused optimizer the
    Fabric clips) for a few times the evaluations (before: 202 and 5,746, 28 times: each
    path through the wrappers evaluated `make` anew)."""
    small, small_found = findings_of(tmp_path / "a", fanout(2, 3), monkeypatch)
    large, large_found = findings_of(tmp_path / "b", fanout(5, 3), monkeypatch)
    assert small_found == large_found == [("ACF001", "high"), ("ACF007", "high")]
    assert large <= 6 * small


def test_a_wrapper_passed_other_values_is_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memo's key holds the values passed: the same wrapper called with `fused=False`
    elsewhere is a question of its own (the optimizer `make` builds may be fused or not: a
    review finding); called with `False` only, no ACF001 at all."""
    source = fanout(3, 2).replace(
        "def main(model):",
        "def other(model):\n    return wrap3(model, False)\n\ndef main(model):",
    )
    _, found = findings_of(tmp_path / "a", source, monkeypatch)
    assert found == [("ACF001", "review"), ("ACF007", "high")]
    only_false = source.replace("wrap3(model, True)", "wrap3(model, False)")
    _, found = findings_of(tmp_path / "b", only_false, monkeypatch)
    assert found == [("ACF007", "high")]


def test_the_names_a_function_reads_are_those_ast_walk_finds() -> None:
    """returns.names_in (read_params, reached_params) walks without the load/store contexts:
    the same names as `ast.walk`, on every Python source of the package and its fixtures,
    nested functions, lambdas, comprehensions and patterns included."""
    import ast

    from amp_clipfix.analysis.returns import names_in

    root = Path(__file__).resolve().parents[1]
    sources = [*(root / "src").rglob("*.py"), *(root / "fixtures").rglob("*.py")]
    assert len(sources) > 100
    for path in sources:
        try:
            tree = ast.parse(path.read_bytes())
        except (SyntaxError, ValueError):
            continue  # a fixture that is not Python on purpose
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                body = node.body if isinstance(node.body, list) else [node.body]
                walked = {n.id for part in body for n in ast.walk(part) if isinstance(n, ast.Name)}
                assert names_in(*body) == walked, (path, node.lineno)
