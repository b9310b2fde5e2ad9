"""What each fix strategy changes in behaviour, said once for the rules' pages, the fixes and
every output, and whether that makes it safe (ruff's fix safety: a safe fix keeps the program's
behaviour, an unsafe one changes it and runs only when asked for by name)."""

from __future__ import annotations

from amp_clipfix.models import Strategy

SAFETY = {
    Strategy.UNSCALE: (
        "keeps numerics, the fused kernel, the precision and clipping: a fused optimizer is "
        "unscaled with the run's own GradScaler and clipped with torch, as plain torch does"
    ),
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
    Strategy.MIGRATE: (
        "keeps behaviour: the same setting in the spelling the target Lightning or torch "
        "release accepts without an error or a deprecation warning"
    ),
    Strategy.NATIVE: (
        "changes numerics: NVIDIA apex's AMP (its opt level, e.g. O2's fp16 weights with fp32 "
        "master copies) is replaced by Lightning's native mixed precision (autocast and a "
        "GradScaler, fp32 weights)"
    ),
}

SAFE_STRATEGIES = frozenset({Strategy.UNSCALE, Strategy.UNFUSE, Strategy.MIGRATE})


def is_safe(strategy: Strategy) -> bool:
    """Safe fixes keep behaviour; `auto` only ever picks one of them."""
    return strategy in SAFE_STRATEGIES


def safety_label(strategy: Strategy) -> str:
    """`safe` or `unsafe`, the word outputs show next to a fix."""
    return "safe" if is_safe(strategy) else "unsafe"
