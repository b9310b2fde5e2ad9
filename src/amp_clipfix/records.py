"""Plain data classes for the modules every run imports, without `dataclasses`.

`dataclasses` imports `inspect` (and with it `ast`, `dis`, `tokenize`) and compiles six methods
per class at import (ten with `order`): ~12 ms and ~0.3-0.7 ms a class, a quarter of a small
project's `check`. A `record` is the same to its users as a `@dataclass` with `eq=True`:
keyword or positional construction in field order, defaults and
`field(default_factory=...)`, equality, (frozen) hashing and (with `order=True`) ordering
over the compared fields in order, the dataclass `repr`, frozen attributes, pickling, and
`replace`, which serves dataclasses too. The methods are shared functions reading each
class's field table (the compared fields through one C `attrgetter`), so making a class
costs almost nothing; a record is made ~1 us slower than a dataclass instance, so types
made by the thousand stay dataclasses (the evaluator's values and frames).
"""

from __future__ import annotations

TYPE_CHECKING = False  # importing typing would cost what this module saves
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T")
else:

    def dataclass_transform(**_: object) -> Callable[[T], T]:
        """Only type checkers read it: they then check records as they check dataclasses."""
        return lambda decorated: decorated


RECORD_FIELDS = "__record_fields__"


class FrozenInstanceError(AttributeError):
    """An attribute of a frozen record was set or deleted (dataclasses' error of that name)."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class Field:
    """What `field(...)` says about one field; `record` reads it from the class body."""

    __slots__ = ("name", "default", "default_factory", "compare", "repr")

    def __init__(
        self,
        default: object = MISSING,
        default_factory: Callable[[], object] | _Missing = MISSING,
        compare: bool = True,
        repr: bool = True,  # noqa: A002 - dataclasses' own keyword
    ) -> None:
        self.name = ""
        self.default, self.default_factory = default, default_factory
        self.compare, self.repr = compare, repr


def field(
    *,
    default: Any = MISSING,
    default_factory: Callable[[], Any] | _Missing = MISSING,
    compare: bool = True,
    repr: bool = True,  # noqa: A002 - dataclasses' own keyword
) -> Any:
    """A field with a default made per instance, or one left out of equality or `repr`."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default, default_factory, compare, repr)


class _Table:
    """A record class's fields: names in order, defaults, and which take part in eq / repr;
    `values`: the compared fields' values of an instance, as a tuple."""

    __slots__ = ("names", "members", "defaults", "factories", "compared", "shown", "values")

    def __init__(self, fields: list[Field]) -> None:
        self.names = tuple(f.name for f in fields)
        self.members = frozenset(self.names)
        self.defaults = {f.name: f.default for f in fields if f.default is not MISSING}
        self.factories: dict[str, Callable[[], object]] = {
            f.name: f.default_factory for f in fields if not isinstance(f.default_factory, _Missing)
        }
        self.compared = tuple(f.name for f in fields if f.compare)
        self.shown = tuple(f.name for f in fields if f.repr)
        self.values: Callable[[object], tuple[object, ...]]
        if len(self.compared) == 1:
            name = self.compared[0]
            self.values = lambda value: (getattr(value, name),)
        elif self.compared:
            from operator import attrgetter

            self.values = attrgetter(*self.compared)
        else:
            self.values = lambda value: ()


@dataclass_transform(field_specifiers=(field, Field))
def record(cls: type[T] | None = None, /, *, frozen: bool = False, order: bool = False) -> Any:
    """`@record` / `@record(frozen=True, order=True)`: the class as `@dataclass` would make it
    (eq, repr, init; hashable when frozen, unhashable otherwise; `<`, `<=`, `>`, `>=` with
    `order`)."""

    def wrap(cls: type[T]) -> type[T]:
        return _make(cls, frozen, order)

    return wrap if cls is None else wrap(cls)


def _make(cls: type[T], frozen: bool, order: bool = False) -> type[T]:
    fields = []
    seen_default = False
    for name in cls.__dict__.get("__annotations__", {}):
        declared = cls.__dict__.get(name, MISSING)
        made = declared if isinstance(declared, Field) else Field(default=declared)
        made.name = name
        has_default = made.default is not MISSING or made.default_factory is not MISSING
        if seen_default and not has_default:
            raise TypeError(f"non-default argument {name!r} follows default argument")
        seen_default = seen_default or has_default
        if made.default is MISSING and name in cls.__dict__:
            delattr(cls, name)  # dataclass leaves no class attribute for a factory's field
        elif isinstance(declared, Field):
            setattr(cls, name, made.default)
        fields.append(made)
    table = _Table(fields)
    setattr(cls, RECORD_FIELDS, table)
    cls.__init__ = _init  # type: ignore[method-assign]
    cls.__repr__ = _repr  # type: ignore[method-assign]
    cls.__eq__ = _eq  # type: ignore[method-assign]
    setattr(cls, "__match_args__", table.names)  # noqa: B010 - a class mypy types as `type[T]`
    if order:
        for name, compare in _order_methods().items():
            if name in cls.__dict__:
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
            setattr(cls, name, compare)
    if frozen:
        cls.__setattr__ = _frozen_setattr  # type: ignore[method-assign]
        cls.__delattr__ = _frozen_delattr  # type: ignore[method-assign]
        cls.__hash__ = _hash  # type: ignore[method-assign]
    else:
        cls.__hash__ = None  # type: ignore[assignment]
    return cls


def _init(self: object, *args: object, **kwargs: object) -> None:
    table: _Table = getattr(type(self), RECORD_FIELDS)
    names = table.names
    state = self.__dict__
    if not args and len(kwargs) == len(names) and kwargs.keys() == table.members:
        for name in names:  # every field by keyword (`replace`): nothing to check
            state[name] = kwargs[name]
        return
    if len(args) > len(names):
        raise _argument_error(self, table, args, kwargs)
    state.update(zip(names, args))  # fields in order: positional ones first
    given = 0
    for name in names[len(args) :]:
        if name in kwargs:
            state[name] = kwargs[name]
            given += 1
        elif name in table.defaults:
            state[name] = table.defaults[name]
        elif name in table.factories:
            state[name] = table.factories[name]()
        else:
            raise _argument_error(self, table, args, kwargs, name)
    if given != len(kwargs):  # a keyword that is no later field: unknown or given twice
        raise _argument_error(self, table, args, kwargs)


def _argument_error(
    self: object, table: _Table, args: tuple, kwargs: dict, missing: str = ""
) -> TypeError:
    """The error dataclasses' `__init__` raises: too many positional arguments, else the first
    keyword (in the order given) that is unknown or given twice, else the `missing` field."""
    names, title = table.names, f"{type(self).__qualname__}.__init__()"
    if len(args) > len(names):
        return TypeError(
            f"{title} takes {len(names) + 1} positional arguments but {len(args) + 1} were given"
        )
    for name in kwargs:
        if name not in table.members:
            return TypeError(f"{title} got an unexpected keyword argument {name!r}")
        if name in names[: len(args)]:
            return TypeError(f"{title} got multiple values for argument {name!r}")
    return TypeError(f"{title} missing 1 required positional argument: {missing!r}")


def _repr(self: object) -> str:
    table: _Table = getattr(type(self), RECORD_FIELDS)
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in table.shown)
    return f"{type(self).__qualname__}({shown})"


def _values(self: object) -> tuple[object, ...]:
    return getattr(type(self), RECORD_FIELDS).values(self)


def _eq(self: object, other: object) -> bool:
    if other.__class__ is self.__class__:
        values = getattr(type(self), RECORD_FIELDS).values
        return values(self) == values(other)
    return NotImplemented


def _hash(self: object) -> int:
    return hash(getattr(type(self), RECORD_FIELDS).values(self))


def _ordering(compare: Callable[[Any, Any], Any]) -> Callable[[object, object], bool]:
    """`<`, `<=`, `>` or `>=` of two records of one class: `compare` of their compared fields'
    values, as a tuple each (dataclasses' order)."""

    def method(self: object, other: object) -> bool:
        if other.__class__ is self.__class__:
            return compare(_values(self), _values(other))
        return NotImplemented

    return method


def _order_methods() -> dict[str, Callable[[object, object], bool]]:
    import operator  # here: only a class with `order` needs it (start-up imports none)

    return {
        "__lt__": _ordering(operator.lt),
        "__le__": _ordering(operator.le),
        "__gt__": _ordering(operator.gt),
        "__ge__": _ordering(operator.ge),
    }


def _frozen_setattr(self: object, name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: object, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


def is_record(value: object) -> bool:
    """A record class or an instance of one."""
    kind = value if isinstance(value, type) else type(value)
    return RECORD_FIELDS in kind.__dict__ or hasattr(kind, RECORD_FIELDS)


def record_names(value: object) -> tuple[str, ...]:
    """The names of a record's fields, in order (`dataclasses.fields` for records)."""
    return getattr(value, RECORD_FIELDS).names


def replace(value: T, /, **changes: Any) -> T:
    """A copy of a record (or a dataclass instance) with `changes`."""
    kind = type(value)
    table: _Table | None = getattr(kind, RECORD_FIELDS, None)
    if table is None:
        import dataclasses

        return dataclasses.replace(value, **changes)  # type: ignore[type-var]
    if (
        kind.__init__ is _init
        and kind.__new__ is object.__new__
        and changes.keys() <= table.members
    ):
        made = object.__new__(kind)  # what `_init` makes of every field by keyword, unchecked
        state = made.__dict__  # set one at a time: `update` would unshare the keys (+72 bytes)
        for name in table.names:
            state[name] = changes[name] if name in changes else getattr(value, name)
        return made
    for name in table.names:
        if name not in changes:
            changes[name] = getattr(value, name)
    return kind(**changes)
