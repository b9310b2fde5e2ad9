"""The rules that look for library calls by name (ACF010 - ACF013, `calls.library_calls`) parse
only the word-holding files whose text may write such a call (`calls.CallTest`): diffusers holds
ACF011's `"16"` / `'bf16'` in 151 files and names a Trainer in none, and they were all parsed and
walked for nothing. The gates' text tests (`gate_texts.may_import`, `may_name`) look for the name
before a pattern over the whole text, and a text that is not all ASCII is checked for NFKC
normalisation once (`prefilter.nfkc_stable`), not once per gate. The output stays what the
ungated search gives, and an edit that writes a call in such a file asks the search again."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from piped import amp_clipfix
from test_incremental import edit_line, same_as_cold

from amp_clipfix.analysis import calls, gate_texts, project_resolve
from amp_clipfix.analysis.collection import Collection
from amp_clipfix.analysis.gate_texts import may_import
from amp_clipfix.pipeline import searching_rules_of
from amp_clipfix.sources.prefilter import nfkc_holds, nfkc_stable, nfkc_text

PIN = '[project]\nname = "demo"\ndependencies = ["lightning>=2.1"]\n'
TRAIN = "import lightning as L\n\ntrainer = L.Trainer(precision=16, max_epochs=1)\n"
# ACF011's words without a Trainer: what most of diffusers' word-holding files are
QUOTED = 'DTYPES = {"16": "float16", "bf16": "bfloat16"}\nvariant = "bf16"\n'


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"pyproject.toml": PIN, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def check(root: Path, *arguments: str, gate: bool = True) -> tuple[int, bytes, bytes]:
    """`check --no-cache` over the project (exit code, stdout, stderr); `gate`: False lets
    every word-holding file through the call test, as the search was before it."""
    saved = calls.CallTest.__call__
    if not gate:
        calls.CallTest.__call__ = lambda *_: True  # type: ignore[method-assign]
    try:
        run = amp_clipfix(root, "check", "--no-cache", "--jobs", "1", *arguments, entry=False)
    finally:
        calls.CallTest.__call__ = saved  # type: ignore[method-assign]
    return run.code, run.stdout, run.stderr


def parsed(stderr: bytes) -> int:
    """The summary table's `files parsed` (`-v`)."""
    line = next(x for x in stderr.decode().splitlines() if "files parsed" in x)
    return int(line.split()[-2])


def test_files_that_name_no_trainer_are_tested_not_parsed(tmp_path: Path) -> None:
    others = {f"pipelines/p{i}.py": QUOTED for i in range(6)}
    root = write(tmp_path, {"train.py": TRAIN, **others})
    code, out, err = check(root, "-v")
    ungated = check(root, "-v", gate=False)
    assert code == ungated[0] == 1
    assert out == ungated[1]
    assert out.startswith(b"train.py:3:21: ACF011")
    assert parsed(err) == 1  # train.py alone
    assert parsed(ungated[2]) == 7  # and the six files holding `"16"`


NFKC_TRAIN = "import \uff4cightning as L\n\ntrainer = L.\uff34rainer(precision=16)\n"


@pytest.mark.parametrize(
    ("files", "where"),
    [
        ({"train.py": TRAIN}, b"train.py:3:21: ACF011"),
        (
            {"train.py": "from lightning import Trainer as T\n\nt = T(precision='bf16')\n"},
            b"train.py:3:7: ACF011",
        ),
        (
            {"run.py": "from lightning.fabric import Fabric as F\n\nf = F(precision='16')\n"},
            b"run.py:3:7: ACF011",
        ),
        # `f` is imported from the project's own `lightning_ext` package: its text names
        # neither a Trainer nor a Lightning package, its module name does
        (
            {
                "lightning_ext/__init__.py": "",
                "lightning_ext/factory.py": "from lightning import Trainer as Make\n",
                "lightning_ext/run.py": "from . import factory as f\n\nt = f.Make(precision=16)\n",
            },
            b"lightning_ext/run.py:3:12: ACF011",
        ),
        # Python reads `ｌightning` and `Ｔrainer` as `lightning` and `Trainer` (NFKC)
        ({"train.py": NFKC_TRAIN}, b"train.py:3:21: ACF011"),
        (
            {
                "train.py": (
                    "import lightning as L\n\n"
                    "trainer = L.Trainer(amp_backend='apex', amp_level='O2')\n"
                )
            },
            b"train.py:3:21: ACF010",
        ),
        (
            {"scaler.py": "import torch\n\nscaler = torch.cuda.amp.GradScaler()\n"},
            b"scaler.py:3:10: ACF012",
        ),
    ],
)
def test_every_call_the_search_finds_is_still_found(
    tmp_path: Path, files: dict[str, str], where: bytes
) -> None:
    root = write(tmp_path, {**files, "other.py": QUOTED + "x = 'cuda.amp' + 'fsdp'\n"})
    code, out, _ = check(root)
    assert (code, out) == check(root, gate=False)[:2]
    assert where in out


def test_an_edit_that_writes_a_trainer_call_asks_the_search_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file held ACF011's words and failed the call test (not parsed, not noted as read);
    the edit keeps the words and writes a Trainer: a warm run prints a cold run's bytes."""
    root = write(tmp_path, {"train.py": TRAIN, "other.py": QUOTED})
    monkeypatch.chdir(root)
    first = same_as_cold(root)
    assert b"other.py" not in first
    call = 'variant = "bf16"\nimport lightning\nt = lightning.Trainer(precision="bf16")\n'
    edit_line("other.py", 'variant = "bf16"\n', call)(root)
    assert b"other.py:4:23: ACF011" in same_as_cold(root)
    edit_line("other.py", call, 'variant = "bf16"\n')(root)
    assert same_as_cold(root) == first


def counted(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[object]:
    seen: list[object] = []
    original: Callable[..., Any] = getattr(owner, name)

    def wrapper(*arguments: Any) -> Any:
        seen.append(arguments)
        return original(*arguments)

    monkeypatch.setattr(owner, name, wrapper)
    return seen


def test_the_import_pattern_is_searched_only_where_the_package_is_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    searched = counted(monkeypatch, gate_texts, "import_text")
    assert not may_import(
        "# caf\u00e9 \u2014 a lightning\u2026\nx = 1\n".encode(), "lightning_fabric"
    )
    assert not may_import("# caf\u00e9\nimport os\n".encode(), "lightning")
    assert not searched
    assert may_import("from \uff4cightning import Fabric  # caf\u00e9\n".encode(), "lightning")
    assert may_import(b"import lightning as L\n", "lightning")
    assert len(searched) == 2


def test_a_text_is_checked_for_normalisation_once_for_every_gate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three gates (names `Fabric` and `GradScaler`, imports of `lightning` and
    `lightning_fabric`) ask of four texts that are not all ASCII: each is checked once, and
    only the one that NFKC changes is normalised, once for all four questions (`nfkc_text`;
    it was once per question before session 20's branch `fixed`)."""
    nfkc_stable.cache_clear()
    nfkc_text.cache_clear()
    checks = counted(monkeypatch, unicodedata, "is_normalized")
    normalised = counted(monkeypatch, unicodedata, "normalize")
    prose = "# caf\u00e9 \u2014 \u00a9 \u4e2d\u6587\nprecision = 'bf16'\nclip_grad_norm_ = 1\n"
    texts = {f"m{i}.py": f"{prose}n = {i}\n" for i in range(3)}
    texts["odd.py"] = "# \u2026 \uff46used\nx = 1\n"  # `…` and `ｆ` are not NFKC-normal
    contents = {tmp_path / name: text.encode() for name, text in texts.items()}
    collection = Collection(root=tmp_path, contents=contents, searchable=contents)
    assert searching_rules_of(collection)[1] == {"ACF004", "ACF006", "ACF007"}
    assert len(checks) == 4
    assert len(normalised) == 1  # odd.py, for Fabric, GradScaler, lightning, lightning_fabric
    nfkc_stable.cache_clear()
    nfkc_text.cache_clear()


def test_nfkc_holds_reads_names_as_python_does() -> None:
    assert nfkc_holds("\uff34rainer()  # \u00e9".encode(), [b"Trainer"])
    assert nfkc_holds("\ufb01t = 1".encode(), [b"x", b"fit"])
    assert not nfkc_holds("# caf\u00e9 Trainer".encode(), [b"Fabric"])
    assert not nfkc_holds(b"Trainer", [b"Trainer"])  # ASCII: the caller tests the bytes
    nfkc_stable.cache_clear()


def test_the_memo_is_let_go_with_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write(tmp_path, {"train.py": "# caf\u00e9\n" + TRAIN})
    nfkc_stable.cache_clear()
    checks = counted(monkeypatch, unicodedata, "is_normalized")
    assert check(root)[0] == 1
    assert checks  # train.py was asked about
    assert nfkc_stable.cache_info().currsize == 0  # and its text let go


def test_the_normalised_texts_are_let_go_with_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write(tmp_path, {"train.py": "# \uff46used \u2026\n" + TRAIN})
    nfkc_text.cache_clear()
    normalised = counted(monkeypatch, unicodedata, "normalize")
    assert check(root)[0] == 1
    assert normalised  # train.py was normalised
    assert nfkc_text.cache_info().currsize == 0  # and its normal form let go


SETTLED_TRAIN = """\
import lightning as L
import torch

from helpers import FUSED


class Model(L.LightningModule):
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), fused=FUSED)


trainer = L.Trainer(precision="16-mixed", gradient_clip_val=1.0)
trainer.fit(Model())
"""


def test_a_file_the_evaluator_parsed_is_not_checked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """helpers.py holds ACF011's `"bf16"` and no Trainer, so no search parses it; the
    resolution's evaluator parsed it whole (`FUSED`), so the settling of the word-holding files
    knows it parses without its symbol table. bad.py, which nothing parsed, holds `"bf16"` but
    names no Trainer: ACF011's text test refuses it, so it is neither checked nor reported
    (analysis/questions.py)."""
    helpers = 'FUSED = True\nDTYPES = {"bf16": "bfloat16"}\n'
    broken = 'variant = "bf16"\ndef broken(:\n'
    root = write(tmp_path, {"train.py": SETTLED_TRAIN, "helpers.py": helpers, "bad.py": broken})
    checked = counted(monkeypatch, project_resolve, "may_parse")
    code, out, err = check(root)
    assert code == 1
    assert out.startswith(b"helpers.py:1:9: ACF002")
    assert b"bad.py" not in err
    assert [text for (text,) in checked] == []
