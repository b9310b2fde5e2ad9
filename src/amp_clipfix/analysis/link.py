"""Link the sites of one project into groups of pieces; the rules (rules/) name them findings.

The linking rule (also in the README):
- Fabric path: within one module, a Fabric precision with a GradScaler (`16`, `"16"`, `"16-mixed"`
  or a fabric `MixedPrecision` / `FSDPPrecision` plugin with one), a fused optimizer and a
  `clip_gradients` call on a Fabric object make one finding.
- Trainer path: within one project, every mixed-precision `Trainer` is assumed to train every
  `LightningModule` subclass (direct or through project base classes). A module class whose methods
  build a fused optimizer is a finding when some Trainer clips (`gradient_clip_val` > 0) or the
  class itself calls `self.clip_gradients(...)`.
A piece decided at run time turns the finding into a review finding (ACF003).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

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

    def unknown(self) -> list[str]:
        """The pieces decided at run time, in the words the review message uses."""
        unknown = []
        if not is_known(self.precision):
            unknown.append("the precision")
        if not is_known(self.optimizers):
            unknown.append("whether the optimizer is fused")
        if not self.clip_known:
            unknown.append("whether gradients are clipped")
        return unknown

    def complete(self) -> bool:
        return bool(self.precision and self.optimizers and self.clips)


@dataclass(frozen=True)
class TrainerSettings:
    """The failing precision and the clipping of one `Trainer(...)` call."""

    precision: tuple[Site, ...]
    clips: tuple[Site, ...]


def sort_key(site: Site) -> tuple[str, int, int]:
    return (str(site.path), site.span.line, site.span.column)


def is_known(sites: Iterable[Site]) -> bool:
    return any(site.certainty is Certainty.KNOWN for site in sites)


def of_kind(sites: Iterable[Site], kind: SiteKind) -> tuple[Site, ...]:
    return tuple(site for site in sites if site.kind is kind)


def fabric_groups(files: Sequence[FileSites], target: Target) -> Iterator[list[PathPieces]]:
    """One group per module that clips on a Fabric (a Fabric finding lies in one module)."""
    for file in files:
        group = fabric_pieces(file, target)
        if group:
            yield group


def fabric_pieces(file: FileSites, target: Target) -> list[PathPieces]:
    """Per clip call: the precision of the Fabric its receiver holds (any Fabric's when the
    receiver is not bound to a known `Fabric(...)` call in this module). Before 2.0 Fabric has
    no `clip_gradients`, so nothing can fail there."""
    failing = target.fabric_failing_precisions
    precision = [
        site
        for site in of_kind(file.sites, SiteKind.FABRIC_PRECISION)
        if failing and (site.certainty is Certainty.RUNTIME or site.value in failing)
    ]
    optimizers = of_kind(file.sites, SiteKind.FUSED_OPTIMIZER)
    candidates = [
        PathPieces(
            tuple(
                site for site in precision if clip.entry is None or site.entry in (None, clip.entry)
            ),
            optimizers,
            (clip,),
            clip_known=True,
        )
        for clip in of_kind(file.sites, SiteKind.FABRIC_CLIP)
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
        )
        for entry in entries
    ]
    return settings or ([TrainerSettings(free_plugins, ())] if free_plugins else [])


def trainer_groups(files: Sequence[FileSites], target: Target) -> Iterator[list[PathPieces]]:
    """One group for the optimizers of YAML configs, one per LightningModule class."""
    sites = [site for file in files for site in file.sites]
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
    for module_class in lightning_module_classes(files) if trainers else []:
        if module_class.clips_unscaled:
            continue  # fixed: its configure_gradient_clipping clips fused optimizers itself
        owned = [
            site
            for site in sites
            if site.owner == module_class.name and site.path == module_class.path
        ]
        module_clips = of_kind(owned, SiteKind.MODULE_CLIP)
        candidates = [
            PathPieces(
                trainer.precision,
                of_kind(owned, SiteKind.FUSED_OPTIMIZER),
                trainer.clips + module_clips,
                clip_known=is_known(trainer.clips) or is_known(module_clips),
            )
            for trainer in trainers
        ]
        candidates = [pieces for pieces in candidates if pieces.complete()]
        if candidates:
            yield candidates


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
