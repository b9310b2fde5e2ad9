"""module_objects.written_as_identifier (a module object of that name may be made where a file
writes the name as an identifier) is name_uses' walk with every use of a Name or Attribute and
the import clauses' dotted names as stops. It used to be an `ast.walk` of its own; the table
pins its answers on the programs that tell the kinds of use apart (callees, stores, `del`,
renamed and dotted imports, relative imports, strings, `global`, keyword names, NFKC
spellings), and the walk is checked against the old one on every module of this repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from amp_clipfix.analysis.module_objects import written_as_identifier, written_as_value

NAME = "module"

CASES = [
    ("import pkg.module\n", True),
    ("import module.sub\n", True),
    ("import module\n", True),
    ("import other as module\n", True),  # the name bound is the asname
    ("import module as m\n", True),
    ("from pkg.module import f\n", True),
    ("from module import f\n", True),
    ("from .module import f\n", True),
    ("from . import module\n", True),
    ("from pkg import module as m\n", True),
    ("from pkg import other as module\n", True),
    ("from .. import other\n", False),  # no module written: `from ..`'s module is None
    ("module.f()\n", True),
    ("module()\n", True),  # a callee
    ("pkg.module()\n", True),  # an attribute callee
    ("pkg.module.f(1)\n", True),
    ("x = module\n", True),
    ("self.x = pkg.module\n", True),
    ("run(module)\n", True),
    ("module = 1\n", True),
    ("del module\n", True),
    ("obj.module = 1\n", True),
    ("del obj.module\n", True),
    ("for module in xs:\n    pass\n", True),
    ("with open(p) as module:\n    pass\n", True),
    ("[module for module in xs]\n", True),
    ("(y := module)\n", True),
    ("@module.wrap\ndef f():\n    pass\n", True),
    ("def f(x: module.T) -> None:\n    pass\n", True),
    ("x = 'module'\n", False),  # a string makes no module object
    ("getattr(pkg, 'module')\n", False),
    ("def f():\n    global module\n", False),  # a declaration, no Name
    ("def module():\n    pass\n", False),
    ("class module:\n    pass\n", False),
    ("def f(module=1):\n    pass\n", False),  # a parameter
    ("run(module=1)\n", False),  # a keyword's name
    ("try:\n    pass\nexcept E as module:\n    pass\n", False),  # a handler's name (a str)
    ("match x:\n    case [*module]:\n        pass\n", False),  # a capture's name (a str)
    ("import modules\nmodule_x = 1\n", False),  # other names
    ("\uff4dodule.f()\n", True),  # NFKC: the parser reads the fullwidth `m` as `m`
    ("from pkg.\uff4dodule import f\n", True),
    ("print('nothing here')\n", False),
]


@pytest.mark.parametrize(("source", "written"), CASES)
def test_written_as_identifier(source: str, written: bool) -> None:
    tree = ast.parse(source)
    assert written_as_identifier(tree, NAME) is written
    assert old_written_as_identifier(tree, NAME) is written


def test_the_value_question_keeps_its_answers() -> None:
    """The new stops (callees, import clauses' dotted names) end no other question."""
    assert written_as_value(ast.parse("module(1)\npkg.module(2)\n"), NAME) is False
    assert written_as_value(ast.parse("import pkg.module\nfrom module import f\n"), NAME) is False
    assert written_as_value(ast.parse("from pkg import other as module\n"), NAME) is False


def old_written_as_identifier(tree: ast.AST, name: str) -> bool:
    """clip_tail's walk before the fold (main 8ca2f40's ClipCapable.writes_identifier)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id == name:
            return True
        if isinstance(node, ast.Attribute) and node.attr == name:
            return True
        if isinstance(node, ast.alias) and name in (*node.name.split("."), node.asname):
            return True
        if isinstance(node, ast.ImportFrom) and name in (node.module or "").split("."):
            return True
    return False


def identifiers(tree: ast.AST) -> set[str | None]:
    """Every name the old walk answers True for, in one walk."""
    found: set[str | None] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.alias):
            found.update((*node.name.split("."), node.asname))
        elif isinstance(node, ast.ImportFrom):
            found.update((node.module or "").split("."))
    return found


def test_same_answers_as_the_old_walk_on_this_repository() -> None:
    """Every eighth word (in sorted order) of every module of the repository's src and tests,
    and each file's own and package names: the same answer as the old walk, for names it
    writes and names it does not."""
    root = Path(__file__).resolve().parents[1]
    checked = 0
    for path in sorted([*root.glob("src/**/*.py"), *root.glob("tests/*.py")]):
        data = path.read_bytes()
        tree = ast.parse(data)
        written = identifiers(tree)
        words = sorted(set(re.findall(rb"[A-Za-z_]\w*", data)))[::8]
        for word in [*words, path.stem.encode(), path.parent.name.encode()]:
            name = word.decode()
            assert written_as_identifier(tree, name) is (name in written), (path, name)
            checked += 1
    assert checked > 5_000
