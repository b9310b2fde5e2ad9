"""A large module is parsed in pieces and read without the data no code names (issue 17): the
sites, the errors and the values the resolution follows are those of a whole parse."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix.analysis.collect import collect_sites
from amp_clipfix.analysis.parse import LargeModule, parse_module
from amp_clipfix.analysis.summary import summarise
from amp_clipfix.cli import main

FIXTURES = Path(__file__).parent.parent / "fixtures"
PATH = Path("train.py")

# Column-0 lines that are no statement starts: inside strings, brackets, continued lines and
# clauses of compound statements. A piece that ended before one of them would read wrong sites.
TRICKY = '''\
import lightning as L
import torch

DOC = """
opt = torch.optim.AdamW(p, fused=True)
trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
"""
CONFIG = dict(
lr=1e-3,
fused=True,
)
x = 1 + \\
2
if x:
    opt = torch.optim.AdamW(p, fused=True)
else:
    opt = torch.optim.SGD(p)
try:
    pass
except ValueError:
    pass
finally:
    y = 2
@staticmethod
def build(p):
    return torch.optim.Adam(p, fused=CONFIG["fused"])
LABEL = "a"; trainer = L.Trainer(precision="16-mixed", gradient_clip_val=x)
# a comment in column 0
PLAIN = f"""
{DOC}
clip = 1.0
"""
'''


def python_texts() -> list[tuple[str, str]]:
    texts = [("tricky", TRICKY)]
    for path in sorted(FIXTURES.glob("*/before/**/*.py")):
        texts.append((str(path.relative_to(FIXTURES)), path.read_text(encoding="utf-8")))
    return texts


@pytest.mark.parametrize("piece", [1, 97])
def test_pieces_give_the_sites_of_a_whole_parse(piece: int) -> None:
    for name, text in python_texts():
        whole = collect_sites(PATH, text, ast.parse(text))
        pieces = collect_sites(PATH, text, parse_module(text, large=0, piece=piece))
        assert pieces == whole, name


def test_every_piece_size_reads_the_tricky_lines_as_a_whole_parse_does() -> None:
    """Each size ends pieces at other lines: right before `else:`, inside `DOC`, ..."""
    whole = collect_sites(PATH, TRICKY, ast.parse(TRICKY))
    lines = {site.span.line for site in whole.sites}
    assert lines.isdisjoint({5, 6}) and {15, 26, 27} <= lines  # not the code quoted in DOC
    for piece in range(1, len(TRICKY) + 1, 3):
        assert collect_sites(PATH, TRICKY, parse_module(TRICKY, large=0, piece=piece)) == whole


def test_a_syntax_error_is_reported_where_a_whole_parse_reports_it() -> None:
    text = "value = 1\n" * 500 + "def broken(:\n    pass\n" + "other = 2\n" * 500
    with pytest.raises(SyntaxError) as whole:
        ast.parse(text)
    with pytest.raises(SyntaxError) as pieces:
        parse_module(text, large=0, piece=100)
    assert (pieces.value.msg, pieces.value.lineno) == (whole.value.msg, whole.value.lineno)
    assert pieces.value.lineno == 501


def test_data_no_code_names_is_left_out_and_found_again_by_name() -> None:
    text = "USED = True\nUNUSED = 'x'\nLATER = [1,\n  2]\ndef f():\n    return USED\n"
    module = parse_module(text, large=0)
    assert isinstance(module, LargeModule)
    assert [type(s).__name__ for s in module.body] == ["Assign", "FunctionDef"]
    assert sorted(module.pruned) == ["LATER", "UNUSED"]
    summary = summarise(Path("."), Path("m.py"), text, module)
    assert summary is not None
    assert "LATER" in summary.top and "MISSING" not in summary.top
    (later,) = summary.top["LATER"]
    assert isinstance(later, ast.Assign)
    assert (later.lineno, later.end_lineno) == (3, 4)
    assert ast.literal_eval(later.value) == [1, 2]


def large_constants(tmp_path: Path) -> None:
    """A package whose 1.2 MB module of data holds the run's settings, used by train.py."""

    def data(start: int) -> str:
        lines = (
            f"value_{i:06d} = {i}\nlabel_{i:06d} = 'x{i}'\n" for i in range(start, start + 20_000)
        )
        return "".join(lines)

    (tmp_path / "settings.py").write_text(
        data(0) + 'PRECISION = "16-mixed"\nCLIP = 1.0\nFUSED = True\n' + data(20_000)
    )
    (tmp_path / "train.py").write_text(
        "import lightning as L\nimport torch\n"
        "from settings import CLIP, FUSED, PRECISION\n\n"
        "class Model(L.LightningModule):\n"
        "    def configure_optimizers(self):\n"
        "        return torch.optim.AdamW(self.parameters(), fused=FUSED)\n\n"
        "trainer = L.Trainer(precision=PRECISION, gradient_clip_val=CLIP)\n"
        "trainer.fit(Model())\n"
    )


def test_constants_of_a_large_module_are_followed_from_another_module(tmp_path: Path) -> None:
    large_constants(tmp_path)
    assert (tmp_path / "settings.py").stat().st_size > 1_000_000
    result = CliRunner().invoke(main, ["check", "--no-cache", "-j", "1", str(tmp_path)])
    assert result.exit_code == 1, result.output
    assert "ACF002" in result.output and "review:" not in result.output  # certain
    assert "fused optimizer: " in result.output and "settings.py:40003 " in result.output
    assert "1 finding" in result.output


def test_a_suppression_comment_is_read_as_in_a_whole_parse_beside_data_on_its_line() -> None:
    text = (
        "import torch\n"
        "opt = torch.optim.AdamW(p,\n"
        '    fused=True); NOTE = "# noqa: ACF001"\n'
        "opt2 = torch.optim.AdamW(p, fused=True)  # noqa: ACF001\n"
    )
    whole = collect_sites(PATH, text, ast.parse(text))
    pieces = collect_sites(PATH, text, parse_module(text, large=0))
    assert pieces == whole
    assert [site.suppressed_codes for site in pieces.sites] == [None, {"ACF001"}]
