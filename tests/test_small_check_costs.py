"""What a cold `check` of a small project whose requirements.txt decides both pin searches
leaves undone (issue 35: a 25-file project at most 6x ruff), and that each part left out still
answers where a project needs it. Left out there: the readers of Dockerfiles and CI workflows
(project/install_readers.py) and the code evidence (project/evidence.py), reached only past
the file that decides; the certificate and the gates' text tests, needed only once an analysis
or a rule's search runs; the patterns of a requirement file's includes, of the
`requirements*.txt` glob, of whitespace and extras in a pin's text, of digit runs longer than
the text and of ANSI styles in an output that holds none; a requirement line's plain shape,
its name and its canonical name, and a config's settled precision, are read with string
methods. The prefilter asks each file's adapter once, not once per word.
"""

from __future__ import annotations

import fnmatch
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_precision_gate import SETTLED_PRECISION
from test_requirement_lines import CANONICAL_RUN, NAME, SIMPLE_REQUIREMENT

from amp_clipfix import reporting
from amp_clipfix.analysis import project_collect
from amp_clipfix.analysis.collection import Collection
from amp_clipfix.paths import has_too_many_digits
from amp_clipfix.project.discover import Project
from amp_clipfix.project.pin_readers import requirement_pin
from amp_clipfix.project.pins import INCLUDE, LIGHTNING, is_requirements_name, resolve_target

SRC = Path(__file__).resolve().parent.parent / "src"

# Run in a fresh interpreter: the command as `python -m amp_clipfix` runs it, every pattern
# compiled noted, and at its end the modules imported and the patterns, as JSON in the file
# named by the first argument.
RUN = """
import atexit, os, re._compiler, runpy, sys
compiled = []
original = re._compiler.compile
def compile(pattern, flags=0):
    compiled.append(pattern if isinstance(pattern, str) else pattern.decode("latin-1"))
    return original(pattern, flags)
re._compiler.compile = compile
NOTED = sys.argv[1]
def noted():
    import json
    with open(NOTED, "w") as out:
        json.dump({"modules": sorted(sys.modules), "patterns": compiled}, out)
atexit.register(noted)
real_exit = os._exit
def exit_noted(code):  # the entry point ends with os._exit, past atexit
    noted()
    real_exit(code)
os._exit = exit_noted
sys.argv = ["amp_clipfix", *sys.argv[2:]]
runpy.run_module("amp_clipfix", run_name="__main__")
"""

# Not imported, not compiled by such a run.
LEFT_OUT_MODULES = {
    "amp_clipfix.project.install_readers",
    "amp_clipfix.project.evidence",
    "amp_clipfix.analysis.certificate",
    "amp_clipfix.analysis.gate_texts",
}
LEFT_OUT_PATTERNS = {
    SIMPLE_REQUIREMENT,  # a requirement line's plain shape and its name: string methods now
    NAME,
    CANONICAL_RUN,
    SETTLED_PRECISION.decode("latin-1"),  # a config's `# precision: 16`: string methods
    INCLUDE.pattern,  # a requirement file's `-r` / `-c` lines
    reporting.ANSI_STYLE.pattern,
    fnmatch.translate("requirements*.txt"),
    r"\s+",
    r"\[[^\]]*\]",
    r"[0-9]+",
}


def small_project(root: Path) -> Path:
    """`root` (made here) in the hydra template's shape: requirements.txt pins Lightning and
    torch with ranges (comments, an inline one, `hydra-core`: a `-c` in no option),
    pyproject.toml has only tool tables, setup.py names Lightning without a version; a
    Dockerfile and a workflow pin another release (never reached); a config holds
    `precision: 16` in a comment; the code holds no word a rule searches."""
    root.mkdir(exist_ok=True)
    (root / "requirements.txt").write_text(
        "# --------- pytorch --------- #\ntorch>=2.0.0\nlightning>=2.0.0  # the trainer\n"
        "hydra-core==1.3.2\nrich\n"
    )
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = ["-q"]\n')
    (root / "setup.py").write_text(
        'from setuptools import setup\n\nsetup(name="src", install_requires=["lightning"])\n'
    )
    (root / "Dockerfile").write_text("FROM python:3.11\nRUN pip install lightning==1.9.5\n")
    workflows = root / ".github" / "workflows"
    workflows.mkdir(parents=True)
    (workflows / "test.yml").write_text(
        "jobs:\n  t:\n    steps:\n      - run: pip install -r ci.txt\n"
    )
    (root / "configs").mkdir()
    (root / "configs" / "trainer.yaml").write_text("max_epochs: 3\n# precision: 16\n")
    (root / "src").mkdir()
    (root / "src" / "train.py").write_text("def main(cfg):\n    return cfg.trainer\n")
    return root


def run(
    root: Path, tmp_path: Path, codes: tuple[int, ...] = (0,)
) -> tuple[dict[str, list[str]], dict[str, object]]:
    """What `check --no-cache --format json .` imported and compiled, and its report (its exit
    code one of `codes`)."""
    noted = tmp_path / "noted.json"
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(noted), "check", "--no-cache", "--format", "json", "."],
        cwd=root,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode in codes, done.stderr[-2000:]
    return json.loads(noted.read_text()), json.loads(done.stdout)


def test_a_small_project_decided_by_its_requirements_leaves_the_rest_undone(
    tmp_path: Path,
) -> None:
    noted, report = run(small_project(tmp_path / "project"), tmp_path)
    summary = report["summary"]
    assert isinstance(summary, dict)
    assert summary["lightning_version"] == "lightning>=2.0.0"
    (project,) = summary["projects"]
    assert project["source"] == "requirements.txt"
    assert (project["torch"], project["torch_source"]) == ("torch>=2.0.0", "requirements.txt")
    modules = set(noted["modules"])
    assert "amp_clipfix.project.pin_readers" in modules  # the pins were read
    assert "amp_clipfix.sources.prefilter" in modules  # and the files prefiltered
    assert modules & LEFT_OUT_MODULES == set()
    assert modules & {"torch", "lightning", "pytorch_lightning", "lightning_fabric"} == set()
    assert set(noted["patterns"]) & LEFT_OUT_PATTERNS == set()


def test_a_pin_only_a_dockerfile_writes_is_read_by_its_reader(tmp_path: Path) -> None:
    """The readers imported when the listing reaches them still decide."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "Dockerfile").write_text("FROM python:3.11\nRUN pip install 'lightning==2.0.9'\n")
    (root / "train.py").write_text("def main():\n    return 1\n")
    noted, report = run(root, tmp_path)
    summary = report["summary"]
    assert isinstance(summary, dict)
    (project,) = summary["projects"]
    assert (project["source"], project["releases"]) == ("Dockerfile", ["2.0.9"])
    assert "amp_clipfix.project.install_readers" in noted["modules"]


@pytest.mark.parametrize(
    ("line", "included"),
    [
        ("-r base.txt", "base.txt"),
        ("  --requirement=base.txt", "base.txt"),
        ("-cbase.txt", "base.txt"),
        ("--constraint base.txt", "base.txt"),
    ],
)
def test_an_included_requirement_file_still_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str, included: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "requirements.txt").write_text(f"# the base\n{line}\n")
    (tmp_path / included).write_text("lightning==2.1.0\n")
    target = resolve_target(tmp_path).target
    assert (target.pin, target.source) == ("lightning 2.1.0", included)


def test_a_requirement_file_without_an_include_option_includes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`-r` / `-c` in no line (only `--` rules and a dashed name): the file alone, as a line
    by line match gives."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "requirements.txt").write_text("# ------ #\nlightning-fabric>=2.0\n")
    (tmp_path / "base.txt").write_text("lightning==2.1.0\n")
    target = resolve_target(tmp_path).target
    assert (target.pin, target.source) == ("lightning-fabric>=2.0", "requirements.txt")


@given(st.text(alphabet="requiments.tx-_R\n*[]", max_size=24))
def test_a_requirements_name_is_what_the_glob_matches(name: str) -> None:
    assert is_requirements_name(name) == fnmatch.fnmatchcase(name, "requirements*.txt")


@given(st.text(alphabet="Lightning[x] ,\t\u00a0\u2003\u3000<=>2.0;", max_size=40))
def test_a_pins_text_drops_blanks_and_extras_as_the_patterns_did(line: str) -> None:
    try:
        pin = requirement_pin(line, LIGHTNING)
    except Exception:  # noqa: BLE001 - a line packaging refuses: not what is compared here
        return
    if pin is None or "(" in line:
        return
    written = line.split(";")[0].strip()
    expected = re.sub(r"\[[^\]]*\]", "", re.sub(r"\s+", "", written))
    assert pin.text == expected


def test_a_run_of_digits_past_the_limit_is_found_only_in_a_text_that_long() -> None:
    limit = sys.get_int_max_str_digits()
    assert not has_too_many_digits("lightning>=2.0.0")
    assert not has_too_many_digits("9" * limit)
    assert has_too_many_digits("x" + "9" * (limit + 1))
    assert not has_too_many_digits("9 " * limit)


def test_styles_are_removed_from_a_stream_that_is_no_terminal() -> None:
    stream = io.StringIO()
    reporting.echo("\x1b[1mbold\x1b[0m and plain", file=stream)
    reporting.echo("no style, [brackets] kept", file=stream)
    assert stream.getvalue() == "bold and plain\nno style, [brackets] kept\n"


def test_the_prefilter_asks_each_files_adapter_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """About twenty words are asked of each file; its adapter is looked up at the first."""
    root = small_project(tmp_path)
    files = tuple(sorted(path for path in root.rglob("*") if path.suffix in (".py", ".yaml")))
    asked: list[Path] = []
    original = project_collect.adapter_for

    def adapter_for(path: Path):  # noqa: ANN202 - the spied function's own type
        asked.append(path)
        return original(path)

    monkeypatch.setattr(project_collect, "adapter_for", adapter_for)
    project = Project(root, files)
    contents, searchable = project_collect.read_project(project, Collection(root=root))
    assert set(contents) == set(files)
    assert set(searchable) == set(files)  # the commented `precision: 16`: the texts are read
    per_file = {path: asked.count(path) for path in files}
    assert max(per_file.values()) <= 2, per_file  # the prefilter's, and searchable_of's


def test_a_file_whose_adapter_fails_is_an_internal_error_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = small_project(tmp_path)
    broken = root / "src" / "train.py"
    files = (broken, root / "configs" / "trainer.yaml")
    original = project_collect.adapter_for

    class Failing:
        def may_mention(self, data: bytes, word: bytes) -> bool:
            raise ValueError("no word today")

    monkeypatch.setattr(
        project_collect,
        "adapter_for",
        lambda path: Failing() if path == broken else original(path),
    )
    collection = Collection(root=root)
    contents, _ = project_collect.read_project(Project(root, files), collection)
    assert broken not in contents
    (error,) = collection.errors
    assert error.path == broken
    assert error.message == "internal error while reading: ValueError('no word today')"
