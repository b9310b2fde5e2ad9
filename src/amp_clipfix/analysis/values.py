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
from dataclasses import dataclass, field
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


@dataclass(eq=False, slots=True)
class Lit:
    """A literal written in the code (`True`, `"16-mixed"`, `1.0`) and where it is written:
    `value` the constant itself (what flags and bounds are compared with)."""

    value: object
    node: ast.AST
    summary: Summary

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


@dataclass(eq=False, slots=True)
class Opaque:
    """A value the code does not decide (arguments from outside, environment, arithmetic)."""

    node: ast.AST
    summary: Summary


@dataclass(eq=False, slots=True)
class Absent(Opaque):
    """A dict's key that only a store which may not run sets (`node`): whether the dict holds
    it is decided at run time; where it does not, the callee's default applies."""


@dataclass(eq=False, slots=True)
class DictV:
    """A dict built in the code; `entries` map constant keys to their possible values."""

    entries: dict[str, list[object]] = field(default_factory=dict)
    closed: bool = True  # False: it may hold keys the code does not show


@dataclass(eq=False, slots=True)
class TupleV:
    items: list[list[object]]


@dataclass(eq=False, slots=True)
class Ext:
    """A name from outside the project, by qualified name (`torch.optim.AdamW`)."""

    qname: str


@dataclass(eq=False, slots=True)
class ModuleV:
    summary: Summary


@dataclass(eq=False, slots=True)
class Fn:
    """A function or method of the project (`bound`: called on an instance, skip `self`;
    `receiver`: the instance's class when it is a subclass of `cls`, analysis/dispatch.py)."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    summary: Summary
    cls: ast.ClassDef | None = None
    bound: bool = False
    receiver: ClsV | None = None


@dataclass(eq=False, slots=True)
class ClsV:
    node: ast.ClassDef
    summary: Summary

    @property
    def key(self) -> UseId:
        return UseId(self.summary.path, self.node.name)


@dataclass(eq=False, slots=True)
class SelfV:
    """`self` inside a method of `cls` (or `super()` when `is_super`)."""

    cls: ClsV
    is_super: bool = False


@dataclass(eq=False, slots=True)
class Inst:
    """An instance of a project class made by `call`, written in `ctx` (the evaluator's
    context, where the call's arguments are read: analysis/fields.py)."""

    cls: ClsV
    call: ast.Call | None = None
    ctx: object = None


@dataclass(eq=False, slots=True)
class Part:
    """`functools.partial(func, *args, **keywords)`; `args` the values of the positional
    arguments it binds, one list per position (None: a `*x` makes them unknown)."""

    funcs: list[object]
    keywords: dict[str, list[object]]
    node: ast.Call
    summary: Summary
    args: list[list[object]] | None = field(default_factory=list)


@dataclass(eq=False, slots=True)
class LambdaV:
    node: ast.Lambda
    ctx: object


@dataclass(eq=False, slots=True)
class Opt:
    """An optimizer built by `call`; `fused` the values its `fused` argument may take."""

    call: ast.Call
    summary: Summary
    fused: list[object]


@dataclass(eq=False, slots=True)
class SchedulerV:
    """A torch learning-rate scheduler built by `call`: its `step()` is no optimizer's step."""

    call: ast.Call
    summary: Summary


@dataclass(eq=False, slots=True)
class TrainerV:
    entry: EntryId
    # The `Trainer(...)` call itself when it is one (not a subclass's), for the searches that
    # read its arguments (analysis/facts.py).
    call: ast.Call | None = None
    summary: Summary | None = None


@dataclass(eq=False, slots=True)
class FabricV:
    entry: EntryId | None
    call: ast.Call | None = None  # the `Fabric(...)` call, as for TrainerV
    summary: Summary | None = None


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
