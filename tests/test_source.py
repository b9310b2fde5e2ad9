"""read_source/encode_text must give back exactly the bytes read, or refuse with one line."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from amp_clipfix import observed
from amp_clipfix.sources.text import SourceError, SourceFile, encode_text, read_source

ROUND_TRIP_CASES = {
    "crlf": b"import torch\r\n\r\nx = 1\r\n",
    "cr": b"import torch\r\rx = 1\r",
    "mixed": b"a = 1\r\nb = 2\nc = 3\rd = 4\n",
    "tabs": b"def f():\n\treturn 1\t# tab\n",
    "no_final_newline": b"x = 1\ny = 2",
    "empty": b"",
    "utf8_non_ascii": "s = 'caf\u00e9 \u2603'\n".encode(),
    "utf8_bom_crlf": codecs.BOM_UTF8 + "s = '\u00e9'\r\n".encode(),
    "bom_only": codecs.BOM_UTF8,
    "latin1_cookie": b"# -*- coding: latin-1 -*-\ns = '\xe9\xe8'\n",
    "cp1252_cookie": b"# coding: cp1252\r\ns = '\x80 \x93quoted\x94'\r\n",
    "cookie_second_line": b"#!/usr/bin/env python\n# coding=latin-1\ns = '\xff'\n",
    "cookie_line_with_latin1_bytes": b"# coding: latin-1  -- caf\xe9\ns = '\xe9'\n",
    "cookie_cr_only": b"# coding: latin-1\rs = '\xe9'\r",
    "bom_with_utf8_cookie": codecs.BOM_UTF8 + b"# coding: utf-8\nx = 1\n",
}


def write_file(tmp_path: Path, data: bytes, name: str = "module.py") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("data", ROUND_TRIP_CASES.values(), ids=ROUND_TRIP_CASES.keys())
def test_round_trip_keeps_every_byte(tmp_path: Path, data: bytes) -> None:
    source = read_source(write_file(tmp_path, data))

    assert source.data == data
    assert encode_text(source, source.text) == data


def test_newlines_are_not_translated(tmp_path: Path) -> None:
    source = read_source(write_file(tmp_path, b"a\r\nb\rc\n"))

    assert source.text == "a\r\nb\rc\n"


def test_bom_is_remembered_and_stripped_from_text(tmp_path: Path) -> None:
    source = read_source(write_file(tmp_path, codecs.BOM_UTF8 + b"x = 1\n"))

    assert source.bom is True
    assert source.encoding == "utf-8"
    assert source.text == "x = 1\n"
    assert encode_text(source, "x = 2\n") == codecs.BOM_UTF8 + b"x = 2\n"


def test_cookie_selects_the_codec(tmp_path: Path) -> None:
    source = read_source(write_file(tmp_path, b"# coding: cp1252\ns = '\x80'\n"))

    assert source.bom is False
    assert codecs.lookup(source.encoding).name == "cp1252"
    assert "\u20ac" in source.text
    assert encode_text(source, source.text.replace("\u20ac", "\u2022")).endswith(b"'\x95'\n")


def test_default_encoding_is_utf8(tmp_path: Path) -> None:
    source = read_source(write_file(tmp_path, b"x = 1\n"))

    assert source.encoding == "utf-8"
    assert source.bom is False
    assert source.path == tmp_path / "module.py"


def test_source_file_is_frozen(tmp_path: Path) -> None:
    source = read_source(write_file(tmp_path, b"x = 1\n"))

    with pytest.raises(AttributeError):
        source.text = "y"  # type: ignore[misc]
    assert isinstance(source, SourceFile)


def test_undecodable_bytes_report_the_offset(tmp_path: Path) -> None:
    path = write_file(tmp_path, b"x = 1\ns = '\xff\xfe'\n")

    with pytest.raises(SourceError) as caught:
        read_source(path)

    assert str(caught.value) == "cannot decode as utf-8 at byte 11"


def test_undecodable_offset_counts_the_bom(tmp_path: Path) -> None:
    path = write_file(tmp_path, codecs.BOM_UTF8 + b"x = '\xff'\n")

    with pytest.raises(SourceError, match="at byte 8$"):
        read_source(path)


def test_undecodable_first_line_without_cookie(tmp_path: Path) -> None:
    path = write_file(tmp_path, b"# caf\xe9\nx = 1\n")

    with pytest.raises(SourceError) as caught:
        read_source(path)

    assert str(caught.value) == "cannot decode as utf-8 at byte 5"


def test_nul_bytes_mean_binary(tmp_path: Path) -> None:
    path = write_file(tmp_path, b"x = 1\n\x00\x01\x02")

    with pytest.raises(SourceError) as caught:
        read_source(path)

    assert str(caught.value) == "binary file (contains NUL bytes)"


@pytest.mark.parametrize(
    "data",
    [
        b"# -*- coding: no-such-codec -*-\nx = 1\n",
        b"# coding: no-such-codec  caf\xe9\nx = 1\n",
        codecs.BOM_UTF8 + b"# coding: latin-1\nx = 1\n",
    ],
    ids=["unknown_codec", "unknown_codec_non_utf8_line", "bom_disagrees_with_cookie"],
)
def test_bad_cookie_is_refused(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(SourceError) as caught:
        read_source(write_file(tmp_path, data))

    assert str(caught.value).startswith("bad encoding declaration: ")
    assert "\n" not in str(caught.value)


def test_codec_that_cannot_round_trip_is_refused(tmp_path: Path) -> None:
    # utf-16 would add its own BOM when encoding, so writing back would change the file.
    path = write_file(tmp_path, b"# coding: utf-16\n#\n")

    with pytest.raises(SourceError, match="utf-16"):
        read_source(path)


def test_non_text_codec_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="not a text encoding"):
        read_source(write_file(tmp_path, b"# coding: rot13\nx = 1\n"))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(SourceError) as caught:
        read_source(tmp_path / "absent.py")

    assert str(caught.value) == "cannot read: No such file or directory"


def test_folder_is_not_readable_as_source(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="^cannot read: "):
        read_source(tmp_path)


def test_unreadable_file_by_permissions(ordinary_user) -> None:
    with ordinary_user as folder:
        path = write_file(folder, b"x = 1\n")
        path.chmod(0)
        with pytest.raises(SourceError) as caught:
            read_source(path)

    assert str(caught.value) == "cannot read: Permission denied"


def test_unreadable_file_simulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_file(tmp_path, b"x = 1\n")

    def refuse(path: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(observed, "read_bytes", refuse)

    with pytest.raises(SourceError) as caught:
        read_source(path)

    assert str(caught.value) == "cannot read: Permission denied"
    assert caught.value.__cause__ is None


def test_unencodable_character_is_refused(tmp_path: Path) -> None:
    source = read_source(write_file(tmp_path, b"# coding: latin-1\r\nx = 1\r\n"))

    with pytest.raises(SourceError) as caught:
        encode_text(source, source.text + "s = '\u20ac'\r\n")

    assert str(caught.value) == "cannot encode '\u20ac' as iso8859-1 (line 3)"


def test_error_message_is_one_line() -> None:
    assert str(SourceError("first\nsecond")) == "first second"
