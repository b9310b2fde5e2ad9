"""What ACF001 and ACF002 share: a finding from the ways its pieces combine, the words that say
which piece a person must decide when one is decided at run time, and the pieces of their fixes
(the sites a shared codemod rewrites, or why a strategy does not apply)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from amp_clipfix.analysis import names
from amp_clipfix.analysis.link import PathPieces, Piece, sort_key
from amp_clipfix.models import Confidence, Sharding, Site, SiteKind
from amp_clipfix.project.version import Target
from amp_clipfix.records import replace
from amp_clipfix.rules.base import FABRIC_ERROR, TRAINER_ERROR, Found

# The codes of the two paths (ACF003 names their review findings), and why each raises.
FABRIC_CODE = "ACF001"
TRAINER_CODE = "ACF002"

FABRIC_WHY = (
    "Torch's fused optimizers (`fused=True` on Adam, AdamW, SGD, Adagrad) unscale their own "
    'gradients inside `step()`. With a GradScaler in play (precision `16-mixed`, `16` or `"16"`, '
    "or a `MixedPrecision`/`FSDPPrecision` plugin given a scaler), Lightning's "
    "`MixedPrecision.unscale_gradients` refuses to unscale them for clipping, so "
    "`fabric.clip_gradients(...)` raises:\n\n"
    f"    {FABRIC_ERROR}\n\n"
    "Plain torch has no such limit (`GradScaler.unscale_` + `clip_grad_norm_` work with fused "
    "optimizers): the limitation is Lightning's."
)

TRAINER_WHY = (
    "Torch's fused optimizers (`fused=True`) unscale their own gradients inside `step()`. When "
    "the Trainer clips (`gradient_clip_val` > 0, `self.clip_gradients(...)` or a "
    "`configure_gradient_clipping` override), Lightning's `MixedPrecision.clip_gradients` "
    "refuses and raises (with the optimizer's class name):\n\n"
    f"    {TRAINER_ERROR}\n\n"
    "In every release up to 2.6.6 this happens under any `MixedPrecision`: `16-mixed` and "
    "`bf16-mixed` alike. Lightning master (PR #21436, unreleased) raises only when a GradScaler "
    "is present, i.e. under `16-mixed`."
)

# Each piece that may be decided at run time: how the review names it, and what it must turn
# out to be for Lightning to raise (the end of the message: "..., if <condition>").
WORDS = {
    Piece.PRECISION: ("the precision", "the precision chosen at run time is mixed"),
    Piece.FUSED: ("whether the optimizer is fused", "the optimizer is fused"),
    Piece.CLIPPED: ("whether gradients are clipped", "gradients are clipped"),
    Piece.TRAINED: ("which module the Trainer trains", "the Trainer trains this module"),
}


def found(candidates: Sequence[PathPieces]) -> Found:
    """One finding from every way its pieces combine: certain when one way has every piece
    written out, else a review finding of the same rule that names the fewest unknown pieces."""
    sites = once(
        {
            site
            for pieces in candidates
            for site in (*pieces.precision, *pieces.optimizers, *pieces.clips)
        }
    )
    # The way with the fewest unknown pieces (ties: the first in `Piece` order, whatever order
    # the ways came in).
    order = list(Piece)
    unknown = min(
        (pieces.unknown() for pieces in candidates),
        key=lambda pieces: (len(pieces), [order.index(piece) for piece in pieces]),
    )
    if not unknown:
        return Found(sites)
    named = [WORDS[piece][0] for piece in unknown]
    return Found(
        sites,
        Confidence.REVIEW,
        review=f"{' and '.join(named)} {'is' if len(named) == 1 else 'are'} decided at run time",
        condition=" and ".join(WORDS[piece][1] for piece in unknown),
    )


def once(sites: set[Site]) -> tuple[Site, ...]:
    """The sites in a total order, each place once: one call that reaches two Fabrics (or a
    Callback's clip of two Trainers) is one site of the finding, with the more cautious
    strategy of the two."""
    kept: dict[tuple[object, ...], Site] = {}
    for site in sorted(sites, key=sort_key):
        first = kept.setdefault(place(site), site)
        if CAUTION.index(site.sharding) > CAUTION.index(first.sharding):
            kept[place(site)] = replace(first, sharding=site.sharding)
    return tuple(kept.values())


def place(site: Site) -> tuple[object, ...]:
    """What makes two sites one place of a finding: the same code saying the same thing."""
    return (site.path, site.span, site.kind, site.value, site.certainty)


CAUTION = (Sharding.NONE, Sharding.UNKNOWN, Sharding.SHARDED)


def most_cautious(shardings: Iterable[Sharding]) -> Sharding:
    return max(shardings, key=CAUTION.index, default=Sharding.NONE)


def shared(ways: Sequence[PathPieces]) -> list[PathPieces]:
    """Each optimizer site with the most cautious strategy of every Trainer (or Fabric) that
    fails with it, one way each. ACF002's unscale override goes into the class that builds the
    optimizer, so every Trainer that trains with it runs the override: where one of them shards
    (or its strategy is decided at run time) each finding on that optimizer refuses unscale, and
    `auto` unfuses it once for all of them instead of adding an override the sharded run would
    reach."""
    caution: dict[tuple[object, ...], Sharding] = {}
    for pieces in ways:
        strategy = most_cautious(s.sharding for s in (*pieces.precision, *pieces.clips))
        for site in pieces.optimizers:
            key = place(site)
            caution[key] = most_cautious((caution.get(key, Sharding.NONE), strategy, site.sharding))
    return [
        replace(
            pieces,
            optimizers=tuple(
                replace(site, sharding=caution[place(site)]) for site in pieces.optimizers
            ),
        )
        for pieces in ways
    ]


# -- fixes: which sites the shared codemods (fixes/codemods) rewrite, per strategy -----------

# The sites a strategy's codemod rewrites for one finding, or why it does not apply there.
Targets = tuple[tuple[Site, ...], str | None]


def fixable(
    sites: Sequence[Site], kind: SiteKind, accept: Callable[[Site], bool]
) -> tuple[Site, ...]:
    return tuple(site for site in sites if site.kind is kind and site.fixable and accept(site))


def unfuse_targets(sites: Sequence[Site]) -> Targets:
    """`fused=True` where the optimizer is built, written as a literal."""
    targets = fixable(sites, SiteKind.FUSED_OPTIMIZER, lambda s: s.value == "True")
    return targets, None if targets else "fused is not written as a literal True to rewrite"


def bf16_targets(sites: Sequence[Site], kind: SiteKind, target: Target) -> Targets:
    """The precision literals (`kind`) that a scaler comes from, rewritten to bf16-mixed."""
    if target.assumed:
        return (), (
            f"no pin names the Lightning release ({target.version_label} is only assumed), "
            'and 1.x spells bf16 "bf16", 2.x "bf16-mixed"; pin Lightning or pass '
            "--lightning-version"
        )
    if target.bf16_precision != "bf16-mixed":
        return (), (
            f"Lightning {target.version_label} includes 1.x releases, which spell bf16 "
            'as "bf16", not "bf16-mixed"; use --strategy unfuse'
        )
    targets = fixable(sites, kind, lambda s: s.value in names.SCALER_PRECISIONS)
    return targets, None if targets else "the precision is not written as a literal to rewrite"


def sharding_refusal(sites: Sequence[Site]) -> str | None:
    """The inserted helper raises under a sharded strategy (FSDP, DeepSpeed clip differently);
    where the strategy is decided at run time, `unfuse` is right for every strategy."""
    shardings = {site.sharding for site in sites}
    if Sharding.SHARDED in shardings:
        return (
            "the strategy shards the model (FSDP, DeepSpeed): sharded strategies clip "
            "differently, so clipping through the scaler does not apply; use --strategy unfuse"
        )
    if Sharding.UNKNOWN in shardings:
        return (
            "the strategy is decided at run time: under a sharded one (FSDP, DeepSpeed) the "
            "inserted helper raises; use --strategy unfuse, which is right for every strategy"
        )
    return None
