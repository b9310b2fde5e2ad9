"""A cheap per-file summary read with the stdlib `ast`: what the project resolution needs.

Parsing with `ast` is 10-50x faster than libcst with metadata, so every file that may take part
is summarised; only files that will change are parsed with libcst. A summary is plain picklable
data (the tree, the imports, the top-level bindings), so it can be cached by content hash.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path

from amp_clipfix.analysis.bodies import UNREAD_KINDS, Bodies, kept_calls, unread_body
from amp_clipfix.analysis.module_names import module_name
from amp_clipfix.analysis.nodes import (
    DECORATED,
    block_fields,
    calls_in,
    child_nodes,
    first_line,
    inner_statements,
    target_names,
)
from amp_clipfix.analysis.parse import LargeModule, Lines, parse_module, pruned_statements
from amp_clipfix.analysis.text_lines import TextLines
from amp_clipfix.models import EntryId, Span
from amp_clipfix.records import field, record
from amp_clipfix.sources.prefilter import literal_starts, whole_word_starts

# What holds statements, and what a statement sits in: statements, `except` clauses, `case`s.
STATEMENTS = (ast.stmt, ast.ExceptHandler, ast.match_case)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# The statements that hold statements (blocks_of finds none in any other).
COMPOUND = (
    frozenset(
        kind
        for kind in vars(ast).values()
        if isinstance(kind, type)
        and issubclass(kind, ast.stmt)
        and {"body", "orelse", "finalbody", "handlers", "cases"} & set(kind._fields)
    )
    | UNREAD_KINDS
)
# Names asked of one module's `calls` (or `passing`) past which every call is indexed by name
# in one walk, not looked for on the lines writing each name.
INDEXED_NAMES = 64
NON_ASCII = re.compile(rb"[\x80-\xff]+")


def argument_names(call: ast.Call) -> set[str | None]:
    """The names a call's arguments are written with (Summary.passing)."""
    return {called_name(value) for value in (*call.args, *(k.value for k in call.keywords))}


def called_name(func: ast.expr) -> str | None:
    """The name an expression ends with: `f` and `x.f` -> "f" (what a call is indexed under,
    and the name a function passed as a value, `fn` or `self.train`, is written with)."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


@record
class Summary:
    """One module: its dotted name in the project, its tree and the names it binds."""

    path: Path
    name: str  # dotted module name relative to the project root ("pkg.mod")
    is_package: bool
    tree: ast.Module
    lines: Sequence[bytes]  # UTF-8 lines, to turn ast byte columns into character columns
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified name
    top: dict[str, list[ast.AST]] = field(default_factory=dict)  # module-level bindings (Bindings)
    # Keyed by the nodes themselves (hashed by identity): an `id()` key is one more int object
    # for each of a tree's hundreds of thousands of nodes.
    _parents: dict[ast.AST, ast.AST] | None = None
    _indexed: set[int] = field(default_factory=set)
    _starts: list[int] = field(default_factory=list)
    _calls: dict[str, list[ast.Call]] = field(default_factory=dict)  # by callee name
    _passing: dict[str, list[ast.Call]] = field(default_factory=dict)  # by argument name
    _non_ascii: list[int] | None = None
    _walked_calls: list[ast.Call] | None = None
    _classes: list[ast.ClassDef] | None = None
    _walked_statements: list[ast.stmt] | None = None
    _source: str | None = None

    # -- positions -----------------------------------------------------------------------------

    def column(self, line: int, byte_column: int) -> int:
        """libcst counts columns in characters, ast in UTF-8 bytes: the same where the text is
        all ASCII (asked of every expression on a site's line, and twice per span)."""
        lines = self.lines
        if 0 < line <= len(lines):
            if byte_column >= 0 and isinstance(lines, TextLines) and not self.non_ascii():
                return min(byte_column, lines.ends[line - 1] - lines.starts[line - 1])
            return len(lines[line - 1][:byte_column].decode("utf-8", "replace"))
        return byte_column

    def source(self) -> str:
        """The module's text as `ast.get_source_segment` reads it (made on first use: only
        reports of sites found by the resolution quote it)."""
        if self._source is None:
            self._source = b"\n".join(self.lines).decode("utf-8", "replace")
        return self._source

    def span(self, node: ast.AST) -> Span:
        line, end_line = node.lineno, node.end_lineno or node.lineno  # type: ignore[attr-defined]
        return Span(
            line,
            self.column(line, node.col_offset),  # type: ignore[attr-defined]
            end_line,
            self.column(end_line, node.end_col_offset or 0),  # type: ignore[attr-defined]
        )

    def entry(self, call: ast.AST) -> EntryId:
        """The id of a Fabric(...) / Trainer(...) call, as the libcst collector names it."""
        span = self.span(call)
        return EntryId(self.path, span.line, span.column)

    # -- structure -----------------------------------------------------------------------------

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node `node` sits in. Parents are indexed one top-level statement at a time, when
        a node inside it is asked about: a module of a million nodes with a handful of sites
        never maps them all."""
        if self._parents is None:
            self._parents = {statement: self.tree for statement in self.tree.body}
            self._starts = [statement.lineno for statement in self.tree.body]
        found = self._parents.get(node)
        if found is not None or node is self.tree:
            return found
        body = self.tree.body
        if hasattr(node, "lineno"):
            line = node.lineno
            position = bisect.bisect_right(self._starts, line) - 1
            around = []
            index = position
            while index >= 0 and (body[index].end_lineno or 0) >= line:  # `a; b` share a line
                around.append(index)
                index -= 1
            if position + 1 < len(body) and first_line(body[position + 1]) <= line:
                around.append(position + 1)  # in a decorator, above its `def` line
            for index in around:
                if index not in self._indexed and self.find_down(body[index], node):
                    return self._parents.get(node)
        else:  # a node without a position (`arguments`): every statement
            around = list(range(len(body)))
        for index in around:  # found nowhere on the way down: every node of the statements
            if index in self._indexed:
                continue
            self._indexed.add(index)
            stack: list[ast.AST] = [body[index]]
            while stack:
                current = stack.pop()
                for child in child_nodes(current):
                    self._parents[child] = current
                    stack.append(child)
        return self._parents.get(node)

    def find_down(self, top: ast.AST, node: ast.AST) -> bool:
        """Whether `node` is found below `top` going down only into the nodes whose position
        holds its own (and those without a position); the parents of the children of each
        node passed are noted. Most of a large statement is never mapped: the way to a node
        is a few nodes wide. Positions that mislead (an f-string's inside, before Python 3.12)
        only make it miss, and the caller then maps the whole statement."""
        assert self._parents is not None
        parents, decorated = self._parents, DECORATED
        line, column = node.lineno, node.col_offset  # type: ignore[attr-defined]
        end_line, end_column = node.end_lineno or line, node.end_col_offset or 0  # type: ignore[attr-defined]
        stack = [top]
        while stack:
            current = stack.pop()
            for child in child_nodes(current):
                parents[child] = current
                if child is node:
                    return True
                start = getattr(child, "lineno", None)
                if start is None:
                    stack.append(child)
                    continue
                if isinstance(child, decorated) and child.decorator_list:
                    if min(start, *(d.lineno for d in child.decorator_list)) > line:
                        continue  # from its first decorator's line, column 0
                elif start > line or (start == line and child.col_offset > column):  # type: ignore[attr-defined]
                    continue
                last = child.end_lineno or start  # type: ignore[attr-defined]
                last_column = child.end_col_offset or 0  # type: ignore[attr-defined]
                if last > end_line or (last == end_line and last_column >= end_column):
                    stack.append(child)
        return False

    def calls(self, last_name: str) -> list[ast.Call]:
        """Calls whose callee's last name is `last_name` (`f(...)`, `x.f(...)`), in source
        order; found once per name, walking only the lines that write it (calls_writing)."""
        found = self._calls.get(last_name)
        if found is None:
            if self.indexing(self._calls):
                return self.indexed(self._calls, last_name, lambda c: {called_name(c.func)}, True)
            found = self.calls_and_passing(last_name)
        return found

    def calls_and_passing(self, name: str) -> list[ast.Call]:
        """`calls(name)`, and `passing(name)` from the same walk when it is not known yet: a
        callers' search asks both of each file, the calls first (callers.search_callers)."""
        owners: list[ast.AST | None] = []
        walked = self.calls_found((name,), (), owners)
        if walked is self._walked_calls:  # every call listed (not plain ASCII lines, a name)
            return self.indexed(self._calls, name, lambda c: {called_name(c.func)}, True)
        if name not in self._passing and not self.indexing(self._passing):
            passing = kept_calls(walked, owners, lambda call: name in argument_names(call))
            self._passing[name] = [*passing] if passing is walked else passing  # sorted below
        found = kept_calls(walked, owners, lambda call: called_name(call.func) == name)
        found.sort(key=lambda call: (call.lineno, call.col_offset))
        self._calls[name] = found
        return found

    def passing(self, name: str) -> list[ast.Call]:
        """The calls, in `walked_calls`' order, one of whose arguments (positional or keyword,
        `*x` / `**x` as written) is written `name` or `x.name`: what may pass on a function
        of that name. Found once per name, as `calls`."""
        found = self._passing.get(name)
        if found is None:
            if self.indexing(self._passing):
                return self.indexed(self._passing, name, argument_names, False)
            found = self.calls_kept(lambda call: name in argument_names(call), name)
            self._passing[name] = found
        return found

    def indexing(self, index: dict[str, list[ast.Call]]) -> bool:
        """Whether a name's calls come from `index` of every call by name: once every call is
        listed (`walked_calls`: one pass serves all names) or many names were asked."""
        return self._walked_calls is not None or len(index) >= INDEXED_NAMES

    def non_ascii(self) -> list[int]:
        """Where the text's runs of bytes outside ASCII start (none in most modules)."""
        if self._non_ascii is None:
            assert isinstance(self.lines, TextLines)
            data = self.lines.data
            self._non_ascii = (
                [] if data.isascii() else [m.start() for m in NON_ASCII.finditer(data)]
            )
        return self._non_ascii

    def indexed(
        self,
        index: dict[str, list[ast.Call]],
        name: str,
        names: Callable[[ast.Call], set[str | None]],
        sort: bool,
    ) -> list[ast.Call]:
        """`calls` / `passing` once many names were asked (a module of thousands of functions:
        a walk of the lines writing each name walks its statements): every call under each of
        its `names`, in `walked_calls`' order (`sort`: by position); "" marks the index made."""
        if "" not in index:
            by_name: dict[str, list[ast.Call]] = {"": []}
            for node in self._walked_calls or calls_in(self.tree):  # not kept: a list to read
                for written in names(node):
                    if written is not None:
                        by_name.setdefault(written, []).append(node)
            for written, found in by_name.items():
                if sort:
                    found.sort(key=lambda call: (call.lineno, call.col_offset))
                index.setdefault(written, found)
        return index.get(name, [])

    def calls_writing(self, *words: str, signs: tuple[bytes, ...] = ()) -> list[ast.Call]:
        """The calls of `walked_calls`, in its order, that may write one of `words` (ASCII
        identifiers) or `signs` (ASCII text, `{`) in their callee or arguments: those on a line
        of the text that writes a word as a whole word or a sign anywhere, or that holds a byte
        outside ASCII (Python reads an identifier in its NFKC form: `ﬁt` is `fit`). Every call
        when they are listed already, or a word is not plain ASCII; a caller tests each call
        as it would test every call."""
        return self.calls_kept(lambda _: True, *words, signs=signs)

    def calls_kept(
        self, keep: Callable[[ast.Call], bool], *words: str, signs: tuple[bytes, ...] = ()
    ) -> list[ast.Call]:
        """`[c for c in calls_writing(...) if keep(c)]`, reading for good only the bodies of
        the calls kept (`keep` reads nothing but the call's own nodes: nodes.calls_in)."""
        owners: list[ast.AST | None] = []
        return kept_calls(self.calls_found(words, signs, owners), owners, keep)

    def calls_found(
        self, words: tuple[str, ...], signs: tuple[bytes, ...], owners: list[ast.AST | None]
    ) -> list[ast.Call]:
        if self._walked_calls is not None or not isinstance(self.lines, TextLines):
            return self.walked_calls()  # every body read: no owner to note
        if not all(word.isascii() and word.isidentifier() for word in words):
            return self.walked_calls()
        if not all(sign.isascii() and sign for sign in signs):
            return self.walked_calls()
        data, starts = self.lines.data, self.lines.starts
        offsets = [*self.non_ascii()]
        for word in set(words):  # found by a plain text search: no pattern per name
            offsets += whole_word_starts(data, word.encode("ascii"))
        for sign in set(signs):
            offsets += literal_starts(data, sign)
        lines = sorted({bisect.bisect_right(starts, offset) for offset in offsets})
        return calls_in(self.tree, lines, owners, unread_body) if lines else []

    def classes(self) -> list[ast.ClassDef]:
        """Every class the module defines, at any depth, in source order. A class is a
        statement, so only statements are walked (a tenth of the nodes of a typical module)."""
        if self._classes is None:
            classes: list[ast.ClassDef] = []
            stack: list[ast.stmt] = list(self.tree.body)
            while stack:
                statement = stack.pop()
                kind = type(statement)
                if kind is ast.ClassDef:
                    classes.append(statement)  # type: ignore[arg-type]
                if kind in COMPOUND:  # the others hold no statement
                    stack.extend(inner_statements(statement))
            classes.sort(key=lambda cls: (cls.lineno, cls.col_offset))
            self._classes = classes
        return self._classes

    def walked_statements(self) -> list[ast.stmt]:
        """Every statement of the module (classes, functions, ...) in `ast.walk`'s order,
        walking statements only: a statement's parent is a statement, an `except` clause or a
        `case` (one level each, as in the whole tree), so their breadth-first order is the
        whole tree's, without its expressions (nine nodes in ten)."""
        if self._walked_statements is None:
            self._walked_statements = self.statements_walk()
        return self._walked_statements

    def walked_classes(self) -> list[ast.ClassDef]:
        """Every class of the module, in `ast.walk`'s order."""
        return [n for n in self.walked_statements_with(b"class") if isinstance(n, ast.ClassDef)]

    def walked_statements_with(self, word: bytes, own: int = 0) -> list[ast.stmt]:
        """`walked_statements()`, less the statements of the functions whose lines write
        `word` no more than `own` times: for a keyword (Python spells them in ASCII only,
        never NFKC), every statement of that kind, in the same order (a body left out holds
        none, and the others keep their breadth-first order). Bodies not gone into are not
        read (analysis/bodies.py lets them go)."""
        if self._walked_statements is not None:
            return self._walked_statements
        return self.statements_walk(word, own)

    def statements_walk(self, word: bytes | None = None, own: int = 0) -> list[ast.stmt]:
        found: list[ast.stmt] = []
        todo: deque[ast.AST] = deque([self.tree])
        while todo:
            node = todo.popleft()
            if isinstance(node, ast.stmt):
                found.append(node)
                if word and isinstance(node, FUNCTIONS) and self.count(word, node) <= own:
                    continue
            for name in block_fields(type(node)):
                value = getattr(node, name, None)
                if type(value) is list:
                    todo.extend(item for item in value if isinstance(item, STATEMENTS))
        return found

    def count(self, word: bytes, node: ast.AST) -> int:
        """How many times the lines of `node` write `word` (in the module's UTF-8)."""
        first, last = node.lineno, node.end_lineno  # type: ignore[attr-defined]
        lines = self.lines
        if isinstance(lines, TextLines):
            return lines.word_count(word, first, last)
        return b"\n".join(lines[first - 1 : last]).count(word)

    def walked_calls(self) -> list[ast.Call]:
        """Every call of the module in `ast.walk`'s order, listed in one walk (once per module):
        the searches that look at every call (Trainer calls, `fit` calls, library calls) read
        this list instead of walking the whole tree again each."""
        if self._walked_calls is None:
            self._walked_calls = calls_in(self.tree)
        return self._walked_calls

    def enclosing(self, node: ast.AST) -> tuple[ast.AST | None, ast.ClassDef | None]:
        """The innermost function (or lambda) around `node` and the class around that."""
        function: ast.AST | None = None
        current = self.parent(node)
        while current is not None:
            if function is None and isinstance(
                current, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)
            ):
                function = current
            elif isinstance(current, ast.ClassDef):
                return function, current
            current = self.parent(current)
        return function, None


def shared_folders(path: Path, other: Path) -> int:
    """How many folders, from the top, two files share (which of two same-named modules is
    nearer an importer)."""
    shared = 0
    for mine, theirs in zip(path.parent.parts, other.parent.parts):
        if mine != theirs:
            break
        shared += 1
    return shared


def summarise(
    root: Path,
    path: Path,
    text: str,
    tree: ast.Module | None = None,
    data: bytes | None = None,
    bodies: Bodies | None = None,
    unheld: bool = False,
) -> Summary | None:
    """The summary of one module (from the tree its sites were read from, when there is one),
    or None when Python cannot parse it (the reader reports it). `data`: the file's bytes as
    read, kept as the summary's lines when they are the text's UTF-8 (one copy, not two).
    `bodies`: the run's unread function bodies, which a tree parsed here joins, as does a
    `tree` given `unheld` (parsed from `text` by the caller, no node of it held by anyone)."""
    parsed = tree is None or unheld
    if tree is None:
        try:
            tree = parse_module(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
    name, is_package = module_name(root, path)
    encoded = text.encode("utf-8")
    lines = TextLines(data if data is not None and data == encoded else encoded)
    if parsed and bodies is not None:  # no one holds a node of it yet (analysis/bodies.py)
        bodies.note(tree, lines)
    pruned = tree.pruned if isinstance(tree, LargeModule) else {}
    summary = Summary(path, name, is_package, tree, lines, top=Bindings(lines, pruned))
    for statement in tree.body:
        record_binding(summary, statement)
    return summary


class Bindings(dict[str, list[ast.AST]]):
    """Module-level bindings by name. The data statements a large module was read without
    (analysis/parse.py) are parsed again when their name is first looked up: no code of the
    module names them, but another module may import them."""

    def __init__(self, lines: Sequence[bytes], pruned: dict[str, list[Lines]]) -> None:
        super().__init__()
        self.lines, self.pruned = lines, dict(pruned)

    def __contains__(self, name: object) -> bool:
        return super().__contains__(name) or name in self.pruned

    def __missing__(self, name: str) -> list[ast.AST]:
        statements: list[ast.AST] = [*pruned_statements(self.lines, self.pruned.pop(name))]
        self[name] = statements
        return statements


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
