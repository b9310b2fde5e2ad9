"""The analysis cache's entries are sealed with OpenSSL's HMAC-SHA256 where the run has loaded it
(cache_layout.seal's `openssl`: 2.7x as fast as the interpreter's blake2b), what a replay reads
(its records, the table of settled reads, the build's table) with blake2b, which needs no
OpenSSL loaded. A seal says which tag it carries; each is checked with this user's secret."""

from __future__ import annotations

import hashlib
import hmac
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from amp_clipfix import cache_layout
from amp_clipfix.cache_layout import SEAL, SEAL_HMAC, TAG_BYTES, seal, unseal, version_folder

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
KEY = bytes(range(32))


def test_an_openssl_seal_is_an_hmac_sha256_of_the_name_and_value() -> None:
    assert "_hashlib" in sys.modules  # hashlib is imported above
    sealed = seal(KEY, "entry", b"value", openssl=True)
    tag = hmac.new(KEY, b"amp-clipfix\0entry\0value", hashlib.sha256).digest()
    assert sealed == SEAL_HMAC + tag + b"value"
    assert len(SEAL_HMAC) == len(SEAL) and len(tag) == TAG_BYTES
    assert unseal(KEY, "entry", sealed) == b"value"


def test_a_seal_without_openssl_is_blake2b_and_both_are_read() -> None:
    sealed = seal(KEY, "entry", b"value")
    assert sealed.startswith(SEAL)
    assert sealed == SEAL + cache_layout._tag(KEY, "entry", b"value") + b"value"
    assert unseal(KEY, "entry", sealed) == b"value"


@pytest.mark.parametrize("openssl", [False, True])
def test_another_name_key_value_or_tag_is_a_miss(openssl: bool) -> None:
    sealed = seal(KEY, "entry", b"value", openssl=openssl)
    assert unseal(KEY, "other", sealed) is None
    assert unseal(bytes(32), "entry", sealed) is None
    assert unseal(KEY, "entry", sealed[:-1] + b"w") is None
    other = SEAL if openssl else SEAL_HMAC  # the other tag's mark on this tag: no entry
    assert unseal(KEY, "entry", other + sealed[len(SEAL) :]) is None


def test_a_run_that_has_not_loaded_openssl_seals_with_blake2b(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "_hashlib")
    assert seal(KEY, "entry", b"value", openssl=True).startswith(SEAL)


def check(project: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    variables = {k: v for k, v in os.environ.items() if k != "AMP_CLIPFIX_NO_CACHE"}
    return subprocess.run(
        [sys.executable, "-m", "amp_clipfix", "check", "--format", "json", *arguments, "."],
        cwd=project,
        env=variables,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_analysis_entries_are_hmac_sealed_and_the_replays_blake2b(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "trainer_factory_other_module_unfuse" / "input", project)
    (project / "pyproject.toml").write_text('[project]\nname = "demo"\n', encoding="utf-8")
    cold = check(project)
    assert cold.returncode == 1
    folder = Path(version_folder(project))
    replayed = folder / "replay"
    assert {path.read_bytes()[: len(SEAL)] for path in replayed.iterdir()} == {SEAL}
    analysis = [
        path for path in folder.rglob("*") if path.is_file() and replayed not in path.parents
    ]
    analysis = [path for path in analysis if path.name != ".gitignore"]
    assert analysis
    assert {path.read_bytes()[: len(SEAL)] for path in analysis} == {SEAL_HMAC}

    edited = project / "optim.py"
    edited.write_text(edited.read_text() + "\nunused = 1\n", encoding="utf-8")
    warm = check(project)
    uncached = check(project, "--no-cache")
    assert (warm.stdout, warm.returncode) == (uncached.stdout, uncached.returncode)
