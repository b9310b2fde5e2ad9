"""Tests of the byte-level Myers diff, its unified patches (checked with real `git apply`) and
its rich rendering."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from amp_clipfix.output.diff import DiffLine, Hunk, diff_hunks, format_patch, split_lines
from amp_clipfix.output.diff_view import render_file_diff

# ---------------------------------------------------------------------------------------------
# Helpers


def lcs_length(a: list[bytes], b: list[bytes]) -> int:
    """Textbook O(nm) dynamic programme, independent of the code under test."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def apply_hunks(old: bytes, hunks: list[Hunk]) -> bytes:
    """Apply hunks in Python, checking that context and removed lines match `old` exactly."""
    lines = split_lines(old)
    out: list[bytes] = []
    pos = 0  # next line of `old` not yet copied
    for hunk in hunks:
        start = old_start0(hunk)
        assert start >= pos, "hunks overlap or are out of order"
        out += lines[pos:start]
        pos = start
        for line in hunk.lines:
            if line.tag in " -":
                assert lines[pos] == line.text
                pos += 1
            if line.tag in " +":
                out.append(line.text)
        olds = sum(line.tag != "+" for line in hunk.lines)
        news = sum(line.tag != "-" for line in hunk.lines)
        assert (olds, news) == (hunk.old_count, hunk.new_count)
    out += lines[pos:]
    return b"".join(out)


def old_start0(hunk: Hunk) -> int:
    """0-based index of the first old line of the hunk (header starts of empty sides differ)."""
    return hunk.old_start - 1 if hunk.old_count else hunk.old_start


def leading_context(hunk: Hunk, reverse: bool = False) -> int:
    """Number of context lines before the first (or after the last) change of the hunk."""
    lines = reversed(hunk.lines) if reverse else hunk.lines
    count = 0
    for line in lines:
        if line.tag != " ":
            break
        count += 1
    return count


GIT = shutil.which("git")
# Keep the user's and the system's git configuration (apply.whitespace=fix, autocrlf...) out.
GIT_ENV = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}


def git_apply(repo: Path, path: str, old: bytes, patch: bytes) -> bytes:
    """Write `old` at `path` in `repo`, apply `patch` with `git apply` and return the result."""
    target = repo / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(old)
    patch_file = repo.parent / "change.patch"
    patch_file.write_bytes(patch)
    result = subprocess.run(
        [GIT, "apply", str(patch_file)], cwd=repo, env=GIT_ENV, capture_output=True
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace") + repr(patch)
    return target.read_bytes()


@pytest.fixture(scope="module")
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert GIT is not None, "these tests apply patches with git: install git"
    repo = tmp_path_factory.mktemp("apply") / "repo"
    repo.mkdir()
    subprocess.run([GIT, "init", "-q", str(repo)], env=GIT_ENV, check=True)
    return repo


# Few distinct lines so that old and new share many lines; every kind of line ending.
LINE = st.sampled_from(
    [b"a\n", b"b\n", b"c\n", b"a\r\n", b"b\r\n", b"\n", b"\r\n", b"x\ry\r", b"\xe9\n", b"\t[b]\n"]
)
LAST = st.sampled_from([b"", b"", b"a", b"b", b"a\r", b"\r", b"\xef\xbb\xbf"])
TEXT = st.one_of(
    st.just(b""),
    st.builds(lambda lines, last: b"".join(lines) + last, st.lists(LINE, max_size=25), LAST),
)


# ---------------------------------------------------------------------------------------------
# Properties


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(old=TEXT, new=TEXT)
def test_git_apply_reproduces_new(git_repo: Path, old: bytes, new: bytes) -> None:
    patch = format_patch(old, new, "pkg/sub dir/module.py")
    if old == new:
        assert patch == b""
        return
    assert git_apply(git_repo, "pkg/sub dir/module.py", old, patch) == new


@settings(max_examples=600, deadline=None)
@given(old=TEXT, new=TEXT, context=st.integers(min_value=0, max_value=4))
def test_minimal_and_applies_in_python(old: bytes, new: bytes, context: int) -> None:
    hunks = diff_hunks(old, new, context)
    a, b = split_lines(old), split_lines(new)
    edits = sum(line.tag != " " for hunk in hunks for line in hunk.lines)
    assert edits == len(a) + len(b) - 2 * lcs_length(a, b)
    assert apply_hunks(old, hunks) == new
    assert diff_hunks(old, new, context) == hunks  # deterministic
    for hunk in hunks:
        assert leading_context(hunk) <= context
        assert leading_context(hunk, reverse=True) <= context
    # Consecutive hunks are separated by more than 2 * context unchanged lines, else they would
    # have been merged: both contexts are full and at least one line is left out between them.
    for before, after in zip(hunks, hunks[1:]):
        assert leading_context(before, reverse=True) == context == leading_context(after)
        end_before = old_start0(before) + before.old_count
        assert old_start0(after) > end_before


def test_split_lines() -> None:
    assert split_lines(b"") == []
    assert split_lines(b"a\nb") == [b"a\n", b"b"]
    assert split_lines(b"a\r\nb\r\n") == [b"a\r\n", b"b\r\n"]
    assert split_lines(b"a\rb\r") == [b"a\rb\r"]
    assert split_lines(b"\n\n") == [b"\n", b"\n"]


# ---------------------------------------------------------------------------------------------
# Examples

TEN = b"".join(b"line %d\n" % i for i in range(1, 11))


def test_middle_line_changed_exact_patch() -> None:
    new = TEN.replace(b"line 5\n", b"line five\n")
    assert format_patch(TEN, new, "src/m.py") == (
        b"--- a/src/m.py\n"
        b"+++ b/src/m.py\n"
        b"@@ -2,7 +2,7 @@\n"
        b" line 2\n"
        b" line 3\n"
        b" line 4\n"
        b"-line 5\n"
        b"+line five\n"
        b" line 6\n"
        b" line 7\n"
        b" line 8\n"
    )


def test_distant_changes_give_two_hunks() -> None:
    old = b"".join(b"%d\n" % i for i in range(1, 21))
    new = old.replace(b"\n2\n", b"\ntwo\n").replace(b"\n18\n", b"\neighteen\n")
    hunks = diff_hunks(old, new)
    assert [(h.old_start, h.old_count, h.new_start, h.new_count) for h in hunks] == [
        (1, 5, 1, 5),
        (15, 6, 15, 6),
    ]
    assert hunks[0].lines[1] == DiffLine("-", b"2\n")
    assert hunks[0].lines[2] == DiffLine("+", b"two\n")


def test_close_changes_are_merged() -> None:
    old = b"".join(b"%d\n" % i for i in range(1, 21))
    # Lines 5 and 12 changed: 6 unchanged lines between them, so the contexts touch.
    new = old.replace(b"\n5\n", b"\nfive\n").replace(b"\n12\n", b"\ntwelve\n")
    hunks = diff_hunks(old, new)
    assert [(h.old_start, h.old_count, h.new_start, h.new_count) for h in hunks] == [(2, 14, 2, 14)]
    # One more unchanged line between them and they are two hunks again.
    new = old.replace(b"\n5\n", b"\nfive\n").replace(b"\n13\n", b"\nthirteen\n")
    assert len(diff_hunks(old, new)) == 2


def test_no_newline_at_end_of_old() -> None:
    assert format_patch(b"a\nb", b"a\nb\n", "f") == (
        b"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
    )


def test_no_newline_at_end_of_new() -> None:
    assert format_patch(b"a\nb\n", b"a\nc", "f") == (
        b"--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n\\ No newline at end of file\n"
    )


def test_no_newline_at_end_of_both() -> None:
    assert format_patch(b"a\nb\nc", b"x\nb\nc", "f") == (
        b"--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+x\n b\n c\n\\ No newline at end of file\n"
    )


def test_empty_sides() -> None:
    assert format_patch(b"", b"a\nb\n", "f") == b"--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+a\n+b\n"
    assert format_patch(b"a\n", b"", "f") == b"--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-a\n"


def test_pure_insertion_header_uses_line_before() -> None:
    hunks = diff_hunks(TEN, TEN.replace(b"line 5\n", b"line 5\nnew\n"), context=0)
    assert hunks == [Hunk(5, 0, 6, 1, (DiffLine("+", b"new\n"),))]


def test_identical_input_gives_no_patch() -> None:
    assert format_patch(TEN, TEN, "f") == b""
    assert format_patch(b"", b"", "f") == b""
    assert diff_hunks(TEN, TEN) == []


def test_crlf_and_latin1_bytes_survive_git_apply(git_repo: Path) -> None:
    old = b"# caf\xe9\r\nx = 1\r\ny = 2\r\n"
    new = b"# caf\xe9\r\nx = 1\r\nz = 3\r\ny = 2\r\n"
    assert git_apply(git_repo, "crlf.py", old, format_patch(old, new, "crlf.py")) == new


def test_quoted_path_applies(git_repo: Path) -> None:
    path = 'odd "name"\\with\ttab.py'
    patch = format_patch(b"a\n", b"b\n", path)
    assert patch.startswith(b'--- "a/odd \\"name\\"\\\\with\\ttab.py"\n')
    assert git_apply(git_repo, path, b"a\n", patch) == b"b\n"


# ---------------------------------------------------------------------------------------------
# Rendering


def make_console() -> Console:
    return Console(record=True, width=100, force_terminal=True, file=io.StringIO())


def test_render_file_diff() -> None:
    old = b"import torch\nx = '[bold]old line'\ny = 1\n"
    new = b"import torch\nx = '[bold]new line'\ny = 1\n"
    console = make_console()
    notes = [
        "ACF001 Fabric clips a fused optimizer under fp16 AMP",
        "fix: bf16 \u2014 changes numerics; needs bf16 hardware",
    ]
    render_file_diff(console, "src/[red]train.py", diff_hunks(old, new), "utf-8", notes)
    text = console.export_text()
    assert "src/[red]train.py" in text
    for note in notes:
        assert note in text
    assert "-x = '[bold]old line'" in text
    assert "+x = '[bold]new line'" in text
    assert "@@ -1,3 +1,3 @@" in text
    assert " import torch" in text


def test_render_decodes_with_the_encoding_and_hides_control_characters() -> None:
    old = b"a = 'caf\xe9'\r\n"
    new = b"a = 'th\xe9\x1b[31m'\r\n"
    console = make_console()
    render_file_diff(console, "f.py", diff_hunks(old, new), "latin-1")
    text = console.export_text()
    assert "-a = 'caf\u00e9'" in text
    assert "+a = 'th\u00e9\\x1b[31m'" in text
    assert "\r" not in text


def test_render_nothing_without_hunks() -> None:
    console = make_console()
    render_file_diff(console, "f.py", [], "utf-8", ["a note"])
    assert console.export_text() == ""
    assert console.file.getvalue() == ""
