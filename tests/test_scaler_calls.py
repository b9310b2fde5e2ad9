"""A GradScaler class written only where it is called is made only by calls spelled with its
name (analysis/scaler_calls.py): ACF004's scaler question leaves every other callee
unevaluated there, with the same findings as evaluating each; wherever the project hands the
class on (a name, a default, a renamed import, an argument, a return, a string), every callee
is asked."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_clip_tail import report, write
from test_incremental import computed, spied_queries

from amp_clipfix.analysis import evaluate, scaler_calls
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.scaler_calls import ScalerCalls, made_scaler, names_called
from amp_clipfix.analysis.summary import summarise
from amp_clipfix.analysis.values import Opaque

LOOP = """
    import torch
    {imports}


    def train(model, optimizer, loader{parameters}):
        scaler = {made}
        for batch in loader:
            loss = model(batch).mean()
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
    """


def loop(made: str, imports: str = "", parameters: str = "") -> str:
    return LOOP.format(made=made, imports=imports, parameters=parameters)


MAIN = "import torch\nfrom train import train\n\ntrain(1, 2, [], {factory})\n"
# Programs whose scaler is made by a call not spelled with the class's name: the class is
# handed on, so the classifier must still find it (each reports ACF004).
HANDED_ON = {
    "a name": {"train.py": loop('SCALER("cuda")', "SCALER = torch.amp.GradScaler")},
    "a renamed import": {
        "train.py": loop('Scaler("cuda")', "from torch.amp import GradScaler as Scaler")
    },
    "a default": {"train.py": loop("factory('cuda')", parameters=", factory=torch.amp.GradScaler")},
    "a getattr": {"train.py": loop('getattr(torch.amp, "GradScaler")("cuda")')},
    "an argument": {
        "train.py": loop("factory('cuda')", parameters=", factory"),
        "main.py": MAIN.format(factory="torch.amp.GradScaler"),
    },
    "a return": {
        "train.py": loop("scaler_class()('cuda')", "from kinds import scaler_class"),
        "kinds.py": "import torch\n\n\ndef scaler_class():\n    return torch.cuda.amp.GradScaler\n",
    },
}
# Programs whose classes are written only where called (the shortcut holds): one reports.
CALLED = {
    "a direct call": {"train.py": loop('torch.amp.GradScaler("cuda")')},
    "a helper and annotations": {
        "train.py": loop("make()", "from kinds import make"),
        "kinds.py": '''
            from typing import Optional

            import torch
            from torch.cuda.amp import GradScaler


            def make(kind: Optional["torch.amp.GradScaler"] = None) -> torch.amp.GradScaler:
                """A `torch.amp.GradScaler` for the run."""
                scaler: GradScaler = GradScaler()  # the GradScaler
                return scaler
            ''',
    },
    "a scheduler made by a parameter": {
        "train.py": loop('torch.amp.GradScaler("cuda")'),
        "sched.py": """
            def build(factory):
                return factory()


            class Runner:
                def __init__(self, factory):
                    self.scheduler = build(factory)

                def run(self, metric):
                    self.scheduler.step(metric)
            """,
    },
}


def reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> tuple[str, str]:
    """The report of a run as it is, and of a run asking every callee (the shortcut off)."""
    write(tmp_path / "kept", files)
    write(tmp_path / "every", files)
    kept = report(tmp_path / "kept")
    with monkeypatch.context() as patched:
        patched.setattr(scaler_calls.ScalerCalls, "called_where_written", lambda self: False)
        every = report(tmp_path / "every")
    return kept, every


@pytest.mark.parametrize("name", sorted(HANDED_ON))
def test_a_class_handed_on_is_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    kept, every = reports(tmp_path, monkeypatch, HANDED_ON[name])
    assert kept == every
    assert "ACF004" in kept


@pytest.mark.parametrize("name", sorted(CALLED))
def test_a_class_called_where_written_gives_the_same_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    kept, every = reports(tmp_path, monkeypatch, CALLED[name])
    assert kept == every
    assert kept.count("ACF004") == 1


def evaluator_of(tmp_path: Path, files: dict[str, str]) -> evaluate.Evaluator:
    write(tmp_path, files)
    contents = {tmp_path / name: (tmp_path / name).read_bytes() for name in files}
    return project_evaluator(tmp_path, contents, lambda p: summarise(tmp_path, p, p.read_text()))


def scheduler_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, extra: str) -> list[str]:
    """The callees the scaler question evaluates for a value made by `factory()` (a parameter
    followed through its callers), in a project whose other file is `extra`."""
    evaluator = evaluator_of(
        tmp_path,
        {"sched.py": CALLED["a scheduler made by a parameter"]["sched.py"], "other.py": extra},
    )
    summary = evaluator.summary(tmp_path / "sched.py")
    assert summary is not None
    call = next(
        node
        for node in ast.walk(summary.tree)
        if isinstance(node, ast.Call) and ast.unparse(node) == "factory()"
    )
    asked: list[str] = []
    ev = evaluate.Evaluator.ev

    def spied(self: evaluate.Evaluator, node: ast.AST, *rest: object) -> list[object]:
        asked.append(ast.unparse(node))
        return ev(self, node, *rest)  # type: ignore[arg-type]

    monkeypatch.setattr(evaluate.Evaluator, "ev", spied)
    made = made_scaler(evaluator, [Opaque(call, summary)], ScalerCalls(evaluator))
    assert made is False
    return asked


def test_a_callee_not_spelled_as_the_class_is_not_evaluated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = "import torch\n\nscaler = torch.amp.GradScaler('cuda')\n"
    assert "factory" not in scheduler_made(tmp_path, monkeypatch, extra)


def test_a_callee_is_evaluated_where_the_class_is_handed_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = "import torch\n\nkind = torch.amp.GradScaler\n"
    assert "factory" in scheduler_made(tmp_path, monkeypatch, extra)


def test_an_edit_that_hands_the_class_on_gives_a_cold_runs_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer is noted as a scan of the files writing the name and reads of them: an edit
    to a file nothing else read that hands the class on to the loop runs the search again."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = tmp_path / "project"
    files = {
        "train.py": loop("factory('cuda')", parameters=", factory"),
        "main.py": MAIN.format(factory="lambda kind: None"),
        "other.py": "import torch\n\nscaler = torch.amp.GradScaler('cuda')\n",
    }
    write(root, files)
    first = amp_clipfix(root, "check", entry=False)
    assert first.code == 0, first.text
    (root / "other.py").write_text(MAIN.format(factory="torch.amp.GradScaler"))
    warm = amp_clipfix(root, "check", entry=False)
    cold = amp_clipfix(root, "check", "--no-cache", entry=False)
    assert warm == cold
    assert "ACF004" in warm.text


def test_an_edit_that_hands_the_class_on_asks_the_search_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files writing the class's name are read for the answer (noted): a line handing the
    class on, added to a module nothing else reads, asks ACF004's search again (the answer it
    kept, "called only where written", is no longer true)."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = tmp_path / "project"
    direct = "import torch\n\nscaler = torch.amp.GradScaler('cuda')\n"
    files = {
        "train.py": loop("factory('cuda')", parameters=", factory"),
        "main.py": MAIN.format(factory="make_scaler").replace(
            "import torch", "from somelib import make_scaler"
        ),
        "other.py": direct,
    }
    write(root, files)
    asked = spied_queries(monkeypatch)
    names = next(asked)
    assert amp_clipfix(root, "check", entry=False).code == 0
    (root / "other.py").write_text(direct + "kind = torch.amp.GradScaler\n")
    names.clear()
    warm = amp_clipfix(root, "check", entry=False)
    assert "rule ACF004" in computed(names)
    assert warm == amp_clipfix(root, "check", "--no-cache", entry=False)


WRITINGS_CALLED = [
    "scaler = GradScaler()",
    "scaler = torch.amp.GradScaler('cuda', enabled=True)",
    "from torch.cuda.amp import GradScaler, autocast",
    "from torch.cuda.amp import GradScaler as GradScaler",
    "def f(scaler: GradScaler) -> 'GradScaler':\n    return scaler",
    "x: Optional[amp.GradScaler] = None",
    '"""Uses a GradScaler."""',
    "# GradScaler in a comment",
    "scaler = amp.ShardedGradScaler()",
    "make = lambda: GradScaler()",
]
WRITINGS_HANDED_ON = [
    "cls = GradScaler",
    "cls = amp.GradScaler",
    "make = partial(GradScaler, 'cuda')",
    "from torch.amp import GradScaler as Scaler",
    "import torch.amp.GradScaler",
    "class Mine(GradScaler):\n    pass",
    "name = 'GradScaler'",
    "kinds = {'scaler': 'torch.cuda.amp.GradScaler'}",
    "ok = isinstance(x, amp.GradScaler)",
    "scaler = [GradScaler][0]()",
    "def f(cls=GradScaler):\n    return cls()",
    "def f():\n    return amp.GradScaler",
    "def f(scaler: int = GradScaler) -> None:\n    pass",
    "cls = ShardedGradScaler",
    "scaler = x.GradScaler.GradScaler()",
]


@pytest.mark.parametrize("text", WRITINGS_CALLED)
def test_writings_that_call_the_class(text: str) -> None:
    assert names_called(ast.parse(textwrap.dedent(text)))


@pytest.mark.parametrize("text", WRITINGS_HANDED_ON)
def test_writings_that_hand_the_class_on(text: str) -> None:
    assert not names_called(ast.parse(textwrap.dedent(text)))
