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
    from amp_clipfix.analysis import document_texts

    monkeypatch.delitem(recording.PREDICATES, document_texts.MAY_WRITE_DOCUMENT)
    monkeypatch.delitem(sys.modules, "amp_clipfix.analysis.document_texts")
    test = (("fn", document_texts.MAY_WRITE_DOCUMENT, (b"gradient_clip_val",)),)
    text = b"from omegaconf import OmegaConf\n" + (
        b'c = OmegaConf.create({"trainer": {"gradient_clip_val": 1}})\n'
    )
    assert recording.passes(test, text, Path("/p/conf.py")) is True
    assert recording.passes(test, b"x = 1\n", Path("/p/other.py")) is False


def fresh(code: str) -> str:
    """What `code` prints in a new interpreter (nothing of the package imported before)."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("home", recording.PREDICATE_MODULES)
def test_each_predicate_is_registered_by_the_module_the_table_names(home: str) -> None:
    names = {name for name, module in recording.PREDICATE_HOMES.items() if module == home}
    printed = fresh(
        "import importlib\nfrom amp_clipfix.analysis import recording\n"
        f"importlib.import_module({home!r})\nprint(' '.join(recording.PREDICATES))"
    )
    assert names <= set(printed.split())


def test_every_registered_predicate_has_its_module_in_the_table() -> None:
    printed = fresh(
        "import importlib\nfrom amp_clipfix.analysis import recording\n"
        "for home in recording.PREDICATE_MODULES:\n    importlib.import_module(home)\n"
        "print(' '.join(recording.PREDICATES))"
    )
    assert set(printed.split()) == set(recording.PREDICATE_HOMES)


@pytest.mark.parametrize(
    "name", ["writes_clip_name", "may_write_fused_key", "may_write_document", "written"]
)
def test_a_light_module_s_text_test_is_found_without_the_evaluator(name: str) -> None:
    """Only the registering module is imported: asking each module in turn imported the
    evaluator (reach.py's imports) before manual_clips.py or fused_keys.py was reached, and
    cli_config.py, which registered may_write_document, imports it too."""
    printed = fresh(
        "import sys\nfrom amp_clipfix.analysis import recording\n"
        f"recording.predicate({name!r})\n"
        "print('amp_clipfix.analysis.evaluate' in sys.modules)"
    )
    assert printed.split() == ["False"]
