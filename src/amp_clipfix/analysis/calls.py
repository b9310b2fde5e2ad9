"""Calls of library callables and their arguments, for the rules that rewrite settings.

The migration rules (ACF010 - ACF013) look at `Trainer(...)`, `Fabric(...)` and torch's AMP
calls by qualified name (facts.py), read an argument's literal values through the project's
evaluator, and remove or rewrite arguments as text edits that keep the call's layout.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path

from amp_clipfix.analysis.bodies import peeked_child_nodes
from amp_clipfix.analysis.contained_syntax import nodes_on
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.names import DICT_CONSTRUCTORS
from amp_clipfix.analysis.nodes import target_names
from amp_clipfix.analysis.recording import PREDICATES, Condition
from amp_clipfix.analysis.shape_texts import keyword_argument
from amp_clipfix.analysis.summary import Summary, TextLines, module_name
from amp_clipfix.analysis.text_tests import whole_word
from amp_clipfix.analysis.values import DictV, Ext, Lit, Opaque
from amp_clipfix.models import Edit, Span
from amp_clipfix.patterns import lazy
from amp_clipfix.sources.prefilter import python_holds, python_text
from amp_clipfix.sources.text import line_starts


def callee_words(call: ast.Call) -> tuple[str, str]:
    """The callee's last name (`Trainer` of `pl.Trainer`) and the root name of its chain."""
    func, last = call.func, ""
    if isinstance(func, ast.Attribute):
        last = func.attr
    while isinstance(func, ast.Attribute):
        func = func.value
    root = func.id if isinstance(func, ast.Name) else ""
    return last or root, root


def library_calls(
    facts: ProjectFacts,
    file: FileFacts,
    qualified: Collection[str],
    keywords: Keywords | None = None,
) -> Iterator[tuple[ast.Call, frozenset[str]]]:
    """The calls in the file whose callee may be one of `qualified` (through any import or
    alias), with the qualified names it may be. A cheap test by name comes first: the callee's
    last name is one of theirs, or a name the module imports as one of them, or its root a
    name imported from under their modules. Only the calls on lines that write one of those
    names are walked (`Summary.calls_writing`: a call's callee is written on a line it spans).
    A callee named by a name the module binds to one of them (`make = pl.Trainer`,
    `alias_names`) counts only where its value is surely one of them (`surely_among`).
    With `keywords` (a search that reads only some keywords of a call), only the calls that
    write them all (or one, `any_of`) or a `**` spread, found on the lines writing one of them
    or `**`: a call
    spans the lines of its keywords, and one without them gives that search nothing,
    whatever it calls, so its callee is not evaluated."""
    wanted = frozenset(qualified)
    for node, named in written_calls(file.summary, qualified, keywords):
        if named:
            found = facts.qualified_names(file, node.func) & wanted
        else:  # through an alias: only where it surely holds one of them (a fix rewrites it)
            found = surely_among(facts.values(file, node.func), wanted)
        if found:
            yield node, found


def written_calls(
    module: Summary, qualified: Collection[str], keywords: Keywords | None = None
) -> list[tuple[ast.Call, bool]]:
    """The calls `library_calls` evaluates, from the module's syntax alone, each with whether
    its callee writes one's name or an import of theirs (else it is called through an alias):
    no call here, no answer of `library_calls` (kept_call_test.py tests a file by this)."""
    shorts = {name.rsplit(".", 1)[-1] for name in qualified}
    prefixes = tuple({name.rsplit(".", 1)[0] for name in qualified})
    wanted = frozenset(qualified)
    imports = module.imports
    local = {name for name, imported in imports.items() if imported.startswith(prefixes)}
    aliases = alias_names(module, shorts)

    def named(node: ast.Call) -> bool:  # the callee writes one's name or an import of theirs
        last, root = callee_words(node)
        by_name = last in shorts or imports.get(last) in wanted
        return by_name or imports.get(root, "").startswith(prefixes)

    def written(node: ast.Call) -> bool:  # the callee may name one, with the keywords read
        last, root = callee_words(node)
        if not named(node) and last not in aliases and root not in aliases:
            return False
        return keywords is None or keywords.written(node)

    if keywords is None:
        found_calls = module.calls_kept(written, *sorted(shorts | local | aliases))
    else:
        found_calls = module.calls_kept(written, *keywords.names, signs=(b"**",))
    return [(node, named(node)) for node in found_calls]


def surely_among(values: list[object], wanted: frozenset[str]) -> frozenset[str]:
    """The qualified names of `values` when every one is a library object among `wanted`;
    empty when one may be anything else (project code, a value known only at run time)."""
    if not values or not all(isinstance(v, Ext) and v.qname in wanted for v in values):
        return frozenset()
    return frozenset(v.qname for v in values if isinstance(v, Ext))


CALLED = lazy(rb"[ \t]*\(")  # what follows a name that is called on its own line


def alias_names(module: Summary, names: set[str]) -> set[str]:
    """The names this module binds to a value written with one of `names` (the library's own,
    `Trainer`) other than by calling it (`make = pl.Trainer`, `self.scaler_cls = GradScaler`,
    `(T := Trainer)`): the last name of each target of an assignment whose value writes one
    of them where it is not called. A call through such a name may call the library's (the
    evaluator tells whether it surely does), though its callee never writes the library's
    name. Only the statements on the lines writing one of them so are walked."""
    lines_ = module.lines
    if not isinstance(lines_, TextLines):
        return set()
    data, starts = lines_.data, lines_.starts
    places = []  # (line, byte column) of each such mention
    for name in names:
        for match in whole_word(name.encode("ascii")).finditer(data):
            if not CALLED.match(data, match.end()):
                line = bisect.bisect_right(starts, match.start())
                places.append((line, match.start() - starts[line - 1]))
    if not places:
        return set()
    found: set[str] = set()
    # names only are kept: a body nothing else read is looked at and stays unread
    for node in nodes_on(module.tree, sorted({line for line, _ in places}), peeked_child_nodes):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        start = (value.lineno, value.col_offset)
        end = (value.end_lineno or value.lineno, value.end_col_offset or 0)
        if any(start <= place < end for place in places):
            found.update(
                name for target in targets for name in target_names(target, attributes=True)
            )
    return found


class Keywords:
    """The keywords a search reads of a call (library_calls): a call may give it something
    only if it writes every one of `names` (`any_of`: one of them) or spreads `**x` (which may
    hold any)."""

    def __init__(self, *names: str, any_of: bool = False) -> None:
        self.names = names
        self.any_of = any_of
        self.patterns: list[re.Pattern[bytes]] | None = None

    def written(self, call: ast.Call) -> bool:
        written = {k.arg for k in call.keywords}
        if None in written:
            return True
        return (any if self.any_of else all)(name in written for name in self.names)

    def may_write(self, data: bytes) -> bool:
        """Whether the text may write a call `written` keeps: a `**` spread, or each keyword
        (one, `any_of`) as a keyword argument (`name=`, the name as Python reads it)."""
        if b"**" in data:
            return True
        if self.patterns is None:  # compiled on first use: most runs never ask
            self.patterns = [keyword_argument(name.encode("ascii")) for name in self.names]
        text = python_text(data)
        found = (pattern.search(text) is not None for pattern in self.patterns)
        return any(found) if self.any_of else all(found)


def library_call_files(
    facts: ProjectFacts,
    words: Sequence[bytes],
    qualified: Collection[str],
    keywords: Keywords | None = None,
) -> Iterator[FileFacts]:
    """The files holding one of `words` in which `library_calls` may find a call of one of
    `qualified`, in path order: a file is parsed only when its text may write such a call
    (`CallTest`), so a file that holds a search's word (`"16"`, `'bf16'`) in a project that
    never names a Trainer is tested, not parsed; with `keywords` (those `library_calls` is
    given), only when it may write them too (`Keywords.may_write`)."""
    return facts.with_words(*words, where=CallTest(facts.root, qualified, keywords))


class CallTest:
    """Whether a file's path and text (its document's, as UTF-8) may give `library_calls` a
    call of one of `qualified`, read as its cheap test by name reads the tree:
    - the callee's last name is one of theirs (`Trainer`, `from_argparse_args`): the text
      writes it;
    - it is a name the module imports as one of them: the import writes the last name
      (`from lightning import Trainer as T`), or the package (`import x.Trainer as T`);
    - its root is a name imported from a module under one of their packages (`L` of
      `import lightning as L`): the import writes the package, or, for a relative import,
      the module's own dotted name (summary.module_name, from the path) starts with it.
    Python reads identifiers in their NFKC form, so a text that is not all ASCII is tested
    normalised. With `keywords` (a search that reads only some keywords of a call), the text
    must also write them or a `**` spread (`Keywords.may_write`). A file that passes may still
    give no call (the tree decides)."""

    def __init__(
        self, root: Path, qualified: Collection[str], keywords: Keywords | None = None
    ) -> None:
        self.root = root
        self.qualified = tuple(sorted(qualified))
        self.keywords = keywords
        lasts = {name.rsplit(".", 1)[-1] for name in qualified}
        self.packages = sorted({name.split(".", 1)[0] for name in qualified})
        self.words = tuple(sorted(word.encode("ascii") for word in {*lasts, *self.packages}))

    def __call__(self, path: Path, data: bytes) -> bool:
        if self.keywords is not None and not self.keywords.may_write(data):
            return False
        if python_holds(data, self.words):
            return True
        name, _ = module_name(self.root, path)  # a relative import's package
        return any(package in name for package in self.packages)

    @property
    def condition(self) -> Condition:
        """The test as a query notes it (recording.Candidates.words): a function of the path
        and text alone, so a later run asks it again of a changed file (`call_test`)."""
        keywords = None if self.keywords is None else self.keywords.names
        any_of = self.keywords is not None and self.keywords.any_of
        return ("fn", CALL_TEST, str(self.root), self.qualified, keywords, any_of)


CALL_TEST = "call_test"  # CallTest's predicate (recording.PREDICATES)


@functools.lru_cache(maxsize=64)
def call_test(
    root: str, qualified: tuple[str, ...], keywords: tuple[str, ...] | None, any_of: bool
) -> CallTest:
    return CallTest(
        Path(root), qualified, None if keywords is None else Keywords(*keywords, any_of=any_of)
    )


PREDICATES[CALL_TEST] = lambda path, data, *arguments: call_test(*arguments)(path, data)


def keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def has_spread(call: ast.Call) -> bool:
    """`**kwargs` or `*args` may pass anything."""
    return any(k.arg is None for k in call.keywords) or any(
        isinstance(a, ast.Starred) for a in call.args
    )


def literals(facts: ProjectFacts, file: FileFacts, node: ast.AST) -> tuple[list[Lit], bool]:
    """The literals the expression may hold, and whether some value is decided at run time (an
    `Opaque`, or anything that is not a literal)."""
    values = facts.values(file, node)
    found = [v for v in values if isinstance(v, Lit)]
    runtime = any(not isinstance(v, Lit) or isinstance(v, Opaque) for v in values) or not values
    return found, runtime


def arguments(call: ast.Call) -> list[ast.expr | ast.keyword]:
    """Positional and keyword arguments in source order."""
    found: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def removal_edits(
    file: FileFacts, call: ast.Call, drops: Sequence[ast.keyword]
) -> tuple[Edit, ...]:
    """Edits that remove the `drops` keywords from the call and the commas that go with them,
    keeping every other argument, its line and its indentation. Empty when a comment lies in
    what would be removed (a person moves it)."""
    ordered = arguments(call)
    dropped = {id(k) for k in drops}
    text, starts = file.document.text, line_starts(file.document.text)
    func, whole = file.span(call.func), file.span(call)
    opening = text.index("(", offset(starts, func.end_line, func.end_column))
    line, column = location(starts, opening + 1)
    inside = Span(line, column, whole.end_line, whole.end_column - 1)
    return item_removal_edits(
        file, [file.span(a) for a in ordered], [id(a) in dropped for a in ordered], inside
    )


def entry_removal_edits(
    file: FileFacts, node: ast.Dict, drops: Collection[str]
) -> tuple[Edit, ...]:
    """Edits that remove the entries with the constant keys `drops` from a dict display, as
    `removal_edits` does for arguments. Empty when the display has a `**` entry (its `**` is
    not part of its node) or a comment lies in what would be removed."""
    if any(key is None for key in node.keys):
        return ()
    spans, dropped = [], []
    for key, value in zip(node.keys, node.values):
        first, last = file.span(key), file.span(value)  # type: ignore[arg-type]
        spans.append(Span(first.line, first.column, last.end_line, last.end_column))
        dropped.append(isinstance(key, ast.Constant) and key.value in drops)
    whole = file.span(node)
    inside = Span(whole.line, whole.column + 1, whole.end_line, whole.end_column - 1)
    return item_removal_edits(file, spans, dropped, inside)


def item_removal_edits(
    file: FileFacts, ordered: Sequence[Span], dropped: Sequence[bool], inside: Span
) -> tuple[Edit, ...]:
    """Edits that remove the dropped items of a comma-separated list (`ordered`, in source
    order) with their commas; `inside` is the text between the brackets."""
    text, starts = file.document.text, line_starts(file.document.text)
    edits: list[Edit] = []
    index = 0
    while index < len(ordered):
        if not dropped[index]:
            index += 1
            continue
        end = index
        while end + 1 < len(ordered) and dropped[end + 1]:
            end += 1
        first, last = ordered[index], ordered[end]
        if end + 1 < len(ordered):  # `a=1, next` -> `next`
            after = ordered[end + 1]
            span = Span(first.line, first.column, after.line, after.column)
        elif index > 0:  # `prev, a=1` -> `prev`
            before = ordered[index - 1]
            span = Span(before.end_line, before.end_column, last.end_line, last.end_column)
        else:  # the only items: everything between the brackets
            span = inside
        removed = text[
            offset(starts, span.line, span.column) : offset(starts, span.end_line, span.end_column)
        ]
        if "#" in removed:
            return ()
        edits.append(Edit(file.path, span, ""))
        index = end + 1
    return tuple(edits)


def offset(starts: Sequence[int], line: int, column: int) -> int:
    return starts[line - 1] + column


def location(starts: Sequence[int], index: int) -> tuple[int, int]:
    """(1-based line, character column) of a text offset."""
    line = bisect.bisect_right(starts, index)
    return line, index - starts[line - 1]


Removal = tuple[ast.AST, ast.AST]  # the display, `dict(...)` call or statement; the piece


def written_place(
    facts: ProjectFacts, item: object
) -> tuple[FileFacts, ast.AST, Removal | None] | None:
    """Where a dict entry's value is written (its file, the node that shows the entry: the
    display's key and value, the `dict(...)` keyword, the `d["key"] = v` statement) and what
    removing it takes (None when no simple removal is exact)."""
    from amp_clipfix.analysis.frame import Thunk  # an evaluated value: the evaluator made it

    if not isinstance(item, Thunk):
        return None
    where = facts.file(item.ctx.summary.path)
    if where is None:
        return None
    # The one node that holds the value is its parent (the module's parent map, made one
    # top-level statement at a time): not a walk of the whole module per entry.
    node = where.summary.parent(item.expr)
    if isinstance(node, ast.Dict) and any(v is item.expr for v in node.values):
        index = next(i for i, v in enumerate(node.values) if v is item.expr)
        key = node.keys[index]
        if key is None:
            return None
        entry = ast.Dict(keys=[key], values=[item.expr])  # the `"key": value` text
        ast.copy_location(entry, key)
        entry.end_lineno, entry.end_col_offset = item.expr.end_lineno, item.expr.end_col_offset
        return where, entry, (node, key)
    if isinstance(node, ast.keyword):
        call = where.summary.parent(node)
        if isinstance(call, ast.Call):
            kw = next(kw for kw in call.keywords if kw.value is item.expr)
            made = facts.qualified_names(where, call.func) & DICT_CONSTRUCTORS
            return where, kw, (call, kw) if made else None
    if isinstance(node, ast.Assign) and node.value is item.expr:
        return where, node, (node, node)
    return where, item.expr, None


def with_spread_keywords(
    facts: ProjectFacts, file: FileFacts, call: ast.Call, keys: Collection[str]
) -> ast.Call | None:
    """The call as if the entries of its `**cfg` were keywords: each entry of a closed dict the
    spread surely holds, written once in this file, becomes a keyword located where it is
    written (so sites and code show that place). Only the entries named by `keys` (those the
    caller reads: where each is written is looked for). None when no entry is added."""
    from amp_clipfix.analysis.frame import Thunk  # the values asked for make the evaluator

    added: list[ast.keyword] = []
    names = {k.arg for k in call.keywords if k.arg is not None}
    for spread in (k for k in call.keywords if k.arg is None):
        values = facts.values(file, spread.value)
        if len(values) != 1 or not isinstance(values[0], DictV) or not values[0].closed:
            continue
        for name, items in values[0].entries.items():
            if name not in keys or name in names or len(items) != 1:
                continue
            if not isinstance(items[0], Thunk):
                continue
            place = written_place(facts, items[0])
            if place is None or place[0].path != file.path:
                continue
            made = ast.keyword(arg=name, value=items[0].expr)
            ast.copy_location(made, place[1])
            made.end_lineno = getattr(place[1], "end_lineno", None)
            made.end_col_offset = getattr(place[1], "end_col_offset", None)
            added.append(made)
            names.add(name)
    if not added:
        return None
    return ast.Call(func=call.func, args=call.args, keywords=[*call.keywords, *added])
