"""The searching rules' candidate files (project_resolve.project_facts' listing) taken with the
evaluator's word index where it is built (word_scan.indexed_holds_any): a word with a run of
identifier bytes bounded inside it (`fit` of `.fit(`) is looked for only in the texts whose
index holds that run. The answer is `any(word in data ...)` on every text, by construction and
here on random texts, on texts the index was not made from, and in whole runs' reports; a text
whose index lacks the run is never scanned for the word, which fails without the index."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from test_incremental import write
from test_keyword_gate import report

from amp_clipfix.analysis import word_index, word_scan
from amp_clipfix.analysis.relevance import index_of
from amp_clipfix.analysis.word_scan import bounded_runs, indexed_holds_any
from amp_clipfix.rules import searching_rules

# The words the searching rules ask on the Lightning tree (project_facts' `fewest`).
RULE_WORDS = tuple(word for rule in searching_rules() for word in rule.words)


@pytest.mark.parametrize(
    ("word", "runs"),
    [
        (b".fit(", [b"fit"]),
        (b'"bf16"', [b"bf16"]),
        (b'"precision": 16', [b"precision"]),
        (b"cuda import amp", [b"import"]),
        (b".a.b.", [b"a", b"b"]),
        (b"cuda.amp", []),
        (b"precision=16", []),
        (b"manual_backward", []),
        (b"x", []),
        (b".", []),
        (b"", []),
        (b"\xc3\xa9fit(", [b"fit"]),  # a byte outside ASCII is no identifier byte: the index's too
        (b".f\xc3\xa9t(", [b"f", b"t"]),
    ],
)
def test_bounded_runs(word: bytes, runs: list[bytes]) -> None:
    assert bounded_runs(word) == runs


class Counted(bytes):
    """A text that notes each word it is asked for."""

    asked: list[bytes]

    def __contains__(self, word: object) -> bool:
        self.asked.append(word)  # type: ignore[arg-type]
        return super().__contains__(word)  # type: ignore[operator]

    def find(self, word: bytes, *where: int) -> int:  # type: ignore[override]
        self.asked.append(word)
        return super().find(word, *where)


def counted(data: bytes) -> Counted:
    text = Counted(data)
    text.asked = []
    return text


def answers(
    words: tuple[bytes, ...], texts: dict[Path, bytes], most: int
) -> dict[Path, bool] | None:
    test = indexed_holds_any(words, texts, index_of(texts.items()), most)
    return None if test is None else {path: test(path, data) for path, data in texts.items()}


PIECES = [b".", b"(", b"fit", b"f", b"it", b'"', b"'", b"16", b"bf", b" ", b"\n", b":", b"_"]
PIECES += [b"precision", b"\xc3\xa9", b"backward", b"\xef\xbd\x86", b"import", b"amp", b"="]


def random_text(rng: random.Random) -> bytes:
    return b"".join(rng.choice(PIECES) for _ in range(rng.randrange(0, 30)))


def test_the_same_answers_as_scanning_every_word_on_random_texts() -> None:
    rng = random.Random(15)
    for round_ in range(300):
        texts = {Path(f"m{n}.py"): random_text(rng) for n in range(rng.randrange(1, 12))}
        if round_ % 2:
            words = RULE_WORDS
        else:
            words = tuple(random_text(rng) or b"." for _ in range(rng.randrange(1, 6)))
        for most in (0, 1, len(texts) // 2, len(texts)):
            found = answers(words, texts, most)
            if found is not None:
                expected = {p: any(w in data for w in words) for p, data in texts.items()}
                assert found == expected, (words, texts)


def test_texts_the_index_was_not_made_from_are_scanned_for_every_word() -> None:
    made = {Path("a.py"): b"x = 1\n", Path("b.py"): b"model.fit(data)\n"}
    test = indexed_holds_any((b".fit(", b"LightningCLI"), made, index_of(made.items()), 2)
    assert test is not None
    assert test(Path("a.py"), made[Path("a.py")]) is False
    assert test(Path("b.py"), made[Path("b.py")]) is True
    # the same path, other bytes (an index made before an edit), and a path it never saw
    assert test(Path("a.py"), b"trainer.fit(model)\n") is True
    assert test(Path("c.py"), b"trainer.fit(model)\n") is True
    assert test(Path("c.py"), b"trainer.fitness(model)\n") is False


def test_a_text_whose_index_lacks_the_run_is_not_scanned_for_the_word() -> None:
    texts = {
        Path("plain.py"): counted(b"import torch\nx = torch.ones(3)\n"),
        Path("fits.py"): counted(b"trainer.fit(model)\n"),
        Path("fitness.py"): counted(b"fitness = 1\n"),
    }
    test = indexed_holds_any((b".fit(", b"LightningCLI"), texts, index_of(texts.items()), 3)
    assert test is not None
    assert [test(path, data) for path, data in texts.items()] == [False, True, False]
    assert texts[Path("plain.py")].asked == [b"LightningCLI"]
    assert texts[Path("fitness.py")].asked == [b"LightningCLI"]
    assert texts[Path("fits.py")].asked == [b".fit("]


def test_words_in_most_files_are_scanned() -> None:
    texts = {Path(f"m{n}.py"): b"model.fit(x)\n" for n in range(4)}
    index = index_of(texts.items())
    assert indexed_holds_any((b".fit(",), texts, index, 3) is None  # 4 files hold `fit`
    assert indexed_holds_any((b".fit(",), texts, index, 4) is not None
    assert indexed_holds_any((b"cuda.amp",), texts, index, 4) is None  # no bounded run


PROGRAMS = {
    "train.py": """\
import lightning as L
from lightning.pytorch.cli import LightningCLI as CLI


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = self(batch).sum()
        loss.backward()
        opt.step()


trainer = L.Trainer(precision="16", gradient_clip_val=1.0)
trainer.fit(Net())
other = L.Trainer(precision='bf16')
""",
    "spaced.py": "import lightning as L\nL.Trainer(precision=16) .fit (model)\n",
    "broken.py": "estimator.fit(x\n",  # a word file that does not parse: reported
    "fullwidth.py": "model.ｆｉｔ(data)\nprint('16')\n",
    "notebooks/run.py": "import torch\ntorch.cuda.amp.GradScaler()\nloss.backward()\n",
    "plain.py": "x = 1\n",
}


def test_the_same_report_with_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in PROGRAMS.items():
        write(tmp_path, name, text)
    scanned = report(tmp_path)
    made = word_index.WordIndex.__init__
    taken: list[bool] = []

    def eager(self: word_index.WordIndex, contents: object) -> None:
        made(self, contents)  # type: ignore[arg-type]
        self.files_by_word = self.made()  # built before the rules list their files

    real = word_scan.indexed_holds_any

    def spied(*args: object, **kwargs: object) -> object:
        test = real(*args, **kwargs)  # type: ignore[arg-type]
        taken.append(test is not None)
        return test

    monkeypatch.setattr(word_index.WordIndex, "__init__", eager)
    monkeypatch.setattr(word_scan, "indexed_holds_any", spied)
    assert report(tmp_path) == scanned
    assert taken == [True]
    assert scanned[0] == 2 and "broken.py" in scanned[1]
