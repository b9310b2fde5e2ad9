"""What the searches of the project resolution share: the sites found so far, how a site is made
and added (with its suppressions), which files hold a word, and the text searches that narrow
the files.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.ast_syntax import SourceText
from amp_clipfix.analysis.collect import (
    LineSuppressions,
    comment_suppressions,
    with_suppressions,
)
from amp_clipfix.analysis.derived import FUSED, TextReasons
from amp_clipfix.analysis.derived import _still_relevant as _still_relevant  # tests
from amp_clipfix.analysis.derived import _still_searched as _still_searched  # tests
from amp_clipfix.analysis.evaluate import Ctx, Evaluator, is_method
from amp_clipfix.analysis.facts import SOURCE_LINE, source_segment
from amp_clipfix.analysis.frame import RelevantCore
from amp_clipfix.analysis.recording import Recording, derive, python_texts
from amp_clipfix.analysis.relevance import (
    any_word,
    class_lines,
    files_naming,
    imported_modules,
    imports_by_file,
    relevant_core,
    subclass_files,
    top_level_names,
)
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import Absent, Lit, Opaque, clips, is_true, setting
from amp_clipfix.models import (
    Certainty,
    EntryId,
    FileSites,
    FitCall,
    Sharding,
    Site,
    SiteKind,
    Span,
    Through,
    UseId,
)
from amp_clipfix.paths import is_library
from amp_clipfix.records import field, record, replace


@record
class Found:
    """Sites and fit calls the resolution adds, per file."""

    sites: dict[Path, list[Site]]
    fits: dict[Path, list[FitCall]]
    drop: set[tuple[Path, Span, SiteKind]]  # run-time sites replaced by what decides them
    # Collected sites whose call's strategy the evaluator decided (resolve_entries.py).
    sharding: dict[tuple[Path, Span, SiteKind], Sharding] = field(default_factory=dict)
    # where each (kind, span, entry) sits in `sites` (add: one lookup, not a scan of the file's)
    places: dict[Path, dict[tuple[SiteKind, Span, EntryId | None], int]] = field(
        default_factory=dict
    )


class ResolutionBase:
    """What every search reads and adds to: the evaluator, the files' own sites, what was
    found so far."""

    def __init__(
        self,
        evaluator: Evaluator,
        files: dict[Path, FileSites],
        contents: Mapping[Path, bytes],
    ) -> None:
        self.ev = evaluator
        self.files = dict(files)  # a plugin's site takes its entry here (resolve_entries.py)
        self.contents = contents
        self.found = Found({}, {}, set())
        # Only these files can hold a module class whose optimizer is fused (relevance.py).
        self.refined: dict[tuple[Path, Span, SiteKind], list[Site]] = {}
        # the sites the candidates' callees made (resolve_callees.py), kept at the end
        self.callee_sites: set[tuple[Path, Span, SiteKind]] = set()
        self.calls_in: dict[int, list[ast.Call]] = {}  # see optimizers_in
        self.comments: dict[Path, dict[int, frozenset[str]]] = {}  # see suppressions
        self.sources: dict[Path, SourceText | None] = {}  # see source_text
        self.source_lines: dict[Path, list[str]] = {}  # see segment
        # Files the collection did not read, read for the `Fabric(...)` calls a clip reaches and
        # the plugins an entry is given; the entries read so far; plugin sites given the entry
        # of the call they are passed to (resolve_entries.py).
        self.read_paths = frozenset(files)
        self.unread: dict[Path, tuple[Site, ...]] = {}
        self.settled: set[EntryId] = set()
        self.linked: dict[tuple[Path, Span, SiteKind], list[Site]] = {}
        # plugins a list holds only where a store that may not run adds them (sequences.py)
        self.maybe_plugins: set[tuple[Path, Span, SiteKind]] = set()
        # Collected `**spread` sites of optimizer calls left to the optimizer search (their
        # dicts depend on the caller: resolve_refine.py `refine_fused_spread`).
        self.deferred: set[tuple[Path, Span, SiteKind]] = set()

    # -- which files a fused value reaches ------------------------------------------------------

    def may_build_fused(self) -> bool:
        """Whether the project may build a fused optimizer at all (OptimizerSearch decides it
        from the fused origins); here always."""
        return True

    def reached_among(self, paths: set[Path]) -> set[Path]:
        """`relevant_among`, none when no fused optimizer can be built: a fused value then
        reaches no optimizer, and no Trainer, Fabric or module class trains one."""
        if not paths or not self.may_build_fused():
            return set()
        return relevant_among(self.ev, paths)

    # -- output --------------------------------------------------------------------------------

    def suppressions(self, path: Path) -> dict[int, frozenset[str]]:
        """Line -> codes its comment silences, read as the collector reads them (a `#` inside
        a string is no comment); the module's text made only for a line holding a `#`."""
        if path not in self.comments:
            summary = self.ev.summary(path)
            found: dict[int, frozenset[str]] = {}
            if summary is not None:  # (no bound method: the resolution is let go at its end)
                found = LineSuppressions(summary.lines, partial(module_suppressions, summary))
            self.comments[path] = found
        return self.comments[path]

    def source_text(self, path: Path) -> SourceText | None:
        """The module's text, to give positions and code in libcst's terms as the collector
        does (one per file and resolution)."""
        if path not in self.sources:
            summary = self.ev.summary(path)
            self.sources[path] = (
                None if summary is None else SourceText(summary.source(), summary.tree)
            )
        return self.sources[path]

    def add(self, site: Site) -> None:
        if is_library(site.path):
            return
        site = with_suppressions(site, self.suppressions(site.path))
        sites = self.found.sites.setdefault(site.path, [])
        places = self.found.places.setdefault(site.path, {})
        index = places.setdefault((site.kind, site.span, site.entry), len(sites))
        if index == len(sites):
            sites.append(site)
            return
        old = sites[index]
        users = tuple(sorted(set(old.users) | set(site.users)))
        built_in = tuple(sorted(set(old.built_in) | set(site.built_in)))
        sites[index] = replace(old, users=users, built_in=built_in)

    def site(
        self,
        kind: SiteKind,
        value: object,
        detail: str,
        entry: EntryId | None = None,
        users: tuple[UseId, ...] = (),
        fixable: bool = True,
    ) -> Site | None:
        """A site at a literal (known) or at an expression decided at run time."""
        node = value.node  # type: ignore[attr-defined]
        summary: Summary = value.summary  # type: ignore[attr-defined]
        if not hasattr(node, "lineno"):
            return None
        function, cls = summary.enclosing(node)
        if isinstance(value, Lit):
            shared = kind is SiteKind.FUSED_OPTIMIZER
            return Site(
                kind,
                summary.path,
                summary.span(node),
                Certainty.KNOWN,
                detail,
                value.text,
                owner=cls.name if cls is not None else None,
                fixable=fixable,
                entry=entry,
                users=users,
                note=self.shared_note(summary, node, function) if shared else None,
            )
        return Site(
            kind,
            summary.path,
            summary.span(node),
            Certainty.RUNTIME,
            detail,
            None,
            owner=cls.name if cls is not None else None,
            fixable=False,
            entry=entry,
            users=users,
        )

    def spread_fused_sites(
        self, detail: str, node: ast.AST, ctx: Ctx, entry: EntryId | None = None
    ) -> list[Site]:
        """The sites of the `fused` values the dicts a `**spread` may be carry, each named
        `{detail} with fused=...`: certain only when every dict sets it to `True`."""
        dicts = self.ev.force(self.ev.ev(node, ctx))
        values: list[object] = []
        setting = 0
        for value in dicts:
            entries = getattr(value, "entries", None)
            if entries is not None and "fused" in entries:
                setting += 1
                values.extend(self.ev.force(entries["fused"]))
        decided = setting == len(dicts) and all(is_true(v) for v in values)
        sites = []
        for value in values:
            if not isinstance(value, (Lit, Opaque)) or (
                isinstance(value, Lit) and not is_true(value)
            ):
                continue
            if isinstance(value, Absent):
                continue  # a dict that may lack the key: not decided (above), no site of its own
            source = self.source_text(value.summary.path)
            if source is None or not hasattr(value.node, "lineno"):
                continue
            statement = innermost_statement(value.summary, value.node)
            indentation = "" if statement is None else source.indentation(statement.lineno)
            code = source.code(value.node, indentation=indentation)
            new = self.site(SiteKind.FUSED_OPTIMIZER, value, f"{detail} with fused={code}", entry)
            if new is None:
                continue
            if not decided:
                new = replace(new, certainty=Certainty.RUNTIME)
            sites.append(replace(new, through=Through.SPREAD_ENTRY))
        return sites

    def shared_note(self, summary: Summary, node: ast.AST, function: ast.AST | None) -> str | None:
        """A default or a factory's literal decides `fused` for every call of its function:
        say so when the project calls it from more than one place."""
        if function is None or isinstance(function, ast.Lambda) or is_method(summary, function):
            return None
        calls = self.ev.callers(function, self.ev.ctx_of(summary, function))
        if len(calls) < 2:
            return None
        where = sorted({f"{c.summary.path.name}:{call.lineno}" for call, c in calls})
        shown = ", ".join(where[:5]) + (", ..." if len(where) > 5 else "")
        return (
            f"fused is decided at {summary.path.name}:{summary.span(node).line} in "
            f"{getattr(function, 'name', 'a function')}(), which serves {len(calls)} calls "
            f"({shown}): changing it there changes every one of them"
        )

    def summaries_with(self, *words: bytes, among: set[Path] | None = None) -> Iterator[Summary]:
        matching = self.files_with(*words)
        for path in self.contents:
            if among is not None and path not in among:
                continue
            if path in matching and not is_library(path):
                summary = self.ev.summary(path)
                if summary is not None:
                    yield summary

    def files_with(self, *words: bytes) -> set[Path]:
        """Files holding any of `words`: each word's files are searched once per run (the
        evaluator keeps them for the trial and the final resolution alike)."""
        return set().union(*(self.ev.files_with(word) for word in words))

    def counts(self, kind: SiteKind, value: Lit) -> bool:
        """Whether a literal takes part in a finding of that kind: `fused=True`, a clip value
        above zero, a mixed precision."""
        if kind is SiteKind.FUSED_OPTIMIZER:
            return is_true(value)
        if kind is SiteKind.TRAINER_CLIP:
            return clips(value)
        precision = setting(value)
        return precision is not None and names.is_mixed_precision(precision)

    def clip_value(self, value: ast.expr | None, ctx: Ctx) -> str | None:
        """The clip value a call passes, followed to its literals (`self.max_norm` set from the
        Callback's constructor argument): a positive literal, None when decided at run time,
        "" when it never clips."""
        if value is None:
            return None
        values = self.ev.ev(value, ctx)
        literals = [v for v in values if isinstance(v, Lit)]
        if not values or len(literals) < len(values):
            return None
        positive = [literal for literal in literals if clips(literal)]
        if not positive:
            return ""
        return positive[0].text if len(positive) == len(literals) else None


def followed_here(call: ast.Call, ctx: Ctx) -> bool:
    """Whether the `**spreads` of an optimizer call hold the same dicts whoever calls its
    function: a dict display, a call, a choice, a name that is no parameter of the function;
    a parameter or an attribute (`**self.kwargs`) is bound per caller and class."""
    parameters = parameter_names(ctx.func)
    return all(
        isinstance(k.value, (ast.Dict, ast.Call, ast.IfExp))
        or (isinstance(k.value, ast.Name) and k.value.id not in parameters)
        for k in call.keywords
        if k.arg is None
    )


def parameter_names(function: ast.AST | None) -> set[str]:
    arguments = getattr(function, "args", None)
    if not isinstance(arguments, ast.arguments):
        return set()
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [a for a in (arguments.vararg, arguments.kwarg) if a is not None]
    return {argument.arg for argument in every}


def innermost_statement(summary: Summary, node: ast.AST) -> ast.stmt | None:
    current = summary.parent(node)
    while current is not None and not isinstance(current, ast.stmt):
        current = summary.parent(current)
    return current


def keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def segment(summary: Summary, node: ast.AST, lines: dict[Path, list[str]]) -> str:
    """`ast.get_source_segment` of the node, over the module's lines split once per resolution
    in `lines` (the stdlib splits the whole text, a character at a time, at every call: 22 ms
    for litgpt's four optimizer labels)."""
    if summary.path not in lines:
        lines[summary.path] = SOURCE_LINE.findall(summary.source())
    try:
        return source_segment(lines[summary.path], node) or "..."
    except (IndexError, ValueError):
        return "..."


def relevant_files(evaluator: Evaluator) -> set[Path]:
    """The files a fused value can reach (relevance.py), once per project."""
    if evaluator.relevant is None:
        contents = python_texts(evaluator.contents)
        known = today_relevant(evaluator.contents)
        if known is not None:  # a cold run's answer, from an entry and the files changed since
            rounds, defined, modules = known
            # a cold run's search made the pass when a file of the core defines a name
            evaluator.word_index.owed = any(defined.values())
        else:
            core = relevant_core(contents, FUSED, evaluator.word_index.files_by_words)
            rounds, defined = core.rounds, core.defined
            modules = {path: imported_modules(contents[path]) for path in rounds}  # once each
        imports = imports_by_file(rounds, contents, evaluator.by_module, modules)
        evaluator.relevant = set(rounds).union(*imports.values())
        if isinstance(evaluator.contents, Recording):
            # the files a module name leads to follow from the project's file list (every
            # query's key): the names are what an edit may change
            evaluator.relevant_core = (rounds, defined, modules)
    # noted for the queries (queries.DERIVED): what the core is made of
    if evaluator.relevant_core is not None:
        derive(evaluator.contents, ("relevant",), evaluator.relevant_core)
    return evaluator.relevant


def today_relevant(contents: Mapping[Path, bytes]) -> RelevantCore | None:
    """The relevance core known for today's files (`Reads.relevant`), None when not known."""
    if isinstance(contents, Recording) and contents.reads.relevant is not None:
        return contents.reads.relevant  # type: ignore[return-value]
    return None


def relevant_among(evaluator: Evaluator, paths: set[Path]) -> set[Path]:
    """Those of `paths` a fused value can reach. The text search over the whole project costs
    more than looking into a few files (a torch-sized tree with `fused` everywhere), so a few
    are all kept: the search only ever saves work, it never decides a finding. No file asked:
    none, and the search is not made for it."""
    if not paths:
        return set()
    if len(paths) <= FEW_FILES and evaluator.size > BIG_PROJECT:
        return set(paths)
    return paths & relevant_files(evaluator)


FEW_FILES = 20


BIG_PROJECT = 16_000_000  # bytes of Python: beyond it the text search costs about a second


def clipping_files(evaluator: Evaluator, paths: set[Path]) -> set[Path]:
    """Those of `paths` where a clip can take part: beside a fused optimizer (a Fabric's clip, a
    module's own), or in a Callback (which clips whatever module its Trainer fits)."""
    if len(paths) <= FEW_FILES and evaluator.size > BIG_PROJECT:
        return set(paths)
    callbacks = text_search(evaluator, "subclasses", "Callback", body=CLIPS_IN_CLASS)
    return relevant_among(evaluator, paths) | (paths & callbacks)


# A Callback clips only in its own methods (clip_call: the class around the call).
CLIPS_IN_CLASS = re.compile(rb"clip_gradients")


def text_search(
    evaluator: Evaluator,
    kind: str,
    *names: str,
    body: re.Pattern[bytes] | None = None,
    within: bytes | None = None,
) -> set[Path]:
    """Files found by a text search of relevance.py, once per run: the trial and the final
    resolution ask the same questions. `within`: a word every file the caller keeps holds (the
    search need not look at the others)."""
    key = (kind, names, body.pattern if body is not None else within)
    if key not in evaluator.text_searches:
        contents = python_texts(evaluator.contents)
        if kind == "subclasses":
            if evaluator.class_lines is None:
                evaluator.class_lines = class_lines(contents)
            base = names[0].encode("utf-8")
            found = subclass_files(contents, base, body, evaluator.class_lines)
        else:
            among = None if within is None else set(raw_files_with(contents, within))
            found = files_naming(contents, set(names), among)
        evaluator.text_searches[key] = found
    if isinstance(evaluator.contents, Recording):  # noted for the queries (queries.DERIVED)
        if key not in evaluator.text_reasons:
            evaluator.text_reasons[key] = search_reasons(evaluator, kind, names, key)
        noted = ("text_search", kind, names, key[2], within)  # key[2]: the body, else `within`
        derive(evaluator.contents, noted, evaluator.text_reasons[key])
    return evaluator.text_searches[key]


def raw_files_with(contents: Mapping[Path, bytes], word: bytes) -> list[Path]:
    return [path for path, data in contents.items() if word in data]


def search_reasons(
    evaluator: Evaluator, kind: str, names: tuple[str, ...], key: tuple[object, ...]
) -> TextReasons:
    """What a text search's answer is made of, for `_still_searched`: the files it found and
    the files whose text decided it (the classes deriving from the base, or the files writing
    one of the names), with the words that reach it (the derived class names, or those names
    and the top-level names of the files writing them)."""
    found = evaluator.text_searches[key]  # type: ignore[index]
    contents = python_texts(evaluator.contents)
    if kind == "subclasses":
        lines = evaluator.class_lines or {}  # made by the search
        wanted = {names[0].encode("utf-8")}  # the base and the classes deriving from it
        grew = True
        while grew:
            grew = False
            for defined in lines.values():
                for _, name, bases in defined:
                    if bases & wanted and name not in wanted:
                        wanted.add(name)
                        grew = True
        deciding = {
            path for path, defined in lines.items() if any(b & wanted for _, _, b in defined)
        }
        return frozenset(found), frozenset(deciding), frozenset(wanted)
    asked = {name.encode("utf-8") for name in names}
    pattern = any_word(asked)
    direct = {path for path, data in contents.items() if pattern and pattern.search(data)}
    words = asked.union(*(top_level_names(contents[path]) for path in direct))
    return frozenset(found), frozenset(direct), frozenset(words)


def module_suppressions(summary: Summary) -> dict[int, frozenset[str]]:
    """The module's suppressions from its text, as `source_text` makes it."""
    source = SourceText(summary.source(), summary.tree)
    return comment_suppressions(source, source.summary.tree)
