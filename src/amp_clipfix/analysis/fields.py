"""The fields of a dataclass instance as its construction sets them: `Config(precision="16-mixed")`
gives its `precision` that argument, `Config()` the field's default (`= value`,
`field(default=...)`, a `field(default_factory=...)` called).

A field the construction does not decide stays decided at run time: a `*args` / `**spread` in the
call, a required field left out, a keyword-only layout given positions, and any field when the
project may set attributes from outside (`cfg.precision = args.precision`, `setattr(cfg, ...)`,
`vars(cfg).update(...)`, `cfg.__dict__`: the text is searched for those, by the field's name).
What the class's own methods assign to `self.<field>` (`__post_init__`) is added as before.
"""

from __future__ import annotations

import ast
import re

from amp_clipfix.analysis import names
from amp_clipfix.analysis.frame import Ctx, EvaluatorBase
from amp_clipfix.analysis.recording import exists, matches
from amp_clipfix.analysis.values import ClsV, Ext, Inst, Opaque
from amp_clipfix.patterns import lazy
from amp_clipfix.sources.prefilter import word_start

# What a field's annotation may say that makes it no field of `__init__` (or none at all).
NOT_FIELDS = ("ClassVar", "InitVar")
KW_ONLY = "KW_ONLY"
# Attribute stores the code may make on an instance from outside its class (any receiver but
# `self`), and the generic ones that may set any attribute.
# No branch starts with `\b` (nor the store's pattern with a look behind): `re` then skips to
# where one may start, ten times faster.
GENERIC_STORES = lazy(
    rb"setattr\(\s*(?!self\b)|__dict__|" + word_start(b"vars") + rb"\([^()]*\)\s*\.\s*update"
)
# `=` or an augmented assignment (`+=`, `//=`, ...), not a comparison.
AUGMENTED = rb"\s*(?:[-+*/%&|^@]|//|\*\*|<<|>>)?=(?!=)"
# A dataclass's `__init__` fields in order, with how many may be given by position (None: all).
Layout = tuple[dict[str, list[ast.AnnAssign]], int | None]


class DataclassFields(EvaluatorBase):
    """Dataclass fields read on an instance (`Inst`) whose construction the code shows."""

    def field_values(self, inst: Inst, attr: str) -> tuple[list[object], set[int]] | None:
        """The values the construction of `inst` gives the field `attr`, and the ids of the
        statements declaring it (the class model's run-time value of the field, left out for
        these); None when `attr` is no field the construction decides."""
        ctx = inst.ctx
        if inst.call is None or not isinstance(ctx, Ctx):
            return None
        layout = self.dataclass_layout(inst.cls)
        if layout is None or attr not in layout[0]:
            return None
        fields, keyword_only = layout
        declared = {id(statement) for statement in fields[attr]}
        call = inst.call
        if any(isinstance(arg, ast.Starred) for arg in call.args) or any(
            keyword.arg is None for keyword in call.keywords
        ):
            return None
        if call.args and keyword_only is not None and len(call.args) > keyword_only:
            return None
        order = list(fields)
        for position, arg in enumerate(call.args):
            if position < len(order) and order[position] == attr:
                return self.outside(self.ev(arg, ctx), attr, call, ctx), declared
        for keyword in call.keywords:
            if keyword.arg == attr:
                return self.outside(self.ev(keyword.value, ctx), attr, call, ctx), declared
        default = self.field_default(fields[attr][-1], inst.cls)
        if default is None:
            return None
        return self.outside(default, attr, call, ctx), declared

    def outside(self, values: list[object], attr: str, call: ast.Call, ctx: Ctx) -> list[object]:
        """The values, and one decided at run time when the project may set the attribute on
        an instance from outside its class."""
        if attr not in self.stored_outside:
            store = re.compile(rb"\.(?<!\bself\.)\s*" + re.escape(attr.encode()) + AUGMENTED)
            self.stored_outside[attr] = exists(self.contents, matches(GENERIC_STORES)) or exists(
                self.contents, matches(store)
            )
        if self.stored_outside[attr]:
            return [*values, Opaque(call, ctx.summary)]
        return values

    def dataclass_layout(
        self, cls: ClsV
    ) -> tuple[dict[str, list[ast.AnnAssign]], int | None] | None:
        """The `__init__` fields of a dataclass in order (bases first; a field declared again
        keeps its place), with how many may be given by position (None: all); None when the
        class or a project base of it is no dataclass by value."""
        key = id(cls.node)
        if key in self.layouts:
            return self.layouts[key]
        layout: Layout | None = None
        mro = self.mro(cls)
        classes = [c for c in reversed(mro) if isinstance(c, ClsV)]
        fields: dict[str, list[ast.AnnAssign]] = {}
        keyword_only: int | None = None
        if len(classes) == len(mro) and all(self.generates_init(klass) for klass in classes):
            for klass in classes:
                if self.dataclass_option(klass, "kw_only"):
                    keyword_only = len(fields) if keyword_only is None else keyword_only
                for statement in klass.node.body:
                    if not (
                        isinstance(statement, ast.AnnAssign)
                        and isinstance(statement.target, ast.Name)
                    ):
                        continue
                    annotation = ast.unparse(statement.annotation)
                    if KW_ONLY in annotation:
                        keyword_only = len(fields) if keyword_only is None else keyword_only
                    elif not any(word in annotation for word in NOT_FIELDS):
                        fields.setdefault(statement.target.id, []).append(statement)
            layout = (fields, keyword_only)
        self.layouts[key] = layout
        return layout

    def generates_init(self, cls: ClsV) -> bool:
        """A dataclass by value whose `__init__` is the generated one (no `init=False`, no
        `__init__` of its own)."""
        if any(
            isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
            and statement.name == "__init__"
            for statement in cls.node.body
        ):
            return False
        return self.is_dataclass(cls) and not self.dataclass_option(cls, "init", False)

    def is_dataclass(self, cls: ClsV) -> bool:
        return any(
            isinstance(value, Ext) and names.kind_of(value.qname) is names.Kind.DATACLASS
            for decorator in cls.node.decorator_list
            for value in self.ev(
                decorator.func if isinstance(decorator, ast.Call) else decorator,
                self.ctx_of(cls.summary, cls.node),
            )
        )

    def dataclass_option(self, cls: ClsV, option: str, value: bool = True) -> bool:
        """`@dataclass(option=...)` is given, and not as the literal opposite of `value` (a
        name or an expression counts as `value`: it may be)."""
        for decorator in cls.node.decorator_list:
            if isinstance(decorator, ast.Call):
                for keyword in decorator.keywords:
                    if keyword.arg == option and not (
                        isinstance(keyword.value, ast.Constant)
                        and keyword.value.value is (not value)
                    ):
                        return True
        return False

    def field_default(self, statement: ast.AnnAssign, cls: ClsV) -> list[object] | None:
        """A field's default: its value, `field(default=...)`, or what `default_factory`
        makes when called with nothing; None for a field without one."""
        value = statement.value
        if value is None:
            return None
        ctx = self.ctx(cls.summary, None, cls.node)
        if isinstance(value, ast.Call) and any(
            isinstance(v, Ext) and names.kind_of(v.qname) is names.Kind.DATACLASS_FIELD
            for v in self.ev(value.func, ctx)
        ):
            for keyword in value.keywords:
                if keyword.arg == "default":
                    return self.ev(keyword.value, ctx)
                if keyword.arg == "default_factory":
                    made = ast.Call(func=keyword.value, args=[], keywords=[])
                    ast.copy_location(made, keyword.value)
                    made.end_lineno = keyword.value.end_lineno
                    made.end_col_offset = keyword.value.end_col_offset
                    self.keep.append(made)
                    return self.ev(made, ctx)
            return None
        return self.ev(value, ctx)
