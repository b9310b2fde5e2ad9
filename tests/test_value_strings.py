"""A string a call gets as a positional argument opens the clip index (analysis/value_sites.py)
only where an attribute of that name may be the function: `getattr(x, "name")` is read as
`x.name` is (library.call_getattr, and dataclass_calls' name decided by the code), so a
module-level function no module object of which can be made is never what a string names. A
`global` or `nonlocal` of the name still opens it, as a method's name and an importable
module's function written as a string do. The same findings as the whole search either way."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_any_event import assert_index_closed_as
from test_clip_tail import same_as_the_whole_search
from test_value_sites import TOOLS, program, sites

OWN_MODULE = (True, False, {"helpers"})  # the function's own module; no module object of it
ATTRIBUTE = (True, True, None)  # a method, or a function of a module an object of may be made

STRINGS = {
    # source -> the sites' number for a function seen only by its bare name, then for one an
    # attribute may be (None: the module writes it as a value the evaluator may follow)
    "print('run')\n": (0, None),
    "log(level, 'run')\n": (0, None),
    "getattr(m, 'run')\n": (0, None),
    "def f():\n    global run\n": (None, None),
    "def f():\n    def g():\n        nonlocal run\n": (None, None),
    "spawn(run)\nprint('run')\n": (1, None),
}


@pytest.mark.parametrize("source", sorted(STRINGS))
def test_a_string_names_the_function_only_where_an_attribute_may(source: str) -> None:
    assert (sites(source, OWN_MODULE), sites(source, ATTRIBUTE)) == STRINGS[source]


# name -> the program, and whether the clip index stays closed
PROGRAMS: dict[str, tuple[dict[str, str], bool]] = {
    "its name a positional string in its own module": (program('print("clip_all")'), True),
    "its name a string given to a project function": (
        program('call(print, "clip_all")', imports="from tools import call"),
        True,
    ),
    "its name a string a getattr of another object gets": (
        program('getattr(model, "clip_all")'),
        True,
    ),
    "its name a string, its module imported as an object": (
        {**program('print("clip_all")'), "other.py": "import helpers\n"},
        False,
    ),
    "its name a string a getattr of its module gets": (
        program('import helpers\ngetattr(helpers, "clip_all")(model)'),
        False,
    ),
    "its name declared global": (program("global clip_all\nclip_all = None"), False),
}


def files(name: str) -> dict[str, str]:
    return {**PROGRAMS[name][0], "tools.py": TOOLS}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_index_stays_closed_where_no_attribute_can_be_the_function(
    name: str, tmp_path: Path
) -> None:
    assert_index_closed_as(tmp_path, files(name), PROGRAMS[name][1], {"clip_all"})


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_findings_as_the_whole_search(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tail = same_as_the_whole_search(tmp_path, monkeypatch, files(name))
    assert "ACF004" in tail
