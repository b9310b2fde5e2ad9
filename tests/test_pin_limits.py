"""A number past Python's int-to-text limit in a pin file (issue 39): one error line naming the
file and exit 2, like any other bad input; the pin is not used and the run goes on. The error
comes from the torch release's read too, so `--lightning-version` does not hide it, and a file
read for both Lightning and torch is named once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from amp_clipfix.output.report import is_error_line

REPO = Path(__file__).resolve().parent.parent
GOOD = (REPO / "fixtures" / "fabric_precision_kwarg_16_mixed" / "input" / "train.py").read_bytes()
HUGE = "7" * 5_000
LOCK = 'version = 1\n\n[[package]]\nname = "torch"\nversion = "2.13.0"\nsize = {}\n'


def check(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "amp_clipfix", "check", "--no-cache", *args, "."]
    return subprocess.run(command, cwd=project, capture_output=True, text=True, timeout=120)


def test_a_lock_file_past_the_limit_is_one_error_line_with_the_lightning_version_given(
    tmp_path: Path,
) -> None:
    (tmp_path / "uv.lock").write_text(LOCK.format(HUGE))
    (tmp_path / "train.py").write_bytes(GOOD)
    result = check(tmp_path, "--lightning-version", "2.6.6")
    assert result.returncode == 2, result.stderr
    assert [line for line in result.stderr.splitlines() if is_error_line(line)] == [
        "uv.lock: error: invalid TOML: a number of more than 4,300 digits; "
        "not used for the torch version"
    ]
    assert "train.py:19:9: ACF001" in result.stdout  # the run went on


def test_a_lock_file_read_for_lightning_and_torch_is_named_once(tmp_path: Path) -> None:
    (tmp_path / "uv.lock").write_text(LOCK.format(HUGE))
    (tmp_path / "train.py").write_bytes(GOOD)
    result = check(tmp_path)
    assert result.returncode == 2, result.stderr
    assert [line for line in result.stderr.splitlines() if is_error_line(line)] == [
        "uv.lock: error: invalid TOML: a number of more than 4,300 digits; "
        "not used for the Lightning version"
    ]
    assert "warning: uv.lock" not in result.stderr


def test_a_pin_file_broken_another_way_keeps_its_warning(tmp_path: Path) -> None:
    (tmp_path / "uv.lock").write_text("version = 1\n[[package]\n")
    (tmp_path / "train.py").write_bytes(GOOD)
    result = check(tmp_path)
    assert result.returncode == 1, result.stderr
    assert "warning: uv.lock: invalid TOML:" in result.stderr
    assert not [line for line in result.stderr.splitlines() if is_error_line(line)]
