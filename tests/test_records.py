"""A record behaves as the same class made with `@dataclass`: what its users see (construction,
defaults, equality, hashing, repr, frozen attributes, pickling, `replace`) is compared on twin
classes, so a record can stand in for a dataclass without a change anywhere else."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import sys

import pytest

from amp_clipfix.records import field, is_record, record, record_names, replace


@record(frozen=True)
class FrozenRecord:
    name: str
    count: int = 0
    tags: tuple[str, ...] = ()
    notes: tuple[str, ...] | list[str] = field(default_factory=tuple)
    hidden: object = field(default=None, compare=False, repr=False)


@dataclasses.dataclass(frozen=True)
class FrozenRecordTwin:
    name: str
    count: int = 0
    tags: tuple[str, ...] = ()
    notes: tuple[str, ...] | list[str] = dataclasses.field(default_factory=tuple)
    hidden: object = dataclasses.field(default=None, compare=False, repr=False)


@record
class MutableRecord:
    name: str
    items: dict[str, int] = field(default_factory=dict)


@dataclasses.dataclass
class MutableRecordTwin:
    name: str
    items: dict[str, int] = dataclasses.field(default_factory=dict)


def hashed(value: object) -> object:
    """The hash, or the error hashing raises (a list field makes either unhashable)."""
    try:
        return hash(value)
    except TypeError as error:
        return type(error)


def shown(value: object) -> str:
    """The repr without the class name, which differs between the twins."""
    return repr(value).split("(", 1)[1]


@pytest.mark.parametrize(
    ("arguments", "keywords"),
    [(("a",), {}), (("a", 2), {"tags": ("x",)}), ((), {"name": "b", "hidden": 5, "notes": ["n"]})],
)
def test_a_frozen_record_is_made_compared_hashed_and_shown_as_its_dataclass_twin(
    arguments: tuple, keywords: dict
) -> None:
    made, twin = FrozenRecord(*arguments, **keywords), FrozenRecordTwin(*arguments, **keywords)
    assert shown(made) == shown(twin)
    assert vars(made) == vars(twin)  # every field, in order
    assert list(vars(made)) == list(vars(twin))
    assert made == FrozenRecord(*arguments, **keywords)
    assert hashed(made) == hashed(twin)  # a tuple of the compared fields, or unhashable
    assert made != twin  # another class is never equal, as between dataclasses
    assert (made == FrozenRecord("other")) == (twin == FrozenRecordTwin("other"))


def test_compare_false_fields_are_left_out_of_equality_and_repr() -> None:
    assert FrozenRecord("a", hidden=1) == FrozenRecord("a", hidden=2)
    assert "hidden" not in repr(FrozenRecord("a", hidden=1))
    assert hashed(FrozenRecord("a", hidden=1)) == hashed(FrozenRecord("a", hidden=2))
    assert hashed(FrozenRecord("a", notes=[])) is hashed(FrozenRecordTwin("a", notes=[]))


def test_defaults_are_made_per_instance_and_class_attributes_match_dataclasses() -> None:
    first, second = MutableRecord("a"), MutableRecord("b")
    first.items["x"] = 1
    assert second.items == {}
    assert FrozenRecord.count == FrozenRecordTwin.count == 0
    assert FrozenRecord.hidden is FrozenRecordTwin.hidden is None
    assert hasattr(FrozenRecord, "notes") == hasattr(FrozenRecordTwin, "notes")
    assert MutableRecord.__hash__ is None and MutableRecordTwin.__hash__ is None
    assert FrozenRecord.__match_args__ == FrozenRecordTwin.__match_args__


def test_a_frozen_record_refuses_changes_as_a_frozen_dataclass_does() -> None:
    made = FrozenRecord("a")
    with pytest.raises(AttributeError):
        made.name = "b"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del made.name  # type: ignore[misc]
    mutable = MutableRecord("a")
    mutable.name = "b"
    assert mutable == MutableRecord("b")


@pytest.mark.parametrize(
    ("arguments", "keywords"),
    [((), {}), (("a", 1, (), [], None, "extra"), {}), (("a",), {"name": "b"}), ((), {"x": 1})],
)
def test_wrong_arguments_raise_type_error_as_for_a_dataclass(
    arguments: tuple, keywords: dict
) -> None:
    with pytest.raises(TypeError):
        FrozenRecordTwin(*arguments, **keywords)
    with pytest.raises(TypeError):
        FrozenRecord(*arguments, **keywords)


def test_replace_copy_and_pickle_keep_every_field() -> None:
    made = FrozenRecord("a", 2, ("t",), ["n"], hidden=3)
    changed = replace(made, count=5)
    assert (changed.name, changed.count, changed.tags, changed.hidden) == ("a", 5, ("t",), 3)
    assert changed.notes is made.notes  # replace passes the values on, as dataclasses does
    assert replace(FrozenRecordTwin("a"), count=5) == FrozenRecordTwin("a", 5)  # both kinds
    for copied in (pickle.loads(pickle.dumps(made)), copy.copy(made), copy.deepcopy(made)):
        assert copied == made and vars(copied) == vars(made)
    assert is_record(made) and is_record(FrozenRecord) and not is_record(FrozenRecordTwin("a"))
    assert record_names(made) == tuple(f.name for f in dataclasses.fields(FrozenRecordTwin))


def test_a_field_without_a_default_after_one_with_a_default_is_refused() -> None:
    with pytest.raises(TypeError):

        @record
        class Broken:
            first: int = 0
            second: int


@pytest.mark.parametrize(
    ("arguments", "keywords"),
    [
        (("a", 1, ("t",), ["n"], 7), {}),  # every field by position
        (("a", 1), {"hidden": 2}),  # some by position, a later one by keyword
        ((), {"count": 3, "name": "b"}),  # keywords out of field order, defaults for the rest
        (("a",), {"notes": ["x"], "tags": ("y",)}),
    ],
)
def test_each_way_of_giving_the_fields_sets_them_in_field_order_as_a_dataclass_does(
    arguments: tuple, keywords: dict
) -> None:
    made, twin = FrozenRecord(*arguments, **keywords), FrozenRecordTwin(*arguments, **keywords)
    assert list(vars(made).items()) == list(vars(twin).items())


@pytest.mark.parametrize(
    ("arguments", "keywords", "message"),
    [
        (("a", 1, (), [], None, "extra"), {}, "takes 6 positional arguments but 7 were given"),
        (("a",), {"x": 1, "name": "b"}, "got an unexpected keyword argument 'x'"),
        (("a",), {"count": 1, "name": "b"}, "got multiple values for argument 'name'"),
        ((), {"count": 1}, "missing 1 required positional argument: 'name'"),
        ((), {"count": 1, "y": 2}, "got an unexpected keyword argument 'y'"),
    ],
)
def test_wrong_arguments_say_what_a_dataclass_says(
    arguments: tuple, keywords: dict, message: str
) -> None:
    with pytest.raises(TypeError) as twin_error:
        FrozenRecordTwin(*arguments, **keywords)
    with pytest.raises(TypeError) as error:
        FrozenRecord(*arguments, **keywords)
    assert str(error.value) == f"FrozenRecord.__init__() {message}"
    if "positional arguments but" not in message:  # dataclasses says "from 2 to 6" there
        assert str(twin_error.value).endswith(message)


class WithOwnInit(MutableRecord):  # a record's subclass: the fields are its base's
    def __init__(self, name: str, items: dict[str, int] | None = None) -> None:
        super().__init__(name.upper(), items or {})


def test_replace_copies_every_field_in_order_and_refuses_what_the_class_refuses() -> None:
    made = FrozenRecord("a", 2, ("t",), ["n"], hidden=3)
    changed = replace(made, tags=("u",), hidden=4)
    twin = replace(FrozenRecordTwin("a", 2, ("t",), ["n"], 3), tags=("u",), hidden=4)
    assert list(vars(changed).items()) == list(vars(twin).items())
    assert type(changed) is FrozenRecord and changed.notes is made.notes
    made_again = FrozenRecord("a", 2, ("u",), made.notes, hidden=4)
    assert sys.getsizeof(vars(changed)) == sys.getsizeof(vars(made_again))  # keys shared
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        replace(made, bogus=1)
    mutable = MutableRecord("a")
    mutable.extra = 1  # type: ignore[attr-defined]  # not a field: not copied
    assert vars(replace(mutable, name="b")) == {"name": "b", "items": {}}
    assert replace(WithOwnInit("a"), name="b").name == "B"  # a class's own __init__ still runs
