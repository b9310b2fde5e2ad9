"""What a run holds of each file's text is held once: a summary's line offsets take 4 bytes a
line (not 8), and the rules' text of a word-holding file is the file's own bytes object when
it is that file's UTF-8 (not a second copy made by encoding the decoded document). Checked by
identity and by what a run reports, not by sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_memory_release import FILES, collector_off, project

from amp_clipfix import pipeline
from amp_clipfix.analysis.summary import TextLines
from amp_clipfix.models import Strategy
from amp_clipfix.pipeline import Options, run
from amp_clipfix.project.version import DEFAULT_TARGET


@pytest.mark.parametrize(
    "data", [b"", b"a\nb", b"a\r\nb\r\n", b"a\rb\n\nc", b"x = 1\n" * 1000, "é\n".encode()]
)
def test_text_lines_take_four_bytes_a_line(data: bytes) -> None:
    lines = TextLines(data)
    assert list(lines) == data.splitlines()
    assert lines.starts.itemsize == lines.ends.itemsize == 4


def test_word_files_text_is_the_files_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rules' search reads each word file's text; a file whose document is its bytes
    gives them as read (the same object), one whose document differs (a UTF-8 signature,
    which the reader drops) the document's text, and the findings are the same as ever
    (ACF006 through the loop, ACF002 through the factory)."""
    folder = project(tmp_path / "p")
    odd = folder / "odd.py"
    odd.write_bytes(b"\xef\xbb\xbfimport torch\ntorch.nn.utils.clip_grad_norm_([], 1.0)\n")
    seen: dict[str, tuple[bool, bytes | None]] = {}
    findings = pipeline.guarded_findings

    def watched(collection, files, target, chosen, facts, root):  # noqa: ANN001, ANN202
        found = findings(collection, files, target, chosen, facts, root)
        for path in sorted(collection.contents):
            text = facts.files.text(path)
            seen[path.name] = (text is collection.contents[path], text)
        return found

    monkeypatch.setattr(pipeline, "guarded_findings", watched)
    with collector_off():
        result = run([folder], Options(Strategy.AUTO, DEFAULT_TARGET, with_edits=True))
    assert [finding.code for finding in result.findings] == ["ACF006", "ACF002"]
    for name in FILES:
        assert seen[name] == (True, (folder / name).read_bytes())
    assert seen["odd.py"][0] is False
    assert seen["odd.py"][1] == b"import torch\ntorch.nn.utils.clip_grad_norm_([], 1.0)\n"
