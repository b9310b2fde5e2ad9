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
}

SAFE_STRATEGIES = frozenset({Strategy.UNSCALE, Strategy.UNFUSE})
# What `auto` tries, in order: safe fixes only, the one that keeps most first. `fixes/choose.py`
# follows it and `--help` is rendered from it.
AUTO_ORDER = (Strategy.UNSCALE, Strategy.UNFUSE)
# What each strategy does, in a few words, for `--help`.
DOES = {
    Strategy.UNSCALE: "clips through the run's own GradScaler (keeps fp16, the fused kernel "
    "and clipping)",
    Strategy.UNFUSE: "sets fused=False (same numerics, slower step)",
    Strategy.BF16: "rewrites the precision to bf16-mixed (Fabric; changes numerics)",
    Strategy.GUARD: "skips clipping where Lightning cannot clip (warns at run time)",
}


def auto_description() -> str:
    """What `auto` picks, from AUTO_ORDER: the sentence `--help` and the README say."""
    first, *rest = AUTO_ORDER
    picks = f"{first.value} where it applies" + "".join(f", else {s.value}" for s in rest)
    unsafe = " and ".join(s.value for s in DOES if not is_safe(s))
    return f"auto picks {picks}; never an unsafe fix: {unsafe} run only when named"


def is_safe(strategy: Strategy) -> bool:
    """Safe fixes keep behaviour; `auto` only ever picks one of them."""
    return strategy in SAFE_STRATEGIES


def safety_label(strategy: Strategy) -> str:
    """`safe` or `unsafe`, the word outputs show next to a fix."""
    return "safe" if is_safe(strategy) else "unsafe"
