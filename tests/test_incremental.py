"""Issue 35's memoised queries (analysis/queries.py): after any edit, a warm run prints the bytes
a cold `--no-cache` run prints; an edit to a file no query read reuses every query."""

from __future__ import annotations

import random
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from piped import amp_clipfix

from amp_clipfix.analysis import queries
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.relevance import imported_modules, imports_by_file, relevant_core
from amp_clipfix.analysis.resolve_base import (
    CLIPS_IN_CLASS,
    _still_relevant,
    _still_searched,
    search_reasons,
    text_search,
)
from amp_clipfix.analysis.summary import module_name

FACTORY = """import torch


def make_optimizer(params, fused):
    return torch.optim.AdamW(params, lr=1e-3, fused=fused)
"""
MODULE = """import lightning as L
from pkg.factory import make_optimizer


class Module(L.LightningModule):
    def configure_optimizers(self):
        return make_optimizer(self.parameters(), fused={fused})
"""
TRAIN = """import lightning as L
from pkg.module import Module

trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
trainer.fit(Module())
"""
SCALED = """import torch

scaler = torch.cuda.amp.GradScaler()


def step(model, optimizer, loss):
    scaler.scale(loss).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
"""
HELPER = """def helper_{i}(x):
    return x + {i}
"""
PYPROJECT = """[project]
name = "demo"
version = "0"
dependencies = ["lightning{pin}", "torch>=2.4"]
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project with a finding through a caller (module.py decides factory.py's `fused`), a
    plain-torch scaled clip, and helpers no search reads; the user's cache folder outside it
    (a secret inside the project is never used, so the cache would be off)."""
    root = base_project(tmp_path, monkeypatch, "False")
    for i in range(4):
        write(root, f"pkg/helper_{i}.py", HELPER.format(i=i))
    return root


def base_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fused: str) -> Path:
    """The factory, its caller passing `fused`, the Trainer, the scaled clip, the pins; the
    cache on."""
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = tmp_path / "project"
    write(root, "pkg/__init__.py", "")
    write(root, "pkg/factory.py", FACTORY)
    write(root, "pkg/module.py", MODULE.format(fused=fused))
    write(root, "train.py", TRAIN)
    write(root, "scaled.py", SCALED)
    write(root, "pyproject.toml", PYPROJECT.format(pin=">=2.0"))
    return root


def write(root: Path, name: str, text: str) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, bool]]]:
    yield from spied_queries(monkeypatch)


def spied_queries(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, bool]]]:
    """Each query asked, run after run: its name, and whether the cache answered it."""
    names: list[tuple[str, bool]] = []
    run = queries.Queries.run

    def spied(self: queries.Queries, name: str, *rest: object, **named: object) -> object:
        before = len(self.reused)
        value = run(self, name, *rest, **named)  # type: ignore[arg-type]
        names.append((name, len(self.reused) > before))
        return value

    monkeypatch.setattr(queries.Queries, "run", spied)
    yield names


def reused(asked: list[tuple[str, bool]]) -> list[str]:
    return [name for name, hit in asked if hit]


def computed(asked: list[tuple[str, bool]]) -> list[str]:
    return [name for name, hit in asked if not hit]


def same_as_cold(root: Path, *arguments: str) -> bytes:
    """The warm run's output, asserted equal (bytes, exit code) to a cold `--no-cache` run's."""
    warm = amp_clipfix(root, "check", *arguments, entry=False)
    cold = amp_clipfix(root, "check", "--no-cache", *arguments, entry=False)
    assert warm == cold
    return warm.stdout


Edit = Callable[[Path], None]


def edit_line(name: str, old: str, new: str) -> Edit:
    def edit(root: Path) -> None:
        path = root / name
        text = path.read_text(encoding="utf-8")
        assert old in text
        path.write_text(text.replace(old, new, 1), encoding="utf-8")

    return edit


def rename(old: str, new: str) -> Edit:
    return lambda root: (root / old).rename(root / new)


EDITS: dict[str, Edit] = {
    # a caller's argument creates a finding in another file (the factory's `fused=fused`)
    "caller creates a finding": edit_line("pkg/module.py", "fused=False", "fused=True"),
    "helper edited": edit_line("pkg/helper_1.py", "return x + 1", "return x + 10"),
    "caller removes it": edit_line("pkg/module.py", "fused=True", "fused=False"),
    "scaled clip unscaled": edit_line(
        "scaled.py", "    torch.nn.utils", "    scaler.unscale_(optimizer)\n    torch.nn.utils"
    ),
    "helper says fused": edit_line("pkg/helper_2.py", "return x + 2", "return x + 2  # fused"),
    "a file added that calls the factory fused": lambda root: write(
        root,
        "pkg/other.py",
        MODULE.format(fused="True").replace("class Module", "class Other"),
    ),
    "a helper removed": lambda root: (root / "pkg/helper_3.py").unlink(),
    "a file renamed": rename("pkg/other.py", "pkg/renamed.py"),
    "a helper that does not parse": edit_line("pkg/helper_0.py", "return x", "return x +"),
    "the tool's config": lambda root: write(
        root,
        "pyproject.toml",
        PYPROJECT.format(pin=">=2.0") + '\n[tool.amp-clipfix]\nextend-exclude = ["scaled.py"]\n',
    ),
    "the pins": lambda root: write(root, "pyproject.toml", PYPROJECT.format(pin="==2.1.0")),
    "the caller passes a variable": edit_line(
        "pkg/module.py", "fused=False", "fused=self.hparams.fused"
    ),
}


@pytest.mark.parametrize("output", [(), ("--format", "json")])
def test_every_edit_gives_the_bytes_of_a_cold_run(
    project: Path, asked: list[tuple[str, bool]], output: tuple[str, ...]
) -> None:
    """Each edit in turn on the warm caches: the warm run equals a cold one, and the findings
    follow the edits (so the queries really were asked again where an edit mattered)."""
    first = same_as_cold(project, *output)
    seen = {first}
    for name, edit in EDITS.items():
        asked.clear()
        edit(project)
        seen.add(same_as_cold(project, *output))
        if name == "helper edited":  # a file no query read
            assert asked and computed(asked) == [], asked
    assert len(seen) >= 6  # the edits changed the report, step by step


def test_an_edit_no_query_read_reuses_every_query(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    amp_clipfix(project, "check", entry=False)
    assert reused(asked) == []
    first = [name for name, _ in asked]
    assert first[:3] == ["trial", "clipping", "resolve"]
    assert "rule ACF004" in first and first[-1] == "settle"  # one query per searching rule
    asked.clear()
    edit_line("pkg/helper_1.py", "return x + 1", "return x + 11")(project)
    same_as_cold(project)
    assert reused(asked) == first


def test_the_caller_edit_runs_the_queries_that_read_it(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    text = same_as_cold(project)
    assert b"ACF002" not in text
    edit_line("pkg/module.py", "fused=False", "fused=True")(project)
    text = same_as_cold(project)
    assert b"pkg/module.py:7:56: ACF002" in text  # the finding the caller made, found again
    assert "resolve" not in reused(asked)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_pre_commit_command_after_an_edit(project: Path, asked: list[tuple[str, bool]]) -> None:
    """The hook's command on one staged file, warm, equals the cold run (.pre-commit-hooks.yaml)."""
    git = ["git", "-c", "user.email=a@b", "-c", "user.name=a"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=project, check=True)
    hook = ("--tracked-only", "--force-exclude", "--")
    same_as_cold(project, *hook, "pkg/factory.py")
    for edit, staged in (
        (edit_line("pkg/helper_1.py", "x + 1", "x + 12"), "pkg/helper_1.py"),
        (edit_line("pkg/module.py", "fused=False", "fused=True"), "pkg/module.py"),
    ):
        edit(project)
        subprocess.run([*git, "add", staged], cwd=project, check=True)
        same_as_cold(project, *hook, staged)
        same_as_cold(project, *hook, "pkg/factory.py")


def test_a_file_that_joins_a_scan_runs_the_queries_again(
    project: Path, asked: list[tuple[str, bool]]
) -> None:
    """A helper starts calling the factory: the scan for the files naming `make_optimizer` (the
    callers' candidates) finds one more file, so the queries that asked it run again."""
    edit_line("pkg/module.py", "fused=False", "fused=True")(project)
    before = same_as_cold(project)
    asked.clear()
    edit_line(
        "pkg/helper_1.py",
        "def helper_1",
        "from pkg.factory import make_optimizer\n\n\ndef build(params):\n"
        "    return make_optimizer(params, fused=True)\n\n\ndef helper_1",
    )(project)
    after = same_as_cold(project)
    assert after != before  # the finding now names the factory's two callers
    assert "resolve" not in reused(asked)


# -- the relevance core's check (resolve_base._still_relevant) ------------------------------------


def test_the_relevance_check_never_keeps_a_core_that_changed(tmp_path: Path) -> None:
    """Random one-line edits of small projects: whenever the check says the core holds, the
    core computed again on the edited files is the same (files, rounds aside), and so are the
    files it imports."""
    generator = random.Random(35)
    lines = [
        b"fused = True",
        b"def make_a(): pass",
        b"def make_b(): return make_a()",
        b"x = make_b()",
        b"class Net(Base): pass",
        b"y = Net()",
        b"import pkg.m1",
        b"from pkg import m2",
        b"z = 1",
        b"",
    ]
    kept = 0
    for _ in range(400):
        contents = {
            tmp_path / "pkg" / f"m{i}.py": b"\n".join(generator.sample(lines, 3)) + b"\n"
            for i in range(5)
        }
        modules = {module_name(tmp_path, path)[0]: [path] for path in contents}
        core = relevant_core(contents, b"fused")
        imported = {path: imported_modules(contents[path]) for path in core.rounds}
        answer = (core.rounds, core.defined, imported)
        changed_path = generator.choice(list(contents))
        edited = dict(contents)
        edited[changed_path] = b"\n".join(generator.sample(lines, 3)) + b"\n"
        if _still_relevant(edited, {changed_path: edited[changed_path]}, answer):
            kept += 1
            again = relevant_core(edited, b"fused")
            assert set(again.rounds) == set(core.rounds)
            before = imports_by_file(core.rounds, contents, modules)
            now = imports_by_file(again.rounds, edited, modules)
            assert set().union(*now.values()) == set().union(*before.values())
    assert kept > 20  # the check does keep cores: the test compares something


@pytest.mark.parametrize("kind", ["subclasses", "naming"])
def test_the_text_search_check_never_keeps_an_answer_that_changed(
    tmp_path: Path, kind: str
) -> None:
    """Random one-line edits: whenever resolve_base._still_searched says a text search holds,
    the search made again on the edited files gives the same files."""
    generator = random.Random(35)
    lines = [
        b"class Base: pass",
        b"class Mid(Base): pass",
        b"class Leaf(Mid):\n    x = clip_gradients",
        b"class Other(object): pass",
        b"def make_leaf(): return Leaf()",
        b"y = make_leaf()",
        b"trainer.fit(model)",
        b"z = 1",
        b"def helper(): return 2",
        b"print(z)",
        b"w = helper()",
    ]
    kept = 0
    for _ in range(300):
        contents = {
            tmp_path / f"m{i}.py": b"\n".join(generator.sample(lines, 3)) + b"\n" for i in range(5)
        }
        evaluator = Evaluator({}, lambda path: None, contents)
        if kind == "subclasses":
            ask = {"body": CLIPS_IN_CLASS}
            names: tuple[str, ...] = ("Base",)
        else:
            ask = {"within": b".fit("}
            names = ("Leaf",)
        found = text_search(evaluator, kind, *names, **ask)  # type: ignore[arg-type]
        key = (kind, names, CLIPS_IN_CLASS.pattern if kind == "subclasses" else b".fit(")
        answer = search_reasons(evaluator, kind, names, key)
        changed_path = generator.choice(list(contents))
        edited = dict(contents)
        edited[changed_path] = b"\n".join(generator.sample(lines, 3)) + b"\n"
        body = key[2] if kind == "subclasses" else None
        within = None if kind == "subclasses" else b".fit("
        change = {changed_path: edited[changed_path]}
        if _still_searched(edited, change, answer, kind, names, body, within):
            kept += 1
            fresh = Evaluator({}, lambda path: None, edited)
            again = text_search(fresh, kind, *names, **ask)
            assert again == found
    assert kept > 20
