"""The rule pages: one per code, with the exact Lightning errors, an example and every fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET
from amp_clipfix.rules import RULES, codes_of, help_uri, render_rule
from amp_clipfix.sources.prefilter import LEGACY_PRECISION_WORDS, SEARCH_WORDS
from amp_clipfix.strategies import SAFETY

FABRIC_ERROR = "Gradient clipping is not implemented for optimizers handling the unscaling."
TRAINER_ERROR = (
    "The current optimizer, AdamW, does not allow for gradient clipping because it performs "
    "unscaling of gradients internally. HINT: Are you using a 'fused' optimizer?"
)
PAGE_ERRORS = {
    "ACF001": [FABRIC_ERROR],
    "ACF002": [TRAINER_ERROR],
    "ACF003": [FABRIC_ERROR, TRAINER_ERROR],
}


# The rules that ask only the collected sites, fixed by the shared strategies (and the alias);
# the others ask the project's facts and write their own fixes (rules/base.py `Rule`).
SITE_RULES = sorted(code for code, rule in RULES.items() if not rule.asks_facts)
SEARCH_RULES = sorted(code for code, rule in RULES.items() if rule.asks_facts)


def test_the_codes_are_the_documented_ones() -> None:
    assert sorted(RULES) == [f"ACF00{n}" for n in range(1, 10)] + [f"ACF01{n}" for n in range(4)]
    assert SITE_RULES == ["ACF001", "ACF002", "ACF003"]
    assert all(code == rule.code for code, rule in RULES.items())


@pytest.mark.parametrize("code", SEARCH_RULES)
def test_the_prefilter_knows_the_words_a_search_rule_looks_for(code: str) -> None:
    """A run drops files before any rule is imported: a word the prefilter does not know would
    make the rule blind to every project without a `fused` in it."""
    missing = set(RULES[code].needed_words) - set(SEARCH_WORDS)
    assert not missing, f"add {sorted(missing)} to sources/prefilter.SEARCH_WORDS"


def test_the_prefilter_knows_the_old_precision_spellings() -> None:
    """A project whose only searching word is `precision` is searched only when a file holds
    one of ACF011's words: the prefilter's copy must be the rule's."""
    assert RULES["ACF011"].needed_words == (b"precision",)
    assert RULES["ACF011"].words == LEGACY_PRECISION_WORDS


@pytest.mark.parametrize("code", SEARCH_RULES)
def test_search_rule_page_has_its_sections(code: str) -> None:
    rule = RULES[code]
    page = render_rule(rule)
    assert page.startswith(f"# {code}\n")
    for section in ("What it detects", rule.why_title, "Example", "Fix safety"):
        assert f"## {section}" in page
    assert rule.example_before in page and rule.example_after in page
    assert rule.words and rule.writes_fixes and rule.check is not None


@pytest.mark.parametrize("code", SEARCH_RULES)
def test_search_rule_page_carries_what_its_fix_says(tmp_path: Path, code: str) -> None:
    """The fix's own words (the diff view and machine output show them) are on the page."""
    rule = RULES[code]
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "train.py").write_text(rule.example_before, encoding="utf-8")
    result = run([tmp_path], Options(Strategy.AUTO, DEFAULT_TARGET))
    fixes = [finding.fix for finding in result.findings if finding.fix is not None]
    assert fixes or not rule.fix_safety  # a rule without a fix (ACF013) offers none
    for fix in fixes:
        assert fix.safety in rule.fix_safety[fix.strategy.value]
        assert ("Safe:" in rule.fix_safety[fix.strategy.value]) is fix.safe


@pytest.mark.parametrize("code", SITE_RULES)
def test_page_has_errors_example_and_every_strategy(code: str) -> None:
    rule = RULES[code]
    page = render_rule(rule)
    assert page.startswith(f"# {code}\n")
    for error in PAGE_ERRORS[code]:
        assert error in page
    for section in ("What it detects", "Why Lightning fails", "Example", "Fix safety"):
        assert f"## {section}" in page
    assert rule.example_before in page and rule.example_after in page
    assert rule.example_before != rule.example_after
    for strategy in ("unscale", "unfuse", "bf16", "guard"):
        assert f"- `{strategy}`: {rule.fix_safety[strategy]}" in page


@pytest.mark.parametrize("code", SITE_RULES)
def test_safety_texts_come_from_the_fixes(code: str) -> None:
    """Written once: each page carries the text the diff view and machine output show."""
    for strategy in (Strategy.UNSCALE, Strategy.UNFUSE, Strategy.BF16, Strategy.GUARD):
        safety = RULES[code].fix_safety[strategy.value].lower()
        assert SAFETY[strategy].lower() in safety


@pytest.mark.parametrize("code", SITE_RULES)
def test_pages_say_which_fixes_are_safe(code: str) -> None:
    """ruff's fix safety: unscale and unfuse are safe, bf16 and guard run only when named."""
    fix_safety = RULES[code].fix_safety
    assert "Safe:" in fix_safety["unscale"] and "Safe:" in fix_safety["unfuse"]
    assert "unsafe" in fix_safety["bf16"].lower() and "Unsafe" in fix_safety["guard"]
    assert "The default (`auto`)" in fix_safety["unscale"]


def test_trainer_page_says_bf16_is_not_a_fix_on_released_lightning() -> None:
    page = render_rule(RULES["ACF002"])
    assert "bf16-mixed" in page and "2.6.6" in page
    assert RULES["ACF002"].fix_safety["bf16"].startswith("Not a fix")


def test_fabric_bf16_fix_explains_dropping_the_scaler() -> None:
    assert "does not use a scaler" in RULES["ACF001"].fix_safety["bf16"]


def test_heading_level_nests_the_page() -> None:
    page = render_rule(RULES["ACF001"], heading_level=3)
    assert page.startswith("### ACF001\n") and "#### Fix safety" in page


def test_help_uri_points_to_the_rule_page_of_the_docs() -> None:
    assert help_uri("ACF002") == (
        "https://github.com/amp-clipfix/amp-clipfix/blob/main/docs/rules/ACF002.md"
    )


ALSO_REPORTED = {"ACF001": ("ACF007",), "ACF003": ("ACF007",)}


@pytest.mark.parametrize("code", sorted(RULES))
def test_examples_are_what_the_tool_finds_and_fixes(tmp_path: Path, code: str) -> None:
    """The page's example is detected under its own code and `auto` turns it into the after."""
    rule = RULES[code]
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "train.py").write_text(rule.example_before, encoding="utf-8")
    result = run([tmp_path], Options(Strategy.AUTO, DEFAULT_TARGET, fix=True))
    # An alias's example (ACF003) is a finding of another rule that the alias reaches. ACF001's
    # and ACF003's Fabric example clips by norm under a GradScaler: ACF007 reports that call
    # too, and its fix joins theirs (the same helper on the same call).
    also = set(ALSO_REPORTED.get(code, ()))
    own = [finding for finding in result.findings if finding.code not in also]
    assert own and all(code in codes_of(finding) for finding in own)
    assert {finding.code for finding in result.findings} - {f.code for f in own} == also
    changed = [rule.example_after] if rule.example_after != rule.example_before else []
    assert [change.new_data.decode() for change in result.changes] == changed


# What each migration rule's page quotes: the error or warning the release gives (measured on
# lightning 2.6.6 / 2.0.9.post0 / pytorch-lightning 1.9.5 and torch 2.13.0).
MIGRATION_PAGE_QUOTES = {
    "ACF010": "unexpected keyword argument 'amp_backend'",
    "ACF011": "is supported for historical reasons but its usage is discouraged",
    "ACF012": "torch.cuda.amp.GradScaler(args...) is deprecated",
    "ACF013": "`gradient_clip_algorithm='norm'` is currently not supported",
}


@pytest.mark.parametrize("code", sorted(MIGRATION_PAGE_QUOTES))
def test_migration_pages_quote_what_the_release_says(code: str) -> None:
    assert MIGRATION_PAGE_QUOTES[code] in render_rule(RULES[code])
