"""The release model (DESIGN.md §1a): what each Lightning release line refuses and spells."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from amp_clipfix.cli import main
from amp_clipfix.project.version import (
    MIXED_PRECISIONS,
    SCALER_PRECISIONS,
    Release,
    Target,
    parse_version,
    releases_in,
)

NONE: frozenset[str] = frozenset()
ONE_X = frozenset({"16", "bf16"})

# version: (Trainer refuses under, Fabric can clip, bf16 spelling, hook takes optimizer_idx)
TABLE = {
    "1.6.0": (NONE, False, "bf16", True),
    "1.7.7": (NONE, False, "bf16", True),
    "1.8.0": (NONE, False, "bf16", True),
    "1.8.1": (ONE_X, False, "bf16", True),
    "1.9.5": (ONE_X, False, "bf16", True),
    "2.0.0": (MIXED_PRECISIONS, True, "bf16-mixed", False),
    "2.0.9.post0": (MIXED_PRECISIONS, True, "bf16-mixed", False),
    "2.4.0": (MIXED_PRECISIONS, True, "bf16-mixed", False),
    "2.6.6": (MIXED_PRECISIONS, True, "bf16-mixed", False),
    "2.6.6.post1": (MIXED_PRECISIONS, True, "bf16-mixed", False),
    "2.7.0rc1": (SCALER_PRECISIONS, True, "bf16-mixed", False),
    "2.7.0": (SCALER_PRECISIONS, True, "bf16-mixed", False),
    "3.0": (SCALER_PRECISIONS, True, "bf16-mixed", False),
}


@pytest.mark.parametrize("version", TABLE)
def test_every_release_line(version: str) -> None:
    trainer, fabric_can_clip, bf16, optimizer_idx = TABLE[version]
    release = Release(Version(version))
    assert release.trainer_failing_precisions == trainer
    assert release.fabric_can_clip is fabric_can_clip
    assert release.fabric_failing_precisions == (SCALER_PRECISIONS if fabric_can_clip else NONE)
    assert release.bf16_precision == bf16
    assert release.clip_hook_takes_optimizer_idx is optimizer_idx
    assert release.bf16_precision in release.precision_spellings


def test_spellings_exist_only_where_the_release_has_them() -> None:
    assert "16-mixed" not in Release(Version("1.9.5")).precision_spellings
    assert "16-true" not in Release(Version("2.0.9")).precision_spellings
    assert "16-true" in Release(Version("2.1.0")).precision_spellings


@pytest.mark.parametrize("text", ["2.6", "2.6.6", " 2.6.6 ", "2.0.9.post0", "2.7.0rc1", "1.9.5"])
def test_parse_accepts(text: str) -> None:
    assert parse_version(text) == Version(text.strip())


@pytest.mark.parametrize(
    "text", ["2.7.0.1", "\u0662.\u0666.\u0666", "v2.6.6", "1!2.6.6", "2.6.6+cpu", "two", "", "2."]
)
def test_parse_rejects_with_one_line(text: str) -> None:
    with pytest.raises(ValueError, match=r"not a Lightning version: .* \(expected X\.Y or X\.Y\.Z"):
        parse_version(text)


def test_a_range_refuses_when_one_of_its_releases_does() -> None:
    never = Target(releases_in(SpecifierSet(">=1.7,<1.8.1")), "pytorch-lightning>=1.7,<1.8.1", "x")
    assert [str(r) for r in never.releases][-1] == "1.8.0"
    assert never.trainer_failing_precisions == NONE
    mixed = Target(releases_in(SpecifierSet(">=1.9,<2.1")), "lightning>=1.9,<2.1", "x")
    assert mixed.trainer_failing_precisions == MIXED_PRECISIONS
    assert mixed.fabric_can_clip
    assert mixed.bf16_precision is None  # "bf16" on 1.9, "bf16-mixed" on 2.0: no common rewrite
    assert mixed.clip_hook_takes_optimizer_idx is None
    future = Target(releases_in(SpecifierSet(">=2.7")), "lightning>=2.7", "x")
    assert future.trainer_failing_precisions == SCALER_PRECISIONS
    assert not future.trainer_refuses_without_scaler


@pytest.fixture
def bf16_trainer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "train.py").write_text(
        "import lightning as L\nimport torch\n\n\nclass M(L.LightningModule):\n"
        "    def configure_optimizers(self):\n"
        "        return torch.optim.AdamW(self.parameters(), fused=True)\n\n\n"
        'L.Trainer(precision="bf16-mixed", gradient_clip_val=1.0).fit(M())\n'
    )
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_cli_rejects_a_four_part_version(bf16_trainer: Path) -> None:
    result = CliRunner().invoke(main, ["check", "--lightning-version", "2.7.0.1", "."])
    assert result.exit_code == 2
    assert "not a Lightning version: '2.7.0.1'" in result.output


def test_cli_takes_a_pre_release_as_its_release_line(bf16_trainer: Path) -> None:
    """2.7.0rc1 is a pre-release of 2.7.0: it refuses only with a scaler, so bf16 is clean."""
    result = CliRunner().invoke(main, ["check", "--lightning-version", "2.7.0rc1", "."])
    assert result.exit_code == 0, result.output
    assert "assumed Lightning 2.7.0rc1 from --lightning-version." in result.output
    on_2_6 = CliRunner().invoke(main, ["check", "--lightning-version", "2.6", "."])
    assert on_2_6.exit_code == 1, on_2_6.output


def test_bf16_is_refused_where_a_range_spans_both_spellings(bf16_trainer: Path) -> None:
    """Fabric under 16-mixed on `lightning>=1.9,<2.1`: 2.0 refuses, and a bf16 rewrite would have
    to be "bf16" on 1.9 and "bf16-mixed" on 2.0, so the bf16 fix is refused, not guessed."""
    (bf16_trainer / "train.py").write_text(
        'import lightning as L\nimport torch\n\nfabric = L.Fabric(precision="16-mixed")\n'
        "opt = torch.optim.AdamW([], fused=True)\nfabric.clip_gradients(None, opt, max_norm=1.0)\n"
    )
    (bf16_trainer / "requirements.txt").write_text("lightning>=1.9,<2.1\n")
    result = CliRunner().invoke(main, ["check", "--strategy", "bf16", "."])
    assert result.exit_code == 1, result.output
    assert 'spell bf16 as "bf16", not "bf16-mixed"' in result.output
