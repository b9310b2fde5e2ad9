"""write_atomic must replace the whole file or nothing, and keep its mode and links."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from spied import first_arguments

import amp_clipfix.output.write as write_module
from amp_clipfix.output.write import WriteError, write_atomic
from amp_clipfix.sources.text import read_source

ORIGINAL = b"import torch\r\nx = 1\r\n"
EDITED = b"import torch\r\nx = 2\r\n"


def make_file(folder: Path, data: bytes = ORIGINAL, name: str = "module.py") -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def leftover_temp_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.amp-clipfix.tmp"))


def test_replaces_content(tmp_path: Path) -> None:
    path = make_file(tmp_path)

    write_atomic(read_source(path), EDITED)

    assert path.read_bytes() == EDITED
    assert leftover_temp_files(tmp_path) == []


def test_keeps_mode(tmp_path: Path) -> None:
    path = make_file(tmp_path)
    path.chmod(0o755)

    write_atomic(read_source(path), EDITED)

    assert stat.S_IMODE(path.stat().st_mode) == 0o755


def test_keeps_restrictive_mode(tmp_path: Path) -> None:
    path = make_file(tmp_path)
    path.chmod(0o640)

    write_atomic(read_source(path), EDITED)

    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_writes_through_symlink_and_keeps_the_link(tmp_path: Path) -> None:
    real_folder = tmp_path / "real"
    real_folder.mkdir()
    target = make_file(real_folder)
    target.chmod(0o755)
    link = tmp_path / "link.py"
    link.symlink_to(target)

    write_atomic(read_source(link), EDITED)

    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert target.read_bytes() == EDITED
    assert stat.S_IMODE(target.stat().st_mode) == 0o755
    assert leftover_temp_files(tmp_path) == []
    assert leftover_temp_files(real_folder) == []


def test_refuses_when_changed_on_disk(tmp_path: Path) -> None:
    path = make_file(tmp_path)
    source = read_source(path)
    path.write_bytes(b"x = 'someone else'\n")

    with pytest.raises(WriteError) as caught:
        write_atomic(source, EDITED)

    assert str(caught.value) == "changed on disk since it was read; not written"
    assert path.read_bytes() == b"x = 'someone else'\n"
    assert leftover_temp_files(tmp_path) == []


def test_refuses_when_deleted_since_read(tmp_path: Path) -> None:
    path = make_file(tmp_path)
    source = read_source(path)
    path.unlink()

    with pytest.raises(WriteError, match="^cannot re-read before writing: "):
        write_atomic(source, EDITED)

    assert not path.exists()


@pytest.mark.parametrize("failing_call", ["replace", "fsync", "chmod"])
def test_failure_midway_keeps_original(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing_call: str
) -> None:
    path = make_file(tmp_path)
    source = read_source(path)

    def fail(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write_module.os, failing_call, fail)

    with pytest.raises(WriteError) as caught:
        write_atomic(source, EDITED)

    assert str(caught.value) == "cannot write: No space left on device"
    assert caught.value.__cause__ is None
    monkeypatch.undo()
    assert path.read_bytes() == ORIGINAL
    assert leftover_temp_files(tmp_path) == []
    assert [p.name for p in tmp_path.iterdir()] == ["module.py"]


def test_failure_without_strerror_is_still_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_file(tmp_path)
    source = read_source(path)

    def fail(*args: object) -> None:
        raise OSError("disk\nvanished")

    monkeypatch.setattr(write_module.os, "replace", fail)

    with pytest.raises(WriteError) as caught:
        write_atomic(source, EDITED)

    assert str(caught.value) == "cannot write: disk vanished"
    monkeypatch.undo()
    assert path.read_bytes() == ORIGINAL
    assert leftover_temp_files(tmp_path) == []


def test_interrupt_midway_removes_temp_and_propagates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_file(tmp_path)
    source = read_source(path)

    def interrupt(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(write_module.os, "replace", interrupt)

    with pytest.raises(KeyboardInterrupt):
        write_atomic(source, EDITED)

    monkeypatch.undo()
    assert path.read_bytes() == ORIGINAL
    assert leftover_temp_files(tmp_path) == []


def test_folder_fsync_failure_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = make_file(tmp_path)
    source = read_source(path)
    real_fsync = os.fsync

    def fsync_files_only(descriptor: int) -> None:
        if stat.S_ISDIR(os.fstat(descriptor).st_mode):
            raise OSError(22, "Invalid argument")
        real_fsync(descriptor)

    monkeypatch.setattr(write_module.os, "fsync", fsync_files_only)

    write_atomic(source, EDITED)

    assert path.read_bytes() == EDITED


def test_temp_file_is_created_in_the_same_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = make_file(tmp_path)
    source = read_source(path)
    seen = first_arguments(monkeypatch, write_module.os, "replace")

    write_atomic(source, EDITED)

    (temp_name,) = seen
    assert Path(temp_name).parent == tmp_path
    assert Path(temp_name).name.startswith(".module.py.")
    assert temp_name.endswith(".amp-clipfix.tmp")


def test_write_error_message_is_one_line() -> None:
    assert str(WriteError("a\nb")) == "a b"


# --- Round two (issue 28): never through a link out of the project; all or nothing -----------


def test_a_file_reached_through_a_link_out_of_its_project_is_not_written(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    path = make_file(outside)
    root = tmp_path / "project"
    root.mkdir()
    (root / "linked").symlink_to(outside, target_is_directory=True)
    source = read_source(root / "linked" / "module.py")
    with pytest.raises(WriteError, match="a link leads outside the project; not written"):
        write_atomic(source, EDITED, root=root)
    with pytest.raises(WriteError, match="a link leads outside the project; not written"):
        write_module.create_atomic(root / "linked" / "new.py", EDITED, root=root)
    from amp_clipfix.results import FileChange

    change = FileChange(source, EDITED, ())
    written, failed = write_module.write_all([change], {source.path: root})
    assert written == [] and [error.message for error in failed] == [
        "a link leads outside the project; not written"
    ]
    assert path.read_bytes() == ORIGINAL and not (outside / "new.py").exists()
    write_atomic(read_source(path), EDITED, root=outside)  # inside its own project: written
    assert path.read_bytes() == EDITED


def test_write_all_writes_what_others_need_first_and_nothing_that_needs_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from amp_clipfix.results import FileChange

    monkeypatch.chdir(tmp_path)
    helper = make_file(tmp_path, b"# helpers\n", "helpers.py")
    helper.chmod(0o444)
    user = make_file(tmp_path, ORIGINAL, "user.py")
    alone = make_file(tmp_path, ORIGINAL, "alone.py")
    changes = [
        FileChange(read_source(alone), EDITED, ()),
        FileChange(read_source(user), EDITED, (), requires=(helper,)),
        FileChange(read_source(helper), b"# helpers\ndef h(): ...\n", ()),
    ]
    written, failed = write_module.write_all(changes, {p: tmp_path for p in (helper, user, alone)})
    assert [change.source.path for change in written] == [alone]
    assert [(error.path, error.message) for error in failed] == [
        (helper, "read-only file (mode 0444); not written"),
        (user, "not written: it needs helpers.py, which was not written"),
    ]
    assert user.read_bytes() == ORIGINAL and alone.read_bytes() == EDITED


def test_a_patch_is_never_written_through_a_link(tmp_path: Path) -> None:
    target = make_file(tmp_path, b"keep\n", "target.txt")
    link = tmp_path / "x.patch"
    link.symlink_to(target)
    with pytest.raises(WriteError, match="is a symbolic link; not written through"):
        write_module.write_own_file(link, b"patch\n")
    assert target.read_bytes() == b"keep\n" and link.is_symlink()
    own = tmp_path / "y.patch"
    write_module.write_own_file(own, b"one\n")
    write_module.write_own_file(own, b"two\n")
    assert own.read_bytes() == b"two\n" and leftover_temp_files(tmp_path) == []
