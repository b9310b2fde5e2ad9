"""ACF011: `precision=16`, `"16"` or `"bf16"`: historical spellings Lightning 2.x warns about.

A rule with its own search and fixes (CONTRIBUTING.md): `Trainer(...)` / `Fabric(...)` calls by
qualified name and the trainer sections of LightningCLI / Hydra YAML configs (read by
analysis/config_sites.py). The literal becomes `"16-mixed"` / `"bf16-mixed"`, which Lightning 2.x
maps the old spellings to anyway; pytorch-lightning 1.9 rejects the new spellings, so the rewrite is
offered only where every release the project may run accepts them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

from amp_clipfix.analysis.calls import (
    CallTest,
    Keywords,
    keyword,
    library_calls,
    literals,
    written_place,
)
from amp_clipfix.analysis.candidate_answers import answers_by_file, answers_by_text
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.lightning_api import (
    PRECISION_ARGUMENT,
    TRAINER_ARGUMENTS_REMOVED_IN_2_0,
)
from amp_clipfix.analysis.names import FABRIC_CLASSES, TRAINER_CLASSES
from amp_clipfix.analysis.nodes import literal_text
from amp_clipfix.analysis.values import DictV, Lit, settings
from amp_clipfix.models import Certainty, Edit, LightningPath, Site, SiteKind, Span, Strategy
from amp_clipfix.rules.base import Found, Queries, Rule, RuleFix, safety
from amp_clipfix.sources.prefilter import LEGACY_PRECISION_WORDS, may_spell_old_value

CODE = "ACF011"
# The old values as they are written (a bare `precision` would make most Lightning files
# searched): `precision=16`, `"16"`, `'bf16'`, YAML's `precision: 16` / `bf16`. The prefilter
# holds them, as its gate starts this search only where one of them may be.
WORDS = LEGACY_PRECISION_WORDS
# `python_precision` reads `precision=`, `spread_precision` the `**` spreads: no other call.
PRECISION: Keywords | None = Keywords(PRECISION_ARGUMENT)
NEW_SPELLING = {"16": "16-mixed", "bf16": "bf16-mixed"}

MESSAGE = (
    '`precision=16` / `"16"` / `"bf16"` is a historical spelling: Lightning 2.x warns and '
    'maps it to `"16-mixed"` / `"bf16-mixed"`'
)

NOT_ON_1X = (
    "no rewrite: the project's pins admit pytorch-lightning 1.x too, which rejects "
    '"16-mixed" / "bf16-mixed"; rewrite it once the pin is 2.0 or newer'
)
ASSUMED = (
    "no rewrite: no pin names the Lightning release (2.6.6 is only assumed) and "
    'pytorch-lightning 1.x rejects "16-mixed" / "bf16-mixed"; pin Lightning or pass '
    "--lightning-version"
)
ELSEWHERE = "no rewrite: the value is not written in the call; rewrite it where it is set"
ONLY_1X_TRAINER = (
    "no rewrite: this Trainer also takes `{}`, which Lightning 2.0 removed: it runs on "
    'pytorch-lightning 1.x, which rejects "16-mixed" / "bf16-mixed"; migrate its arguments together'
)

FIX = (
    'writes `"16-mixed"` / `"bf16-mixed"`, the value Lightning 2.x converts the old '
    "spelling to, so precision, numerics and the GradScaler stay as they were"
)

BEFORE = """\
import lightning as L

trainer = L.Trainer(precision=16, max_epochs=10)
"""

AFTER = BEFORE.replace("precision=16", 'precision="16-mixed"')


def check(queries: Queries) -> Iterator[Found]:
    facts = queries.facts
    releases = facts.target.releases
    if all(release.is_1x for release in releases):
        return  # 1.x knows no other spelling
    fixable = not any(release.is_1x for release in releases) and not facts.target.assumed
    seen: set[tuple[Path, Span]] = set()  # a dict spread into several calls: one finding
    test = CallTest(facts.root, TRAINER_CLASSES | FABRIC_CLASSES, PRECISION)
    # each candidate's answer kept with what it read (candidate_answers.py)
    each = answers_by_file(facts, WORDS, test, lambda file: call_findings(facts, file, fixable))
    for found, spread in each:
        if spread and (found.sites[0].path, found.sites[0].span) in seen:
            continue
        if spread:
            seen.add((found.sites[0].path, found.sites[0].span))
        yield found
    yield from yaml_precision(facts, fixable)


def call_findings(facts: ProjectFacts, file: FileFacts, fixable: bool) -> list[tuple[Found, bool]]:
    """The findings of the Trainer / Fabric calls of one file, each with whether a `**` spread
    gave it (one dict spread into several calls is one finding: `check` keeps the first)."""
    findings: list[tuple[Found, bool]] = []
    for call, names in library_calls(facts, file, TRAINER_CLASSES | FABRIC_CLASSES, PRECISION):
        fabric = names <= FABRIC_CLASSES
        found = python_precision(facts, file, call, fabric, fixable)
        if found is not None:
            findings.append((found, False))
            continue
        findings.extend(
            (found, True) for found in spread_precision(facts, file, call, fabric, fixable)
        )
    return findings


def not_fixable(facts: ProjectFacts) -> str:
    return ASSUMED if facts.target.assumed else NOT_ON_1X


def python_precision(
    facts: ProjectFacts, file: FileFacts, call: ast.Call, fabric: bool, fixable: bool
) -> Found | None:
    precision = keyword(call, PRECISION_ARGUMENT)
    if precision is None:
        return None
    values, _ = literals(facts, file, precision.value)
    old = sorted(settings(values) & NEW_SPELLING.keys())
    if not old:
        return None
    kind = SiteKind.FABRIC_PRECISION if fabric else SiteKind.TRAINER_PRECISION
    node = precision.value
    site = file.site(kind, precision, f"`{file.code(precision)}`", value=old[0])
    written = isinstance(node, ast.Constant) and literal_text(node.value) in NEW_SPELLING
    if not fixable:
        return Found((site,), review=not_fixable(facts))
    removed = None if fabric else removed_argument(k.arg for k in call.keywords)
    if removed is not None:
        return Found((site,), review=ONLY_1X_TRAINER.format(removed))
    if not (written and len(old) == 1):
        return Found((site,), review=ELSEWHERE)
    edit = file.replace(node, quoted(file.code(node), NEW_SPELLING[old[0]]))
    return Found((site,), fixes=(RuleFix(Strategy.MIGRATE, (edit,), True, FIX, (site,)),))


def spread_precision(
    facts: ProjectFacts, file: FileFacts, call: ast.Call, fabric: bool, fixable: bool
) -> Iterator[Found]:
    """`Trainer(**cfg)` whose dict holds `precision` in an old spelling: a finding where the
    entry is written; the literal written there is rewritten (exact for every run-time value:
    the same setting in the new spelling), any other value is reported."""
    kind = SiteKind.FABRIC_PRECISION if fabric else SiteKind.TRAINER_PRECISION
    for spread in (k for k in call.keywords if k.arg is None):
        for value in facts.values(file, spread.value):
            if not isinstance(value, DictV):
                continue
            for item in value.entries.get(PRECISION_ARGUMENT, []):
                found = entry_place(facts, item)
                if found is None:
                    continue
                where, node, written, values = found
                lits = [v for v in values if isinstance(v, Lit)]
                old = sorted(settings(lits) & NEW_SPELLING.keys())
                if not old:
                    continue
                certain = all(isinstance(v, Lit) for v in values) and value.closed
                site = where.site(
                    kind,
                    node,
                    f"`{where.code(node)}`",
                    value=old[0],
                    certainty=Certainty.KNOWN if certain else Certainty.RUNTIME,
                )
                removed = None
                if not fabric:
                    removed = removed_argument([*value.entries, *(k.arg for k in call.keywords)])
                if not fixable:
                    yield Found((site,), review=not_fixable(facts))
                elif removed is not None:
                    yield Found((site,), review=ONLY_1X_TRAINER.format(removed))
                elif not (
                    isinstance(written, ast.Constant)
                    and literal_text(written.value) in NEW_SPELLING
                    and len(old) == 1
                ):
                    yield Found((site,), review=ELSEWHERE)
                else:
                    new = quoted(where.code(written), NEW_SPELLING[old[0]])
                    edit = where.replace(written, new)
                    fix = RuleFix(Strategy.MIGRATE, (edit,), True, FIX, (site,))
                    yield Found((site,), fixes=(fix,))


def removed_argument(arguments: Iterable[str | None]) -> str | None:
    """The first (by name) Trainer argument Lightning 2.0 removed among `arguments`: a Trainer
    given one runs on 1.x only, where the new spellings are refused."""
    return min(TRAINER_ARGUMENTS_REMOVED_IN_2_0.intersection(arguments), default=None)


def entry_place(
    facts: ProjectFacts, item: object
) -> tuple[FileFacts, ast.AST, ast.AST, list[object]] | None:
    """Where a spread dict's `precision` entry is written (its file, the node a site shows, the
    value's own node) and the values it holds: an entry of a dict written in the code, or a
    literal a record's field holds (`Trainer(**asdict(cfg))`: the field's default)."""
    from amp_clipfix.analysis.frame import Thunk  # an evaluated value: the evaluator made it

    if isinstance(item, Thunk):
        place = written_place(facts, item)
        if place is None:
            return None
        return place[0], place[1], item.expr, facts.evaluator.force([item])
    if isinstance(item, Lit):
        where = facts.file(item.summary.path)
        return None if where is None else (where, item.node, item.node, [item])
    return None


def quoted(written: str, value: str) -> str:
    """The new value in the string's own quotes (`'16'` -> `'16-mixed'`); an int gets `"`."""
    quote = written[-1] if written[-1:] in ("'", '"') else '"'
    return f"{quote}{value}{quote}"


def yaml_precision(facts: ProjectFacts, fixable: bool) -> Iterator[Found]:
    """`trainer: precision: 16` in LightningCLI and Hydra configs: the token is rewritten in
    place (quotes kept); a value shared through an anchor is reported, never rewritten. Each
    config's findings are a function of its bytes, `fixable` and whether the release is
    assumed: kept by them (`answers_by_text`)."""
    paths = sorted(facts.configs, key=str)
    detail = (fixable, facts.target.assumed)
    yield from answers_by_text(
        facts, paths, detail, lambda path: config_findings(facts, path, fixable)
    )


def config_findings(facts: ProjectFacts, path: Path, fixable: bool) -> Iterator[Found]:
    """The findings of one config (its text, its sites, `fixable`, `not_fixable`)."""
    from amp_clipfix.analysis.config_sites import precision_lines_beside
    from amp_clipfix.sources.text import SourceError

    document = facts.configs[path]
    if not may_spell_old_value(document.text):
        return  # composing it (ruamel) is most of a big tree's cost, for no site
    try:
        sites = facts.sites_of_config(path).sites
    except SourceError:  # the collection reports a broken config
        return
    beside: dict[int, str] | None = None  # the sections that run on 1.x only, read once
    for site in sites:
        if not (
            site.kind is SiteKind.TRAINER_PRECISION
            and site.certainty is Certainty.KNOWN
            and site.value in NEW_SPELLING
        ):
            continue
        if not (fixable and site.fixable):
            review = not_fixable(facts) if not fixable else "no rewrite: the value is shared"
            yield Found((site,), review=review)
            continue
        if beside is None:
            lines = {s.span.line for s in sites if s.kind is SiteKind.TRAINER_PRECISION}
            try:
                beside = precision_lines_beside(
                    document.text, TRAINER_ARGUMENTS_REMOVED_IN_2_0, lines
                )
            except SourceError:
                beside = {}
        if site.span.line in beside:
            yield Found((site,), review=ONLY_1X_TRAINER.format(beside[site.span.line]))
            continue
        token = token_of(document.text, site)
        new = NEW_SPELLING[site.value]
        edit = Edit(path, site.span, quoted(token, new) if token[-1:] in "'\"" else new)
        yield Found((site,), fixes=(RuleFix(Strategy.MIGRATE, (edit,), True, FIX, (site,)),))


def token_of(text: str, site: Site) -> str:
    lines = text.splitlines(keepends=True)
    return lines[site.span.line - 1][site.span.column : site.span.end_column]


RULE = Rule(
    lines=("lightning 2.0", "lightning 2.1 - 2.6"),
    code=CODE,
    name="legacy-precision-spelling",
    message=MESSAGE,
    level="warning",
    lightning_path=LightningPath.TRAINER,
    check=check,
    words=WORDS,
    needs=(b"precision",),  # the setting is named in code or config
    short='`precision=16` / `"bf16"` are historical spellings of `"16-mixed"` / `"bf16-mixed"`.',
    full=(
        '`precision=16`, `"16"` or `"bf16"` passed to `Trainer(...)` or `Fabric(...)` '
        "(known by qualified name; a value held in a variable is reported, a literal in the "
        "call is rewritten), and `precision: 16` / `bf16` in the trainer section of a "
        "LightningCLI or Hydra YAML config, on a project whose Lightning may be 2.x. The "
        "rewrite is offered only when every release the project's pins admit is 2.0 or newer: "
        'pytorch-lightning 1.9 rejects `"16-mixed"`. Nor is it offered for a Trainer (or a '
        "config's trainer section) that also takes an argument Lightning 2.0 removed (`gpus`, "
        "`auto_select_gpus`, `resume_from_checkpoint`, ...): that code runs on 1.x only, "
        "whatever the pins say (an example folder with its own older pin)."
    ),
    why_title="Why Lightning warns",
    why=(
        'Lightning 2.0 renamed the precision values: `16` and `"16"` became `"16-mixed"`, '
        '`"bf16"` became `"bf16-mixed"` (next to `"16-true"`, which trains in pure fp16). '
        "The old values still work but warn: `precision=16 is supported for historical "
        "reasons but its usage is discouraged. Please set your precision to 16-mixed "
        "instead!` The new spelling is the same setting without the warning."
    ),
    example_before=BEFORE,
    example_after=AFTER,
    fix_safety={
        Strategy.MIGRATE.value: safety(
            Strategy.MIGRATE,
            f"The default (`auto`), where every admitted release is Lightning 2.0 or newer: it "
            f"{FIX}.",
        ),
    },
)
