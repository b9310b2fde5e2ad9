"""A cheap byte-level test that decides which files need parsing at all.

Every site has a tell-tale word in its file: a fused optimizer the word `fused` (as keyword or
dict key), the others a Lightning name (`Fabric`, `Trainer`, `...Precision`, `LightningModule`)
or a clip keyword. A finding always needs a fused optimizer, so a project in which no file has
a fused site needs nothing else parsed. The tests check that results with and without this
prefilter are identical.
"""

from __future__ import annotations

import re

FUSED_WORD = b"fused"
SITE_WORDS = (
    FUSED_WORD,
    b"clip_gradients",
    b"gradient_clip_val",
    b"Trainer",
    b"Fabric",
    b"Precision",
    b"LightningModule",
)


def may_have_fused_optimizer(data: bytes) -> bool:
    return FUSED_WORD in data


def may_have_sites(data: bytes) -> bool:
    return any(word in data for word in SITE_WORDS)


def may_define_class(data: bytes, name: str) -> bool:
    """Whether the file may define class `name` (a base class of a LightningModule)."""
    return re.search(rb"\bclass\s+" + re.escape(name.encode()) + rb"\b", data) is not None
