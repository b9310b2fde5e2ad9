"""Issue 35's engine: the project word index, the rules gated by the library classes they need,
and the cache after an edit, each giving what a cold run without them gives."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from piped import amp_clipfix

from amp_clipfix.analysis.callers import whole_word
from amp_clipfix.analysis.collection import Collection
from amp_clipfix.analysis.word_index import SCANS_BEFORE_INDEX, WordIndex
from amp_clipfix.pipeline import searching_rules_of
from amp_clipfix.rules.acf011 import may_spell_old_value
from bench.factory_project import FACTORY, write_project


@pytest.fixture
def cache_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))


def test_factories_past_the_index_threshold_give_every_finding(tmp_path: Path) -> None:
    """More factories than names asked before the word index is built: each one's module is
    still linked to the Trainer, one finding per factory, each at its own file."""
    count = SCANS_BEFORE_INDEX + 20
    write_project(tmp_path, count)
    run = amp_clipfix(tmp_path, "check", "--no-cache", "--format", "json", entry=False)
    assert run.code == 1
    report = json.loads(run.stdout)
    files = sorted({f["path"] for f in report["findings"]})
    assert len(report["findings"]) == count
    assert files == sorted(f"pkg/f{i}.py" for i in range(count))


def test_a_warm_run_after_a_one_line_edit_equals_a_cold_one(tmp_path: Path, cache_on: None) -> None:
    """The caches filled by a first run, then one module edited (its lines move, one factory
    unfused): the warm run prints the bytes a cold `--no-cache` run prints."""
    write_project(tmp_path, 30)
    first = amp_clipfix(tmp_path, "check", "--format", "json", entry=False)
    assert first.code == 1
    edited = tmp_path / "pkg" / "f7.py"
    edited.write_text("# moved\n" + FACTORY.format(i=7).replace("fused=True", "fused=False"))
    warm = amp_clipfix(tmp_path, "check", "--format", "json", entry=False)
    cold = amp_clipfix(tmp_path, "check", "--no-cache", "--format", "json", entry=False)
    assert warm == cold
    assert len(json.loads(warm.stdout)["findings"]) == 29
    assert "pkg/f7.py" not in {f["path"] for f in json.loads(warm.stdout)["findings"]}


def test_the_word_index_names_the_files_a_whole_word_scan_finds() -> None:
    contents = {
        Path("a.py"): b"make_opt(x)\n",
        Path("b.py"): b"x.make_opt_2 = make_opt\n",
        Path("c.py"): b"amake_opt + make_opt2 + m\xc3\xa9make_opt\n",
        Path("d.py"): b"def make_opt(): pass\n",
        Path("e.py"): b"9make_opt _make_opt\n",
    }
    index = WordIndex(contents)
    index.scans = SCANS_BEFORE_INDEX  # the next question builds the index
    for name in (b"make_opt", b"make_opt_2", b"make_opt2", b"m", b"absent"):
        scanned = [path for path, data in contents.items() if whole_word(name).search(data)]
        assert index.naming(name) == scanned, name
    assert index.naming(b"make_opt") == [Path("a.py"), Path("b.py"), Path("c.py"), Path("d.py")]
    assert index.in_order({Path("d.py"), Path("a.py"), Path("elsewhere.py")}) == [
        Path("a.py"),
        Path("d.py"),
    ]


def test_the_word_index_scans_while_few_names_are_asked() -> None:
    index = WordIndex({Path("a.py"): b"f()\n"})
    assert index.naming(b"f") is None  # the caller scans
    assert index.files_by_word is None
    assert index.naming("é".encode()) is None  # not an ASCII name: always scanned


def gated(tmp_path: Path, files: dict[str, str]) -> set[str]:
    contents = {tmp_path / name: text.encode() for name, text in files.items()}
    collection = Collection(root=tmp_path, contents=contents, searchable=contents)
    return searching_rules_of(collection)[1]


def test_fabric_and_scaler_rules_are_left_out_where_no_file_names_the_class(
    tmp_path: Path,
) -> None:
    clip = "loss.backward()\ntorch.nn.utils.clip_grad_norm_(p, 1.0)\nopt.step()\n"
    assert gated(tmp_path, {"train.py": clip}) == {"ACF004", "ACF006", "ACF007"}
    fabric = "from lightning import Fabric\n" + clip
    assert gated(tmp_path, {"train.py": fabric}) == {"ACF004"}
    scaler = {"a.py": clip, "b.py": "scaler = torch.amp.GradScaler()\n"}
    assert gated(tmp_path, scaler) == {"ACF006", "ACF007"}
    # Python reads `Fabrⅰc` (a small roman numeral one) as `Fabric`: not left out
    spelled = "from lightning import Fabr\u2170c\n" + clip
    assert gated(tmp_path, {"train.py": spelled}) == {"ACF004"}


@pytest.mark.parametrize(
    ("text", "may"),
    [
        ("trainer:\n  precision: 16\n", True),
        ("trainer:\n  precision: bf16 # old\n", True),
        ("trainer:\n  precision: '16'\n", True),
        ('trainer:\n  precision: !!str "bf16"\n', True),
        ("trainer: {precision: 16}\n", True),
        ('trainer:\n  precision: "\\x316"\n', True),  # an escape may spell it
        ("trainer:\n  precision: 16-mixed\n  devices: 160\n", False),
        ("trainer:\n  precision: bf16-true\n  lr: 1.16\n", False),
        ("trainer:\n  precision: 32\n  max_steps: -16\n", False),
    ],
)
def test_acf011_composes_a_config_only_where_16_or_bf16_can_be_a_token(
    text: str, may: bool
) -> None:
    assert may_spell_old_value(text) is may
