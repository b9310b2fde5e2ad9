"""A fix's own source text (the unscale helper, the override it adds to a module) is parsed
once per text and parser settings, not once per fixed file: a project with the same fix in
many files spent most of its fixing time parsing the same helper again. Each file still gets
the helper in its own newline and the override in its own layout, as when fixed alone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import libcst as cst
import pytest
from piped import amp_clipfix

from amp_clipfix.analysis.names import MODULE_UNSCALE_HELPER
from amp_clipfix.fixes.codemods import insert

MODULE = """import lightning as L
import torch


class Module_{i}(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3, fused=True)
"""
TRAIN = """import lightning as L

trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
"""
HELPER = f"def {MODULE_UNSCALE_HELPER}("  # how the inserted helper's definition starts


def write(root: Path, newlines: dict[str, str]) -> None:
    """`train.py` and one module per name, each written with the newline it is given."""
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_bytes(b"")
    (root / "train.py").write_bytes(TRAIN.encode())
    for name, newline in newlines.items():
        text = MODULE.format(i=name.removesuffix(".py")).replace("\n", newline)
        (root / "pkg" / name).write_bytes(text.encode())


def fixed(root: Path) -> dict[str, bytes]:
    """Each module's bytes after `apply --yes`, which must exit 0 having fixed them all."""
    run = amp_clipfix(root, "apply", "--yes", "--no-cache", ".")
    assert run.code == 0, run.stdout + run.stderr
    return {path.name: path.read_bytes() for path in sorted((root / "pkg").glob("m*.py"))}


@pytest.fixture
def helper_parses(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The texts libcst's module parser is given that define the unscale helper, counted from
    an empty cache of parsed fix texts."""
    parsed: list[str] = []
    real = cst.parse_module

    def counted(source: str, *arguments: object, **keywords: object) -> cst.Module:
        if isinstance(source, str) and source.startswith(HELPER):
            parsed.append(source)
        return real(source, *arguments, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr(cst, "parse_module", counted)
    insert.parsed_statement.cache_clear()
    yield parsed
    insert.parsed_statement.cache_clear()


def test_the_helper_is_parsed_once_for_many_fixed_files(
    tmp_path: Path, helper_parses: list[str]
) -> None:
    write(tmp_path, {f"m{i}.py": "\n" for i in range(4)})
    after = fixed(tmp_path)
    assert [text.count(HELPER.encode()) for text in after.values()] == [1, 1, 1, 1]
    assert len(helper_parses) == 1


def test_each_file_keeps_its_own_newline_whatever_was_fixed_before(
    tmp_path: Path, helper_parses: list[str]
) -> None:
    """A CRLF module fixed after LF ones, and an LF one after it, each as it is fixed alone."""
    newlines = {"m0.py": "\n", "m1.py": "\r\n", "m2.py": "\n", "m3.py": "\r\n"}
    write(tmp_path / "together", newlines)
    together = fixed(tmp_path / "together")
    for name, newline in newlines.items():
        write(tmp_path / name, {name: newline})
        insert.parsed_statement.cache_clear()
        assert fixed(tmp_path / name) == {name: together[name]}
    for name, newline in newlines.items():
        lines = together[name].split(b"\n")[:-1]
        assert all(line.endswith(b"\r") == (newline == "\r\n") for line in lines), name
    assert len({text for text in helper_parses}) == 2  # once per newline
