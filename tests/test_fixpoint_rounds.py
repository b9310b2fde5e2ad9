"""The rounds of apply's fixpoint (issue 36) read and parse only what a fix changed: the other
files' bytes, parses and summaries are the first round's, and the project's style is read once.
The bytes written are those of the fixture that needs two rounds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

import amp_clipfix.analysis.parse_pool
import amp_clipfix.fixes.changes
import amp_clipfix.observed
import amp_clipfix.project.style
from amp_clipfix.cli import main

TWO_ROUNDS = (
    Path(__file__).resolve().parent.parent
    / "fixtures"
    / ("trainer_amp_backend_and_manual_clip_val_two_rounds")
)
# Parsed (it may build a fused optimizer), never changed.
OTHER = b"import torch\n\n\ndef make(params):\n    return torch.optim.AdamW(params, fused=True)\n"


def counting(counts: Counter[str], name: str, function: Callable, by_file: bool = True) -> Callable:
    """`function`, counting its calls by `name` and the name of the file it is given."""

    def counted(*args: object, **kwargs: object) -> object:
        first = args[0] if args else None
        counts[f"{name} {first.name}" if by_file and isinstance(first, Path) else name] += 1
        return function(*args, **kwargs)

    return counted


def test_the_rounds_read_and_parse_only_the_fixed_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "train.py").write_bytes((TWO_ROUNDS / "input" / "train.py").read_bytes())
    (tmp_path / "other.py").write_bytes(OTHER)
    monkeypatch.chdir(tmp_path)
    counts: Counter[str] = Counter()
    parse_pool, observed = amp_clipfix.analysis.parse_pool, amp_clipfix.observed
    monkeypatch.setattr(
        parse_pool, "parse_and_collect", counting(counts, "parse", parse_pool.parse_and_collect)
    )
    monkeypatch.setattr(observed, "read_bytes", counting(counts, "read", observed.read_bytes))
    # the pipeline imports project_style when apply fixes (a check never reads the style)
    for module in (amp_clipfix.project.style, amp_clipfix.fixes.changes):
        counted = counting(counts, "style", module.project_style, by_file=False)
        monkeypatch.setattr(module, "project_style", counted)

    result = CliRunner().invoke(
        main, ["apply", "--yes", "--lightning-version", "2.6.6", "--no-cache", "."]
    )

    assert result.exit_code == 0, result.output
    assert (tmp_path / "train.py").read_bytes() == (
        TWO_ROUNDS / "expected" / "train.py"
    ).read_bytes()
    assert (tmp_path / "other.py").read_bytes() == OTHER
    assert counts["parse other.py"] == 1  # each round read three times before
    assert counts["read other.py"] == 1
    assert counts["style"] == 1
