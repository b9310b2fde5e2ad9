"""What each fix strategy changes in behaviour, said once for the rules' pages, the fixes and
every output."""

from __future__ import annotations

from amp_clipfix.models import Strategy

SAFETY = {
    Strategy.BF16: (
        "changes numerics: trains in bfloat16 instead of float16 with loss scaling; "
        "needs bf16 hardware (Ampere or newer)"
    ),
    Strategy.UNFUSE: (
        "keeps numerics: the optimizer runs its foreach kernels instead of the fused one; "
        "the step is a little slower"
    ),
    Strategy.GUARD: (
        "changes behaviour: where Lightning cannot clip, clipping is skipped at run time "
        "(warned once), so training runs WITHOUT gradient clipping"
    ),
}
