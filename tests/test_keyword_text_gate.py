"""ACF010, ACF011 and ACF013 read only the calls that write their keywords or a `**` spread
(`calls.Keywords`); a file whose text can write neither is not parsed for them
(`Keywords.may_write`, part of `calls.CallTest`): NeMo's files that name a Trainer and hold
`"16"` or `gradient_clip_val` elsewhere (ACF013: 37 parses -> 0). The text test says yes
wherever the tree holds a call the search keeps, however the keywords are spelled, and the
report is that of parsing every such file."""

from __future__ import annotations

import ast
import random
from pathlib import Path

import pytest
from spied import check_counting_parses
from test_incremental import write

from amp_clipfix.analysis import calls
from amp_clipfix.analysis.calls import Keywords

GAPS = ["", " ", "\n    ", "  # note: x=1\n    ", " \\\n    ", "\t"]
NAMES = ["precision", "strategy", "gradient_clip_val", "amp_level"]


def program(rng: random.Random) -> str:
    gap = [rng.choice(GAPS) for _ in range(4)]
    parts = []
    for name in rng.sample(NAMES, rng.randint(0, 3)):
        spelled = name
        if name == "precision" and rng.random() < 0.2:
            spelled = "\uff50recision"  # Python reads it NFKC: `precision`
        parts.append(f"{gap[0]}{spelled}{gap[1]}={gap[2]}{rng.choice(['16', 'x', '(1 == 2)'])}")
    if rng.random() < 0.2:
        parts.append(f"{gap[3]}**cfg")
    if rng.random() < 0.2:
        parts.append("other=(precision == 16)")  # the word, not a keyword
    return f"import lightning as L\n\ntrainer = L.Trainer(\n    {', '.join(parts)}\n)\n"


KEYWORDS = {
    "one": Keywords("precision"),
    "all": Keywords("strategy", "gradient_clip_val"),
    "any": Keywords("amp_level", "precision", any_of=True),
}


@pytest.mark.parametrize("kind", sorted(KEYWORDS))
def test_a_text_whose_tree_holds_a_call_kept_may_write(kind: str) -> None:
    keywords = KEYWORDS[kind]
    rng = random.Random(35)
    kept = 0
    for _ in range(3000):
        text = program(rng)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        if any(isinstance(n, ast.Call) and keywords.written(n) for n in ast.walk(tree)):
            kept += 1
            assert keywords.may_write(text.encode("utf-8")), text
    assert kept > 300


@pytest.mark.parametrize(
    "text",
    [
        'SIZES = ["16", "32"]\ntrainer = L.Trainer(max_epochs=1)\n',
        "if precision == 16:\n    trainer = L.Trainer(devices=2)\n",
    ],
)
def test_a_text_that_writes_no_keyword_may_not(text: str) -> None:
    assert not any(
        isinstance(n, ast.Call) and KEYWORDS["one"].written(n) for n in ast.walk(ast.parse(text))
    )
    assert not KEYWORDS["one"].may_write(text.encode("utf-8"))


TRAIN = "import lightning as L\n\ntrainer = L.Trainer(precision=16, max_epochs=1)\n"
SIZES = 'import lightning as L\n\nSIZES = ["16", "bf16"]\ntrainer = L.Trainer(max_epochs=1)\n'


def test_a_file_writing_no_keyword_is_not_parsed_and_the_report_is_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "train.py", TRAIN)
    write(tmp_path, "sizes.py", SIZES)
    code, output, parsed = check_counting_parses(tmp_path, monkeypatch)
    with monkeypatch.context() as patched:
        patched.setattr(calls.Keywords, "may_write", lambda self, data: True)
        every = check_counting_parses(tmp_path, patched)

    assert (code, output) == every[:2]
    assert "train.py:3:" in output and "ACF011" in output
    assert "sizes.py" not in parsed and "sizes.py" in every[2]
