"""Which files can call a module-level function or class through its module: the test that
picks them before any is parsed (callers.caller_files), and the fact that keeps it sound.

The evaluator makes the value of a project module in two ways only (evaluate.py):
`resolve_project_name`, for a name an import binds (`import a.mod`, `from a import mod`) or an
attribute of a module or library object (`a.mod`, `getattr(a, "mod")`), and `module_bindings`,
for a bare name in a package's `__init__.py` (its submodule). Each writes the module's last name
in the file: in an import clause, after a dot, as a whole string, or as a word of a package's
`__init__.py` (`names_module`). Elsewhere a module's value is only where code hands it on (`run(m)`,
`x = m`, `return m`, a renamed import other modules read as an attribute). So when no file that
can make the value of a module so named hands it on (`ModuleCallers.module_escapes`, read with
the evaluator), a file that writes the word only otherwise (`def main():`, `main()`, `domain`)
holds no call through the module, and is not searched: `model.train()` in forty files that
define a `main` is no caller of `main.train` (docs/module-callers.md).
"""

from __future__ import annotations

import ast
import functools
import re
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from pathlib import Path

from amp_clipfix.analysis.frame import EvaluatorBase
from amp_clipfix.analysis.nodes import walk
from amp_clipfix.analysis.recording import holds, scan
from amp_clipfix.analysis.shapes import all_params
from amp_clipfix.analysis.summary import Summary, TextLines
from amp_clipfix.analysis.values import ModuleV

IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")
# What follows `import`: a parenthesized list up to its first parenthesis, or the rest of the line
# and the lines a backslash continues it on (`from m import name`, also as one of several names
# or inside parentheses).
IMPORT_CLAUSE = re.compile(rb"\bimport\s+(\([^()]*|(?:[^\\\r\n]|\\(?:\r\n|\r|\n|.))*)")


def import_clause_names(data: bytes) -> frozenset[bytes]:
    """The names a file's `import` clauses write (over-approximated: any identifier there)."""
    return frozenset(
        token for clause in IMPORT_CLAUSE.findall(data) for token in IDENTIFIER.findall(clause)
    )


IDENTIFIER_BYTES = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
QUOTES = (b'"', b"'")


def referenced(data: bytes, name: bytes) -> bool:
    """The text writes `name` as an attribute (`.name`; spaces or a backslash continuation
    after the dot) or as a whole string (`"name"`). The name is found by a literal scan and
    its neighbours tested (a pattern leading with the dot looked at every dot of the file)."""
    for match in re.finditer(re.escape(name), data):
        start, end = match.span()
        after = data[end : end + 1]
        if data[start - 1 : start] in QUOTES and after in QUOTES and start > 0:
            return True
        if after and after[0] in IDENTIFIER_BYTES:
            continue
        index = start - 1
        while index >= 0:
            if data[index] in b" \t\f":
                index -= 1
            elif data[index] in b"\r\n":  # a line break: a continuation when a backslash ends it
                before = index - 1
                if data[index] == 10 and data[before : before + 1] == b"\r":
                    before -= 1
                if before < 0 or data[before] != 92:
                    break
                index = before - 1
            else:
                break
        if index >= 0 and data[index] == 46:
            return True
    return False


@functools.lru_cache(maxsize=256)
def bare_word(name: bytes) -> re.Pattern[bytes]:
    """`name` as a whole word (the same matches as callers.whole_word)."""
    escaped = re.escape(name)
    return re.compile(rb"(?<![A-Za-z0-9_])" + escaped + rb"(?![A-Za-z0-9_])")


def names_module(path: Path, data: bytes, module_word: bytes, imported: frozenset[bytes]) -> bool:
    """Whether the file (its text `data`, its import clauses' names `imported`) can reach the
    module whose last dotted name is `module_word` through that name (see the module's
    docstring). A name that is not ASCII (the text may spell it another way): whenever the
    text holds it."""
    if not module_word:
        return False
    if module_word not in data:
        return False
    if not module_word.isascii():
        return True
    if module_word in imported or referenced(data, module_word):
        return True
    return path.name == "__init__.py" and bare_word(module_word).search(data) is not None


# The files a narrower choice must leave out before the module check is worth its reads.
CHECKED_FROM = 4
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


BLOCKS = ("body", "orelse", "finalbody", "handlers", "cases")


def nodes_on(body: Sequence[ast.AST], lines: Sequence[int] | None) -> Iterator[ast.AST]:
    """The nodes of the statements (of `body`, at any depth) that span one of `lines`
    (sorted; None: every statement), a compound statement's own parts (its test, its
    decorators) with them: the nodes written on those lines are among these."""
    for statement in body:
        if lines is not None and hasattr(statement, "end_lineno"):  # not a `case`
            decorators = getattr(statement, "decorator_list", None) or ()
            start = min([statement.lineno, *(d.lineno for d in decorators)])  # type: ignore[attr-defined]
            index = bisect_left(lines, start)
            if index == len(lines) or lines[index] > statement.end_lineno:
                continue
        blocks = [getattr(statement, name, None) for name in BLOCKS]
        if not any(blocks):
            yield from walk(statement)
            continue
        yield statement
        for name in statement._fields:
            value = getattr(statement, name, None)
            if name in BLOCKS or isinstance(value, ast.expr_context):
                continue
            for child in value if isinstance(value, list) else [value]:
                if isinstance(child, ast.AST):
                    yield from walk(child)
        for block in blocks:
            if block:
                yield from nodes_on(block, lines)


def handed_on(summary: Summary, module_word: str, package_init: bool) -> list[ast.expr] | None:
    """The expressions of this module that may be the value of a module named `module_word`
    and are used other than as the receiver of an attribute (`m.train()` keeps it where it is;
    `run(m)`, `x = m`, `return m` hand it on): a name an import binds to it, an attribute
    `.module_word`, a call given the string (`getattr(pkg, "main")`), a bare name in a
    package's `__init__.py`. None: a module or class body may import it under another name
    (`import a.main as m`: other modules read it as `helper.m`), which no value shows here.
    Each is written on a line that writes the word: only those lines are walked."""
    lines = None
    if isinstance(summary.lines, TextLines) and module_word.isidentifier():
        lines = summary.lines_writing([module_word])
    receivers: set[int] = set()
    maybe: list[ast.expr] = []
    names: list[ast.expr] = []
    bound = package_init  # a name of the word may be the module
    for node in nodes_on(summary.tree.body, lines):
        if isinstance(node, ast.Attribute):
            receivers.add(id(node.value))
            if node.attr == module_word and isinstance(node.ctx, ast.Load):
                maybe.append(node)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name.rsplit(".", 1)[-1] != module_word:
                    continue
                if alias.asname and alias.asname != module_word:
                    return None
                bound = bound or isinstance(node, ast.ImportFrom) or "." not in alias.name
                bound = bound or alias.asname is not None
        elif isinstance(node, ast.Call):
            if any(isinstance(a, ast.Constant) and a.value == module_word for a in node.args):
                maybe.append(node)
        elif (
            isinstance(node, ast.Name) and node.id == module_word and isinstance(node.ctx, ast.Load)
        ):
            names.append(node)
    if bound:
        maybe += names
    return [node for node in maybe if id(node) not in receivers]


def import_rooted(summary: Summary, node: ast.expr) -> bool:
    """`a.b.c` whose first name an import binds where it is read (in its function, else in the
    module and nowhere else there): read by resolving imports only."""
    while isinstance(node, ast.Attribute):
        node = node.value
    if not isinstance(node, ast.Name):
        return False
    name = node.id
    function = summary.enclosing(node)[0]
    if isinstance(function, FUNCTIONS):
        if name in {a.arg for a in all_params(function.args)}:
            return False
        local = [
            n
            for n in walk(function)
            if isinstance(n, ast.Import | ast.ImportFrom)
            and any((a.asname or a.name).split(".", 1)[0] == name for a in n.names)
            or isinstance(n, ast.Name)
            and n.id == name
            and not isinstance(n.ctx, ast.Load)
        ]
        if local:
            return all(isinstance(n, ast.Import | ast.ImportFrom) for n in local)
    elif function is not None:
        return False
    return name in summary.imports and name not in summary.top


def self_chain(summary: Summary, node: ast.expr) -> bool:
    """`self.a.b...` in a method whose class sets `self.a` only to imported names' chains
    (`self.test_metrics = test_metrics` after `from ... import test_metrics`): read as cheaply
    as those. Any other `self.a` (a parameter, a call's result) may hold anything."""
    chain: list[str] = []
    while isinstance(node, ast.Attribute):
        chain.append(node.attr)
        node = node.value
    function, cls = summary.enclosing(node)
    if not chain or cls is None or not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    positional = [*function.args.posonlyargs, *function.args.args]
    if not (isinstance(node, ast.Name) and positional and positional[0].arg == node.id):
        return False
    first = chain[-1]
    stored = [
        statement.value
        for statement in walk(cls)
        if isinstance(statement, ast.Assign | ast.AnnAssign)
        and statement.value is not None
        and any(
            isinstance(target, ast.Attribute)
            and target.attr == first
            or isinstance(target, ast.Name)
            and target.id == first
            for target in (
                statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            )
        )
    ]
    return bool(stored) and all(import_rooted(summary, value) for value in stored)


def getattr_handed_on(summary: Summary) -> bool:
    """The module writes `getattr` other than as the callee of a call (`get = getattr`):
    then any call may be one."""
    lines = summary.lines_writing(["getattr"]) if isinstance(summary.lines, TextLines) else None
    found = list(nodes_on(summary.tree.body, lines))
    called = {id(n.func) for n in found if isinstance(n, ast.Call)}
    return any(isinstance(n, ast.Name) and n.id == "getattr" and id(n) not in called for n in found)


class ModuleCallers(EvaluatorBase):
    """The evaluator's text tests of the files that may call a module-level function or class
    (callers.caller_files), and whether a module's value is handed on (then every file that
    writes its name may hold a call through it)."""

    def module_callers(self, word: bytes, module_word: bytes, writing: list[Path]) -> set[Path]:
        """Of the files `writing` the name `word`, those that import it by name or can reach
        its module through the module's name `module_word` (names_module); when a module so
        named is handed on as a value, every one that writes that name at all."""
        naming = {
            path
            for path in writing
            if word in self.imported_names(path) or self.names_module(path, module_word)
        }
        others = [p for p in writing if p not in naming and module_word in self.contents[p]]
        if module_word and others and self.module_escapes(module_word, others):
            naming.update(others)
        return naming

    def module_escapes(self, module_word: bytes, others: list[Path]) -> bool:
        """Whether code of the project may hand a module so named on as a value, read in the
        files that can make its value (names_module), once per name; also yes, unread, when
        that would parse more than a quarter as many files as `others` (the files it would
        leave out) holds."""
        known = self.escaping_modules.get(module_word)
        if known is None and len(others) < CHECKED_FROM:
            return True  # too few left out to pay for reading the files that name the module
        if known is None:
            # a file that can make the module's value writes its name as a whole word
            makers = [
                p for p in self.files_naming(module_word) if self.names_module(p, module_word)
            ]
            unread = sum(1 for path in makers if path not in self.summaries)
            if unread > len(others) // 4:
                return True  # not known: parsing them may cost what searching the others does
            self.escaping_modules[module_word] = True  # asked inside its own answer: may
            makers.sort(key=lambda path: path not in self.summaries)  # stable: read ones first
            known = any(self.hands_on(path, module_word) for path in makers)
            self.escaping_modules[module_word] = known
        return known

    def hands_on(self, path: Path, module_word: bytes) -> bool:
        """Whether the file hands a module named `module_word` on: one of the expressions
        `handed_on` finds may be such a module's value. The evaluator reads the ones made of
        imported names only (`test_script.main` passed on is a function, `getattr(pkg,
        "main")` a module); any other (`self.main`, a call's result) may, unread: reading it
        could follow values through the whole project."""
        summary = self.summary(path)
        if summary is None:
            return False  # what the evaluator cannot read holds no value
        word = module_word.decode("utf-8", "surrogateescape")
        found = handed_on(summary, word, path.name == "__init__.py")
        if found is None:
            return True
        for node in found:
            if isinstance(node, ast.Call):
                if not (isinstance(node.func, ast.Name) and node.func.id == "getattr"):
                    if getattr_handed_on(summary):
                        return True
                    continue  # the string given to another call is no module's value
                if not node.args or not import_rooted(summary, node.args[0]):
                    return True
            elif isinstance(node, ast.Name) and not import_rooted(summary, node):
                top = summary.top.get(node.id)
                if top and all(isinstance(b, DEFINITIONS) for b in top):
                    continue  # a package's `__init__.py` defines the name: not its submodule
                return True
            elif not import_rooted(summary, node) and not self_chain(summary, node):
                return True
            ctx = self.ctx_of(summary, node)
            if any(
                isinstance(v, ModuleV) and v.summary.name.rsplit(".", 1)[-1] == word
                for v in self.ev(node, ctx)
            ):
                return True
        return False

    def names_module(self, path: Path, module_word: bytes) -> bool:
        """names_module of the file, once per file and name (every function of a module asks)."""
        key = (path, module_word)
        known = self.module_naming.get(key)
        if known is None:
            data, imported = self.contents[path], self.imported_names(path)
            known = self.module_naming[key] = names_module(path, data, module_word, imported)
        return known

    def files_with(self, word: bytes) -> list[Path]:
        if word not in self.word_files:
            self.word_files[word] = scan(self.contents, holds(word))
        return self.word_files[word]

    def imported_names(self, path: Path) -> frozenset[bytes]:
        """The names a file's `import` clauses write (`from m import a, b`, also in parentheses
        or continued lines): where a module-level function can be imported by name."""
        if path not in self.import_index:
            data = self.contents[path]
            self.import_index[path] = import_clause_names(data)
        return self.import_index[path]
