"""The project resolution: what it says about places that serve several callers, and which
code never counts (library code)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.analysis.resolve import is_library
from amp_clipfix.cli import main

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def test_a_shared_default_says_it_serves_other_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    shutil.copytree(
        FIXTURES / "trainer_shared_factory_default_note_unfuse" / "input", tmp_path / "p"
    )
    monkeypatch.chdir(tmp_path / "p")
    result = CliRunner().invoke(main, ["check", "--lightning-version", "2.6.6", "."])
    assert "note: fused is decided at optim.py:4 in build_optimizer(), which serves 2 calls" in (
        result.output
    )


@pytest.mark.parametrize(
    ("path", "library"),
    [
        ("/x/.venv/lib/python3.11/site-packages/pkg/train.py", True),
        ("/usr/lib/python3/dist-packages/pkg/train.py", True),
        ("/repo/src/lightning/pytorch/trainer/trainer.py", True),
        ("/repo/src/lightning_fabric/fabric.py", True),
        ("/repo/tests/tests_pytorch/test_amp.py", False),
        ("/repo/examples/lightning_train.py", False),
    ],
)
def test_library_code_is_never_a_user_site(path: str, library: bool) -> None:
    assert is_library(Path(path)) is library
