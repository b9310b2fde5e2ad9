"""BeforeClip's roots come from the files that may write a scaled backward
(analysis/event_capable.py `scaled_backward_files`): each file passing the text test is asked
whether its tree holds `<x>.scale(...).backward(...)`, from the evaluator's tree of the same
text where it made one (no second parse), else by the scan's predicate (written_events.py);
and once more files than INDEX_PARSES allows are ones the index would parse itself, it opens
before it parses any, so the rest are not asked. The findings are those of the whole scan, the
answers the predicate's, and a warm run after an edit to a file asked or not is a cold run."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest
from test_any_event import built, main
from test_clip_tail import report, write
from test_incremental import same_as_cold

from amp_clipfix.analysis import event_capable
from amp_clipfix.analysis.clip_tail import INDEX_PARSES
from amp_clipfix.analysis.recording import scan
from amp_clipfix.analysis.summary import summarise
from amp_clipfix.analysis.written_events import SCALED_BACKWARD, writes_scaled_backward

BODY = "def f(scaler, loss, model):\n    {}\n"
SOURCES = {
    "a call": BODY.format("scaler.scale(loss).backward()"),
    "over lines": BODY.format("scaler.scale(\n        loss\n    ).backward()"),
    "a continuation": BODY.format("scaler.scale(loss) \\\n        .backward()"),
    "in brackets": BODY.format("(scaler.scale(loss)\n        .backward())"),
    "a nested function": "class A:\n    def m(self):\n        def g(s, l):\n"
    "            return [s.scale(l).backward()]\n        return g\n",
    "a lambda": "run = lambda s, l: s.scale(l).backward()\n",
    "a class body": "class A:\n    done = scaler.scale(loss).backward()\n",
    "a string": BODY.format('text = "scaler.scale(loss).backward()"'),
    "a comment": BODY.format("loss.backward()  # not scaler.scale(loss).backward()"),
    "a bare scale": BODY.format("scale(loss).backward()"),
    "no call": BODY.format("step = scaler.scale(loss).backward"),
    "a method of the result": BODY.format("scaler.scale(loss).item().backward()"),
}
# Read by the predicate only: the text Python reads is not these bytes as they are.
PREDICATE_ONLY = {
    "not ASCII": "# é\n" + SOURCES["a call"],
    "a coding cookie": "# -*- coding: latin-1 -*-\n" + SOURCES["a call"],
}


def asked(
    monkeypatch: pytest.MonkeyPatch, name: str, text: str, summarised: bool = True
) -> tuple[bool, list[Path]]:
    """BeforeClip's answer for one file, and the files the predicate was asked of."""
    parsed: list[Path] = []

    def counted(path: Path, data: bytes) -> bool:
        parsed.append(path)
        return writes_scaled_backward(path, data)

    monkeypatch.setattr(event_capable, "writes_scaled_backward", counted)
    path, data = Path(f"/p/{name.replace(' ', '_')}.py"), text.encode("utf-8")
    summary = summarise(Path("/p"), path, text, data=data) if summarised else None
    index = SimpleNamespace(
        reach=SimpleNamespace(contents={path: data}),
        evaluator=SimpleNamespace(summaries={} if summary is None else {path: summary}),
    )
    return event_capable.BeforeClip.writes_scaled_backward(index, path, data), parsed  # type: ignore[arg-type]


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_the_tree_made_gives_the_predicates_answer(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = SOURCES[name]
    answer, parsed = asked(monkeypatch, name, text)
    assert answer == writes_scaled_backward(None, text.encode("utf-8"))
    assert parsed == []  # the evaluator's tree answered


def test_the_sources_are_what_the_tests_say() -> None:
    written = {n for n, t in SOURCES.items() if writes_scaled_backward(None, t.encode("utf-8"))}
    assert written == {
        "a call",
        "over lines",
        "a continuation",
        "in brackets",
        "a nested function",
        "a lambda",
        "a class body",
    }


@pytest.mark.parametrize("name", sorted(PREDICATE_ONLY))
def test_other_bytes_are_asked_of_the_predicate(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    answer, parsed = asked(monkeypatch, name, PREDICATE_ONLY[name])
    assert answer is True
    assert len(parsed) == 1


def test_a_file_not_summarised_is_asked_of_the_predicate(monkeypatch: pytest.MonkeyPatch) -> None:
    answer, parsed = asked(monkeypatch, "a call", SOURCES["a call"], summarised=False)
    assert answer is True
    assert len(parsed) == 1


# A training loop whose clip has a step after it (so the statements before the clip are read,
# through BeforeClip), and many modules each with a helper that makes a scaled backward: none
# read by anything else, so the index would parse each itself.
HELPERS = INDEX_PARSES + 10


def project(root: Path, helpers: int = HELPERS) -> dict[str, str]:
    files = {
        "pyproject.toml": "[project]\nname = 'x'\n",
        "train.py": main(before="prepare(model)", after="scaler.step(optimizer)"),
    }
    for index in range(helpers):
        files[f"helpers/scaled_{index}.py"] = (
            f"def scaled_{index}(scaler, loss):\n    scaler.scale(loss).backward()\n"
        )
    write(root, files)
    return files


def whole_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file passing the text test asked of the predicate (the scan before this)."""

    def files(self: event_capable.BeforeClip) -> list[Path]:
        return scan(self.reach.contents, ("fn", SCALED_BACKWARD))

    monkeypatch.setattr(event_capable.BeforeClip, "scaled_backward_files", files)


def test_past_the_parse_budget_the_rest_are_not_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[Path] = []

    def counted(path: Path, data: bytes) -> bool:
        parsed.append(path)
        return writes_scaled_backward(path, data)

    monkeypatch.setattr(event_capable, "writes_scaled_backward", counted)
    index = built(tmp_path / "cut", project(tmp_path / "cut"), event_capable.BeforeClip)
    assert index.open and index.spent
    assert len(parsed) == INDEX_PARSES + 1
    found = report(tmp_path / "cut")
    with monkeypatch.context() as patched:
        whole_scan(patched)
        whole = built(tmp_path / "whole", project(tmp_path / "whole"), event_capable.BeforeClip)
        assert whole.open and whole.spent
        assert found == report(tmp_path / "whole")
    assert "ACF004" in found


def test_within_the_budget_every_file_is_asked_and_the_index_closes(tmp_path: Path) -> None:
    index = built(tmp_path, project(tmp_path, helpers=3), event_capable.BeforeClip)
    assert not index.open
    assert {f.node.name for f in index.levels[0].values()} >= {f"scaled_{i}" for i in range(3)}


@pytest.mark.parametrize("edited", [0, HELPERS - 1], ids=["asked", "not asked"])
def test_a_warm_run_after_an_edit_to_a_helper_is_a_cold_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edited: int
) -> None:
    monkeypatch.delenv("AMP_CLIPFIX_NO_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    root = tmp_path / "p"
    project(root)
    before = same_as_cold(root)
    assert b"ACF004" in before
    helper = root / "helpers" / f"scaled_{edited}.py"
    helper.write_text(
        textwrap.dedent(f"""\
        def scaled_{edited}(scaler, loss):
            loss.backward()  # no longer scaler.scale(loss).backward()
        """)
    )
    assert same_as_cold(root) == before
    helper.write_text(f"def scaled_{edited}(scaler, loss):\n    scaler.scale(loss).backward()\n")
    assert same_as_cold(root) == before
