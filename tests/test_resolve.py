"""The project resolution: what it says about places that serve several callers, and which
code never counts (library code)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.analysis.resolve import is_library
from amp_clipfix.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_a_shared_default_says_it_serves_other_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    shutil.copytree(
        FIXTURES / "trainer_shared_factory_default_note_unfuse" / "input", tmp_path / "p"
    )
    monkeypatch.chdir(tmp_path / "p")
    result = CliRunner().invoke(main, ["check", "--lightning-version", "2.6.6", "."])
    assert "note: fused is decided at optim.py:4 in build_optimizer(), which serves 2 calls" in (
        result.output
    )


@pytest.mark.parametrize(
    ("path", "library"),
    [
        ("/x/.venv/lib/python3.11/site-packages/pkg/train.py", True),
        ("/usr/lib/python3/dist-packages/pkg/train.py", True),
        ("/repo/src/lightning/pytorch/trainer/trainer.py", True),
        ("/repo/src/lightning_fabric/fabric.py", True),
        ("/repo/tests/tests_pytorch/test_amp.py", False),
        ("/repo/examples/lightning_train.py", False),
    ],
)
def test_library_code_is_never_a_user_site(path: str, library: bool) -> None:
    assert is_library(Path(path)) is library


WITH_TARGET = """\
import lightning as L
import torch


def build_optimizer(params, path):
    with open(path) as fused:
        pass
    return torch.optim.AdamW(params, fused=fused)


class Model(L.LightningModule):
    def configure_optimizers(self):
        return build_optimizer(self.parameters(), "opts.txt")


L.Trainer(precision="16-mixed", gradient_clip_val=1.0).fit(Model())
"""


def test_a_name_bound_by_a_with_statement_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`with ... as fused:` binds a name through an item that has no position of its own."""
    (tmp_path / "train.py").write_text(WITH_TARGET, encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    result = CliRunner().invoke(main, ["check", "--no-cache", "--lightning-version", "2.6.6", "."])

    assert result.exit_code == 1, result.output
    assert "train.py:8:44: ACF002" in result.output
    assert "review: whether the optimizer is fused is decided at run time" in result.output


def test_a_failing_resolution_costs_one_error_line_and_keeps_the_files_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amp_clipfix.analysis import resolve

    def broken(self: object, trial: bool = False) -> None:
        raise ValueError("boom")

    import shutil

    project = tmp_path / "p"
    shutil.copytree(FIXTURES / "trainer_16_mixed_direct_return_unfuse" / "input", project)
    monkeypatch.setattr(resolve.Resolution, "run", broken)
    monkeypatch.chdir(project)

    result = CliRunner().invoke(main, ["check", "--no-cache", "--lightning-version", "2.6.6", "."])

    assert result.exit_code == 2, result.output
    assert "internal error in the project resolution: ValueError('boom')" in result.output
    assert "train.py:20:79: ACF002" in result.output  # its own sites, review without the links
    assert "review: which module the Trainer trains is decided at run time" in result.output
    assert "Traceback" not in result.output


def test_reassigning_a_name_many_times_keeps_its_values_bounded(tmp_path: Path) -> None:
    """`x = x.f()` over and over doubles what flow-insensitive following finds at each step;
    real code (neuralforecast) did it often enough to exhaust the memory of the machine."""
    from amp_clipfix.analysis.evaluate import Evaluator
    from amp_clipfix.analysis.summary import summarise

    steps = "".join("    x = x.step()\n" for _ in range(12))
    text = f"def build(x):\n{steps}    return x\n\nbuild(1)\nbuild(2)\n"
    path = tmp_path / "chain.py"
    summary = summarise(tmp_path, path, text)
    assert summary is not None
    evaluator = Evaluator({path: summary}, lambda _: summary, {path: text.encode()})
    function = summary.tree.body[0]
    returned = function.body[-1].value  # type: ignore[attr-defined]

    values = evaluator.ev(returned, evaluator.ctx(summary, function, None))

    assert 1 <= len(values) <= 64  # 2**12 without a bound


@pytest.mark.parametrize(("tail", "suppressed"), [('; note = "# noqa"', False), ("  # noqa", True)])
def test_a_site_the_resolution_finds_reads_its_comment_as_the_collector_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: str, suppressed: bool
) -> None:
    """A Callback's clip call is found by the resolution; `# noqa` inside a string on its line
    is no comment (it silenced the finding before), a real one is."""
    import shutil

    project = tmp_path / "p"
    shutil.copytree(
        FIXTURES / "trainer_callback_clip_value_from_constructor_unfuse" / "input", project
    )
    callbacks = project / "callbacks.py"
    clip = "pl_module.clip_gradients(optimizer, gradient_clip_val=self.max_norm)"
    callbacks.write_text(callbacks.read_text().replace(clip, clip + tail))
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["check", "--no-cache", "--lightning-version", "2.6.6", "."])
    assert ("0 findings" in result.output) is suppressed, result.output
    assert ("1 finding " in result.output) is not suppressed


HOOK_MODEL = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.max_norm = 2.0

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), fused=True)

    def configure_gradient_clipping(self, optimizer, clip_val=None, algorithm=None):
{body}

trainer = L.Trainer(precision="16-mixed")
trainer.fit(Model())
"""


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # the hook's own parameter, whatever its name: the Trainer's value, and it clips none
        ("        super().configure_gradient_clipping(optimizer, clip_val, algorithm)\n", None),
        # a local name in the hook is followed like any other value: it clips with 2.0
        (
            "        norm = self.max_norm\n"
            "        self.clip_gradients(optimizer, gradient_clip_val=norm)\n",
            "ACF002",
        ),
    ],
)
def test_a_clip_value_is_the_trainers_only_when_it_is_the_hooks_own_parameter(
    tmp_path: Path, body: str, expected: str | None
) -> None:
    (tmp_path / "train.py").write_text(HOOK_MODEL.format(body=body))
    result = CliRunner().invoke(
        main, ["check", "--no-cache", "--lightning-version", "2.6.6", str(tmp_path)]
    )
    if expected is None:
        assert "0 findings" in result.output, result.output
    else:
        assert f": {expected} " in result.output and "1 finding " in result.output, result.output


EXPLODING_MODULE = """import lightning as L


def level5(x):
    return x


def level4(x):
    return level5(x) or level5(x) or level5(x) or level5(x)


def level3(x):
    return level4(x) or level4(x) or level4(x) or level4(x)


def level2(x):
    return level3(x) or level3(x) or level3(x) or level3(x)


def level1(x):
    return level2(x) or level2(x) or level2(x) or level2(x)


class Expensive(L.LightningModule):
    def forward(self, x):
        return level1(x) or level1(x) or level1(x) or level1(x)
"""

FUSED_MODULE = """

import torch


class Model(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), fused=True)


L.Trainer(precision="16-mixed", gradient_clip_val=1.0).fit(Model())
"""


def test_one_expensive_question_leaves_the_budget_to_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call whose evaluation fans out (a compiler's own code) stops at its own share; before,
    it spent the project's budget and every question after it was decided at run time: here
    which module the Trainer fits, so the finding was a review, not a certain ACF002."""
    from amp_clipfix.analysis import frame

    monkeypatch.setattr(frame, "BUDGET", 5_000)
    monkeypatch.setattr(frame, "QUESTION_BUDGET", 500)
    (tmp_path / "train.py").write_text(EXPLODING_MODULE + FUSED_MODULE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--no-cache", "-j", "1", "."])
    assert "train.py:34:59: ACF002" in result.output, result.output
    assert "review:" not in result.output  # certain
