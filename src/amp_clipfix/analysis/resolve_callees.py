"""Which call a call is, by the value of its callee, where the file's imports do not say:
`make = L.Trainer` then `make(precision=...)`, a class attribute `trainer_cls = Trainer` called
as `self.trainer_cls(...)`, a factory returning the class, a module bound to another name.

The collector names a callee through the file's imports only; a call it cannot name that passes
a keyword making a site (`precision=`, `gradient_clip_val=`, `fused=`) it writes down as a
candidate, by position. Here the project's evaluator follows each candidate's callee: when every
value it may have is one registered library class (a Fabric, a Trainer, a precision plugin, a
fusable optimizer, `functools.partial`), the file is collected again with that fact, and the
call makes the sites the same call written with an import makes. A project class that happens
to be named `Trainer` is no Lightning Trainer here: its value is the project's class.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis import names
from amp_clipfix.analysis.collect import collect_sites
from amp_clipfix.analysis.collect_walk import FUNCTIONS
from amp_clipfix.analysis.evaluate import Ctx
from amp_clipfix.analysis.resolve_base import ResolutionBase
from amp_clipfix.analysis.values import ClsV, Ext
from amp_clipfix.records import replace

ENTRY_KINDS = (names.Kind.TRAINER, names.Kind.FABRIC)
CONSTRUCTORS = ("__init__", "__new__")


class CalleeSearch(ResolutionBase):
    """The candidate calls of the files the collection read, named by their callee's value."""

    def identify_callees(self) -> None:
        for path, file in sorted(self.files.items(), key=lambda item: str(item[0])):
            if not file.candidates:
                continue
            summary = self.ev.summary(path)
            if summary is None:
                continue
            spots = {(span.line, span.column) for span in file.candidates}
            callees: dict[tuple[int, int], frozenset[str]] = {}
            for call in summary.walked_calls():
                span = summary.span(call)
                if (span.line, span.column) not in spots:
                    continue
                qualified = self.callee_names(call.func, self.ev.ctx_of(summary, call))
                if qualified:
                    callees[(span.line, span.column)] = qualified
            if not callees:
                continue
            collected = collect_sites(path, summary.source(), summary.tree, callees)
            old = {(site.kind, site.span, site.entry) for site in file.sites}
            added = [
                site for site in collected.sites if (site.kind, site.span, site.entry) not in old
            ]
            self.callee_sites.update((site.path, site.span, site.kind) for site in added)
            self.files[path] = replace(file, sites=(*file.sites, *added), candidates=())

    def keep_callee_sites(self) -> None:
        """The sites the candidates' callees made, as the searches left them in the files
        (their strategies settled), unless a search replaced them: a `**spread`'s run-time
        site gives way to the entries it was followed to, as it does for a call the imports
        name."""
        for _, file in sorted(self.files.items(), key=lambda item: str(item[0])):
            for site in file.sites:
                key = (site.path, site.span, site.kind)
                if key in self.callee_sites and key not in self.found.drop:
                    self.add(site)

    def inherited_init(self, value: object) -> object:
        """A project class that defines no `__init__` of its own below Lightning's Trainer or
        Fabric (`class MyTrainer(L.Trainer): ...`): calling it calls the library's `__init__`
        with the same arguments, so the call configures that class as a direct call would."""
        if not isinstance(value, ClsV):
            return value
        for klass in self.ev.mro(value):
            if isinstance(klass, ClsV):
                if any(
                    isinstance(node, FUNCTIONS) and node.name in CONSTRUCTORS
                    for node in klass.node.body
                ):
                    return value
            elif isinstance(klass, Ext):
                return klass if names.kind_of(klass.qname) in ENTRY_KINDS else value
        return value

    def callee_names(self, func: ast.expr, ctx: Ctx) -> frozenset[str]:
        """The registered qualified name the callee's value is, when every value it may have
        is one and the same library class; nothing otherwise."""
        values = [self.inherited_init(value) for value in self.ev.force(self.ev.ev(func, ctx))]
        libraries = [value for value in values if isinstance(value, Ext)]
        if not values or len(libraries) != len(values):
            return frozenset()
        qualified = frozenset(value.qname for value in libraries)
        if len(qualified) != 1 or not qualified <= names.LIBRARY.keys():
            return frozenset()
        return qualified
