"""Hostile input (issue 17): nothing corrupted, nothing crashed, nothing hung, nothing written
outside the project. One section per cause; each test failed before its fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import amp_clipfix.analysis.parse_pool as parse_pool
import amp_clipfix.pipeline as pipeline_module
from amp_clipfix.cli import main
from amp_clipfix.output.report import is_error_line

REPO = Path(__file__).resolve().parent.parent
GOOD = (REPO / "fixtures" / "fabric_precision_kwarg_16_mixed" / "input" / "train.py").read_bytes()
# unfuse writes fused=False; ACF007 then passes error_if_nonfinite=False to Fabric's own clip
GOOD_FIXED = GOOD.replace(b"fused=True", b"fused=False").replace(
    b"max_norm=1.0)", b"max_norm=1.0, error_if_nonfinite=False)"
)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def error_lines(result: Result) -> list[str]:
    return [line for line in result.output.splitlines() if is_error_line(line)]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_bytes(b"")
    monkeypatch.chdir(root)
    return root


# --- YAML: an edit changes exactly the scalar's own token, whatever its style -----------------

TRAINER = "trainer:\n  precision: {precision}\n  gradient_clip_val: 1.0\n"
OPTIMIZER = "optimizer:\n  class_path: torch.optim.AdamW\n  init_args:\n    fused: {fused}\n"


@pytest.mark.parametrize(
    ("fused", "fixed"),
    [
        ("!!bool true", "!!bool false"),
        ("&f true", "&f false"),  # an anchor nobody uses: a known value, fixed at the anchor
        ("!!bool &f yes", "!!bool &f no"),
        ("true  # speed", "false  # speed"),
    ],
)
def test_yaml_fused_token_after_tag_or_anchor(project: Path, fused: str, fixed: str) -> None:
    config = project / "config.yaml"
    config.write_text(TRAINER.format(precision="16-mixed") + OPTIMIZER.format(fused=fused))
    assert invoke("apply", "--yes", "--lightning-version", "2.6.6").exit_code == 0
    assert config.read_text() == TRAINER.format(precision="16-mixed") + OPTIMIZER.format(
        fused=fixed
    )
    assert invoke("check", "--lightning-version", "2.6.6").exit_code == 0  # fixed for good


@pytest.mark.parametrize(
    ("precision", "fixed"),
    [
        ("&p 16-mixed", "&p bf16-mixed"),
        ("!!str 16", "!!str bf16-mixed"),
        ("'16-mixed'", "'bf16-mixed'"),
        (">-\n    16-mixed", ">-\n    bf16-mixed"),
        ("!!str >-\n    16-mixed", "!!str >-\n    bf16-mixed"),
    ],
)
def test_yaml_precision_token_after_tag_anchor_or_block(
    project: Path, precision: str, fixed: str
) -> None:
    config = project / "config.yaml"
    config.write_text(TRAINER.format(precision=precision) + OPTIMIZER.format(fused="true"))
    result = invoke(
        "apply", "--yes", "--strategy", "bf16", "--lightning-version", "2.7.0", "--ignore", "ACF011"
    )  # `!!str 16` is also ACF011's (a historical spelling), which bf16 does not fix
    assert result.exit_code == 0, result.output
    assert config.read_text() == TRAINER.format(precision=fixed) + OPTIMIZER.format(fused="true")


def test_yaml_flow_mapping_value(project: Path) -> None:
    config = project / "config.yaml"
    text = "trainer: {precision: 16-mixed, gradient_clip_val: 1.0}\n"
    config.write_text(
        text + "optimizer: {class_path: torch.optim.AdamW, init_args: {fused: true}}\n"
    )
    assert invoke("apply", "--yes", "--lightning-version", "2.6.6").exit_code == 0
    assert config.read_text().endswith("init_args: {fused: false}}\n")


@pytest.mark.parametrize(
    "optimizer",
    [
        # a merge key supplies `fused`: the value is shared with `base`
        "base: &base\n  class_path: torch.optim.AdamW\n  init_args:\n    fused: true\n"
        "optimizer:\n  <<: *base\n",
        # the scalar itself is aliased
        "flag: &f true\noptimizer:\n  class_path: torch.optim.AdamW\n  init_args:\n    fused: *f\n",
        # the whole optimizer section is an alias
        "opt: &o\n  class_path: torch.optim.AdamW\n  init_args: {fused: true}\noptimizer: *o\n",
    ],
    ids=["merge-key", "aliased-scalar", "aliased-section"],
)
def test_yaml_shared_value_is_reported_never_edited(project: Path, optimizer: str) -> None:
    config = project / "config.yaml"
    config.write_text(TRAINER.format(precision="16-mixed") + optimizer)
    before = config.read_bytes()
    result = invoke("apply", "--yes", "--lightning-version", "2.6.6")
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    assert "shared through an anchor or merge key" in result.output
    assert config.read_bytes() == before


def test_yaml_list_valued_fused_is_a_review_finding(project: Path) -> None:
    (project / "config.yaml").write_text(
        TRAINER.format(precision="16-mixed") + "optimizer:\n  fused: [true, false]\n"
    )
    result = invoke("check", "--lightning-version", "2.6.6")
    assert result.exit_code == 1, result.output
    assert "ACF002" in result.output and "fused: (a list)" in result.output
    assert "review: whether the optimizer is fused is decided at run time" in result.output


def test_yaml_alias_bomb_does_not_hang(project: Path) -> None:
    """A 600-byte billion laughs: every node is entered once, so this is instant (before: still
    walking after minutes). The timeout only stops a hang; it is not a speed check."""
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for previous, name in zip("abcdefghijklmnop", "bcdefghijklmnopq"):
        lines.append(f"{name}: &{name} [{', '.join(['*' + previous] * 9)}]")
    bomb = (
        "\n".join(lines)
        + "\noptimizer:\n  fused: true\n  x: *q\n"
        + TRAINER.format(precision="16-mixed")
    )
    (project / "bomb.yaml").write_text(bomb)
    result = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", "--lightning-version", "2.6.6", "."],
        capture_output=True,
        cwd=project,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert b"bomb.yaml:" in result.stdout


def test_yaml_comment_is_not_an_encoding_declaration(project: Path) -> None:
    config = project / "config.yaml"
    text = "# video coding: h264\n# caf\u00e9\n" + TRAINER.format(precision="16-mixed")
    config.write_text(text + OPTIMIZER.format(fused="true"), encoding="utf-8")
    result = invoke("apply", "--yes", "--lightning-version", "2.6.6")
    assert result.exit_code == 0, result.output
    assert config.read_text(encoding="utf-8").startswith("# video coding: h264\n# caf\u00e9\n")


# --- Notebooks: rebuilt from the cell boundaries the tool keeps, original escaping kept -------


def notebook(*sources: object, ensure_ascii: bool = False) -> str:
    cells = [
        {
            "cell_type": "code",
            "execution_count": None,
            "id": f"c{number}",
            "metadata": {},
            "outputs": [],
            "source": source,
        }
        for number, source in enumerate(sources)
    ]
    document = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1, ensure_ascii=ensure_ascii)


IMPORTS = ["import torch\n", "import lightning as L\n", "# amp-clipfix: cell 2\n", "x = 1"]
TRAIN = [
    'fabric = L.Fabric(precision="16-mixed")\n',
    "# amp-clipfix: cell 1\n",
    "opt = torch.optim.AdamW([], fused=True)\n",
    "fabric.clip_gradients(m, opt, max_norm=1.0)\n",
    "z = 2",
]


@pytest.mark.parametrize("strategy", ["unfuse", "guard"])
def test_notebook_marker_text_in_a_cell_moves_nothing(project: Path, strategy: str) -> None:
    path = project / "train.ipynb"
    path.write_text(notebook(IMPORTS, TRAIN))
    result = invoke("apply", "--yes", "--strategy", strategy, "--lightning-version", "2.6.6")
    assert result.exit_code == 0, result.output
    first, second = (cell["source"] for cell in json.loads(path.read_text())["cells"])
    assert first[:2] == IMPORTS[:2] and first[-2:] == IMPORTS[-2:]
    assert second[:2] == TRAIN[:2] and second[-1] == "z = 2"
    assert any("fused=False" in line or "can_clip_gradients" in line for line in second)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (notebook(["import torch\n", None, "fused=True"]), "cell 1 has no text source"),
        ('{"nbformat": 4, "cells": [], "x": ' + "[" * 5000 + "]" * 5000 + "}", "too deeply"),
    ],
    ids=["null-in-source", "nested-5000"],
)
def test_notebook_bad_structure_is_one_line(project: Path, content: str, message: str) -> None:
    (project / "good.py").write_bytes(GOOD)
    (project / "bad.ipynb").write_text(content)
    result = invoke("apply", "--yes", "--strategy", "unfuse")
    assert result.exit_code == 2, result.output
    (line,) = error_lines(result)
    assert line.startswith("bad.ipynb: error: ") and message in line
    assert (project / "good.py").read_bytes() == GOOD_FIXED


@pytest.mark.parametrize("ensure_ascii", [False, True], ids=["raw", "escaped"])
def test_notebook_untouched_lines_keep_their_escaping(project: Path, ensure_ascii: bool) -> None:
    path = project / "train.ipynb"
    cell = ["import torch\n", "name = 'caf\u00fc'\n", *TRAIN]
    path.write_text(notebook(["import lightning as L"], cell, ensure_ascii=ensure_ascii))
    before = path.read_text()
    result = invoke("apply", "--yes", "--strategy", "unfuse", "--lightning-version", "2.6.6")
    assert result.exit_code == 0, result.output
    # unfuse keeps Fabric's own clip; ACF007 passes error_if_nonfinite=False to it
    expected = before.replace("fused=True", "fused=False").replace(
        "max_norm=1.0)", "max_norm=1.0, error_if_nonfinite=False)"
    )
    assert path.read_text() == expected


def test_notebook_cr_only_cell_lines(project: Path) -> None:
    """CR alone ends a line for Python: a CR-only cell before others must not shift them."""
    path = project / "train.ipynb"
    cr_cell = "import torch\rimport lightning as L\r\rx = 1\r"
    path.write_text(notebook(cr_cell, TRAIN, "\r".join(line.rstrip("\n") for line in TRAIN)))
    checked = invoke("check", "--lightning-version", "2.6.6", "--strategy", "unfuse")
    assert "fused optimizer: train.ipynb:cell 2:3 " in checked.output, checked.output
    assert "fused optimizer: train.ipynb:cell 3:3 " in checked.output, checked.output
    result = invoke("apply", "--yes", "--strategy", "unfuse", "--lightning-version", "2.6.6")
    assert result.exit_code == 0, result.output
    cells = [cell["source"] for cell in json.loads(path.read_text())["cells"]]
    assert cells[0] == cr_cell
    assert cells[2] == "\r".join(line.rstrip("\n") for line in TRAIN).replace(
        "fused=True", "fused=False"
    ).replace("max_norm=1.0)", "max_norm=1.0, error_if_nonfinite=False)")


# --- Parser crashes: one file costs one line, every other finding stands ---------------------


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_long_boolean_chain_is_one_line(project: Path, jobs: str) -> None:
    """Python's tree for `a and a and ...` is flat, libcst's is 10,000 deep (it crashed). Sites
    are read with `ast`, so the file is checked like any other; only fixing it needs libcst,
    and that costs one line."""
    (project / "good.py").write_bytes(GOOD)
    chain = " and ".join(["a"] * 10_000)
    deep = GOOD + f"\nx = {chain}\n".encode()
    (project / "deep.py").write_bytes(deep)
    for index in range(6):  # > 512 KiB of candidates, so -j 2 uses the process pool
        (project / f"filler{index}.py").write_bytes(FILLER)

    def run(*args: str) -> subprocess.CompletedProcess[bytes]:
        command = [sys.executable, "-m", "amp_clipfix", *args, "-j", jobs, "--strategy", "unfuse"]
        return subprocess.run(command, capture_output=True, cwd=project, timeout=300, check=False)

    checked = run("check")
    assert b"error:" not in checked.stderr + checked.stdout, checked.stderr
    assert b"deep.py:11:" in checked.stdout, checked.stdout  # its fused optimizer is found
    result = run("apply", "--yes")
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if is_error_line(line.decode())]
    assert errors == [b"deep.py: error: not fixed: cannot parse: the code is nested too deeply"]
    assert (project / "good.py").read_bytes() == GOOD_FIXED
    assert (project / "deep.py").read_bytes() == deep


def killing_parse(path: Path, data: bytes):  # noqa: ANN201 - stands in for parse_and_collect
    if path.name == "killer.py":
        assert os.getpid() != TEST_PROCESS, "parsed in the test process, not in a worker"
        os._exit(139)  # what a native stack overflow does to a worker
    return ORIGINAL_PARSE(path, data)


ORIGINAL_PARSE = parse_pool.parse_and_collect
TEST_PROCESS = os.getpid()
# A candidate that is cheap to parse; six of them make the > 512 KiB that starts a process pool.
FILLER = b"import torch\nopt = torch.optim.AdamW(p, fused=True)\n# " + b"x" * 100_000 + b"\n"


def test_dead_worker_costs_only_its_file(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parse_pool, "parse_and_collect", killing_parse)
    (project / "good.py").write_bytes(GOOD)
    (project / "killer.py").write_bytes(b"import torch\nopt = torch.optim.AdamW(p, fused=True)\n")
    for index in range(6):
        (project / f"filler{index}.py").write_bytes(FILLER)
    result = invoke("apply", "--yes", "-j", "2", "--strategy", "unfuse")
    assert result.exit_code == 2, result.output
    assert error_lines(result) == [
        "killer.py: error: cannot parse: the parsing process died on this file"
    ]
    assert (project / "good.py").read_bytes() == GOOD_FIXED


# --- The terminal never receives control characters from files or names ---------------------


def test_escape_sequences_in_names_and_code_are_shown_escaped(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    hostile = GOOD.replace(b'precision="16-mixed"', b'precision="16-mixed\x1b]0;owned\x07"')
    (project / "a\x1b[2Jb.py").write_bytes(GOOD)
    (project / "code.py").write_bytes(b"import os\n" + hostile)
    checked = invoke("check", "--lightning-version", "2.6.6")
    assert "\x1b" not in checked.output and "\x07" not in checked.output
    assert "a\\x1b[2Jb.py:" in checked.output
    monkeypatch.setattr("amp_clipfix.cli.plain_output", lambda: False)
    shown = invoke("apply", "--dry-run", "--strategy", "unfuse", "--lightning-version", "2.6.6")
    assert "\x1b[2J" not in shown.output and "a\\x1b[2Jb.py" in shown.output


def test_sarif_with_a_file_name_that_is_not_utf8(project: Path) -> None:
    (project / os.fsdecode(b"caf\xe9.py")).write_bytes(GOOD)
    result = invoke("check", "--format", "sarif", "--lightning-version", "2.6.6")
    assert result.exit_code == 1, result.output
    results = json.loads(result.stdout)["runs"][0]["results"]
    assert sorted(r["ruleId"] for r in results) == ["ACF001", "ACF007"]  # one fp16 clip call
    for location in [r["locations"][0] for r in results]:
        assert location["physicalLocation"]["artifactLocation"]["uri"] == "caf%E9.py"


# --- Nothing is written outside the project; the patch names the file that is written -------


def test_linked_folder_leading_outside_is_refused(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "out.py").write_bytes(GOOD)
    (project / "dirlink").symlink_to(outside, target_is_directory=True)
    for given in ("dirlink/out.py", "dirlink"):
        result = invoke("apply", "--yes", "--strategy", "unfuse", given)
        assert result.exit_code == 2, result.output
        assert error_lines(result) == [
            f"{given}: error: a link leads outside the project; not processed"
        ]
        assert (outside / "out.py").read_bytes() == GOOD


def test_patch_of_a_linked_file_names_the_file_written(project: Path) -> None:
    (project / "real.py").write_bytes(GOOD)
    (project / "link.py").symlink_to(project / "real.py")
    result = invoke("apply", "--dry-run", "--strategy", "unfuse", "link.py")
    assert "--- a/real.py\n+++ b/real.py\n" in result.stdout
    assert invoke("apply", "--yes", "--strategy", "unfuse", "link.py").exit_code == 0
    assert (project / "real.py").read_bytes() == GOOD_FIXED and (project / "link.py").is_symlink()


def test_gitignore_is_honoured_when_git_cannot_be_asked(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / ".git").mkdir()  # a checkout git refuses to read
    (project / ".gitignore").write_text("generated/\n*.gen.py\n!keep.gen.py\n")
    for name in ("good.py", "generated/a.py", "x.gen.py", "keep.gen.py"):
        (project / name).parent.mkdir(exist_ok=True)
        (project / name).write_bytes(GOOD)
    monkeypatch.setenv("PATH", str(project / "no-git-here"))
    result = invoke("apply", "--yes", "--strategy", "unfuse", ".")
    assert result.exit_code == 0, result.output
    assert (project / "good.py").read_bytes() == GOOD_FIXED
    assert (project / "keep.gen.py").read_bytes() == GOOD_FIXED
    assert (project / "generated" / "a.py").read_bytes() == GOOD
    assert (project / "x.gen.py").read_bytes() == GOOD


# --- Writing: atomic whatever happens, owner's intent and metadata kept ---------------------


def test_sigterm_during_a_write_leaves_no_temp_file(project: Path) -> None:
    (project / "train.py").write_bytes(GOOD)
    script = textwrap.dedent(
        """
        import os, signal, sys
        import amp_clipfix.output.write as write
        from amp_clipfix.sources.text import read_source
        def fsync(fd):
            os.kill(os.getpid(), signal.SIGTERM)
        write.os.fsync = fsync
        write.write_atomic(read_source("train.py"), b"new")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=project, capture_output=True, timeout=60, check=False
    )
    assert result.returncode == 128 + 15, result.stderr
    assert sorted(path.name for path in project.iterdir()) == ["pyproject.toml", "train.py"]
    assert (project / "train.py").read_bytes() == GOOD


def test_read_only_file_is_refused(project: Path) -> None:
    path = project / "train.py"
    path.write_bytes(GOOD)
    path.chmod(0o444)
    result = invoke("apply", "--yes", "--strategy", "unfuse", "-v")
    assert result.exit_code == 2, result.output
    assert "train.py: error: read-only file (mode 0444); not written" in result.output
    assert path.read_bytes() == GOOD


def test_extended_attributes_are_kept(project: Path) -> None:
    path = project / "train.py"
    path.write_bytes(GOOD)
    try:
        os.setxattr(path, "user.origin", b"kept")
    except (AttributeError, OSError) as error:  # fail, never skip: the test says what it needs
        pytest.fail(f"the temporary folder takes no user extended attributes: {error}")
    assert invoke("apply", "--yes", "--strategy", "unfuse").exit_code == 0
    assert path.read_bytes() == GOOD_FIXED
    assert os.getxattr(path, "user.origin") == b"kept"


def test_name_near_the_length_limit_can_be_fixed(project: Path) -> None:
    path = project / ("n" * 240 + ".py")
    path.write_bytes(GOOD)
    result = invoke("apply", "--yes", "--strategy", "unfuse")
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == GOOD_FIXED


def test_form_feeds_are_kept(project: Path) -> None:
    path = project / "train.py"
    source = GOOD.replace(b"\ndef main", b"\n\x0cdef main").replace(
        b"\n    model", b"\n\x0c    model", 1
    )
    assert source.count(b"\x0c") == 2
    path.write_bytes(source)
    result = invoke("apply", "--yes", "--strategy", "unfuse")
    assert result.exit_code == 0, result.output
    assert path.read_bytes() == source.replace(b"fused=True", b"fused=False").replace(
        b"max_norm=1.0)", b"max_norm=1.0, error_if_nonfinite=False)"
    )


def test_changed_on_disk_counts_as_an_error_in_the_summary(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = project / "train.py"
    path.write_bytes(GOOD)
    real_run = pipeline_module.run

    def run_then_edit(*args: object, **kwargs: object):  # noqa: ANN202
        result = real_run(*args, **kwargs)
        path.write_bytes(GOOD + b"# edited meanwhile\n")
        return result

    monkeypatch.setattr("amp_clipfix.cli.run", run_then_edit)
    result = invoke("apply", "--yes", "--strategy", "unfuse", "-v")
    assert result.exit_code == 2
    assert "changed on disk since it was read" in result.output
    errors_row = next(line for line in result.output.splitlines() if "errors" in line)
    assert errors_row.split()[-2:] == ["1", "│"] or errors_row.rstrip().endswith("1")


# --- Configuration and the current folder ----------------------------------------------------


def test_pyproject_that_is_not_utf8_is_one_line(project: Path) -> None:
    (project / "pyproject.toml").write_bytes(b'[tool.amp-clipfix]\nstrategy = "unfuse" # caf\xe9\n')
    (project / "train.py").write_bytes(GOOD)
    result = invoke("check")
    assert result.exit_code == 2
    assert "pyproject.toml: error: invalid TOML: not UTF-8" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("cache", [False, True], ids=["no-cache", "cache"])
def test_current_folder_deleted_after_cd(project: Path, tmp_path: Path, cache: bool) -> None:
    """With the cache on, the replay (replay.py) looks at the current folder first."""
    (project / "train.py").write_bytes(GOOD)
    gone = tmp_path / "gone"
    gone.mkdir()
    command = f'cd "{gone}" && rmdir "{gone}" && exec "{sys.executable}" -m amp_clipfix check '
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    if cache:
        env.pop("AMP_CLIPFIX_NO_CACHE", None)
    result = subprocess.run(
        ["sh", "-c", command + f'"{project / "train.py"}"'],
        capture_output=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert result.returncode == 2, result.stderr
    assert b"Traceback" not in result.stderr
    assert b"the current folder no longer exists" in result.stderr


# --- Round two (issue 28): nothing is read or written through a link out of the project -----


def test_patch_dir_link_is_never_written_through(project: Path, tmp_path: Path) -> None:
    (project / "train.py").write_bytes(GOOD)
    outside = tmp_path / "outside.txt"
    outside.write_bytes(b"keep me\n")
    (project / "patches").mkdir()
    (project / "patches" / "project.patch").symlink_to(outside)
    result = invoke("apply", "--dry-run", "--patch-dir", "patches", "--strategy", "unfuse", ".")
    assert result.exit_code == 2, result.output
    assert error_lines(result) == [
        "patches/project.patch: error: is a symbolic link; not written through "
        "(it may lead anywhere)"
    ]
    assert outside.read_bytes() == b"keep me\n"
    assert (project / "patches" / "project.patch").is_symlink()


def test_patch_dir_replaces_its_own_patch_atomically(project: Path) -> None:
    (project / "train.py").write_bytes(GOOD)
    (project / "patches").mkdir()
    (project / "patches" / "project.patch").write_bytes(b"old\n")
    result = invoke("apply", "--dry-run", "--patch-dir", "patches", "--strategy", "unfuse", ".")
    assert result.exit_code == 1, result.output
    patch = (project / "patches" / "project.patch").read_bytes()
    assert b"+++ b/train.py" in patch and b"old" not in patch
    assert list((project / "patches").iterdir()) == [project / "patches" / "project.patch"]


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs /proc")
def test_a_pin_file_linked_to_the_environment_is_never_read(project: Path) -> None:
    """The CI job's environment (tokens, keys) must never reach the output."""
    (project / "train.py").write_bytes(GOOD)
    (project / "requirements.txt").symlink_to("/proc/self/environ")
    environment = {**os.environ, "lightning": "2.0 TOKEN=s3cr3t-t0ken"}
    environment["PYTHONPATH"] = os.pathsep.join(sys.path)
    done = subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", "--no-cache", "."],
        cwd=project,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "s3cr3t" not in done.stdout + done.stderr
    assert (
        "warning: requirements.txt: a link leads outside the project; not read; "
        "not used for the Lightning version"
    ) in done.stderr.splitlines()
    assert done.returncode == 1, done.stderr  # the finding, under the default release


def test_a_pyproject_linked_out_of_the_project_is_not_read(project: Path, tmp_path: Path) -> None:
    (project / "train.py").write_bytes(GOOD)
    outside = tmp_path / "elsewhere.toml"
    outside.write_text('[tool.amp-clipfix]\nstrategy = "TOKEN=s3cr3t"\n')
    (project / "pyproject.toml").unlink()
    (project / "pyproject.toml").symlink_to(outside)
    result = invoke("check", ".")
    assert result.exit_code == 2, result.output
    assert "s3cr3t" not in result.output
    assert result.output.splitlines()[-1] == (
        "pyproject.toml: error: a link leads outside the project; not read"
    )


# --- Round two: text from files never reaches the terminal raw -----------------------------

HOSTILE = "\x1b]0;owned\x07\u202e" + "TOKEN=s3cr3t " * 400
TOML_HOSTILE = "\\u001b]0;owned\\u0007\\u202e" + "TOKEN=s3cr3t " * 400  # escaped in TOML


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("requirements.txt", f"lightning=2.0{HOSTILE}\n"),
        ("pyproject.toml", f'[project]\ndependencies = ["lightning=2.0{TOML_HOSTILE}"]\n'),
        ("setup.cfg", f"[options\n{HOSTILE}\n"),
        ("environment.yml", f"dependencies: [\n{HOSTILE}\n"),
        ("environment.yml", f"dependencies:\n  - lightning={HOSTILE.strip()}\n"),
        ("pyproject.toml", f'[tool.poetry.dependencies]\nlightning = "^{TOML_HOSTILE}"\n'),
    ],
)
def test_pin_file_text_in_a_warning_is_escaped_and_short(
    project: Path, name: str, content: str
) -> None:
    (project / "train.py").write_bytes(GOOD)
    (project / name).write_text(content, encoding="utf-8")
    result = invoke("check", ".")
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, result.output
    assert f"warning: {name}:" in warnings[0]
    assert len(warnings[0]) < 300, warnings[0]
    assert "\x1b" not in result.output and "\u202e" not in result.output
    assert result.output.count("s3cr3t") <= 3


def test_a_config_value_in_an_error_is_escaped_and_short(project: Path) -> None:
    (project / "train.py").write_bytes(GOOD)
    (project / "pyproject.toml").write_text(
        f'[tool.amp-clipfix]\nstrategy = "{TOML_HOSTILE}"\n', encoding="utf-8"
    )
    result = invoke("check", ".")
    assert result.exit_code == 2
    line = result.output.splitlines()[-1]
    assert "'strategy' must be one of" in line and len(line) < 300, line
    assert "\x1b" not in result.output and "\u202e" not in result.output


# --- Round two: all or nothing across files (the helper module) -----------------------------

HELPER_CASE = REPO / "fixtures" / "trainer_unscale_helper_module_created" / "input"


@pytest.fixture
def helper_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "helpers"
    shutil.copytree(HELPER_CASE, root)
    monkeypatch.chdir(root)
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".amp_clipfix_cache" not in p.parts
    }


def test_a_read_only_helper_module_writes_none_of_its_importers(helper_project: Path) -> None:
    helpers = helper_project / "mypkg" / "amp_helpers.py"
    helpers.write_text('"""Shared helpers."""\n')
    helpers.chmod(0o444)
    before = snapshot(helper_project)
    result = invoke("apply", "--yes", "--strategy", "unscale", "--lightning-version", "2.6.6", ".")
    assert result.exit_code == 2, result.output
    assert error_lines(result) == [
        "mypkg/amp_helpers.py: error: read-only file (mode 0444); not written",
        "mypkg/model.py: error: not written: it needs mypkg/amp_helpers.py, which was not written",
    ]
    assert snapshot(helper_project) == before, "no file may import what was not written"


def test_a_helper_module_that_appears_meanwhile_writes_none_of_its_importers(
    helper_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import amp_clipfix.cli as cli_module

    original = cli_module.write_changes
    helpers = helper_project / "mypkg" / "amp_helpers.py"

    def someone_else_writes_first(*args: object, **kwargs: object):  # noqa: ANN202
        helpers.write_text("# an editor's new file\n")
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cli_module, "write_changes", someone_else_writes_first)
    model = (helper_project / "mypkg" / "model.py").read_bytes()
    result = invoke("apply", "--yes", "--strategy", "unscale", "--lightning-version", "2.6.6", ".")
    assert result.exit_code == 2, result.output
    assert error_lines(result) == [
        "mypkg/amp_helpers.py: error: cannot create: the file appeared meanwhile; not written",
        "mypkg/model.py: error: not written: it needs mypkg/amp_helpers.py, which was not written",
    ]
    assert (helper_project / "mypkg" / "model.py").read_bytes() == model
    assert helpers.read_text() == "# an editor's new file\n"


def test_a_helper_module_that_cannot_be_read_gives_each_importer_its_error(
    helper_project: Path,
) -> None:
    helpers = helper_project / "mypkg" / "amp_helpers.py"
    helpers.write_bytes(b"x = '\xff'\n")
    before = snapshot(helper_project)
    result = invoke("apply", "--yes", "--strategy", "unscale", "--lightning-version", "2.6.6", ".")
    assert result.exit_code == 2, result.output
    assert error_lines(result) == [
        "mypkg/amp_helpers.py: error: helper-module mypkg.amp_helpers: cannot be created or "
        "updated: cannot decode as utf-8 at byte 5",
        "mypkg/model.py: error: not fixed: it would import from helper-module mypkg.amp_helpers",
    ]
    assert snapshot(helper_project) == before


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_what_python_says_compiling_the_users_code_is_not_printed(project: Path, jobs: str) -> None:
    """An invalid escape in the user's code makes Python's compiler warn (a SyntaxWarning from
    3.12, a DeprecationWarning before, which `-W default` shows): as `<unknown>:3: ...`, with
    no file, amid the report. The tool parses that code, it does not run it: nothing of it."""
    source = 'import re\nimport torch\nPATTERN = re.compile("\\d+")\n'
    for index in range(3):  # more than one file: -j 2 parses in a pool
        source += f"opt{index} = torch.optim.AdamW([], fused=True)\n"
        (project / f"train{index}.py").write_text(source)
    result = subprocess.run(
        [sys.executable, "-W", "default", "-m", "amp_clipfix", "check", "--no-cache", "-j", jobs],
        capture_output=True,
        cwd=project,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert b"escape" not in result.stderr + result.stdout
    assert result.stdout.startswith(b"0 findings"), result.stdout
