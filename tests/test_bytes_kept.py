"""`apply --yes` must change the bytes of its edit and nothing else.

People run the tool over whole repositories; a newline, an encoding byte, a mode bit or a link it
did not mean to touch is damage. Each test writes a file, runs the real command line and compares
the result with the original bytes plus exactly the intended replacement, computed byte-wise here.
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import amp_clipfix.output.write as write_module
from amp_clipfix.cli import main
from amp_clipfix.output.report import is_error_line
from amp_clipfix.output.write import TEMP_SUFFIX

# A Fabric program with the finding: fp16 AMP, a fused AdamW and a clip call. `{I}` is one indent.
# The clip passes error_if_nonfinite=False, so ACF007 has nothing to add: one edit per strategy.
BODY = [
    b"import lightning as L",
    b"import torch",
    b"",
    b"",
    b"def main():",
    b'{I}fabric = L.Fabric(precision="16-mixed")',
    b"{I}model = torch.nn.Linear(2, 2)",
    b"{I}optimizer = torch.optim.AdamW(model.parameters(), fused=True)",
    b"{I}fabric.clip_gradients(model, optimizer, max_norm=1.0, error_if_nonfinite=False)",
]


@dataclass(frozen=True)
class Edit:
    """The one replacement a strategy makes in BODY, as bytes."""

    strategy: str
    old: bytes
    new: bytes


UNFUSE = Edit("unfuse", b"fused=True", b"fused=False")
BF16 = Edit("bf16", b'precision="16-mixed"', b'precision="bf16-mixed"')
EDITS = [UNFUSE, BF16]


def program(
    newlines: Iterable[bytes] = (b"\n",),
    indent: bytes = b"    ",
    header: Iterable[bytes] = (),
    trailing_newline: bool = True,
    replace: dict[bytes, bytes] | None = None,
) -> bytes:
    """BODY after `header` lines, with line endings taken in turn from `newlines`."""
    lines = [*header, *(line.replace(b"{I}", indent) for line in BODY)]
    for old, new in (replace or {}).items():
        lines = [line.replace(old, new) for line in lines]
    endings = list(newlines)
    out = b""
    for index, line in enumerate(lines):
        last = index == len(lines) - 1
        out += line + (b"" if last and not trailing_newline else endings[index % len(endings)])
    return out


def expected_after(original: bytes, edit: Edit) -> bytes:
    """The original with exactly one occurrence of the edit's text replaced."""
    assert original.count(edit.old) == 1
    return original.replace(edit.old, edit.new)


def apply(*args: str) -> Result:
    return CliRunner().invoke(main, ["apply", "--yes", *args], catch_exceptions=False)


def leftover_temp_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.name.endswith(TEMP_SUFFIX))


def error_lines(result: Result) -> list[str]:
    return [line for line in result.output.splitlines() if is_error_line(line)]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project folder (a pyproject.toml marks the root), the current folder."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_bytes(b"[project]\nname = 'p'\n")
    monkeypatch.chdir(root)
    return root


CASES = {
    "lf": program(),
    "crlf": program([b"\r\n"]),
    "cr": program([b"\r"]),
    "cr_no_trailing_newline": program([b"\r"], trailing_newline=False),
    "mixed": program([b"\r\n", b"\n", b"\r"]),
    "mixed_lf_first": program([b"\n", b"\r", b"\r\n", b"\r\n"]),
    "bom": codecs.BOM_UTF8 + program(replace={b"Linear(2, 2)": "Linear(2, 2)  # café €".encode()}),
    "bom_crlf": codecs.BOM_UTF8 + program([b"\r\n"]),
    "latin1_cookie": program(
        header=[b"# -*- coding: latin-1 -*-", b"# caf\xe9 na\xefve \xa9"],
        replace={b"Linear(2, 2)": b'Linear(2, 2); name = "\xe9t\xe9"  # \xfc'},
    ),
    "latin1_cookie_with_accent_on_cookie_line": program(
        header=[b"# vim: set fileencoding=latin-1 : r\xe9sum\xe9"],
        replace={b"Linear(2, 2)": b'Linear(2, 2); name = "\xe9"'},
    ),
    "cp1252_cookie": program(
        header=[b"#!/usr/bin/env python", b"# coding: cp1252", b"# \x80 \x93quoted\x94 \x85"],
        replace={b"Linear(2, 2)": b'Linear(2, 2); price = "\x80 5"  # \x91x\x92'},
    ),
    "utf8_without_bom": program(
        header=["# résumé — 漢字 🚀".encode()],
        replace={b"Linear(2, 2)": 'Linear(2, 2); s = "ü😀"'.encode()},
    ),
    "backslash_continuation": program(
        replace={b"parameters(), fused=True)": b"parameters(), \\\n        fused=True)"}
    ),
    "tabs": program(indent=b"\t"),
    "tabs_and_spaces_in_comments": program(
        indent=b"\t", replace={b"Linear(2, 2)": b"Linear(2, 2)\t# \t tab  \t"}
    ),
    "no_trailing_newline": program(trailing_newline=False),
    "no_trailing_newline_crlf": program([b"\r\n"], trailing_newline=False),
    "trailing_whitespace": program(replace={b"Linear(2, 2)": b"Linear(2, 2)   \t"}),
    "form_feed_and_blank_lines": program(header=[b"\x0c", b"", b"   ", b"# top"]),
    "long_comment_line": program(header=[b"# " + b"x" * 10_000]),
    "long_string_line": program(header=[b'PAD = "' + b"y" * 10_000 + b'"']),
    "long_edited_line": program(
        replace={b"fused=True)": b"fused=True)  # " + b"z" * 10_000},
    ),
}


def case_params(names: Iterable[str]) -> list:
    # libcst drops the bare "\r" that ends a last line (`parse_module("x = 1\r").code`); the
    # cases ending so prove the pipeline gives it back.
    return [pytest.param(name, id=name) for name in names]


@pytest.mark.parametrize("edit", EDITS, ids=[edit.strategy for edit in EDITS])
@pytest.mark.parametrize("case", case_params(sorted(CASES)))
def test_only_the_edit_changes(project: Path, case: str, edit: Edit) -> None:
    original = CASES[case]
    path = project / "train.py"
    path.write_bytes(original)

    result = apply("--strategy", edit.strategy, "train.py")

    assert result.exit_code == 0, result.output
    assert path.read_bytes() == expected_after(original, edit)
    assert leftover_temp_files(project) == []


STDIN_CASES = [
    "crlf",
    "cr",
    "mixed_lf_first",
    "bom",
    "latin1_cookie",
    "cp1252_cookie",
    "utf8_without_bom",
    "tabs",
    "no_trailing_newline",
    "long_edited_line",
]


@pytest.mark.parametrize("case", case_params(STDIN_CASES))
def test_stdin_gives_back_the_same_bytes_but_the_edit(case: str) -> None:
    """`apply -` prints the fixed file on stdout: the same promise through another path."""
    original = CASES[case]

    result = CliRunner().invoke(
        main, ["apply", "--strategy", "unfuse", "-"], input=original, catch_exceptions=False
    )

    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == expected_after(original, UNFUSE)


def test_mixed_newlines_really_are_mixed() -> None:
    """Guard against the case table silently losing its point."""
    data = CASES["mixed"]
    assert (
        b"\r\n" in data
        and b"\r" in data.replace(b"\r\n", b"")
        and b"\n" in data.replace(b"\r\n", b"")
    )


@pytest.mark.parametrize(
    ("case", "newline", "indent"),
    [
        ("lf", b"\n", b"    "),
        ("crlf", b"\r\n", b"    "),
        ("cr", b"\r", b"    "),
        ("cr_no_trailing_newline", b"\r", b"    "),
        ("tabs", b"\n", b"\t"),
        ("bom_crlf", b"\r\n", b"    "),
        ("latin1_cookie", b"\n", b"    "),
        ("cp1252_cookie", b"\n", b"    "),
        ("no_trailing_newline_crlf", b"\r\n", b"    "),
    ],
)
def test_guard_only_inserts_lines_in_the_files_style(
    project: Path, case: str, newline: bytes, indent: bytes
) -> None:
    """The guard adds a helper and an `if`; every original line stays, and the new lines use
    the file's newline and indent, so editors and linters see no stray style."""
    original = CASES[case]
    path = project / "train.py"
    path.write_bytes(original)

    result = apply("--strategy", "guard", "train.py")

    assert result.exit_code == 0, result.output
    after = path.read_bytes()
    clip = (
        indent + b"fabric.clip_gradients(model, optimizer, max_norm=1.0, error_if_nonfinite=False)"
    )
    guarded = after.replace(indent + clip, clip)
    old_lines = original.split(newline)
    new_lines = guarded.split(newline)
    # Every original line survives, in order (the clip line only gained one indent).
    position = 0
    for line in old_lines:
        position = new_lines.index(line, position) + 1
    added = list(new_lines)
    for line in old_lines:
        added.remove(line)
    assert any(b"def can_clip_gradients" in line for line in added)
    assert any(line.strip().startswith(b"if can_clip_gradients(") for line in added)
    foreign = b"\n" if newline == b"\r" else b"\r"
    assert foreign not in after.replace(newline, b"")
    for line in added:
        stripped = line.lstrip(b" \t")
        leading = line[: len(line) - len(stripped)]
        assert leading == indent * (len(leading) // len(indent)), line
    if original.startswith(codecs.BOM_UTF8):
        assert after.startswith(codecs.BOM_UTF8) and after.count(codecs.BOM_UTF8) == 1
    assert after.endswith(newline) == original.endswith(newline)


def test_executable_bit_kept(project: Path) -> None:
    original = program(header=[b"#!/usr/bin/env python3"])
    path = project / "train.py"
    path.write_bytes(original)
    path.chmod(0o755)

    result = apply("--strategy", "unfuse", "train.py")

    assert result.exit_code == 0, result.output
    assert path.read_bytes() == expected_after(original, UNFUSE)
    assert stat.S_IMODE(path.stat().st_mode) == 0o755


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o2755])  # 0o444 is refused: test_hostile
def test_other_modes_kept(project: Path, mode: int) -> None:
    original = program()
    path = project / "train.py"
    path.write_bytes(original)
    path.chmod(mode)

    result = apply("--strategy", "unfuse", "train.py")

    assert result.exit_code == 0, result.output
    assert path.read_bytes() == expected_after(original, UNFUSE)
    assert stat.S_IMODE(path.stat().st_mode) == mode


@pytest.mark.parametrize(
    "paths",
    [("src",), ("src/link.py",), ("src/link.py", "src/real/train.py"), ("src", "src/link.py")],
    ids=["folder", "link-named", "link-and-target-named", "folder-and-link"],
)
def test_symlink_inside_the_tree(project: Path, paths: tuple[str, ...]) -> None:
    """The link stays a link, the target gets the fix, and the file is processed once."""
    original = program()
    real = project / "src" / "real" / "train.py"
    real.parent.mkdir(parents=True)
    real.write_bytes(original)
    link = project / "src" / "link.py"
    link.symlink_to(Path("real") / "train.py")

    result = apply("--strategy", "unfuse", *paths)

    assert result.exit_code == 0, result.output
    assert link.is_symlink() and os.readlink(link) == os.path.join("real", "train.py")
    assert real.read_bytes() == expected_after(original, UNFUSE)
    assert "1 finding " in result.output
    assert "Fixed 1 file." in result.output
    assert result.output.count("+++ b/") == 1
    assert leftover_temp_files(project) == []


def test_symlinked_folder_is_not_walked_twice(project: Path) -> None:
    """A folder link (e.g. a compatibility alias) must not make the same file a second target."""
    original = program()
    real = project / "src" / "real" / "train.py"
    real.parent.mkdir(parents=True)
    real.write_bytes(original)
    (project / "src" / "alias").symlink_to("real", target_is_directory=True)

    result = apply("--strategy", "unfuse", ".")

    assert result.exit_code == 0, result.output
    assert real.read_bytes() == expected_after(original, UNFUSE)
    assert (project / "src" / "alias").is_symlink()
    assert "Fixed 1 file." in result.output


def outside_link(project: Path) -> tuple[Path, Path, bytes]:
    """`project/src/link.py` pointing at a file of another folder (not below the project)."""
    original = program()
    outside = project.parent / "elsewhere" / "train.py"
    outside.parent.mkdir()
    outside.write_bytes(original)
    link = project / "src" / "link.py"
    link.parent.mkdir()
    link.symlink_to(outside)
    return outside, link, original


def test_symlink_to_a_file_outside_the_tree_is_not_followed_by_the_walk(project: Path) -> None:
    outside, link, original = outside_link(project)
    (project / "src" / "ok.py").write_bytes(program())

    result = apply("--strategy", "unfuse", "src")

    assert result.exit_code == 0, result.output
    assert outside.read_bytes() == original
    assert link.is_symlink() and os.readlink(link) == str(outside)
    assert (project / "src" / "ok.py").read_bytes() == expected_after(program(), UNFUSE)
    assert "link.py" not in result.output


def test_symlink_to_a_file_outside_the_tree_named_explicitly_is_not_written(
    project: Path,
) -> None:
    outside, link, original = outside_link(project)

    result = apply("--strategy", "unfuse", "src/link.py")

    assert outside.read_bytes() == original
    assert link.is_symlink()
    assert "link.py" in result.output


def test_hard_link_inside_the_tree_is_fixed_in_both_names(project: Path) -> None:
    """Two names of one file: both end with the fix and nothing else.

    What happens today: each name is processed on its own (two findings, two writes), and the
    rename of the first write splits the pair into two separate files (st_nlink 2 -> 1).
    """
    original = program()
    first = project / "a.py"
    first.write_bytes(original)
    second = project / "b.py"
    os.link(first, second)

    result = apply("--strategy", "unfuse", ".")

    assert result.exit_code == 0, result.output
    assert first.read_bytes() == expected_after(original, UNFUSE)
    assert second.read_bytes() == expected_after(original, UNFUSE)
    assert leftover_temp_files(project) == []


def test_hard_link_inside_the_tree_is_processed_once_and_stays_linked(project: Path) -> None:
    original = program()
    first = project / "a.py"
    first.write_bytes(original)
    second = project / "b.py"
    os.link(first, second)

    result = apply("--strategy", "unfuse", ".")

    assert "1 finding " in result.output
    assert os.path.samefile(first, second)


def test_hard_link_to_a_file_outside_the_tree_is_not_written_through(project: Path) -> None:
    """The rename replaces the name inside the tree; the outside name keeps the old bytes."""
    original = program()
    outside = project.parent / "outside.py"
    outside.write_bytes(original)
    inside = project / "train.py"
    os.link(outside, inside)

    result = apply("--strategy", "unfuse", "train.py")

    assert result.exit_code == 0, result.output
    assert inside.read_bytes() == expected_after(original, UNFUSE)
    assert outside.read_bytes() == original
    assert outside.stat().st_nlink == 1


@pytest.mark.parametrize(
    "spelling",
    [
        ("train.py", "train.py"),
        ("train.py", "./train.py"),
        ("train.py", "{abs}"),
        ("train.py", "sub/../train.py"),
        (".", "train.py"),
    ],
    ids=["same", "dot-slash", "absolute", "dot-dot", "folder-and-file"],
)
def test_same_file_given_twice_is_processed_once(project: Path, spelling: tuple[str, str]) -> None:
    original = program()
    path = project / "train.py"
    path.write_bytes(original)
    (project / "sub").mkdir()
    args = [arg.replace("{abs}", str(path)) for arg in spelling]

    result = apply("--strategy", "unfuse", *args)

    assert result.exit_code == 0, result.output
    assert path.read_bytes() == expected_after(original, UNFUSE)
    assert "1 finding " in result.output
    assert "Fixed 1 file." in result.output
    assert result.output.count("+++ b/") == 1


def test_failed_rename_keeps_the_original_and_no_temp_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk at the last step: one error line, exit 2, and nothing half written."""
    original = program()
    path = project / "train.py"
    path.write_bytes(original)
    other = project / "other.py"
    other.write_bytes(original)

    def failing_replace(source: str, target: object) -> None:
        if Path(str(target)).name == "train.py":
            raise OSError(28, "No space left on device")
        real_replace(source, target)

    real_replace = os.replace
    monkeypatch.setattr(write_module.os, "replace", failing_replace)

    result = apply("--strategy", "unfuse", "train.py", "other.py")

    assert result.exit_code == 2
    assert path.read_bytes() == original
    assert other.read_bytes() == expected_after(original, UNFUSE)
    assert leftover_temp_files(project) == []
    assert error_lines(result) == ["train.py: error: cannot write: No space left on device"]
    assert "Traceback" not in result.output


def test_temp_file_that_cannot_be_created_keeps_the_original(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only folder (simulated: root may write anywhere) is one error line, exit 2."""
    original = program()
    path = project / "train.py"
    path.write_bytes(original)

    def no_temp_file(*args: object, **kwargs: object) -> tuple[int, str]:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(write_module.tempfile, "mkstemp", no_temp_file)

    result = apply("--strategy", "unfuse", "train.py")

    assert result.exit_code == 2
    assert path.read_bytes() == original
    assert error_lines(result) == ["train.py: error: cannot write: Permission denied"]


def test_failed_temp_write_keeps_the_original_and_no_temp_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = program()
    path = project / "train.py"
    path.write_bytes(original)

    def failing_fsync(descriptor: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(write_module.os, "fsync", failing_fsync)

    result = apply("--strategy", "unfuse", "train.py")

    assert result.exit_code == 2
    assert path.read_bytes() == original
    assert leftover_temp_files(project) == []
    assert error_lines(result) == ["train.py: error: cannot write: Input/output error"]


def test_file_changed_before_the_write_is_not_overwritten(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = program()
    path = project / "train.py"
    path.write_bytes(original)
    concurrent = original + b"# saved by an editor meanwhile\n"
    real_write_atomic = write_module.write_atomic

    def editor_saves_first(source: object, new_data: bytes, keep_hard_links: bool = False) -> None:
        path.write_bytes(concurrent)
        real_write_atomic(source, new_data, keep_hard_links)  # type: ignore[arg-type]

    monkeypatch.setattr(write_module, "write_atomic", editor_saves_first)

    result = apply("--strategy", "unfuse", "train.py")

    assert result.exit_code == 2
    assert path.read_bytes() == concurrent
    assert error_lines(result) == [
        "train.py: error: changed on disk since it was read; not written"
    ]
    assert leftover_temp_files(project) == []


def test_file_changed_while_the_temp_file_is_written_is_not_overwritten(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check right before the rename catches an edit made during the temp-file write."""
    original = program()
    path = project / "train.py"
    path.write_bytes(original)
    concurrent = b"# rewritten meanwhile\n"
    real_chmod = os.chmod

    def chmod_then_editor_saves(name: str, mode: int) -> None:
        real_chmod(name, mode)
        if name.endswith(TEMP_SUFFIX):
            path.write_bytes(concurrent)

    monkeypatch.setattr(write_module.os, "chmod", chmod_then_editor_saves)

    result = apply("--strategy", "unfuse", "train.py")

    assert result.exit_code == 2
    assert path.read_bytes() == concurrent
    assert len(error_lines(result)) == 1 and "changed on disk" in error_lines(result)[0]
    assert leftover_temp_files(project) == []


def test_file_deleted_before_the_write_is_reported(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file removed meanwhile is not recreated."""
    path = project / "train.py"
    path.write_bytes(program())
    real_write_atomic = write_module.write_atomic

    def removed_first(source: object, new_data: bytes, keep_hard_links: bool = False) -> None:
        path.unlink()
        real_write_atomic(source, new_data, keep_hard_links)  # type: ignore[arg-type]

    monkeypatch.setattr(write_module, "write_atomic", removed_first)

    result = apply("--strategy", "unfuse", "train.py")

    assert result.exit_code == 2
    assert not path.exists()
    assert len(error_lines(result)) == 1
    assert leftover_temp_files(project) == []
