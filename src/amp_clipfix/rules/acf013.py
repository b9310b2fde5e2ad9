"""ACF013: FSDP with norm gradient clipping: Lightning's FSDP precision plugin refuses it.

A rule with its own search (CONTRIBUTING.md): a `Trainer(...)` call by qualified name whose
`strategy` is FSDP (the registered names, or an `FSDPStrategy(...)` it constructs) and whose
`gradient_clip_val` is positive with the default `gradient_clip_algorithm="norm"`. Under mixed
precision every release raises; from Lightning 2.1 the FSDP plugin is used for every precision.
No automatic fix: switching to `"value"` clips differently, and FSDP's own
`FullyShardedDataParallel.clip_grad_norm_` needs the wrapped root module (a person decides).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from amp_clipfix.analysis import names, strategy_names
from amp_clipfix.analysis.calls import (
    Keywords,
    keyword,
    library_calls,
    literals,
    with_spread_keywords,
)
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.kept_call_test import kept_call_files
from amp_clipfix.analysis.lightning_api import (
    CLIP_ALGORITHM_ARGUMENT,
    CLIP_VAL_ARGUMENT,
    PRECISION_ARGUMENT,
    STRATEGY_ARGUMENT,
)
from amp_clipfix.analysis.names import TRAINER_CLASSES, Shards, Side
from amp_clipfix.analysis.values import clips, settings, strings
from amp_clipfix.models import Certainty, Confidence, LightningPath, Site, SiteKind
from amp_clipfix.rules.base import Found, Queries, Rule

CODE = "ACF013"
WORDS = (b"gradient_clip_val",)  # only a Trainer that clips can refuse

FSDP_STRATEGIES = names.strategy_classes(Side.TRAINER, Shards.FSDP)
# Only a call that writes both (or spreads `**`) can be reported (`fsdp_norm_clip`).
FSDP_CLIP: Keywords | None = Keywords(STRATEGY_ARGUMENT, CLIP_VAL_ARGUMENT)
# The keywords `fsdp_norm_clip` reads: only these are taken from a `**` spread.
READ = (STRATEGY_ARGUMENT, CLIP_VAL_ARGUMENT, CLIP_ALGORITHM_ARGUMENT, PRECISION_ARGUMENT)
FIRST_ALWAYS = (2, 1)  # FSDPPrecision for every precision (verified on 2.4.0 and 2.6.6)

ERROR = (
    "MisconfigurationException: `gradient_clip_algorithm='norm'` is currently not supported "
    "for `FSDPPrecision`"
)

MESSAGE = (
    'FSDP with `gradient_clip_algorithm="norm"` (the default): Lightning\'s FSDP precision '
    "plugin raises \"`gradient_clip_algorithm='norm'` is currently not supported\""
)

BEFORE = """\
import lightning as L

trainer = L.Trainer(strategy="fsdp", precision="bf16-mixed", gradient_clip_val=1.0)
"""


def check(queries: Queries) -> Iterator[Found]:
    facts = queries.facts
    always = any(r.version.release[:2] >= FIRST_ALWAYS for r in facts.target.releases)
    for file in kept_call_files(facts, WORDS, TRAINER_CLASSES, FSDP_CLIP):
        for call, _ in library_calls(facts, file, TRAINER_CLASSES, FSDP_CLIP):
            found = fsdp_norm_clip(facts, file, call, always)
            spread = with_spread_keywords(facts, file, call, READ) if found is None else None
            if spread is not None:  # `Trainer(**cfg)`: the dict's entries, where written
                found = fsdp_norm_clip(facts, file, spread, always)
            if found is not None:
                yield found


def fsdp_norm_clip(
    facts: ProjectFacts, file: FileFacts, call: ast.Call, always: bool
) -> Found | None:
    strategy, clip = keyword(call, STRATEGY_ARGUMENT), keyword(call, CLIP_VAL_ARGUMENT)
    if strategy is None or clip is None or not is_fsdp(facts, file, strategy.value):
        return None
    clip_values, clip_runtime = literals(facts, file, clip.value)
    if not clip_runtime and not any(map(clips, clip_values)):
        return None
    algorithm = keyword(call, CLIP_ALGORITHM_ARGUMENT)
    norm, algorithm_runtime = True, False
    if algorithm is not None:
        written, algorithm_runtime = literals(facts, file, algorithm.value)
        qualified = facts.qualified_names(file, algorithm.value)
        named = {entry.algorithm for entry in map(names.entry_of, qualified) if entry}
        norm = "norm" in strings(written) or "norm" in named
        algorithm_runtime = algorithm_runtime and not qualified
        if not norm and not algorithm_runtime:
            return None
    precision = keyword(call, PRECISION_ARGUMENT)
    mixed, precision_runtime = False, False
    if precision is not None:
        values, precision_runtime = literals(facts, file, precision.value)
        mixed = bool(settings(values) & names.MIXED_PRECISIONS)
    if not (always or mixed or precision_runtime):
        return None
    sites: list[Site] = [
        file.site(SiteKind.TRAINER_STRATEGY, strategy, f"`{file.code(strategy)}`"),
        file.site(
            SiteKind.TRAINER_CLIP,
            clip,
            f"`{file.code(clip)}`",
            certainty=Certainty.RUNTIME if clip_runtime else Certainty.KNOWN,
        ),
    ]
    if algorithm is not None:
        sites.append(file.site(SiteKind.TRAINER_CLIP, algorithm, f"`{file.code(algorithm)}`"))
    if precision is not None and (mixed or precision_runtime):
        sites.append(file.site(SiteKind.TRAINER_PRECISION, precision, f"`{file.code(precision)}`"))
    decided = [
        what
        for what, runtime in (
            ("the clip value", clip_runtime and not any(map(clips, clip_values))),
            ("the clip algorithm", algorithm_runtime),
            ("the precision", precision_runtime and not mixed and not always),
        )
        if runtime
    ]
    review = (
        'clip with `gradient_clip_algorithm="value"`, or clip in the LightningModule with '
        "FSDP's `clip_grad_norm_` on the wrapped module"
    )
    if decided:
        return Found(
            tuple(sites),
            Confidence.REVIEW,
            review=f"{' and '.join(decided)} decided at run time; then {review}",
            condition=f"{' and '.join(decided)} make it clip by norm",
        )
    return Found(tuple(sites), Confidence.REVIEW, review=f"no automatic fix: {review}")


def is_fsdp(facts: ProjectFacts, file: FileFacts, node: ast.expr) -> bool:
    values, _ = literals(facts, file, node)
    if settings(values) & strategy_names.FSDP_STRATEGY_NAMES:
        return True
    return bool(facts.made_by(file, node) & FSDP_STRATEGIES)


RULE = Rule(
    lines=("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6"),
    code=CODE,
    name="fsdp-norm-clipping",
    message=MESSAGE,
    level="error",
    lightning_path=LightningPath.TRAINER,
    check=check,
    words=WORDS,
    needs=(b"fsdp", b"FSDP"),  # only an FSDP strategy refuses
    short='Lightning\'s FSDP precision plugin refuses `gradient_clip_algorithm="norm"`.',
    full=(
        'A `Trainer(...)` call (by qualified name) with an FSDP `strategy` (`"fsdp"`, '
        '`"fsdp_cpu_offload"`, 1.9\'s native names, or an `FSDPStrategy(...)` it '
        "constructs), a positive `gradient_clip_val` and `gradient_clip_algorithm` left at "
        '`"norm"`. On Lightning 2.0 and 1.9 only mixed precision (`16-mixed`, `bf16-mixed`, '
        "`16`, `bf16`) uses the FSDP precision plugin; from 2.1 every precision does. A value "
        "decided at run time makes the finding say what to check."
    ),
    why=(
        "torch's `clip_grad_norm_` over the local shards of an FSDP model computes a wrong "
        "norm, so Lightning's FSDP precision plugin refuses: `" + ERROR + "` (the class is "
        "`FSDPMixedPrecisionPlugin` on 2.0 and "
        "`FullyShardedNativeNativeMixedPrecisionPlugin` on 1.9). `gradient_clip_algorithm="
        '"value"` works; norm clipping needs FSDP\'s own '
        "`FullyShardedDataParallel.clip_grad_norm_` on the wrapped root module."
    ),
    example_before=BEFORE,
    example_after=BEFORE,
    fix_safety={},
)
