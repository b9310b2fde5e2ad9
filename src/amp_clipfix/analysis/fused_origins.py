"""Where a fused optimizer can come from: the project's `fused` values, and whether any of them
can leave the function that writes it. A fact of the index that gates the optimizer search of
module classes (resolve_optimizers.py) and, when no fused optimizer can be built at all, every
search for the files a fused value reaches (resolve_base.reached_among).

The search evaluates every call of every method of every module class and its bases, and makes
a site only of an optimizer whose `fused` it follows to a value, or of one built at a call the
collector holds a site in. Such a value is written as `fused` (the origins): a `fused=` keyword,
a `"fused"` key or string that may become one (not a dict's key set to the constant False or
None: inert_nodes), a field or attribute set under that name, a module's `hparams` read by that
name. When the collector holds no optimizer site and every origin stays in its own function (it
is not returned, stored outside, or passed to project code: only to the standard library or
another library, `super().__init__(params, defaults)` of a library base), no fused value reaches
any other function: only the methods that hold an origin can give the search a site, and the
others are not evaluated. Otherwise every method is.

The origins are found in the files whose text may write one (MAY_WRITE_FUSED, a scan the queries
note), each parsed once (the evaluator's summaries). Library code is never an origin: what it
builds or holds is never a user's site.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.nodes import target_names, walk
from amp_clipfix.analysis.recording import PREDICATES, holds, matches, scan
from amp_clipfix.analysis.shapes import all_params
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.tested_params import tested_only
from amp_clipfix.models import FileSites, SiteKind
from amp_clipfix.paths import is_library
from amp_clipfix.patterns import lazy
from amp_clipfix.records import field, record

FUSED = "fused"
# Where an origin may be written: `fused=` (a keyword, an assignment, `fused: bool`), a string
# `"fused"`, an attribute `.fused`; a file without any is not parsed. The pattern starts with
# the word itself and looks back from it (each alternative's lookbehind spans the word), so the
# search jumps from one `fused` to the next: about 45 times faster than the same alternatives
# written from their first byte (tests/test_fused_scan.py compares the two).
MAY_WRITE_FUSED = lazy(
    rb"fused(?:(?<![A-Za-z0-9_]fused)\s*(?:[:,]|[-+*/|&^%@]?=(?!=))"
    rb"|(?<=[\"']fused)[\"']|(?<=\.fused)(?![A-Za-z0-9_]))"
)
BUILTIN_NAMES = frozenset(dir(builtins))
FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
Place = tuple[Path, int, int]  # a function's file, line and column


@record
class FusedOrigins:
    """The answer: whether some fused value may leave its function (then every method is
    evaluated), else the functions that hold one."""

    escapes: bool
    holders: set[Place] = field(default_factory=set)
    reason: str = ""  # why it escapes (for the figures and the tests)

    def may_yield(self, path: Path, function: ast.AST) -> bool:
        """Whether evaluating the calls of `function` (of `path`) can give a site."""
        if self.escapes:
            return True
        return place(path, function) in self.holders


def place(path: Path, function: ast.AST) -> Place:
    return (path, getattr(function, "lineno", 0), getattr(function, "col_offset", 0))


def fused_origins(
    files: Mapping[Path, FileSites],
    contents: Mapping[Path, bytes],
    summary: Callable[[Path], Summary | None],
    is_project_module: Callable[[str], bool],
) -> FusedOrigins:
    """The origins of a project (see the module docstring). `files`: the collector's sites;
    `contents`: the project's Python texts (scanned as the queries note it: recording.scan);
    `is_project_module(dotted)`: whether a qualified name may name project code."""
    for path, file in files.items():
        if is_library(path):
            continue
        if any(site.kind is SiteKind.FUSED_OPTIMIZER for site in file.sites):
            return FusedOrigins(True, reason=f"an optimizer site in {path.name}")
    holders: set[Place] = set()
    for path in written_fused(contents):
        found = summary(path)
        if found is None:
            return FusedOrigins(True, reason=f"{path.name} does not parse")
        escape = file_origins(path, found, is_project_module, holders)
        if escape:
            return FusedOrigins(True, reason=f"{path.name}: {escape}")
    return FusedOrigins(False, holders)


def written_fused(contents: Mapping[Path, bytes]) -> Iterable[Path]:
    """The files that may write an origin: those the scan finds writing `fused` in code (not in
    comments only), library files left out. One scan, noted with its answer: an edit asks
    again only where a file's answer changes."""
    return scan(contents, holds(FUSED.encode()), matches(MAY_WRITE_FUSED), IN_PROJECT_CODE)


def writes_in_code(data: bytes) -> bool:
    """Whether some MAY_WRITE_FUSED match of the text may be code: any but one after a `#` on
    its line (which ends at a newline or a carriage return, as Python's do) with no quote and
    no `{` between the line's start and the match. No string opens on that line before it, so
    the `#` starts a comment; or a string open since an earlier line holds the `#` and the
    match both, and its value, holding a `#`, is never "fused" (a `{` may open an f-string's
    expression: counted)."""
    for match in MAY_WRITE_FUSED.finditer(data):
        at = match.start()
        line = data[max(data.rfind(b"\n", 0, at), data.rfind(b"\r", 0, at)) + 1 : at]
        if b"#" not in line or b'"' in line or b"'" in line or b"{" in line:
            return True
    return False


PREDICATES["fused_in_project_code"] = lambda path, data: (
    not is_library(path) and writes_in_code(data)
)
IN_PROJECT_CODE = ("fn", "fused_in_project_code")


def file_origins(
    path: Path, summary: Summary, is_project_module: Callable[[str], bool], holders: set[Place]
) -> str:
    """The origins of one module: "" when each stays in its function (added to `holders`),
    else why one may leave."""
    inert = inert_nodes(summary.tree)
    for node in outside_functions(summary.tree):
        if is_origin(node, inert) or is_field(node):
            return f"`fused` outside a function (line {getattr(node, 'lineno', '?')})"
    for function, cls in functions(summary.tree):
        origins: list[ast.AST] = []
        inner: list[FunctionNode] = []  # nested functions: their origins are this one's
        for node in walk(function):  # one walk for both (most functions hold no origin)
            if is_origin(node, inert):
                origins.append(node)
            elif node is not function and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner.append(node)
        if not origins:
            continue
        escape = leaves(function, cls, summary, origins, inert, is_project_module)
        if escape:
            return f"{escape} in {function.name}() (line {function.lineno})"
        holders.update(place(path, f) for f in (*inner, function))
    return ""


def outside_functions(tree: ast.Module) -> Iterable[ast.AST]:
    """The nodes of a module that are in no function (module and class bodies, decorators,
    defaults and annotations of the functions defined there)."""
    todo: list[ast.AST] = [tree]
    while todo:
        current = todo.pop()
        if isinstance(current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = current.args
            todo += [*args.defaults, *(d for d in args.kw_defaults if d)]
            if not isinstance(current, ast.Lambda):
                todo += current.decorator_list
            continue
        yield current
        todo.extend(ast.iter_child_nodes(current))


def functions(tree: ast.Module) -> Iterable[tuple[FunctionNode, ast.ClassDef | None]]:
    """The outermost functions (what is nested in one belongs to it), each with the class it
    is a method of; the functions nested in one are held with it (file_origins), so that each
    may be asked for, but their origins are judged with the outermost."""
    todo: list[tuple[ast.AST, ast.ClassDef | None]] = [(tree, None)]
    while todo:
        current, cls = todo.pop()
        for child in ast.iter_child_nodes(current):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield child, cls
            elif isinstance(child, ast.ClassDef):
                todo.append((child, child))
            elif not isinstance(child, ast.Lambda):
                todo.append((child, cls))


def inert_nodes(tree: ast.Module) -> set[int]:
    """The `"fused"` strings that set no key: a value stored or passed by another keyword, held
    as a dict's value, compared, a docstring, or a key read (`group["fused"]`, but not a
    module's `hparams["fused"]`, which reads its constructor's parameter of that name). Nor a
    dict display's key whose value is the constant False or None (`{"fused": False}`): it
    writes a value that makes no optimizer fused (torch's `fused=None/False` is not; the
    search makes a site only of a true or unknown value), and whatever may later make that
    key true (`d["fused"] = x`, `d.update(fused=x)`, `dict(d, fused=x)`, `{**d, "fused": x}`)
    is an origin of its own. A `fused=False` keyword stays one (not proven here). Nor a
    `fused=` keyword of a call of a function of the module whose `fused` is only tested
    (tested_params.py)."""
    inert: set[int] = set()
    testers = tested_only(tree, FUSED)
    for node in walk(tree):
        called = node.func if isinstance(node, ast.Call) else None
        if isinstance(node, ast.Call) and isinstance(called, ast.Name) and called.id in testers:
            inert.update(id(k) for k in node.keywords if k.arg == FUSED)
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if all(isinstance(t, (ast.Subscript, ast.Attribute)) for t in targets):
                inert.add(id(node.value))
        elif isinstance(node, ast.keyword) and node.arg != FUSED:
            inert.add(id(node.value))
        elif isinstance(node, ast.Dict):
            inert.update(id(value) for value in node.values)
            inert.update(
                id(key) for key, value in zip(node.keys, node.values) if never_on(key, value)
            )
        elif isinstance(node, ast.Compare):
            inert.update(id(part) for part in (node.left, *node.comparators))
        elif isinstance(node, ast.Expr):
            inert.add(id(node.value))
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            base = node.value
            if not (isinstance(base, ast.Attribute) and base.attr == "hparams"):
                inert.add(id(node.slice))
    return inert


def never_on(key: ast.expr | None, value: ast.expr) -> bool:
    """A dict display's `"fused": False` or `"fused": None`: these constants only (as the
    search reads them), not any other falsy one."""
    return (
        isinstance(key, ast.Constant)
        and key.value == FUSED
        and isinstance(value, ast.Constant)
        and (value.value is False or value.value is None)
    )


def is_origin(node: ast.AST, inert: set[int]) -> bool:
    if isinstance(node, ast.keyword):
        return node.arg == FUSED and id(node) not in inert
    if isinstance(node, ast.Constant):
        return node.value == FUSED and id(node) not in inert
    if isinstance(node, ast.Attribute) and node.attr == FUSED:
        base = node.value
        reads_hparams = isinstance(base, ast.Attribute) and base.attr == "hparams"
        return isinstance(node.ctx, ast.Store) or reads_hparams
    return False


def is_field(node: ast.AST) -> bool:
    """A name `fused` bound outside a function: a field (`fused: bool = True`), a global."""
    return isinstance(node, ast.Name) and node.id == FUSED and isinstance(node.ctx, ast.Store)


def leaves(
    function: FunctionNode,
    cls: ast.ClassDef | None,
    summary: Summary,
    origins: list[ast.AST],
    inert: set[int],
    is_project_module: Callable[[str], bool],
) -> str:
    """Why a fused value written in `function` may leave it, or "" (see the module docstring).
    Local names bound to a value that holds one hold one too (to a fixed point)."""
    origin_ids = {id(node) for node in origins}
    nodes = [node for node in walk(function) if node is not function]
    local = local_names(function, nodes)
    fresh = fresh_containers(function, nodes)
    tainted: set[str] = set()

    def holds(node: ast.AST | None) -> bool:
        if node is None:
            return False
        for current in walk(node):
            if id(current) in origin_ids:
                return True
            if isinstance(current, ast.Name) and current.id in tainted:
                return True
        return False

    declared = {
        n for node in nodes if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names
    }
    changed = True
    while changed:
        changed = False
        for node in nodes:
            targets, value = binding(node)
            keyed = any(holds(t) for t in targets if isinstance(t, (ast.Subscript, ast.Attribute)))
            if not targets or not (holds(value) or keyed):
                continue  # (`kw["fused"] = x`, `ns.fused = x`: the key or name is the origin)
            for target in targets:
                if isinstance(target, (ast.Attribute, ast.Subscript)):
                    base = target.value
                    while isinstance(base, (ast.Attribute, ast.Subscript, ast.Call)):
                        base = base.func if isinstance(base, ast.Call) else base.value
                    if not (isinstance(base, ast.Name) and base.id in fresh):
                        if isinstance(node, ast.Call):
                            continue  # a method of what is not local: the call is judged below
                        return "stored outside"
                    if base.id not in tainted:
                        tainted.add(base.id)
                        changed = True
                    continue
                for name in target_names(target):
                    if name in declared:
                        return f"stored in global {name}"
                    if name not in tainted:
                        tainted.add(name)
                        changed = True
    for node in nodes:
        if isinstance(node, (ast.Return, ast.Yield, ast.YieldFrom, ast.Await, ast.Raise)):
            if holds(getattr(node, "value", None) or getattr(node, "exc", None)):
                return "returned"
        elif isinstance(node, ast.Call):
            passed = [*node.args, *(k.value for k in node.keywords)]
            if not any(holds(argument) for argument in passed) and not any(
                id(k) in origin_ids for k in node.keywords
            ):
                continue
            if not library_callee(node.func, cls, summary, local, is_project_module):
                return f"passed to {describe(node.func)}"
    return ""


def fresh_containers(function: FunctionNode, nodes: list[ast.AST]) -> set[str]:
    """Local names only ever bound to a container made here (`kw = {}`, `dict(...)`, a
    comprehension): what is stored into them stays here unless they leave. Not a parameter,
    nor a name bound to anything else (`d = self.cfg` changes the module's own)."""
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    refused = {a.arg for a in every if a is not None}
    made: set[str] = set()
    for node in nodes:
        targets, value = binding(node)
        for target in targets:
            for name in target_names(target):
                if isinstance(node, ast.Assign) and is_fresh(value):
                    made.add(name)
                else:
                    refused.add(name)
    return made - refused


def is_fresh(value: ast.AST | None) -> bool:
    containers = (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)
    if isinstance(value, containers):
        return True
    return (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id in ("dict", "list", "set")
    )


def local_names(function: FunctionNode, nodes: list[ast.AST]) -> set[str]:
    """Names bound in the function (its parameters too): not the module's or the builtins'."""
    found = {a.arg for a in all_params(function.args)}
    for node in nodes:
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(node.id)
        elif isinstance(node, ast.arg):
            found.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.alias):
            found.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            found.add(node.name)
    return found


def binding(node: ast.AST) -> tuple[list[ast.expr], ast.AST | None]:
    """What a statement or expression binds, and to what (a call binds its receiver to what
    it is passed: `items.append(x)`)."""
    if isinstance(node, ast.Assign):
        return list(node.targets), node.value
    if isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        return [node.target], node.value
    if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
        return [node.target], node.iter
    if isinstance(node, ast.withitem):
        return ([node.optional_vars] if node.optional_vars is not None else []), node.context_expr
    if isinstance(node, ast.NamedExpr):
        return [node.target], node.value
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
        name = getattr(node, "name", None)
        return ([ast.Name(name, ast.Store())] if name else []), node
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        passed = ast.List([*node.args, *(k.value for k in node.keywords)], ast.Load())
        return [ast.Attribute(node.func.value, node.func.attr, ast.Store())], passed
    return [], None


def library_callee(
    func: ast.expr,
    cls: ast.ClassDef | None,
    summary: Summary,
    local: set[str],
    is_project_module: Callable[[str], bool],
) -> bool:
    """Whether a callee is surely no project code: a builtin the module does not rebind, a
    name or attribute of an imported library, `super().m` of a class whose bases all are."""
    if isinstance(func, ast.Name):
        return library_name(func.id, summary, local, is_project_module)
    if isinstance(func, ast.Attribute):
        base = func.value
        if (
            isinstance(base, ast.Call)
            and isinstance(base.func, ast.Name)
            and base.func.id == "super"
        ):
            return (
                cls is not None
                and bool(cls.bases)
                and all(library_base(b, summary, is_project_module) for b in cls.bases)
            )
        while isinstance(base, ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name) and base.id not in local and base.id in summary.imports:
            return not is_project_module(summary.imports[base.id])
    return False


def library_base(
    base: ast.expr, summary: Summary, is_project_module: Callable[[str], bool]
) -> bool:
    root = base
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name) or root.id not in summary.imports:
        return False
    return not is_project_module(summary.imports[root.id])


def library_name(
    name: str, summary: Summary, local: set[str], is_project_module: Callable[[str], bool]
) -> bool:
    if name in local:
        return False
    if name in summary.imports:
        return not is_project_module(summary.imports[name])
    return name in BUILTIN_NAMES and name not in summary.top


def describe(func: ast.expr) -> str:
    try:
        return ast.unparse(func)
    except Exception:  # noqa: BLE001 - only a label
        return "a call"


def project_modules(modules: Iterable[str]) -> Callable[[str], bool]:
    """`is_project_module` over the project's dotted module names: a qualified name names
    project code when one of its prefixes is a project module, or the tail of one (a module
    found by the end of its name, as the evaluator finds `pkg.mod` for `src.pkg.mod`)."""
    known: set[str] = set()
    for module in modules:
        parts = module.split(".")
        for start in range(len(parts)):
            known.add(".".join(parts[start:]))

    def is_project(qualified: str) -> bool:
        parts = qualified.split(".")
        if parts[0] in names.EXTERNAL_ROOTS:
            return False  # as the evaluator reads it: never a project module
        return any(".".join(parts[:end]) in known for end in range(1, len(parts) + 1))

    return is_project
