"""Symbolic values: what an expression may hold, as far as the project's code tells.

The project resolution (resolve.py) evaluates expressions to lists of these; a list with an
`Opaque` in it means "decided at run time" somewhere. A literal holds the real constant
(`Lit.value`: `False` is no `"False"`); its source text (`Lit.text`) is for display only.

Each value has a memo key (`memo_key`): what it is, not which object holds it. A literal is
the constant written at one place, a class or function its node, a library name its qualified
name: made again in another calling context, it is the same value, so a memo keyed by the
arguments of a call (returns.py) meets it again. Values are slotted (NeMo holds millions).
"""

from __future__ import annotations

import ast
from collections.abc import Hashable, Iterable
from typing import TypeGuard

from amp_clipfix.analysis.nodes import literal_text
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.models import EntryId, UseId

# The constants a literal may hold: what `ast.literal_eval` reads from one written constant.
CONSTANTS = (bool, int, float, str, bytes, type(None))


def constant_of(node: ast.AST) -> tuple[bool, object]:
    """Whether `node` is a written constant (`True`, `None`, `16`, `"16-mixed"`, `b"x"`, a
    negated number `-1.0`), and the constant itself as Python reads it."""
    if isinstance(node, ast.Constant) and isinstance(node.value, CONSTANTS):
        return (True, node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        known, inner = constant_of(node.operand)
        if known and isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return (True, -inner)
    return (False, None)


def string_of(node: ast.AST) -> str | None:
    """The string a node writes (`"precision"`), else None: a dict key the evaluator follows
    (a dict's entries are its string keys; `d[1]` is no `d["1"]`)."""
    known, constant = constant_of(node)
    return constant if known and isinstance(constant, str) else None


class Plain:
    """The values' common part: slotted, compared by identity, shown as a dataclass shows
    itself (`Lit(value=..., node=..., summary=...)`). Written by hand, not `@dataclass`: a
    dataclass compiles its `__init__` and `__repr__` from source each time its module is
    imported (17 classes: about a tenth of a small project's run, with `dataclasses` and
    `inspect` imported for them); these are compiled once, into the module's bytecode."""

    __slots__ = ()

    def __repr__(self) -> str:
        kinds = reversed(type(self).__mro__)
        names = [name for kind in kinds for name in kind.__dict__.get("__slots__", ())]
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"


class Lit(Plain):
    """A literal written in the code (`True`, `"16-mixed"`, `1.0`) and where it is written:
    `value` the constant itself (what flags and bounds are compared with)."""

    __slots__ = ("value", "node", "summary")

    def __init__(self, value: object, node: ast.AST, summary: Summary) -> None:
        self.value = value
        self.node = node
        self.summary = summary

    @property
    def text(self) -> str:
        """The literal as shown in a report (`16-mixed`, `True`, `-1.0`): display only."""
        if isinstance(self.node, ast.UnaryOp) and isinstance(self.value, (int, float)):
            return f"-{literal_text(-self.value)}"
        return literal_text(self.value)


def is_off(value: object) -> bool:
    """A literal `False` or `None`: a flag (`fused`, `error_if_nonfinite`) the code turns off."""
    return isinstance(value, Lit) and (value.value is False or value.value is None)


def is_true(value: object) -> TypeGuard[Lit]:
    """A literal `True` (not `1`, not `"True"`): a flag the code certainly turns on."""
    return isinstance(value, Lit) and value.value is True


def setting(value: Lit) -> str | None:
    """A precision or strategy literal as Lightning reads it: an int by its `str()` (`16` and
    `"16"` are one setting), `None` as `"None"` (the default of older releases, registered as
    the strategy `"none"`); None for a constant that is no setting (`True`, `1.5`, bytes)."""
    if isinstance(value.value, str):
        return value.value
    if value.value is None or isinstance(value.value, int) and not isinstance(value.value, bool):
        return value.text
    return None


def settings(values: Iterable[Lit]) -> set[str]:
    """The settings (`setting`) of some literals; a constant that is no setting is left out."""
    return {name for value in values if (name := setting(value)) is not None}


def strings(values: Iterable[Lit]) -> set[str]:
    """The string constants of some literals (`"norm"`, `"apex"`), as written."""
    return {value.value for value in values if isinstance(value.value, str)}


def clips(value: Lit) -> bool:
    """Whether a clip value literal clips: a number above zero (Lightning reads a string as a
    float too); `None`, `0`, `True` and other text do not."""
    constant = value.value
    if isinstance(constant, bool) or constant is None:
        return False
    if isinstance(constant, (int, float)):
        return constant > 0
    try:
        return isinstance(constant, str) and float(constant) > 0
    except ValueError:
        return False


class Opaque(Plain):
    """A value the code does not decide (arguments from outside, environment, arithmetic)."""

    __slots__ = ("node", "summary")

    def __init__(self, node: ast.AST, summary: Summary) -> None:
        self.node = node
        self.summary = summary


class Absent(Opaque):
    """A dict's key that only a store which may not run sets (`node`): whether the dict holds
    it is decided at run time; where it does not, the callee's default applies."""

    __slots__ = ()


class DictV(Plain):
    """A dict built in the code; `entries` map constant keys to their possible values
    (a new dict when none is given); `closed`: False when it may hold keys the code does not
    show."""

    __slots__ = ("entries", "closed")

    def __init__(self, entries: dict[str, list[object]] | None = None, closed: bool = True) -> None:
        self.entries = {} if entries is None else entries
        self.closed = closed


class TupleV(Plain):
    __slots__ = ("items",)

    def __init__(self, items: list[list[object]]) -> None:
        self.items = items


class Ext(Plain):
    """A name from outside the project, by qualified name (`torch.optim.AdamW`)."""

    __slots__ = ("qname",)

    def __init__(self, qname: str) -> None:
        self.qname = qname


class ModuleV(Plain):
    __slots__ = ("summary",)

    def __init__(self, summary: Summary) -> None:
        self.summary = summary


class Fn(Plain):
    """A function or method of the project (`bound`: called on an instance, skip `self`;
    `receiver`: the instance's class when it is a subclass of `cls`, analysis/dispatch.py)."""

    __slots__ = ("node", "summary", "cls", "bound", "receiver")

    def __init__(
        self,
        node: ast.FunctionDef | ast.AsyncFunctionDef,
        summary: Summary,
        cls: ast.ClassDef | None = None,
        bound: bool = False,
        receiver: ClsV | None = None,
    ) -> None:
        self.node = node
        self.summary = summary
        self.cls = cls
        self.bound = bound
        self.receiver = receiver


class ClsV(Plain):
    __slots__ = ("node", "summary")

    def __init__(self, node: ast.ClassDef, summary: Summary) -> None:
        self.node = node
        self.summary = summary

    @property
    def key(self) -> UseId:
        return UseId(self.summary.path, self.node.name)


class SelfV(Plain):
    """`self` inside a method of `cls` (or `super()` when `is_super`)."""

    __slots__ = ("cls", "is_super")

    def __init__(self, cls: ClsV, is_super: bool = False) -> None:
        self.cls = cls
        self.is_super = is_super


class Inst(Plain):
    """An instance of a project class made by `call`, written in `ctx` (the evaluator's
    context, where the call's arguments are read: analysis/fields.py)."""

    __slots__ = ("cls", "call", "ctx")

    def __init__(self, cls: ClsV, call: ast.Call | None = None, ctx: object = None) -> None:
        self.cls = cls
        self.call = call
        self.ctx = ctx


class Part(Plain):
    """`functools.partial(func, *args, **keywords)`; `args` the values of the positional
    arguments it binds, one list per position (None: a `*x` makes them unknown)."""

    __slots__ = ("funcs", "keywords", "node", "summary", "args")

    def __init__(
        self,
        funcs: list[object],
        keywords: dict[str, list[object]],
        node: ast.Call,
        summary: Summary,
        args: list[list[object]] | None,
    ) -> None:
        self.funcs = funcs
        self.keywords = keywords
        self.node = node
        self.summary = summary
        self.args = args


class LambdaV(Plain):
    __slots__ = ("node", "ctx")

    def __init__(self, node: ast.Lambda, ctx: object) -> None:
        self.node = node
        self.ctx = ctx


class Opt(Plain):
    """An optimizer built by `call`; `fused` the values its `fused` argument may take."""

    __slots__ = ("call", "summary", "fused")

    def __init__(self, call: ast.Call, summary: Summary, fused: list[object]) -> None:
        self.call = call
        self.summary = summary
        self.fused = fused


class SchedulerV(Plain):
    """A torch learning-rate scheduler built by `call`: its `step()` is no optimizer's step."""

    __slots__ = ("call", "summary")

    def __init__(self, call: ast.Call, summary: Summary) -> None:
        self.call = call
        self.summary = summary


class TrainerV(Plain):
    """`call`: the `Trainer(...)` call itself when it is one (not a subclass's), for the
    searches that read its arguments (analysis/facts.py)."""

    __slots__ = ("entry", "call", "summary")

    def __init__(
        self, entry: EntryId, call: ast.Call | None = None, summary: Summary | None = None
    ) -> None:
        self.entry = entry
        self.call = call
        self.summary = summary


class FabricV(Plain):
    """`call`: the `Fabric(...)` call, as for TrainerV."""

    __slots__ = ("entry", "call", "summary")

    def __init__(
        self, entry: EntryId | None, call: ast.Call | None = None, summary: Summary | None = None
    ) -> None:
        self.entry = entry
        self.call = call
        self.summary = summary


def memo_key(value: object) -> Hashable:
    """What a value is, as a memo key's part: equal for the same value made again in another
    calling context (the evaluator makes a `Lit` per context it reads the literal in). A literal
    is the constant written at its node (the node stays in the key: a finding shows where the
    literal is written), a library name its qualified name, a module, class or function of the
    project its node, "decided at run time" the place it is decided at; an instance, a partial,
    a lambda or an optimizer by the object (what they hold was read in their own context)."""
    if isinstance(value, Lit):
        return ("lit", id(value.node))
    if isinstance(value, Opaque):
        return (type(value).__name__, id(value.node), id(value.summary))
    if isinstance(value, Ext):
        return ("ext", value.qname)
    if isinstance(value, ClsV):
        return ("cls", id(value.node))
    if isinstance(value, ModuleV):
        return ("module", id(value.summary))
    if isinstance(value, Fn):
        receiver = None if value.receiver is None else id(value.receiver.node)
        return ("fn", id(value.node), id(value.cls), value.bound, receiver)
    if isinstance(value, SelfV):
        return ("self", id(value.cls.node), value.is_super)
    return id(value)
