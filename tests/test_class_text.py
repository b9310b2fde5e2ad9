"""A module class is found only in a file whose text writes a class with a base: the search for
module classes' optimizers (resolve_optimizers.module_optimizers) tests each candidate file's
bytes first (relevance.may_define_subclass), and a Python file whose classes name no base
(or that defines none) is never summarised, so its `ast` tree is never made and never kept
to the end of the run. Checked with weak references and the run's garbage collector off:
which trees were made, which are alive when the fixes start, and the report itself (the
same finding as with the test turned off)."""

from __future__ import annotations

import weakref
from pathlib import Path

import pytest
from test_memory_release import collector_off

from amp_clipfix.analysis import resolve_optimizers, summary
from amp_clipfix.analysis.relevance import may_define_subclass
from amp_clipfix.fixes import changes
from amp_clipfix.models import SiteKind, Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET

FILES = {
    "factory.py": """\
import torch


def make_optimizer(params, **options):
    return torch.optim.AdamW(params, lr=1e-3, **options)
""",
    "model.py": """\
import lightning as L

from factory import make_optimizer


class Model(L.LightningModule):
    def configure_optimizers(self):
        return make_optimizer(self.parameters(), fused=True)
""",
    "train.py": """\
import lightning as L

from model import Model

trainer = L.Trainer(precision="bf16-mixed", gradient_clip_val=1.0)
trainer.fit(Model())
""",
    # Names the module class (so a fused value may reach it) and lightning, but its only
    # class names no base: no module class can be in it.
    "helpers.py": '''\
"""Helpers for lightning runs."""
from model import Model


class Settings:
    lr = 1e-3


def build():
    return Model()
''',
    # A class with a base: read, as before.
    "mixins.py": """\
import lightning as L

from factory import make_optimizer


class FusedMixin(L.LightningModule):
    def configure_optimizers(self):
        return make_optimizer(self.parameters(), fused=True)
""",
}
READ = ["factory.py", "mixins.py", "model.py", "train.py"]


def project(folder: Path) -> Path:
    folder.mkdir()
    for name, text in FILES.items():
        (folder / name).write_text(text)
    (folder / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return folder


def check(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[object], list[str], list[list[str]]]:
    """The findings (code and sites), the files whose trees were made, and at the fixes stage
    the files whose trees are alive."""
    trees: list[tuple[str, weakref.ref[object]]] = []
    alive_at_fixes: list[list[str]] = []
    summarise, fix_project = summary.summarise, changes.fix_project

    def watched_summarise(*arguments, **keywords):  # noqa: ANN002, ANN003, ANN202
        made = summarise(*arguments, **keywords)
        if made is not None:
            trees.append((made.path.name, weakref.ref(made.tree)))
        return made

    def watched_fixes(*arguments, **keywords):  # noqa: ANN002, ANN003, ANN202
        alive_at_fixes.append(sorted(name for name, ref in trees if ref() is not None))
        return fix_project(*arguments, **keywords)

    monkeypatch.setattr(summary, "summarise", watched_summarise)
    monkeypatch.setattr(changes, "fix_project", watched_fixes)
    with collector_off():
        options = Options(Strategy.AUTO, DEFAULT_TARGET, with_edits=True, cache=False)
        result = run([folder], options)
    findings = [
        (finding.code, [(site.path.name, site.span.line) for site in finding.sites])
        for finding in result.findings
    ]
    return findings, sorted(name for name, _ in trees), alive_at_fixes


EXPECTED = [("ACF002", [("model.py", 8), ("train.py", 5), ("train.py", 5)])]


def test_a_file_without_a_subclass_is_never_summarised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    findings, made, alive_at_fixes = check(project(tmp_path / "p"), monkeypatch)
    assert findings == EXPECTED
    assert made == READ  # helpers.py's tree was never made
    assert alive_at_fixes == [READ]


def test_the_same_finding_when_every_file_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The test turned off: helpers.py is summarised (and its tree kept to the end), and the
    report is the same."""
    monkeypatch.setattr(resolve_optimizers, "may_define_subclass", lambda data: True)
    findings, made, alive_at_fixes = check(project(tmp_path / "p"), monkeypatch)
    assert findings == EXPECTED
    assert made == sorted([*READ, "helpers.py"])
    assert alive_at_fixes == [sorted([*READ, "helpers.py"])]


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"import lightning\n\ndef f():\n    return 1\n",
        b"class A:\n    pass\n",
        b"class  A \t: x = 1\n",
        b"def f():\n    class Inner:\n        pass\n",
        b"classes = [1]\nclassify(x)\nsubclass(y)\n",
        b"x = 'class A(B):'\n",  # not where a statement starts
        b"# a class A(B) in a comment\n",
        b"\xef\xbb\xbfclass A:\r\n    pass\r\n",
    ],
    ids=[
        "empty",
        "no-class",
        "no-base",
        "spaces",
        "nested",
        "other-words",
        "string",
        "comment",
        "bom",
    ],
)
def test_text_without_a_class_with_bases(text: bytes) -> None:
    assert may_define_subclass(text) is False


@pytest.mark.parametrize(
    "text",
    [
        b"class A(B):\n    pass\n",
        b"class A():\n    pass\n",  # an empty base list: read all the same
        b"class A(metaclass=M):\n    pass\n",
        b"if x:\n\tclass A(B): pass\n",
        b"def f():\n    class Inner(Base):\n        pass\n",
        b"class \\\n    A(B):\n    pass\n",  # split by a backslash
        b"class A \\\n    (B):\n    pass\n",
        b"class \xc3\xa9t\xc3\xa9(B):\n    pass\n",  # a name outside ASCII
        b"\xef\xbb\xbfclass A(B):\n    pass\n",
        b"x = 1\rclass A(B): pass\r",  # old Mac line breaks
        b"class A:\n    pass\n\x0cclass B(A):\n    pass\n",  # after a form feed
        b"class A[T](B):\n    pass\n",  # type parameters (3.12)
        "class A(B):\n    pass\n".encode("utf-16"),
        b'"""\nclass A(B):\n"""\n',  # a string's line: read (errs on the side of yes)
    ],
    ids=[
        "base",
        "empty-parens",
        "keyword",
        "tab",
        "nested",
        "backslash",
        "backslash-paren",
        "non-ascii",
        "bom",
        "cr",
        "form-feed",
        "type-params",
        "utf-16",
        "docstring",
    ],
)
def test_text_that_may_hold_a_class_with_bases(text: bytes) -> None:
    assert may_define_subclass(text) is True


def findings_of(folder: Path, cache: bool) -> list[object]:
    result = run([folder], Options(Strategy.AUTO, DEFAULT_TARGET, cache=cache))
    return [
        (finding.code, [(site.path.name, site.span.line, site.kind) for site in finding.sites])
        for finding in result.findings
    ]


def test_an_edit_that_adds_a_base_is_seen_by_a_cached_run(tmp_path: Path) -> None:
    """The file's bytes are read to tell that it holds no subclass: a later run with the cache
    sees an edit that gives its class a base (and a fused optimizer fitted by a Trainer of its
    own), as a run without the cache does."""
    folder = project(tmp_path / "p")
    assert findings_of(folder, cache=True) == findings_of(folder, cache=False)
    (folder / "helpers.py").write_text(EDITED)
    warm = findings_of(folder, cache=True)
    assert warm == findings_of(folder, cache=False)
    assert warm == [
        (
            "ACF002",
            [
                ("helpers.py", 10, SiteKind.FUSED_OPTIMIZER),
                ("helpers.py", 13, SiteKind.TRAINER_PRECISION),
                ("helpers.py", 13, SiteKind.TRAINER_CLIP),
            ],
        ),
        EXPECTED_SITES,
    ]


EDITED = """\
\"\"\"Helpers for lightning runs.\"\"\"
import lightning as L

from factory import make_optimizer
from model import Model


class Settings(Model):
    def configure_optimizers(self):
        return make_optimizer(self.parameters(), fused=True)


L.Trainer(precision="16-mixed", gradient_clip_val=0.5).fit(Settings())
"""
EXPECTED_SITES = (
    "ACF002",
    [
        ("model.py", 8, SiteKind.FUSED_OPTIMIZER),
        ("train.py", 5, SiteKind.TRAINER_PRECISION),
        ("train.py", 5, SiteKind.TRAINER_CLIP),
    ],
)
