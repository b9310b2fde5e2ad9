"""ACF002: the Trainer clips the gradients of a fused optimizer under mixed precision."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from amp_clipfix.analysis import names
from amp_clipfix.analysis.link import (
    PathPieces,
    is_known,
    lightning_module_classes,
    of_kind,
    owner_key,
    sites_by_owner,
    user_sites,
)
from amp_clipfix.helper_sources import MODULE_HELPER_SOURCE
from amp_clipfix.models import (
    Certainty,
    ClassInfo,
    ConfigModel,
    EntryId,
    FileSites,
    Finding,
    LightningPath,
    Sharding,
    Site,
    SiteKind,
    Strategy,
    UseId,
    entry_order,
)
from amp_clipfix.project.version import Target
from amp_clipfix.records import record, replace
from amp_clipfix.rules.base import Found, Queries, Rule, safety
from amp_clipfix.rules.clip_fused import (
    TRAINER_CODE,
    TRAINER_WHY,
    Targets,
    bf16_targets,
    fixable,
    found,
    most_cautious,
    sharding_refusal,
    shared,
    unfuse_targets,
)
from amp_clipfix.strategies import SAFETY

MESSAGE = (
    "Trainer clips gradients of a fused optimizer under mixed precision: Lightning raises "
    "RuntimeError (the current optimizer does not allow for gradient clipping)"
)


BEFORE = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)


trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
trainer.fit(Model(), train_dataloaders=loader)
"""

# What `amp-clipfix apply` (strategy auto: unscale) makes of BEFORE; a test keeps it true.
EXAMPLE_AFTER = (
    """\
import lightning as L
import torch


"""
    + MODULE_HELPER_SOURCE
    + """

class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        return self.layer(batch).sum()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)

    def configure_gradient_clipping(
        self,
        optimizer,
        gradient_clip_val=None,
        gradient_clip_algorithm=None,
    ):
        # amp-clipfix: Lightning refuses to clip a fused optimizer under mixed
        # precision: clip it through the run's GradScaler; any other optimizer
        # goes to Lightning as before.
        value, algorithm = gradient_clip_val, gradient_clip_algorithm
        if getattr(optimizer, "_step_supports_amp_scaling", False):
            clip_module_gradients_unscaled(self, optimizer, value, algorithm)
        else:
            hook = super().configure_gradient_clipping
            hook(optimizer, value, algorithm)


trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
trainer.fit(Model(), train_dataloaders=loader)
"""
)


@record(frozen=True)
class TrainerSettings:
    """The failing precision and the clipping of one `Trainer(...)` call."""

    precision: tuple[Site, ...]
    clips: tuple[Site, ...]
    entry: EntryId | None = None


def trainer_settings(sites: Sequence[Site], target: Target) -> list[TrainerSettings]:
    """One entry per Trainer call; a plugin built outside any Trainer call may be passed to any.
    Releases up to 1.8.0 never refuse, so no precision takes part there."""
    failing = target.trainer_failing_precisions
    precision = [
        site
        for site in of_kind(sites, SiteKind.TRAINER_PRECISION)
        if failing and (site.certainty is Certainty.RUNTIME or site.value in failing)
    ]
    clips = of_kind(sites, SiteKind.TRAINER_CLIP)
    free_plugins = tuple(site for site in precision if site.entry is None)
    entries = sorted(
        {s.entry for s in (*precision, *clips) if s.entry is not None}, key=entry_order
    )
    settings = [
        TrainerSettings(
            precision=free_plugins + tuple(s for s in precision if s.entry == entry),
            clips=tuple(s for s in clips if s.entry == entry),
            entry=entry,
        )
        for entry in entries
    ]
    return settings or ([TrainerSettings(free_plugins, ())] if free_plugins else [])


def check(queries: Queries) -> Iterator[Found]:
    """One finding per Trainer and what it trains: a module class (a LightningModule subclass,
    with its project bases and mixins) whose methods build a fused optimizer (wherever `fused`
    is decided: a factory, a default, a constant, a partial passed in), or the optimizers of
    YAML configs, trained by a mixed-precision Trainer that clips (`gradient_clip_val` > 0, a
    Trainer subclass's `super().__init__`, `self.clip_gradients`, a Callback's
    `pl_module.clip_gradients`, `super().configure_gradient_clipping`).

    A Trainer whose `fit(...)` is followed to a module class trains that class only; a module
    class no followed `fit` accounts for is linked to the Trainers whose fitted module is not
    known, as a review finding (a YAML trainer section is the LightningCLI's: every class).
    A finding never merges two Trainers' sites: a module class two Trainers fail with gets one
    finding each, with that Trainer's precision and clipping and the module's optimizer and clip
    calls, which both findings show (`shared`).
    """
    files, target = queries.sites, queries.target
    sites = user_sites(files)
    trainers = trainer_settings(sites, target)
    if not trainers:
        return
    ways = [*config_ways(sites, trainers), *module_ways(files, sites, trainers)]
    seen: set[frozenset[Site]] = set()  # classes sharing every piece make one finding
    for pieces in shared(ways):
        pieces_sites = frozenset((*pieces.precision, *pieces.optimizers, *pieces.clips))
        if pieces_sites not in seen:
            seen.add(pieces_sites)
            yield found([pieces])


def config_ways(sites: Sequence[Site], trainers: Sequence[TrainerSettings]) -> list[PathPieces]:
    """An optimizer in a LightningCLI / Hydra config belongs to the model the config trains:
    each Trainer with the other pieces fails with it."""
    optimizers = tuple(
        site
        for site in of_kind(sites, SiteKind.FUSED_OPTIMIZER)
        if site.owner is None and site.in_config
    )
    if not optimizers:
        return []
    ways = [
        PathPieces(trainer.precision, optimizers, trainer.clips, is_known(trainer.clips))
        for trainer in trainers
    ]
    return [pieces for pieces in ways if pieces.complete()]


def module_ways(
    files: Sequence[FileSites], sites: Sequence[Site], trainers: Sequence[TrainerSettings]
) -> list[PathPieces]:
    """Per module class that builds a fused optimizer, one way per Trainer that trains it (or
    may: its fitted module is not known) with a failing precision and clipping. Its optimizer
    sites carry the most cautious strategy of the Trainers that fit it, failing or not (those
    with a precision or clip argument: a Trainer with neither leaves no site to read)."""
    fits = [fit for file in files for fit in file.fits]
    fitted: dict[UseId | ConfigModel, set[EntryId]] = {}
    for fit in fits:
        if fit.trainer is not None and fit.module_class is not None:
            fitted.setdefault(fit.module_class, set()).add(fit.trainer)
    known_entries = {
        fit.trainer for fit in fits if fit.trainer is not None and fit.module_class is not None
    }
    unknown_entries = {
        trainer.entry
        for trainer in trainers
        if trainer.entry not in known_entries
        or any(f.trainer == trainer.entry and f.module_class is None for f in fits)
    }
    strategies: dict[EntryId, Sharding] = {}
    for site in (
        *of_kind(sites, SiteKind.TRAINER_PRECISION),
        *of_kind(sites, SiteKind.TRAINER_CLIP),
    ):
        if site.entry is not None:
            strategies[site.entry] = most_cautious(
                (strategies.get(site.entry, Sharding.NONE), site.sharding)
            )
    # fixed: their configure_gradient_clipping clips fused optimizers itself
    unscaled = {class_key(info) for file in files for info in file.classes if info.clips_unscaled}
    ways = []
    owned_by = sites_by_owner(sites)
    for key in module_class_keys(files, sites):
        if key in unscaled:
            continue
        owned = [sites[index] for index in sorted(owned_by.get(key, ()))]
        optimizers = of_kind(owned, SiteKind.FUSED_OPTIMIZER)
        if not optimizers or all(fixed_in(site, unscaled) for site in optimizers):
            continue  # none, or each is built by classes the fix gave its override (a base)
        module_clips = of_kind(owned, SiteKind.MODULE_CLIP)
        # Every Trainer that fits the class runs an override put there, failing or not.
        fitting = most_cautious(
            strategies.get(entry, Sharding.NONE) for entry in fitted.get(key, ())
        )
        optimizers = tuple(
            replace(site, sharding=most_cautious((site.sharding, fitting))) for site in optimizers
        )
        for trainer in trainers:
            # The LightningCLI's Trainer trains every class, unless a CLI call names its model.
            always = trainer.entry == names.CLI_TRAINER and trainer.entry not in known_entries
            if key in fitted and trainer.entry not in fitted[key] and not always:
                continue
            if key not in fitted and trainer.entry not in unknown_entries and not always:
                continue
            pieces = PathPieces(
                trainer.precision,
                optimizers,
                trainer.clips + module_clips,
                clip_known=is_known(trainer.clips) or is_known(module_clips),
                link_known=key in fitted or always,
            )
            if pieces.complete():
                ways.append(pieces)
    return ways


def class_key(info: ClassInfo) -> UseId:
    return UseId(info.path, info.name)


def fixed_in(site: Site, unscaled: set[UseId]) -> bool:
    """The classes whose methods build an optimizer site (where the unscale fix puts its
    override: the class around it, or those calling the function that builds it) all have the
    fix's override, which their subclasses inherit."""
    owner = owner_key(site)
    homes = {owner} if owner is not None else {UseId(h.path, h.name) for h in site.built_in}
    return bool(homes) and homes <= unscaled


def module_class_keys(files: Sequence[FileSites], sites: Sequence[Site]) -> list[UseId]:
    keys = {class_key(info) for info in lightning_module_classes(files)}
    keys.update(user for site in sites for user in site.users if user.is_class)
    return sorted(keys, key=lambda key: (str(key.path), key.name))


def targets(finding: Finding, strategy: Strategy, target: Target) -> Targets:
    """Per strategy, the sites its codemod rewrites: `unscale` the module classes that build
    the fused optimizer (an override goes into each) and their `self.clip_gradients(...)`
    calls, `unfuse` the `fused=True` literals, `bf16` the precision literals (never on a
    release that refuses bf16-mixed too), `guard` the `self.clip_gradients(...)` calls; or why
    it does not apply to this finding."""
    sites = finding.sites
    if strategy is Strategy.UNSCALE:
        return unscale_targets(finding, target)
    if strategy is Strategy.UNFUSE:
        return unfuse_targets(sites)
    if strategy is Strategy.BF16:
        if target.trainer_refuses_without_scaler:
            return (), (
                f"bf16 is not a fix on the Trainer path of Lightning {target.version_label}: "
                "it refuses to clip fused optimizers under bf16-mixed too; "
                "use --strategy unscale or --strategy unfuse"
            )
        return bf16_targets(sites, SiteKind.TRAINER_PRECISION, target)
    if strategy is not Strategy.GUARD:
        return (), f"{finding.code} offers no {strategy.value} fix"
    clips = fixable(sites, SiteKind.MODULE_CLIP, lambda site: True)
    if clips:
        return clips, None
    if not any(site.kind is SiteKind.MODULE_CLIP for site in sites):
        return (), (
            "clipping comes only from Trainer(gradient_clip_val=...): there is no clip call to "
            "guard; use --strategy unscale or --strategy unfuse"
        )
    return (), "the clip call is not a plain statement or assignment that can be guarded"


def unscale_targets(finding: Finding, target: Target) -> Targets:
    """The LightningModule classes that build the fused optimizer (marked by its sites) and
    their `self.clip_gradients(...)` calls."""
    sites = finding.sites
    if target.assumed:
        return (), (
            f"no pin names the Lightning release ({target.version_label} is only assumed), "
            "and 1.x and 2.x differ in configure_gradient_clipping's signature "
            "(optimizer_idx); pin Lightning or pass --lightning-version"
        )
    if target.clip_hook_takes_optimizer_idx is None:
        return (), (
            f"Lightning {target.version_label} spans 1.x and 2.x, whose "
            "configure_gradient_clipping signatures differ (optimizer_idx); pin one line, or "
            "use --strategy unfuse"
        )
    refusal = sharding_refusal([s for s in sites if s.kind is not SiteKind.FUSED_OPTIMIZER])
    if refusal is not None:
        return (), refusal
    others = most_cautious(s.sharding for s in sites if s.kind is SiteKind.FUSED_OPTIMIZER)
    if others is not Sharding.NONE:
        strategy = (
            "shards the model (FSDP, DeepSpeed)"
            if others is Sharding.SHARDED
            else "is decided at run time"
        )
        return (), (
            f"the module class also trains under another Trainer whose strategy {strategy}: "
            "the override would run there too, where the inserted helper raises; use "
            "--strategy unfuse, which is right under every Trainer"
        )
    classes = tuple(
        s
        for s in sites
        if s.kind is SiteKind.FUSED_OPTIMIZER
        and s.owner is not None
        and not s.in_config
        and in_the_module_class(s)
    )
    if not classes:
        classes = factory_classes(finding)
    if not classes:
        return (), (
            "no LightningModule class is known to build the fused optimizer (it is configured "
            "in YAML, or built by a method of another class, or its module class lives in a "
            "file this finding does not read), so there is no class to give a "
            "configure_gradient_clipping override; use --strategy unfuse"
        )
    class_keys = {UseId(s.path, s.owner) for s in classes if s.owner is not None}
    if any(calls_clip_from_outside(site, class_keys) for site in sites):
        return (), (
            "clip_gradients is called from outside the module class (a Callback or another "
            "object): an override cannot reroute that call; use --strategy unfuse"
        )
    return classes + tuple(s for s in sites if s.kind is SiteKind.MODULE_CLIP), None


def factory_classes(finding: Finding) -> tuple[Site, ...]:
    """An optimizer built by a function (a factory, a default, a constant) that the module
    class's own methods call: the override goes into that class (`Site.built_in`). The targets
    are the optimizer sites (which mark no class: they are in a function) and one anchor per
    class, at its `class` statement, in a file the finding already reads."""
    optimizers = [s for s in finding.sites if s.kind is SiteKind.FUSED_OPTIMIZER]
    if not optimizers or any(s.in_config or s.owner is not None for s in optimizers):
        return ()
    read = {site.path for site in finding.sites}
    homes = sorted({home for site in optimizers for home in site.built_in})
    if not homes or any(home.path not in read for home in homes):
        return ()
    anchors = tuple(
        replace(optimizers[0], path=home.path, span=home.span, owner=home.name, fixable=False)
        for home in homes
    )
    return (*optimizers, *anchors)


def in_the_module_class(site: Site) -> bool:
    """The override goes into the class around the site: only right when that class is the one
    that uses the optimizer. A value decided elsewhere (a constant, a factory's default, a mixin
    that may come after LightningModule in the bases) names its users instead."""
    return not site.users or UseId(site.path, site.owner or "") in site.users


def calls_clip_from_outside(site: Site, class_keys: set[UseId]) -> bool:
    """A `x.clip_gradients(...)` call outside the module classes (a Callback's hook): Lightning
    runs it without passing through `configure_gradient_clipping`."""
    return (
        site.kind in (SiteKind.MODULE_CLIP, SiteKind.TRAINER_CLIP)
        and site.clip_call
        and (site.owner is None or UseId(site.path, site.owner) not in class_keys)
    )


RULE = Rule(
    lines=("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6"),
    code=TRAINER_CODE,
    message=MESSAGE,
    why=TRAINER_WHY,
    lightning_path=LightningPath.TRAINER,
    check=check,
    targets=targets,
    review_level="warning",
    name="trainer-clip-fused-mixed-precision",
    short=(
        "The Trainer clips gradients of a fused optimizer under mixed precision "
        "(bf16-mixed too on Lightning <= 2.6.6)."
    ),
    full=(
        "A Trainer with mixed precision (`16-mixed`, `16`; on Lightning <= 2.6.6 "
        "`bf16-mixed` too) that clips gradients (`gradient_clip_val` > 0, a Callback or hook "
        "calling `clip_gradients(...)`, or a `configure_gradient_clipping` override), and the "
        "LightningModule class it trains (followed from `trainer.fit(...)`), whose optimizer "
        "is fused (`fused=True` however it gets there: a factory, a mixin, a partial, a dict "
        "spread, a default, a constant). Where the trained class cannot be followed, the "
        "Trainer is linked to every class no followed fit accounts for, as a review finding "
        "(confidence `review`, also named ACF003). One finding per Trainer and module class: "
        "a class two Trainers fail with gets two, each with that Trainer's precision and "
        "clipping and the class's optimizer (shown in both), never the other Trainer's. "
        "`trainer.fit(...)` trains with the Trainer bound last before it (a name bound again "
        "for a second run). Lightning raises RuntimeError when it clips."
    ),
    example_before=BEFORE,
    example_after=EXAMPLE_AFTER,
    fix_safety={
        Strategy.UNSCALE.value: safety(
            Strategy.UNSCALE,
            "The default (`auto`). The LightningModule class that builds the fused optimizer "
            "gets a `configure_gradient_clipping` override (in the class's own file, in the "
            "hook signature of the target release: 1.x passes `optimizer_idx`): a fused "
            "optimizer is unscaled with `self.trainer.precision_plugin`'s scaler when there is "
            "one and clipped with torch by `gradient_clip_algorithm`; every other optimizer "
            "goes to `super().configure_gradient_clipping(...)`. An existing override is "
            "edited instead: its `self.clip_gradients(...)` and "
            "`super().configure_gradient_clipping(...)` calls, like those of manual "
            "optimization, go through the inserted `clip_module_gradients_unscaled` helper. "
            "Refused where the optimizer is configured outside a module class (YAML), or the "
            "strategy is sharded (FSDP, DeepSpeed: a `strategy=` name or class) or decided at "
            "run time (a variable, `**kwargs`), where the helper would raise if the run shards; "
            "and, since the override serves every Trainer that trains the class, refused in each "
            "finding on an optimizer that also trains under such a Trainer, failing or not "
            "(`auto` then turns "
            "`fused` off once, right under every Trainer). Two findings on one class give it one "
            "override and its file one helper.",
        ),
        Strategy.UNFUSE.value: safety(
            Strategy.UNFUSE,
            "Rewrites `fused=True` to `fused=False` where the optimizer is built, usually in "
            "`configure_optimizers`, or in a LightningCLI / Hydra config. Used by `auto` "
            "where `unscale` does not apply.",
        ),
        Strategy.BF16.value: (
            "Not a fix on the Trainer path of Lightning <= 2.6.6: it refuses to clip "
            "fused optimizers under bf16-mixed too, so the tool refuses, explains and "
            "leaves the code (use `unscale` or `unfuse`). On a later target version "
            "(`--lightning-version`): unsafe (runs only when asked for by name): "
            f"{SAFETY[Strategy.BF16]}."
        ),
        Strategy.GUARD.value: safety(
            Strategy.GUARD,
            "Only where user code calls `self.clip_gradients(...)`: wraps it in "
            "`if can_clip_gradients(self.trainer.precision_plugin, optimizer):`. "
            "Clipping that comes from `Trainer(gradient_clip_val=...)` has no call to "
            "guard (use `unfuse`).",
        ),
    },
)
