"""A module-level function is reached as `x.name` only where an object of a module that holds it
can be made (analysis/module_holders.py): an import binds one of its name, or its package's
object can be made and some text writes its name as an attribute. ACF004's clip index stays
closed where another object's `x.name` is spelled like its function and no module object of
the function's module can be made (a script no import names, a folder that is no identifier,
a function imported by name from a module named like it), and opens wherever one can (an
import of the module, an attribute of its package, a `getattr`, its package's bare name of it,
a folder without `__init__.py`). The same findings as the whole search either way."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_any_event import assert_index_closed_as
from test_clip_tail import HELPERS, loop, same_as_the_whole_search
from test_incremental import same_as_cold

from amp_clipfix.analysis.module_objects import binds_module
from amp_clipfix.analysis.summary import summarise
from amp_clipfix.analysis.text_tests import attribute_written

# another object's attribute spelled like the helper: a value of it, if it may be the helper
SPELLED = "import wandb\n\nflag = wandb.clip_all\n"


def script(more: dict[str, str] | None = None) -> dict[str, str]:
    """The loop clips through `tools/hpo.py`'s helper, imported by name; a file writes
    `wandb.clip_all`, and an import binds the package `tools` (`import tools.extra`)."""
    files = {
        "train.py": loop("from tools.hpo import clip_all", "clip_all(model)"),
        "tools/__init__.py": "",
        "tools/hpo.py": HELPERS,
        "tools/extra.py": "X = 1\n",
        "other.py": SPELLED,
        "user.py": "import tools.extra\n\nprint(tools.extra.X)\n",
    }
    return {**files, **(more or {})}


# name -> the program, and whether the clip index stays closed
PROGRAMS: dict[str, tuple[dict[str, str], bool]] = {
    "a module no import names": (script(), True),
    "a module imported as one elsewhere": (
        script({"user.py": "from tools import hpo\n\nprint(hpo)\n"}),
        False,
    ),
    "a module imported under another name": (
        script({"user.py": "import tools.hpo as h\n\nprint(h)\n"}),
        False,
    ),
    "a module read as its package's attribute": (
        script({"user.py": "import tools.hpo\n\nkept = tools.hpo\n"}),
        False,
    ),
    "a module a getattr of its package gets": (
        script({"user.py": 'import tools\n\nkept = getattr(tools, "hpo")\n'}),
        False,
    ),
    "a module its package's __init__ reads by its bare name": (
        script({"tools/__init__.py": "def get():\n    return hpo\n"}),
        False,
    ),
    "a module only a docstring's usage imports": (
        script({"user.py": '"""Usage:\n    import hpo\n    hpo.clip_all(model)\n"""\n'}),
        True,
    ),
    "a module imported plainly inside a function": (
        script({"user.py": "def kept():\n    import hpo\n\n    return hpo\n"}),
        False,
    ),
    "another package's __init__ writing the name, with no such submodule": (
        script({"more/__init__.py": "def get():\n    return hpo\n"}),
        True,
    ),
    "a function imported by name from a module named like it": (
        {
            "train.py": loop("from clip_all import clip_all", "clip_all(model)"),
            "clip_all.py": HELPERS,
            "other.py": SPELLED,
        },
        True,
    ),
    "a module in a folder that is no identifier": (
        {
            "image-gen/train.py": loop("from hpo import clip_all", "clip_all(model)"),
            "image-gen/hpo.py": HELPERS,
            "other.py": SPELLED,
        },
        True,
    ),
    "a module in folders without __init__.py, one imported as a module": (
        {
            "train.py": loop("from ns.sub.hpo import clip_all", "clip_all(model)"),
            "ns/sub/hpo.py": HELPERS,
            "other.py": SPELLED,
            "user.py": "from ns import sub\n\nkept = sub.hpo\n",
        },
        False,
    ),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_index_opens_only_where_a_module_object_may_be_made(name: str, tmp_path: Path) -> None:
    assert_index_closed_as(tmp_path, PROGRAMS[name][0], PROGRAMS[name][1], {"clip_all"})


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_findings_as_the_whole_search(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tail = same_as_the_whole_search(tmp_path, monkeypatch, PROGRAMS[name][0])
    assert "ACF004" in tail


def test_a_call_through_a_module_made_elsewhere_clips(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The loop calls the helper through a module object another file makes: found, as the
    whole search finds it."""
    files = {
        "train.py": loop("from registry import h", "h.clip_all(model)"),
        "registry.py": "import tools.hpo as h\n",
        "tools/__init__.py": "",
        "tools/hpo.py": HELPERS,
        "other.py": SPELLED,
    }
    tail = same_as_the_whole_search(tmp_path, monkeypatch, files)
    assert "ACF004" in tail


# edits that make the module's object (a module no import named), or no longer make it
EDITS = {
    "imported": ("user.py", "import tools.extra\n", "import tools.hpo as extra\n"),
    "read as an attribute": ("other.py", "flag = wandb", "kept = tools.hpo\nflag = wandb"),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_warm_run_after_an_edit_gives_the_cold_bytes(
    edit: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_clip_tail import write

    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = tmp_path / "project"
    write(root, script())
    first = same_as_cold(root)
    path, old, new = EDITS[edit]
    text = (root / path).read_text()
    (root / path).write_text(text.replace(old, new, 1))
    assert same_as_cold(root) == first  # the same findings: the index only spares questions
    (root / path).write_text(text)
    assert same_as_cold(root) == first


TEXTS = {
    # text -> whether it writes `hpo` as an attribute (text_tests.attribute_written)
    b"from tools.hpo import run\n": False,
    b"import tools.hpo\n": False,
    b"import a, tools.hpo as h\n": False,
    b"from a import hpo\n": False,
    b"x = tools.hpo\n": True,
    b"import tools; x = tools.hpo\n": True,
    b"if x: import tools.hpo\n": True,  # not told apart from an attribute: it counts
    b'getattr(tools, "hpo")\n': True,
    b"from_x = tools.hpo\n": True,
    b"import tools.hpo\ntools.hpo.run()\n": True,
    b"# tools hpo\n": False,
}


@pytest.mark.parametrize("text", sorted(TEXTS))
def test_an_import_statement_s_dotted_names_are_no_attribute(text: bytes) -> None:
    assert attribute_written(None, text, b"hpo") is TEXTS[text]


@pytest.mark.parametrize(
    ("source", "module", "bound"),
    [
        ("from a import mod\n", "a.mod", True),
        ("from a import mod\n", "a.other", False),  # `mod` is what `a` holds, not a module
        ("from a import mod as m\n", "a.mod", True),
        ("from . import mod\n", "mod", True),
        ("import a.mod as m\n", "", True),
        ("import mod\n", "", True),
        ("from a import *\n", "", False),
    ],
)
def test_an_import_from_binds_a_module_object_only_of_a_module(
    source: str, module: str, bound: bool
) -> None:
    summary = summarise(Path("/p"), Path("/p/m.py"), source)
    assert summary is not None
    assert binds_module(summary, "mod", lambda dotted: dotted == module) is bound
