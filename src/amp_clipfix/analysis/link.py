"""What the searches of ACF001 and ACF002 (rules/acf001.py, rules/acf002.py) share over the
collected sites: the pieces of one finding (`PathPieces`, the `Piece`s that may be decided at run
time), a total order of sites, and the project's LightningModule classes. Library code
(site-packages, Lightning's own package) is never a user site.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import Enum

from amp_clipfix.models import (
    Certainty,
    ClassInfo,
    FileSites,
    Site,
    SiteKind,
    UseId,
    entry_order,
)
from amp_clipfix.paths import is_library
from amp_clipfix.records import record


class Piece(str, Enum):
    """A piece of a finding that may be decided at run time; rules/ words it for a person."""

    PRECISION = "precision"
    FUSED = "fused"
    CLIPPED = "clipped"
    TRAINED = "trained"  # which module the Trainer trains


@record(frozen=True)
class PathPieces:
    """The three pieces of one finding, before deciding whether it is certain."""

    precision: tuple[Site, ...]
    optimizers: tuple[Site, ...]
    clips: tuple[Site, ...]
    clip_known: bool
    link_known: bool = True  # False: the Trainer's fitted module is not known (project-wide)

    def unknown(self) -> tuple[Piece, ...]:
        """The pieces decided at run time, in a fixed order."""
        unknown = []
        if not is_known(self.precision):
            unknown.append(Piece.PRECISION)
        if not is_known(self.optimizers):
            unknown.append(Piece.FUSED)
        if not self.clip_known:
            unknown.append(Piece.CLIPPED)
        if not self.link_known:
            unknown.append(Piece.TRAINED)
        return tuple(unknown)

    def complete(self) -> bool:
        return bool(self.precision and self.optimizers and self.clips)


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
        entry_order(site.entry),
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


def lightning_module_classes(files: Sequence[FileSites]) -> list[ClassInfo]:
    """Classes that derive from LightningModule: directly (a base's qualified name) or through
    classes of the project, each base followed by value by the project resolution
    (`ClassInfo.module_class`), never matched by its name."""
    return [
        info
        for file in files
        for info in file.classes
        if info.is_lightning_module or info.module_class
    ]


def owner_key(site: Site) -> UseId | None:
    return None if site.owner is None else UseId(site.path, site.owner)


def sites_by_owner(sites: Sequence[Site]) -> dict[UseId, set[int]]:
    """The positions in `sites` of the sites each module class owns: those of its own methods
    and those its users name (a factory's literal, a mixin's optimizer, an `__init__`
    default). Built once: asking each class of every site made N factories cost N * N."""
    owned: dict[UseId, set[int]] = {}
    for index, site in enumerate(sites):
        owner = owner_key(site)
        for key in (*site.users, *((owner,) if owner is not None else ())):
            owned.setdefault(key, set()).add(index)
    return owned
