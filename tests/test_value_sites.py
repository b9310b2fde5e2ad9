"""A function ACF004's clip index holds opens it only where the evaluator can follow its value
(analysis/value_sites.py): handed to a library call whose result is dropped (`mp.spawn(run)`),
under a library decorator, or next to a string no `getattr` gets, the index stays closed, and
the library call it is handed to is one that may clip. The same findings as the whole search
on programs where the helper is handed on each way, and the index closed where it may be."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from test_any_event import assert_index_closed_as, built
from test_clip_tail import loop, same_as_the_whole_search
from test_self_imports import project

from amp_clipfix.analysis import clip_tail, event_capable
from amp_clipfix.analysis.module_objects import writes_value
from amp_clipfix.analysis.value_sites import WrittenValues, names_project_module, walk_on

HELPERS = """
    import torch
    import torch.multiprocessing as mp
    {imports}


    {decorator}
    def clip_all(model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)


    def launch(model):
        {hand}
    """


def helpers(hand: str = "pass", decorator: str = "", imports: str = "") -> str:
    hand = hand.replace("\n", "\n        ")  # the lines of `launch`'s body
    text = HELPERS.format(hand=hand, decorator=decorator, imports=imports)
    return textwrap.dedent(text).replace("\n\n\n\ndef clip_all", "\n\n\ndef clip_all").lstrip()


def program(hand: str = "pass", decorator: str = "", imports: str = "") -> dict[str, str]:
    """ACF004's loop clips through the helper; `launch` hands the helper on (`hand`)."""
    return {
        "train.py": loop("from helpers import clip_all", "clip_all(model)"),
        "helpers.py": helpers(hand, decorator, imports),
    }


# name -> the program, and whether the clip index stays closed
PROGRAMS: dict[str, tuple[dict[str, str], bool]] = {
    "handed to a library call": (program("mp.spawn(clip_all, args=(model,))"), True),
    "handed to a library call by keyword": (program("mp.spawn(fn=clip_all, nprocs=1)"), True),
    "handed to a library call through its module": (
        program("import helpers\nmp.spawn(helpers.clip_all)"),
        True,
    ),
    "under a library decorator": (program(decorator="@torch.no_grad()"), True),
    "its name a dict key and a compared string": (
        program('flags = {"clip_all": 1}\nsame = "clip_all" == model'),
        True,
    ),
    "another module's name spelled like it": (
        {**program(), "other.py": "import helpers\n\nclip_all = None\nflag = clip_all\n"},
        True,
    ),
    "another object's attribute spelled like it": (
        program("copy = model.clip_all\nmp.spawn(copy.clip_all)"),
        True,
    ),
    "an attribute of its module, imported as one": (
        {**program(), "other.py": "import helpers\n\nflag = helpers.clip_all\n"},
        False,
    ),
    "a library call's result kept": (program("done = mp.spawn(clip_all)"), False),
    "handed to a project function": (
        program("call(clip_all, model)", imports="from tools import call"),
        False,
    ),
    "handed to an unknown callee": (program("model.apply(clip_all)"), False),
    "stored": (program("fn = clip_all"), False),
    "named by a string getattr gets": (
        program('import helpers\ngetattr(helpers, "clip_all")(model)'),
        False,
    ),
    "under a decorator of the project": (
        program(decorator="@keep", imports="from tools import keep"),
        False,
    ),
}
TOOLS = "def call(fn, *args):\n    fn(*args)\n\n\ndef keep(fn):\n    return fn\n"


def files(name: str) -> dict[str, str]:
    return {**PROGRAMS[name][0], "tools.py": TOOLS}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_findings_as_the_whole_search(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tail = same_as_the_whole_search(tmp_path, monkeypatch, files(name))
    assert "ACF004" in tail


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_index_opens_only_where_the_value_may_be_followed(name: str, tmp_path: Path) -> None:
    assert_index_closed_as(tmp_path, files(name), PROGRAMS[name][1], {"clip_all"})


def test_the_library_call_it_is_handed_to_may_clip(tmp_path: Path) -> None:
    """`launch`, which hands the helper to `mp.spawn`, is in the index a level above it, and
    the spawn call is one that may clip."""
    index = built(tmp_path, files("handed to a library call"), clip_tail.ClipCapable)
    found = {f.node.name: f for f in index.levels[-1].values()}
    assert set(found) >= {"clip_all", "launch"}
    (site, summary), *_ = found["clip_all"].sites
    assert ast.unparse(site) == "mp.spawn(clip_all, args=(model,))"
    assert index.call_clips(site, summary)


SNIPPETS = {
    # source -> the sites' number, None where the name is a value the evaluator may follow
    "spawn(run, nprocs=2)\n": 1,
    "spawn(run)\nspawn(run)\nx.start(target=run)\n": 3,
    "x = spawn(run)\n": None,
    "f(g(run))\n": None,
    "fn = run\n": None,
    "getattr(m, 'run')\n": None,
    # a string held anywhere may reach `getattr(x, name)` (a keyword's value through a
    # parameter, a name): an attribute of that name may be read (dataclass_calls)
    "d = {'run': 1}\nif mode == 'run':\n    pass\nf(mode='run')\n": None,
    "from m import run as r\n": None,
    "from m import run\nimport m.run\n": 0,
    "global run\n": None,
    "obj.run = 1\n": None,
    "run = 1\ndel run\nrun(1)\nm.run(2)\n": 0,
    "spawn(m.run)\n": 1,
    "spawn(run.__call__)\n": None,
}


EVERY_WAY = (True, True, None)  # the bare name and any attribute may be it, and any import


def sites(source: str, seen: tuple[bool, bool, set[str] | None] = EVERY_WAY) -> int | None:
    found = WrittenValues(walk_on(ast.parse(source), None)).sites("run", lambda _: True, seen)
    return None if found is None else len(found)


@pytest.mark.parametrize("source", sorted(SNIPPETS))
def test_how_a_module_writes_the_name(source: str) -> None:
    assert sites(source) == SNIPPETS[source]


def test_a_call_of_project_code_it_is_handed_to_is_no_site() -> None:
    written = WrittenValues(walk_on(ast.parse("spawn(run)\n"), None))
    assert written.sites("run", lambda _: False, EVERY_WAY) is None


OTHER_MODULE = (False, False, {"train"})  # a module-level `run` of train.py, never public


def test_another_module_s_bare_name_is_not_the_function() -> None:
    """Only its own module, an importer of the name and a `*` import see the function by its
    bare name; no module object holds it where its module is never imported as one."""
    assert sites("x = run\nspawn(obj.run)\nobj.run = 1\n", OTHER_MODULE) == 0
    assert sites("d = {'run': 1}\nf(mode='run')\ngetattr(m, 'run')\n", OTHER_MODULE) == 0
    assert sites("from train import run\nx = run\n", OTHER_MODULE) is None
    assert sites("x = run\n", (True, False, {"train"})) is None
    assert sites("spawn(obj.run)\n", (False, True, {"train"})) == 1
    assert sites("x = obj.run\n", (False, True, {"train"})) is None


def test_a_renamed_import_of_another_module_s_name_is_not_the_function() -> None:
    assert sites("from val import run as validate\n", OTHER_MODULE) == 0
    assert sites("from pkg.train import run as r\n", OTHER_MODULE) is None
    assert sites("from . import run as r\n", OTHER_MODULE) is None
    assert sites("from val import run as validate\n", EVERY_WAY) is None  # a method: any


@pytest.mark.parametrize("source", sorted(SNIPPETS))
def test_the_lines_writing_the_name_say_what_the_whole_module_says(source: str) -> None:
    padded = "import os\n\n\ndef other():\n    return os.sep\n\n\n" + source
    tree = ast.parse(padded)
    first = padded.count("\n", 0, padded.index(source)) + 1
    lines = list(range(first, padded.count("\n") + 1))
    whole = WrittenValues(walk_on(tree, None)).sites("run", lambda _: True, EVERY_WAY)
    on_lines = WrittenValues(walk_on(tree, lines)).sites("run", lambda _: True, EVERY_WAY)
    assert on_lines == whole


def test_a_value_the_clip_index_spent_its_parses_on_opens_every_event_index_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The clip index parses the three modules that clip, then cannot afford the two that may
    write `clip_all` as a value; AnyEvent asks that question first, within its own parses, and
    opens without looking for its roots (it holds `clip_all` too, so it would open for it)."""
    clips = {
        f"clips{n}.py": f"import torch\n\n\ndef clip{n}(model):\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
        for n in range(3)
    }
    values = {f"uses{n}.py": "import helpers\n\nkept = helpers.clip_all\n" for n in range(2)}
    monkeypatch.setattr(clip_tail, "INDEX_PARSES", 4)
    rooted: list[str] = []
    original = event_capable.AnyEvent.kinds

    def kinds(self: event_capable.AnyEvent):  # type: ignore[no-untyped-def]
        rooted.append("asked")
        return original(self)

    monkeypatch.setattr(event_capable.AnyEvent, "kinds", kinds)
    files = {**program(), **clips, **values}
    index = built(tmp_path, files, event_capable.AnyEvent)
    assert index.open
    assert rooted == []
    clip_index = built(tmp_path / "again", files, clip_tail.ClipCapable)
    assert clip_index.spent
    assert clip_index.asked is not None and clip_index.asked.node.name == "clip_all"


TEXTS = {
    # text -> whether it may write `run` as a value (module_objects.writes_value)
    b"x = run\n": True,
    b"from m import run\n": True,
    b'f("run")\n': True,  # a whole string: `getattr(m, "run")` may be it
    b'f("run\\\n")\n': True,  # a line continuation is no character of the value
    b'd = {"run": 1}\n': True,  # the parse tells a key from an argument
    b"run(1)\nm.run(2)\n": False,  # called
    b"# run it\nx = 1  # then run\n": False,
    b'"""Run the thing: run it."""\n': False,
    b'print("to run: %s" % x)\n': False,
    b'print("x" "run it")\n': False,  # joined, the value only grows
}


@pytest.mark.parametrize("text", sorted(TEXTS))
def test_the_text_test_leaves_out_prose_and_comments(text: bytes) -> None:
    assert writes_value(None, text, "run") is TEXTS[text]


def test_a_text_the_lexer_may_misread_is_read_line_by_line() -> None:
    """Not plain ASCII: any writing before a line's `#` counts, a docstring's too."""
    assert writes_value(None, '"""é run it"""\n'.encode(), "run")
    assert not writes_value(None, "x = 'é'\ny = 1  # run\n".encode(), "run")


def test_a_library_name_is_none_of_the_project_s_modules(tmp_path: Path) -> None:
    """An `Ext` the evaluator makes of project code where it cuts an import cycle
    (evaluate.resolve_qname) is no library callee: its name starts with a project module."""
    files = {"pkg/__init__.py": "", "pkg/launch.py": "def go(fn):\n    fn()\n"}
    evaluator = project(tmp_path, files)
    assert names_project_module(evaluator, "pkg.launch.go")
    assert names_project_module(evaluator, "src.pkg.launch.go") is False
    assert names_project_module(evaluator, "launch.go")  # a tail of pkg.launch, as imported
    assert not names_project_module(evaluator, "torch.multiprocessing.spawn")
    assert not names_project_module(evaluator, "absl.app.run")
