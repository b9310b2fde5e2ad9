"""reviewdog's GitHub reviewer, replayed over every fixture's rdjson.

reviewdog (service/github/github.go) posts a suggestion only when its lines are the comment's
own lines, one block per comment, and GitHub's "Commit suggestion" replaces exactly those whole
lines. Each finding with a fix must reach a pull request as something a reviewer can accept in
one step: one suggestion that, committed alone, gives the fixed file of `expected/`, or the full
patch in the comment body (which `git apply` turns into `expected/`), never a partial one.
`-filter-mode=added` keeps a diagnostic only when a line of its own location changed
(filter/filter.go), so every site of a finding is the location of one of its diagnostics.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from fixture_cases import case_id
from test_fixtures import CASES, load_case, options, tree_bytes

from amp_clipfix.cli import main
from amp_clipfix.sources.text import decode_source

PATCH = re.compile(r"^(`{3,})diff\n(.*?)^\1$", re.M | re.S)


def rdjson_of(project: Path, monkeypatch: pytest.MonkeyPatch, *args: str) -> dict:
    monkeypatch.chdir(project)
    result = CliRunner().invoke(main, ["check", "--format", "rdjson", *args, "."])
    assert result.exit_code in (0, 1), result.output
    return json.loads(result.stdout)


def apply_suggestion(data: bytes, path: Path, suggestion: dict) -> bytes:
    """GitHub's rule as reviewdog builds it for a line-based suggestion: lines start..end
    (inclusive) become the text, which ends where the last replaced line ended."""
    start, end = suggestion["range"]["start"], suggestion["range"]["end"]
    assert set(start) == {"line"} and set(end) == {"line"}, "a suggestion replaces whole lines"
    source = decode_source(path, data)
    lines = data.split(b"\n")
    lines = [line + b"\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    first, last = start["line"], end["line"]
    assert 1 <= first <= last <= len(lines)
    ending = lines[last - 1][len(lines[last - 1].rstrip(b"\r\n")) :]
    new = suggestion["text"].encode(source.encoding) + ending
    return b"".join(lines[: first - 1]) + new + b"".join(lines[last:])


def patches_in(message: str) -> list[str]:
    return [match.group(2) for match in PATCH.finditer(message)]


def git_apply(project: Path, patch: str) -> None:
    """A message is text: a file in another encoding (latin-1) gets the patch in its own."""
    names = re.findall(r"^\+\+\+ b/(.*)$", patch, re.M)
    files = [project / name for name in names if (project / name).is_file()]
    encoding = decode_source(files[0], files[0].read_bytes()).encoding if files else "utf-8"
    result = subprocess.run(
        ["git", "apply", "--unsafe-paths", "-"],
        input=patch.encode(encoding, "surrogateescape"),
        cwd=project,
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode() + patch


def line_range(location: dict) -> tuple[int, int]:
    start, end = location["range"]["start"], location["range"].get("end")
    last = end["line"] if end else start["line"]
    if end is not None and end.get("column") == 1 and last > start["line"]:
        last -= 1
    return start["line"], last


@pytest.mark.parametrize("case", CASES, ids=[case_id(case) for case in CASES])
def test_every_finding_reaches_a_pull_request_as_one_step(
    case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = load_case(case)
    project = tmp_path / "project"
    shutil.copytree(case / "input", project)
    before = tree_bytes(project)
    document = rdjson_of(project, monkeypatch, *options(spec))
    diagnostics = document["diagnostics"]
    expected = tree_bytes(case / "expected") if (case / "expected").is_dir() else None
    single = expected is not None and len(spec["findings"]) == 1 and not spec.get("remaining")
    for diagnostic in diagnostics:
        suggestions = diagnostic.get("suggestions", [])
        patches = patches_in(diagnostic["message"])
        assert len(suggestions) <= 1 and not (suggestions and patches), diagnostic
        for suggestion in suggestions:  # reviewdog: comment range == suggestion range
            assert line_range(diagnostic["location"]) == line_range(suggestion), diagnostic
        if not single:
            continue
        assert suggestions or patches, f"a fix neither suggested nor patched: {diagnostic}"
        copy = tmp_path / f"replay-{diagnostics.index(diagnostic)}"
        shutil.copytree(case / "input", copy)
        if suggestions:
            target = copy / diagnostic["location"]["path"]
            target.write_bytes(apply_suggestion(target.read_bytes(), target, suggestions[0]))
        else:
            (patch,) = patches
            git_apply(copy, patch)
        assert tree_bytes(copy) == expected, "committing this alone must give expected/"
    if spec["findings"]:  # every site of every finding is some diagnostic's own location
        located = [(d["location"]["path"], line_range(d["location"])) for d in diagnostics]
        for diagnostic in diagnostics:
            for related in diagnostic.get("related_locations", []):
                path, (first, last) = related["location"]["path"], line_range(related["location"])
                assert any(
                    path == where and low <= first and last <= high
                    for where, (low, high) in located
                ), related
    assert tree_bytes(project) == before  # check wrote nothing
