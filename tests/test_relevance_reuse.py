"""A warm run takes the fused relevance's core from the cache (derived.today_relevant, branch
`edit5`): only when it is the core a cold run computes, rounds and names included; else the
texts are searched again. Either way the bytes of a cold run."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from piped import amp_clipfix
from test_incremental import edit_line, project, same_as_cold, write  # noqa: F401 - a fixture

from amp_clipfix.analysis import resolve_base
from amp_clipfix.analysis.derived import today_relevant
from amp_clipfix.analysis.relevance import imported_modules, relevant_core
from amp_clipfix.analysis.word_index import WordIndex

LINES = [
    b"fused = True",
    b"def make_a(): pass",
    b"def make_b(): return make_a()",
    b"x = make_b()",
    b"class Net(Base): pass",
    b"y = Net()",
    b"import pkg.m1",
    b"from pkg import m2",
    b"z = 1",
    b"_edited = 1",
    b"w = _edited",
    b"",
]


def cold_core(contents: dict[Path, bytes]) -> tuple[object, ...]:
    core = relevant_core(contents, b"fused", WordIndex(contents).files_by_words)
    modules = {path: imported_modules(contents[path]) for path in core.rounds}
    return core.rounds, core.defined, modules


@pytest.mark.parametrize("changes", [1, 2])
def test_a_core_taken_from_the_cache_is_the_cold_run_s(tmp_path: Path, changes: int) -> None:
    """Random edits of one or two files of small projects: whenever a core is given, it is the
    one computed on the edited files (each file's round, names and imports)."""
    generator = random.Random(35 + changes)
    given = refused = 0
    for _ in range(600):
        contents = {
            tmp_path / "pkg" / f"m{i}.py": b"\n".join(generator.sample(LINES, 3)) + b"\n"
            for i in range(6)
        }
        answer = cold_core(contents)
        edited = dict(contents)
        for path in generator.sample(list(contents), changes):
            lines = contents[path].split(b"\n")
            lines.insert(generator.randrange(len(lines)), generator.choice(LINES))
            edited[path] = b"\n".join(lines)
        changed = {path: data for path, data in edited.items() if data != contents[path]}
        found = today_relevant(edited, changed, answer)  # type: ignore[arg-type]
        if found is None:
            refused += 1
            continue
        given += 1
        assert found == cold_core(edited)
    assert given > 100 and refused > 50  # both sides are exercised


def test_a_new_name_another_file_writes_is_searched_again(tmp_path: Path) -> None:
    """The edit defines a name a later-round file writes: that file's round changes, so the
    core is not taken (a cold run's rounds differ)."""
    a, b, c = (tmp_path / f"{name}.py" for name in "abc")
    contents = {
        a: b"fused = 1\ndef make(): pass\n",
        b: b"make()\ndef thing(): pass\n",
        c: b"thing()\nhelper()\n",
    }
    answer = cold_core(contents)
    assert answer[0] == {a: 0, b: 1, c: 2}
    edited = {**contents, a: contents[a] + b"def helper(): pass\n"}
    assert today_relevant(edited, {a: edited[a]}, answer) is None  # type: ignore[arg-type]
    alone = {**contents, a: contents[a] + b"def lonely(): pass\n"}
    assert today_relevant(alone, {a: alone[a]}, answer) == cold_core(alone)  # type: ignore[arg-type]


def appended(name: str, line: str) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        path = root / name
        path.write_text(path.read_text(encoding="utf-8") + line, encoding="utf-8")

    return edit


def spied_searches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times the relevance searched the texts, run after run."""
    searched: list[int] = []
    original = resolve_base.relevant_core

    def spied(*arguments: object, **keywords: object) -> object:
        searched.append(1)
        return original(*arguments, **keywords)  # type: ignore[arg-type]

    monkeypatch.setattr(resolve_base, "relevant_core", spied)
    return searched


def test_a_warm_run_after_edits_gives_the_cold_bytes(
    project: Path,  # noqa: F811 - the fixture
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Edits that keep the core take it from the cache (no search), also where the report
    changes; edits that change the core (a file that says `fused`, a name the core defines
    written elsewhere, a file added) search again; each warm run prints a cold run's bytes."""
    searched = spied_searches(monkeypatch)
    first = same_as_cold(project)
    seen = {first}
    steps = [  # lines put at the end: the queries' inputs (sites, lines) do not move
        ("kept", appended("pkg/factory.py", "_edited = 1\n")),
        ("kept", appended("pkg/module.py", "_edited2 = 1\n")),
        # the finding appears: module.py still holds the word, the core is the same
        ("kept", edit_line("pkg/module.py", "fused=False", "fused=True")),
        ("searched", appended("pkg/helper_2.py", "# fused\n")),
        ("kept", edit_line("pkg/module.py", "fused=True", "fused=False")),
        # helper_1 writes a name factory.py defines: it joins the core
        ("searched", appended("pkg/helper_1.py", "y = _edited\n")),
        # a file added: another list of files, nothing is taken
        ("searched", lambda root: write(root, "pkg/user.py", "from pkg.factory import _edited\n")),
    ]
    for expected, step in steps:
        step(project)
        searched.clear()
        warm = amp_clipfix(project, "check", entry=False)
        warm_searches = len(searched)
        cold = amp_clipfix(project, "check", "--no-cache", entry=False)
        assert warm == cold
        assert len(searched) > warm_searches  # the cold run searched
        assert (warm_searches == 0) is (expected == "kept"), (expected, warm_searches)
        seen.add(warm.stdout)
    assert len(seen) >= 3, seen  # the edits changed the report
