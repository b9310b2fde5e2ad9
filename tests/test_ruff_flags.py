"""ruff's flags where ruff has them, behaving as ruff's do (issue 40): a user who knows
`ruff check --diff`, `--fix`, `--statistics`, `--add-noqa`, `rule`... gets the same habits here."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from test_cli import invoke, snapshot

from amp_clipfix.cli import main

PINNED = ("--lightning-version", "2.6.6", "--no-cache")


def codes_reported(stdout: str) -> list[str]:
    return sorted(line.split()[1] for line in stdout.splitlines() if line.startswith("sample_"))


def test_diff_prints_the_patch_writes_nothing_and_exits_1(sample: Path) -> None:
    before = snapshot(sample)
    result = invoke("check", "--diff", *PINNED, "sample_project")
    assert result.exit_code == 1
    assert "--- a/sample_project/model.py\n+++ b/sample_project/model.py\n" in result.stdout
    assert snapshot(sample) == before
    same = invoke("apply", "--dry-run", *PINNED, "sample_project")
    assert same.stdout == result.stdout  # the same patch as apply --dry-run


def test_diff_exits_0_when_nothing_is_pending(sample: Path) -> None:
    assert invoke("apply", "--yes", *PINNED, "sample_project").exit_code == 0
    result = invoke("check", "--diff", *PINNED, "sample_project")
    assert result.exit_code == 0
    assert result.stdout == ""


def test_fix_writes_the_safe_fixes_without_a_diff(sample: Path) -> None:
    before = snapshot(sample)
    result = invoke("check", "--fix", *PINNED, "sample_project")
    assert result.exit_code == 0
    assert "--- a/" not in result.stdout  # ruff's --fix shows no diff
    assert "3 fixed, 0 remaining" in result.stdout
    assert snapshot(sample) != before
    assert invoke("check", *PINNED, "sample_project").exit_code == 0


def test_fix_refuses_an_unsafe_strategy_without_unsafe_fixes(sample: Path) -> None:
    before = snapshot(sample)
    refused = invoke("check", "--fix", "--strategy", "guard", *PINNED, "sample_project")
    assert refused.exit_code == 2
    assert "unsafe fix: add --unsafe-fixes" in refused.stderr
    assert snapshot(sample) == before
    allowed = invoke(
        "check", "--fix", "--unsafe-fixes", "--strategy", "guard", *PINNED, "sample_project"
    )
    assert allowed.exit_code in (0, 1), allowed.output
    assert snapshot(sample) != before


def test_unsafe_strategy_of_the_configuration_needs_unsafe_fixes(sample: Path) -> None:
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + '\n[tool.amp-clipfix]\nstrategy = "guard"\n')
    result = invoke("check", "--diff", *PINNED, "sample_project")
    assert result.exit_code == 2
    assert "strategy 'guard' is an unsafe fix: add --unsafe-fixes" in result.stderr
    assert result.stdout == ""


def test_output_format_is_format(sample: Path) -> None:
    new = invoke("check", "--output-format", "json", *PINNED, "sample_project")
    old = invoke("check", "--format", "json", *PINNED, "sample_project")
    assert new.exit_code == old.exit_code == 1
    assert json.loads(new.stdout) == json.loads(old.stdout)


def test_extend_select_adds_to_select(sample: Path) -> None:
    only = invoke("check", "--select", "ACF001", *PINNED, "sample_project")
    assert codes_reported(only.stdout) == ["ACF001"]
    more = invoke(
        "check", "--select", "ACF001", "--extend-select", "ACF007", *PINNED, "sample_project"
    )
    assert codes_reported(more.stdout) == ["ACF001", "ACF007"]
    unknown = invoke("check", "--extend-select", "ACF999", *PINNED, "sample_project")
    assert unknown.exit_code == 2
    assert "--extend-select: unknown code 'ACF999'" in unknown.stderr


def test_per_file_ignores_option_and_configuration(sample: Path) -> None:
    flag = invoke("check", "--per-file-ignores", "model.py:ACF002", *PINNED, "sample_project")
    assert codes_reported(flag.stdout) == ["ACF001", "ACF007"]
    pyproject = sample / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text()
        + '\n[tool.amp-clipfix.per-file-ignores]\n"train_*.py" = ["ACF001", "ACF007"]\n'
    )
    configured = invoke("check", *PINNED, "sample_project")
    assert codes_reported(configured.stdout) == ["ACF002"]
    bad = invoke("check", "--per-file-ignores", "model.py", *PINNED, "sample_project")
    assert bad.exit_code == 2
    assert "is not GLOB:CODES" in bad.stderr


def test_statistics_counts_per_code(sample: Path) -> None:
    text = invoke("check", "--statistics", *PINNED, "sample_project")
    assert text.exit_code == 1
    lines = text.stdout.splitlines()
    assert lines[:3] == [
        "1\tACF001\t[*] fabric-clip-fused-fp16",
        "1\tACF002\t[*] trainer-clip-fused-mixed-precision",
        "1\tACF007\t[*] fabric-clip-raises-on-overflow",
    ]
    data = json.loads(
        invoke("check", "--statistics", "--output-format", "json", *PINNED, "sample_project").stdout
    )
    first = {"code": "ACF001", "name": "fabric-clip-fused-fp16", "count": 1, "fixable": True}
    assert data[0] == first


def test_show_fixes_lists_what_was_and_would_be_fixed(sample: Path) -> None:
    would = invoke("check", "--show-fixes", *PINNED, "sample_project")
    assert "Would fix 3 findings:\n- sample_project/model.py:\n    1 × ACF002" in would.stdout
    fixed = invoke("check", "--fix", "--show-fixes", *PINNED, "sample_project")
    assert "Fixed 3 findings:\n- sample_project/model.py:\n" in fixed.stdout
    assert "    1 × ACF001 (fabric-clip-fused-fp16)\n" in fixed.stdout


def test_show_files_lists_the_files_and_exits_0(sample: Path) -> None:
    (sample / "skipped").mkdir()
    (sample / "skipped" / "x.py").write_text("x = 1\n")
    result = invoke("check", "--show-files", "--exclude", "skipped", "sample_project")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        "sample_project/model.py",
        "sample_project/train_fabric.py",
        "sample_project/train_trainer.py",
    ]


def test_config_path_and_key_value_overrides(sample: Path, tmp_path: Path) -> None:
    own = tmp_path / "amp-clipfix.toml"
    own.write_text('select = ["ACF002"]\n')
    from_file = invoke("check", "--config", str(own), *PINNED, "sample_project")
    assert codes_reported(from_file.stdout) == ["ACF002"]
    override = invoke("check", "--config", 'ignore = ["ACF002"]', *PINNED, "sample_project")
    assert codes_reported(override.stdout) == ["ACF001", "ACF007"]
    both = invoke(
        "check", "--config", str(own), "--config", 'select = ["ACF001"]', *PINNED, "sample_project"
    )
    assert codes_reported(both.stdout) == ["ACF001"]  # an override wins over the file
    bad = invoke("check", "--config", "bogus = 1", *PINNED, "sample_project")
    assert bad.exit_code == 2
    assert "--config unknown key 'bogus'" in bad.stderr


def test_add_noqa_writes_comments_and_the_next_check_is_clean(sample: Path) -> None:
    result = invoke("check", "--add-noqa", *PINNED, "sample_project")
    assert result.exit_code == 0
    assert "Added 3 noqa directives." in result.stderr
    fabric = (sample / "train_fabric.py").read_text()
    assert "max_norm=1.0)  # noqa: ACF001, ACF007\n" in fabric
    model = (sample / "model.py").read_text()
    assert "fused=True)  # noqa: ACF002\n" in model
    after = invoke("check", *PINNED, "sample_project")
    assert after.exit_code == 0
    assert "3 suppressed" in after.stdout
    again = invoke("check", "--add-noqa", *PINNED, "sample_project")
    assert "Added 0 noqa directives." in again.stderr


def test_add_noqa_merges_into_an_existing_noqa_comment() -> None:
    from amp_clipfix.noqa_writer import with_comments

    text = 'x = f("""a\nb""")\ny = g(1)  # noqa: E501\nz = 1 + \\\n    2\n'
    new, added = with_comments(text, {1: {"ACF001"}, 3: {"ACF002"}, 4: {"ACF001"}})
    assert added == 3
    assert new == (
        'x = f("""a\nb""")  # noqa: ACF001\ny = g(1)  # noqa: ACF002, E501\n'
        "z = 1 + \\\n    2  # noqa: ACF001\n"
    )


def test_color_always_and_never(sample: Path) -> None:
    always = invoke("check", "--diff", "--color", "always", *PINNED, "sample_project")
    assert "\x1b[" in always.stdout  # the drawn diff, even piped
    never = CliRunner(env={"FORCE_COLOR": "1"}).invoke(
        main, ["check", "--diff", "--color", "never", *PINNED, "sample_project"]
    )
    assert "\x1b[" not in never.stdout
    assert "--- a/sample_project/model.py" in never.stdout


def test_rule_by_code_by_name_and_all() -> None:
    by_code = invoke("rule", "ACF001")
    by_name = invoke("rule", "fabric-clip-fused-fp16")
    assert by_code.exit_code == by_name.exit_code == 0
    assert by_code.stdout == by_name.stdout
    assert by_code.stdout.startswith("# ACF001\n")
    assert invoke("explain", "acf001").stdout == by_code.stdout  # the old name stays
    every = invoke("rule", "--all")
    assert every.stdout.count("\n# ACF") + every.stdout.startswith("# ACF") >= 13
    data = json.loads(invoke("rule", "--all", "--output-format", "json").stdout)
    assert [rule["code"] for rule in data] == sorted(rule["code"] for rule in data)
    first = data[0]
    assert {"name", "code", "summary", "message_formats", "fix", "explanation"} <= set(first)
    one = json.loads(invoke("rule", "ACF002", "--output-format", "json").stdout)
    assert one["name"] == "trainer-clip-fused-mixed-precision"
    unknown = invoke("rule", "no-such-rule")
    assert unknown.exit_code == 2
    assert "unknown rule 'no-such-rule'" in unknown.stderr
