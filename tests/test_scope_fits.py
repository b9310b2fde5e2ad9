"""A Trainer's fits read from its scope alone (`fits.scope_fits`, from `modules_of`) are the fits
of the module's `.fit` calls that sit in that scope, in the module's order, which a Trainer's
classes (and so a finding's sites) follow: a breadth-first walk of a subtree meets its nodes in
the order a walk of the whole module does."""

from __future__ import annotations

import ast
import random
from pathlib import Path

from amp_clipfix.analysis.fits import is_fit
from amp_clipfix.analysis.nodes import calls_in
from amp_clipfix.analysis.summary import summarise

PIECES = [
    "trainer.fit(A())",
    "trainer.fit(model=B(), ckpt_path=x.fit(C()))",
    "other.fit(D()).fit(E())",
    "f(trainer.fit(F()), g(h.fit(G())))",
    "x = [t.fit(H()) for t in trainers]",
    "lambda: trainer.fit(I())",
    "trainer.\\\n    fit(J())",
]


def program(rng: random.Random) -> str:
    lines = ["def main(trainer, other, trainers):"]
    for _ in range(rng.randint(2, 6)):
        piece = rng.choice(PIECES)
        if rng.random() < 0.4:
            lines += [f"    if {rng.choice('abc')}:", f"        {piece}"]
        elif rng.random() < 0.3:
            lines += ["    def inner():", f"        {piece}", "    inner()"]
        else:
            lines.append(f"    {piece}")
    lines += [rng.choice(PIECES)]
    return "\n".join(lines) + "\n"


def test_a_scopes_fits_are_the_modules_fits_inside_it_in_its_order(tmp_path: Path) -> None:
    rng = random.Random(35)
    for _ in range(300):
        text = program(rng)
        path = tmp_path / "train.py"
        path.write_text(text, encoding="utf-8")
        summary = summarise(tmp_path, path, text, data=text.encode())
        module_calls = summary.calls_kept(is_fit, "fit")
        for scope in [summary.tree, *ast.walk(summary.tree)]:
            if not isinstance(scope, (ast.Module, ast.FunctionDef, ast.Call, ast.If)):
                continue
            inside = {id(node) for node in calls_in(scope)}
            before = [call for call in module_calls if id(call) in inside]
            assert [c for c in calls_in(scope) if is_fit(c)] == before, text
