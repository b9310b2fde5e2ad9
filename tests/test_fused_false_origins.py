"""A dict display's `"fused"` key set to the constant False or None is no fused origin
(analysis/fused_origins.py, inert_nodes): it can make no optimizer fused, and whatever may make
the key true later is an origin of its own. ColossalAI's `GeminiOptimizer` returns such a dict
copied into its param groups, which made every method of every module class evaluated."""

from __future__ import annotations

from pathlib import Path

import pytest
import test_fused_origins as fused_origins_tests
from test_fused_origins import FUSED_FACTORY, PLAIN_FACTORY, check, origins_of

# The shape of ColossalAI's `GeminiOptimizer.get_param_groups_for_saving`.
SAVING = """\
class Saver:
    def get_param_groups_for_saving(self) -> list:
        param_groups = [{**group, "params": []} for group in self.optim.param_groups]
        torch_special_hyperparameters = {
            "amsgrad": False,
            "foreach": None,
            "fused": False,
        }
        for group in param_groups:
            for k, v in torch_special_hyperparameters.items():
                if k not in group:
                    group[k] = v
        return param_groups
"""

MODULE = fused_origins_tests.MODULE.format(factory="factory")


def test_a_returned_dict_whose_fused_is_false_is_no_origin() -> None:
    """Fails on the base: "saver.py: stored outside in get_param_groups_for_saving()"."""
    assert origins_of({"saver.py": SAVING}) == (False, "", 0)


@pytest.mark.parametrize(
    "source",
    [
        "def build():\n    return {'lr': 1e-3, 'fused': False}\n",
        "def build():\n    return {'fused': None}\n",
        "DEFAULTS = {'fused': False, 'foreach': None}\n",
        "class Cfg:\n    defaults = {'fused': None}\n",
        "def build(self):\n    self.kw = dict({'fused': False})\n",
    ],
)
def test_a_fused_key_set_to_false_or_none_leaves_nothing(source: str) -> None:
    """Each fails on the base (returned, stored outside, or outside a function)."""
    assert origins_of({"build.py": source}) == (False, "", 0)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("return {'fused': True}", "returned"),
        ("return {'fused': flag}", "returned"),
        ("return {'fused': 0}", "returned"),  # only the constants False and None are inert
        ("d = {'fused': False}\n    d['fused'] = flag\n    return d", "returned"),
        ("d = {'fused': False}\n    d.update(fused=flag)\n    return d", ""),  # (why: per version)
        ("d = {'fused': False}\n    return dict(d, fused=flag)", "returned"),
        ("d = {'fused': False}\n    return {**d, 'fused': flag}", "returned"),
        ("d = {'fused': False}\n    d.setdefault('fused', flag)\n    return d", "returned"),
        ("self.kw = {'fused': False, 'fused': True}", "stored outside"),
        ("return torch.optim.AdamW(params, fused=False)", "returned"),  # a keyword stays one
    ],
)
def test_a_write_that_may_make_it_true_still_leaves(body: str, reason: str) -> None:
    source = f"import torch\n\n\ndef build(self, params, flag):\n    {body}\n"
    escapes, why, _ = origins_of({"build.py": source})
    assert escapes
    assert why.startswith(f"build.py: {reason}"), why


# `fused` in a comment only: no origin, but the text relevance keeps the file.
NO_ORIGIN = "# fused: kernels are not used in this project\n"


def test_the_module_class_is_not_read_for_a_false_dict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails on the base: the saver's dict escaped, so `configure_optimizers` was evaluated
    (the module's file names `fused` in a comment, which the text relevance cannot tell from
    code, so the file is one the search reads)."""
    (tmp_path / "saver.py").write_text(SAVING, "utf-8")
    (tmp_path / "factory.py").write_text(PLAIN_FACTORY, "utf-8")
    (tmp_path / "model.py").write_text(NO_ORIGIN + MODULE, "utf-8")

    code, output, evaluated = check(tmp_path, monkeypatch)

    assert code == 0, output
    assert "no findings" in output.lower() or "0 findings" in output.lower(), output
    assert evaluated == []


def test_a_fused_factory_beside_a_false_dict_is_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on the base: the factory's `fused=True` is returned, every method is evaluated and
    the fused optimizer under clipping is reported."""
    (tmp_path / "saver.py").write_text(SAVING, "utf-8")
    (tmp_path / "factory.py").write_text(FUSED_FACTORY, "utf-8")
    (tmp_path / "model.py").write_text(MODULE, "utf-8")

    code, output, evaluated = check(tmp_path, monkeypatch)

    assert code == 1, output
    assert "ACF002" in output
    assert "configure_optimizers" in evaluated


def test_a_true_dict_returned_to_the_module_is_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `"fused": True` dict returned and spread into the module's optimizer escapes as on
    the base, and the finding is made."""
    (tmp_path / "saver.py").write_text(SAVING, "utf-8")
    (tmp_path / "factory.py").write_text(
        "def options():\n    return {'lr': 1e-3, 'fused': True}\n", "utf-8"
    )
    module = MODULE.replace("from factory import make", "from factory import options").replace(
        "return make(self.parameters())",
        "return torch.optim.AdamW(self.parameters(), **options())",
    )
    (tmp_path / "model.py").write_text(module, "utf-8")

    code, output, evaluated = check(tmp_path, monkeypatch)

    assert code == 1, output
    assert "ACF002" in output


# ColossalAI's `examples/language/gpt/titans/model/pipeline_gpt1d.py`: `fused` picks a model class.
PIPELINE = """\
import torch


class PipelineGPT1D:
    pass


class FusedPipelineGPT1D(PipelineGPT1D):
    pass


def _build_gpt_pipeline_1d(num_layers, num_chunks, device=None, fused=False, **kwargs):
    model = FusedPipelineGPT1D if fused else PipelineGPT1D
    while fused:
        break
    if fused:
        pass
    return model(num_layers, num_chunks, device, **kwargs)


def GPT2_small_pipeline_1D(num_chunks=1, checkpoint=False, fused=False):
    cfg = dict(hidden_size=768, checkpoint=checkpoint)
    return _build_gpt_pipeline_1d(12, num_chunks, fused=fused, **cfg)
"""


def test_a_fused_keyword_a_function_of_the_module_only_tests_is_no_origin() -> None:
    """Fails on the base: "pipeline.py: returned in GPT2_small_pipeline_1D()"."""
    assert origins_of({"pipeline.py": PIPELINE}) == (False, "", 0)


CALLEE = "def _build(n, fused=False, **kwargs):\n    x = 1 if fused else 2\n    {tail}\n"
CALLER = "def small(fused=False):\n    return _build(12, fused=fused)\n"


@pytest.mark.parametrize(
    "source",
    [
        # the callee passes it on, stores it, negates it in its test, reads it by `locals()`
        CALLEE.format(tail="return torch.optim.AdamW([], fused=fused)") + CALLER,
        CALLEE.format(tail="return fused") + CALLER,
        CALLEE.format(tail="if not fused:\n        pass") + CALLER,
        CALLEE.format(tail="return dict(**locals())") + CALLER,
        CALLEE.format(tail="fused = True\n    if fused:\n        pass") + CALLER,
        # a branch's own `fused` leaves the callee
        CALLEE.format(tail="if fused:\n        return torch.optim.AdamW([], fused=True)") + CALLER,
        # the callee may not be the function the name is bound to at the call
        "@decorate\n" + CALLEE.format(tail="pass") + CALLER,
        CALLEE.format(tail="pass") + "_build = make\n" + CALLER,
        CALLEE.format(tail="pass") + CALLER.replace("small(", "small(_build, "),
        CALLEE.format(tail="pass").replace("fused=False,", "fused=False, /,") + CALLER,
        "from other import _build\n" + CALLER,
        CALLEE.format(tail="pass") + "from other import *\n" + CALLER,
        # another argument writes a fused value of its own
        CALLEE.format(tail="pass") + CALLER.replace("fused=fused", "fused=fused, **{'fused': 1}"),
    ],
)
def test_a_fused_keyword_the_callee_may_use_otherwise_still_leaves(source: str) -> None:
    escapes, why, _ = origins_of({"build.py": "import torch\n\n" + source})
    assert escapes, source
    assert why.startswith("build.py: "), why


def test_the_module_class_is_not_read_for_a_tested_keyword(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fails on the base: the pipeline's `fused=` keyword escaped (returned), so every method
    was evaluated."""
    (tmp_path / "pipeline.py").write_text(PIPELINE, "utf-8")
    (tmp_path / "saver.py").write_text(SAVING, "utf-8")
    (tmp_path / "factory.py").write_text(PLAIN_FACTORY, "utf-8")
    (tmp_path / "model.py").write_text(NO_ORIGIN + MODULE, "utf-8")

    code, output, evaluated = check(tmp_path, monkeypatch)

    assert code == 0, output
    assert evaluated == []


BRANCHING_MODULE = """\
import lightning as L
import torch


def make(params, fused=False):
    if fused:
        return torch.optim.AdamW(params, fused=True)
    return torch.optim.AdamW(params)


class Model(L.LightningModule):
    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return make(self.parameters(), fused=True)


L.Trainer(precision="16-mixed", gradient_clip_val=1.0).fit(Model())
"""


def test_a_branch_on_a_tested_keyword_is_still_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on the base: `make(..., fused=True)` is no origin (make only tests it), but the
    branch it picks builds `AdamW(fused=True)`, an origin that is returned: every method is
    evaluated and the fused optimizer under clipping is reported."""
    (tmp_path / "saver.py").write_text(SAVING, "utf-8")
    (tmp_path / "model.py").write_text(BRANCHING_MODULE, "utf-8")

    code, output, evaluated = check(tmp_path, monkeypatch)

    assert code == 1, output
    assert "ACF002" in output
    assert "configure_optimizers" in evaluated
