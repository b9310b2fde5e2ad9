"""ACF004 reads a function from the first statement that can clip, and the whole function only
when a step comes after a clip there (analysis/clip_tail.py): the same findings as the whole
search on programs where the clip, the step or the backward hide in helpers, and far fewer
evaluations where the statements before the clip cost the most."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from test_bounded import Counted

from amp_clipfix.analysis import clip_tail
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET

LOOP = """
    import torch
    {imports}


    def train(model, optimizer, loader):
        # read by ACF004 itself: it names clip_grad_norm_
        scaler = torch.amp.GradScaler("cuda")
        for batch in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(batch).mean()
            {backward}
            {clip}
            {step}
            scaler.update()
    """

HELPERS = textwrap.dedent(
    """
    import torch


    def clip_all(model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    """
)


def loop(
    imports: str = "",
    clip: str = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
    backward: str = "scaler.scale(loss).backward()",
    step: str = "scaler.step(optimizer)",
) -> str:
    return LOOP.format(imports=imports, clip=clip, backward=backward, step=step)


# name -> the project's files; every one reports what the whole search reports
PROGRAMS: dict[str, dict[str, str]] = {
    "clip in the loop": {"train.py": loop()},
    "no step after the clip": {"train.py": loop(step="optimizer.step()")},
    "helper imported by name": {
        "train.py": loop("from helpers import clip_all", "clip_all(model)"),
        "helpers.py": HELPERS,
    },
    "helper through its module": {
        "train.py": loop("import helpers", "helpers.clip_all(model)"),
        "helpers.py": HELPERS,
    },
    "helper imported under another name": {
        "train.py": loop("from helpers import clip_all as clip", "clip(model)"),
        "helpers.py": HELPERS,
    },
    "helper named by a string held in a constant": {
        "train.py": loop('import helpers; NAME = "clip_all"', "getattr(helpers, NAME)(model)"),
        "helpers.py": HELPERS,
    },
    "helper passed as a value": {
        "train.py": loop("from helpers import clip_all, call", "call(clip_all, model)"),
        "helpers.py": HELPERS + "\n\ndef call(fn, model):\n    fn(model)\n",
    },
    "helper bound to a name, a parenthesis on the next line": {
        "train.py": loop("from helpers import bound, call", "call(bound, model)"),
        "helpers.py": HELPERS
        + "\n\nbound = clip_all\n(print)(bound)\n\n\ndef call(fn, model):\n    fn(model)\n",
    },
    "helper named by a string": {
        "train.py": loop("import helpers", 'getattr(helpers, "clip_all")(model)'),
        "helpers.py": HELPERS,
    },
    "helper through a star import": {
        "train.py": loop("from helpers import *", "clip_all(model)"),
        "helpers.py": HELPERS,
    },
    "helper re-exported by a package": {
        "train.py": loop("from pkg import clip_all", "clip_all(model)"),
        "pkg/__init__.py": "from .helpers import clip_all\n",
        "pkg/helpers.py": HELPERS,
    },
    "helper two calls down": {
        "train.py": loop("from helpers import after_backward", "after_backward(model)"),
        "helpers.py": HELPERS + "\n\ndef after_backward(model):\n    clip_all(model)\n",
    },
    "decorated helper": {
        "train.py": loop("from helpers import clip_all", "clip_all(model)"),
        "helpers.py": HELPERS.replace("def clip_all", "@keep\ndef clip_all")
        + "\n\ndef keep(fn):\n    return fn\n",
    },
    "callable object": {
        "train.py": loop("from helpers import Clipper", "Clipper()(model)"),
        "helpers.py": """
            import torch


            class Clipper:
                def __call__(self, model):
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            """,
    },
    "method of an object": {
        "train.py": loop("from helpers import Clipper", "Clipper().clip(model)"),
        "helpers.py": """
            import torch


            class Clipper:
                def clip(self, model):
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            """,
    },
    "backward in a helper before the clip": {
        "train.py": loop("from helpers import scaled", backward="scaled(scaler, loss)"),
        "helpers.py": "def scaled(scaler, loss):\n    scaler.scale(loss).backward()\n",
    },
    "step in a helper after the clip": {
        "train.py": loop("from helpers import stepped", step="stepped(scaler, optimizer)"),
        "helpers.py": "def stepped(scaler, optimizer):\n    scaler.step(optimizer)\n",
    },
    "backward, clip and step in one helper": {
        "train.py": loop(
            "from helpers import whole",
            backward="pass",
            clip="whole(scaler, loss, model, optimizer)",
            step="pass",
        ),
        "helpers.py": """
            import torch


            def whole(scaler, loss, model, optimizer):
                scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
            """,
    },
    "a helper that steps before it clips, entered twice": {
        "train.py": loop(
            "from helpers import step_then_clip",
            clip="step_then_clip(scaler, optimizer, model)",
            step="step_then_clip(scaler, optimizer, model)",
        ),
        "helpers.py": """
            import torch


            def step_then_clip(scaler, optimizer, model):
                scaler.step(optimizer)
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            """,
    },
    "the clip handed on as a value": {
        "train.py": loop(
            "from torch.nn.utils import clip_grad_norm_ as clip", "clip(model.parameters(), 1.0)"
        ),
    },
    "closure of a step": {
        "train.py": loop(
            clip="pass",
            step="scaler.step(optimizer, lambda: None)",
        ),
    },
}


def write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())


def whole_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every statement may clip, and a caller is read whole: the search before clip_tail."""

    def build(self: clip_tail.ClipCapable) -> None:
        self.built = self.open = True

    monkeypatch.setattr(clip_tail.ClipCapable, "build", build)
    monkeypatch.setattr(clip_tail, "statement_of", lambda *arguments: None)


def report(folder: Path) -> str:
    """The findings of `check` on the folder as a run keeps them (sites, fixes, review), its
    path left out."""
    result = run([folder], Options(Strategy.AUTO, DEFAULT_TARGET))
    assert not result.errors, result.errors
    return repr(result.findings).replace(str(folder), "<project>")


def same_as_the_whole_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str]
) -> str:
    """The report of a run as it is, asserted equal to the whole search's on a copy of the
    files."""
    write(tmp_path / "tail", files)
    write(tmp_path / "whole", files)
    tail = report(tmp_path / "tail")
    with monkeypatch.context() as patched:
        whole_search(patched)
        assert report(tmp_path / "whole") == tail
    return tail


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_findings_as_the_whole_search(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    same_as_the_whole_search(tmp_path, monkeypatch, PROGRAMS[name])


FOUND = {
    "a helper that steps before it clips, entered twice",
    "callable object",
    "helper imported under another name",
    "helper named by a string",
    "helper named by a string held in a constant",
    "backward, clip and step in one helper",
    "clip in the loop",
    "decorated helper",
    "helper imported by name",
    "helper passed as a value",
    "helper re-exported by a package",
    "helper through its module",
    "helper two calls down",
    "method of an object",
    "the clip handed on as a value",
}


@pytest.mark.parametrize("name", sorted(FOUND))
def test_the_programs_are_findings(name: str, tmp_path: Path) -> None:
    """The comparison above means something: these report the unscaled clip."""
    write(tmp_path, PROGRAMS[name])
    assert "ACF004" in report(tmp_path)


# A library object whose `prepare` and `backward` follow their parameters through every
# script that calls them (accelerate's `Accelerator`): costly questions before the clip.
ENGINE = """
    import torch


    class Engine:
        def __init__(self):
            self.scaler = torch.amp.GradScaler("cuda")

        def prepare(self, *objects):
            for obj in objects:
                obj.modules()
                obj.to("cuda")
            return objects

        def backward(self, loss, **kwargs):
            loss = loss * 1.0
            self.scaler.scale(loss).backward(**kwargs)
            loss.backward(**kwargs)

        def clip(self, parameters):
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(parameters, 1.0)
    """

SCRIPT = """
    from engine import Engine


    def run{index}(model, data, optimizer):
        engine = Engine()
        model, optimizer = engine.prepare(model.half(), optimizer)
        for batch in data:
            out = model(batch)
            loss = out.loss{index}
            engine.backward(loss.mean(), retain_graph=True)
            {clip}
            optimizer.step()
    """


SCRIPTS = 30


def asked(counted: Counted, folder: Path, code: str) -> bool:
    """Some evaluator of the run evaluated the expression `code` of engine.py."""
    for evaluator in counted.evaluators:
        summary = evaluator.summaries.get(folder / "engine.py")
        if summary is None:
            continue
        nodes = {id(n) for n in ast.walk(summary.tree) if ast.unparse(n) == code}
        if any(key[0] in nodes for key in evaluator.memo):
            return True
    return False


def test_the_statements_before_the_clip_are_not_asked_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scripts' `prepare` and `backward` cannot clip: what their parameters' callers (every
    script) pass is not asked, and the findings are the whole search's (none: no scaler
    steps after the clip)."""
    files = {"engine.py": ENGINE}
    files.update({f"script{i}.py": SCRIPT.format(index=i, clip="pass") for i in range(SCRIPTS)})
    files["train.py"] = SCRIPT.format(index="", clip="engine.clip(model.parameters())")
    write(tmp_path / "tail", files)
    write(tmp_path / "whole", files)
    with monkeypatch.context() as patched:
        tail_counted = Counted(patched)
        tail = report(tmp_path / "tail")
    with monkeypatch.context() as patched:
        whole_search(patched)
        whole_counted = Counted(patched)
        whole = report(tmp_path / "whole")
    assert tail == whole
    for code in ("loss.backward", "obj.modules", "obj.to"):
        assert asked(whole_counted, tmp_path / "whole", code)
        assert not asked(tail_counted, tmp_path / "tail", code)
    evaluations = (tail_counted.evaluations(), whole_counted.evaluations())
    assert evaluations[0] * 2 < evaluations[1], evaluations
