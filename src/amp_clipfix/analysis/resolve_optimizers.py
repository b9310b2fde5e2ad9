"""Optimizers built outside the module class's own hook: factories and their `**kwargs`, mixins and
base classes, `functools.partial` / lambdas, and the optimizers of files that clip on a Fabric.
"""

from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from collections.abc import Iterator, Mapping
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.ast_syntax import is_sole_argument
from amp_clipfix.analysis.evaluate import Ctx, Evaluator
from amp_clipfix.analysis.fused_origins import FusedOrigins, fused_origins, project_modules
from amp_clipfix.analysis.names import Kind
from amp_clipfix.analysis.nodes import walk
from amp_clipfix.analysis.recording import PREDICATES, passes, raw, tested
from amp_clipfix.analysis.relevance import may_define_subclass
from amp_clipfix.analysis.resolve_base import (
    ResolutionBase,
    followed_here,
    innermost_statement,
    relevant_among,
    segment,
)
from amp_clipfix.analysis.values import ClsV, Ext, Opaque, Opt, is_true
from amp_clipfix.models import Certainty, ClassRef, FileSites, Site, SiteKind, Span, UseId
from amp_clipfix.paths import is_library
from amp_clipfix.records import record, replace

# Files whose classes may be module classes: they name Lightning or build optimizers in the hook
# (a module class deriving from a project base in a file with neither is found through its hook).
CLASS_WORDS = (b"LightningModule", b"configure_optimizers", b"lightning")

# `may_hold_module_class`'s test of a file's text, as a noted text test (recording.tested)
DEFINES_SUBCLASS = (("fn", "may_define_subclass"),)
PREDICATES["may_define_subclass"] = lambda path, data: may_define_subclass(data)


def within(inner: Span, outer: Span) -> bool:
    return (inner.line, inner.column) >= (outer.line, outer.column) and (
        inner.end_line,
        inner.end_column,
    ) <= (outer.end_line, outer.end_column)


@record(frozen=True)
class FusedStarts:
    """A file's fused-optimizer sites sorted by where they start (`fused_within`)."""

    file: FileSites  # the entry of `files` it was made from
    starts: list[tuple[int, int]]
    ordered: list[tuple[tuple[int, int], int, Site]]  # (start, place in the file, site)


class OptimizerSearch(ResolutionBase):
    """The fused optimizers of module classes and of files that clip on a Fabric."""

    def __init__(
        self, evaluator: Evaluator, files: dict[Path, FileSites], contents: Mapping[Path, bytes]
    ) -> None:
        super().__init__(evaluator, files, contents)
        self.fused_starts: dict[Path, FusedStarts] = {}
        self.fused_possible: bool | None = None  # see may_build_fused

    origins = FusedOrigins(escapes=True)  # until module_optimizers asks: every method counts

    # -- optimizers ----------------------------------------------------------------------------

    def module_optimizers(self) -> None:
        """For every class that is (or may be fitted as) a module: the optimizers its methods
        and those of its project bases build, wherever their `fused` is decided. The origins'
        gate comes before the text relevance: it costs a few files, the relevance a pass over
        every text (NeMo: 0.75 s), and when it closes no class is read at all."""
        candidates = self.files_with(*CLASS_WORDS)
        if not candidates or not self.may_build_fused():
            return  # no function that may give a site builds an optimizer: no class is read
        among = relevant_among(self.ev, candidates)
        if not among:
            return
        # A module whose classes name no base holds no module class: its text says so, and
        # its tree is never made (kept to the run's end, NeMo's 555 such files were 50 MB).
        among = {path for path in among if self.may_hold_module_class(path)}
        for summary in self.summaries_with(*CLASS_WORDS, among=among):
            for node in summary.classes():
                self.class_optimizers(ClsV(node, summary))

    def may_build_fused(self) -> bool:
        """Whether the project may build a fused optimizer: the collector holds an optimizer
        site, a fused origin leaves its function, or a function that holds one builds an
        optimizer (fused_origins.py). Asked once per resolution, by the first search that
        needs it; when not, no search looks for the files a fused value reaches."""
        if self.fused_possible is None:
            modules = project_modules(self.ev.by_module)
            self.origins = fused_origins(self.files, self.ev.contents, self.ev.summary, modules)
            self.fused_possible = self.origins.escapes or self.holders_build()
        return self.fused_possible

    def holders_build(self) -> bool:
        """Whether a function that holds a fused origin builds an optimizer, when no origin
        leaves its function (only those functions can build a fused one). `class_optimizers`
        reads a method's calls in the method's own module whichever class's MRO it is found in
        (`optimizers_in` asks each call in its own place), so when none of them builds an
        optimizer, no class can gain a site and the classes need not be listed at all (NeMo:
        one holder, an optimizer's own `__init__`, against ~660 modules parsed to list their
        classes); nor can a Fabric's code, nor a Trainer train one."""
        by_file: dict[Path, set[tuple[int, int]]] = {}
        for path, line, column in self.origins.holders:
            by_file.setdefault(path, set()).add((line, column))
        for path in sorted(by_file, key=str):
            summary = self.ev.summary(path)
            if summary is None:
                return True  # not read here: the search decides as before
            for function in walk(summary.tree):
                if (
                    isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and (function.lineno, function.col_offset) in by_file[path]
                ):
                    ctx = self.ev.ctx_of(summary, function)
                    if next(self.optimizers_in(function, ctx), None) is not None:
                        return True
        return False

    def may_hold_module_class(self, path: Path) -> bool:
        """Whether a file may define a class that derives from anything; only a Python file's
        text is tested (a notebook's is JSON). Noted as a test of its text, not a read (an
        edit that keeps its answer asks nothing again): the file is read when it says yes."""
        data = raw(self.ev.contents).get(path)
        if data is None or path.suffix != ".py":
            return True
        return tested(
            self.ev.contents, path, DEFINES_SUBCLASS, passes(DEFINES_SUBCLASS, data, path)
        )

    def class_optimizers(self, cls: ClsV) -> None:
        """A module class's optimizers (its mixins' and bases' methods included)."""
        if not self.ev.derives_from(cls, names.LIGHTNING_MODULE_CLASSES):
            return
        overridden: set[str] = set()
        for klass in self.ev.mro(cls):
            if not isinstance(klass, ClsV):
                continue
            # The override goes where the building method is, when that class is a module
            # (it precedes LightningModule in every MRO); a mixin's: into the module class.
            home = klass if self.ev.derives_from(klass, names.LIGHTNING_MODULE_CLASSES) else cls
            built_in = (ClassRef(home.summary.path, home.summary.span(home.node), home.node.name),)
            methods = [
                method
                for method in klass.node.body
                if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
            ]
            for method in methods:
                if method.name in overridden:
                    continue  # a class before it in the MRO overrides it: never run for `cls`
                if not self.origins.may_yield(klass.summary.path, method):
                    continue  # no fused value can reach its calls (fused_origins.py)
                ctx = self.ev.ctx(klass.summary, method, klass.node)
                for opt in self.optimizers_in(method, ctx):
                    self.optimizer_sites(opt, (cls.key,), built_in)
            overridden.update(method.name for method in methods)

    def optimizers_in(self, function: ast.AST, ctx: Ctx) -> Iterator[Opt]:
        """What the calls in a function build; a base class's method is shared by every module
        class that derives from it, so its calls are listed once and their values memoised."""
        key = id(function)
        if key not in self.calls_in:
            self.calls_in[key] = [
                node
                for node in walk(function)
                if isinstance(node, ast.Call) and self.may_build(node)
            ]
        for node in self.calls_in[key]:
            for value in self.ev.ev(node, self.ev.ctx_of(ctx.summary, node)):
                if isinstance(value, Opt):
                    yield value

    def may_build(self, call: ast.Call) -> bool:
        """Cheap test before evaluating a call: a method `self.log(...)` builds nothing."""
        func = call.func
        return not (isinstance(func, ast.Attribute) and func.attr in NEVER_OPTIMIZERS)

    def fused_within(self, path: Path, span: Span) -> list[Site]:
        """The file's own fused-optimizer sites inside `span`, in the file's order, found by
        their start in a sorted index (a file of thousands of factories compared every site
        with every optimizer call). The index follows `self.files`, whose entries may change."""
        file = self.files.get(path)
        if file is None:
            return []
        starts = self.fused_starts.get(path)
        if starts is None or starts.file is not file:
            ordered = sorted(
                ((site.span.line, site.span.column), index, site)
                for index, site in enumerate(file.sites)
                if site.kind is SiteKind.FUSED_OPTIMIZER
            )
            starts = FusedStarts(file, [start for start, _, _ in ordered], ordered)
            self.fused_starts[path] = starts
        low = bisect_left(starts.starts, (span.line, span.column))
        high = bisect_right(starts.starts, (span.end_line, span.end_column))
        inside = [
            (index, site) for _, index, site in starts.ordered[low:high] if within(site.span, span)
        ]
        return [site for _, site in sorted(inside, key=lambda pair: pair[0])]

    def optimizer_sites(
        self, opt: Opt, users: tuple[UseId, ...], built_in: tuple[ClassRef, ...] = ()
    ) -> None:
        """Sites where the optimizer's `fused` is decided, unless the file's collector has
        them already (then they only learn who uses them)."""
        if is_library(opt.summary.path):
            return
        collected = [
            site
            for site in self.fused_within(opt.summary.path, opt.summary.span(opt.call))
            if (site.path, site.span, site.kind) not in self.deferred
        ]
        if collected:  # the collector has this call; refine_runtime_sites follows its value
            for site in collected:
                key = (site.path, site.span, site.kind)
                for new in self.refined.get(key, []) if key in self.found.drop else [site]:
                    self.add(
                        replace(
                            new,
                            users=tuple(sorted({*new.users, *users})),
                            built_in=tuple(sorted({*new.built_in, *built_in})),
                        )
                    )
            return
        if self.spread_optimizer_sites(opt, users, built_in):
            return
        interesting = [v for v in opt.fused if isinstance(v, Opaque) or is_true(v)]
        decided = all(is_true(v) for v in opt.fused)
        for value in interesting:
            name = call_name(opt.call)
            code = segment(value.summary, value.node, self.source_lines)
            detail = f"{name}(fused={code})"
            found = self.site(SiteKind.FUSED_OPTIMIZER, value, detail, users=users)
            if found is not None:
                found = replace(found, built_in=built_in)
                if not decided:
                    found = replace(found, certainty=Certainty.RUNTIME)
                self.add(found)

    def spread_optimizer_sites(
        self, opt: Opt, users: tuple[UseId, ...], built_in: tuple[ClassRef, ...]
    ) -> bool:
        """An optimizer call in a file the collection did not read whose `fused` comes from
        `**spreads` that hold the same dicts whoever calls: the sites the refinement makes of
        the same spreads in a file it read (resolve_refine.py), so that a result never depends
        on which files were read. False for any other call."""
        call = opt.call
        spreads = [keyword for keyword in call.keywords if keyword.arg is None]
        ctx = self.ev.ctx_of(opt.summary, call)
        if not spreads or any(k.arg == "fused" for k in call.keywords):
            return False
        if not followed_here(call, ctx):
            return False
        source = self.source_text(opt.summary.path)
        if source is None:
            return False
        statement = innermost_statement(opt.summary, call)
        indentation = "" if statement is None else source.indentation(statement.lineno)
        name = source.code(call.func, indentation=indentation)
        made_by = self.ev.ev(call.func, ctx)
        if call.args and any(
            isinstance(v, Ext) and names.kind_of(v.qname) is Kind.PARTIAL for v in made_by
        ):  # `partial(AdamW, **kw)`, named as the collector names it
            first = call.args[0]
            name = f"partial({source.code(first, is_sole_argument(call, first), indentation)})"
        for spread in spreads:
            detail = f"{name}({source.argument_code(spread, indentation)})"
            for found in self.spread_fused_sites(detail, spread.value, ctx):
                self.add(replace(found, users=users, built_in=built_in))
        return True

    def fabric_optimizers(self) -> None:
        """A file that clips on a Fabric: the optimizers its code builds, wherever."""
        paths = {
            site.path
            for sites in (
                *(f.sites for f in self.files.values()),
                *self.found.sites.values(),
            )
            for site in sites
            if site.kind is SiteKind.FABRIC_CLIP
        }
        for path in sorted(self.reached_among(paths)):
            summary = self.ev.summary(path)
            if summary is None:
                continue
            for node in walk(summary.tree):
                if isinstance(node, ast.Call) and self.may_build(node):
                    for value in self.ev.ev(node, self.ev.ctx_of(summary, node)):
                        if isinstance(value, Opt):
                            self.optimizer_sites(value, (UseId(path),))


NEVER_OPTIMIZERS = frozenset(
    {"log", "log_dict", "parameters", "named_parameters", "view", "size", "to", "item"}
)


def call_name(call: ast.Call) -> str:
    try:
        return ast.unparse(call.func)
    except Exception:  # noqa: BLE001 - only a label
        return "optimizer"
