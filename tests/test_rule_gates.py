"""A run imports a rule's module, and the analysis its search reads, only when the rule's gate
lets it search the project (rules/gates.py: each rule's `words`, `needs`, `requires` and
`imports`, written from the rule modules by scripts/rule_gates.py). What a run imported is read
from `python -X importtime`, as in test_startup.py.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from test_startup import SRC, imported_modules, project

from amp_clipfix import rules
from amp_clipfix.rules.acf011 import may_spell_old_value
from amp_clipfix.rules.gates import GATES

ROOT = SRC.parent
RULE_MODULES = {f"amp_clipfix.rules.{name}" for name in rules._rule_modules()}
# The evaluator and the project resolution: what a search that follows values imports.
EVALUATOR = {
    "amp_clipfix.analysis.evaluate",
    "amp_clipfix.analysis.callers",
    "amp_clipfix.analysis.containers",
    "amp_clipfix.analysis.resolve",
    "amp_clipfix.analysis.resolve_optimizers",
}
# A site's suppressions (the Python site collector and its scopes), the evaluator's frame and
# the contexts a fit is read in.
SITES = {
    "amp_clipfix.analysis.collect",
    "amp_clipfix.analysis.scopes",
    "amp_clipfix.analysis.frame",
    "amp_clipfix.analysis.dispatch",
}
DRAWING = ("libcst", "rich", "ruamel")
# A Hydra trainer config whose only legacy precision is a comment (as lightning-hydra-template's
# configs/trainer/default.yaml): ACF011 reads it, nothing else searches, nothing is found.
COMMENTED = "trainer:\n  max_epochs: 3\n  # mixed precision\n  # precision: 16\n"
# A module that may call a Trainer with an old spelling (its text names both): ACF011's gate lets
# its search run, and the search finds no Trainer call in it.
DEFAULTS = 'DEFAULTS = {"precision": 16}  # the Trainer is given these\n'
SCALED = """\
import torch

scaler = torch.amp.GradScaler("cuda")


def step(model, loss, optimizer):
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
"""


def test_the_gates_are_what_the_rule_modules_say() -> None:
    spec = importlib.util.spec_from_file_location("rule_gates", ROOT / "scripts" / "rule_gates.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert (SRC / "amp_clipfix" / "rules" / "gates.py").read_text() == script.gates_text(), (
        "run python scripts/rule_gates.py"
    )
    assert list(GATES) == [name.upper() for name in rules._rule_modules()]
    for code, gate in GATES.items():
        rule = rules.RULES[code]
        fields = ("checks", "words", "needs", "requires", "imports", "alias", "needed_words")
        assert [getattr(gate, f) for f in fields] == [getattr(rule, f) for f in fields], code


def registry_modules(statements: str) -> list[str]:
    """The rule modules imported after `statements` run in a fresh interpreter."""
    code = f"import sys\nfrom amp_clipfix.rules import RULES\n{statements}\n" + (
        "print(sorted(m for m in sys.modules if m.startswith('amp_clipfix.rules.acf')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return eval(done.stdout)  # noqa: S307 - a list of names printed by the line above


def test_the_registry_imports_a_rule_module_when_its_rule_is_asked_for() -> None:
    listed = "assert len(RULES) == len(list(RULES)) == 13 and 'ACF004' in RULES"
    assert registry_modules(listed) == []
    assert registry_modules("[RULES.gate(code) for code in RULES]") == []
    assert registry_modules("RULES['ACF012']; RULES.get('ACF900')") == ["amp_clipfix.rules.acf012"]
    assert registry_modules("list(RULES.values())") == sorted(RULE_MODULES)


def test_a_project_only_one_rule_searches_imports_that_rule_and_no_evaluator(
    tmp_path: Path,
) -> None:
    root = project(tmp_path)
    (root / "configs").mkdir()
    (root / "configs" / "trainer.yaml").write_text(COMMENTED)
    (root / "defaults.py").write_text(DEFAULTS)
    modules, done = imported_modules(root, "check", "--no-cache", "--format", "json", ".")
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"findings": []' in done.stdout
    assert "amp_clipfix.rules.acf011" in modules  # its search read the module's text
    assert "yaml" not in modules  # its only `16` is in a comment: it is not composed
    # the rules of the collected sites, and ACF011: no other rule's search, no evaluator
    assert RULE_MODULES & modules == {f"amp_clipfix.rules.acf00{n}" for n in (1, 2)} | {
        "amp_clipfix.rules.acf011"
    }
    assert (EVALUATOR | SITES) & modules == set()
    assert {name for name in modules if name.startswith(DRAWING)} == set()


def test_a_project_a_searching_rule_asks_imports_its_search_and_the_evaluator(
    tmp_path: Path,
) -> None:
    """The same project with a clip of scaled gradients: ACF004's gate passes (a GradScaler is
    made, a file clips), so the test above could see what it says is left out."""
    root = project(tmp_path)
    (root / "scaled.py").write_text(SCALED)
    modules, done = imported_modules(root, "check", "--no-cache", "--format", "json", ".")
    assert done.returncode == 1, done.stderr[-2000:]
    assert '"code": "ACF004"' in done.stdout
    searched = {"amp_clipfix.rules.acf004", *EVALUATOR, *SITES} - {"amp_clipfix.analysis.dispatch"}
    assert searched <= modules  # a finding has a site; no `.fit(`: no fit is read
    assert "amp_clipfix.rules.acf006" not in modules  # no Fabric: its gate holds it back


def test_a_config_is_composed_for_acf011_unless_its_old_values_are_on_comment_lines(
    tmp_path: Path,
) -> None:
    assert not may_spell_old_value(COMMENTED)
    assert not may_spell_old_value("trainer:\n\t# precision: bf16\n  precision: 16-mixed\n")
    for text in (
        "trainer:\n  precision: 16\n",
        "trainer:\n  precision: 32  # was 16\n",  # a comment after a value: composed
        "trainer:\n  precision: '16'\r  # 16\n",
        "trainer: {precision: bf16}\n",
        'trainer:\n  precision: "\\x31\\x36"\n',  # an escape may hide it
    ):
        assert may_spell_old_value(text), text
    root = project(tmp_path)
    (root / "configs").mkdir()
    (root / "configs" / "trainer.yaml").write_text(
        COMMENTED.replace("  # precision", "  precision")
    )
    modules, done = imported_modules(root, "check", "--no-cache", "--format", "json", ".")
    assert done.returncode == 1, done.stderr[-2000:]
    assert '"code": "ACF011"' in done.stdout
    assert "yaml" in modules
