"""Which torch releases know the `torch.amp` spellings, and which warn on the old ones.

Verified from the released wheels' sources (torch/amp/, torch/cuda/amp/, torch/cpu/amp/):

| release | `torch.amp.autocast(device)` | `torch.amp.GradScaler(device)` | old spellings |
|---------|------------------------------|--------------------------------|---------------|
| < 1.12  | no (`torch.autocast`, 1.10)  | no                             | no warning    |
| 1.12    | yes                          | no                             | no warning    |
| 2.3     | yes                          | yes                            | no warning    |
| 2.4 +   | yes                          | yes                            | FutureWarning |

"Old spellings": `torch.cuda.amp.GradScaler`, `torch.cuda.amp.autocast`, `torch.cpu.amp.*`.

A `TorchTarget` is what a project runs on (one release, or every known release a range
admits) and where that was read, as `version.Target` is for Lightning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from packaging.version import Version

from amp_clipfix.records import record

if TYPE_CHECKING:
    from packaging.specifiers import SpecifierSet

LATEST_TORCH = Version("2.13.0")
INSTALLED_SOURCE = "installed distribution"  # a release read from the installed metadata
FIRST_AMP_AUTOCAST = (1, 12)  # torch/amp/autocast_mode.py
FIRST_AMP_GRAD_SCALER = (2, 3)  # torch/amp/grad_scaler.py
FIRST_DEPRECATION = (2, 4)  # torch.cuda.amp.GradScaler / autocast warn (FutureWarning)

# Minor lines 1.6 - 2.13 with a few patches each: enough for a range to be evaluated against
# releases that exist (only the line boundaries above change behaviour).
KNOWN_TORCH: tuple[Version, ...] = tuple(
    Version(f"{major}.{minor}.{patch}")
    for major, minors in ((1, range(6, 14)), (2, range(0, 14)))
    for minor in minors
    for patch in range(3)
)


def _line(version: Version) -> tuple[int, int]:
    major, minor = (*version.release, 0)[:2]
    return major, minor


@record(frozen=True)
class TorchTarget:
    """The torch a project runs on: the releases its pin admits, and where that was read."""

    releases: tuple[Version, ...]
    pin: str
    source: str
    assumed: bool = False  # no pin, no --torch-version, no torch installed: `ASSUMED_TORCH`

    @classmethod
    def exact(cls, version: Version, source: str) -> TorchTarget:
        return cls((version,), f"torch {version}", source)

    @property
    def version_label(self) -> str:
        """`2.13.0`, or the range as written without the package: `>=2.1,<2.5`."""
        if len(self.releases) == 1:
            return str(self.releases[0])
        return self.pin.split(" ", 1)[-1] if self.pin.startswith("torch ") else self.pin[5:]

    def describe(self) -> str:
        return f"{self.pin}: {self.source}" if self.assumed else f"{self.pin} from {self.source}"

    @property
    def warns_on_old_amp(self) -> bool:
        """A release it admits warns on `torch.cuda.amp.*` / `torch.cpu.amp.autocast`."""
        return any(_line(v) >= FIRST_DEPRECATION for v in self.releases)

    @property
    def has_amp_autocast(self) -> bool:
        """Every release it admits has `torch.amp.autocast(device_type, ...)`."""
        return all(_line(v) >= FIRST_AMP_AUTOCAST for v in self.releases)

    @property
    def has_amp_grad_scaler(self) -> bool:
        """Every release it admits has `torch.amp.GradScaler(device, ...)`."""
        return all(_line(v) >= FIRST_AMP_GRAD_SCALER for v in self.releases)


def torch_releases_in(specifier: SpecifierSet) -> tuple[Version, ...]:
    return tuple(specifier.filter(KNOWN_TORCH))


def parse_torch_version(text: str) -> Version:
    """`2.3`, `2.3.1`, `2.4.0+cu121` (the local label is dropped); ValueError otherwise."""
    from packaging.version import InvalidVersion

    shown = text.strip()
    try:
        version = Version(shown)
    except InvalidVersion:
        version = None
    if version is None or not shown[:1].isdigit() or len(version.release) > 3 or version.epoch:
        raise ValueError(f"not a torch version: {text!r} (expected X.Y or X.Y.Z, e.g. 2.3.1)")
    return Version(version.public)


DEFAULT_TORCH = TorchTarget.exact(LATEST_TORCH, "default (newest torch known)")
# A project with no torch pin and no torch installed next to amp-clipfix: the newest torch,
# marked as assumed; a rewrite that needs a given torch (ACF012) is then left for review.
ASSUMED_TORCH = TorchTarget(
    (LATEST_TORCH,), f"torch {LATEST_TORCH}", "no pin found (the newest torch known)", True
)
