"""ACF004's readings enter only the helpers that can make one of its events (a clip, a scaled
backward, an `unscale_`, a GradScaler's step: analysis/event_capable.py `AnyEvent`), and the
clip index starts from the calls that may be torch's clip by value (clip_tail.ClipCapable
`root_calls`): the same findings as entering every helper and as starting from every call
spelled like the clip, on programs where the events after the clip hide in helpers reached in
every way a call can reach a function, and the helpers that can make none are not asked about."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from narrowed_search import asked, compare_searches
from test_bounded import Counted
from test_clip_tail import report, write

from amp_clipfix.analysis import clip_tail, event_capable

MAIN = """
    import torch
    {imports}


    def main(model, optimizer, loader, cfg):
        scaler = torch.amp.GradScaler("cuda")
        {before}
        for batch in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(batch).mean()
            scaler.scale(loss).backward()
            {clip}
            {after}
            scaler.update()
    """

# ACF004 reads the modules that name torch's clip (its words): each helper module here has one.
CLIPPED = "\n\ndef clipped(model):\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
STEPPED = (
    "import torch\n\n\ndef stepped(scaler, optimizer):\n    scaler.step(optimizer)\n" + CLIPPED
)
SCALED = "def scaled(scaler, loss):\n    scaler.scale(loss).backward()\n"
UNSCALED = "def unscaled(scaler, optimizer):\n    scaler.unscale_(optimizer)\n"
WRAPPER = (
    "import torch\n\n\nclass Wrapper:\n    def __init__(self, optimizer):\n"
    "        self.optimizer = optimizer\n\n    def {name}(self, scaler):\n"
    "        scaler.step(self.optimizer)\n" + CLIPPED
)
OUTER = "\n\ndef outer(scaler, optimizer):\n    stepped(scaler, optimizer)\n"
TORCH_CLIP = "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"


def main(
    imports: str = "", before: str = "pass", clip: str = TORCH_CLIP, after: str = "pass"
) -> str:
    text = MAIN.format(
        imports=imports.replace("\n", "\n    "),
        before=before.replace("\n", "\n        "),  # lines of the function's body
        clip=clip,
        after=after.replace("\n", "\n            "),  # lines of the loop's body
    )
    return textwrap.dedent(text).lstrip()


# A project class whose method is spelled like torch's clip: its callers are the index's a
# level above it, the method itself a root.
CLIPPER = """
    import torch


    class Clipper:
        def clip_grad_norm_(self, model, norm):
            torch.nn.utils.clip_grad_norm_(model.parameters(), norm)


    def clip_all(clipper, model):
        clipper.clip_grad_norm_(model, 1.0)


    def outer(clipper, model):
        clip_all(clipper, model)
    """

# name -> the project's files
PROGRAMS: dict[str, dict[str, str]] = {
    "step in the loop": {"train.py": main(after="scaler.step(optimizer)")},
    "step in a helper imported by name": {
        "train.py": main("from helpers import stepped", after="stepped(scaler, optimizer)"),
        "helpers.py": STEPPED,
    },
    "step in a helper through its module": {
        "train.py": main("import helpers", after="helpers.stepped(scaler, optimizer)"),
        "helpers.py": STEPPED,
    },
    "step in a helper through its package": {
        "train.py": main("import pkg.helpers", after="pkg.helpers.stepped(scaler, optimizer)"),
        "pkg/__init__.py": "",
        "pkg/helpers.py": STEPPED,
    },
    "step in a helper imported under another name": {
        "train.py": main("from helpers import stepped as s", after="s(scaler, optimizer)"),
        "helpers.py": STEPPED,
    },
    "step two helpers down": {
        "train.py": main("from helpers import outer", after="outer(scaler, optimizer)"),
        "helpers.py": STEPPED
        + "\n\ndef outer(scaler, optimizer):\n    stepped(scaler, optimizer)\n",
    },
    "step three helpers down": {
        "train.py": main("from helpers import top", after="top(scaler, optimizer)"),
        "helpers.py": STEPPED
        + OUTER
        + "\n\ndef top(scaler, optimizer):\n    outer(scaler, optimizer)\n",
    },
    "step in a helper handed on as a value": {
        "train.py": main(
            "from helpers import stepped, call", after="call(stepped, scaler, optimizer)"
        ),
        "helpers.py": STEPPED + "\n\ndef call(fn, *args):\n    fn(*args)\n",
    },
    "step in a method, the scaler its argument": {
        "train.py": main(
            "from helpers import Wrapper",
            before="wrapper = Wrapper(optimizer)",
            after="wrapper.step(scaler)",
        ),
        "helpers.py": WRAPPER.format(name="step"),
    },
    "step in a method of another name": {
        "train.py": main(
            "from helpers import Wrapper",
            before="wrapper = Wrapper(optimizer)",
            after="wrapper.apply(scaler)",
        ),
        "helpers.py": WRAPPER.format(name="apply"),
    },
    "step in a callable object": {
        "train.py": main(
            "from helpers import Wrapper",
            before="wrapper = Wrapper(optimizer)",
            after="wrapper(scaler)",
        ),
        "helpers.py": WRAPPER.format(name="__call__"),
    },
    "step in a nested function": {
        "train.py": main(before="def inner():\n    scaler.step(optimizer)", after="inner()"),
    },
    "step in a step's closure": {
        "train.py": main(
            "from helpers import stepped",
            after="scaler.step(optimizer, lambda: None)\nstepped(scaler, optimizer)",
        ),
        "helpers.py": STEPPED,
    },
    "unscale_ in a helper after the clip": {
        "train.py": main(
            "from helpers import unscaled",
            after="unscaled(scaler, optimizer)\nscaler.step(optimizer)",
        ),
        "helpers.py": "import torch\n\n\n" + UNSCALED + CLIPPED,
    },
    "backward in a helper between the clip and the step": {
        "train.py": main(
            "from helpers import scaled",
            after="scaled(scaler, loss)\nscaler.step(optimizer)",
        ),
        "helpers.py": "import torch\n\n\n" + SCALED + CLIPPED,
    },
    "a clip in a helper after the clip": {
        "train.py": main(
            "from helpers import clipped",
            after="clipped(model)\nscaler.step(optimizer)",
        ),
        "helpers.py": "import torch\n" + CLIPPED,
    },
    "a helper that makes no event": {
        "train.py": main(
            "from helpers import logged",
            after="logged(cfg)\nscaler.step(optimizer)",
        ),
        "helpers.py": "import torch\n\n\ndef logged(cfg):\n    cfg.log.write(cfg)\n" + CLIPPED,
    },
    "clip through a project method named like torch's clip": {
        "train.py": main(
            "from helpers import Clipper",
            before="clipper = Clipper()",
            clip="clipper.clip_grad_norm_(model, 1.0)",
            after="scaler.step(optimizer)",
        ),
        "helpers.py": CLIPPER,
    },
    "clip two helpers above a method named like torch's clip": {
        "train.py": main(
            "from helpers import Clipper, outer",
            before="clipper = Clipper()",
            clip="outer(clipper, model)",
            after="scaler.step(optimizer)",
        ),
        "helpers.py": CLIPPER,
    },
    "a library's clip_grad_norm_ in a hook handed on": {
        "train.py": main(
            "import accelerate",
            before="accelerator = accelerate.Accelerator()\n"
            "def hook(tensor):\n    accelerator.clip_grad_norm_(tensor, 1.0)\n"
            "model.register_hook(hook)",
            after="scaler.step(optimizer)",
        ),
    },
}


def every_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call may enter a helper, and every call spelled like torch's clip is a root of the
    clip index (the search before this gate and this filter)."""

    def build(self: event_capable.AnyEvent) -> None:
        self.built = self.open = True

    monkeypatch.setattr(event_capable.AnyEvent, "build", build)
    monkeypatch.setattr(clip_tail.ClipCapable, "torch_clip", lambda *arguments: True)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_findings_as_entering_every_helper(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compare_searches(PROGRAMS[name], tmp_path, monkeypatch, every_helper)


# read the same either way, but no finding: the helper's backward comes between the clip and
# the step; the evaluator does not follow the value (an instance's `__call__`; the callers of
# a function imported under another name, so the helper's `scaler` is no GradScaler to it)
NONE = [
    "backward in a helper between the clip and the step",
    "step in a callable object",
    "step in a helper imported under another name",
]
FOUND = sorted(set(PROGRAMS) - set(NONE))


@pytest.mark.parametrize("name", FOUND)
def test_the_programs_are_findings(name: str, tmp_path: Path) -> None:
    """The comparison above means something: these report an unscaled clip."""
    write(tmp_path, PROGRAMS[name])
    assert "ACF004" in report(tmp_path)


def test_a_backward_in_a_helper_after_the_clip_is_read(tmp_path: Path) -> None:
    """Were `scaled` not entered, its backward would not part the clip from the step."""
    write(tmp_path, PROGRAMS["backward in a helper between the clip and the step"])
    assert "ACF004" not in report(tmp_path)


def test_an_unscale_in_a_helper_after_the_clip_is_read(tmp_path: Path) -> None:
    """The finding offers no fix: the helper unscales after the clip (a second `unscale_`
    before the step raises)."""
    write(tmp_path, PROGRAMS["unscale_ in a helper after the clip"])
    found = report(tmp_path)
    assert "ACF004" in found
    assert "Strategy.UNSCALE" not in found


def built(tmp_path: Path, files: dict[str, str], kind: type) -> clip_tail.ClipCapable:
    """The index of that kind a run over the files built."""
    made: list[clip_tail.ClipCapable] = []
    original = clip_tail.ClipCapable.build

    def build(self: clip_tail.ClipCapable) -> None:
        original(self)
        if type(self) is kind:
            made.append(self)

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(clip_tail.ClipCapable, "build", build)
        write(tmp_path, files)
        report(tmp_path)
    assert made
    return made[0]


# A pipeline's `__call__` steps a scheduler, not a GradScaler: an instance's `__call__` may run
# from any call, so were it a root every call could step.
PIPELINE = """
    import torch


    class Pipeline:
        def __init__(self, scheduler):
            self.scheduler = scheduler

        def __call__(self, latents, noise):
            for t in range(10):
                latents = self.scheduler.step(noise, t, latents)
            return latents


    def sample(model, scheduler):
        return Pipeline(scheduler)(model.latents, model.noise)
    """

# After the clip, a loop's bookkeeping: a tracker a helper makes, its value followed through
# every script that calls the helper, stepped (a `step` with no GradScaler anywhere near it).
BOOKKEEPING = """
    def make_tracker(cfg):
        where = cfg.output
        return where.tracker
    """
SCRIPT = """
    from state import make_tracker


    def run{index}(cfg):
        return make_tracker(cfg.run{index})
    """


def loop_files(pipeline: str = PIPELINE) -> dict[str, str]:
    files = {"pipeline.py": pipeline, "state.py": BOOKKEEPING}
    files.update({f"script{i}.py": SCRIPT.format(index=i) for i in range(20)})
    files["train.py"] = main(
        "from state import make_tracker",
        before="tracker = make_tracker(cfg)",
        after="scaler.step(optimizer)\ntracker.step()",
    )
    return files


def test_a_step_of_no_scaler_is_no_root(tmp_path: Path) -> None:
    index = built(tmp_path, loop_files(), event_capable.AnyEvent)
    assert not index.open
    assert {f.node.name for f in index.levels[-1].values()} == {"main"}  # its own step


SCALED_PIPELINE = PIPELINE.replace(
    "self.scheduler = scheduler", 'self.scheduler = torch.amp.GradScaler("cuda")'
).replace("self.scheduler.step(noise, t, latents)", "self.scheduler.step(latents)")


def test_a_step_of_a_scaler_in_a_callable_object_is_followed_to_its_instance_s_calls(
    tmp_path: Path,
) -> None:
    """The instance is made and called at once (`Pipeline(scheduler)(...)`): the index holds
    its `__call__` and the function that calls the instance (analysis/instance_flow.py)."""
    index = built(tmp_path, loop_files(SCALED_PIPELINE), event_capable.AnyEvent)
    assert not index.open
    assert {"__call__", "sample"} <= {f.node.name for f in index.levels[-1].values()}


def test_a_step_of_a_scaler_in_a_callable_object_that_may_go_anywhere_opens_the_index(
    tmp_path: Path,
) -> None:
    stored = SCALED_PIPELINE.replace(
        "return Pipeline(scheduler)(model.latents, model.noise)",
        "model.pipeline = Pipeline(scheduler)",
    )
    index = built(tmp_path, loop_files(stored), event_capable.AnyEvent)
    assert index.open


def test_a_library_clip_in_a_hook_handed_on_leaves_the_clip_index_closed(
    tmp_path: Path,
) -> None:
    program = PROGRAMS["a library's clip_grad_norm_ in a hook handed on"]
    index = built(tmp_path, program, clip_tail.ClipCapable)
    assert not index.open
    every = built(tmp_path / "every", program, event_capable.AnyEvent)
    assert not every.open


def test_helpers_that_make_no_event_are_not_asked_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = loop_files()
    write(tmp_path / "gated", files)
    write(tmp_path / "every", files)
    with monkeypatch.context() as patched:
        gated_counted = Counted(patched)
        gated = report(tmp_path / "gated")
    with monkeypatch.context() as patched:
        every_helper(patched)
        every_counted = Counted(patched)
        every = report(tmp_path / "every")
    assert gated == every
    assert "ACF004" in gated
    assert asked(every_counted, tmp_path / "every" / "state.py", "cfg.output")
    assert not asked(gated_counted, tmp_path / "gated" / "state.py", "cfg.output")


def test_the_sources_are_what_the_tests_say() -> None:
    """Each program parses (a test program with a slip would compare two empty reports)."""
    for files in PROGRAMS.values():
        for text in files.values():
            ast.parse(textwrap.dedent(text))


def assert_index_closed_as(
    tmp_path: Path, files: dict[str, str], closed: bool, holding: set[str]
) -> None:
    """The clip index a run over the files builds stays closed exactly when `closed`, and
    then its last level holds one of the functions named in `holding`."""
    index = built(tmp_path, files, clip_tail.ClipCapable)
    assert index.open is not closed
    if closed:
        assert {found.node.name for found in index.levels[-1].values()} & holding
