"""Symbolic values: what an expression may hold, as far as the project's code tells.

The project resolution (resolve.py) evaluates expressions to lists of these; a list with an
`Opaque` in it means "decided at run time" somewhere.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from amp_clipfix.analysis.summary import Summary
from amp_clipfix.models import EntryId, UseId


@dataclass(eq=False)
class Lit:
    """A literal written in the code (`True`, `"16-mixed"`, `1.0`) and where it is written."""

    value: str  # its text, as Lightning normalises a setting (`16` and `"16"`: `16`)
    node: ast.AST
    summary: Summary

    @property
    def constant(self) -> object:
        """The constant itself, as Python reads it (`True`, `None`, `16`, `-1.0`, `"16-mixed"`):
        what a flag or a bound is compared with (a string `"False"` is no `False`)."""
        if isinstance(self.node, ast.Constant):
            return self.node.value
        try:
            return ast.literal_eval(self.node)  # a negated number
        except (ValueError, TypeError):
            return self.value


def is_off(value: object) -> bool:
    """A literal `False` or `None`: a flag (`fused`, `error_if_nonfinite`) the code turns off."""
    return isinstance(value, Lit) and (value.constant is False or value.constant is None)


@dataclass(eq=False)
class Opaque:
    """A value the code does not decide (arguments from outside, environment, arithmetic)."""

    node: ast.AST
    summary: Summary


@dataclass(eq=False)
class Absent(Opaque):
    """A dict's key that only a store which may not run sets (`node`): whether the dict holds
    it is decided at run time; where it does not, the callee's default applies."""


@dataclass(eq=False)
class DictV:
    """A dict built in the code; `entries` map constant keys to their possible values."""

    entries: dict[str, list[object]] = field(default_factory=dict)
    closed: bool = True  # False: it may hold keys the code does not show


@dataclass(eq=False)
class TupleV:
    items: list[list[object]]


@dataclass(eq=False)
class Ext:
    """A name from outside the project, by qualified name (`torch.optim.AdamW`)."""

    qname: str


@dataclass(eq=False)
class ModuleV:
    summary: Summary


@dataclass(eq=False)
class Fn:
    """A function or method of the project (`bound`: called on an instance, skip `self`;
    `receiver`: the instance's class when it is a subclass of `cls`, analysis/dispatch.py)."""

    node: ast.FunctionDef | ast.AsyncFunctionDef
    summary: Summary
    cls: ast.ClassDef | None = None
    bound: bool = False
    receiver: ClsV | None = None


@dataclass(eq=False)
class ClsV:
    node: ast.ClassDef
    summary: Summary

    @property
    def key(self) -> UseId:
        return UseId(self.summary.path, self.node.name)


@dataclass(eq=False)
class SelfV:
    """`self` inside a method of `cls` (or `super()` when `is_super`)."""

    cls: ClsV
    is_super: bool = False


@dataclass(eq=False)
class Inst:
    """An instance of a project class made by `call`, written in `ctx` (the evaluator's
    context, where the call's arguments are read: analysis/fields.py)."""

    cls: ClsV
    call: ast.Call | None = None
    ctx: object = None


@dataclass(eq=False)
class Part:
    """`functools.partial(func, *args, **keywords)`; `args` the values of the positional
    arguments it binds, one list per position (None: a `*x` makes them unknown)."""

    funcs: list[object]
    keywords: dict[str, list[object]]
    node: ast.Call
    summary: Summary
    args: list[list[object]] | None = field(default_factory=list)


@dataclass(eq=False)
class LambdaV:
    node: ast.Lambda
    ctx: object


@dataclass(eq=False)
class Opt:
    """An optimizer built by `call`; `fused` the values its `fused` argument may take."""

    call: ast.Call
    summary: Summary
    fused: list[object]


@dataclass(eq=False)
class SchedulerV:
    """A torch learning-rate scheduler built by `call`: its `step()` is no optimizer's step."""

    call: ast.Call
    summary: Summary


@dataclass(eq=False)
class TrainerV:
    entry: EntryId
    # The `Trainer(...)` call itself when it is one (not a subclass's), for the searches that
    # read its arguments (analysis/facts.py).
    call: ast.Call | None = None
    summary: Summary | None = None


@dataclass(eq=False)
class FabricV:
    entry: EntryId | None
    call: ast.Call | None = None  # the `Fabric(...)` call, as for TrainerV
    summary: Summary | None = None
