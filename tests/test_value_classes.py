"""The evaluator's value classes (analysis/values.py) are written by hand, not made by
`@dataclass`: a dataclass compiles its methods from source at every import of its module, and
`dataclasses` imports `inspect` (with `dis`, `tokenize`, ...). A run whose project asks the
rules a question imports the values without `dataclasses`; each class is what `@dataclass(eq=
False, slots=True)` made of it: slotted, compared and hashed by identity, constructed by
position or keyword with the same defaults (a new dict per `DictV`), shown as a dataclass."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from test_startup import SRC, imported_modules, project
from test_startup_lazy import searched_project

from amp_clipfix.analysis import values
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.models import EntryId

HEAVY = {"dataclasses", "inspect", "dis"}


def test_importing_the_values_imports_no_dataclasses() -> None:
    code = (
        "import sys, amp_clipfix.analysis.values; print(sorted(set(sys.argv[1:]) & {*sys.modules}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *sorted(HEAVY)],
        env={"PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "[]"


def test_a_searched_project_evaluates_without_dataclasses(tmp_path: Path) -> None:
    modules, done = searched_project(tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "amp_clipfix.analysis.values" in modules
    assert HEAVY & modules == set()


EVALUATOR = {
    f"amp_clipfix.{name}"
    for name in (
        "analysis.frame",
        "analysis.scopes",
        "analysis.passon",
        "analysis.sequences",
        "analysis.namespaces",
        "analysis.dataclass_calls",
        "analysis.contained",
        "output.diff",
    )
}


def test_a_finding_with_its_edits_imports_no_dataclasses(tmp_path: Path) -> None:
    """The evaluator's other classes are written by hand too, and the ones compared by value
    (contained.Kept, diff's lines and hunks) are records: a run that evaluates and reports a
    fix's edits (no libcst: a text fix) imports no dataclasses."""
    root = project(tmp_path)
    (root / "clip.py").write_text(
        "import torch\n\n\ndef clip(model):\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    )
    (root / "amp.py").write_text(
        "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"
        "with torch.cuda.amp.autocast():\n    pass\n"
    )
    modules, done = imported_modules(root, "check", "--no-cache", "--format", "json", ".")
    assert done.returncode == 1, done.stderr[-2000:]
    assert '"code": "ACF012"' in done.stdout and '"edits"' in done.stdout
    assert modules >= EVALUATOR
    assert HEAVY & modules == set()


def made() -> list[values.Plain]:
    """One value of each class, by position and by keyword."""
    tree = ast.parse("def f(): pass\nclass C: pass\nfun(lambda: 0)\n")
    function, klass, expression = tree.body
    assert isinstance(function, ast.FunctionDef) and isinstance(klass, ast.ClassDef)
    assert isinstance(expression, ast.Expr) and isinstance(expression.value, ast.Call)
    call = expression.value
    lambda_ = call.args[0]
    assert isinstance(lambda_, ast.Lambda)
    summary = Summary(Path("m.py"), "m", False, tree, [])
    cls = values.ClsV(klass, summary)
    entry = EntryId(Path("m.py"), 3, 0)
    return [
        values.Lit(16, function, summary),
        values.Opaque(call, summary),
        values.Absent(node=call, summary=summary),
        values.DictV(),
        values.DictV({"a": []}, closed=False),
        values.TupleV([[]]),
        values.Ext("torch.optim.AdamW"),
        values.ModuleV(summary),
        values.Fn(function, summary),
        values.Fn(function, summary, klass, True, cls),
        cls,
        values.SelfV(cls),
        values.Inst(cls, call=call),
        values.Part([], {}, call, summary, None),
        values.LambdaV(lambda_, None),
        values.Opt(call, summary, []),
        values.SchedulerV(call, summary),
        values.TrainerV(entry),
        values.FabricV(None, call, summary),
    ]


@pytest.mark.parametrize("index", range(19))
def test_a_value_is_slotted_and_compared_by_identity(index: int) -> None:
    value, again = made()[index], made()[index]
    assert not hasattr(value, "__dict__")
    with pytest.raises(AttributeError):
        value.not_a_field = 1  # type: ignore[attr-defined]
    assert value == value and value != again
    assert hash(value) == object.__hash__(value)
    assert {value, again} == {again, value} and len({value, again}) == 2


def test_defaults_are_the_dataclass_ones() -> None:
    first, second = values.DictV(), values.DictV()
    assert first.entries == {} and first.entries is not second.entries and first.closed
    tree = ast.parse("def f(): pass")
    function = tree.body[0]
    assert isinstance(function, ast.FunctionDef)
    fn = values.Fn(function, Summary(Path("m.py"), "m", False, tree, []))
    assert (fn.cls, fn.bound, fn.receiver) == (None, False, None)
    cls = values.ClsV(ast.ClassDef(name="C"), fn.summary)
    assert values.SelfV(cls).is_super is False
    assert (values.Inst(cls).call, values.Inst(cls).ctx) == (None, None)
    trainer = values.TrainerV(EntryId(Path("m.py"), 1, 0))
    assert (trainer.call, trainer.summary) == (None, None)
    assert (values.FabricV(None).call, values.FabricV(None).summary) == (None, None)


def test_an_absent_key_is_opaque_and_adds_no_slot() -> None:
    """returns.py walks a value's own `__slots__`: a dataclass subclass declared none."""
    assert issubclass(values.Absent, values.Opaque)
    assert values.Absent.__slots__ == ()
    assert values.Opaque.__slots__ == ("node", "summary")


def test_a_value_shows_as_a_dataclass_does() -> None:
    assert repr(values.Ext("torch.optim.SGD")) == "Ext(qname='torch.optim.SGD')"
    shown = repr(values.DictV({"lr": []}, closed=False))
    assert shown == "DictV(entries={'lr': []}, closed=False)"
    node = ast.Constant(1)
    absent = repr(values.Absent(node, None))  # type: ignore[arg-type]
    assert absent == f"Absent(node={node!r}, summary=None)"
