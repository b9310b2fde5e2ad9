"""The search gate (sources/prefilter.may_need_search) asks of a file holding an old precision
spelling what ACF011's search asks before it parses one: a Python file must be able to call a
Trainer or a Fabric (analysis/calls.CallTest), a config must hold `16` / `bf16` on a line that
is not a comment (`may_spell_old_value`). A project where neither holds (a test setting
`cfg.trainer.precision = 16`, a commented-out `# precision: 16`: the Lightning-Hydra template)
imports no analysis or rule module, and its output is the searched run's."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from amp_clipfix import pipeline
from amp_clipfix.analysis.calls import CallTest
from amp_clipfix.analysis.names import FABRIC_CLASSES, TRAINER_CLASSES
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET
from amp_clipfix.rules import acf011
from amp_clipfix.sources.prefilter import (
    PRECISION_CALL_WORDS,
    config_may_spell_old_value,
    holds,
    may_call_for_precision,
    may_need_search,
    unsettled_precision,
)

ROOT = Path("/p")


def test_the_call_words_hold_every_word_and_package_acf011s_call_test_reads() -> None:
    """A word the rule's CallTest finds in a text holds a call word, and so does every package
    whose name in a module's path lets it pass: the gate passes every file the test passes."""
    test = CallTest(ROOT, TRAINER_CLASSES | FABRIC_CLASSES, acf011.PRECISION)
    calls = [word.decode("ascii") for word in PRECISION_CALL_WORDS]
    assert all(any(call in word.decode("ascii") for call in calls) for word in test.words)
    assert all(any(call in package for call in calls) for package in test.packages)
    assert acf011.WORDS is acf011.LEGACY_PRECISION_WORDS


PIECES = [
    "precision=16",
    "**cfg",
    "Trainer",
    "Ｔｒａｉｎｅｒ",
    "Fabric",
    "from_argparse_args",
    "lightning",
    "ｌightning",
    "from . import T",
    "import x as T",
    "T(",
    " ",
    "\n",
    "é",
]
NAMES = ["t.py", "lightning/t.py", "pkg/pytorch_lightning/m.py", "lightning_fabric.py", "a/b.py"]


@given(st.lists(st.sampled_from(PIECES), max_size=8), st.sampled_from(NAMES))
def test_the_gate_passes_every_file_acf011s_call_test_passes(pieces: list[str], name: str) -> None:
    data = "".join(pieces).encode("utf-8")
    test = CallTest(ROOT, TRAINER_CLASSES | FABRIC_CLASSES, acf011.PRECISION)
    if test(ROOT / name, data):
        assert may_call_for_precision(ROOT / name, data, ROOT)


def gate(*files: tuple[str, bytes]) -> bool:
    searched = [(ROOT / name, data, name.endswith(".yaml"), holds) for name, data in files]
    return may_need_search(searched, ROOT)


SETTING = b"def test(cfg):\n    cfg.trainer.precision = 16\n"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ([("tests/test_train.py", SETTING)], False),  # no Trainer or Fabric can be called
        ([("tests/test_train.py", b"import lightning\n" + SETTING)], True),
        ([("tests/test_train.py", b"from x import Trainer\n" + SETTING)], True),
        ([("tests/test_train.py", b"from x import Fabric\n" + SETTING)], True),
        ([("t.py", b"T.from_argparse_args(a)\n" + SETTING)], True),
        ([("src/lightning/t.py", SETTING)], True),  # `from . import Trainer` in the package
        ([("src/pytorch_lightning/t.py", SETTING)], True),
        ([("t.ipynb", SETTING)], True),  # a notebook's code: read as the search reads it
        ([("c.yaml", b"trainer:\n  # precision: 16\n  max_epochs: 1\n")], False),
        ([("c.yaml", b"# mixed precision\n# precision: 16\n")], False),
        ([("c.yaml", b"trainer:\n  precision: 16\n")], True),
        ([("c.yaml", b"trainer:\n  precision: 'bf16'  # fast\n")], True),
        ([("c.yaml", b"p: &p '16'\ntrainer:\n  precision: *p  # precision: 16\n")], True),
        ([("c.yaml", b'trainer:\n  "precisio\\u006e": x # precision: 16\n')], True),
        ([("c.yaml", b"trainer:\n  precision: 16-mixed # precision: \xff 16\n")], True),
        ([("c.yaml", b"# precision: 16\n"), ("t.py", SETTING)], False),
        ([("c.yaml", b"# precision: 16\n"), ("t.py", SETTING), ("u.py", b"clip_gradients")], True),
    ],
)
def test_the_gate_passes_a_file_only_where_acf011_may_read_it(
    files: list[tuple[str, bytes]], expected: bool
) -> None:
    assert gate(*files) is expected


def test_a_declared_encoding_is_read_as_python_reads_the_file() -> None:
    """`Ｔｒａｉｎｅｒ` in ISO-2022-JP is ASCII bytes that write no `Trainer`; Python reads the
    name as `Trainer` (NFKC), and so does the gate."""
    code = "# -*- coding: iso2022_jp -*-\nt = Ｔｒａｉｎｅｒ(precision=16)\n"
    data = code.encode("iso2022_jp")
    assert data.isascii() and b"Trainer" not in data
    assert may_call_for_precision(ROOT / "t.py", data, ROOT)
    other = code.replace("Ｔｒａｉｎｅｒ", "Ｍｏｄｅｌ").encode("iso2022_jp")
    assert not may_call_for_precision(ROOT / "t.py", other, ROOT)
    assert may_call_for_precision(ROOT / "t.py", b"# coding: nope\nx = 16\n", ROOT)  # unread
    assert may_call_for_precision(ROOT / "lightning" / "t.py", b"precision = 16\n", ROOT)
    assert not may_call_for_precision(ROOT / "lightning" / "t.py", b"x = 16\n", ROOT / "lightning")


def test_a_config_that_does_not_decode_counts_as_spelling_an_old_value() -> None:
    assert config_may_spell_old_value(b"# \xff\n")
    assert not config_may_spell_old_value(b"\xef\xbb\xbf# precision: 16\n")


# A project whose only old spellings are a test's setting and a commented-out config line, a
# file that does not parse holding one, and a Trainer that is built elsewhere with a settled
# spelling.
PROJECT = {
    "pyproject.toml": '[project]\nname = "p"\ndependencies = ["lightning>=2.1"]\n',
    "tests/test_train.py": SETTING.decode(),
    "tests/broken.py": "cfg.precision = 16 (\n",
    "configs/trainer.yaml": "_target_: lightning.pytorch.Trainer\n# precision: 16\n",
    "train.py": 'import lightning as L\n\nL.Trainer(precision="16-mixed").fit(None)\n',
}


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def test_a_gated_project_gives_what_the_search_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = write(tmp_path, PROJECT)
    options = Options(Strategy.AUTO, DEFAULT_TARGET)
    gated = run([folder], options)
    monkeypatch.setattr(pipeline, "may_need_search", lambda files, root, cleared: True)
    searched = run([folder], options)
    assert (gated.findings, gated.errors) == (searched.findings, searched.errors)
    assert gated.files_seen == searched.files_seen == 4  # the Python files and the config


def test_the_collection_reads_the_texts_it_read_before_and_reports_their_errors(
    tmp_path: Path,
) -> None:
    """The collection decides which texts it reads (a notebook's JSON parsed for its code) by
    the words alone, as before the gate asked what ACF011 can read: a notebook that is no JSON
    is reported where a test's `precision = 16` makes the project's texts read, though no rule
    searches."""
    folder = write(tmp_path, {"tests/test_train.py": SETTING.decode(), "bad.ipynb": "{no json"})
    result = run([folder], Options(Strategy.AUTO, DEFAULT_TARGET))
    assert [(error.path.name, error.kind.value) for error in result.errors] == [
        ("bad.ipynb", "read")
    ]
    assert may_need_search([(folder / "t.py", SETTING, False, holds)])  # the collection's
    assert not may_need_search([(folder / "t.py", SETTING, False, holds)], folder)  # the rules'


# `check --no-cache --format json FOLDER` in a new interpreter; the analysis and rule modules it
# imported on stderr.
RUN = """
import contextlib, sys
from amp_clipfix import replay
sys.argv = ["amp-clipfix", "check", "--no-cache", "--format", "json", sys.argv[1]]
with contextlib.suppress(SystemExit):
    replay._main()
sys.stdout.flush()
names = ("amp_clipfix.analysis.facts", "amp_clipfix.rules.acf")
print(" ".join(sorted(m for m in sys.modules if m.startswith(names))), file=sys.stderr)
"""


def checked(folder: Path) -> tuple[dict[str, object], set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(folder)], capture_output=True, text=True, check=False
    )
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout), set(done.stderr.split())


def test_a_project_acf011_cannot_read_imports_no_search(tmp_path: Path) -> None:
    report, imported = checked(write(tmp_path / "gated", PROJECT))
    assert report["findings"] == [] and imported == set()


def test_an_old_spelling_in_a_trainer_call_is_still_found(tmp_path: Path) -> None:
    files = {**PROJECT, "train.py": PROJECT["train.py"].replace('"16-mixed"', "16")}
    report, imported = checked(write(tmp_path / "found", files))
    findings = report["findings"]
    assert isinstance(findings, list)
    assert [finding["code"] for finding in findings] == ["ACF011"]
    assert {"amp_clipfix.analysis.facts", "amp_clipfix.rules.acf011"} <= imported


def cli_check(folder: Path, *options: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", "--format", "json", *options, "."],
        cwd=folder,
        env={k: v for k, v in os.environ.items() if k != "AMP_CLIPFIX_NO_CACHE"},  # conftest's
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


def test_an_edit_that_lets_acf011_read_a_file_is_seen_by_the_warm_run(tmp_path: Path) -> None:
    """The gate is asked again of the edited project: a warm run after a test starts to build
    a Trainer with an old spelling reports what a cold run reports."""
    folder = write(tmp_path / "edited", PROJECT)
    before = cli_check(folder)
    assert json.loads(before)["findings"] == []
    assert cli_check(folder) == before  # the replay
    assert (folder / ".amp_clipfix_cache").is_dir()  # the warm runs below read it
    test = folder / "tests" / "test_train.py"
    test.write_text("import lightning as L\n\n" + SETTING.decode() + "L.Trainer(precision=16)\n")
    warm = cli_check(folder)
    assert warm == cli_check(folder, "--no-cache")
    assert [finding["code"] for finding in json.loads(warm)["findings"]] == ["ACF011"]


# The pattern `unsettled_precision` replaces (the oracle here; the run compiles it no more:
# tests/test_small_check_costs.py): a config's settled `precision:` value.
SETTLED_PRECISION = (
    rb"precision[ \t]*:[ \t]*(['\"]?)[A-Za-z0-9_]+-[A-Za-z0-9_-]+\1[ \t]*"
    rb"(?:#[^\r\n]*)?(?=[\r\n]|\Z)"
)
CONFIG_PIECES = [b"precision", b"precision:", b":", b" ", b"\t", b"'", b'"', b"16", b"bf16"]
CONFIG_PIECES += [b"-", b"mixed", b"_", b"#", b"\n", b"\r", b"\r\n", b"x", b"\xc3\xa9", b"."]


@settings(max_examples=3000, deadline=None)
@given(st.lists(st.sampled_from(CONFIG_PIECES), max_size=16).map(b"".join))
@example(b"precision: 16-mixed\n")
@example(b"precision: '16-mixed'  # x\r\nprecision:bf16-true")
@example(b"precision: '16-mixed\"\n")
@example(b"precision: 16-mixed # precision\n")
@example(b"precision: precision-x\n")
@example(b"precision : 16-\n")
@example(b"# precision: 16\n")
@example(b"precision: 16-mixed # precision: 16-mixed\n")  # in the comment of the one before
@example(b"precision: 16-mixed #x\rprecision: bf16-mixed\n")  # a comment ends at a carriage return
def test_an_unsettled_precision_is_what_the_pattern_left(data: bytes) -> None:
    settled = len(re.findall(SETTLED_PRECISION, data))
    assert unsettled_precision(data) == (data.count(b"precision") != settled)
