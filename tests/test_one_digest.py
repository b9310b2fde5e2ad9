"""One digest per file (issue 35, branch edit8): a run that notes its questions for the replay
hashes each file's bytes for its note (observed.read_bytes), and the analysis cache keys the
file by that same digest (`observed.content_digest`) instead of hashing it again. Only the very
bytes object that was read gets the noted digest: other bytes, equal or not, are hashed."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from amp_clipfix import observed
from amp_clipfix.analysis.cache import Cache
from amp_clipfix.cli import main

CLIP = "import torch\n\ndef clip(m):\n    torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)\n"
FUSED = "import torch\n\ndef make(m):\n    return torch.optim.AdamW(m.parameters(), fused=True)\n"


def blake(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=32).digest()


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> Counter[bytes]:
    """Every bytes object observed.blake2b or hashlib.sha256 is handed, counted by value."""
    seen: Counter[bytes] = Counter()
    real, real_sha256 = observed.blake2b, hashlib.sha256

    def counted(data: bytes = b"", **parameters: object) -> object:
        seen[bytes(data)] += 1
        return real(data, **parameters)

    def counted_sha256(data: bytes = b"", **parameters: object) -> object:
        seen[bytes(data)] += 1
        return real_sha256(data, **parameters)  # type: ignore[arg-type]

    monkeypatch.setattr(observed, "blake2b", counted)
    monkeypatch.setattr(hashlib, "sha256", counted_sha256)
    return seen


def test_the_cache_keys_a_file_read_by_the_digest_its_read_noted(
    tmp_path: Path, hashed: Counter[bytes]
) -> None:
    file = tmp_path / "m.py"
    file.write_bytes(b"x = 1\n")
    cache = Cache(tmp_path)
    with observed.Recording() as seen:
        data = observed.read_bytes(file)
        digest = cache.digest(data)
        assert cache.digest(data) == digest
    assert digest == blake(b"x = 1\n")
    assert seen.answers[("read", str(file), "")] == digest.hex()
    assert hashed[b"x = 1\n"] == 1
    assert seen.digests == {}  # taken by the cache, which keeps it


def test_other_bytes_are_hashed_never_given_a_noted_digest(
    tmp_path: Path, hashed: Counter[bytes]
) -> None:
    file = tmp_path / "m.py"
    file.write_bytes(b"x = 1\n")
    with observed.Recording():
        first = observed.read_bytes(file)
        file.write_bytes(b"x = 2\n")  # saved between two reads of one run
        second = observed.read_bytes(file)
        equal = bytes(bytearray(first))  # the same value, another object
        assert equal is not first
        assert observed.content_digest(second) == blake(b"x = 2\n")
        assert observed.content_digest(equal) == blake(b"x = 1\n")
        assert observed.content_digest(first) == blake(b"x = 1\n")
        assert observed.content_digest(first) == blake(b"x = 1\n")  # taken: hashed again
    assert hashed[b"x = 1\n"] == 3  # the read, the equal bytes, the second ask of `first`
    assert observed.content_digest(b"x = 3\n") == blake(b"x = 3\n")  # no recording


def test_a_noted_run_hashes_each_file_once_and_gives_the_cold_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hashed: Counter[bytes]
) -> None:
    project = tmp_path / "project"
    (project / "pkg").mkdir(parents=True)
    sources = {
        "pkg/__init__.py": "",
        "pkg/clip.py": CLIP,
        "pkg/make.py": FUSED,
        "pkg/other.py": "def other(x):\n    return x\n",
    }
    for name, text in sources.items():
        (project / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(project)
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)

    def check(*arguments: str) -> tuple[int, str]:
        with observed.Recording():
            result = CliRunner().invoke(main, ["check", "--format", "json", *arguments, "."])
        return result.exit_code, result.output

    cold = check("--no-cache")
    for edit in ["", "    y = 1\n", "def more():\n    return 2\n"]:
        (project / "pkg/clip.py").write_text(CLIP.replace("\n\ndef", f"\n{edit}\ndef", 1))
        hashed.clear()
        warm = check()
        for name in sources:
            data = (project / name).read_bytes()
            if data:  # an empty file's bytes are every empty file's (and the build's parts)
                assert hashed[data] == 1, name
        if not edit:
            assert warm == cold
        assert warm == check("--no-cache")
    assert os.path.isdir(project / ".amp_clipfix_cache")
