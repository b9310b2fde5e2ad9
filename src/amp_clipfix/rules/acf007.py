"""ACF007: `fabric.clip_gradients(..., max_norm=...)` under a GradScaler raises on an overflow step.

Fabric's `clip_gradients` keeps torch's `error_if_nonfinite=True` by default; an fp16 step whose
gradients overflowed (the steps the GradScaler exists to skip) then raises instead of being
skipped. The fix passes `error_if_nonfinite=False`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from amp_clipfix.analysis import names
from amp_clipfix.analysis.facts import FileFacts, Made, ProjectFacts
from amp_clipfix.analysis.names import FABRIC_ROOTS, FABRIC_UNSCALE_HELPER
from amp_clipfix.analysis.partials import method_calls
from amp_clipfix.analysis.shape_texts import CLIP_GRADIENTS
from amp_clipfix.analysis.strategy_names import OWN_CLIP_SHARDS, registered_strategy
from amp_clipfix.analysis.values import Ext, FabricV, Lit, Opaque, is_off, setting
from amp_clipfix.models import Confidence, Edit, LightningPath, SiteKind, Span, Strategy
from amp_clipfix.rules.base import Found, Queries, Rule, RuleFix
from amp_clipfix.rules.fabric_steps import fabric_values, optimizers_of, scaler_state

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


FIX_HELPER = (
    f"replaces the call with `{FABRIC_UNSCALE_HELPER}(fabric, ...)`, the helper ACF001's "
    "`unscale` fix inserts for the same call (one rewrite of it): under a GradScaler it never "
    "raises on an overflow step, and it clips a fused optimizer after unscaling it with the "
    "run's GradScaler"
)


FIX_BF16 = (
    "changes nothing here: ACF001's `bf16` fix trains this Fabric without a GradScaler, so "
    "there is no overflow step to skip, and the clip keeps `error_if_nonfinite=True`, raising "
    "on a non-finite norm as it should without a scaler"
)


def check(queries: Queries) -> Iterator[Found]:
    facts = queries.facts
    if not facts.target.fabric_can_clip:
        return  # 1.x: Fabric has no clip_gradients
    # not parsed where `clip_gradients` is never an attribute (a longer name, a string:
    # shape_texts.py)
    for file in facts.with_words(b"clip_gradients", where=CLIP_GRADIENTS):
        # written calls, and calls of a `partial(fabric.clip_gradients, ...)` (merged)
        for run in method_calls(facts, file, "clip_gradients"):
            if not run.called:
                continue  # a partial no followed call uses: its optimizer is not known
            call, args, keywords = run.call, run.args, run.keywords
            if None in keywords or any(isinstance(a, ast.Starred) for a in args):
                continue  # a spread may pass it: not read here
            setting = args[5] if len(args) >= 6 else keywords.get("error_if_nonfinite")
            if setting is not None and not (
                isinstance(setting, ast.Constant) and setting.value is True
            ):
                continue  # set to something other than the default: the author decided
            norm = keywords.get("max_norm", args[3] if len(args) > 3 else None)
            if norm is None or isinstance(norm, ast.Constant) and norm.value is None:
                continue  # clipping by value: no norm, nothing raises
            fabrics = fabric_values(facts, file, run.receiver)
            if not fabrics:
                continue
            optimizer = keywords.get("optimizer", args[1] if len(args) > 1 else None)
            if optimizer is None:
                continue
            state = scaler_state(facts, fabrics)
            if state is False or all(clips_without_torch(facts, f) for f in fabrics):
                continue
            detail = " ".join(file.code(call).split())
            if run.partial is not None:
                detail += f"` through `{' '.join(file.code(run.partial).split())}"
            site = file.site(SiteKind.GRAD_CLIP, call, f"`{detail}`")
            helper = RuleFix(Strategy.UNSCALE, (), True, FIX_HELPER, targets=(site,))
            if state is None:
                # where ACF001's `unscale` helper replaces the call (`joined`), right for
                # every precision (it raises as Fabric does without a scaler); the keyword is not
                fused = run.partial is None and may_be_fused(facts, file, optimizer)
                yield Found(
                    (site,),
                    Confidence.REVIEW,
                    review="whether the Fabric uses a GradScaler (fp16) is decided at run time",
                    condition="the Fabric runs under fp16 mixed precision",
                    fixes=(helper,) if fused else (),
                    unfixed=(
                        "without a GradScaler, error_if_nonfinite=True may be wanted: pass "
                        "error_if_nonfinite=False where the precision is fp16"
                    ),
                )
                continue
            keyword = edit(file, run.written_in.get(id(setting), run.edited), setting)
            # a partial is no call ACF001's fixes rewrite: the keyword is the one fix there
            if run.partial is not None or not may_be_fused(facts, file, optimizer):
                fix = RuleFix(Strategy.UNSCALE, (keyword,), True, FIX, targets=(site,))
                yield Found((site,), fixes=(fix,))
                continue
            # ACF001's optimizer: whichever of its fixes runs, Fabric's clip stays and needs
            # the keyword, unless ACF001's `unscale` helper replaces this very call: then the
            # last offer (no edit of ours, the same codemod on the same call) is taken
            # (fixes/choose.py `joined`).
            fixes = tuple(
                RuleFix(strategy, (keyword,), True, FIX, targets=(site,))
                for strategy in (Strategy.UNSCALE, Strategy.UNFUSE, Strategy.GUARD)
            )
            # ACF001's `bf16` rewrite removes the GradScaler, and with it the reason for the
            # keyword: no edit of ours, taken where that rewrite covers this clip (`joined`)
            bf16 = RuleFix(Strategy.BF16, (), False, FIX_BF16, targets=(site,))
            yield Found((site,), fixes=(*fixes, helper, bf16))


def clips_without_torch(facts: ProjectFacts, fabric: FabricV) -> bool:
    """The Fabric's `strategy=` is certainly one that clips without torch's clip (an FSDP or
    DeepSpeed class of Lightning's, or a registered name of one): the keyword changes nothing
    there and no overflow step raises."""
    if fabric.call is None or fabric.summary is None:
        return False
    evaluator = facts.evaluator
    values = facts.argument(Made("", fabric.call, fabric.summary), names.FABRIC.strategy)
    for value in values:
        if isinstance(value, Lit):
            name = setting(value)
            if name is None or registered_strategy(name) not in OWN_CLIP_SHARDS:
                return False
        elif isinstance(value, Opaque) and isinstance(value.node, ast.Call) and value.summary:
            callee = value.node.func
            made = evaluator.force(evaluator.ev(callee, evaluator.ctx_of(value.summary, callee)))
            if not any(
                isinstance(v, Ext) and names.strategy_shards(v.qname) in OWN_CLIP_SHARDS
                for v in made
            ):
                return False
        else:
            return False
    return bool(values)


def may_be_fused(facts: ProjectFacts, file: FileFacts, node: ast.expr) -> bool:
    """An optimizer the expression may be is built with a `fused` argument other than a
    literal False or None: ACF001's optimizer, whose fixes decide how the call is rewritten."""
    return any(
        not is_off(value)
        for optimizer in optimizers_of(facts, file, node)
        for value in facts.evaluator.force(optimizer.fused)
    )


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
    check=check,
    words=(b"clip_gradients",),
    requires=(b"Fabric",),  # a Fabric is made or declared somewhere
    imports=FABRIC_ROOTS,  # ... from a Lightning package some file imports
    short="fabric.clip_gradients under a GradScaler raises on the overflow steps it should skip.",
    full=(
        "A `clip_gradients(...)` call on a Fabric (by value) with `max_norm` and without "
        "`error_if_nonfinite=False` (absent, or written `True`), where the Fabric uses a "
        "GradScaler (`16-mixed`, `16`, or a `MixedPrecision` plugin with one). A review "
        "finding, without a fix, when the precision is decided at run time; nothing under "
        "bf16 or 32-bit, under an FSDP or DeepSpeed `strategy=` (their clip never reaches "
        "torch's `clip_grad_norm_`), or when a `**` spread may pass the argument. However the "
        "optimizer is "
        "built: one built with a `fused=` argument other than `False` is also ACF001's, and "
        "the fix follows ACF001's (below)."
    ),
    why_title="Why it fails",
    why=WHY,
    example_before=BEFORE,
    example_after=AFTER,
    fix_safety={
        Strategy.UNSCALE.value: (
            f"The default (`auto`). Safe: it {FIX}. Offered only where the Fabric certainly "
            "uses a GradScaler (without one a non-finite norm is a real error the author may "
            "want raised). Where ACF001's `unscale` fix replaces the same call with its helper "
            f"(a fused optimizer), it instead {FIX_HELPER}; that is also its fix where the "
            "optimizer may be fused and the precision is decided at run time (the helper keeps "
            "Fabric's default without a scaler)."
        ),
        Strategy.UNFUSE.value: (
            "Only for an optimizer that may be fused, with ACF001's `unfuse` fix, which keeps "
            f"Fabric's own clip. Safe: it {FIX}."
        ),
        Strategy.BF16.value: (
            "Only for an optimizer that may be fused, with ACF001's `bf16` fix. Unsafe (runs "
            f"only when asked for by name): it {FIX_BF16}."
        ),
        Strategy.GUARD.value: (
            "Only for an optimizer that may be fused, with ACF001's `guard` fix, which keeps "
            f"Fabric's own clip for optimizers that are not fused. Safe: it {FIX}."
        ),
    },
)
