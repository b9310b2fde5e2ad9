"""The package's import graph as lint-imports reads it (grimp: imports inside functions and
under TYPE_CHECKING count): no cycle among its modules, the layers contract of pyproject.toml
kept, and no module too long to read as one piece."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

import amp_clipfix

PACKAGE = "amp_clipfix"
ROOT = Path(__file__).resolve().parent.parent
SOURCE = Path(amp_clipfix.__file__).resolve().parent
LONGEST = 500  # lines

# Cycles that other work removes, each with who removes it. A listed cycle that no longer exists
# fails the test too: delete its entry, so the list only shrinks.
KNOWN_CYCLES: dict[frozenset[str], str] = {}
# Modules over LONGEST lines that other work splits; the same rule.
KNOWN_LONG: dict[str, str] = {}


def import_cycles(graph: grimp.ImportGraph) -> set[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, without
    recursion: the graph is small, but a recursion limit is no place for a test to fail)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[frozenset[str]] = set()

    def imports_of(module: str) -> Iterator[str]:
        return iter(sorted(graph.find_modules_directly_imported_by(module)))

    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, imports_of(start))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, imported = work[-1]
            for other in imported:
                if other not in index:
                    index[other] = low[other] = len(index)
                    stack.append(other)
                    on_stack.add(other)
                    work.append((other, imports_of(other)))
                    break
                if other in on_stack:
                    low[module] = min(low[module], index[other])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[module])
                if low[module] == index[module]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.add(frozenset(component))
    return found


def test_no_import_cycle_among_the_modules() -> None:
    cycles = import_cycles(grimp.build_graph(PACKAGE, cache_dir=None))
    new = [sorted(cycle) for cycle in cycles if cycle not in KNOWN_CYCLES]
    gone = [sorted(cycle) for cycle in KNOWN_CYCLES if cycle not in cycles]
    assert not new, f"modules that import each other (directly or through others): {new}"
    assert not gone, f"no longer a cycle, remove it from KNOWN_CYCLES: {gone}"


def test_the_cycle_finder_finds_a_cycle_through_three_modules() -> None:
    graph = grimp.ImportGraph()
    for importer, imported in [("p.a", "p.b"), ("p.b", "p.c"), ("p.c", "p.a"), ("p.c", "p.d")]:
        graph.add_import(importer=importer, imported=imported)
    assert import_cycles(graph) == {frozenset({"p.a", "p.b", "p.c"})}


def test_the_layers_contract_is_kept() -> None:
    """The contract `.ci/run` checks with lint-imports, here too so that pytest catches it."""
    assert lint_imports(config_filename=str(ROOT / "pyproject.toml"), no_cache=True) == 0


def test_no_module_is_longer_than_500_lines() -> None:
    lengths = {
        path.relative_to(SOURCE).as_posix(): len(path.read_bytes().splitlines())
        for path in SOURCE.rglob("*.py")
    }
    long = {name: lines for name, lines in lengths.items() if lines > LONGEST}
    assert not {name: lines for name, lines in long.items() if name not in KNOWN_LONG}
    gone = sorted(name for name in KNOWN_LONG if name not in long)
    assert not gone, f"now {LONGEST} lines or fewer, remove from KNOWN_LONG: {gone}"
