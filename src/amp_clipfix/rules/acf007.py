"""ACF007: `fabric.clip_gradients(..., max_norm=...)` under a GradScaler raises on an overflow step.

Fabric's `clip_gradients` keeps torch's `error_if_nonfinite=True` by default; an fp16 step whose
gradients overflowed (the steps the GradScaler exists to skip) then raises instead of being
skipped. The fix passes `error_if_nonfinite=False`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.models import Confidence, Edit, LightningPath, SiteKind, Span, Strategy
from amp_clipfix.rules.acf006 import fabric_values, optimizers_of, scaler_state
from amp_clipfix.rules.base import Found, Rule, RuleFix

CODE = "ACF007"

ERROR = (
    "RuntimeError: The total norm of order 2.0 for gradients from `parameters` is non-finite, "
    "so it cannot be clipped."
)

MESSAGE = (
    "`fabric.clip_gradients(..., max_norm=...)` under a GradScaler keeps "
    "`error_if_nonfinite=True`: an fp16 overflow step, which the scaler would skip, raises "
    "RuntimeError (the total norm is non-finite)"
)

FIX = (
    "passes `error_if_nonfinite=False`: an overflow step's non-finite norm no longer raises, "
    "and the GradScaler skips that step as it is made to; finite steps clip exactly as before"
)

WHY = (
    "Under fp16 the GradScaler starts at a scale of 65536 and lowers it whenever the scaled "
    "gradients overflow: `scaler.step` then skips that step. Real fp16 runs overflow in their "
    "first steps. Fabric's `clip_gradients(module, optimizer, max_norm=...)` unscales and calls "
    "`torch.nn.utils.clip_grad_norm_` with `error_if_nonfinite=True` unless told otherwise, so "
    "on such a step it raises:\n\n"
    f"    {ERROR}\n\n"
    "The run dies at the step the scaler exists to skip (on a GPU often at step 0)."
)

BEFORE = """\
import torch
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cuda", precision="16-mixed")
model = torch.nn.Linear(32, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, optimizer = fabric.setup(model, optimizer)

for batch in torch.randn(10, 8, 32, device=fabric.device):
    fabric.backward(model(batch).sum())
    fabric.clip_gradients(model, optimizer, max_norm=1.0)
    optimizer.step()
    optimizer.zero_grad()
"""

AFTER = BEFORE.replace("max_norm=1.0)", "max_norm=1.0, error_if_nonfinite=False)")


def search(facts: ProjectFacts) -> Iterator[Found]:
    if not facts.target.fabric_can_clip:
        return  # 1.x: Fabric has no clip_gradients
    for file in facts.with_words(b"clip_gradients"):
        for call in ast.walk(file.tree):
            if not (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "clip_gradients"
            ):
                continue
            keywords = {k.arg: k.value for k in call.keywords}
            if None in keywords or any(isinstance(a, ast.Starred) for a in call.args):
                continue  # a spread may pass it: not read here
            setting = call.args[5] if len(call.args) >= 6 else keywords.get("error_if_nonfinite")
            if setting is not None and not (
                isinstance(setting, ast.Constant) and setting.value is True
            ):
                continue  # set to something other than the default: the author decided
            norm = keywords.get("max_norm", call.args[3] if len(call.args) > 3 else None)
            if norm is None or isinstance(norm, ast.Constant) and norm.value is None:
                continue  # clipping by value: no norm, nothing raises
            fabrics = fabric_values(facts, file, call.func.value)
            if not fabrics:
                continue
            optimizer = keywords.get("optimizer", call.args[1] if len(call.args) > 1 else None)
            if optimizer is None or fused_written(facts, file, optimizer):
                continue  # ACF001's: its fixes decide how that optimizer is clipped
            state = scaler_state(facts, fabrics)
            if state is False:
                continue
            detail = " ".join(file.code(call).split())
            site = file.site(SiteKind.GRAD_CLIP, call, f"`{detail}`")
            if state is None:
                yield Found(
                    (site,),
                    Confidence.REVIEW,
                    review="whether the Fabric uses a GradScaler (fp16) is decided at run time",
                    condition="the Fabric runs under fp16 mixed precision",
                    unfixed=(
                        "without a GradScaler, error_if_nonfinite=True may be wanted: pass "
                        "error_if_nonfinite=False where the precision is fp16"
                    ),
                )
                continue
            fix = RuleFix(
                Strategy.UNSCALE, (edit(file, call, setting),), True, FIX, targets=(site,)
            )
            yield Found((site,), fixes=(fix,))


def fused_written(facts: ProjectFacts, file: FileFacts, node: ast.expr) -> bool:
    """An optimizer the expression may be is built with a `fused` argument (True, False or a
    value of its own): that optimizer is ACF001's, whose `unscale` fix clips it through a
    helper that never raises on an overflow step. Known gap: after ACF001's `unfuse` fix the
    clip is Fabric's own again, with its `error_if_nonfinite=True`."""
    return any(v.fused for v in optimizers_of(facts, file, node))


def edit(file: FileFacts, call: ast.Call, setting: ast.expr | None) -> Edit:
    """`error_if_nonfinite=False`: the written `True` replaced, or a keyword added after the
    last argument."""
    if setting is not None:
        return file.replace(setting, "False")
    arguments = [*call.args, *(k.value for k in call.keywords)]
    end = max((file.span(n) for n in arguments), key=lambda s: (s.end_line, s.end_column))
    return Edit(
        file.path,
        Span(end.end_line, end.end_column, end.end_line, end.end_column),
        ", error_if_nonfinite=False",
    )


RULE = Rule(
    lines=("lightning 2.0", "lightning 2.1 - 2.6"),
    code=CODE,
    name="fabric-clip-raises-on-overflow",
    message=MESSAGE,
    level="error",
    lightning_path=LightningPath.FABRIC,
    search=search,
    words=(b"clip_gradients",),
    short="fabric.clip_gradients under a GradScaler raises on the overflow steps it should skip.",
    full=(
        "A `clip_gradients(...)` call on a Fabric (by value) with `max_norm` and without "
        "`error_if_nonfinite=False` (absent, or written `True`), where the Fabric uses a "
        "GradScaler (`16-mixed`, `16`, or a `MixedPrecision` plugin with one). A review "
        "finding, without a fix, when the precision is decided at run time; nothing under "
        "bf16 or 32-bit, or when a `**` spread may pass the argument. An optimizer built with "
        "a `fused=` argument is left to ACF001, whose `unscale` helper never raises there "
        "(after its `unfuse` fix, Fabric's own clip is back: pass `error_if_nonfinite=False` "
        "by hand)."
    ),
    why_title="Why it fails",
    why=WHY,
    example_before=BEFORE,
    example_after=AFTER,
    fix_safety={
        Strategy.UNSCALE.value: (
            f"The default (`auto`). Safe: it {FIX}. Offered only where the Fabric certainly "
            "uses a GradScaler (without one a non-finite norm is a real error the author may "
            "want raised)."
        ),
    },
)
