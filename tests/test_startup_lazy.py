"""What a `check` of a small project with nothing to find leaves unimported, in every format
whose empty report needs no rule (test_startup.py pins the text report and the analysis):
models.py and what its dataclasses import (dataclasses, inspect, ast), hashlib (OpenSSL) and the
project's style (project/style.py with configparser, read only when `apply` fixes), and where a
finding lies in a notebook's JSON (output/locations.py, asked only of a finding). A project
whose files hold the words the rules search for, checked without the cache, collects and asks
the memoised queries' module but hashes nothing. Read from `python -X importtime`, as there.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from test_startup import imported_modules, project

LAZY = {
    "amp_clipfix.models",
    "dataclasses",
    "inspect",
    "ast",
    "hashlib",
    "_hashlib",
    "configparser",
    "amp_clipfix.project.style",
    "amp_clipfix.output.locations",  # a finding's place in a notebook's JSON
}


@pytest.mark.parametrize("output_format", ["text", "json", "github", "gitlab"])
def test_an_empty_report_imports_no_models_hashes_or_style(
    tmp_path: Path, output_format: str
) -> None:
    modules, done = imported_modules(project(tmp_path), "check", "--format", output_format, ".")
    assert done.returncode == 0, done.stderr[-2000:]
    assert "amp_clipfix.sources.prefilter" in modules  # the run did read the project
    assert "amp_clipfix.reporting" in modules
    assert LAZY & modules == set()
    if output_format in ("json", "gitlab"):
        assert "json" in modules and "amp_clipfix.output.formats" in modules
        assert done.stdout.startswith("[]" if output_format == "gitlab" else "{")


def searched_project(tmp_path: Path) -> tuple[set[str], subprocess.CompletedProcess[str]]:
    """The modules a `check --no-cache --format json` run imports, and the run, on a project
    whose text holds `clip_grad_norm_`: a word the rules with a search of their own look for
    (no scaler, no manual optimization: nothing to find)."""
    root = project(tmp_path)
    (root / "clip.py").write_text(
        "import torch\n\n\ndef clip(model):\n"
        "    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n"
    )
    return imported_modules(root, "check", "--no-cache", "--format", "json", ".")


def test_a_searched_project_without_the_cache_hashes_nothing(tmp_path: Path) -> None:
    modules, done = searched_project(tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"findings": []' in done.stdout
    assert {"amp_clipfix.analysis.queries", "amp_clipfix.rules"} <= modules
    assert {"hashlib", "_hashlib", "configparser"} & modules == set()


def test_a_finding_imports_its_models_and_a_flake8_setting_configparser(tmp_path: Path) -> None:
    """The same project with a fused optimizer: the tests above could see what they say is
    left out."""
    root = project(tmp_path, fused=True)
    modules, done = imported_modules(root, "check", "--format", "gitlab", ".")
    assert done.returncode == 1, done.stderr[-2000:]
    assert '"check_name": "ACF002"' in done.stdout
    assert {"amp_clipfix.models", "hashlib"} <= modules
    assert "configparser" not in modules
    (root / "setup.cfg").write_text("[flake8]\nmax-line-length = 100\n")
    modules, done = imported_modules(root, "apply", "--dry-run", ".")
    assert done.returncode == 1, done.stderr[-2000:]
    assert {"amp_clipfix.project.style", "configparser"} <= modules


def test_the_replay_loads_no_openssl_and_its_digests_are_hashlibs_blake2b(tmp_path: Path) -> None:
    import hashlib

    from amp_clipfix import cache_layout, observed

    root = project(tmp_path)
    _, done = imported_modules(root, "check", ".", cache=True)
    assert done.returncode == 0, done.stderr[-2000:]
    modules, replayed = imported_modules(root, "check", ".", cache=True)
    assert (replayed.returncode, replayed.stdout) == (0, done.stdout)
    assert "amp_clipfix.cache_layout" in modules and "amp_clipfix.quick" not in modules
    assert {"hashlib", "_hashlib", "hmac"} & modules == set()
    data = bytes(range(256)) * 9
    made = hashlib.blake2b(data, digest_size=32, person=b"p")
    assert observed.blake2b(data, digest_size=32, person=b"p").digest() == made.digest()
    key = b"k" * 32
    sealed = cache_layout.seal(key, "name", data)
    tag = hashlib.blake2b(key=key, digest_size=32, person=b"amp-clipfix")
    tag.update(b"name\0" + data)
    assert sealed == cache_layout.SEAL + tag.digest() + data
    assert cache_layout.unseal(key, "name", sealed) == data
    assert cache_layout.unseal(key, "other", sealed) is None
    assert cache_layout.unseal(key, "name", sealed[:-1] + b"!") is None
