"""ACF004 reads the statements before a function's first clip for the scaled backward and the
`unscale_` calls only, and enters there only the helpers that can make one
(analysis/event_capable.py): the same findings as a reading that enters every helper, on
programs where the backward or the `unscale_` hide in helpers reached in every way a call can
reach a function, and the helpers that cannot make one are not asked about."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest
from narrowed_search import asked, compare_searches
from test_bounded import Counted
from test_clip_tail import report, write

from amp_clipfix.analysis import event_capable
from amp_clipfix.analysis.module_objects import binds_module, module_names
from amp_clipfix.analysis.summary import summarise

MAIN = """
    import torch
    {imports}


    def main(model, optimizer, loader, cfg):
        scaler = torch.amp.GradScaler("cuda")
        {before}
        for batch in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(batch).mean()
            {backward}
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
    """

# ACF004 reads the modules that name torch's clip (its words): each helper module here has one.
CLIPPED = "\n\ndef clipped(model):\n    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
BACKWARD = (
    "import torch\n\n\ndef scaled(scaler, loss):\n    scaler.scale(loss).backward()\n" + CLIPPED
)
ENGINE = (
    "import torch\n\n\nclass Engine:\n    def {name}(self, scaler, loss):\n"
    "        scaler.scale(loss).backward()\n" + CLIPPED
)
UNSCALE = "def unscaled(scaler, optimizer):\n    scaler.unscale_(optimizer)\n"


def main(imports: str = "", before: str = "pass", backward: str = "pass") -> str:
    text = MAIN.format(imports=imports.replace("\n", "\n    "), before=before, backward=backward)
    return textwrap.dedent(text).lstrip()


# name -> the project's files
PROGRAMS: dict[str, dict[str, str]] = {
    "backward in the loop": {"train.py": main(backward="scaler.scale(loss).backward()")},
    "backward in a helper imported by name": {
        "train.py": main("from helpers import scaled", backward="scaled(scaler, loss)"),
        "helpers.py": BACKWARD,
    },
    "backward in a helper through its module": {
        "train.py": main("import helpers", backward="helpers.scaled(scaler, loss)"),
        "helpers.py": BACKWARD,
    },
    "backward in a helper through its package": {
        "train.py": main("import pkg.helpers", backward="pkg.helpers.scaled(scaler, loss)"),
        "pkg/__init__.py": "",
        "pkg/helpers.py": BACKWARD,
    },
    "backward in a helper, its module imported from its package": {
        "train.py": main("from pkg import helpers", backward="helpers.scaled(scaler, loss)"),
        "pkg/__init__.py": "",
        "pkg/helpers.py": BACKWARD,
    },
    "backward in a helper, its module imported under another name": {
        "train.py": main("import pkg.helpers as h", backward="h.scaled(scaler, loss)"),
        "pkg/__init__.py": "",
        "pkg/helpers.py": BACKWARD,
    },
    "backward in a helper, its module a star import's": {
        "train.py": main("from pkg import *", backward="helpers.scaled(scaler, loss)"),
        "pkg/__init__.py": "from . import helpers\n",
        "pkg/helpers.py": BACKWARD,
    },
    "backward in a helper, its module a package's global": {
        "train.py": main("import pkg", backward="pkg.run(scaler, loss)"),
        "pkg/__init__.py": "import torch\nfrom .helpers import scaled\n\n\ndef run(scaler, loss):\n"
        "    helpers.scaled(scaler, loss)\n" + CLIPPED,
        "pkg/helpers.py": BACKWARD,
    },
    "backward two helpers down": {
        "train.py": main("from helpers import outer", backward="outer(scaler, loss)"),
        "helpers.py": BACKWARD + "\n\ndef outer(scaler, loss):\n    scaled(scaler, loss)\n",
    },
    "backward in a helper handed on as a value": {
        "train.py": main("from helpers import scaled, call", backward="call(scaled, scaler, loss)"),
        "helpers.py": BACKWARD + "\n\ndef call(fn, *args):\n    fn(*args)\n",
    },
    "backward in a method": {
        "train.py": main("from helpers import Engine", backward="Engine().scaled(scaler, loss)"),
        "helpers.py": ENGINE.format(name="scaled"),
    },
    "backward in a callable object": {
        "train.py": main("from helpers import Engine", backward="Engine()(scaler, loss)"),
        "helpers.py": ENGINE.format(name="__call__"),
    },
    "backward in a nested function": {
        "train.py": main(
            before="def inner(scaler, loss):\n            scaler.scale(loss).backward()",
            backward="inner(scaler, loss)",
        ),
    },
    "unscale_ in a helper before the clip": {
        "train.py": main(
            "from helpers import scaled, unscaled",
            backward="scaled(scaler, loss)\n            unscaled(scaler, optimizer)",
        ),
        "helpers.py": BACKWARD + "\n\n" + UNSCALE,
    },
    "unscale_ in a helper through its module": {
        "train.py": main(
            "import helpers",
            backward="helpers.scaled(scaler, loss)\n"
            "            helpers.unscaled(scaler, optimizer)",
        ),
        "helpers.py": BACKWARD + "\n\n" + UNSCALE,
    },
    "a backward before the loop, in a helper": {
        "train.py": main("from helpers import scaled", before="scaled(scaler, cfg)"),
        "helpers.py": BACKWARD,
    },
}


def every_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reading before the first clip enters every helper (the search before BeforeClip)."""

    def build(self: event_capable.BeforeClip) -> None:
        self.built = self.open = True

    monkeypatch.setattr(event_capable.BeforeClip, "build", build)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_same_findings_as_entering_every_helper(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    compare_searches(PROGRAMS[name], tmp_path, monkeypatch, every_helper)


UNSCALED = ["unscale_ in a helper before the clip", "unscale_ in a helper through its module"]
# read the same either way, but no finding (the backward runs once, before the loop; the
# evaluator does not follow a star import's submodule, a package's submodule global, or an
# instance called at once)
NONE = [
    *UNSCALED,
    "a backward before the loop, in a helper",
    "backward in a callable object",
    "backward in a helper, its module a star import's",
    "backward in a helper, its module a package's global",
]
FOUND = sorted(set(PROGRAMS) - set(NONE))


@pytest.mark.parametrize("name", FOUND)
def test_the_programs_are_findings(name: str, tmp_path: Path) -> None:
    """The comparison above means something: these report the unscaled clip, the two whose
    helper unscales before the clip do not."""
    write(tmp_path, PROGRAMS[name])
    assert "ACF004" in report(tmp_path)


@pytest.mark.parametrize("name", UNSCALED)
def test_an_unscale_in_a_helper_is_read(name: str, tmp_path: Path) -> None:
    write(tmp_path, PROGRAMS[name])
    assert "ACF004" not in report(tmp_path)


# A `main()` that builds everything before it trains: its helpers follow their parameters
# through every script that calls them, and none can make a backward or an `unscale_`.
BUILD = """
    import torch


    def build_model(cfg):
        layers = cfg.layers
        return [layer.make() for layer in layers]


    def build_data(cfg):
        return cfg.source.open()


    def clipped(model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    """

SCRIPT = """
    from build import build_model, build_data


    def run{index}(cfg):
        model = build_model(cfg.model{index})
        data = build_data(cfg.data{index})
        return model, data
    """


def test_helpers_that_make_no_backward_are_not_asked_about(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {"build.py": BUILD, "helpers.py": BACKWARD}
    files.update({f"script{i}.py": SCRIPT.format(index=i) for i in range(20)})
    files["train.py"] = main(
        "from build import build_model, build_data\nfrom helpers import scaled",
        before="model = build_model(cfg)\n        loader = build_data(cfg)",
        backward="scaled(scaler, loss)",
    )
    write(tmp_path / "gated", files)
    write(tmp_path / "every", files)
    with monkeypatch.context() as patched:
        gated_counted = Counted(patched)
        gated = report(tmp_path / "gated")
    with monkeypatch.context() as patched:
        every_helper(patched)
        every_counted = Counted(patched)
        every = report(tmp_path / "every")
    assert gated == every
    assert "ACF004" in gated
    assert asked(every_counted, tmp_path / "every" / "build.py", "cfg.layers")
    assert not asked(gated_counted, tmp_path / "gated" / "build.py", "cfg.layers")


def module_built(tmp_path: Path, files: dict[str, str]) -> event_capable.BeforeClip:
    """The BeforeClip index of a run over the files."""
    made: list[event_capable.BeforeClip] = []
    built = event_capable.BeforeClip.build

    def build(self: event_capable.BeforeClip) -> None:
        built(self)
        made.append(self)

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(event_capable.BeforeClip, "build", build)
        write(tmp_path, files)
        report(tmp_path)
    assert made
    return made[0]


SAME_MODULE = {
    "train.py": main(
        before="model.train()\n        loss = cfg.loss\n        loss.backward()",
        backward="backward(scaler, loss)",
    )
    + "\n\ndef backward(scaler, loss):\n    scaler.scale(loss).backward()\n",
    "model.py": "def train():\n    pass\n",
}


def test_an_attribute_call_of_a_module_no_import_binds_runs_none_of_its_functions(
    tmp_path: Path,
) -> None:
    """`loss.backward()` in train.py is no call of train.py's own `backward`: no import binds
    the module train.py (`model.train()` writes its name, as an attribute of something else)."""
    index = module_built(tmp_path, SAME_MODULE)
    assert not index.open
    assert {f.node.name for f in index.levels[-1].values()} == {"backward", "main"}
    calls = [n for n in ast.walk(ast.parse(SAME_MODULE["train.py"])) if isinstance(n, ast.Call)]
    assert [ast.unparse(c) for c in calls if ast.unparse(c).startswith("loss.backward")]
    summary = index.reach.summary_of(tmp_path / "train.py")
    assert summary is not None
    attribute_calls = [
        n
        for n in ast.walk(summary.tree)
        if isinstance(n, ast.Call) and ast.unparse(n) == "loss.backward()"
    ]
    assert attribute_calls
    assert not any(index.call_clips(call, summary) for call in attribute_calls)


def test_an_import_of_the_module_makes_its_attribute_calls_count(tmp_path: Path) -> None:
    files = dict(SAME_MODULE, **{"run.py": "import train\n\ntrain.main(1, 2, 3, 4)\n"})
    index = module_built(tmp_path, files)
    summary = index.reach.summary_of(tmp_path / "train.py")
    assert summary is not None
    attribute_calls = [
        n
        for n in ast.walk(summary.tree)
        if isinstance(n, ast.Call) and ast.unparse(n) == "loss.backward()"
    ]
    assert attribute_calls
    assert all(index.call_clips(call, summary) for call in attribute_calls)


BINDS = [
    ("import a.b.mod\n", {"a"}),
    ("import a.b.mod as m\n", {"mod"}),
    ("import mod\n", {"mod"}),
    ("from a.b import mod\n", {"mod"}),
    ("from a.b import mod as m\n", {"mod"}),
    ("from . import mod\n", {"mod"}),
    ("from a.b.mod import f\n", {"f"}),  # a submodule `f` may be
    ("from .mod import f\n", {"f"}),
    ("from a.b import *\n", {"b"}),
    ("from . import *\n", {"a", "b", "mod", "f", "x", "y", "m"}),
    ("def f():\n    import x.y\n", {"x"}),
    ("mod.f()\nx = mod\n", set()),
]


@pytest.mark.parametrize(("source", "bound"), BINDS)
def test_which_module_objects_an_import_binds(source: str, bound: set[str]) -> None:
    summary = summarise(Path("/p"), Path("/p/m.py"), source, ast.parse(source))
    for name in ("a", "b", "mod", "f", "x", "y", "m"):
        assert binds_module(summary, name) is (name in bound), name


def test_a_module_s_names_are_its_own_and_its_packages() -> None:
    root = Path("/p")
    assert module_names(root, root / "src" / "pkg" / "mod.py") == {"src", "pkg", "mod"}
    assert module_names(root, root / "pkg" / "__init__.py") == {"pkg"}
    assert module_names(root, root / "mod.py") == {"mod"}


def test_the_sources_are_what_the_tests_say() -> None:
    """Each program parses (a test program with a slip would compare two empty reports)."""
    for files in PROGRAMS.values():
        for text in files.values():
            ast.parse(textwrap.dedent(text))
