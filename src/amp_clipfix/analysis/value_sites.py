"""Where a project function's value can go, told from how a module writes its name: the question
the clip index asks of each function before it takes it in (clip_tail.ClipCapable).

A reading enters a call only where the evaluator says its callee is a project function
(callables.callees: a callee's `Fn`, an instance's `__call__`). So a function the index holds
matters to a call that does not call it by name only where the evaluator can follow its value
there: through project code (`fn = f`, `run(f)` of a project function, `self.f = f`, a
`return f`, a container), a `getattr(x, "f")` whose name is written at the call (library.py
`call_getattr`) or decided by the code from a string held elsewhere (dataclass_calls:
`NAME = "f"`, then `getattr(x, NAME)`; so every string the module writes counts), a renamed
import, a `global`. Those open the index, as they always did, but for an instance's `__call__`
and a closure, whose values are followed from where they are made (analysis/instance_flow.py:
the calls that may run them are kept as sites, as below).

Two writings give the value to library code only, and the evaluator never follows it back:

- an argument of a library call whose result is dropped (`mp.spawn(run, nprocs=2)`,
  `app.run(main)`, a statement of its own): the library may call the function, in that call or
  later, but a library call is never entered (its callee is no `Fn`), and nothing the project
  holds is made from the function;
- a library decorator (`@pytest.mark.parametrize(...)`, `@torch.no_grad()`): the name is bound
  to what it returns, and the project reaches that only through the name, which the index
  follows as it follows any call spelled with it.

The first kind's calls are kept (`Found.sites`): a call that may run the function, as a call
spelled with its name is (a step's closure is read where it is handed on). A string equal to
the name opens the index only where an attribute of that name may be the function (a method,
a function of a module an object of which may be made): the evaluator reads `getattr(x, "f")`
as `x.f` (`attribute_of`, for a name written at the call and one the code decides alike), so
it gives a module-level function only where `x` may be its module's object. A `global` or
`nonlocal` of the name rebinds the function's own name: it always opens.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from amp_clipfix.analysis.bound_names import plain_decorator
from amp_clipfix.analysis.instance_flow import Function, ValueFlow, lines_matching
from amp_clipfix.analysis.instance_flow import Sites as CallSites
from amp_clipfix.analysis.module_objects import last_module_name, value_written
from amp_clipfix.analysis.name_uses import spelling
from amp_clipfix.analysis.names import EXTERNAL_ROOTS
from amp_clipfix.analysis.nodes import walk_on
from amp_clipfix.analysis.order import FUNCTIONS
from amp_clipfix.analysis.summary import called_name
from amp_clipfix.analysis.values import Ext
from amp_clipfix.records import record

if TYPE_CHECKING:
    from pathlib import Path

    from amp_clipfix.analysis.evaluate import Evaluator
    from amp_clipfix.analysis.summary import Summary


@record(frozen=True)
class Found:
    """One function of the clip index (clip_tail.py): its node, file and whether it is a
    method; `sites`: the library calls it is handed to, which may run it as a call of it does."""

    node: Function
    summary: Summary
    method: bool
    sites: tuple[tuple[ast.Call, Summary], ...] = ()


class Flows(Protocol):
    """The search's answers of `followed`, kept for every index that serves it."""

    flows: dict[int, tuple[Function, CallSites | None]]


class Index(Protocol):
    """What the value question asks of the clip index (clip_tail.ClipCapable)."""

    evaluator: Evaluator
    owners: dict[int, set[str]]
    written: dict[tuple[int, str], tuple[ast.Module, WrittenValues]]

    def attribute_reachable(self, function: Found) -> bool: ...
    def exporters(self, function: Found) -> set[str]: ...
    def writes_value(self, path: Path, word: bytes) -> bool: ...
    def affordable(self, paths: list[Path]) -> list[Path]: ...
    def summary(self, path: Path) -> Summary | None: ...
    def imports_star(self, path: Path) -> bool: ...

    @property
    def reach(self) -> Flows: ...  # the search the index serves

    def seen_from(self, function: Found) -> list[Path] | None: ...
    def may_call(self, call: ast.Call, summary: Summary, function: Found) -> bool: ...


# the calls a function is handed to, or None where its value may reach project code
Sites = tuple[ast.Call, ...] | None
Library = Callable[[ast.expr], bool]  # whether a callee expression is library code only
# whether a module's bare name may be the function (its own module's, a `*` import), whether
# an attribute of that name may, and the modules a renamed import of it may come from
Seen = tuple[bool, bool, set[str] | None]


class WrittenValues:
    """How one module writes names, from one walk (breadth first: a statement and a call are
    met before their parts): as a value the evaluator may follow, by name (`names`) or as an
    attribute (`x.name`, and `x.name = ...`: `attributes`); as a string (`strings`: an
    attribute's name `getattr` may get, written at the call or held in a name first), or in a
    `global` or `nonlocal` (`declared`); handed to a dropped call, with the call and whether
    it is an attribute there (`handed`); imported under another name, from which module
    (`renamed`, None for `from . import`), or under its own (`imported`). A call's
    callee, a plain name stored to, a `def` and a parameter are no value."""

    __slots__ = ("names", "attributes", "strings", "declared", "handed", "renamed", "imported")

    def __init__(self, nodes: Iterable[ast.AST]) -> None:
        self.names: set[str] = set()
        self.attributes: set[str] = set()
        self.strings: set[str] = set()
        self.declared: set[str] = set()  # the names of a `global` or `nonlocal`
        self.handed: dict[str, list[tuple[ast.Call, bool]]] = {}
        self.renamed: dict[str, list[str | None]] = {}
        self.imported: set[str] = set()
        callees: set[int] = set()
        given: dict[int, ast.Call] = {}  # an argument node -> the dropped call it is given to
        for node in nodes:
            kind = type(node)
            if kind is ast.Name or kind is ast.Attribute:
                if id(node) in callees:
                    continue
                name, attribute = spelling(node) or "", kind is ast.Attribute  # type: ignore[arg-type]
                if type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
                    call = given.get(id(node))
                    if call is not None:
                        self.handed.setdefault(name, []).append((call, attribute))
                    else:
                        (self.attributes if attribute else self.names).add(name)
                elif attribute:
                    self.attributes.add(name)  # `obj.name = ...`: another value under the name
            elif kind is ast.Constant and type(node.value) is str:  # type: ignore[attr-defined]
                self.strings.add(node.value)  # type: ignore[attr-defined]
            elif kind is ast.Call:
                callees.add(id(node.func))  # type: ignore[attr-defined]
            elif kind is ast.Expr:
                call = node.value  # type: ignore[attr-defined]
                if type(call) is ast.Call:
                    for argument in (*call.args, *(k.value for k in call.keywords if k.arg)):
                        if type(argument) is ast.Name or type(argument) is ast.Attribute:
                            given[id(argument)] = call
            elif kind is ast.ImportFrom:
                relative = node.level and not node.module  # type: ignore[attr-defined]
                for alias in node.names:  # type: ignore[attr-defined]
                    if alias.asname is None:
                        self.imported.add(alias.name)
                    else:
                        module = None if relative else node.module  # type: ignore[attr-defined]
                        self.renamed.setdefault(alias.name, []).append(module)
            elif kind is ast.Global or kind is ast.Nonlocal:
                self.declared.update(node.names)  # type: ignore[attr-defined]

    def sites(self, name: str, library: Library, seen: Seen) -> Sites:
        """The dropped library calls that get the function named `name` as an argument, in
        walk order; None where the module writes it as a value any other way (see the module's
        docstring). `seen`: whether the module's bare name may be the function, and an
        attribute of that name; the modules a renamed import of it may come from (None: any)."""
        names, attributes, modules = seen
        names = names or name in self.imported
        if name in self.declared or names and name in self.names:
            return None
        if attributes and (name in self.attributes or name in self.strings):
            return None  # `getattr(x, "name")` is an attribute read, as `x.name` is
        for module in self.renamed.get(name, ()):
            if module is None or modules is None or module.rsplit(".", 1)[-1] in modules:
                return None  # `from m import name as other`: a call of `other` may run it
        calls: list[ast.Call] = []
        for call, attribute in self.handed.get(name, ()):
            if (attributes if attribute else names) and call not in calls:
                calls.append(call)
        if not all(library(call.func) for call in calls):
            return None  # handed to project code, or to what the evaluator does not know
        return tuple(calls)


def lines_writing(summary: Summary, word: bytes) -> list[int] | None:
    """The lines of the module that write the word other than right before a `(` (a value, a
    string, an import clause: module_objects.value_written), and those with a byte outside
    ASCII; None: every line (no text kept)."""
    return lines_matching(summary, value_written(word))


def kept_by_decorators(decorators: list[ast.expr], library: Library) -> bool:
    """Every decorator keeps the name the project's way to the function: a plain one
    (`staticmethod`), or library code (`@torch.no_grad()`, `@pytest.mark.parametrize(...)`:
    its callee is, see the module's docstring)."""
    for decorator in decorators:
        if plain_decorator(decorator):
            continue
        callee = decorator.func if isinstance(decorator, ast.Call) else decorator
        if not library(callee):
            return False
    return True


def library_callee(evaluator: Evaluator, summary: Summary) -> Library:
    """Whether a callee expression of the module is library code by value: its values all
    `Ext` (no project function or class, nothing unknown)."""

    def library(callee: ast.expr) -> bool:
        if not isinstance(callee, (ast.Name, ast.Attribute)):
            return False
        values = evaluator.force(evaluator.ev(callee, evaluator.ctx_of(summary, callee)))
        return bool(values) and all(
            isinstance(value, Ext) and not names_project_module(evaluator, value.qname)
            for value in values
        )

    return library


def followed(
    index: Index, node: Function, ask: Callable[[ValueFlow], CallSites | None]
) -> CallSites | None:
    """`ask`'s answer of a new flow, once per search and function."""
    known = index.reach.flows
    if id(node) not in known:  # the node kept with its answer: no id reused
        flow = ValueFlow(index, library_of(index.evaluator), lambda f, s: value_calls(index, f, s))
        known[id(node)] = (node, ask(flow))
    return known[id(node)][1]


def value_calls(
    index: Index, node: Function, summary: Summary
) -> list[tuple[ast.Call, Summary]] | None:
    """The calls whose value is what the function returns: those spelled with its name that
    may run it, where it is no value the evaluator follows (None: it may be; its value is
    then what any call may give)."""
    owner = summary.enclosing(node)
    function = Found(node, summary, owner[0] is None and owner[1] is not None)
    sites = handed_sites(index, function)  # calls through its values, library calls given it
    if sites is None:
        return None
    name = node.name
    paths = index.seen_from(function)
    if paths is None:
        paths = index.evaluator.files_naming(name.encode("ascii"))
    found = list(sites)
    for path in index.affordable([p for p in paths if index.evaluator.may_call(p, name)]):
        where = index.summary(path)
        if where is None:
            return None
        for call in where.calls_kept(lambda c: called_name(c.func) == name, name):
            if index.may_call(call, where, function):
                found.append((call, where))
    return found


def library_of(evaluator: Evaluator) -> Callable[[Summary], Library]:
    """`library_callee` of each module asked."""
    return lambda summary: library_callee(evaluator, summary)


def names_project_module(evaluator: Evaluator, qname: str) -> bool:
    """The qualified name starts with a module of the project's (as find_module matches one,
    without loading it): an `Ext` the evaluator made of project code where it cut an import
    cycle (evaluate.resolve_qname) is none of a library's."""
    parts = qname.split(".")
    if parts[0] in EXTERNAL_ROOTS:
        return False
    for cut in range(len(parts), 0, -1):
        dotted = ".".join(parts[:cut])
        if evaluator.by_module.get(dotted) or evaluator.module_tails.get("." + dotted):
            return True
    return False


def enclosing_function(call: ast.Call, summary: Summary) -> Iterator[tuple[Function, bool]]:
    """The function that makes the call, if a function does (a call in a lambda, a class body
    or a module's own code is no helper's), and whether it is a method."""
    function, cls = summary.enclosing(call)
    if isinstance(function, FUNCTIONS):
        owner = summary.enclosing(function)
        yield function, owner[0] is None and owner[1] is not None and cls is not None


def handed_sites(index: Index, function: Found) -> tuple[tuple[ast.Call, Summary], ...] | None:
    """The library calls the clip index's function is handed to, with their modules (and the
    calls of an instance's `__call__` or of a closure through their values: instance_flow.py);
    None where it may be a value the evaluator follows: a decorator of the project's, a file
    that can see it writes its name as one (a name, an attribute, a renamed import, a string
    `getattr` gets), an instance or closure the flow does not follow."""
    node = function.node
    library = library_callee(index.evaluator, function.summary)
    if not kept_by_decorators(node.decorator_list, library):
        return None
    outer, cls = function.summary.enclosing(node)
    if isinstance(outer, FUNCTIONS):  # a closure: only its function sees its name
        return followed(index, node, lambda flow: flow.closure_calls(node, outer, function.summary))
    instances: tuple[tuple[ast.Call, Summary], ...] = ()
    if node.name == "__call__":
        if not function.method or cls is None:
            return None
        calls = followed(index, node, lambda flow: flow.instance_calls(cls, function.summary))
        if calls is None:
            return None  # an instance may be called where the flow does not follow it
        instances = calls
    name = node.name
    public = function.method or index.attribute_reachable(function)
    exporters = index.exporters(function) if not function.method else set()
    word = name.encode("ascii")
    candidates = []
    for path in index.evaluator.files_naming(word):
        if not (public or last_module_name(path) in exporters):
            continue  # no module object, no import of it: the file cannot see it
        if index.writes_value(path, word):
            candidates.append(path)  # else every time it is written it is called
    # a module object that may hold a module-level function: its own module's, a package's
    # above it, an importer's under its name (clip_tail.ClipCapable.exporters)
    modules = None if function.method else exporters | index.owners[id(node)]
    found: list[tuple[ast.Call, Summary]] = []
    for path in index.affordable(candidates):
        summary = index.summary(path)
        if summary is None:
            return None
        key = (id(summary.tree), name)
        if key not in index.written:  # the tree kept with its values: no id reused
            written = WrittenValues(walk_on(summary.tree, lines_writing(summary, word)))
            index.written[key] = (summary.tree, written)
        own = path == function.summary.path or index.imports_star(path)
        seen = (own, public, modules)  # a method's name is a bare name in its module only
        sites = index.written[key][1].sites(name, library_callee(index.evaluator, summary), seen)
        if sites is None:
            return None
        found += ((call, summary) for call in sites)
    return (*found, *instances)
