"""The Lightning release the code targets: it decides whether bf16 is a fix on the Trainer path.

Read from the installed distribution's metadata when there is one (Lightning is never imported),
else the latest release this tool knows.
"""

from __future__ import annotations

import re
from importlib import metadata

Version = tuple[int, int, int]

LATEST_RELEASE: Version = (2, 6, 6)
DISTRIBUTIONS = ("lightning", "pytorch-lightning", "lightning-fabric")


def parse_version(text: str) -> Version:
    """`2.6`, `2.6.6` or `2.6.6.post1` -> (2, 6, 6); raises ValueError for anything else."""
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?((?:rc|a|b|\.|\+|-)[\w.+-]*)?", text.strip())
    if match is None:
        raise ValueError(f"not a Lightning version: {text!r} (expected X.Y or X.Y.Z)")
    major, minor, patch, _suffix = match.groups()
    return int(major), int(minor), int(patch or 0)


def installed_version() -> Version | None:
    for distribution in DISTRIBUTIONS:
        try:
            return parse_version(metadata.version(distribution))
        except (metadata.PackageNotFoundError, ValueError):
            continue
    return None


def resolve_version(requested: str | None) -> tuple[Version, str]:
    """The target version and where it came from, for the `check` output."""
    if requested:
        return parse_version(requested), "--lightning-version"
    installed = installed_version()
    if installed is not None:
        return installed, "installed distribution"
    return LATEST_RELEASE, "latest known release"


def format_version(version: Version) -> str:
    return ".".join(map(str, version))


def trainer_fails_without_scaler(version: Version) -> bool:
    """Released Lightning (<= 2.6.6) refuses to clip fused optimizers under any MixedPrecision;
    master (PR #21436) only when a GradScaler is present."""
    return version <= LATEST_RELEASE
