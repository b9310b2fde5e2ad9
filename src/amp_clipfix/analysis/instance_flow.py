"""The calls that may run a value the clip index holds without its name being called: an
instance's `__call__` (`ValueFlow.instance_calls`), a closure (`closure_calls`), followed from
where the value is made, as the evaluator follows it (the clip index's question,
analysis/value_sites.py).

A reading enters `x(...)` for the project function `x` holds, or the `__call__` of the
instance it holds (callables.callees). The evaluator makes an instance (`Inst`) only at a call
of a value that is the class (evaluate.call_value), and it has the class only where its name
is written: a name bound by `class C`, an import of it (under any name), an attribute of its
module. A closure's name is seen only in the function that defines it. The evaluation is the
same wherever it is asked (one context per module: a parameter's value is every caller's
argument), so the value is where these writings put it:

- `C(...)` (or `m.C(...)`, a renamed import's name, a subclass's name) makes an instance; the
  name as a base makes a subclass, whose name is followed in turn; `C.attr` reads the class; a
  closure's name read in its function, other than called, is its value;
- the value, or a read of a name that holds it, is held by what it is written in: a call of it
  (a site: that call may run it), a local name it is assigned to (each read of it in that
  function, closures included, is followed), a parameter of the project function a call of
  which it is given (the evaluator's callers are the calls whose callee is that function), a
  `return` (the calls of that function hold it: those spelled with its name, where it is no
  value the evaluator follows, value_sites.value_calls), a library call the registry does not
  model (its value is run time, nothing the project holds comes back: library.call_external;
  the call is a site, as it may run what it is given: a step's closure), a statement of its
  own, a comparison, a test, a formatted string, an attribute read of it;
- the class's methods, and its bases' in the project, write `self` only as an attribute's
  receiver (`self.x`): no method gives the instance back as its value or stores it anywhere.

Anything else (a container, an attribute or a module-level name stored to, a class written as
a value, a decorator of the project's on the class, a `*args` it may fall in, a dispatch of
`self.m(x)` to a subclass's method, a callee the evaluator cannot say is project functions or
library code, a `__call__`'s return, too many names followed): the value may be anywhere
(None), and the index opens as before.
"""

from __future__ import annotations

import ast
import functools
import re
from bisect import bisect_right
from typing import TYPE_CHECKING, Protocol

from amp_clipfix.analysis import names
from amp_clipfix.analysis.bound_names import plain_decorator
from amp_clipfix.analysis.name_uses import spelling
from amp_clipfix.analysis.nodes import walk_on
from amp_clipfix.analysis.summary import FUNCTIONS
from amp_clipfix.analysis.text_lines import TextLines
from amp_clipfix.analysis.values import ClsV, Ext, Fn

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from amp_clipfix.analysis.evaluate import Evaluator
    from amp_clipfix.analysis.summary import Summary

    # whether a callee expression of the module is library code by value (value_sites.py)
    Library = Callable[[Summary], Callable[[ast.expr], bool]]
    # the calls whose value is what a function returns (value_sites.value_calls; None: any)
    Returns = Callable[
        [ast.FunctionDef | ast.AsyncFunctionDef, Summary], list[tuple[ast.Call, Summary]] | None
    ]

Function = ast.FunctionDef | ast.AsyncFunctionDef
Sites = tuple[tuple[ast.Call, "Summary"], ...]
# Names (class names, locals, parameters) followed before the answer is "anywhere".
MOST_HOLDERS = 64
# What holds a value and gives none of it on: a test, a comparison, a formatted string.
INERT = (ast.Compare, ast.Expr, ast.FormattedValue, ast.If, ast.While, ast.Assert)


class Index(Protocol):
    """What the flow asks of the clip index (clip_tail.ClipCapable): the files it reads, noted
    and within its parse budget."""

    evaluator: Evaluator

    def affordable(self, paths: list[Path]) -> list[Path]: ...
    def summary(self, path: Path) -> Summary | None: ...


class Anywhere(Exception):
    """The value may be where the flow does not follow it."""


class ValueFlow:
    """One function's question: the calls that may run it through its values (see the
    module's docstring)."""

    def __init__(self, index: Index, library: Library, returns: Returns) -> None:
        self.index = index
        self.evaluator: Evaluator = index.evaluator
        self.library = library
        self.returns = returns
        self.names: list[str] = []  # the names the class and its subclasses are written with
        self.classes: list[tuple[ast.ClassDef, Summary]] = []
        self.holders: set[tuple[int, str]] = set()  # (function, name) followed
        self.sites: list[tuple[ast.Call, Summary]] = []
        self.lines: dict[tuple[int, bytes], list[int] | None] = {}  # (tree, word) -> lines_of

    def instance_calls(self, cls: ast.ClassDef, summary: Summary) -> Sites | None:
        """The calls of the class's instances (None: anywhere)."""
        try:
            self.add_class(cls, summary)
            done = 0
            while done < len(self.names):
                self.name_written(self.names[done])
                done += 1
            self.methods_keep_self()
        except Anywhere:
            return None
        return self.found()

    def closure_calls(self, function: Function, outer: Function, summary: Summary) -> Sites | None:
        """The calls of a function defined in `outer`, whose name nothing else sees, through
        its values: each read of the name in `outer` that is no call of it (None: anywhere)."""
        name = function.name
        try:
            self.index.summary(summary.path)  # noted as read
            for node in walk_on(outer, self.lines_of(summary, name)):
                kind = type(node)
                if (kind is ast.Global or kind is ast.Nonlocal) and name in node.names:  # type: ignore[attr-defined]
                    raise Anywhere
                if (
                    kind is ast.Name
                    and node.id == name  # type: ignore[attr-defined]
                    and type(node.ctx) is ast.Load  # type: ignore[attr-defined]
                    and not is_callee(node, summary)  # type: ignore[arg-type]
                ):
                    self.held(node, summary)  # type: ignore[arg-type]
        except Anywhere:
            return None
        return self.found()

    def found(self) -> Sites:
        return tuple({id(call): (call, summary) for call, summary in self.sites}.values())

    # -- the class -----------------------------------------------------------------------------

    def add_class(self, cls: ast.ClassDef, summary: Summary) -> None:
        if any(cls is known for known, _ in self.classes):
            return
        if not isinstance(summary.parent(cls), ast.Module):
            raise Anywhere  # a class made in a function or a class body: a value of its own
        library = self.library(summary)
        for decorator in cls.decorator_list:
            callee = decorator.func if isinstance(decorator, ast.Call) else decorator
            if not (plain_decorator(decorator) or library(callee)):
                raise Anywhere  # the project's decorator is given the class
        self.classes.append((cls, summary))
        self.add_name(cls.name)

    def add_name(self, name: str) -> None:
        if name not in self.names:
            if len(self.names) + len(self.holders) >= MOST_HOLDERS or not name.isascii():
                raise Anywhere
            self.names.append(name)

    def methods_keep_self(self) -> None:
        """The methods that run on an instance, of the classes and their bases in the project,
        keep `self` (`self_kept`)."""
        checked: set[int] = set()
        for cls, summary in self.classes:
            for klass in self.evaluator.mro(ClsV(cls, summary)):
                if isinstance(klass, ClsV) and id(klass.node) not in checked:
                    checked.add(id(klass.node))
                    self.self_kept(klass.node, klass.summary)

    def self_kept(self, cls: ast.ClassDef, summary: Summary) -> None:
        """Every method writes its first parameter only as an attribute's receiver."""
        self.index.summary(summary.path)  # noted as read
        for statement in cls.body:
            if not isinstance(statement, FUNCTIONS):
                continue
            positional = [*statement.args.posonlyargs, *statement.args.args]
            if not positional:
                continue
            own = positional[0].arg
            for node in walk_on(statement, self.lines_of(summary, own)):
                if type(node) is ast.Name and node.id == own and type(node.ctx) is ast.Load:
                    parent = summary.parent(node)
                    if not (isinstance(parent, ast.Attribute) and parent.value is node):
                        raise Anywhere  # `return self`, `f(self)`, `x = self`

    def name_written(self, name: str) -> None:
        """Every writing of a name of the class in the project's files."""
        word = name.encode("ascii")
        for path in self.index.affordable(self.evaluator.files_naming(word)):
            summary = self.index.summary(path)
            if summary is None:
                raise Anywhere
            for node in walk_on(summary.tree, self.lines_of(summary, name)):
                self.written(node, name, summary)

    def written(self, node: ast.AST, name: str, summary: Summary) -> None:
        kind = type(node)
        if kind is ast.alias:
            if node.name.rsplit(".", 1)[-1] == name and node.asname:  # type: ignore[attr-defined]
                self.add_name(node.asname)  # type: ignore[attr-defined]
            return
        if kind is ast.Constant:
            if node.value == name and isinstance(summary.parent(node), ast.Call):  # type: ignore[attr-defined]
                raise Anywhere  # `getattr(module, "C")`
            return
        if kind is ast.ClassDef:
            return  # a class of that name: its calls are followed as the class's
        if not isinstance(node, (ast.Name, ast.Attribute)) or spelling(node) != name:
            return
        if type(node.ctx) is not ast.Load:
            return  # a store: no value of the class
        parent = summary.parent(node)
        if isinstance(parent, ast.Call) and parent.func is node:
            self.held(parent, summary)  # `C(...)`: an instance
        elif isinstance(parent, ast.ClassDef) and node in parent.bases:
            self.add_class(parent, summary)  # a subclass
        elif isinstance(parent, ast.Attribute) and parent.value is node:
            return  # `C.attr`: the class read (`C.__call__` is the name's own question)
        else:
            raise Anywhere  # the class as a value

    def lines_of(self, summary: Summary, name: str) -> list[int] | None:
        key = (id(summary.tree), name.encode("ascii"))  # the trees are held: no id reused
        if key not in self.lines:
            self.lines[key] = lines_of(summary, key[1])
        return self.lines[key]

    # -- the instance --------------------------------------------------------------------------

    def held(self, value: ast.expr, summary: Summary) -> None:
        """What the expression holding an instance gives it to."""
        parent = summary.parent(value)
        if isinstance(parent, ast.Call):
            if parent.func is value:
                self.sites.append((parent, summary))  # its `__call__` may run
                return
            if value in parent.args:
                position = parent.args.index(value)
                if any(isinstance(a, ast.Starred) for a in parent.args[: position + 1]):
                    raise Anywhere
                self.given(parent, summary, position, None)
                return
        elif isinstance(parent, ast.keyword):
            call = summary.parent(parent)
            if parent.arg is None or not isinstance(call, ast.Call):
                raise Anywhere  # `f(**x)`
            self.given(call, summary, None, parent.arg)
            return
        elif isinstance(parent, ast.Attribute):
            if parent.attr == "__call__" and not is_callee(parent, summary):
                raise Anywhere  # the bound `__call__` as a value
            return  # an attribute of the instance (no method gives `self` back)
        elif isinstance(parent, ast.Assign) and parent.value is value:
            for target in parent.targets:
                if not isinstance(target, ast.Name):
                    raise Anywhere  # stored in an object, a container, taken apart
                self.local(parent, target.id, summary)
            return
        elif isinstance(parent, ast.Return):
            self.returned(parent, summary)
            return
        elif isinstance(parent, INERT) or (
            isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)
        ):
            return  # a statement of its own, a test, a comparison, a formatted string
        raise Anywhere

    def returned(self, statement: ast.Return, summary: Summary) -> None:
        """The value is what the function around the `return` gives its calls: each call of it,
        where it is no value the evaluator follows (its calls are spelled with its name)."""
        function, _ = summary.enclosing(statement)
        if not isinstance(function, FUNCTIONS) or function.name == "__call__":
            raise Anywhere  # a lambda's; an instance's calls give a `__call__`'s value
        key = (id(function), "")
        if key in self.holders:
            return
        if len(self.names) + len(self.holders) >= MOST_HOLDERS:
            raise Anywhere
        self.holders.add(key)
        calls = self.returns(function, summary)
        if calls is None:
            raise Anywhere
        for call, where in calls:
            self.held(call, where)

    def local(self, node: ast.AST, name: str, summary: Summary) -> None:
        """The name the function around `node` binds holds the instance."""
        function, _ = summary.enclosing(node)
        if not isinstance(function, FUNCTIONS):
            raise Anywhere  # a module's global, a lambda's: read from anywhere
        self.holder(function, name, summary)

    def holder(self, function: Function, name: str, summary: Summary) -> None:
        key = (id(function), name)
        if key in self.holders:
            return
        if len(self.names) + len(self.holders) >= MOST_HOLDERS:
            raise Anywhere
        self.holders.add(key)
        self.index.summary(summary.path)  # noted as read
        reads: list[ast.Name] = []
        for node in walk_on(function, self.lines_of(summary, name)):
            kind = type(node)
            if (kind is ast.Global or kind is ast.Nonlocal) and name in node.names:  # type: ignore[attr-defined]
                raise Anywhere
            if kind is ast.Name and node.id == name and type(node.ctx) is ast.Load:  # type: ignore[attr-defined]
                reads.append(node)  # type: ignore[arg-type]
        for read in reads:
            self.held(read, summary)

    def given(
        self, call: ast.Call, summary: Summary, position: int | None, keyword: str | None
    ) -> None:
        """The instance is an argument of `call`: a parameter of the project functions it
        calls, or given to a library call that makes nothing of it the evaluator follows."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr == names.FABRIC_LAUNCH:
            raise Anywhere  # `fabric.launch(fn, x)` calls `fn(fabric, x)` (passed.py)
        evaluator = self.evaluator
        values = evaluator.force(evaluator.ev(func, evaluator.ctx_of(summary, func)))
        if not values:
            raise Anywhere
        if all(isinstance(v, Ext) and names.entry_of(v.qname) is None for v in values):
            if self.library(summary)(func):
                # its value is run time (library.call_external); the call may run the value it
                # is given (a step's closure is read where it is handed on): a site
                self.sites.append((call, summary))
                return
            raise Anywhere
        own = summary.enclosing(call)[0]
        if (
            isinstance(func, ast.Attribute)
            and isinstance(own, FUNCTIONS)
            and isinstance(func.value, ast.Name)
            and func.value.id in [a.arg for a in (*own.args.posonlyargs, *own.args.args)][:1]
        ):
            raise Anywhere  # `self.m(x)`: a subclass's `m` may run (dispatch.py)
        for value in values:
            if not isinstance(value, Fn) or value.node.decorator_list:
                raise Anywhere
            self.holder(value.node, parameter(value, position, keyword), value.summary)


def parameter(fn: Fn, position: int | None, keyword: str | None) -> str:
    """The parameter of `fn` an argument binds (Anywhere: a `*args` or `**kwargs` takes it, or
    the call binds none)."""
    arguments = fn.node.args
    positional = [*arguments.posonlyargs, *arguments.args]
    if position is not None:
        index = position + (1 if fn.bound else 0)
        if index < len(positional):
            return positional[index].arg
        raise Anywhere
    named = [*arguments.args, *arguments.kwonlyargs]
    for argument in named:
        if argument.arg == keyword:
            return argument.arg
    raise Anywhere


def is_callee(node: ast.expr, summary: Summary) -> bool:
    parent = summary.parent(node)
    return isinstance(parent, ast.Call) and parent.func is node


def lines_of(summary: Summary, word: bytes) -> list[int] | None:
    """The lines of the module that write the word, and those with a byte outside ASCII (a
    name Python reads NFKC-folded); None: every line (no text kept)."""
    return lines_matching(summary, written_word(word))


def lines_matching(summary: Summary, pattern: re.Pattern[bytes]) -> list[int] | None:
    """The lines of the module where `pattern` matches, and those with a byte outside ASCII
    (a name Python reads NFKC-folded); None: every line (no text kept)."""
    text = summary.lines
    if not isinstance(text, TextLines):
        return None
    offsets = [*summary.non_ascii()]
    offsets += [match.start() for match in pattern.finditer(text.data)]
    return sorted({bisect_right(text.starts, offset) for offset in offsets})


@functools.lru_cache(maxsize=256)
def written_word(word: bytes) -> re.Pattern[bytes]:
    """`word` as a whole word, compiled once per name."""
    return re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(word) + rb"(?![A-Za-z0-9_])")
