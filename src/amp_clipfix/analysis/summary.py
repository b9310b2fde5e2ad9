"""A cheap per-file summary read with the stdlib `ast`: what the project resolution needs.

Parsing with `ast` is 10-50x faster than libcst with metadata, so every file that may take part
is summarised; only files that will change are parsed with libcst. A summary is plain picklable
data (the tree, the imports, the top-level bindings), so it can be cached by content hash.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from amp_clipfix.models import Span
from amp_clipfix.sources.prefilter import called_name


@dataclass
class Summary:
    """One module: its dotted name in the project, its tree and the names it binds."""

    path: Path
    name: str  # dotted module name relative to the project root ("pkg.mod")
    is_package: bool
    tree: ast.Module
    lines: list[bytes]  # UTF-8 lines, to turn ast byte columns into character columns
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    top: dict[str, list[ast.AST]] = field(default_factory=dict)  # module-level bindings
    _parents: dict[int, ast.AST] | None = None
    _calls: dict[str, list[ast.Call]] | None = None
    _starts: dict[tuple[int, int], ast.AST] | None = None  # see resolve.expression_starts

    # -- positions -----------------------------------------------------------------------------

    def column(self, line: int, byte_column: int) -> int:
        """libcst counts columns in characters, ast in UTF-8 bytes."""
        if 0 < line <= len(self.lines):
            return len(self.lines[line - 1][:byte_column].decode("utf-8", "replace"))
        return byte_column

    def span(self, node: ast.AST) -> Span:
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return Span(
            line,
            self.column(line, node.col_offset),  # type: ignore[attr-defined]
            end_line,
            self.column(end_line, node.end_col_offset or 0),  # type: ignore[attr-defined]
        )

    def entry(self, call: ast.AST) -> str:
        """The id of a Fabric(...) / Trainer(...) call, as the libcst collector names it."""
        span = self.span(call)
        return f"{self.path}:{span.line}:{span.column}"

    # -- structure -----------------------------------------------------------------------------

    def parents(self) -> dict[int, ast.AST]:
        if self._parents is None:
            self.index()
        assert self._parents is not None
        return self._parents

    def calls(self, last_name: str) -> list[ast.Call]:
        """Calls whose callee's last name is `last_name` (`f(...)`, `x.f(...)`)."""
        if self._calls is None:
            self.index()
        assert self._calls is not None
        return self._calls.get(last_name, [])

    def index(self) -> None:
        """Parents and calls by name, in one walk over the tree (the walk is what costs)."""
        parents: dict[int, ast.AST] = {}
        calls: dict[str, list[ast.Call]] = {}
        stack: list[ast.AST] = [self.tree]
        while stack:
            node = stack.pop()
            for child in ast.iter_child_nodes(node):
                parents[id(child)] = node
                stack.append(child)
            if isinstance(node, ast.Call):
                name = called_name(node.func)
                if name is not None:
                    calls.setdefault(name, []).append(node)
        for found in calls.values():
            found.sort(key=lambda call: (call.lineno, call.col_offset))
        self._parents, self._calls = parents, calls

    def enclosing(self, node: ast.AST) -> tuple[ast.AST | None, ast.ClassDef | None]:
        """The innermost function (or lambda) around `node` and the class around that."""
        parents = self.parents()
        function: ast.AST | None = None
        current = parents.get(id(node))
        while current is not None:
            if function is None and isinstance(
                current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            ):
                function = current
            elif isinstance(current, ast.ClassDef):
                return function, current
            current = parents.get(id(current))
        return function, None


def module_name(root: Path, path: Path) -> tuple[str, bool]:
    try:
        parts = list(path.relative_to(root).with_suffix("").parts)
    except ValueError:
        parts = [path.stem]
    is_package = bool(parts) and parts[-1] == "__init__"
    if is_package:
        parts.pop()
    return ".".join(parts), is_package


def summarise(root: Path, path: Path, text: str) -> Summary | None:
    """The summary of one module, or None when Python cannot parse it (libcst reports it)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    name, is_package = module_name(root, path)
    summary = Summary(path, name, is_package, tree, text.encode("utf-8").splitlines())
    for statement in tree.body:
        record_binding(summary, statement)
    return summary


def record_binding(summary: Summary, statement: ast.stmt) -> None:
    """Module-level names: imports, definitions and assignments (also inside if/try)."""
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            if alias.asname:
                summary.imports[alias.asname] = alias.name
            else:
                first = alias.name.split(".", 1)[0]
                summary.imports[first] = first
    elif isinstance(statement, ast.ImportFrom):
        base = import_base(summary, statement)
        for alias in statement.names:
            if alias.name != "*":
                summary.imports[alias.asname or alias.name] = f"{base}.{alias.name}".lstrip(".")
    elif isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        summary.top.setdefault(statement.name, []).append(statement)
    elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            for name in target_names(target):
                summary.top.setdefault(name, []).append(statement)
    elif isinstance(statement, (ast.If, ast.Try)):
        for block in (statement.body, statement.orelse, *getattr(statement, "handlers", ())):
            for inner in block if isinstance(block, list) else block.body:
                record_binding(summary, inner)


def import_base(summary: Summary, statement: ast.ImportFrom) -> str:
    if not statement.level:
        return statement.module or ""
    package = summary.name.split(".") if summary.name else []
    if not summary.is_package:
        package = package[:-1]
    if statement.level > 1:
        package = package[: len(package) - (statement.level - 1)]
    return ".".join([*package, *([statement.module] if statement.module else [])])


def target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in target_names(element)]
    if isinstance(target, ast.Starred):
        return target_names(target.value)
    return []
