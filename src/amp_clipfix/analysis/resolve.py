"""The per-project resolution: sites the per-file collector cannot see alone.

Over the files' summaries (summary.py) and the evaluator (evaluate.py) it
- refines sites decided at run time in their own file (`fused=self.hparams.fused`,
  `Trainer(**cfg)`, `Fabric(precision=precision)`) to the literals that decide them: an
  `__init__` default, a dict entry, a module constant, a factory's argument;
- finds optimizers built elsewhere (factories and their `**kwargs`, mixins and base classes,
  `functools.partial` / lambdas passed into `__init__`, `getattr(torch.optim, name)`, any call
  passing `fused` whose callee cannot be followed) for each module class and each file that
  clips on a Fabric;
- finds Trainer subclasses configured in `super().__init__(...)`, clipping in Callbacks and in
  `super().configure_gradient_clipping(...)`, and Fabric clips whose receiver is a parameter;
- follows `trainer.fit(model, ...)` to the Trainer and the module class it trains.
Library code (site-packages, Lightning's own package) is never a user site.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.ast_syntax import SourceText
from amp_clipfix.analysis.collect import (
    comment_suppressions,
    is_clip_positive,
    is_hook_clip_argument,
    with_suppressions,
)
from amp_clipfix.analysis.evaluate import (
    CALLBACK_CLASSES,
    Ctx,
    Evaluator,
    is_method,
    literal_of,
    super_init_call,
)
from amp_clipfix.analysis.nodes import child_nodes, walk
from amp_clipfix.analysis.relevance import (
    class_lines,
    files_naming,
    fused_relevant_files,
    subclass_files,
)
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import (
    ClsV,
    DictV,
    Ext,
    FabricV,
    Fn,
    Inst,
    LambdaV,
    Lit,
    ModuleV,
    Opaque,
    Opt,
    TrainerV,
    TupleV,
)
from amp_clipfix.models import (
    Certainty,
    ClassRef,
    ConfigModel,
    EntryId,
    FileSites,
    FitCall,
    Site,
    SiteKind,
    Span,
    Through,
    UseId,
)
from amp_clipfix.paths import is_library

# Values that are surely no Fabric: a receiver holding only these never clips on one.
NOT_A_FABRIC = (ModuleV, ClsV, Fn, LambdaV, Lit, DictV, TupleV, TrainerV, Opt)

# Files whose classes may be module classes: they name Lightning or build optimizers in the hook
# (a module class deriving from a project base in a file with neither is found through its hook).
CLASS_WORDS = (b"LightningModule", b"configure_optimizers", b"lightning")


@dataclass
class Found:
    """Sites and fit calls the resolution adds, per file."""

    sites: dict[Path, list[Site]]
    fits: dict[Path, list[FitCall]]
    drop: set[tuple[Path, Span, SiteKind]]  # run-time sites replaced by what decides them


class Resolution:
    def __init__(
        self,
        evaluator: Evaluator,
        files: dict[Path, FileSites],
        contents: dict[Path, bytes],
    ) -> None:
        self.ev = evaluator
        self.files = files
        self.contents = contents
        self.found = Found({}, {}, set())
        # Only these files can hold a module class whose optimizer is fused (relevance.py).
        self.refined: dict[tuple[Path, Span, SiteKind], list[Site]] = {}
        self.calls_in: dict[int, list[ast.Call]] = {}  # see optimizers_in
        self.comments: dict[Path, dict[int, frozenset[str]]] = {}  # see suppressions

    # -- output --------------------------------------------------------------------------------

    def suppressions(self, path: Path) -> dict[int, frozenset[str]]:
        """Line -> codes its comment silences, read as the collector reads them (a `#` inside
        a string is no comment)."""
        if path not in self.comments:
            summary = self.ev.summary(path)
            found: dict[int, frozenset[str]] = {}
            if summary is not None:
                found = comment_suppressions(
                    SourceText(summary.source(), summary.tree), summary.tree
                )
            self.comments[path] = found
        return self.comments[path]

    def add(self, site: Site) -> None:
        if is_library(site.path):
            return
        site = with_suppressions(site, self.suppressions(site.path))
        sites = self.found.sites.setdefault(site.path, [])
        for index, old in enumerate(sites):
            if (old.kind, old.span, old.entry) == (site.kind, site.span, site.entry):
                users = tuple(sorted(set(old.users) | set(site.users)))
                built_in = tuple(sorted(set(old.built_in) | set(site.built_in)))
                sites[index] = replace(old, users=users, built_in=built_in)
                return
        sites.append(site)

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
                value.value,
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

    # -- the three searches --------------------------------------------------------------------

    def run(self, trial: bool = False) -> Found:
        """All searches; a trial (which only tells which Trainer files to read) needs the
        fused optimizers and the fits of their classes alone."""
        self.refine_runtime_sites()
        self.module_optimizers()
        if not trial:
            if self.any_fused():  # a Trainer's settings matter only beside a fused optimizer
                self.trainer_subclasses()
            self.clip_calls()
        self.fabric_optimizers()
        self.fit_calls()
        if not trial:
            self.cli_calls()
        return self.found

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

    # -- refining run-time sites ---------------------------------------------------------------

    def refine_runtime_sites(self) -> None:
        for path, file in self.files.items():
            summary = self.ev.summary(path)
            if summary is None:
                continue
            for site in file.sites:
                if site.certainty is not Certainty.RUNTIME:
                    continue
                node = expression_at(summary, site.span.line, site.span.column)
                if node is None:
                    continue
                self.refine(summary, site, node)

    def refine(self, summary: Summary, site: Site, node: ast.AST) -> None:
        ctx = self.ev.ctx_of(summary, node)
        if site.kind is SiteKind.MODULE_CLIP:
            if relevant_among(self.ev, {site.path}):  # elsewhere no class is fused
                self.refine_module_clip(site, node, ctx)
            return
        if site.kind is SiteKind.FABRIC_CLIP:
            self.refine_fabric_clip(site, node, ctx)
            return
        key = {
            SiteKind.FUSED_OPTIMIZER: "fused",
            SiteKind.TRAINER_PRECISION: "precision",
            SiteKind.FABRIC_PRECISION: "precision",
            SiteKind.TRAINER_CLIP: "gradient_clip_val",
        }.get(site.kind)
        if key is None or site.through is Through.SPREAD_ENTRY:
            return
        if site.through is Through.SPREAD:
            values = self.spread_values(summary, node, key, ctx)
        else:
            values = self.ev.ev(node, ctx)
        if values is None or any(not isinstance(v, Lit) for v in values):
            return
        literals = [v for v in values if isinstance(v, Lit)]
        counted = [v for v in literals if self.counts(site.kind, v.value)]
        decided = len(counted) in (0, len(values))  # not chosen at run time between literals
        if not decided and site.kind is not SiteKind.FUSED_OPTIMIZER:
            return
        self.found.drop.add((site.path, site.span, site.kind))
        for value in counted:
            detail = f"{site.detail}, decided here"
            fixable = site.kind is not SiteKind.TRAINER_CLIP
            new = self.site(site.kind, value, detail, site.entry, fixable=fixable)
            if new is None:
                continue
            if not decided:
                new = replace(new, certainty=Certainty.RUNTIME)
            # The new place keeps its own enclosing class; the classes that use the optimizer
            # are named as its users (the fix that edits a class must find that class).
            used_by = (UseId(site.path, site.owner),) if site.owner is not None else new.users
            new = replace(new, users=site.users or used_by)
            self.refined.setdefault((site.path, site.span, site.kind), []).append(new)
            self.add(new)

    def refine_fabric_clip(self, site: Site, node: ast.AST, ctx: Ctx) -> None:
        """`x.clip_gradients(...)` on a receiver only named like a Fabric: its value decides.
        A Fabric makes the site certain; a value that is surely no Fabric (a module of the
        project, a class, a literal...) drops it; anything else stays a review."""
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            return
        receiver = self.ev.ev(node.func.value, ctx)
        fabrics = [value for value in receiver if isinstance(value, FabricV)]
        if not fabrics and not (receiver and all(isinstance(v, NOT_A_FABRIC) for v in receiver)):
            return
        self.found.drop.add((site.path, site.span, site.kind))
        for fabric in fabrics:
            self.add(replace(site, certainty=Certainty.KNOWN, entry=fabric.entry))

    def refine_module_clip(self, site: Site, node: ast.AST, ctx: Ctx) -> None:
        """`self.clip_gradients(opt, gradient_clip_val=self.max_norm)` or the same through
        `super().configure_gradient_clipping(...)`: the value followed to its literals."""
        if not isinstance(node, ast.Call):
            return
        value = keyword_value(node, "gradient_clip_val")
        if value is None and len(node.args) > 1:
            value = node.args[1]
        if is_hook_clip_argument(value, ctx.func):
            return  # the Trainer's value
        literal = self.clip_value(value, ctx)
        if literal is None:
            return
        self.found.drop.add((site.path, site.span, site.kind))
        if literal:  # clips with a known positive value; "" never clips: no site
            self.add(replace(site, certainty=Certainty.KNOWN, value=literal))

    def spread_values(
        self, summary: Summary, node: ast.AST, key: str, ctx: Ctx
    ) -> list[object] | None:
        """`**spread` of a Fabric / Trainer call: the values it gives `key`, None if unknown."""
        values: list[object] = []
        for value in self.ev.ev(node, ctx):
            entries = getattr(value, "entries", None)
            if entries is None or not value.closed:  # type: ignore[attr-defined]
                return None
            values.extend(self.ev.force(entries.get(key, [])))
        return values

    def counts(self, kind: SiteKind, value: str) -> bool:
        if kind is SiteKind.FUSED_OPTIMIZER:
            return value == "True"
        if kind is SiteKind.TRAINER_CLIP:
            return is_clip_positive(value)
        return names.is_mixed_precision(value)

    # -- optimizers ----------------------------------------------------------------------------

    def module_optimizers(self) -> None:
        """For every class that is (or may be fitted as) a module: the optimizers its methods
        and those of its project bases build, wherever their `fused` is decided."""
        candidates = self.files_with(*CLASS_WORDS)
        for summary in self.summaries_with(*CLASS_WORDS, among=relevant_among(self.ev, candidates)):
            for node in summary.classes():
                self.class_optimizers(ClsV(node, summary))

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

    def optimizer_sites(
        self, opt: Opt, users: tuple[UseId, ...], built_in: tuple[ClassRef, ...] = ()
    ) -> None:
        """Sites where the optimizer's `fused` is decided, unless the file's collector has
        them already (then they only learn who uses them)."""
        if is_library(opt.summary.path):
            return
        call_span = opt.summary.span(opt.call)
        existing = self.files.get(opt.summary.path)
        collected = [
            site
            for site in (existing.sites if existing is not None else ())
            if site.kind is SiteKind.FUSED_OPTIMIZER and within(site.span, call_span)
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
        interesting = [
            v
            for v in opt.fused
            if isinstance(v, Opaque) or (isinstance(v, Lit) and v.value == "True")
        ]
        decided = all(isinstance(v, Lit) and v.value == "True" for v in opt.fused)
        for value in interesting:
            name = call_name(opt.call)
            code = segment(value.summary, value.node)
            detail = f"{name}(fused={code})"
            found = self.site(SiteKind.FUSED_OPTIMIZER, value, detail, users=users)
            if found is not None:
                found = replace(found, built_in=built_in)
                if not decided:
                    found = replace(found, certainty=Certainty.RUNTIME)
                self.add(found)

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
        for path in sorted(relevant_among(self.ev, paths)):
            summary = self.ev.summary(path)
            if summary is None:
                continue
            for node in walk(summary.tree):
                if isinstance(node, ast.Call) and self.may_build(node):
                    for value in self.ev.ev(node, self.ev.ctx_of(summary, node)):
                        if isinstance(value, Opt):
                            self.optimizer_sites(value, (UseId(path),))

    # -- Trainer subclasses, clips -------------------------------------------------------------

    def trainer_subclasses(self) -> None:
        subclassing = text_search(self.ev, "subclasses", "Trainer", body=PASSES_TRAINER_SETTINGS)
        for summary in self.summaries_with(b"Trainer", among=subclassing):
            for node in summary.classes():
                cls = ClsV(node, summary)
                call = super_init_call(node)
                if call is None or not self.ev.derives_from(cls, names.TRAINER_CLASSES):
                    continue
                self.entry_sites(summary, call, SiteKind.TRAINER_PRECISION, SiteKind.TRAINER_CLIP)

    def entry_sites(
        self, summary: Summary, call: ast.Call, precision: SiteKind, clip: SiteKind
    ) -> None:
        entry = summary.entry(call)
        ctx = self.ev.ctx_of(summary, call)
        for key, kind in (("precision", precision), ("gradient_clip_val", clip)):
            values: list[object] = []
            for keyword in call.keywords:
                if keyword.arg == key:
                    values.extend(self.ev.ev(keyword.value, ctx))
                elif keyword.arg is None:
                    for spread in self.ev.ev(keyword.value, ctx):
                        entries = getattr(spread, "entries", None)
                        if entries is not None:
                            values.extend(self.ev.force(entries.get(key, [])))
            for value in values:
                if isinstance(value, Lit) and not self.counts(kind, value.value):
                    continue
                if not isinstance(value, (Lit, Opaque)):
                    continue
                detail = f"super().__init__({key}=...) of a Trainer subclass"
                site = self.site(kind, value, detail, entry, fixable=kind is precision)
                if site is not None:
                    self.add(site)

    def clip_calls(self) -> None:
        """`x.clip_gradients(...)` the file's collector did not take: a Fabric reached through
        a parameter, or a LightningModule clipped from a Callback hook."""
        # A Fabric clip matters only beside a fused optimizer (relevant files); a Callback's
        # clip for whatever module its Trainer fits.
        clipping = {path for path, data in self.contents.items() if b"clip_gradients" in data}
        among = clipping_files(self.ev, clipping)
        for summary in self.summaries_with(b"clip_gradients", among=among):
            existing = self.files.get(summary.path)
            taken = {(s.span.line, s.span.column) for s in (existing.sites if existing else ())}
            for call in summary.calls("clip_gradients"):
                span = summary.span(call)
                if (span.line, span.column) in taken or not isinstance(call.func, ast.Attribute):
                    continue
                if is_guarded(summary, call):
                    continue
                self.clip_call(summary, call, span)

    def clip_call(self, summary: Summary, call: ast.Call, span: Span) -> None:
        ctx = self.ev.ctx_of(summary, call)
        receiver = self.ev.ev(call.func.value, ctx)  # type: ignore[attr-defined]
        fabrics = [v for v in receiver if isinstance(v, FabricV)]
        detail = f"{segment(summary, call.func)}(...)"
        owner = ctx.cls.name if ctx.cls is not None else None
        for fabric in fabrics:
            site = Site(
                SiteKind.FABRIC_CLIP,
                summary.path,
                span,
                Certainty.KNOWN,
                detail,
                None,
                owner=owner,
                fixable=False,
                entry=fabric.entry,
            )
            self.add(site)
        if fabrics or ctx.cls is None:
            return
        if not self.ev.derives_from(ClsV(ctx.cls, summary), CALLBACK_CLASSES):
            return
        entries = self.trainers_with_callback(ClsV(ctx.cls, summary))
        value = call.args[1] if len(call.args) > 1 else None
        for keyword in call.keywords:
            if keyword.arg == "gradient_clip_val":
                value = keyword.value
        literal = self.clip_value(value, ctx)
        if literal == "":
            return
        certainty = Certainty.KNOWN if literal is not None else Certainty.RUNTIME
        for entry in entries:
            self.add(
                Site(
                    SiteKind.TRAINER_CLIP,
                    summary.path,
                    span,
                    certainty,
                    f"{detail} in a Callback",
                    None if literal is None else str(literal),
                    owner=owner,
                    fixable=False,
                    entry=entry,
                    clip_call=True,
                )
            )

    def clip_value(self, value: ast.expr | None, ctx: Ctx) -> str | None:
        """The clip value a call passes, followed to its literals (`self.max_norm` set from the
        Callback's constructor argument): a positive literal, None when decided at run time,
        "" when it never clips."""
        if value is None:
            return None
        values = self.ev.ev(value, ctx)
        literals = [v.value for v in values if isinstance(v, Lit)]
        if not values or len(literals) < len(values):
            return None
        positive = [literal for literal in literals if is_clip_positive(literal)]
        if not positive:
            return ""
        return positive[0] if len(positive) == len(literals) else None

    def trainers_with_callback(self, callback: ClsV) -> list[EntryId]:
        entries: list[EntryId] = []
        for summary in self.summaries_with(b"callbacks"):
            for call in summary.calls("Trainer") + [
                c for c in walk(summary.tree) if isinstance(c, ast.Call)
            ]:
                keyword = next((k for k in call.keywords if k.arg == "callbacks"), None)
                if keyword is None:
                    continue
                ctx = self.ev.ctx_of(summary, call)
                trainers = [v for v in self.ev.ev(call, ctx) if isinstance(v, TrainerV)]
                if not trainers:
                    continue
                for item in flatten(self.ev, self.ev.ev(keyword.value, ctx)):
                    if isinstance(item, Inst) and any(
                        isinstance(b, ClsV) and b.node is callback.node
                        for b in self.ev.mro(item.cls)
                    ):
                        entries.extend(trainer.entry for trainer in trainers)
        return sorted(set(entries))

    # -- fit -----------------------------------------------------------------------------------

    def fit_calls(self) -> None:
        """Fits of the module classes that may have a fused optimizer (no other fit can link
        a Trainer to a finding)."""
        among = text_search(self.ev, "naming", *sorted(self.fused_classes()), within=b".fit(")
        for summary in self.summaries_with(b".fit(", among=among):
            for call in summary.calls("fit"):
                if not isinstance(call.func, ast.Attribute):
                    continue
                ctx = self.ev.ctx_of(summary, call)
                trainers = [v for v in self.ev.ev(call.func.value, ctx) if isinstance(v, TrainerV)]
                if not trainers:
                    continue
                model = call.args[0] if call.args else None
                for keyword in call.keywords:
                    if keyword.arg == "model":
                        model = keyword.value
                classes: set[UseId | None] = set()
                for value in self.ev.ev(model, ctx) if model is not None else []:
                    classes.add(value.cls.key if isinstance(value, Inst) else None)
                for trainer in trainers:
                    for key in sorted(classes, key=str) or [None]:
                        fit = FitCall(trainer.entry, key)
                        self.found.fits.setdefault(summary.path, []).append(fit)

    def any_fused(self) -> bool:
        return any(
            site.kind is SiteKind.FUSED_OPTIMIZER
            for sites in (*(f.sites for f in self.files.values()), *self.found.sites.values())
            for site in sites
        )

    def fused_classes(self) -> set[str]:
        """Names of the classes that own or use a fused optimizer found so far."""
        return {
            key.name
            for sites in (*(f.sites for f in self.files.values()), *self.found.sites.values())
            for site in sites
            if site.kind is SiteKind.FUSED_OPTIMIZER
            for key in (*site.users, UseId(site.path, site.owner or ""))
            if key.is_class
        }

    def cli_calls(self) -> None:
        """`LightningCLI(Model, trainer_defaults={...})`: the CLI's one Trainer (its YAML trainer
        sections and its defaults) fits the model class it is given, and only that class."""
        fused_classes = self.fused_classes()
        if not fused_classes:
            return  # the CLI's Trainer can fail only with a fused optimizer somewhere
        # A CLI naming another class still matters where YAML configures the CLI's Trainer:
        # it keeps that Trainer away from the fused classes.
        yaml_trainer = any(
            site.entry == names.CLI_TRAINER for file in self.files.values() for site in file.sites
        )
        among = None
        if not yaml_trainer:
            fused_names = sorted(fused_classes)
            among = text_search(self.ev, "naming", *fused_names, within=b"LightningCLI")
        for summary in self.summaries_with(b"LightningCLI", among=among):
            for call in walk(summary.tree):
                if not isinstance(call, ast.Call):
                    continue
                ctx = self.ev.ctx_of(summary, call)
                callee = self.ev.ev(call.func, ctx)
                if not any(self.is_cli(value) for value in callee):
                    continue
                self.cli_defaults(summary, call, ctx)
                model = keyword_value(call, "model_class")
                model = model or (call.args[0] if call.args else None)
                subclasses = keyword_value(call, "subclass_mode_model")
                classes = {
                    value.key if isinstance(value, ClsV) else None
                    for value in (self.ev.ev(model, ctx) if model is not None else [])
                }
                if subclasses is not None and literal_of(subclasses) != "False":
                    classes = {None}  # any subclass the config names: not known here
                for key in sorted(classes, key=str) or [None]:
                    self.found.fits.setdefault(summary.path, []).append(
                        FitCall(names.CLI_TRAINER, key)
                    )

    def is_cli(self, value: object) -> bool:
        if isinstance(value, Ext):
            return value.qname in names.CLI_CLASSES
        return isinstance(value, ClsV) and self.ev.derives_from(value, names.CLI_CLASSES)

    def cli_defaults(self, summary: Summary, call: ast.Call, ctx: Ctx) -> None:
        """`trainer_defaults={"precision": ..., "gradient_clip_val": ...}` configure the
        CLI's Trainer, as its YAML trainer section does."""
        defaults = keyword_value(call, "trainer_defaults")
        if defaults is None:
            return
        for value in self.ev.ev(defaults, ctx):
            entries = getattr(value, "entries", None)
            if entries is None:
                continue
            for key, kind in (
                ("precision", SiteKind.TRAINER_PRECISION),
                ("gradient_clip_val", SiteKind.TRAINER_CLIP),
            ):
                for item in self.ev.force(entries.get(key, [])):
                    if isinstance(item, Lit) and not self.counts(kind, item.value):
                        continue
                    if not isinstance(item, (Lit, Opaque)):
                        continue
                    detail = f"LightningCLI(trainer_defaults={{{key!r}: ...}})"
                    fixable = kind is SiteKind.TRAINER_PRECISION
                    site = self.site(kind, item, detail, names.CLI_TRAINER, fixable=fixable)
                    if site is not None:
                        self.add(site)


def keyword_value(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


NEVER_OPTIMIZERS = frozenset(
    {"log", "log_dict", "parameters", "named_parameters", "view", "size", "to", "item"}
)


def flatten(ev: Evaluator, values: Iterable[object]) -> Iterator[object]:
    for value in values:
        if isinstance(value, TupleV):
            for item in value.items:
                yield from ev.force(item)
        else:
            yield value


def is_guarded(summary: Summary, node: ast.AST) -> bool:
    """A clip call inside `if can_clip_gradients(...):` was fixed by the guard."""
    current = summary.parent(node)
    while current is not None:
        if isinstance(current, ast.FunctionDef) and current.name in (
            names.FABRIC_UNSCALE_HELPER,
            names.MODULE_UNSCALE_HELPER,
        ):
            return True  # the unscale fix's helpers call Lightning's clipping themselves
        if (
            isinstance(current, ast.If)
            and isinstance(current.test, ast.Call)
            and isinstance(current.test.func, ast.Name)
            and current.test.func.id == names.GUARD_HELPER
        ):
            return True
        current = summary.parent(current)
    return False


def within(inner: Span, outer: Span) -> bool:
    return (inner.line, inner.column) >= (outer.line, outer.column) and (
        inner.end_line,
        inner.end_column,
    ) <= (outer.end_line, outer.end_column)


def call_name(call: ast.Call) -> str:
    try:
        return ast.unparse(call.func)
    except Exception:  # noqa: BLE001 - only a label
        return "optimizer"


def segment(summary: Summary, node: ast.AST) -> str:
    try:
        return ast.get_source_segment(summary.source(), node) or "..."
    except (IndexError, ValueError):
        return "..."


def expression_at(summary: Summary, line: int, column: int) -> ast.AST | None:
    """The outermost expression that starts at (line, character column), a `**spread`
    keyword found at its `**`. Only the statements around that line are walked (a module of
    a million nodes is not indexed for a handful of sites)."""
    statements = [s for s in summary.tree.body if s.lineno <= line <= (s.end_lineno or s.lineno)]
    queue: deque[ast.AST] = deque(statements)
    while queue:
        node = queue.popleft()  # breadth first: an outer expression before the inner ones
        if getattr(node, "lineno", line) <= line <= (getattr(node, "end_lineno", None) or line):
            if isinstance(node, ast.keyword) and node.arg is None:
                span = summary.span(node)
                if (span.line, span.column) == (line, column):
                    return node.value
            elif isinstance(node, ast.expr) and node.lineno == line:
                span = summary.span(node)
                if (span.line, span.column) == (line, column):
                    return node
            queue.extend(child_nodes(node))
    return None


def relevant_files(evaluator: Evaluator) -> set[Path]:
    """The files a fused value can reach (relevance.py), once per project."""
    if evaluator.relevant is None:
        evaluator.relevant = fused_relevant_files(evaluator.contents, evaluator.by_module)
    return evaluator.relevant


def relevant_among(evaluator: Evaluator, paths: set[Path]) -> set[Path]:
    """Those of `paths` a fused value can reach. The text search over the whole project costs
    more than looking into a few files (a torch-sized tree with `fused` everywhere), so a few
    are all kept: the search only ever saves work, it never decides a finding."""
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


# The text of a Trainer subclass that can be an entry (entry_sites): `super().__init__(...)`
# in its `__init__`, given precision or gradient_clip_val, or a `**` spread.
PASSES_TRAINER_SETTINGS = re.compile(
    rb"\A(?=[\s\S]*\bsuper\b)(?=[\s\S]*\b__init__\b)"
    rb"(?=[\s\S]*(?:\bprecision\b|\bgradient_clip_val\b|\*\*))"
)


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
        if kind == "subclasses":
            if evaluator.class_lines is None:
                evaluator.class_lines = class_lines(evaluator.contents)
            base = names[0].encode("utf-8")
            found = subclass_files(evaluator.contents, base, body, evaluator.class_lines)
        else:
            among = None if within is None else evaluator.files_with(within)
            found = files_naming(evaluator.contents, set(names), among)
        evaluator.text_searches[key] = found
    return evaluator.text_searches[key]


def project_evaluator(
    root: Path, contents: dict[Path, bytes], load: Callable[[Path], Summary | None]
) -> Evaluator:
    """The evaluator of one project's Python files; what it learns holds for every resolution
    of the same files (a trial over the first files collected, then the full one)."""
    from amp_clipfix.analysis.summary import module_name

    python = {path: data for path, data in contents.items() if path.suffix in (".py", ".ipynb")}
    evaluator = Evaluator({}, load, python)
    evaluator.index_modules({module_name(root, path)[0]: path for path in python})
    return evaluator


def resolve(
    root: Path,
    files: dict[Path, FileSites],
    contents: dict[Path, bytes],
    load: Callable[[Path], Summary | None],
    evaluator: Evaluator | None = None,
    trial: bool = False,
) -> dict[Path, FileSites]:
    """The files' sites after the project resolution (files without sites may appear)."""
    if evaluator is None:
        evaluator = project_evaluator(root, contents, load)
    python = dict(evaluator.contents)
    found = Resolution(evaluator, files, python).run(trial)
    files = {path: with_config_models(evaluator, file) for path, file in files.items()}
    result = dict(files)
    for path in set(found.sites) | set(found.fits) | {p for p, _, _ in found.drop}:
        file = result.get(path, FileSites(path=path))
        kept = [site for site in file.sites if (site.path, site.span, site.kind) not in found.drop]
        added = [
            site
            for site in found.sites.get(path, [])
            if not any(
                (old.kind, old.span, old.entry) == (site.kind, site.span, site.entry)
                for old in kept
            )
        ]
        merged = [merge_users(site, found.sites.get(path, [])) for site in kept]
        result[path] = replace(
            file,
            sites=tuple(merged + added),
            fits=tuple(file.fits) + tuple(found.fits.get(path, [])),
        )
    return result


def with_config_models(evaluator: Evaluator, file: FileSites) -> FileSites:
    """A config's fits name their model class by dotted name: the project's class it is, or
    None (not known here) when the name is not a class of the project."""
    if not any(isinstance(fit.module_class, ConfigModel) for fit in file.fits):
        return file
    fits = []
    for fit in file.fits:
        if isinstance(fit.module_class, ConfigModel):
            qname = fit.module_class.dotted
            values = evaluator.resolve_qname(qname, ast.Constant(qname), None)  # type: ignore[arg-type]
            keys = {value.key if isinstance(value, ClsV) else None for value in values}
            fits += [replace(fit, module_class=key) for key in sorted(keys, key=str) or [None]]
        else:
            fits.append(fit)
    return replace(file, fits=tuple(fits))


def merge_users(site: Site, found: list[Site]) -> Site:
    for other in found:
        if (other.kind, other.span, other.entry) == (site.kind, site.span, site.entry):
            users = tuple(sorted(set(site.users) | set(other.users)))
            built_in = tuple(sorted(set(site.built_in) | set(other.built_in)))
            return replace(site, users=users, built_in=built_in)
    return site


def trainer_files_needed(resolved: dict[Path, FileSites]) -> set[Path] | None:
    """The files whose Trainers can take part, from a first resolution: those of the Trainers
    a followed `fit` links to a module class with a fused optimizer; None when some such class
    has no followed fit (then every Trainer may train it) or a config holds a fused optimizer."""
    sites = [site for file in resolved.values() for site in file.sites]
    fits = [fit for file in resolved.values() for fit in file.fits]
    needed: set[Path] = set()
    for site in sites:
        if site.kind is not SiteKind.FUSED_OPTIMIZER or is_library(site.path):
            continue
        if site.path.suffix in (".yaml", ".yml"):
            return None
        keys = {user for user in site.users if user.is_class}
        if site.owner is not None:
            keys.add(UseId(site.path, site.owner))
        for key in keys:
            entries = [fit.trainer for fit in fits if fit.module_class == key and fit.trainer]
            if not entries and any(user == key for user in site.users):
                return None
            needed.update(entry.path for entry in entries if not entry.cli)
    return needed
