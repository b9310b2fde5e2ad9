"""The calls a module's sites come from: `Fabric(...)` / `Trainer(...)` and their plugins and
strategy, optimizers built with `fused`, `partial(...)` and spreads, and clipping calls.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from amp_clipfix.analysis import names, python_configs, strategy_names
from amp_clipfix.analysis.ast_syntax import (
    is_guardable,
    is_sole_argument,
    keyword_arg,
    literal_value,
    namespace_argument,
    positional_args,
    positional_or_keyword,
    star_kwargs,
)
from amp_clipfix.analysis.collect_walk import FUNCTIONS, CollectorBase
from amp_clipfix.models import Certainty, Sharding, SiteKind, Through
from amp_clipfix.records import replace


def is_clip_positive(value: str | None) -> bool:
    """`gradient_clip_val` clips only when it is a number above zero (None and 0 do not)."""
    try:
        return value is not None and float(value) > 0
    except ValueError:
        return False


def is_hook_clip_argument(value: ast.expr | None, function: ast.AST | None) -> bool:
    """A clip value that is a parameter of the `configure_gradient_clipping` hook it is passed
    in: Lightning calls the hook with the Trainer's `gradient_clip_val`, so passing it on to
    `self.clip_gradients` or `super().configure_gradient_clipping` clips with the Trainer's."""
    if not isinstance(value, ast.Name) or not isinstance(function, FUNCTIONS):
        return False
    if function.name != "configure_gradient_clipping":
        return False
    arguments = function.args
    parameters = (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
    return value.id in {parameter.arg for parameter in parameters}


# A call whose callee the file's imports do not name is a candidate for the project evaluator
# (resolve_callees.py) when it passes one of these (what makes a site of a Fabric, Trainer or
# fusable optimizer call), or a mixed precision literal first (a precision plugin's).
CANDIDATE_KEYWORDS = frozenset({"precision", "gradient_clip_val", "fused"})


class CallCollector(CollectorBase):
    """The visit of a call: the sites it makes, by the qualified name of what it calls (through
    the file's imports, or, for a candidate, the value the project evaluator gave its callee)."""

    callees: dict[tuple[int, int], frozenset[str]] = {}  # (line, column) -> the callee's value
    candidates: list  # the spans of calls whose callee the imports do not name
    config_models: list  # dotted names of the model classes a config document names

    # -- calls ---------------------------------------------------------------------------------

    def visit_Call(self, node: ast.Call) -> None:
        entries = len(self.entry_calls)
        self.collect_call(node)
        self.generic_visit(node)
        del self.entry_calls[entries:]

    def collect_call(self, node: ast.Call) -> None:
        qualified = self.qualified_names(node.func)
        if not any(name in names.LIBRARY for name in qualified):
            qualified = set(self.callee_of(node) or qualified)
        if qualified & names.FABRIC_CLASSES:
            self.entry_calls.append(self.entry_of(node))
            self.collect_entry_point(node, SiteKind.FABRIC_PRECISION, clip_kind=None)
        elif qualified & names.TRAINER_CLASSES:
            self.entry_calls.append(self.entry_of(node))
            namespace = namespace_argument(node, sorted(qualified))
            self.collect_entry_point(
                node, SiteKind.TRAINER_PRECISION, SiteKind.TRAINER_CLIP, namespace
            )
        elif qualified & names.FUSABLE_OPTIMIZERS:
            self.collect_fused(node, self.code(node.func))
        elif qualified & names.PARTIAL_FUNCTIONS:
            self.collect_partial(node)
        elif qualified & python_configs.CONFIG_DOCUMENTS:
            self.config_models.extend(python_configs.collect_document(self, node, is_clip_positive))
        else:
            for qualified_name in qualified:
                plugin = names.plugin_scaler_index(qualified_name)
                if plugin is not None:
                    self.collect_plugin(node, plugin[0])
                    break
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "clip_gradients":
            self.collect_clip(node)
        elif (
            isinstance(func, ast.Attribute)
            and func.attr == "configure_gradient_clipping"
            and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name)
            and func.value.func.id == "super"
            and self.class_stack
        ):
            self.collect_super_clipping(node)

    def callee_of(self, call: ast.Call) -> frozenset[str] | None:
        """What the evaluator said the callee of a candidate call is; a call passing a keyword
        that makes a site is written down as a candidate for it (syntax only)."""
        if not any(
            keyword.arg is None or keyword.arg in CANDIDATE_KEYWORDS for keyword in call.keywords
        ) and not (call.args and self.is_mixed_literal(call.args[0])):
            return None
        span = self.span(call)
        known = self.callees.get((span.line, span.column))
        if known is None:
            self.candidates.append(span)
        return known

    def is_mixed_literal(self, node: ast.expr) -> bool:
        """A mixed precision written first (`MixedPrecision("16-mixed", "cuda")`): a plugin
        call, when its callee's value is a plugin class."""
        value = literal_value(node, self.source) if isinstance(node, ast.Constant) else None
        return value is not None and names.is_mixed_precision(value)

    def collect_entry_point(
        self,
        call: ast.Call,
        precision_kind: SiteKind,
        clip_kind: SiteKind | None,
        namespace: ast.expr | None = None,
    ) -> None:
        """Fabric(...) or Trainer(...): the precision argument, the clip value, `**spreads`
        (a Namespace whose attributes are keyword arguments is one: `from_argparse_args`)."""
        name = self.code(call.func)
        spreads = star_kwargs(call)
        if namespace is not None:
            spread = ast.keyword(arg=None, value=namespace)
            spreads.append(ast.copy_location(spread, namespace))
        self.entry_sharding[self.entry_calls[-1]] = self.strategy_sharding(call, bool(spreads))
        precision = keyword_arg(call, "precision")
        if precision is not None:
            detail = f"{name}(precision={self.code(precision.value)})"
            self.add_value(precision_kind, precision.value, detail, names.is_mixed_precision)
        elif keyword_arg(call, "plugins") is None:
            self.add_spreads(precision_kind, spreads, name, " may set precision")
        if clip_kind is None:
            return
        clip = keyword_arg(call, "gradient_clip_val")
        if clip is not None:
            detail = f"{name}(gradient_clip_val={self.code(clip.value)})"
            self.add_value(clip_kind, clip.value, detail, is_clip_positive, fixable=False)
        else:
            self.add_spreads(clip_kind, spreads, name, " may set gradient_clip_val")

    def add_spreads(
        self, kind: SiteKind, spreads: list[ast.keyword], name: str, suffix: str = ""
    ) -> None:
        """The `**spreads` of a call as written: what they set is the evaluator's question
        (resolve_refine.py)."""
        for spread in spreads:
            detail = f"{name}({self.argument_code(spread)}){suffix}"
            self.add(kind, spread, Certainty.RUNTIME, detail, fixable=False, through=Through.SPREAD)

    def strategy_sharding(self, call: ast.Call, spreads: bool) -> Sharding:
        """The `strategy=` of a Fabric / Trainer call as written: a registered name is known;
        anything else (a strategy class, a constant, a name, a spread) is unknown here, and the
        project evaluator follows its value (resolve_entries.py `settle_strategies`)."""
        strategy = keyword_arg(call, "strategy")
        if strategy is None:
            return Sharding.UNKNOWN if spreads else Sharding.NONE
        value = literal_value(strategy.value, self.source)
        shards = None if value is None else strategy_names.strategy_name_shards(value)
        if shards is None:
            return Sharding.UNKNOWN
        return Sharding.SHARDED if shards else Sharding.NONE

    def add_value(
        self,
        kind: SiteKind,
        node: ast.expr,
        detail: str,
        counts: Callable[[str], bool],
        fixable: bool = True,
    ) -> None:
        """A site for an argument value: known when it is a literal, else decided at run time
        until the project evaluator follows it (resolve_refine.py); literals that do not take
        part in the failure (`"32-true"`, `0`) are no site."""
        value = literal_value(node, self.source)
        if value is None:
            self.add(kind, node, Certainty.RUNTIME, detail, fixable=False)
        elif counts(value):
            self.add(kind, node, Certainty.KNOWN, detail, value, fixable=fixable)

    def collect_plugin(self, call: ast.Call, side: str) -> None:
        kind = SiteKind.FABRIC_PRECISION if side == "fabric" else SiteKind.TRAINER_PRECISION
        precision = positional_or_keyword(call, 0, "precision")
        if precision is None:
            return
        value = literal_value(precision, self.source)
        code = self.code(precision, is_sole_argument(call, precision))
        detail = f"{self.code(call.func)}({code}, ...)"
        span = self.span(call)
        qualified = self.qualified_names(call.func)
        qualified |= self.callees.get((span.line, span.column), frozenset())
        sharded = bool(qualified & names.SHARDED_PLUGINS)
        sharding = Sharding.SHARDED if sharded else None
        if value is None:
            self.add(kind, call, Certainty.RUNTIME, detail, fixable=False, sharding=sharding)
        elif names.is_mixed_precision(value):
            self.add(kind, call, Certainty.KNOWN, detail, value, sharding=sharding)

    def collect_partial(self, call: ast.Call) -> None:
        positional = positional_args(call)
        if positional and self.qualified_names(positional[0]) & names.FUSABLE_OPTIMIZERS:
            code = self.code(positional[0], is_sole_argument(call, positional[0]))
            self.collect_fused(call, f"partial({code})")

    def collect_fused(self, call: ast.Call, name: str) -> None:
        """`fused=` written in the call; a `**spread` is recorded as such: what it holds (a
        dict literal, `dict(...)`, a name, a dict built in another module) is the project
        evaluator's question (resolve_refine.py `refine_fused_spread`)."""
        fused = keyword_arg(call, "fused")
        if fused is not None:
            self.add_fused_value(fused.value, f"{name}(fused={self.code(fused.value)})")
            return
        self.add_spreads(SiteKind.FUSED_OPTIMIZER, star_kwargs(call), name)

    def add_fused_value(self, value: ast.expr, detail: str) -> None:
        literal = literal_value(value, self.source)
        kind = SiteKind.FUSED_OPTIMIZER
        if literal == "True":
            self.add(kind, value, Certainty.KNOWN, detail, literal)
        elif literal is None:
            self.add(kind, value, Certainty.RUNTIME, detail, fixable=False)

    def collect_clip(self, call: ast.Call) -> None:
        """`self.clip_gradients(...)` in a class: the module's own clipping. Any other receiver
        is the project resolution's question (resolve_entries.py): its value says whether it is
        a Fabric, and which one."""
        if self.guard_depth:
            return
        receiver = call.func.value  # type: ignore[attr-defined]
        if not (isinstance(receiver, ast.Name) and receiver.id == "self" and self.class_stack):
            return
        clip = positional_or_keyword(call, 1, "gradient_clip_val")
        value = None if clip is None else literal_value(clip, self.source)
        if value is not None and not is_clip_positive(value):
            return
        certainty = Certainty.KNOWN if value is not None else Certainty.RUNTIME
        detail = f"{self.code(call.func)}(...)"
        fixable = self.is_guardable(call)
        self.add(SiteKind.MODULE_CLIP, call, certainty, detail, value, fixable=fixable)
        self.sites[-1] = replace(self.sites[-1], clip_call=True)

    def collect_super_clipping(self, call: ast.Call) -> None:
        """`super().configure_gradient_clipping(optimizer, gradient_clip_val=...)` clips with
        the value it passes; passing the hook's own parameter on leaves it to the Trainer."""
        if self.guard_depth:
            return
        clip = positional_or_keyword(call, 1, "gradient_clip_val")
        function = self.function_stack[-1] if self.function_stack else None
        if clip is None or is_hook_clip_argument(clip, function):
            return
        value = literal_value(clip, self.source)
        if value is not None and not is_clip_positive(value):
            return
        certainty = Certainty.KNOWN if value is not None else Certainty.RUNTIME
        detail = f"{self.code(call.func)}(gradient_clip_val={self.code(clip)})"
        self.add(SiteKind.MODULE_CLIP, call, certainty, detail, value, fixable=False)

    def is_guardable(self, call: ast.Call) -> bool:
        return is_guardable(self.source, self.statement_calls.get(id(call)), call)
