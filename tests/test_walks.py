"""The shortcut walks of a summary give exactly what a walk of every node gives, in its order
(a search's findings can depend on the order it reads classes in)."""

from __future__ import annotations

import ast
from pathlib import Path

from amp_clipfix.analysis.summary import summarise

# Classes at every depth and in every kind of block: a breadth-first walk of all nodes meets
# the top-level ones first, then those one statement (or clause) deeper, in field order.
NESTED = """\
class A:
    class B:
        pass

    def f(self):
        class C:
            pass


if x:
    class D:
        pass
else:
    try:
        class E:
            pass
    except ValueError:
        class F:
            pass
    else:
        class G:
            pass
    finally:
        class H:
            pass
match y:
    case 1:
        class I:
            pass
    case _:
        pass
for z in w(v()):
    class J:
        pass
with q(h(k())):
    while r:
        class K:
            pass
class L:
    pass
"""


def test_walked_statements_and_calls_are_ast_walk_s_in_its_order() -> None:
    tree = ast.parse(NESTED)
    summary = summarise(Path(), Path("m.py"), NESTED, tree)
    assert summary is not None
    expected = [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)]
    assert [cls.name for cls in summary.walked_classes()] == expected
    assert expected[:3] == ["A", "L", "B"]  # breadth first, not in source order
    statements = [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]
    assert summary.walked_statements() == statements
    assert summary.walked_calls() == [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
