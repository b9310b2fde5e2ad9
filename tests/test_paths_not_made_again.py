"""A path the run holds is not made again from its parts (pathlib parses them, then finds the
new path's text and hash by raising an AttributeError once each): `library_files` asks a
folder's names of its text, `decode_source` keeps the Path it is given."""

from __future__ import annotations

from pathlib import Path

import pytest

from amp_clipfix import paths
from amp_clipfix.paths import library_files
from amp_clipfix.sources.text import decode_source, takes_coding_cookie


def test_folders_named_like_no_library_make_no_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = [tmp_path / f"pkg{n % 10}" / "sub" / f"m{n}.py" for n in range(50)]
    files += [tmp_path / "vendor" / "torch" / "nn" / "x.py", tmp_path / "pkg0" / "__init__.py"]
    made: list[tuple[object, ...]] = []

    def counted(*parts: object) -> Path:
        made.append(parts)
        return Path(*parts)  # type: ignore[arg-type]

    monkeypatch.setattr(paths, "Path", counted)
    found = library_files(tmp_path, files)
    assert made == [(str(tmp_path / "vendor" / "torch" / "nn"), "__init__.py")]  # one folder
    monkeypatch.undo()
    assert found == library_files(tmp_path, files)  # the same answer as with a Path a folder


def test_a_decoded_source_keeps_the_path_it_is_given(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    source = decode_source(path, b"# -*- coding: latin-1 -*-\nx = '\xe9'\n")
    assert source.path is path and source.text.endswith("x = '\xe9'\n")
    assert decode_source(str(path), b"x = 1\n").path == path  # type: ignore[arg-type]
    assert [takes_coding_cookie(Path(name)) for name in ("a.py", "b.yaml", "c.ipynb")] == [
        True,
        False,
        False,
    ]
