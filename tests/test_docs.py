"""The README is a front door and docs/ a site that builds: every command a page shows is run by
a test (or says why it cannot be), the rule pages are the rule modules' own, links resolve."""

from __future__ import annotations

import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import docpages
import pytest
import rule_pages
from docpages import REPO

SAMPLE = REPO / "examples" / "sample_project"
CI_RUN = (REPO / ".ci" / "run").read_text(encoding="utf-8")


def commands(markdown: str) -> list[str]:
    """The commands of a page's ```bash blocks, a line continued by a backslash joined to the
    next, a trailing `# comment` dropped."""
    found = []
    for block in docpages.code_blocks(markdown, "bash"):
        for line in block.replace("\\\n", " ").splitlines():
            command = re.sub(r"\s+#\s.*$", "", line).strip()
            if command:
                found.append(" ".join(command.split()))
    return found


# Every command a page shows, and the test that runs it as written (module::function), or why
# no test can. A new command in the docs fails test_every_command_in_the_docs_is_run_by_a_test
# until it is listed here.
RUN_BY = {
    "python3 -m venv .venv && . .venv/bin/activate && pip install . && amp-clipfix apply "
    "examples/sample_project": ".ci/run (block 1: exit 1, a patch, nothing written)",
    "python3 -m venv .venv && . .venv/bin/activate && pip install -U pip && pip install -e . "
    '--group test && nox -t releases && python -m pytest -n auto -m "runtime or not runtime"': (
        ".ci/run (block 2: every test, none skipped)"
    ),
    "amp-clipfix apply --dry-run src/ > fix.patch; [ $? -le 1 ] && git apply --allow-empty "
    "fix.patch": "test_readme_recipes::test_the_dry_run_recipe_applies_as_written",
    "amp-clipfix apply --dry-run --patch-dir patches/ repos/*": (
        "test_docs::test_the_bulk_recipe_patches_each_project_and_applies"
    ),
    "git -C repos/foo apply ../../patches/foo.patch": (
        "test_docs::test_the_bulk_recipe_patches_each_project_and_applies"
    ),
    'multi-gitter run "amp-clipfix apply --yes --exit-zero ." --org my-org --branch amp-clipfix '
    '--pr-title "Fix gradient clipping on fused optimizers"': (
        "test_docs::test_the_command_multi_gitter_and_git_xargs_run_fixes_a_repository"
    ),
    "git-xargs --github-org my-org --branch-name amp-clipfix --commit-message "
    '"Fix gradient clipping on fused optimizers" amp-clipfix apply --yes --exit-zero .': (
        "test_docs::test_the_command_multi_gitter_and_git_xargs_run_fixes_a_repository"
    ),
    "amp-clipfix trace -- python train.py": (
        "test_trace_runtime::test_the_loud_fabric_error_is_found_fixed_and_verified"
    ),
    "amp-clipfix trace -- python -m pkg.train": (
        "test_trace_runtime::test_a_program_started_with_python_m"
    ),
    "amp-clipfix trace -- python train.py fit --config config.yaml": (
        "test_trace_runtime::test_a_lightning_cli_program_configured_in_yaml"
    ),
    "amp-clipfix trace --overflow -- python train.py": (
        "test_trace_runtime::test_overflow_forced_shows_the_fabric_crash_and_the_fix_skips_the_step"
    ),
    "amp-clipfix trace --record run.jsonl -- python train.py": (
        "test_trace_runtime::test_a_plain_torch_clip_of_scaled_gradients_shows_the_norm_the_step_got"
    ),
    "amp-clipfix trace --format json -- python train.py": (
        "test_trace_runtime::test_the_loud_trainer_error_is_found_as_json_fixed_and_verified"
    ),
    "amp-clipfix trace --dry-run -- python train.py": (
        "test_trace_runtime::test_plain_backward_in_a_decorated_training_step_is_fixed_where_it_ran"
    ),
    "amp-clipfix trace --apply --yes --verify -- python train.py": (
        "test_trace_runtime::test_ddp_children_on_cpu_are_traced_and_fixed"
    ),
    "git clone https://github.com/amp-clipfix/amp-clipfix && pip install ./amp-clipfix": (
        "not run (the network): test_readme_recipes::test_a_fresh_clone_builds_a_wheel_that_runs "
        "builds and runs what pip builds from a clone"
    ),
    'pip install "git+https://github.com/amp-clipfix/amp-clipfix@main"': (
        "not run (the network): test_readme_recipes::test_a_fresh_clone_builds_a_wheel_that_runs "
        "builds and runs what pip builds from the repository"
    ),
}


def shown_commands() -> set[str]:
    return {command for page in docpages.pages() for command in commands(page.read_text())}


def test_every_command_in_the_docs_is_run_by_a_test() -> None:
    shown = shown_commands()
    assert sorted(shown - set(RUN_BY)) == [], "a command no test runs: add it to RUN_BY"
    assert sorted(set(RUN_BY) - shown) == [], "RUN_BY names a command no page shows"
    for where in RUN_BY.values():
        test = re.search(r"(test_\w+)::(test_\w+)", where)
        if test:  # the test it names exists
            assert hasattr(importlib.import_module(test.group(1)), test.group(2)), where
        else:
            assert where.startswith(".ci/run (block "), where
    assert "readme_block 1" in CI_RUN and "readme_block 2" in CI_RUN


def run_bash(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command as a user types it, with this environment's amp-clipfix first on PATH."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, check=False
    )


def bulk_commands() -> list[str]:
    shown = commands(docpages.text("integrations/bulk.md"))
    return [command for command in shown if "patches" in command]


def test_the_bulk_recipe_patches_each_project_and_applies(tmp_path: Path) -> None:
    """`--patch-dir` writes `<project>.patch` per project, which git applies in that project."""
    for name in ("foo", "bar"):
        shutil.copytree(SAMPLE, tmp_path / "repos" / name)
        subprocess.run(["git", "init", "-q", str(tmp_path / "repos" / name)], check=True)
    reference = tmp_path / "reference"
    shutil.copytree(SAMPLE, reference)
    fixed = run_bash("amp-clipfix apply --yes --no-cache .", reference)
    assert fixed.returncode == 0, fixed.stderr
    dry_run, apply_one = bulk_commands()
    made = run_bash(dry_run, tmp_path)
    assert made.returncode == 1, made.stderr  # a dry run with changes pending
    assert sorted(p.name for p in (tmp_path / "patches").iterdir()) == ["bar.patch", "foo.patch"]
    assert (tmp_path / "repos" / "foo" / "model.py").read_bytes() == (
        SAMPLE / "model.py"
    ).read_bytes()
    applied = run_bash(apply_one, tmp_path)
    assert applied.returncode == 0, applied.stderr
    for path in sorted(reference.glob("*.py")):
        assert (tmp_path / "repos" / "foo" / path.name).read_bytes() == path.read_bytes()
    assert (tmp_path / "repos" / "bar" / "model.py").read_bytes() == (
        SAMPLE / "model.py"
    ).read_bytes()


def test_the_command_multi_gitter_and_git_xargs_run_fixes_a_repository(tmp_path: Path) -> None:
    """What both tools run in each repository they clone: it writes the fixes and exits 0, so
    the tool goes on to commit them and open the pull request."""
    shown = commands(docpages.text("integrations/bulk.md"))
    quoted = next(c for c in shown if c.startswith("multi-gitter"))
    command = shlex.split(quoted)[2]
    assert command == "amp-clipfix apply --yes --exit-zero ."
    assert next(c for c in shown if c.startswith("git-xargs")).endswith(command)
    shutil.copytree(SAMPLE, tmp_path / "repo")
    ran = run_bash(command, tmp_path / "repo")
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "repo" / "model.py").read_bytes() != (SAMPLE / "model.py").read_bytes()
    again = run_bash("amp-clipfix check --no-cache .", tmp_path / "repo")
    assert again.returncode == 0, again.stdout  # nothing left to fix


# --- the README: a front door ----------------------------------------------------------------

README = docpages.text("README.md")


def test_the_readme_is_a_front_door() -> None:
    assert len(README.splitlines()) < 300
    first, second = docpages.code_blocks(README, "bash")[:2]
    assert first.startswith("python3 -m venv .venv") and "amp-clipfix apply" in first
    assert "nox -t releases" in second and "python -m pytest" in second
    said = " ".join(README.split())
    assert "exits 1**: there is something to fix" in said and "ruff check --diff" in said
    assert re.search(r"about \*\*[\d.]+ GB of disk\*\*", said)
    assert re.search(r"about \*\*\d+ minutes\*\* on a quiet 2-core machine", said)


def test_the_readme_example_is_what_the_tool_prints(tmp_path: Path) -> None:
    """The example file, and each `$ command` of the console block: the lines shown under it
    are lines of its stdout, in order (a line left out is fine, a changed one is not)."""
    section = docpages.section(README, "## A finding and its fix")
    (source,) = docpages.code_blocks(section, "python")
    assert len(source.splitlines()) == 10
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "train.py").write_text(source, encoding="utf-8")
    (console,) = docpages.code_blocks(section, "console")
    runs = re.split(r"^\$ ", console, flags=re.M)[1:]
    assert len(runs) == 2
    for run in runs:
        command, *shown = run.splitlines()
        result = run_bash(command, tmp_path)
        assert result.returncode == 1, result.stderr  # a finding; a dry run with changes
        printed = iter(result.stdout.splitlines())
        for line in shown:
            assert any(line == out for out in printed), (command, line, result.stdout)
    assert (tmp_path / "train.py").read_text(encoding="utf-8") == source  # nothing written


def local_links(path: Path) -> list[tuple[str, str]]:
    """(target, anchor) of each link to a file of the repository."""
    links = re.findall(r"\]\(([^)\s]+)\)", path.read_text(encoding="utf-8"))
    return [
        tuple(link.partition("#")[::2])  # type: ignore[misc]
        for link in links
        if not re.match(r"[a-z]+:", link)
    ]


def test_the_readme_links_lead_to_files_that_exist() -> None:
    links = local_links(REPO / "README.md")
    assert len(links) >= 15
    for target, _ in links:
        assert (REPO / target).is_file(), target


# --- the site ----------------------------------------------------------------------------------


def test_the_rule_pages_are_rendered_from_the_rule_modules() -> None:
    """docs/rules/ holds exactly what scripts/rule_pages.py writes: run it after changing a
    rule."""
    wanted = rule_pages.pages()
    committed = set(rule_pages.RULES_DIR.glob("*.md"))
    assert committed == set(wanted), "python scripts/rule_pages.py"
    for path, text in wanted.items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.name}: python scripts/rule_pages.py"
        )


def test_every_rule_page_is_in_the_navigation() -> None:
    import yaml

    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r"- (rules/\S+\.md)", nav))
    assert listed == {f"rules/{p.name}" for p in rule_pages.RULES_DIR.glob("*.md")}
    assert yaml.safe_load(nav)["theme"]["name"] == "material"


def build_site(folder: Path) -> subprocess.CompletedProcess[str]:
    """`mkdocs build --strict` of the site whose mkdocs.yml is in `folder`, as .ci/run runs it."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(folder / "site")],
        cwd=folder,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.needs("mkdocs", "material")
def test_the_site_builds_with_every_link_checked(tmp_path: Path) -> None:
    """The site builds strictly, a page that `nav` does not list too (a new page builds before
    it gets its place); a link to a heading that does not exist fails the build."""
    assert "mkdocs build --strict" in CI_RUN
    shutil.copytree(REPO / "docs", tmp_path / "docs")
    shutil.copy2(REPO / "mkdocs.yml", tmp_path)
    (tmp_path / "docs" / "new-topic.md").write_text(
        "# A new topic\n\nSee [the exit codes](commands.md#exit-codes).\n", encoding="utf-8"
    )
    built = build_site(tmp_path)
    assert built.returncode == 0, built.stderr
    for page in ("index.html", "rules/ACF001/index.html", "new-topic/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    assert not (tmp_path / "site" / "pypi").exists()  # the package index's page only
    with (tmp_path / "docs" / "commands.md").open("a", encoding="utf-8") as page:
        page.write("\nSee [the exit codes](configuration.md#exit-codes).\n")  # not there
    broken = build_site(tmp_path)
    assert broken.returncode != 0 and "configuration.md#exit-codes" in broken.stderr
