"""ACF010: `Trainer(amp_backend=...)` / `amp_level=...`, removed in Lightning 2.0.

A rule with its own search and fixes (CONTRIBUTING.md): a `Trainer(...)` call known by its
qualified name, its `amp_backend` / `amp_level` keywords and their values. `"native"` (or no
backend) is the only AMP Lightning 2.x has, so removing the arguments keeps behaviour; apex is
a different implementation, so its removal is offered only by name (`--strategy native`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from amp_clipfix.analysis.calls import (
    Keywords,
    entry_removal_edits,
    keyword,
    library_call_files,
    library_calls,
    literals,
    removal_edits,
    written_place,
)
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.names import TRAINER_CLASSES
from amp_clipfix.analysis.nodes import literal_text
from amp_clipfix.analysis.values import DictV, Lit, strings
from amp_clipfix.models import (
    Certainty,
    Confidence,
    Edit,
    LightningPath,
    Site,
    SiteKind,
    Span,
    Strategy,
)
from amp_clipfix.rules.base import Found, Queries, Rule, RuleFix, safety
from amp_clipfix.sources.yaml import Mapping

CODE = "ACF010"
WORDS = (b"amp_backend", b"amp_level")
WORD_KEYS = ("amp_backend", "amp_level")
# The keywords a Trainer call can give this rule (`**` spreads aside): either one; a call writing
# neither gives nothing, whatever it calls, so its callee is not evaluated.
AMP: Keywords | None = Keywords(*WORD_KEYS, any_of=True)
FIRST_DEPRECATED = (1, 9)  # 1.9 warns; 2.0 removed both arguments (TypeError)

MESSAGE = (
    "`Trainer(amp_backend=...)` / `amp_level=...` were removed in Lightning 2.0: the Trainer "
    "raises TypeError (1.9 warns)"
)

REMOVE = (
    "removes `amp_backend` and `amp_level`: native AMP is the only AMP Lightning 2.x has and "
    "the default of 1.9, so the run keeps its precision and behaviour"
)

APEX = (
    '`amp_backend="apex"` trained with NVIDIA apex\'s AMP at its opt level (`amp_level`, '
    '"O2" by default in Lightning: fp16 weights with fp32 master copies and apex\'s loss '
    'scaler). Lightning 2.x has no apex: removing the arguments gives `precision="16-mixed"`, '
    "torch's autocast with a GradScaler and fp32 weights, which changes numerics, memory use "
    "and the checkpoints' optimizer state"
)

BEFORE = """\
import lightning as L

trainer = L.Trainer(precision="16-mixed", amp_backend="native", max_epochs=10)
"""

AFTER = """\
import lightning as L

trainer = L.Trainer(precision="16-mixed", max_epochs=10)
"""


def check(queries: Queries) -> Iterator[Found]:
    facts = queries.facts
    if not any(
        release.version.release[:2] >= FIRST_DEPRECATED for release in facts.target.releases
    ):
        return
    seen: set[tuple[Path, Span]] = set()  # a dict spread into several Trainers: one finding
    for file in library_call_files(facts, WORDS, TRAINER_CLASSES, AMP):
        for call, _ in library_calls(facts, file, TRAINER_CLASSES, AMP):
            found = amp_arguments(facts, file, call)
            if found is None:
                found = spread_amp_entries(facts, file, call)
            if found is not None and not {(s.path, s.span) for s in found.sites} <= seen:
                seen.update((s.path, s.span) for s in found.sites)
                yield found
    yield from yaml_amp_arguments(facts)


def amp_arguments(facts: ProjectFacts, file: FileFacts, call: ast.Call) -> Found | None:
    backend, level = keyword(call, "amp_backend"), keyword(call, "amp_level")
    drops = [k for k in (backend, level) if k is not None]
    if not drops:
        return None
    sites = tuple(
        file.site(SiteKind.TRAINER_AMP, k, f"`{file.code(k)}`", certainty_of(facts, file, k))
        for k in drops
    )
    edits = removal_edits(file, call, sorted(drops, key=lambda k: (k.lineno, k.col_offset)))
    values, runtime = literals(facts, file, backend.value) if backend else (set(), False)
    backends = {value.lower() for value in strings(values)}
    if "apex" in backends or runtime:
        review = (
            "the Trainer uses apex's AMP"
            if not runtime
            else "whether the Trainer uses apex's AMP is decided at run time"
        )
        fixes = (RuleFix(Strategy.NATIVE, edits, safe=False, safety=APEX),) if edits else ()
        return Found(
            sites,
            Confidence.REVIEW,
            review=f"{review}: {APEX}; decide whether native mixed precision is right",
            fixes=fixes,
        )
    fixes = (RuleFix(Strategy.MIGRATE, edits, safe=True, safety=REMOVE),) if edits else ()
    return Found(sites, fixes=fixes)


def spread_amp_entries(facts: ProjectFacts, file: FileFacts, call: ast.Call) -> Found | None:
    """`Trainer(**cfg)` whose dict (as the evaluator builds it: a display, `dict(...)`,
    `cfg["amp_backend"] = ...`, `.update`, `.setdefault`) holds `amp_backend` / `amp_level`: a
    finding at each place the entry is written. Certain when every such dict is closed and the
    value a literal; the entries are removed only when each one is a removable piece of code
    (a display entry, a `dict(...)` keyword, a statement of its own) and no other value could
    take the removed entry's place (closed dicts only, no `**` merge)."""
    sites: list[Site] = []
    removals: dict[int, tuple[FileFacts, ast.AST, list[ast.AST]]] = {}  # by container
    backends: set[str] = set()
    runtime, removable = False, True
    for spread in (k for k in call.keywords if k.arg is None):
        for value in facts.values(file, spread.value):
            if not isinstance(value, DictV):
                continue
            for key in WORD_KEYS:
                for item in value.entries.get(key, []):
                    place = written_place(facts, item)
                    if place is None:
                        runtime, removable = True, False
                        continue
                    where, node, removal = place
                    values = facts.evaluator.force([item])
                    literal = all(isinstance(v, Lit) for v in values) and bool(values)
                    known = literal and value.closed
                    runtime = runtime or not known
                    if key == "amp_backend":
                        backends.update(
                            (v.value.lower() if isinstance(v.value, str) else "")
                            if isinstance(v, Lit)
                            else "runtime"
                            for v in values
                        )
                    site = where.site(
                        SiteKind.TRAINER_AMP,
                        node,
                        f"`{where.code(node)}`",
                        certainty=Certainty.KNOWN if known else Certainty.RUNTIME,
                    )
                    if site not in sites:
                        sites.append(site)
                    if removal is not None and value.closed:
                        container, piece = removal
                        pieces = removals.setdefault(id(container), (where, container, []))[2]
                        if not any(p is piece for p in pieces):
                            pieces.append(piece)
                    else:
                        removable = False
    if not sites:
        return None
    groups = [removal_edits_of(*removal) for removal in removals.values()]
    fixable = (
        removable
        and bool(groups)
        and all(groups)
        and not any(hidden_default(where, container) for where, container, _ in removals.values())
    )
    edits: list[Edit] = [edit for group in groups for edit in group]
    unfixed = (
        None
        if fixable
        else "the entries cannot be removed exactly here (a `**` merge, a dict open to other "
        "keys, a `.setdefault` of the key, or an entry not written as its own statement, "
        "display entry or keyword)"
    )
    if "apex" in backends or "runtime" in backends or runtime:
        review = (
            "the Trainer uses apex's AMP"
            if "apex" in backends and not runtime
            else "whether the Trainer uses apex's AMP is decided at run time"
        )
        fixes = (RuleFix(Strategy.NATIVE, tuple(edits), False, APEX),) if fixable else ()
        return Found(
            tuple(sites),
            Confidence.REVIEW,
            review=f"{review}: {APEX}; decide whether native mixed precision is right",
            fixes=fixes,
            unfixed=unfixed,
        )
    fixes = (RuleFix(Strategy.MIGRATE, tuple(edits), True, REMOVE),) if fixable else ()
    return Found(tuple(sites), fixes=fixes, unfixed=unfixed)


def hidden_default(file: FileFacts, container: ast.AST) -> bool:
    """A `.setdefault("amp_backend", ...)` in the function (or module) that writes the entry:
    on a dict that holds the key it is not among the dict's values, and removing the entry
    would let it take effect."""
    scope = file.summary.enclosing(container)[0]
    return any(
        isinstance(node, ast.Call)
        and file.summary.enclosing(node)[0] is scope
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "setdefault"
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in WORD_KEYS
        for node in ast.walk(file.tree)
    )


def removal_edits_of(
    file: FileFacts, container: ast.AST, pieces: list[ast.AST]
) -> tuple[Edit, ...]:
    """The edits that remove all of a container's pieces at once (empty: not exactly)."""
    if isinstance(container, ast.Dict):
        names = {literal_text(p.value) for p in pieces if isinstance(p, ast.Constant)}
        return entry_removal_edits(file, container, names) if len(names) == len(pieces) else ()
    if isinstance(container, ast.Call):
        return removal_edits(file, container, [p for p in pieces if isinstance(p, ast.keyword)])
    if isinstance(container, ast.Assign):
        return statement_removal(file, container)
    return ()


def statement_removal(file: FileFacts, statement: ast.stmt) -> tuple[Edit, ...]:
    """The edit that removes a one-target statement standing alone on its lines, when its
    block keeps another statement."""
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return ()
    end = statement.end_lineno or statement.lineno
    first, last = file.line(statement.lineno), file.line(end)
    if first[: statement.col_offset].strip() or last[statement.end_col_offset or 0 :].strip():
        return ()
    if end >= len(file.source.line_starts):
        return ()  # the file's last line
    for parent in ast.walk(file.tree):
        for field_name in ("body", "orelse", "finalbody"):
            body = getattr(parent, field_name, None)
            if isinstance(body, list) and statement in body:
                if len(body) < 2:
                    return ()
                return (Edit(file.path, Span(statement.lineno, 0, end + 1, 0), ""),)
    return ()


def yaml_amp_arguments(facts: ProjectFacts) -> Iterator[Found]:
    """`amp_backend:` / `amp_level:` in the trainer section of a LightningCLI or Hydra config:
    each entry's own line is removed (a block mapping entry alone on its line that is not the
    section's last key; otherwise it is reported for a person)."""
    from amp_clipfix.analysis.config_sites import suppressions
    from amp_clipfix.sources.text import SourceError, line_starts
    from amp_clipfix.sources.yaml import children, compose_documents

    for path in sorted(facts.configs, key=str):
        text = facts.configs[path].text
        if not any(word.decode() in text for word in WORDS):
            continue
        try:
            roots = compose_documents(text)
        except SourceError:
            continue  # the collection reports a broken config
        starts = line_starts(text)
        pending, seen = list(roots), set()
        while pending:
            node = pending.pop()
            if id(node) in seen:
                continue
            seen.add(id(node))
            pending.extend(children(node))
            mapping = Mapping.of(node)
            if mapping is None:
                continue
            trainers = [
                Mapping.of(value) for key, (_, value) in mapping.items.items() if key == "trainer"
            ]
            target = mapping.scalar("_target_") or mapping.scalar("class_path")
            if target in TRAINER_CLASSES:
                trainers.append(mapping)
            for trainer in trainers:
                if trainer is not None:
                    found = yaml_found(path, text, starts, trainer, suppressions)
                    if found is not None:
                        yield found


def yaml_found(
    path: Path,
    text: str,
    starts: Sequence[int],
    trainer: Mapping,
    suppressions: Callable[[set[str]], frozenset[str] | None],
) -> Found | None:
    """The finding of one trainer section's amp keys, with its line edits when they apply."""
    own = [(key, value) for key, value in trainer.node.value if key.value in WORD_KEYS]
    if not own:
        return None
    sites: list[Site] = []
    edits: list[Edit] = []
    values: set[str] = set()
    for key, value in own:
        line = key.start_mark.line + 1
        end = value.end_mark
        line_text = text[starts[line - 1] : starts[line] if line < len(starts) else None]
        span = Span(line, key.start_mark.column, end.line + 1, end.column)
        detail = f"trainer {key.value}: {getattr(value, 'value', '')}"
        runtime = "${" in str(getattr(value, "value", ""))
        sites.append(
            Site(
                SiteKind.TRAINER_AMP,
                path,
                span,
                Certainty.RUNTIME if runtime else Certainty.KNOWN,
                detail,
                in_config=True,
                suppressed_codes=suppressions({line_text}),
            )
        )
        if key.value == "amp_backend":
            values.add("runtime" if runtime else str(value.value).lower())
        alone = not line_text[: key.start_mark.column].strip() and end.line + 1 == line
        if alone and not trainer.node.flow_style and len(starts) > line:
            edits.append(Edit(path, Span(line, 0, line + 1, 0), ""))
    if len(edits) != len(own) or len(own) == len(trainer.node.value):
        edits = []  # a flow mapping, a multi-line value, or the section would be left empty
    if values & {"apex", "runtime"}:
        fixes = (RuleFix(Strategy.NATIVE, tuple(edits), False, APEX),) if edits else ()
        review = (
            "the Trainer uses apex's AMP"
            if "apex" in values
            else ("whether the Trainer uses apex's AMP is decided at run time")
        )
        return Found(
            tuple(sites),
            Confidence.REVIEW,
            review=f"{review}: {APEX}; decide whether native mixed precision is right",
            fixes=fixes,
        )
    fixes = (RuleFix(Strategy.MIGRATE, tuple(edits), True, REMOVE),) if edits else ()
    return Found(tuple(sites), fixes=fixes)


def certainty_of(facts: ProjectFacts, file: FileFacts, node: ast.keyword) -> Certainty:
    _, runtime = literals(facts, file, node.value)
    return Certainty.RUNTIME if runtime else Certainty.KNOWN


RULE = Rule(
    lines=("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6"),
    code=CODE,
    name="trainer-removed-amp-arguments",
    message=MESSAGE,
    level="error",
    lightning_path=LightningPath.TRAINER,
    check=check,
    words=WORDS,
    short="`Trainer(amp_backend=...)` and `amp_level=...` no longer exist in Lightning 2.x.",
    full=(
        "A `Trainer(...)` call (known by its qualified name, through any import or alias) "
        "that passes `amp_backend` or `amp_level`, on a project whose Lightning is 1.9 or "
        'newer. `amp_backend="native"` (or `amp_level` without apex, which 1.x refused '
        'anyway) is removed; `amp_backend="apex"`, or a backend decided at run time, is a '
        "review finding: apex's AMP is not Lightning's native mixed precision. The same keys "
        "in the trainer section of a LightningCLI or Hydra YAML config are found too; their "
        "lines are removed when each entry stands alone on its line. A `Trainer(**cfg)` is "
        'followed into its dict (a display, `dict(...)`, `cfg["amp_backend"] = ...`, '
        "`.update`, `.setdefault`): the entry is reported where it is written, and a native "
        "one is removed only from a dict closed to other keys, when it is a display entry, a "
        "`dict(...)` keyword or a statement of its own."
    ),
    why=(
        "Lightning 2.0 removed apex support and with it both arguments: "
        '`Trainer(amp_backend="native")` raises `TypeError: Trainer.__init__() got an '
        "unexpected keyword argument 'amp_backend'` on 2.0.9.post0 and 2.6.6; "
        "pytorch-lightning 1.9.5 warns that they are deprecated. Native AMP was already the "
        f"default backend. {APEX}."
    ),
    example_before=BEFORE,
    example_after=AFTER,
    fix_safety={
        Strategy.MIGRATE.value: safety(
            Strategy.MIGRATE,
            f'The default (`auto`) for `amp_backend="native"` and `amp_level` alone: it {REMOVE}.',
        ),
        Strategy.NATIVE.value: safety(
            Strategy.NATIVE,
            'For `amp_backend="apex"` (or a backend decided at run time): removes '
            f"`amp_backend` and `amp_level`. {APEX}.",
        ),
    },
)
