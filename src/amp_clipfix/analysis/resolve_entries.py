"""Which `Fabric(...)` / `Trainer(...)` call (its `EntryId`) a clip and a precision plugin belong
to, by value: the per-file collector binds no names, the project's evaluator follows them.

- `x.clip_gradients(...)` is a Fabric's clip when `x`'s value is a Fabric, and belongs to the
  `Fabric(...)` calls that value may come from, wherever they are: another method
  (`self.fabric`), a factory in another module, a tuple or dict unpacked. A name alone is never
  a fact: only where the value cannot be followed does a receiver named "fabric" give a review.
- A precision plugin built outside the call (`plugin = MixedPrecision(...)`, a factory) belongs
  to the calls whose `plugins=` it reaches.
- The strategy of an entry is the value its `strategy=` argument has.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from pathlib import Path

from amp_clipfix.analysis import names, strategy_names
from amp_clipfix.analysis.ast_syntax import is_guardable, namespace_argument
from amp_clipfix.analysis.collect import collect_sites
from amp_clipfix.analysis.evaluate import Ctx
from amp_clipfix.analysis.plugin_texts import CALLS_PLUGIN_CLASS
from amp_clipfix.analysis.recording import holds, matches, scan
from amp_clipfix.analysis.resolve_base import innermost_statement
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
    Opaque,
    Opt,
    TrainerV,
    TupleV,
    setting,
)
from amp_clipfix.models import Certainty, EntryId, FileSites, Sharding, Site, SiteKind, Span
from amp_clipfix.paths import is_library
from amp_clipfix.records import replace
from amp_clipfix.sources.prefilter import word_start

# Values that are surely no Fabric: a receiver holding only these never clips on one.
NOT_A_FABRIC = (ModuleV, ClsV, Fn, LambdaV, Lit, DictV, TupleV, TrainerV, Opt)

# Packages whose classes are never a Fabric unless Lightning's own Fabric is among their bases (a
# project class built on these alone is no Fabric); a class from any other library might be one.
PLAIN_ROOTS = names.LIBRARY_PACKAGES | {
    "builtins",
    "abc",
    "typing",
    "collections",
    "dataclasses",
    "enum",
}

PRECISIONS = (SiteKind.FABRIC_PRECISION, SiteKind.TRAINER_PRECISION)
PLUGINS = re.compile(word_start(b"plugins") + rb"\s*=(?!=)")  # `\bplugins\s*=(?!=)`


class EntrySearch(RefineSites):
    """Clip calls on Fabrics, the settings of the Fabrics they reach, and the calls precision
    plugins are given to."""

    plugin_files: frozenset[Path] | None = None  # see plugin_holders

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
            sharding = self.call_sharding(fabric.call, fabric.summary)
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
        (a factory module holding no fused optimizer and no clip): read now, and refined as
        any run-time site."""
        entry = fabric.entry
        if entry is None or entry.cli or entry in self.settled:
            return
        self.settled.add(entry)
        summary = self.ev.summary(entry.path)
        sharding = self.call_sharding(fabric.call, fabric.summary)
        for site in self.unread_sites(entry.path):
            if site.kind is not SiteKind.FABRIC_PRECISION or site.entry != entry:
                continue
            if site.sharding is Sharding.UNKNOWN:  # the collector leaves a strategy to values
                site = replace(site, sharding=sharding)
            if site.certainty is Certainty.RUNTIME and summary is not None:
                node = expression_at(summary, site.span.line, site.span.column)
                if node is not None:
                    self.refine(summary, site, node)
                if (site.path, site.span, site.kind) in self.found.drop:
                    continue  # replaced by the literals that decide it
            self.add(site)

    def unread_sites(self, path: Path) -> tuple[Site, ...]:
        """The sites of a file the collection did not read (its prefilter passed it over),
        read now as the collector reads any file, once per resolution; none for a file it read
        (its sites are in `files`) and for library code."""
        if path in self.read_paths or is_library(path):
            return ()
        if path not in self.unread:
            summary = self.ev.summary(path)
            self.unread[path] = (
                () if summary is None else collect_sites(path, summary.source(), summary.tree).sites
            )
        return self.unread[path]

    def call_sharding(self, call: ast.Call | None, summary: Summary | None) -> Sharding:
        """Whether the strategy of a `Fabric(...)` / `Trainer(...)` call shards the model: the
        values its `strategy=` may take (a registered name, one of Lightning's strategy
        classes), also through a `**spread` of a dict the code shows whole (one without the
        key keeps the default, which never shards); anything else, a choice between sharded
        and plain ones, or a spread that may hold a strategy the code does not show, is
        decided at run time."""
        if call is None or summary is None:
            return Sharding.NONE  # a subclass's super().__init__: not read here
        ctx = self.ev.ctx_of(summary, call)
        states: set[bool | None] = set()
        strategy = next((k.value for k in call.keywords if k.arg == "strategy"), None)
        if strategy is not None:
            values = self.ev.force(self.ev.ev(strategy, ctx))
        else:
            values = []
            spreads = [k.value for k in call.keywords if k.arg is None]
            namespace = namespace_argument(call, self.callee_qnames(call.func, ctx))
            spreads += [] if namespace is None else [namespace]
            if not spreads:
                return Sharding.NONE
            for spread in spreads:
                for value in self.ev.force(self.ev.ev(spread, ctx)):
                    if not isinstance(value, DictV) or not value.closed:
                        return Sharding.UNKNOWN
                    if "strategy" in value.entries:
                        values.extend(self.ev.force(value.entries["strategy"]))
                    else:
                        states.add(False)
        for value in values:
            if isinstance(value, Lit):
                name = setting(value)
                states.add(None if name is None else strategy_names.strategy_name_shards(name))
            elif isinstance(value, Opaque) and isinstance(value.node, ast.Call):
                callee = value.node.func
                qualified = self.callee_qnames(callee, self.ev.ctx_of(value.summary, callee))
                states.add(names.strategy_class_shards(set(qualified)))
            else:
                states.add(None)
        if states == {True}:
            return Sharding.SHARDED
        return Sharding.NONE if states == {False} else Sharding.UNKNOWN  # chosen at run time

    def callee_qnames(self, func: ast.expr, ctx: Ctx) -> list[str]:
        """The library qualified names a callee's values are, in order."""
        return sorted({v.qname for v in self.ev.ev(func, ctx) if isinstance(v, Ext)})

    def settle_strategies(self) -> None:
        """The collector knows a `strategy=` only where it is written as a registered name or
        one of Lightning's strategy classes; any other (a constant, a name, a factory's result)
        is followed here, by value, and the sites of that call take the strategy it has."""
        for path, file in sorted(self.files.items(), key=lambda item: str(item[0])):
            entries = {
                site.entry
                for site in file.sites
                if site.sharding is Sharding.UNKNOWN
                and site.entry is not None
                and not site.entry.cli
                and site.entry.path == path
            }
            summary = self.ev.summary(path) if entries else None
            if summary is None:
                continue
            shardings: dict[EntryId | None, Sharding] = {}
            for entry in entries:
                call = entry_call(summary, entry)
                if call is not None:
                    shardings[entry] = self.call_sharding(call, summary)
            sites = []
            for site in file.sites:
                sharding = shardings.get(site.entry, site.sharding)
                if site.sharding is Sharding.UNKNOWN and sharding is not Sharding.UNKNOWN:
                    site = replace(site, sharding=sharding)
                    self.found.sharding[(site.path, site.span, site.kind)] = sharding
                sites.append(site)
            self.files[path] = replace(file, sites=tuple(sites))

    def plugin_entries(self) -> None:
        """Precision plugins built outside a `Fabric(...)` / `Trainer(...)` call (`plugin =
        MixedPrecision(...)`, then `plugins=[plugin]`) configure the calls whose `plugins=`
        their value reaches: their sites take that call's entry and, when they do not shard
        themselves, its strategy."""
        free = {
            (site.path, site.span): site
            for file in self.files.values()
            for site in file.sites
            if site.kind in PRECISIONS and site.entry is None and not site.in_config
        }
        self.drop_dead_plugins(free)
        if not free and not self.plugin_holders():
            return  # no list can hold a plugin the collector makes a site of: nothing to link
        # The calls that can matter: in a file holding a free plugin, or one a fused value
        # reaches (a Trainer or Fabric elsewhere trains nothing fused), written `plugins=`.
        passing = set(scan(self.contents, holds(b"plugins"), matches(PLUGINS)))
        among = {path for path, _ in free} | self.reached_among(passing)
        for summary in self.summaries_with(b"plugins", among=among & passing):
            # the keyword's line is the call's; a call not given it is not read
            for call in summary.calls_kept(gives_plugins, "plugins"):
                plugins = next((k.value for k in call.keywords if k.arg == "plugins"), None)
                if plugins is None:
                    continue
                ctx = self.ev.ctx_of(summary, call)
                made = [
                    value
                    for value in self.ev.ev(call, ctx)
                    if isinstance(value, (FabricV, TrainerV)) and value.call is call
                ]
                if not made:
                    continue
                # a list or tuple, however built (sequences.py), or one plugin
                lists = self.ev.ev(plugins, ctx)
                for value, _ in self.ev.sequence_elements(lists):
                    if not (isinstance(value, Opaque) and isinstance(value.node, ast.Call)):
                        continue
                    site = self.free_plugin(free, value)
                    if site is not None:
                        if not self.ev.holds(lists, self.plugin_test(free)):  # on some paths only
                            self.maybe_plugins.add((site.path, site.span, site.kind))
                        self.link_plugin(site, made[0].entry, made[0].call, summary)

    def plugin_holders(self) -> frozenset[Path]:
        """The files the collection did not read that may call a precision plugin class (they
        write one's name), once per resolution: only there can unread_sites find a free
        plugin's site. One noted scan (a query reads which files hold the words)."""
        if self.plugin_files is None:
            found = scan(self.contents, ("fn", CALLS_PLUGIN_CLASS))
            self.plugin_files = frozenset(
                path for path in found if path not in self.read_paths and not is_library(path)
            )
        return self.plugin_files

    def plugin_test(self, free: dict[tuple[Path, Span], Site]) -> Callable[[object], bool]:
        """A test of a list's element: a precision plugin built outside an entry call (which
        one of several is for the rules: each is a site)."""
        return lambda value: (
            isinstance(value, Opaque)
            and isinstance(value.node, ast.Call)
            and self.free_plugin(free, value) is not None
        )

    def drop_dead_plugins(self, free: dict[tuple[Path, Span], Site]) -> None:
        """A free plugin built only under an `if` the code decides false (`if fp16:` where
        every caller passes False) configures nothing: its site goes (sequences.never_runs)."""
        for key, site in list(free.items()):
            home = self.ev.summary(site.path)
            node = None if home is None else expression_at(home, site.span.line, site.span.column)
            if home is None or node is None:
                continue
            if self.ev.never_runs(node, self.ev.ctx_of(home, node)):
                self.found.drop.add((site.path, site.span, site.kind))
                del free[key]

    def free_plugin(self, free: dict[tuple[Path, Span], Site], value: Opaque) -> Site | None:
        """The site of a plugin built by `value`'s call outside any entry call: collected, or
        in a file the collection did not read (a factory module), taken into `files` here."""
        key = (value.summary.path, value.summary.span(value.node))
        if key in free:
            return free[key]
        if key[0] not in self.plugin_holders():
            return None  # the collector makes no plugin site there: not walked for one
        for site in self.unread_sites(key[0]):
            if (site.path, site.span) == key and site.kind in PRECISIONS and site.entry is None:
                file = self.files.get(site.path, FileSites(site.path))
                self.files[site.path] = replace(file, sites=(*file.sites, site))
                free[key] = site
                return site
        return None

    def link_plugin(
        self, site: Site, entry: EntryId | None, call: ast.Call | None, summary: Summary
    ) -> None:
        """The plugin's site with the call's entry, in place of the free one: the refinement
        of run-time sites then refines it (settle_plugins adds it where nothing did). A plugin
        given to several calls configures each."""
        sharding = site.sharding
        if sharding is Sharding.NONE:
            sharding = self.call_sharding(call, summary)
        linked = replace(site, entry=entry, sharding=sharding)
        if (site.path, site.span, site.kind) in self.maybe_plugins:  # in the list on some paths
            linked = replace(linked, certainty=Certainty.RUNTIME)
        key = (site.path, site.span, site.kind)
        if key not in self.linked:
            file = self.files[site.path]
            sites = tuple(linked if old is site else old for old in file.sites)
            self.files[site.path] = replace(file, sites=sites)
        self.linked.setdefault(key, []).append(linked)

    def settle_plugins(self) -> None:
        """The linked plugin sites no refinement replaced, in place of the free ones; where the
        refinement replaced one (with the first call's entry), the same for the other calls."""
        for key, sites in sorted(self.linked.items(), key=lambda i: (str(i[0][0]), *i[0][1:])):
            if key in self.found.drop:
                for other in sites[1:]:
                    for new in self.refined.get(key, []):
                        self.add(replace(new, entry=other.entry, sharding=other.sharding))
                continue
            self.found.drop.add(key)
            for site in sites:
                self.add(site)


def entry_call(summary: Summary, entry: EntryId) -> ast.Call | None:
    """The `Fabric(...)` / `Trainer(...)` call an entry names: of the calls starting there
    (`L.Trainer(...).fit(model)` starts there too), the one that ends first."""
    calls = [
        call
        for call in summary.walked_calls()
        if call.lineno == entry.line and summary.entry(call) == entry
    ]
    return min(calls, key=lambda c: (c.end_lineno or 0, c.end_col_offset or 0), default=None)


def gives_plugins(call: ast.Call) -> bool:
    return any(keyword.arg == "plugins" for keyword in call.keywords)
