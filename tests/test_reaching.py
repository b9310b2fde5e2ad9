"""`analysis/reaching.py`: the one binding of a name that reaches a use in straight-line code,
and None wherever another binding may reach it (then the evaluator's every value stands)."""

from __future__ import annotations

import ast
import textwrap

import pytest

from amp_clipfix.analysis.reaching import reaching_value


def reaching(code: str) -> str | None:
    """The source of the value reaching the last `trainer.fit(...)` of the code's innermost
    function holding it (the module when none does)."""
    tree = ast.parse(textwrap.dedent(code))
    use = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "fit"
    ][-1]
    functions = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and node.lineno <= use.lineno <= (node.end_lineno or 0)
    ]
    scope = max(functions, key=lambda f: f.lineno) if functions else tree
    value = reaching_value(scope, use, "trainer")
    return None if value is None else ast.unparse(value)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        ("trainer = A()\ntrainer.fit(m)\ntrainer = B()\n", "A()"),
        ("trainer = A()\ntrainer.fit(m)\ntrainer = B()\ntrainer.fit(m)\n", "B()"),
        ("trainer = A()\nif main:\n    trainer = B()\n    trainer.fit(m)\n", "B()"),
        ("trainer = A()\nif main:\n    x = 1\n    trainer.fit(m)\n", "A()"),
        ("trainer = A()\nwith ctx():\n    trainer.fit(m)\n", "A()"),
        ("trainer: T = A()\ntrainer.fit(m)\n", "A()"),
        ("def run():\n    trainer = A()\n    trainer.fit(m)\ntrainer = B()\n", "A()"),
        # The last binding within one loop turn reaches the use that follows it.
        ("for x in xs:\n    trainer = A(x)\n    trainer.fit(m)\n    trainer = B()\n", "A(x)"),
        ("trainer = A()\ntry:\n    trainer.fit(m)\nexcept E:\n    pass\n", "A()"),
    ],
)
def test_the_binding_that_reaches_the_use(code: str, expected: str) -> None:
    assert reaching(code) == expected


@pytest.mark.parametrize(
    "code",
    [
        "if a:\n    trainer = A()\nelse:\n    trainer = B()\ntrainer.fit(m)\n",
        "trainer = A()\nif a:\n    trainer = B()\ntrainer.fit(m)\n",
        "trainer = A()\nfor x in xs:\n    trainer.fit(m)\n    trainer = B()\n",
        "trainer = A()\nwhile go:\n    trainer.fit(m)\n    trainer = B()\n",
        "trainer = A()\nfor trainer in xs:\n    trainer.fit(m)\n",
        "trainer = A()\nwith ctx() as trainer:\n    trainer.fit(m)\n",
        "trainer = A()\nif (trainer := B()):\n    trainer.fit(m)\n",
        "trainer = A()\ntry:\n    trainer = B()\nexcept E:\n    trainer.fit(m)\n",
        "trainer = A()\ntry:\n    pass\nexcept E as trainer:\n    trainer.fit(m)\n",
        "trainer, other = A(), B()\ntrainer.fit(m)\n",
        "trainer = A()\ndef swap():\n    global trainer\n    trainer = B()\n\ntrainer.fit(m)\n",
        "def run(trainer):\n    trainer.fit(m)\n",
        "trainer = A()\ndef run():\n    trainer.fit(m)\n",
        "trainer = A()\nmatch x:\n    case 1:\n        trainer.fit(m)\n",
        "trainer = A()\ndel trainer\ntrainer.fit(m)\n",
    ],
)
def test_no_value_where_another_binding_may_reach(code: str) -> None:
    assert reaching(code) is None
