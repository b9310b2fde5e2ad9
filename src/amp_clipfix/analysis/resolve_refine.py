"""Sites decided at run time in their own file, refined to the literals that decide them (an
`__init__` default, a dict entry, a module constant, a factory's argument).

The per-file collector writes down syntax only: a literal argument is a known site, anything
else (a name, an attribute, a `**spread`, a plugin's precision argument) a run-time one. What
the expression holds is decided here, by the project's evaluator alone, wherever the value was
made (a constant assigned under a condition, imported from another module, a dict built in
another module, a name rebound after the call).
"""

from __future__ import annotations

import ast
from bisect import bisect_right
from collections import deque

from amp_clipfix.analysis import names
from amp_clipfix.analysis.ast_syntax import positional_or_keyword
from amp_clipfix.analysis.collect_calls import is_hook_clip_argument
from amp_clipfix.analysis.evaluate import Ctx
from amp_clipfix.analysis.nodes import child_nodes
from amp_clipfix.analysis.resolve_base import (
    ResolutionBase,
    followed_here,
    keyword_value,
    relevant_among,
)
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import Ext, Lit, setting
from amp_clipfix.models import Certainty, Site, SiteKind, Through, UseId
from amp_clipfix.records import replace


class RefineSites(ResolutionBase):
    """Run-time sites replaced by the literals that decide them."""

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
        key = {
            SiteKind.FUSED_OPTIMIZER: "fused",
            SiteKind.TRAINER_PRECISION: "precision",
            SiteKind.FABRIC_PRECISION: "precision",
            SiteKind.TRAINER_CLIP: "gradient_clip_val",
        }.get(site.kind)
        if key is None or site.through is Through.SPREAD_ENTRY:
            return
        if site.kind is SiteKind.FUSED_OPTIMIZER and site.through is Through.SPREAD:
            self.refine_fused_spread(site, node, ctx)
            return
        precision = self.plugin_precision(site, node, ctx)
        if precision is not None:
            self.refine_plugin(site, precision, ctx)
            return
        if site.through is Through.SPREAD:
            values = self.spread_values(summary, node, key, ctx)
        else:
            values = self.ev.ev(node, ctx)
        if values is None or any(not isinstance(v, Lit) for v in values):
            return
        literals = [v for v in values if isinstance(v, Lit)]
        counted = [v for v in literals if self.counts(site.kind, v)]
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
            new = replace(new, sharding=site.sharding)  # the strategy of the call it configures
            # The new place keeps its own enclosing class; the classes that use the optimizer
            # are named as its users (the fix that edits a class must find that class).
            used_by = (UseId(site.path, site.owner),) if site.owner is not None else new.users
            new = replace(new, users=site.users or used_by)
            self.refined.setdefault((site.path, site.span, site.kind), []).append(new)
            self.add(new)

    def refine_fused_spread(self, site: Site, node: ast.AST, ctx: Ctx) -> None:
        """`AdamW(**kw)`: a site at each `fused` value the dicts `kw` may be carry (a dict
        literal, `dict(...)`, one built in another module or by a factory); certain only when
        every dict `kw` may be sets it to `True`. A spread whose dicts set no `fused`, or whose
        contents cannot be followed, leaves the optimizer's default: no site. A spread that
        depends on who calls (a parameter, an attribute) is the optimizer search's, which binds
        it per caller and class (resolve_optimizers.py)."""
        key = (site.path, site.span, site.kind)
        self.found.drop.add(key)
        call = ctx.summary.parent(ctx.summary.parent(node) or node)
        if not isinstance(call, ast.Call) or not followed_here(call, ctx):
            self.deferred.add(key)
            return
        for new in self.spread_fused_sites(site.detail, node, ctx, site.entry):
            used_by = (UseId(site.path, site.owner),) if site.owner is not None else new.users
            new = replace(new, users=site.users or used_by)
            self.refined.setdefault(key, []).append(new)
            self.add(new)

    def plugin_precision(self, site: Site, node: ast.AST, ctx: Ctx) -> ast.expr | None:
        """The precision argument of a precision plugin's call (`MixedPrecision(p, ...)`), when
        the site is that call: by the callee's value, None for any other expression."""
        if site.kind not in (SiteKind.FABRIC_PRECISION, SiteKind.TRAINER_PRECISION):
            return None
        if not isinstance(node, ast.Call):
            return None
        callee = self.ev.ev(node.func, ctx)
        if not any(
            isinstance(v, Ext) and names.plugin_scaler_index(v.qname) is not None for v in callee
        ):
            return None
        return positional_or_keyword(node, 0, "precision")

    def refine_plugin(self, site: Site, precision: ast.expr, ctx: Ctx) -> None:
        """A plugin's precision followed to its literals: no site when none is mixed, the
        plugin known with its precision when every one is the same mixed precision; a choice
        at run time stays one."""
        values = self.ev.force(self.ev.ev(precision, ctx))
        if not values or any(not isinstance(v, Lit) for v in values):
            return
        literals = {setting(v) for v in values if isinstance(v, Lit)}
        counted = {v for v in literals if v is not None and names.is_mixed_precision(v)}
        if counted and (len(counted) > 1 or counted != literals):
            return
        key = (site.path, site.span, site.kind)
        self.found.drop.add(key)
        if counted:
            # a plugin some list holds only where a store may not run: still run time
            certainty = Certainty.RUNTIME if key in self.maybe_plugins else Certainty.KNOWN
            new = replace(site, certainty=certainty, value=counted.pop(), fixable=True)
            self.refined.setdefault(key, []).append(new)
            self.add(new)

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


def expression_at(summary: Summary, line: int, column: int) -> ast.AST | None:
    """The outermost expression that starts at (line, character column), a `**spread`
    keyword found at its `**`. Only the statements around that line are walked (a module of
    a million nodes is not indexed for a handful of sites)."""
    body = summary.tree.body  # in source order: starts and ends both rise
    last = bisect_right(body, line, key=lambda statement: statement.lineno)
    first = last
    while first and (body[first - 1].end_lineno or body[first - 1].lineno) >= line:
        first -= 1
    queue: deque[ast.AST] = deque(body[first:last])
    while queue:
        node = queue.popleft()  # breadth first: an outer expression before the inner ones
        if getattr(node, "lineno", line) <= line <= (getattr(node, "end_lineno", None) or line):
            spread = isinstance(node, ast.keyword) and node.arg is None
            if (spread or isinstance(node, ast.expr)) and starts_at(summary, node, line, column):
                return node.value if spread else node  # type: ignore[attr-defined]
            queue.extend(child_nodes(node))
    return None


def starts_at(summary: Summary, node: ast.AST, line: int, column: int) -> bool:
    """Whether `summary.span(node)` starts at (line, character column), without the span's
    end made (asked of every expression on a site's line)."""
    lineno: int = node.lineno  # type: ignore[attr-defined]
    return lineno == line and summary.column(line, node.col_offset) == column  # type: ignore[attr-defined]
