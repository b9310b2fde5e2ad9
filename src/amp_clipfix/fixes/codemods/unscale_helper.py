"""The functions that the unscale fix inserts into a user's module (DESIGN.md §1b).

Kept as source text so that the inserted code is exactly what the runtime tests run. They import
nothing private and nothing from Lightning (only torch, inside the function), so they work with
every release that has the hooks they serve: Fabric's `clip_gradients` (2.0+) and the
LightningModule's `clip_gradients` / `configure_gradient_clipping` (1.x and 2.x).
"""

from __future__ import annotations

from amp_clipfix.analysis import names
from amp_clipfix.helper_sources import FABRIC_HELPER_SOURCE, MODULE_HELPER_SOURCE

FABRIC_HELPER = names.FABRIC_UNSCALE_HELPER
MODULE_HELPER = names.MODULE_UNSCALE_HELPER
HELPERS = (FABRIC_HELPER, MODULE_HELPER)

HELPER_SOURCES = {FABRIC_HELPER: FABRIC_HELPER_SOURCE, MODULE_HELPER: MODULE_HELPER_SOURCE}

OVERRIDE_NAME = "configure_gradient_clipping"


def override_source(optimizer_idx: bool) -> str:
    """The `configure_gradient_clipping` override, in the signature of the target release
    (Lightning 1.x passes `optimizer_idx` after the optimizer). Laid out as ruff format and
    black leave it at any line length from 79 (a method's lines stay within 79 columns; the
    signature is split by its magic trailing comma)."""
    parameter = "    optimizer_idx,\n" if optimizer_idx else ""
    index = " optimizer_idx," if optimizer_idx else ""
    return f"""\
def configure_gradient_clipping(
    self,
    optimizer,
{parameter}    gradient_clip_val=None,
    gradient_clip_algorithm=None,
):
    # amp-clipfix: Lightning refuses to clip a fused optimizer under mixed
    # precision: clip it through the run's GradScaler; any other optimizer
    # goes to Lightning as before.
    value, algorithm = gradient_clip_val, gradient_clip_algorithm
    if getattr(optimizer, "_step_supports_amp_scaling", False):
        {MODULE_HELPER}(self, optimizer, value, algorithm)
    else:
        hook = super().configure_gradient_clipping
        hook(optimizer,{index} value, algorithm)
"""
