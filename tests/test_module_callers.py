"""The callers of a module-level function are looked for only in files that can reach it: files
that import it by name, or name its module the way the evaluator makes a module's value (an import
clause, `pkg.main`, `getattr(pkg, "main")`, a package's `__init__.py`), unless some code hands a
module so named on as a value (analysis/module_names.py). A file that writes `main` only as
`def main():` and calls `model.train()` is no caller of `pkg/main.py`'s `train`, and is not parsed.

Each program's answer (the values a parameter takes from its callers) is checked against the
full search, where every file that writes the function's name is searched."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from amp_clipfix.analysis import module_names
from amp_clipfix.analysis.resolve import project_evaluator
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.analysis.values import Lit

MAIN = (
    "def train(lr=0):\n    return lr\n\n\n"
    "class Trainer:\n    def __init__(self, lr=0):\n        self.lr = lr\n"
)
# Files that write `main` and `train` but never reach `pkg/main.py` (the shape of accelerate's
# examples: forty files defining `main()` and calling `model.train()`).
DECOY = "def main(model):\n    model.train()\n    model.Trainer(99)\n    return model\n"

PROGRAMS: dict[str, dict[str, str]] = {
    "aliases": {
        "a.py": "from pkg.main import train as t\n\nt(1)\n",
        "b.py": "from pkg import main\n\nmain.train(2)\n",
        "c.py": "import pkg.main\n\npkg.main.train(3)\n",
        "d.py": "import pkg\n\ngetattr(pkg, 'main').train(4)\n",
    },
    "renamed import (read by other modules as an attribute)": {
        "a.py": "from pkg import main as entry\n\nentry.train(1)\n",
        "b.py": "import a\n\ndef main():\n    a.entry.train(2)\n",
    },
    "module handed on as a value": {
        "a.py": "from pkg import main\nfrom helper import run\n\nrun(main)\n",
        "helper.py": "def main():\n    pass\n\n\ndef run(mod):\n    mod.train(5)\n",
    },
    "module handed on through getattr": {
        "a.py": "import pkg\nfrom helper import run\n\nrun(getattr(pkg, 'main'))\n",
        "helper.py": "def main():\n    pass\n\n\ndef run(mod):\n    mod.train(5)\n",
    },
    "module kept by an instance": {
        "a.py": "from pkg import main\nfrom helper import Runner\n\nRunner(main).go()\n",
        "helper.py": (
            "class Runner:\n    def __init__(self, mod):\n        self.mod = mod\n\n"
            "    def go(self):\n        self.mod.train(12)\n\n    def main(self):\n        pass\n"
        ),
    },
    "functools.partial": {
        "a.py": (
            "from functools import partial\nfrom pkg import main\n\n"
            "step = partial(main.train, 6)\nstep()\n"
        ),
    },
    "*args and **kwargs forwarding": {
        "a.py": (
            "from pkg import main\n\n\ndef go(*args, **kwargs):\n"
            "    return main.train(*args, **kwargs)\n\n\ngo(7)\ngo(lr=8)\n"
        ),
    },
    "a package's __init__ names its submodule": {
        "pkg/__init__.py": "def start():\n    main.train(9)\n",
    },
}


# What the evaluator does not follow, with the full search too: a class handed to `partial`, a
# package's submodule named in a function of its `__init__.py`.
UNFOLLOWED = {
    ("__init__", "functools.partial"),
    ("train", "a package's __init__ names its submodule"),
    ("__init__", "a package's __init__ names its submodule"),
}


def project(root: Path, files: dict[str, str], decoys: int = 3) -> dict[Path, bytes]:
    texts = {"pkg/__init__.py": "", "pkg/main.py": MAIN, **files}
    texts.update({f"decoy{i}.py": DECOY for i in range(decoys)})
    contents: dict[Path, bytes] = {}
    for relative, text in texts.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        contents[path] = text.encode()
    return contents


def parameter_values(root: Path, contents: dict[Path, bytes], function: str) -> tuple[list, set]:
    """The values of `lr` in `pkg/main.py`'s `train` (or `Trainer.__init__`), as constants, and
    the files parsed to find them."""
    parsed: set[str] = set()

    def load(path: Path) -> Summary | None:
        parsed.add(path.relative_to(root).as_posix())
        return summarise(root, path, contents[path].decode(), data=contents[path])

    evaluator = project_evaluator(root, contents, load)
    summary = evaluator.summary(root / "pkg" / "main.py")
    assert summary is not None
    node = next(
        n for n in ast.walk(summary.tree) if isinstance(n, ast.FunctionDef) and n.name == function
    )
    cls = next((c for c in summary.tree.body if isinstance(c, ast.ClassDef)), None)
    owner = cls if function == "__init__" else None
    read = next(n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == "lr")
    values = evaluator.ev(read, evaluator.ctx(summary, node, owner))
    shown = sorted(
        (repr(v.value) if isinstance(v, Lit) else type(v).__name__ for v in values), key=str
    )
    return shown, parsed


def full_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file that writes the function's name is searched (the answer to agree with)."""
    monkeypatch.setattr(module_names, "names_module", lambda path, data, word, imported: True)


@pytest.mark.parametrize("name", list(PROGRAMS))
@pytest.mark.parametrize("function", ["train", "__init__"])
def test_the_callers_found_agree_with_the_full_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, function: str
) -> None:
    files = PROGRAMS[name]
    if function == "__init__":  # the class of the same module, built the same ways
        files = {path: text.replace("train(", "Trainer(") for path, text in files.items()}
    contents = project(tmp_path, files)
    found, _ = parameter_values(tmp_path, contents, function)
    with monkeypatch.context() as patched:
        full_search(patched)
        expected, _ = parameter_values(tmp_path, contents, function)
    assert found == expected
    if (function, name) not in UNFOLLOWED:
        assert set(found) - {"0", "Opaque"}, found  # a caller was found, not only the default


def test_files_that_only_write_the_module_name_otherwise_are_not_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the module check reads the files naming `main` (a quarter as many as it leaves out)
    contents = project(tmp_path, PROGRAMS["aliases"], decoys=16)
    found, parsed = parameter_values(tmp_path, contents, "train")
    assert found == ["2", "3", "4"]  # `t(1)` through a renamed import is not followed
    assert not any(path.startswith("decoy") for path in parsed), sorted(parsed)
    with monkeypatch.context() as patched:
        full_search(patched)
        expected, everything = parameter_values(tmp_path, contents, "train")
    assert found == expected
    assert {f"decoy{i}.py" for i in range(16)} <= everything  # what the full search reads


@pytest.mark.parametrize(
    "program", ["module handed on as a value", "module handed on through getattr"]
)
def test_a_module_handed_on_keeps_every_file_naming_it_searched(
    tmp_path: Path, program: str
) -> None:
    """`run(main)` hands the module to `helper.run`, whose `mod.train(5)` is a real call in a
    file that writes `main` only as `def main()`: it is searched, and 5 found."""
    contents = project(tmp_path, PROGRAMS[program])
    found, parsed = parameter_values(tmp_path, contents, "train")
    assert "5" in found
    assert "helper.py" in parsed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("from pkg import main\nmain.train(1)\n", False),  # a receiver only
        ("import pkg.main\npkg.main.train(1)\n", False),
        ("from pkg import main\nrun(main)\n", True),
        ("import pkg.main\nx = pkg.main\n", True),
        ("from pkg import main as m\n", None),  # other modules may read it as `a.m`
        ("x = getattr(pkg, 'main')\n", True),
        ("def main():\n    return main\n", False),  # no import: not the module
    ],
)
def test_what_may_hand_a_module_on(tmp_path: Path, text: str, expected: bool | None) -> None:
    summary = summarise(tmp_path, tmp_path / "a.py", text)
    assert summary is not None
    found = module_names.handed_on(summary, "main", package_init=False)
    assert (None if found is None else bool(found)) is expected


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("a.py", b"from pkg import main\n", True),
        ("a.py", b"from pkg import (\n    other,\n    main,\n)\n", True),
        ("a.py", b"from pkg import other, \\\n    main\n", True),  # a continued line
        ("a.py", b"import pkg.main as m\n", True),
        ("a.py", b"x = pkg . main\n", True),
        ("a.py", b"getattr(pkg, 'main')\n", True),
        ("a.py", b"def main():\n    model.train()\n", False),
        ("a.py", b"domain = 1\n__main__ = 2\n", False),
        ("__init__.py", b"def start():\n    main.train()\n", True),
    ],
)
def test_the_text_test_of_a_file_naming_a_module(name: str, text: bytes, expected: bool) -> None:
    imported = module_names.import_clause_names(text)
    assert module_names.names_module(Path(name), text, b"main", imported) is expected
