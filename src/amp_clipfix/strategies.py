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
# What `auto` tries, in order, for the clipping findings built on collected sites: safe fixes
# only, the one that keeps most first. `fixes/choose.py` follows it and `--help` is rendered from
# it. A rule with its own search offers its fixes, and `auto` takes the first safe one.
AUTO_ORDER = (Strategy.UNSCALE, Strategy.UNFUSE)
# What each strategy does, in a few words, for `--help`.
DOES = {
    Strategy.UNSCALE: "clips through the run's own GradScaler (keeps fp16, the fused kernel "
    "and clipping)",
    Strategy.UNFUSE: "sets fused=False (same numerics, slower step)",
    Strategy.MIGRATE: "writes a setting the target release renamed or removed in its accepted "
    "spelling (same behaviour)",
    Strategy.BF16: "rewrites the precision to bf16-mixed (Fabric; changes numerics)",
    Strategy.GUARD: "skips clipping where Lightning cannot clip (warns at run time)",
    Strategy.NATIVE: "replaces apex AMP with Lightning's native mixed precision (changes numerics)",
}


def auto_description() -> str:
    """What `auto` picks, from AUTO_ORDER: the sentence `--help` and the README say."""
    first, *rest = AUTO_ORDER
    picks = f"{first.value} where it applies" + "".join(f", else {s.value}" for s in rest)
    *unsafe, last = [s.value for s in DOES if not is_safe(s)]
    named = f"{', '.join(unsafe)} and {last}" if unsafe else last
    return (
        f"auto picks {picks} ({Strategy.MIGRATE.value} for a setting the target release "
        f"renamed); never an unsafe fix: {named} run only when named"
    )


def is_safe(strategy: Strategy) -> bool:
    """Safe fixes keep behaviour; `auto` only ever picks one of them."""
    return strategy in SAFE_STRATEGIES


def safety_label(strategy: Strategy) -> str:
    """`safe` or `unsafe`, the word outputs show next to a fix."""
    return "safe" if is_safe(strategy) else "unsafe"
