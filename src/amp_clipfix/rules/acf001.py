"""ACF001: Fabric clips the gradients of a fused optimizer while a GradScaler is in play."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from amp_clipfix.analysis.link import PathPieces, of_kind, sort_key, user_sites
from amp_clipfix.helper_sources import FABRIC_HELPER_SOURCE
from amp_clipfix.models import (
    Certainty,
    EntryId,
    Finding,
    LightningPath,
    Site,
    SiteKind,
    Span,
    Strategy,
    UseId,
)
from amp_clipfix.project.version import Target
from amp_clipfix.rules.base import Found, Queries, Rule, safety
from amp_clipfix.rules.clip_fused import (
    FABRIC_CODE,
    FABRIC_WHY,
    Targets,
    bf16_targets,
    fixable,
    found,
    sharding_refusal,
    unfuse_targets,
)

BF16_SCALER_ERROR = "ValueError: `precision='bf16-mixed'` does not use a scaler"

MESSAGE = (
    "Fabric clips gradients of a fused optimizer under fp16 mixed precision: Lightning raises "
    "NotImplementedError (Gradient clipping is not implemented for optimizers handling the "
    "unscaling)"
)


BEFORE = """\
import torch
from lightning.fabric import Fabric

fabric = Fabric(accelerator="cuda", precision="16-mixed")
model = torch.nn.Linear(32, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
model, optimizer = fabric.setup(model, optimizer)

loss = model(torch.randn(8, 32, device=fabric.device)).sum()
fabric.backward(loss)
fabric.clip_gradients(model, optimizer, max_norm=1.0)
optimizer.step()
"""

# What `amp-clipfix apply` (strategy auto: unscale) makes of BEFORE; a test keeps it true.
EXAMPLE_AFTER = (
    """\
import torch
from lightning.fabric import Fabric


"""
    + FABRIC_HELPER_SOURCE
    + """

fabric = Fabric(accelerator="cuda", precision="16-mixed")
model = torch.nn.Linear(32, 2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, fused=True)
model, optimizer = fabric.setup(model, optimizer)

loss = model(torch.randn(8, 32, device=fabric.device)).sum()
fabric.backward(loss)
clip_gradients_unscaled(fabric, model, optimizer, max_norm=1.0)
optimizer.step()
"""
)


def check(queries: Queries) -> Iterator[Found]:
    """One finding per module that clips on a Fabric: a `clip_gradients` call on a Fabric
    (followed through assignments, attributes, parameters and annotations), the precision of
    that Fabric with a GradScaler (`16`, `"16"`, `"16-mixed"` or a fabric `MixedPrecision` /
    `FSDPPrecision` plugin with one), and the fused optimizers built in the module, or built
    elsewhere (a factory, a default) and used in it. Before 2.0 Fabric has no `clip_gradients`,
    so nothing can fail there."""
    files, target = queries.sites, queries.target
    failing = target.fabric_failing_precisions
    sites = user_sites(files)
    precision = [
        site
        for site in of_kind(sites, SiteKind.FABRIC_PRECISION)
        if failing and (site.certainty is Certainty.RUNTIME or site.value in failing)
    ]
    optimizers = of_kind(sites, SiteKind.FUSED_OPTIMIZER)
    clips = of_kind(sites, SiteKind.FABRIC_CLIP)
    for path in sorted({clip.path for clip in clips}, key=str):
        for here in by_fabric([s for s in clips if s.path == path]):
            # The clip's module, and the module of the Fabric its receiver holds.
            places = {path} | {clip.entry.path for clip in here if clip.entry is not None}
            users = {UseId(place) for place in places}
            group = fabric_pieces(
                [s for s in precision if s.path == path or s.entry is not None],
                [s for s in optimizers if s.path in places or users & set(s.users)],
                here,
            )
            if group:
                yield found(group)


def by_fabric(clips: Sequence[Site]) -> list[list[Site]]:
    """The clip sites of one module by the Fabric they are on: one finding never joins two
    Fabrics' clips. The sites of one call stay together (its receiver may hold either Fabric),
    and a clip on a Fabric not known (a name only, a subclass) may be on any: it joins them."""
    if any(clip.entry is None for clip in clips):
        return [list(clips)]
    groups: list[tuple[set[EntryId | None], set[Span], list[Site]]] = []
    for clip in sorted(clips, key=sort_key):
        entries, spans, sites = {clip.entry}, {clip.span}, [clip]
        for group in [g for g in groups if clip.entry in g[0] or clip.span in g[1]]:
            groups.remove(group)
            entries |= group[0]
            spans |= group[1]
            sites = group[2] + sites
        groups.append((entries, spans, sites))
    return [sites for _, _, sites in groups]


def fabric_pieces(
    precision: Sequence[Site], optimizers: Sequence[Site], clips: Sequence[Site]
) -> list[PathPieces]:
    """Per clip call: the precision of the Fabric its receiver holds (any Fabric's of its
    module when the receiver is not bound to a known `Fabric(...)` call)."""
    candidates = [
        PathPieces(
            tuple(
                site
                for site in precision
                if (site.entry is not None and site.entry == clip.entry)
                or (site.path == clip.path and (clip.entry is None or site.entry is None))
            ),
            tuple(optimizers),
            (clip,),
            clip_known=clip.certainty is Certainty.KNOWN,  # a receiver only named like a Fabric
        )
        for clip in clips
    ]
    return [pieces for pieces in candidates if pieces.complete()]


def targets(finding: Finding, strategy: Strategy, target: Target) -> Targets:
    """Per strategy, the sites its codemod rewrites: `unscale` every clip call (the helper
    takes the Fabric), `unfuse` the `fused=True` literals, `bf16` the precision literals,
    `guard` the clip calls; or why it does not apply to this finding."""
    sites = finding.sites
    if strategy is Strategy.UNSCALE:
        refusal = sharding_refusal(sites)
        if refusal is not None:
            return (), refusal
        clips = of_kind(sites, SiteKind.FABRIC_CLIP)
        if any(clip.certainty is Certainty.RUNTIME for clip in clips):
            return (), (
                "the clip's receiver is not known to be a Fabric (only its name says so): the "
                "helper needs a Fabric; use --strategy unfuse"
            )
        return clips, None
    if strategy is Strategy.UNFUSE:
        return unfuse_targets(sites)
    if strategy is Strategy.BF16:
        return bf16_targets(sites, SiteKind.FABRIC_PRECISION, target)
    clips = fixable(sites, SiteKind.FABRIC_CLIP, lambda site: True)
    if strategy is not Strategy.GUARD:
        return (), f"{finding.code} offers no {strategy.value} fix"
    return clips, None if clips else (
        "the clip call is not a plain statement or assignment that can be guarded"
    )


RULE = Rule(
    lines=("lightning 2.0", "lightning 2.1 - 2.6"),
    code=FABRIC_CODE,
    message=MESSAGE,
    why=FABRIC_WHY,
    lightning_path=LightningPath.FABRIC,
    check=check,
    targets=targets,
    review_level="warning",
    name="fabric-clip-fused-fp16",
    short="Fabric clips gradients of a fused optimizer under fp16 mixed precision.",
    full=(
        "Within one module, a Fabric whose precision uses a GradScaler (`16-mixed`, `16`, "
        '`"16"`, or a Fabric `MixedPrecision`/`FSDPPrecision` plugin with a scaler), an '
        "optimizer built with `fused=True` and a `clip_gradients(...)` call on the Fabric "
        "object. Lightning raises NotImplementedError at the clip call."
    ),
    example_before=BEFORE,
    example_after=EXAMPLE_AFTER,
    fix_safety={
        Strategy.UNSCALE.value: safety(
            Strategy.UNSCALE,
            "The default (`auto`). The clip call becomes "
            "`clip_gradients_unscaled(fabric, model, optimizer, ...)`, a helper inserted once "
            "into the module: for an optimizer that unscales its own gradients it unscales "
            "them with `fabric.strategy.precision.scaler` and clips with torch (returning the "
            "total norm as Fabric does); every other optimizer goes to `fabric.clip_gradients` "
            "unchanged. Refused under a sharded strategy (FSDP, DeepSpeed: a `strategy=` name or "
            "class, an `FSDPPrecision` plugin) and under a strategy decided at run time (a "
            "variable, `**kwargs`), where the helper would raise if the run shards.",
        ),
        Strategy.UNFUSE.value: safety(
            Strategy.UNFUSE,
            "Rewrites `fused=True` to `fused=False` where the optimizer is built. "
            "Used by `auto` where `unscale` does not apply (a sharded or run-time strategy).",
        ),
        Strategy.BF16.value: safety(
            Strategy.BF16,
            'Rewrites the precision to `"bf16-mixed"`; a plugin '
            "loses its scaler argument, since bf16-mixed refuses one "
            f"({BF16_SCALER_ERROR}). "
            "A `scaler = GradScaler(...)` line only the plugin read, and an import nothing "
            "uses any more, go with it; a precision read from a module constant is "
            "rewritten at the constant.",
        ),
        Strategy.GUARD.value: safety(
            Strategy.GUARD,
            "Wraps the clip call in `if can_clip_gradients(fabric, optimizer):`, a helper "
            "inserted once into the module (it imports nothing private). An assigned "
            "result stays usable (`norm.item()`, `if norm > x`): the other branch binds "
            "`unclipped_gradient_norm(...)`, the total norm of the unscaled gradients.",
        ),
    },
)
