"""Which Lightning releases refuse to clip a fused optimizer, and what a fix may write there.

One table (DESIGN.md §1a, verified against Lightning's sources and by running the releases):

| release                    | Trainer refuses (clip > 0)    | Fabric can clip | bf16 spelling |
|----------------------------|-------------------------------|-----------------|---------------|
| pytorch-lightning <= 1.8.0 | never                         | no              | "bf16"        |
| 1.8.1 - 1.9.x              | 16 and bf16                   | no              | "bf16"        |
| lightning 2.0 - 2.6.6      | 16-mixed and bf16-mixed       | with a scaler   | "bf16-mixed"  |
| after 2.6.6 (PR #21436)    | only with a scaler (16-mixed) | with a scaler   | "bf16-mixed"  |

A `Release` answers for one version; a `Target` is what a project runs on (one release, or every
known release a range admits) and where that was read. Analysis and fixes ask the `Target`: a
range refuses when one of its releases refuses, and a rewrite must be valid on all of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, TypeVar

from packaging.version import InvalidVersion, Version

from amp_clipfix.project.torch_release import DEFAULT_TORCH, TorchTarget
from amp_clipfix.records import record

if TYPE_CHECKING:  # parsing ranges is for pin files (project/pins.py), not every run
    from packaging.specifiers import SpecifierSet

LATEST_RELEASE = Version("2.6.6")
NEXT_RELEASE = Version("2.7.0")  # stands for master after PR #21436 in range evaluation
FIRST_TRAINER_CHECK = (1, 8, 1)  # PR #15555: the Trainer refuses fused optimizers under AMP
FIRST_FABRIC_CLIP = (2, 0, 0)  # PR #16715: Fabric.clip_gradients

# Patch releases per line (pytorch-lightning up to 1.9, then lightning and pytorch-lightning
# share numbers). Only the line boundaries above change behaviour; the patches let a range such
# as `>=1.8,<1.8.1` or `~=2.0.0` be evaluated against releases that exist.
PATCHES_PER_LINE = {
    (1, 6): 5,
    (1, 7): 7,
    (1, 8): 6,
    (1, 9): 5,
    (2, 0): 9,
    (2, 1): 4,
    (2, 2): 5,
    (2, 3): 3,
    (2, 4): 0,
    (2, 5): 5,
    (2, 6): 6,
}
KNOWN_RELEASES: tuple[Version, ...] = tuple(
    Version(f"{major}.{minor}.{patch}")
    for (major, minor), last in PATCHES_PER_LINE.items()
    for patch in range(last + 1)
) + (Version("2.0.9.post0"), NEXT_RELEASE)

T = TypeVar("T")

SCALER_PRECISIONS = frozenset({"16", "16-mixed"})
MIXED_PRECISIONS = SCALER_PRECISIONS | {"bf16", "bf16-mixed"}
SPELLINGS_1X = frozenset({"16", "32", "64", "bf16"})
SPELLINGS_2_0 = SPELLINGS_1X | {"16-mixed", "bf16-mixed", "32-true", "64-true"}
SPELLINGS_2_1 = SPELLINGS_2_0 | {
    "16-true",
    "bf16-true",
    "transformer-engine",
    "transformer-engine-float16",
}


def parse_version(text: str) -> Version:
    """A release as written on the command line or in configuration, strictly.

    `2.6`, `2.6.6`, `2.0.9.post0` and pre-releases such as `2.7.0rc1` (a pre-release of 2.7.0,
    so it behaves like 2.7) are accepted; four-part releases, epochs, local labels, a leading
    `v` and non-ASCII digits are not. Raises ValueError with a one-line message.
    """
    shown = text.strip()
    problem = "expected X.Y or X.Y.Z, e.g. 2.6.6 or 2.0.9.post0"
    if not shown.isascii() or not shown[:1].isdigit():
        raise ValueError(f"not a Lightning version: {text!r} ({problem})")
    try:
        version = Version(shown)
    except InvalidVersion:
        raise ValueError(f"not a Lightning version: {text!r} ({problem})") from None
    if len(version.release) > 3 or version.epoch or version.local:
        raise ValueError(f"not a Lightning version: {text!r} ({problem})")
    return version


def _triple(version: Version) -> tuple[int, int, int]:
    """(major, minor, patch); post, pre and dev labels do not change the release line."""
    major, minor, patch = (*version.release, 0, 0)[:3]
    return major, minor, patch


@record(frozen=True)
class Release:
    """What one Lightning release does with fused optimizers, and the spellings it knows."""

    version: Version

    def __str__(self) -> str:
        """`2.4` reads as `2.4.0`; pre-, post- and dev-release labels are kept."""
        version = self.version
        text = ".".join(map(str, _triple(version)))
        if version.pre is not None:
            text += f"{version.pre[0]}{version.pre[1]}"
        if version.post is not None:
            text += f".post{version.post}"
        if version.dev is not None:
            text += f".dev{version.dev}"
        return text

    @property
    def is_1x(self) -> bool:
        return _triple(self.version) < FIRST_FABRIC_CLIP

    @property
    def fabric_can_clip(self) -> bool:
        """`Fabric.clip_gradients` exists (2.0+); before, no Fabric clip can fail."""
        return not self.is_1x

    @property
    def trainer_refuses_without_scaler(self) -> bool:
        """1.8.1 - 2.6.6 refuse under bf16 too; later releases only with a GradScaler."""
        return FIRST_TRAINER_CHECK <= _triple(self.version) <= _triple(LATEST_RELEASE)

    @property
    def trainer_failing_precisions(self) -> frozenset[str]:
        """Precision values (as written; ints as str) whose Trainer refuses to clip fused."""
        triple = _triple(self.version)
        if triple < FIRST_TRAINER_CHECK:
            return frozenset()
        if self.is_1x:
            return frozenset({"16", "bf16"})
        return MIXED_PRECISIONS if self.trainer_refuses_without_scaler else SCALER_PRECISIONS

    @property
    def fabric_failing_precisions(self) -> frozenset[str]:
        """Fabric refuses where a GradScaler exists, and only where it can clip at all."""
        return SCALER_PRECISIONS if self.fabric_can_clip else frozenset()

    @property
    def precision_spellings(self) -> frozenset[str]:
        """Precision values the release accepts (ints as str); 1.x rejects "16-mixed"."""
        if self.is_1x:
            return SPELLINGS_1X
        return SPELLINGS_2_0 if _triple(self.version) < (2, 1, 0) else SPELLINGS_2_1

    @property
    def bf16_precision(self) -> str:
        """How this release spells bf16 mixed precision: "bf16" on 1.x, "bf16-mixed" on 2.x."""
        return "bf16" if self.is_1x else "bf16-mixed"

    @property
    def clip_hook_takes_optimizer_idx(self) -> bool:
        """`configure_gradient_clipping(self, optimizer, optimizer_idx, gradient_clip_val,
        gradient_clip_algorithm)` on 1.x; 2.0 dropped `optimizer_idx`."""
        return self.is_1x

    @property
    def trainer_package(self) -> str:
        """The import the Trainer is reached by: `pytorch_lightning` on 1.x."""
        return "pytorch_lightning" if self.is_1x else "lightning.pytorch"


@record(frozen=True)
class Target:
    """The Lightning a project runs on: the releases its pin admits, and where it was read.

    `pin` is the requirement as a person reads it (`pytorch-lightning 1.9.5`,
    `lightning>=2.0,<3`); `source` where it came from (`setup.py`, `--lightning-version`,
    `installed distribution`, `default`).
    """

    releases: tuple[Release, ...]
    pin: str
    source: str
    torch: TorchTarget = DEFAULT_TORCH  # the torch it runs with (pins.resolve_torch)
    # Only assumed (no pin, no --lightning-version, nothing installed, no code evidence): what
    # depends on the release (a spelling, a hook's signature) is then not known, and a rewrite
    # whose safety depends on it is left for review (`bf16_precision`, ...).
    assumed: bool = False

    @classmethod
    def exact(cls, version: Version, source: str, package: str = "Lightning") -> Target:
        release = Release(version)
        return cls((release,), f"{package} {release}", source)

    def describe(self) -> str:
        """`pytorch-lightning 1.9.5 from setup.py`; `Lightning 2.6.6: no pin found (the latest
        release)` when only assumed."""
        if self.assumed:
            return f"{self.pin}: {self.source}"
        return f"{self.pin} from {self.source}"

    @property
    def version_label(self) -> str:
        """The release, or the range, without the package: `1.9.5`, `>=2.0,<3`."""
        if len(self.releases) == 1:
            return str(self.releases[0])
        return self.pin.split(" ", 1)[-1] if " " in self.pin else self.pin

    @property
    def trainer_failing_precisions(self) -> frozenset[str]:
        return frozenset().union(*(r.trainer_failing_precisions for r in self.releases))

    @property
    def fabric_failing_precisions(self) -> frozenset[str]:
        return frozenset().union(*(r.fabric_failing_precisions for r in self.releases))

    @property
    def fabric_can_clip(self) -> bool:
        return any(release.fabric_can_clip for release in self.releases)

    @property
    def trainer_refuses_without_scaler(self) -> bool:
        return any(release.trainer_refuses_without_scaler for release in self.releases)

    @property
    def bf16_precision(self) -> str | None:
        """The bf16 spelling every admitted release accepts; None when they differ (1.x and 2.x)
        or the release is only assumed."""
        if self.assumed:
            return None
        return _common(release.bf16_precision for release in self.releases)

    @property
    def clip_hook_takes_optimizer_idx(self) -> bool | None:
        """Whether the hook takes `optimizer_idx` on every admitted release; None when mixed or
        only assumed."""
        if self.assumed:
            return None
        return _common(release.clip_hook_takes_optimizer_idx for release in self.releases)


def _common(values: Iterable[T]) -> T | None:
    distinct = set(values)
    return distinct.pop() if len(distinct) == 1 else None


def releases_in(specifier: SpecifierSet) -> tuple[Release, ...]:
    """Every known release the range admits (pre-releases only when the range names one)."""
    return tuple(Release(version) for version in specifier.filter(KNOWN_RELEASES))


DEFAULT_TARGET = Target.exact(LATEST_RELEASE, "default (latest release)", "Lightning")
# What a project with no pin, no installed Lightning and no code evidence is taken to run on:
# the latest release, marked as assumed (pins.resolve_target).
ASSUMED_SOURCE = "no pin found (the latest release)"
ASSUMED_TARGET = Target(
    (Release(LATEST_RELEASE),), f"Lightning {LATEST_RELEASE}", ASSUMED_SOURCE, assumed=True
)


def line_releases(first_2x: bool) -> tuple[Release, ...]:
    """The released versions of one line: pytorch-lightning 1.x, or lightning 2.0 - 2.6.6."""
    return tuple(
        Release(version)
        for version in KNOWN_RELEASES
        if version <= LATEST_RELEASE and (version.release[0] >= 2) == first_2x
    )
