"""Link the sites of one project into groups of pieces; the rules (rules/) name them findings.

The linking rule (also in the README):
- Fabric path: a `clip_gradients` call on a Fabric (followed through assignments, attributes,
  parameters and annotations), the precision of that Fabric with a GradScaler (`16`, `"16"`,
  `"16-mixed"` or a fabric `MixedPrecision` / `FSDPPrecision` plugin with one), and a fused
  optimizer built in the clip's module or built elsewhere and used there, make one finding.
- Trainer path: a module class (a LightningModule subclass, with its project bases and mixins)
  whose methods build a fused optimizer (wherever `fused` is decided: a factory, a default, a
  constant, a partial passed in), a mixed-precision Trainer that trains it, and clipping
  (`gradient_clip_val` > 0, a Trainer subclass's `super().__init__`, `self.clip_gradients`,
  a Callback's `pl_module.clip_gradients`, `super().configure_gradient_clipping`). A Trainer
  whose `fit(...)` is followed to a class trains that class only; a class no followed `fit`
  accounts for is linked to every Trainer whose fitted module is unknown, as a review finding.
A piece decided at run time turns the finding into a review finding (ACF003). Library code
(site-packages, Lightning's own package) is never a user site.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from amp_clipfix.analysis import names
from amp_clipfix.analysis.resolve import is_library
from amp_clipfix.models import (
    Certainty,
    ClassInfo,
    FileSites,
    Site,
    SiteKind,
)
from amp_clipfix.project.version import Target


@dataclass(frozen=True)
class PathPieces:
    """The three pieces of one finding, before deciding whether it is certain."""

    precision: tuple[Site, ...]
    optimizers: tuple[Site, ...]
    clips: tuple[Site, ...]
    clip_known: bool
    link_known: bool = True  # False: the Trainer's fitted module is not known (project-wide)

    def unknown(self) -> list[str]:
        """The pieces decided at run time, in the words the review message uses."""
        unknown = []
        if not is_known(self.precision):
            unknown.append("the precision")
        if not is_known(self.optimizers):
            unknown.append("whether the optimizer is fused")
        if not self.clip_known:
            unknown.append("whether gradients are clipped")
        if not self.link_known:
            unknown.append("which module the Trainer trains")
        return unknown

    def complete(self) -> bool:
        return bool(self.precision and self.optimizers and self.clips)


@dataclass(frozen=True)
class TrainerSettings:
    """The failing precision and the clipping of one `Trainer(...)` call."""

    precision: tuple[Site, ...]
    clips: tuple[Site, ...]
    entry: str | None = None


def sort_key(site: Site) -> tuple[object, ...]:
    """A total order of sites: position first, then what tells two sites at one position apart
    (a `**spread` is both a precision and a clip site), so no order depends on which question,
    path or worker came first."""
    span = site.span
    return (
        str(site.path),
        span.line,
        span.column,
        span.end_line,
        span.end_column,
        site.kind.value,
        site.entry or "",
        site.owner or "",
        site.value or "",
        site.certainty.value,
        site.users,
        site.detail,
    )


def is_known(sites: Iterable[Site]) -> bool:
    return any(site.certainty is Certainty.KNOWN for site in sites)


def of_kind(sites: Iterable[Site], kind: SiteKind) -> tuple[Site, ...]:
    return tuple(site for site in sites if site.kind is kind)


def user_sites(files: Sequence[FileSites]) -> list[Site]:
    """Every site of the project except library code (site-packages, Lightning itself)."""
    return [site for file in files for site in file.sites if not is_library(site.path)]


def fabric_groups(files: Sequence[FileSites], target: Target) -> Iterator[list[PathPieces]]:
    """One group per module that clips on a Fabric: the optimizers built in it, or built
    elsewhere (a factory, a default) and used in it. Before 2.0 Fabric has no
    `clip_gradients`, so nothing can fail there."""
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
        here = [s for s in clips if s.path == path]
        # The clip's module, and the module of the Fabric its receiver holds.
        places = {str(path)} | {c.entry.rsplit(":", 2)[0] for c in here if c.entry}
        group = fabric_pieces(
            [s for s in precision if s.path == path or s.entry is not None],
            [s for s in optimizers if str(s.path) in places or places & set(s.users)],
            here,
        )
        if group:
            yield group


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
    entries = sorted({s.entry for s in (*precision, *clips) if s.entry is not None})
    settings = [
        TrainerSettings(
            precision=free_plugins + tuple(s for s in precision if s.entry == entry),
            clips=tuple(s for s in clips if s.entry == entry),
            entry=entry,
        )
        for entry in entries
    ]
    return settings or ([TrainerSettings(free_plugins, ())] if free_plugins else [])


def trainer_groups(files: Sequence[FileSites], target: Target) -> Iterator[list[PathPieces]]:
    """One group for the optimizers of YAML configs, one per module class.

    A Trainer whose `fit(...)` is followed to a module class trains that class only; a module
    class no followed `fit` accounts for is linked to the Trainers whose fitted module is not
    known, as a review finding (a YAML trainer section is the LightningCLI's: every class).
    """
    sites = user_sites(files)
    trainers = trainer_settings(sites, target)
    config_optimizers = tuple(
        site
        for site in of_kind(sites, SiteKind.FUSED_OPTIMIZER)
        if site.owner is None and site.in_config
    )
    if config_optimizers and trainers:
        # An optimizer in a LightningCLI / Hydra config belongs to the model the config trains.
        candidates = [
            PathPieces(trainer.precision, config_optimizers, trainer.clips, is_known(trainer.clips))
            for trainer in trainers
        ]
        candidates = [pieces for pieces in candidates if pieces.complete()]
        if candidates:
            yield candidates
    if not trainers:
        return
    fits = [fit for file in files for fit in file.fits]
    fitted: dict[str, set[str]] = {}
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
    seen: set[frozenset[Site]] = set()  # classes sharing every piece make one finding
    # fixed: their configure_gradient_clipping clips fused optimizers itself
    unscaled = {class_key(info) for file in files for info in file.classes if info.clips_unscaled}
    for key in module_class_keys(files, sites):
        if key in unscaled:
            continue
        owned = [site for site in sites if owns(key, site)]
        optimizers = of_kind(owned, SiteKind.FUSED_OPTIMIZER)
        if not optimizers:
            continue
        module_clips = of_kind(owned, SiteKind.MODULE_CLIP)
        candidates = []
        for trainer in trainers:
            # The LightningCLI's Trainer trains every class, unless a CLI call names its model.
            always = trainer.entry == names.CLI_TRAINER and trainer.entry not in known_entries
            if key in fitted and trainer.entry not in fitted[key] and not always:
                continue
            if key not in fitted and trainer.entry not in unknown_entries and not always:
                continue
            candidates.append(
                PathPieces(
                    trainer.precision,
                    optimizers,
                    trainer.clips + module_clips,
                    clip_known=is_known(trainer.clips) or is_known(module_clips),
                    link_known=key in fitted or always,
                )
            )
        candidates = [pieces for pieces in candidates if pieces.complete()]
        pieces_sites = frozenset(
            site for p in candidates for site in (*p.precision, *p.optimizers, *p.clips)
        )
        if candidates and pieces_sites not in seen:
            seen.add(pieces_sites)
            yield candidates


def class_key(info: ClassInfo) -> str:
    return f"{info.path}::{info.name}"


def owns(key: str, site: Site) -> bool:
    """A module class owns the sites of its own methods and those its users name (a factory's
    literal, a mixin's optimizer, an `__init__` default)."""
    return key in site.users or (site.owner is not None and f"{site.path}::{site.owner}" == key)


def module_class_keys(files: Sequence[FileSites], sites: Sequence[Site]) -> list[str]:
    keys = {class_key(info) for info in lightning_module_classes(files)}
    keys.update(user for site in sites for user in site.users if "::" in user)
    return sorted(keys)


def lightning_module_classes(files: Sequence[FileSites]) -> list[ClassInfo]:
    """Classes that derive from LightningModule, directly or through classes of the project.

    Bases are matched by their last name component, since a project class may be imported under
    a relative or aliased name.
    """
    classes = [info for file in files for info in file.classes]
    by_name: dict[str, list[ClassInfo]] = {}
    for info in classes:
        by_name.setdefault(info.name, []).append(info)
    known: set[tuple[str, str]] = set()
    changed = True
    while changed:
        changed = False
        for info in classes:
            key = (str(info.path), info.name)
            if key in known:
                continue
            if info.is_lightning_module or any(
                (str(base.path), base.name) in known
                for base_name in info.base_names
                for base in by_name.get(base_name.rsplit(".", 1)[-1], [])
                if base is not info
            ):
                known.add(key)
                changed = True
    return [info for info in classes if (str(info.path), info.name) in known]
