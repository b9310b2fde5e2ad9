"""The quick reader of common command lines (quick.py) against the click command line (cli.py):
the same command line through each, in a new interpreter, gives the same stdout, stderr and
exit code byte for byte, and the quick one imports click only where it leaves the line to it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

MODEL = b"""\
import lightning as L
import torch


class Model(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)
"""
TRAIN = b"""\
import lightning as L

from model import Model

trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
trainer.fit(Model())
"""
CLEAN = b"def helper(x):\n    return x + 1\n"

# Run one command line the way the console script does, through quick.py or straight to click;
# the last line of stderr says whether click was imported.
RUNNER = """\
import sys
which = sys.argv.pop(1)
sys.argv[0] = "amp-clipfix"
if which == "quick":
    from amp_clipfix.quick import main
else:
    from amp_clipfix.cli import main
try:
    main()
finally:
    sys.stdout.flush()
    sys.stderr.write("\\nCLICK IMPORTED: %s\\n" % ("click" in sys.modules))
    sys.stderr.flush()
"""


def project(root: Path) -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_bytes(b'[project]\nname = "demo"\n')
    (root / "model.py").write_bytes(MODEL)
    (root / "train.py").write_bytes(TRAIN)
    (root / "clean.py").write_bytes(CLEAN)
    return root


def run(
    which: str, root: Path, arguments: list[str], stdin: bytes = b"", env: dict | None = None
) -> tuple[bytes, bytes, int, bool]:
    environment = {**os.environ, "PYTHONPATH": str(SRC)}
    environment.pop("AMP_CLIPFIX_NO_CACHE", None)
    environment.update(env or {})
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, which, *arguments],
        cwd=root,
        input=stdin,
        capture_output=True,
        env=environment,
        check=False,
    )
    stderr, _, marker = done.stderr.rpartition(b"\nCLICK IMPORTED: ")
    return done.stdout, stderr, done.returncode, marker.strip() == b"True"


def timeless(stderr: bytes) -> bytes:
    """The summary table (-v) says how long the run took: the one figure two runs differ in."""
    return re.sub(rb"\d+\.\d+ s\b", b"N s", stderr)


# (arguments, the quick path reads it itself)
CASES = [
    (["check", "--no-cache", "."], True),
    (["check", "--no-cache"], True),
    (["check", "--no-cache", "clean.py"], True),
    (["check", "--no-cache", "--format", "json", "."], True),
    (["check", "--no-cache", "--format=github", "."], True),
    (["check", "--no-cache", "--format", "sarif", "model.py"], True),
    (["check", "--no-cache", "--format", "rdjson", "."], True),
    (["check", "--no-cache", "--select", "ACF002", "."], True),
    (["check", "--no-cache", "--select=ACF001,ACF002", "--ignore", "ACF002", "."], True),
    (["check", "--no-cache", "--exclude", "model.py", "."], True),
    (["check", ".", "--no-cache", "--strategy", "unfuse", "-q"], True),
    (["check", "--no-cache", "--exit-zero", "-v", "-j", "1", "."], True),
    (["check", "--no-cache", "--lightning-version", "2.1.0", "--torch-version", "2.1", "."], True),
    (["check", "--no-cache", "missing.py"], True),
    (["check", "--no-cache", "--", "-odd.py", "."], True),
    (["check", "--no-cache", "--force-exclude", "--tracked-only", "."], True),
    (["apply", "--no-cache", "--dry-run", "."], True),
    (["apply", "--no-cache", "--dry-run", "--format", "json", "."], True),
    (["apply", "--no-cache", "--dry-run", "-y", "--format", "github", "model.py"], True),
    # left to click
    (["check", "--no-cache", "--select", "ACF999", "."], False),
    (["check", "--no-cache", "--output-format", "json", "."], True),
    (["check", "--no-cache", "--extend-select", "ACF002", "--select", "ACF001", "."], True),
    (["check", "--no-cache", "--per-file-ignores", "train.py:ACF002", "."], True),
    (["check", "--no-cache", "--config", 'select = ["ACF002"]', "."], True),
    (["check", "--no-cache", "--config", "nowhere.toml", "."], False),
    (["check", "--no-cache", "--statistics", "."], False),
    (["check", "--no-cache", "--bogus", "."], False),
    (["check", "--no-cache", "--format", "xml", "."], False),
    (["check", "--no-cache", "-j", "0", "."], False),
    (["check", "--no-cache", "-j2", "."], False),
    (["check", "--no-cache", "-qv", "."], False),
    (["check", "--no-cache", "--quiet=yes", "."], False),
    (["check", "--no-cache", "--select"], False),
    (["check", "--no-cache", "--lightning-version", "banana", "."], False),
    (["check", "--no-cache", "-", "."], False),
    (["check", "--no-cache", "-o", "."], False),
    (["check", "-h"], False),
    (["check", "--help"], False),
    (["--version"], True),
    (["--version", "check"], False),
    ([], False),
    (["explain", "ACF001"], False),
    (["apply", "--no-cache", "."], False),
    (["apply", "--no-cache", "--dry-run", "--patch-dir", "patches", "."], False),
]


@pytest.mark.parametrize(("arguments", "quick"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_the_same_bytes_through_both(tmp_path: Path, arguments: list[str], quick: bool) -> None:
    root = project(tmp_path / "p")
    out, err, code, clicked = run("quick", root, arguments)
    expected = run("click", root, arguments)
    assert (out, timeless(err), code) == (expected[0], timeless(expected[1]), expected[2])
    assert clicked is not quick, err.decode()
    assert b"Traceback" not in err


def test_stdin_with_a_name(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    arguments = ["check", "--no-cache", "-", "--stdin-filename", "both.py"]
    both = MODEL + b'\ntrainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)\n'
    both += b"trainer.fit(Model())\n"
    quick = run("quick", root, arguments, stdin=both)
    assert quick == (*run("click", root, arguments, stdin=both)[:3], False)
    assert quick[2] == 1 and b"ACF002" in quick[0]


def test_a_report_file_and_one_that_cannot_be_opened(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    for which in ("quick", "click"):
        done = run(which, root, ["check", "--no-cache", "-o", f"{which}.txt", "."])
        assert done[:3] == (b"", b"", 1)
    assert (root / "quick.txt").read_bytes() == (root / "click.txt").read_bytes()
    assert b"ACF002" in (root / "quick.txt").read_bytes()
    arguments = ["check", "--no-cache", "-o", "no/such/folder/report.txt", "."]
    quick = run("quick", root, arguments)
    assert quick[:3] == run("click", root, arguments)[:3]
    assert quick[2] == 2 and b"no/such/folder/report.txt: error: cannot write" in quick[1]


@pytest.mark.parametrize(
    ("configuration", "quick"),
    [
        (b'[tool.amp-clipfix]\nselect = ["ACF001"]\n', True),
        (b'[tool.amp-clipfix]\nstrategy = "unfuse"\nexclude = ["clean.py"]\n', True),
        (b'[tool.amp-clipfix]\nstrategy = "bogus"\n', False),
        (b'[tool.amp-clipfix]\nselect = ["ACF999"]\n', False),
        (b"[tool.amp-clipfix\n", False),
    ],
)
def test_configuration_files(tmp_path: Path, configuration: bytes, quick: bool) -> None:
    root = project(tmp_path / "p")
    (root / "pyproject.toml").write_bytes(b'[project]\nname = "demo"\n' + configuration)
    for arguments in (["check", "--no-cache", "."], ["apply", "--dry-run", "--no-cache"]):
        out, err, code, clicked = run("quick", root, arguments)
        assert (out, err, code) == run("click", root, arguments)[:3]
        assert clicked is not quick


@pytest.mark.parametrize(
    ("value", "quick"), [("1", True), ("", False), ("0", False), ("yes", False)]
)
def test_the_no_cache_variable(tmp_path: Path, value: str, quick: bool) -> None:
    root = project(tmp_path / "p")
    env = {"AMP_CLIPFIX_NO_CACHE": value}
    out, err, code, clicked = run("quick", root, ["check", "."], env=env)
    assert (out, err, code) == run("click", root, ["check", "."], env=env)[:3]
    assert clicked is not quick


def test_an_ascii_stream_is_left_to_click(tmp_path: Path) -> None:
    root = project(tmp_path / "p")
    (root / "naïve.py").write_bytes(MODEL)
    env = {"PYTHONIOENCODING": "ascii"}
    out, err, code, clicked = run("quick", root, ["check", "--no-cache", "."], env=env)
    assert (out, err, code) == run("click", root, ["check", "--no-cache", "."], env=env)[:3]
    assert clicked


def test_the_quick_table_is_a_subset_of_clicks() -> None:
    """quick.py reads a subset of the options by name (measured: it saves the ~30 ms of CPU
    that importing click costs an uncached check, bench/README.md); every name it reads is
    the same option, of the same kind, in cli.py, which stays the one definition."""
    from amp_clipfix import quick
    from amp_clipfix.cli import apply, check

    for command, flags in ((check, quick.FLAGS), (apply, {**quick.FLAGS, **quick.APPLY_FLAGS})):
        options = {
            name: parameter
            for parameter in command.params
            for name in getattr(parameter, "opts", []) + getattr(parameter, "secondary_opts", [])
        }
        for name, dest in flags.items():
            assert options[name].is_flag and options[name].name == dest, name
        for name, dest in {**quick.VALUES, **quick.REPEATED}.items():
            option = options[name]
            assert not option.is_flag and option.name == dest, name
            assert option.multiple == (name in quick.REPEATED), name
