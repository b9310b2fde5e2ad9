"""A stored query's text tests name their predicates (recording.PREDICATES); a warm run may
check them before the module that registers one is imported (a rule's module is imported only
when its search runs). recording.predicate imports the registering modules then: each must be
listed in PREDICATE_MODULES, or the check misses and the query is computed again."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from amp_clipfix.analysis import recording

SOURCE = Path(recording.__file__).resolve().parents[1]
REGISTERS = re.compile(r"^(?:recording\.)?PREDICATES(?:\[|\.update\()", re.MULTILINE)


def registering_modules() -> set[str]:
    found = set()
    for path in SOURCE.rglob("*.py"):
        if REGISTERS.search(path.read_text(encoding="utf-8")):
            parts = path.relative_to(SOURCE.parent).with_suffix("").parts
            found.add(".".join(parts))
    return found


def test_every_module_that_registers_a_predicate_is_listed() -> None:
    assert registering_modules() - {"amp_clipfix.analysis.recording"} == set(
        recording.PREDICATE_MODULES
    )


def test_a_predicate_not_registered_yet_is_found_through_its_module(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from amp_clipfix.analysis import cli_config

    monkeypatch.delitem(recording.PREDICATES, cli_config.MAY_WRITE_DOCUMENT)
    monkeypatch.delitem(sys.modules, "amp_clipfix.analysis.cli_config")
    test = (("fn", cli_config.MAY_WRITE_DOCUMENT, (b"gradient_clip_val",)),)
    text = b"from omegaconf import OmegaConf\n" + (
        b'c = OmegaConf.create({"trainer": {"gradient_clip_val": 1}})\n'
    )
    assert recording.passes(test, text, Path("/p/conf.py")) is True
    assert recording.passes(test, b"x = 1\n", Path("/p/other.py")) is False
