"""An instance's `__call__`, or a closure, that clips opens ACF004's clip index only where the
value may be called somewhere its flow is not followed (analysis/instance_flow.py): made by a
call of its class (or a subclass, or a renamed import) or read in the function that defines
it, held by locals, by parameters of the project functions it is given to and by the calls of
a function that returns it, the index stays closed and each call of it is one that may clip.
The same findings as the whole search on programs where the value goes each way."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from test_any_event import assert_index_closed_as, built
from test_clip_tail import report, same_as_the_whole_search, write

from amp_clipfix.analysis import clip_tail, instance_flow
from amp_clipfix.analysis.module_objects import binds_module, imports_plainly
from amp_clipfix.analysis.summary import summarise

CLIPPER = """
    import torch


    class Clipper:
        def __init__(self, norm):
            self.norm = norm

        def __call__(self, model):
            torch.nn.utils.clip_grad_norm_(model.parameters(), self.norm)

        def state(self):
            return {{"norm": self.norm}}
    {more}
    """

TRAIN = """
    import torch
    {imports}


    def train(model, optimizer, loader, clipper):
        scaler = torch.amp.GradScaler("cuda")
        for batch in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(batch).mean()
            scaler.scale(loss).backward()
            {clip}
            scaler.step(optimizer)
            scaler.update()


    def main(model, optimizer, loader):
        {make}
    """


def program(
    make: str,
    clip: str = "clipper(model)",
    imports: str = "from helpers import Clipper",
    more: str = "",
) -> dict[str, str]:
    """`main` makes the instance (`make`), the training loop calls it (`clip`)."""
    make = make.replace("\n", "\n    ")  # the lines of `main`'s body
    return {
        "train.py": textwrap.dedent(TRAIN).format(imports=imports, clip=clip, make=make),
        "helpers.py": textwrap.dedent(CLIPPER).format(more=more),
    }


# A factory of a closure that clips: the function is a value, returned to the factory's calls.
CLOSURE = """

def make_step(norm, optimizer):
    scaler = torch.amp.GradScaler("cuda")

    def step(loss, model):
        scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), norm)
        scaler.step(optimizer)

    return step
"""
HANDED = "clipper = Clipper(1.0)\ntrain(model, optimizer, loader, clipper)"
# name -> the program, and whether the clip index stays closed
PROGRAMS: dict[str, tuple[dict[str, str], bool]] = {
    "made and handed to the loop": (program(HANDED), True),
    "handed by keyword": (
        program("clipper = Clipper(1.0)\ntrain(model, optimizer, loader, clipper=clipper)"),
        True,
    ),
    "made in the call": (program("train(model, optimizer, loader, Clipper(1.0))"), True),
    "read, tested, printed, compared": (
        program(
            HANDED + '\nif clipper:\n    print(f"{clipper}", clipper.state(), clipper is None)'
        ),
        True,
    ),
    "handed to a library call": (program(HANDED + "\ntorch.save(clipper, 'c.pt')"), True),
    "made by a renamed import": (
        program(
            "clipper = Clip(1.0)\ntrain(model, optimizer, loader, clipper)",
            imports="from helpers import Clipper as Clip",
        ),
        True,
    ),
    "made through its module": (
        program(
            "clipper = helpers.Clipper(1.0)\ntrain(model, optimizer, loader, clipper)",
            imports="import helpers",
        ),
        True,
    ),
    "a subclass's instance": (
        program(
            "clipper = Mine(1.0)\ntrain(model, optimizer, loader, clipper)",
            imports="from helpers import Mine",
            more="\n\nclass Mine(Clipper):\n    pass\n",
        ),
        True,
    ),
    "called in the loop that makes it": (
        program("train(model, optimizer, loader, None)", clip="c = Clipper(1.0)\n        c(model)"),
        True,
    ),
    "stored on an object": (
        program("model.clipper = Clipper(1.0)", clip="model.clipper(model)"),
        False,
    ),
    "a module's global": (
        program(
            "train(model, optimizer, loader, CLIP)",
            imports="from helpers import Clipper\n\nCLIP = Clipper(1.0)",
        ),
        False,
    ),
    "returned by a factory": (
        program(
            "clipper = make()\ntrain(model, optimizer, loader, clipper)",
            more="\n\ndef make():\n    return Clipper(1.0)\n",
            imports="from helpers import make",
        ),
        True,
    ),
    "returned by a factory that is a value": (
        program(
            "build = make\ntrain(model, optimizer, loader, build())",
            more="\n\ndef make():\n    return Clipper(1.0)\n",
            imports="from helpers import make",
        ),
        False,
    ),
    "a closure returned, stored and handed on": (
        program(
            "step = make_step(1.0, optimizer)\ntrain(model, optimizer, loader, step)",
            clip="clipper(loss, model)",
            more=CLOSURE,
            imports="from helpers import make_step",
        ),
        True,
    ),
    "a closure called where it is made": (
        program(
            "train(model, optimizer, loader, None)",
            clip="step = make_step(1.0, optimizer)\n        step(loss, model)",
            more=CLOSURE,
            imports="from helpers import make_step",
        ),
        True,
    ),
    "a closure stored on an object": (
        program(
            "model.step = make_step(1.0, optimizer)",
            clip="model.step(loss, model)",
            more=CLOSURE,
            imports="from helpers import make_step",
        ),
        False,
    ),
    "a closure kept in a container": (
        program(
            "train(model, optimizer, loader, None)",
            clip="steps = [make_step(1.0, optimizer)]\n        steps[0](loss, model)",
            more=CLOSURE,
            imports="from helpers import make_step",
        ),
        False,
    ),
    "the class as a value": (
        program("kind = Clipper\ntrain(model, optimizer, loader, kind(1.0))"),
        False,
    ),
    "in a container": (
        program("clippers = [Clipper(1.0)]\ntrain(model, optimizer, loader, clippers[0])"),
        False,
    ),
    "a method gives the instance back": (
        program(
            "train(model, optimizer, loader, Clipper(1.0).me())",
            more="\n    def me(self):\n        return self\n",
        ),
        False,
    ),
    "handed to *args": (
        program(
            "clipper = Clipper(1.0)\nrun(clipper)",
            more="\n\ndef run(*args):\n    args[0](None)\n",
            imports="from helpers import Clipper, run",
        ),
        False,
    ),
    "its bound __call__ as a value": (
        program("clipper = Clipper(1.0)\ntrain(model, optimizer, loader, clipper.__call__)"),
        False,
    ),
}


# the programs whose clip the whole search reports (its caller readings look for an instance's
# calls in the files naming its class: callables.instance_calls)
FOUND = {name for name, (_, closed) in PROGRAMS.items() if closed} - {
    "a subclass's instance",
    "returned by a factory",
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_findings_as_the_whole_search(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tail = same_as_the_whole_search(tmp_path, monkeypatch, PROGRAMS[name][0])
    if name in FOUND:
        assert "ACF004" in tail


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_index_opens_only_where_the_instance_may_go_unfollowed(
    name: str, tmp_path: Path
) -> None:
    assert_index_closed_as(tmp_path, PROGRAMS[name][0], PROGRAMS[name][1], {"__call__", "step"})


def test_the_instance_s_calls_may_clip_and_their_functions_join_the_index(tmp_path: Path) -> None:
    """`clipper(model)` in `train` is a call that may clip, `train` is in the index a level
    above `__call__`, and `main`, which calls `train`, a level above that."""
    index = built(tmp_path, PROGRAMS["made and handed to the loop"][0], clip_tail.ClipCapable)
    assert not index.open
    levels = [{f.node.name for f in level.values()} for level in index.levels]
    assert levels[0] == {"__call__"}
    assert "train" in levels[1]
    assert "main" in levels[2]
    train = next(f for f in index.levels[1].values() if f.node.name == "train")
    calls = [n for n in ast.walk(train.node) if isinstance(n, ast.Call)]
    instance = next(c for c in calls if isinstance(c.func, ast.Name) and c.func.id == "clipper")
    assert index.call_clips(instance, train.summary)
    scaler = next(c for c in calls if isinstance(c.func, ast.Attribute) and c.func.attr == "update")
    assert not index.call_clips(scaler, train.summary)


IMPORTS = [
    "import helpers as h\n",
    "import helpers\n",
    "if True:\n    import helpers, os\n",
    "import helpers  # the helpers\n",
    "import helpers; import os\n",
    "import helpers.sub\n",
    "import helpers2\n",
    "from helpers import clip\n",
    "from pkg import helpers\n",
    'text = """\nimport helpers\n"""\n',
    '"""Usage:\n    import helpers\n    helpers.run()\n"""\n',
    "# import helpers\n",
]


@pytest.mark.parametrize("text", IMPORTS)
def test_a_plain_import_line_binds_the_module_where_the_parse_finds_it(
    text: str, tmp_path: Path
) -> None:
    """The text test says "binds" only of `import helpers [as h]` lines in code, and the parse
    agrees; a usage in a docstring or a comment binds nothing."""
    path = tmp_path / "other.py"
    path.write_text(text)
    summary = summarise(tmp_path, path, text)
    assert summary is not None
    said = imports_plainly(path, text.encode(), "helpers")
    assert not said or binds_module(summary, "helpers")
    if text.startswith(("import helpers\n", "import helpers as")):
        assert said
    if '"""' in text or text.startswith("#"):
        assert not said


def test_a_plain_import_binds_the_module_without_a_parse(tmp_path: Path) -> None:
    files = {**PROGRAMS["made and handed to the loop"][0], "other.py": "import helpers as h\n"}
    index = built(tmp_path, files, clip_tail.ClipCapable)
    other = tmp_path / "other.py"
    assert not index.evaluator.has_summary(other)
    assert index.binds(other, "helpers")
    assert not index.evaluator.has_summary(other)


SCALING = """import torch


class Clipper:
    def __init__(self, norm):
        self.norm = norm
        self.scaler = torch.amp.GradScaler("cuda")

    def __call__(self, model, loss, optimizer):
        self.scaler.scale(loss).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), self.norm)
        self.scaler.step(optimizer)
"""


def test_a_search_follows_a_value_once_for_every_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clip index and BeforeClip both hold the `__call__` (it scales, clips and steps: its
    reading is read whole, so BeforeClip is built): the flow is asked once
    (reach.CallReach.flows)."""
    asked: list[str] = []
    original = instance_flow.ValueFlow.instance_calls

    def instance_calls(self: instance_flow.ValueFlow, cls: ast.ClassDef, summary: object) -> object:
        asked.append(type(self.index).__name__)
        return original(self, cls, summary)  # type: ignore[arg-type]

    monkeypatch.setattr(instance_flow.ValueFlow, "instance_calls", instance_calls)
    program = PROGRAMS["made and handed to the loop"][0]
    files = {
        "train.py": program["train.py"].replace(
            "clipper(model)", "clipper(model, loss, optimizer)"
        ),
        "helpers.py": SCALING,
    }
    write(tmp_path, files)
    report(tmp_path)
    assert asked == ["ClipCapable"]
