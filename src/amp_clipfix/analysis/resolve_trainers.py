"""Trainer subclasses configured in `super().__init__(...)`, clipping in Callbacks and overrides,
`trainer.fit(model, ...)` followed to the Trainer and the module class it trains, LightningCLI.
"""

from __future__ import annotations

import ast
import re

from amp_clipfix.analysis import names
from amp_clipfix.analysis.dispatch import runtime_contexts
from amp_clipfix.analysis.evaluate import (
    CALLBACK_CLASSES,
    Ctx,
    super_init_call,
)
from amp_clipfix.analysis.nodes import walk
from amp_clipfix.analysis.reaching import fit_receiver
from amp_clipfix.analysis.resolve_base import (
    clipping_files,
    keyword_value,
    segment,
    text_search,
)
from amp_clipfix.analysis.resolve_entries import EntrySearch
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import ClsV, Ext, Inst, Lit, Opaque, TrainerV, constant_of
from amp_clipfix.models import Certainty, EntryId, FitCall, Site, SiteKind, Span, UseId


class TrainerSearch(EntrySearch):
    """Trainer subclasses, clipping calls, fits and LightningCLI calls."""

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
                if isinstance(value, Lit) and not self.counts(kind, value):
                    continue
                if not isinstance(value, (Lit, Opaque)):
                    continue
                detail = f"super().__init__({key}=...) of a Trainer subclass"
                site = self.site(kind, value, detail, entry, fixable=kind is precision)
                if site is not None:
                    self.add(site)

    def clip_calls(self) -> None:
        """`x.clip_gradients(...)` calls other than a module's own `self.clip_gradients(...)`
        (the collector's): a Fabric's (its value says so, resolve_entries.py), or a
        LightningModule clipped from a Callback hook."""
        # A Fabric clip matters only beside a fused optimizer (relevant files); a Callback's
        # clip for whatever module its Trainer fits.
        clipping = set(self.ev.files_with(b"clip_gradients"))
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
        if self.fabric_clip(summary, call, span, ctx, receiver) or ctx.cls is None:
            return
        detail = f"{segment(summary, call.func, self.source_lines)}(...)"
        owner = ctx.cls.name
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
        for entry, surely in entries.items():
            certainty = Certainty.KNOWN if literal is not None and surely else Certainty.RUNTIME
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

    def trainers_with_callback(self, callback: ClsV) -> dict[EntryId, bool]:
        """The Trainers whose `callbacks=` may hold an instance of the callback class, each
        with whether every path puts it there."""
        entries: dict[EntryId, bool] = {}
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
                # a list however built (sequences.py): one a choice or a store that may not
                # run puts the callback in holds it at run time only
                surely = self.ev.holds(
                    self.ev.ev(keyword.value, ctx),
                    lambda item: (
                        isinstance(item, Inst)
                        and any(
                            isinstance(b, ClsV) and b.node is callback.node
                            for b in self.ev.mro(item.cls)
                        )
                    ),
                )
                if surely is None:
                    continue
                for trainer in trainers:
                    entries[trainer.entry] = entries.get(trainer.entry, False) or surely
        return dict(sorted(entries.items()))

    # -- fit -----------------------------------------------------------------------------------

    def fit_calls(self) -> None:
        """Fits of the module classes that may have a fused optimizer (no other fit can link
        a Trainer to a finding)."""
        among = text_search(self.ev, "naming", *sorted(self.fused_classes()), within=b".fit(")
        for summary in self.summaries_with(b".fit(", among=among):
            for call in summary.calls("fit"):
                if not isinstance(call.func, ast.Attribute):
                    continue
                scope = self.ev.ctx_of(summary, call)
                for ctx in runtime_contexts(self.ev, summary, call):  # one per subclass
                    trainers = [
                        v
                        for v in self.ev.ev(fit_receiver(call, scope.func or summary.tree), ctx)
                        if isinstance(v, TrainerV)
                    ]
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
        """A fused optimizer found so far (a collected site that the evaluator found sets no
        `fused`, `fused=FLAG` with `FLAG = False`, is none)."""
        return any(
            site.kind is SiteKind.FUSED_OPTIMIZER
            and (site.path, site.span, site.kind) not in self.found.drop
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
            and (site.path, site.span, site.kind) not in self.found.drop
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
                if subclasses is not None and constant_of(subclasses)[1] is not False:
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
                    if isinstance(item, Lit) and not self.counts(kind, item):
                        continue
                    if not isinstance(item, (Lit, Opaque)):
                        continue
                    detail = f"LightningCLI(trainer_defaults={{{key!r}: ...}})"
                    fixable = kind is SiteKind.TRAINER_PRECISION
                    site = self.site(kind, item, detail, names.CLI_TRAINER, fixable=fixable)
                    if site is not None:
                        self.add(site)


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


# The text of a Trainer subclass that can be an entry (entry_sites): `super().__init__(...)`
# in its `__init__`, given precision or gradient_clip_val, or a `**` spread.
PASSES_TRAINER_SETTINGS = re.compile(
    rb"\A(?=[\s\S]*\bsuper\b)(?=[\s\S]*\b__init__\b)"
    rb"(?=[\s\S]*(?:\bprecision\b|\bgradient_clip_val\b|\*\*))"
)
