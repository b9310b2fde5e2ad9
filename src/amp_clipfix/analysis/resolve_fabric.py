"""Fabric clips by value: `x.clip_gradients(...)` is a Fabric's clip when the project's evaluator
follows `x` to a Fabric, and belongs to the `Fabric(...)` calls that value may come from (its
`EntryId`), wherever they are: another method (`self.fabric`), a factory in another module, a
tuple or dict unpacked. The per-file collector binds no receivers; a name alone is never a fact.
"""

from __future__ import annotations

import ast
from dataclasses import replace

from amp_clipfix.analysis.ast_syntax import is_guardable
from amp_clipfix.analysis.collect import collect_sites
from amp_clipfix.analysis.evaluate import Ctx
from amp_clipfix.analysis.resolve_refine import RefineSites, expression_at
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
    Opt,
    TrainerV,
    TupleV,
)
from amp_clipfix.models import Certainty, EntryId, Sharding, Site, SiteKind, Span

# Values that are surely no Fabric: a receiver holding only these never clips on one.
NOT_A_FABRIC = (ModuleV, ClsV, Fn, LambdaV, Lit, DictV, TupleV, TrainerV, Opt)

# Packages whose classes are never a Fabric unless Lightning's own Fabric is among their bases (a
# project class built on these alone is no Fabric); a class from any other library might be one.
PLAIN_ROOTS = frozenset(
    {
        "builtins",
        "abc",
        "typing",
        "collections",
        "dataclasses",
        "enum",
        "torch",
        "lightning",
        "pytorch_lightning",
        "lightning_fabric",
    }
)

SHARDING_ORDER = (Sharding.NONE, Sharding.UNKNOWN, Sharding.SHARDED)


class FabricSearch(RefineSites):
    """Clip calls on Fabrics, and the settings of the Fabrics they reach."""

    def fabric_clip(
        self, summary: Summary, call: ast.Call, span: Span, ctx: Ctx, receiver: list[object]
    ) -> bool:
        """The sites of a clip call whose receiver may be a Fabric: one per `Fabric(...)` its
        value may come from (certain), or, where the value cannot be followed and only the
        receiver's name says "fabric", one decided at run time (a review, never certain). False
        when the receiver is no Fabric by anything known of it."""
        source = self.source_text(summary.path)
        if source is None:
            return False
        statement = innermost_statement(summary, call)
        indentation = "" if statement is None else source.indentation(statement.lineno)
        func: ast.Attribute = call.func  # type: ignore[assignment]
        detail = f"{source.code(func, indentation=indentation)}(...)"
        site = Site(
            SiteKind.FABRIC_CLIP,
            summary.path,
            span,
            Certainty.KNOWN,
            detail,
            None,
            owner=ctx.cls.name if ctx.cls is not None else None,
            fixable=is_guardable(source, statement, call),
            clip_call=True,
        )
        fabrics = [value for value in receiver if isinstance(value, FabricV)]
        for fabric in fabrics:
            self.entry_settings(fabric)
            sharding = self.entry_sharding(fabric.entry)
            self.add(replace(site, entry=fabric.entry, sharding=sharding))
        if fabrics:
            return True
        if receiver and all(self.surely_no_fabric(value) for value in receiver):
            return False
        receiver_code = source.code(func.value, indentation=indentation)
        if "fabric" not in receiver_code.rsplit(".", 1)[-1].lower():
            return False
        self.add(replace(site, certainty=Certainty.RUNTIME))
        return True

    def surely_no_fabric(self, value: object) -> bool:
        """A module, class, function, literal, container, Trainer or optimizer; or an instance
        of a project class built on no library class that could be a Fabric."""
        if isinstance(value, NOT_A_FABRIC):
            return True
        if isinstance(value, Inst):
            return all(
                not isinstance(base, Ext) or base.qname.split(".", 1)[0] in PLAIN_ROOTS
                for base in self.ev.mro(value.cls)
            )
        return False

    def entry_settings(self, fabric: FabricV) -> None:
        """The precision sites of a `Fabric(...)` call in a file the collection did not read
        (a factory module holding no fused optimizer and no clip): read now, as the collector
        reads any file, and refined as any run-time site."""
        entry = fabric.entry
        if entry is None or entry.cli or entry.path in self.files or entry.path in self.entries:
            return
        self.entries.add(entry.path)
        summary = self.ev.summary(entry.path)
        if summary is None:
            return
        sites = collect_sites(entry.path, summary.source(), summary.tree).sites
        for site in sites:
            if site.kind is not SiteKind.FABRIC_PRECISION or site.entry is None:
                continue
            self.entry_precision.setdefault(site.entry, []).append(site)
            if site.certainty is Certainty.RUNTIME:
                node = expression_at(summary, site.span.line, site.span.column)
                if node is not None:
                    self.refine(summary, site, node)
                if (site.path, site.span, site.kind) in self.found.drop:
                    continue  # replaced by the literals that decide it
            self.add(site)

    def entry_sharding(self, entry: EntryId | None) -> Sharding:
        """The strategy of a `Fabric(...)` call, as its precision sites carry it (the most
        cautious of them)."""
        if entry is None:
            return Sharding.NONE
        sites = [
            site
            for file in ((self.files[entry.path].sites,) if entry.path in self.files else ())
            for site in file
        ]
        sites += self.entry_precision.get(entry, [])
        found = {site.sharding for site in sites if site.entry == entry}
        return max(found, key=SHARDING_ORDER.index, default=Sharding.NONE)


def innermost_statement(summary: Summary, node: ast.AST) -> ast.stmt | None:
    current = summary.parent(node)
    while current is not None and not isinstance(current, ast.stmt):
        current = summary.parent(current)
    return current
