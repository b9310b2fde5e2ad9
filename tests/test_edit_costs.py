"""What a warm run after an edit recomputes, made cheaper without changing an answer (branch
`edit4`): the reach index's `def name` test searched from its literal, the relevance's imports
read once per file."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from amp_clipfix.analysis import relevance
from amp_clipfix.analysis.reach import defines

TEXTS = [
    b"def item(self):\n",
    b"    def  item (x):\n",
    b"def\titem\n",
    b"undef item\n",  # `def` ends a longer word
    b"_def item\n",
    b"1def item\n",
    b"x.def item",
    b"(def item",
    b"def itemize(self):\n",  # a longer name
    b"def item_(self):\n",
    b"async def item(self):\n",
    b"undef item\ndef item():\n",  # the second `def` is a whole word
    b"undef item undef  item def item",
    b"\xc3def item",  # a byte that is no ASCII word byte: a boundary, as `\b` says
    b"def item\xc3",
    b"def\n\nitem",
    b"de f item",
    b"",
    b"def",
    b"item def",
]


@pytest.mark.parametrize("text", TEXTS)
@pytest.mark.parametrize("name", ["item", "it", "def_", "x"])
def test_defines_is_the_word_boundary_search(text: bytes, name: str) -> None:
    expected = re.search(rb"\bdef\s+" + re.escape(name.encode()) + rb"\b", text) is not None
    assert defines(name, text) is expected


def test_the_relevance_reads_each_core_file_s_imports_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fused relevance (resolve_base.relevant_files) gives the files it gave, and notes the
    modules each core file imports, with one `imported_modules` per core file (it was two:
    one for the imports followed, one for the note)."""
    from amp_clipfix.analysis.recording import Reads, Recording
    from amp_clipfix.analysis.resolve import project_evaluator
    from amp_clipfix.analysis.resolve_base import relevant_files
    from amp_clipfix.analysis.summary import summarise

    files = {
        tmp_path / "pkg" / "__init__.py": b"",
        tmp_path / "pkg" / "opt.py": b"import torch\nfrom pkg import util\n"
        b"def make(p):\n    return torch.optim.AdamW(p, fused=True)\n",
        tmp_path / "pkg" / "util.py": b"import os\n",
        tmp_path / "pkg" / "train.py": b"from pkg.opt import make\nimport pkg.util as u\n",
        tmp_path / "other.py": b"import json\n",
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    calls: list[bytes] = []
    original = relevance.imported_modules

    def counted(data: bytes) -> frozenset[str]:
        calls.append(data)
        return original(data)

    monkeypatch.setattr(relevance, "imported_modules", counted)
    monkeypatch.setattr("amp_clipfix.analysis.resolve_base.imported_modules", counted)

    def load(path: Path) -> object:
        return summarise(tmp_path, path, files[path].decode(), data=files[path])

    evaluator = project_evaluator(tmp_path, files, load)
    evaluator.contents = Recording(files, Reads())
    relevant = relevant_files(evaluator)
    pkg = tmp_path / "pkg"
    assert relevant == {pkg / "opt.py", pkg / "train.py", pkg / "util.py", pkg / "__init__.py"}
    rounds, _, modules = evaluator.relevant_core
    assert set(rounds) == {pkg / "opt.py", pkg / "train.py"}
    assert modules == {pkg / "opt.py": {"torch", "pkg"}, pkg / "train.py": {"pkg.opt", "pkg.util"}}
    assert sorted(calls) == sorted(files[path] for path in rounds)


# A recomputed query starts from what its earlier entry knew that still holds
# (queries.Queries.absent, recording.Absent). ACF004's reach index asks whether some file gives
# the attribute `after_backward` a value (tests/test_reach_bindings.py's program, every
# statement read); hooks.py writes the name as a local variable only, so the answer is no, and
# a run after an edit elsewhere takes that from the earlier entry instead of parsing hooks.py
# again (reach.CallReach.value_files promises it).
FOUND = b"ops.py:5:5: ACF004"


def hooks_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from test_incremental import write
    from test_reach import every_statement
    from test_reach_bindings import LOCAL, MADE, OPS, TRAIN

    from amp_clipfix.analysis import clip_tail

    monkeypatch.setattr(clip_tail.ClipCapable, "build", every_statement)
    monkeypatch.setattr(clip_tail, "statement_of", lambda *arguments: None)
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = tmp_path / "project"
    hooks = "from ops import clip\n\n" + LOCAL["local_variable"]
    train = TRAIN.format(imports=MADE, hooks="make_hooks()")
    for name, text in {"ops.py": OPS, "hooks.py": hooks, "train.py": train}.items():
        write(root, name, text)
    write(root, "pyproject.toml", '[project]\nname = "p"\ndependencies = ["lightning==2.6.6"]\n')
    return root


def names_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files ACF004's reach index reads the names of (each parsed for it), run after run."""
    from amp_clipfix.analysis import reach

    read: list[str] = []
    names_of = reach.CallReach.names_of

    def spied(self: reach.CallReach, path: Path, data: bytes) -> object:
        if path not in self.files:
            read.append(path.name)
        return names_of(self, path, data)

    monkeypatch.setattr(reach.CallReach, "names_of", spied)
    return read


def test_an_edit_elsewhere_does_not_parse_again_what_binds_no_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """train.py gets a line on top (every line of the file ACF004 reads moves): ACF004 is
    computed again, with the bytes of a cold run, and hooks.py is not parsed to learn again
    that it gives `after_backward` no value (a cold run parses it)."""
    from piped import amp_clipfix
    from test_incremental import edit_line, same_as_cold

    root = hooks_project(tmp_path, monkeypatch)
    read = names_read(monkeypatch)
    assert FOUND not in same_as_cold(root)
    assert read == ["hooks.py", "hooks.py"]  # the warm (cache filled) and the cold run
    edit_line("train.py", "import torch\n", "_edited = 1\nimport torch\n")(root)
    read.clear()
    warm = amp_clipfix(root, "check", entry=False)
    assert read == []
    cold = amp_clipfix(root, "check", "--no-cache", entry=False)
    assert read == ["hooks.py"]
    assert warm == cold
    assert warm.code == 0, warm.stdout


def bound_in_train(root: Path) -> None:
    """train.py itself (the file whose lines moved) now gives the attribute a value."""
    path = root / "train.py"
    text = path.read_text()
    text = text.replace("run(make_hooks(), ", "run(SimpleNamespace(after_backward=clip), ")
    path.write_text("from types import SimpleNamespace\n\nfrom ops import clip\n" + text)


def bound_in_hooks(form: str) -> Callable[[Path], None]:
    """hooks.py, read for the names before, now gives the attribute a value."""
    from test_reach_bindings import BINDING

    return lambda root: (root / "hooks.py").write_text(BINDING[form][0])


# Edits after which the answer changes: some file gives `after_backward` a value, so the call
# is asked about and the clip in ops.clip is found; each must be tested, not taken as known.
CHANGES = {
    "keyword_in_the_file_read": bound_in_hooks("keyword"),
    "init_parameter_in_the_file_read": bound_in_hooks("init_stores_parameter"),
    "keyword_in_the_moved_file": bound_in_train,
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_an_edit_that_gives_the_value_is_found(
    change: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_incremental import same_as_cold

    root = hooks_project(tmp_path, monkeypatch)
    assert FOUND not in same_as_cold(root)
    CHANGES[change](root)
    assert FOUND in same_as_cold(root)


@pytest.mark.parametrize("kind", ["deleted", "renamed", "added"])
def test_a_changed_list_of_files_tests_again(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file deleted, renamed or added: no fact of the earlier entry is taken (the list of
    files is another), and the run gives a cold run's bytes."""
    from test_incremental import same_as_cold

    root = hooks_project(tmp_path, monkeypatch)
    (root / "extra.py").write_text(
        "def extra():\n    after_backward = 1\n    return after_backward\n"
    )
    assert FOUND not in same_as_cold(root)
    read = names_read(monkeypatch)
    if kind == "deleted":
        (root / "extra.py").unlink()
    elif kind == "renamed":
        (root / "extra.py").rename(root / "other.py")
    else:
        (root / "bound.py").write_text(
            "from types import SimpleNamespace\n\nfrom ops import clip\n\n"
            "HOOKS = SimpleNamespace(after_backward=clip)\n"
        )
    output = same_as_cold(root)
    assert FOUND not in output  # bound.py's namespace is not the one `run` is given
    if kind != "added":  # (bound.py is a witness without a parse)
        assert "hooks.py" in read[: len(read) // 2]  # the warm run parsed it again


def test_apply_after_an_edit_elsewhere_gives_a_cold_run_s_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`apply --dry-run` runs the analysis again on the fixed files (a second round, which
    takes the first round's summaries, and its promised ones, for the files it did not
    change): after the line on top of train.py, the diff and exit code are a cold run's."""
    from piped import amp_clipfix
    from test_incremental import edit_line, same_as_cold

    root = hooks_project(tmp_path, monkeypatch)
    bound_in_train(root)
    assert FOUND in same_as_cold(root)
    edit_line("train.py", "import torch\n", "_edited = 1\nimport torch\n")(root)
    warm = amp_clipfix(root, "apply", "--dry-run", entry=False)
    cold = amp_clipfix(root, "apply", "--dry-run", "--no-cache", entry=False)
    assert warm == cold
    assert b"+++ b/train.py" in warm.stdout


@pytest.mark.parametrize("budget", [3, 8, 20])
def test_under_a_budget_that_cuts_answers_an_edit_elsewhere_gives_the_cold_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    """With a run's budget small enough that answers are cut, which questions come first and
    what they spend decide the report: the promised files keep the cold run's order. The
    line on top of train.py, then one that gives the value in train.py itself."""
    from test_incremental import edit_line, same_as_cold

    from amp_clipfix.analysis import frame

    monkeypatch.setattr(frame, "BUDGET", budget)
    root = hooks_project(tmp_path, monkeypatch)
    same_as_cold(root)
    edit_line("train.py", "import torch\n", "_edited = 1\nimport torch\n")(root)
    same_as_cold(root)
    bound_in_train(root)
    same_as_cold(root)
