"""The value question without the parse (analysis/literal_words.py): a file that writes a name
only in comments, docstrings and strings no call reads as a name gives it no value, told by a
lexer of comments and string literals; the calls' keywords and string arguments are read only
when the text may write the name there. Both answer as the parse does (bound_names.file_names,
checked on fixed and random texts), and reach's value question parses none of those files."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_reach import check, write

from amp_clipfix.analysis import bound_names, literal_words, reach
from amp_clipfix.analysis.bound_names import call_values, file_names, text_binds
from amp_clipfix.analysis.literal_words import calls_may_name, written_binding_nothing
from amp_clipfix.analysis.summary import summarise
from amp_clipfix.analysis.text_tests import written_free

PROSE = [
    ('"""An eval docstring."""\nx = 1  # eval here\n', True),
    ('y = "eval mode"\nfoo(x)\n', True),  # a string outside brackets
    ("x.eval()\n# eval\n", True),  # a method call is no free writing
    ('foo(help="eval mode")\n# eval\n', True),  # a help text's prose
    ('foo(help="eval" "mode x")\n# eval\n', True),  # one value, with a space
    ('foo(help=(\n    "eval mode"\n    " x"\n))\n# eval\n', True),  # in brackets of its own
    ('foo(f"{x} eval")\n# eval\n', True),  # a formatted string's text, outside its fields
    ('foo(("eval") + x)\n# eval\n', True),
    ('foo(x == "eval")\n# eval\n', True),  # an operand
    ('foo("eval" + x)\n# eval\n', True),
    ('foo({"eval_": 1})\n# eval\n', True),
    ('# eval\nfoo("retrieval")\n', True),  # inside a longer word
    ('# eval\nfoo("a\\nb")\n', True),
    ("# eval\nfoo('ev' 'al' + x)\n", True),
    ("# eval\nx = 'ev' 'al'\n", True),
    ("import eval_tools as et\nfrom eval.x import y\nfrom m import eval\n", True),
    ("import a.eval\n", True),  # binds `a`
    ("x = eval\n", False),  # code
    ('foo("eval mode")\n# eval\n', False),  # a string argument's words
    ('foo(help="eval")\n# eval\n', False),  # no prose: a name
    ('foo(mode="eval mode")\n# eval\n', False),
    ('foo(d["eval"])\n# eval\n', False),  # may be a list's element: asked of the parse
    ('foo(x,\n  # c\n  "eval",\n)\n# eval\n', False),
    ('# eval\nfoo("model.eval()")\n', False),  # a word of it, not a free writing
    ('# eval\nfoo("1eval")\n', False),
    ('# eval\nfoo("\\n\\neval now")\n', False),  # after an escape
    ('# eval\nfoo("\\x65val")\n', False),  # an escape that makes a letter
    ("# eval\nfoo('ev' 'al')\n", False),  # joined by the concatenation
    ("# eval\nfoo('ev'  # c\n 'al', x)\n", False),
    ("# eval\nfoo('ev'\n rb'al')\n", False),  # the prefix letters stand between
    ("# eval\nx = ('ev' 'al')\n", True),  # a value in brackets of its own, no argument
    ('# eval\nfoo(f"{x}")\ny = f"{eval}"\n', False),  # a formatted string's field is code
    ('foo(f"{x}eval{y}")\n# eval\n', False),  # may be in a field: asked of the parse
    ('foo(("eval"))\n# eval\n', False),
    ('foo(help=g("eval mode"))\n# eval\n', False),  # another call's argument
    ("x = '#'; eval = 1\n", False),
    ("x = (\n'eval'\n)\n", True),
    ("x = (\n'eval',\n)\n", False),  # a tuple's element: asked of the parse
    ("foo(help='\\N{LATIN SMALL LETTER E}val')\n# eval\n", False),
    ("import eval\n", False),
    ("import eval.x\n", False),
    ("import os as eval\n", False),
    ("from m import x as eval\n", False),
    ("from m import (eval)\n", False),  # not read as a one-line import: asked of the parse
    ("if x: from eval import y\n", False),
    ("from eval import y; eval = 1\n", False),
    ("eval: int = 1\n", False),
    ("def f(eval=1):\n    pass\n", False),
    # a call of the name reads it (written_binding_nothing's `called_there`)
    ("x = eval(1)\neval(2)\nfoo(eval(3), k=eval(4))\n", True),
    ("def f():\n    return not eval(1)\n", True),
    ("@eval(1)\ndef f():\n    pass\n", True),
    ("x = eval (1)\n", False),  # something between: asked of the parse
    ("x = \\\n    eval(1)\n", False),  # after a continuation (it may follow `def`)
    ("def eval(x):\n    pass\n", False),  # a definition: asked of the parse
    ("class eval(A):\n    pass\n", False),
    ("isinstance(x, eval)\n", False),
    ("lambda eval: eval(1)\n", False),
]


@pytest.mark.parametrize(("source", "prose"), PROSE)
def test_a_name_written_binding_nothing(source: str, prose: bool) -> None:
    data = source.encode()
    assert written_binding_nothing("eval", data) is prose
    if prose:  # and then the parse finds no value either
        assert not bound_names_of(data).binds_value("eval", data)


def test_a_dashed_argument_names_the_underscored_name() -> None:
    data = b'# set_epoch\nparser.add_argument("--set-epoch")\n'
    assert not written_binding_nothing("set_epoch", data)
    assert bound_names_of(data).binds_value("set_epoch", data)


def test_a_formatted_field_is_not_lexed_from_3_12(monkeypatch: pytest.MonkeyPatch) -> None:
    """PEP 701: a field may hold its own quotes, so a text with one is left to the parse; a
    formatted string without a field lexes as any string."""
    data = b'# eval\nx = f"{a}"\n'
    assert written_binding_nothing("eval", data)
    monkeypatch.setattr(literal_words, "FIELDS_LEXED", True)
    literal_words.literals_of.cache_clear()
    assert not written_binding_nothing("eval", data)
    assert written_binding_nothing("eval", b'# eval\nx = f"{{a}}"\n')
    assert calls_may_name("eval", data)


PIECES = [
    "eval",
    "x.eval",
    "x.eval()",
    "eval()",
    "ev",
    "al",
    "-",
    "_",
    "1",
    "set_epoch",
    "set-epoch",
    " ",
    "\n",
    "    ",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    "=",
    "==",
    ":",
    "+",
    ".",
    "#",
    "\\n",
    "\\x65",
    "'",
    '"',
    '"""',
    "f",
    "rb",
    "help",
    "foo",
    "import ",
    "from ",
    " as ",
    "def ",
    "class ",
    "global ",
    ":=",
    "@",
    "return ",
    "not ",
    "\\\n",
    "\r\n",
    "\t",
]


def random_text(generator: random.Random) -> bytes:
    return "".join(generator.choice(PIECES) for _ in range(generator.randrange(1, 18))).encode()


def test_random_texts_answer_as_the_parse() -> None:
    """Random texts of the pieces that decide it: wherever the lexer says a name is written only
    in prose the parse finds no value, and the calls read lazily give the answers of reading
    them at once."""
    generator = random.Random(35)
    parsed = 0
    while parsed < 4000:
        data = random_text(generator)
        names = bound_names_of(data)
        if names is None:
            continue
        parsed += 1
        unread = names.unread
        eager = names.value_names | (call_values(unread[0], names) if unread else set())
        lazy = bound_names_of(data)
        assert lazy is not None
        for name in ("eval", "set_epoch", "ev", "al", "foo", "x", "f"):
            assert lazy.binds_value(name, data) == (
                name in eager or bound_names.dict_key(name, data)
            ), (name, data)
            prose = written_free(name, data) and not text_binds(name, data)
            if prose and written_binding_nothing(name, data):
                assert name not in eager, (name, data)


def test_calls_are_read_only_where_the_text_may_name_the_name_there() -> None:
    source = "def f(x):\n    return g(x, key=h)\n\n# count\nh(x == 'count', n=2)\n"
    data = source.encode()
    path = Path("/project/m.py")
    summary = summarise(path.parent, path, source)
    assert summary is not None
    names = file_names(summary, data)
    assert names.unread is not None  # the calls wait for a name they may hold
    assert not names.binds_value("count", data)  # a comment, an operand
    assert names.unread is not None  # no call read for it
    assert names.binds_value("key", data)  # a keyword
    assert names.unread is None  # read now, once


def bound_names_of(data: bytes) -> bound_names.FileNames | None:
    path = Path("/project/m.py")
    try:
        summary = summarise(path.parent, path, data.decode(), data=data)
    except Exception:  # noqa: BLE001 - a text the summary cannot read: none
        return None
    return None if summary is None else file_names(summary, data)


DOCUMENTED = '''\
"""Helpers: nothing here is `item` of anything (item, item, item)."""


def helper_{index}(x):
    """The item of x."""
    # an item
    return x
'''


# accelerate's `PartialState`: imported by name and called, in 27 files parsed to learn that
CALLING = """\
from tools import item


def helper_{index}(x):
    return item(x) + item(x[0])
"""


@pytest.mark.parametrize("helper", [DOCUMENTED, CALLING], ids=["prose", "calls"])
def test_the_value_question_parses_no_file_that_writes_the_name_only_in_prose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, helper: str
) -> None:
    """`summary(loss).item()` is asked of the index: `item` is written freely in eight modules'
    docstrings and comments only, or where they import it and call it, none of which is
    parsed for it; the finding is the same."""
    from test_reach import ENGINE, OPS, TRAIN

    helpers = {f"helpers_{index}.py": helper.format(index=index) for index in range(8)}
    write(tmp_path, {"ops.py": OPS, "engine.py": ENGINE, "train.py": TRAIN, **helpers})
    loaded: list[str] = []
    names_of = reach.CallReach.names_of

    def noted(self, path, data):  # type: ignore[no-untyped-def]
        loaded.append(path.name)
        return names_of(self, path, data)

    monkeypatch.setattr(reach.CallReach, "names_of", noted)
    code, output, asked = check(tmp_path, monkeypatch)

    assert code == 1, output
    assert "summary(loss).item" not in asked
    assert not any(name.startswith("helpers_") for name in loaded)
    monkeypatch.undo()

    monkeypatch.setattr(reach, "written_binding_nothing", lambda name, data: False)
    loaded.clear()
    monkeypatch.setattr(reach.CallReach, "names_of", noted)
    without = check(tmp_path, monkeypatch)
    assert without[:2] == (code, output)
    assert sum(name.startswith("helpers_") for name in loaded) == 8
