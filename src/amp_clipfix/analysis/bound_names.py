"""What one file binds by name (its functions, and the names it gives a value other than as a
function), read from its summary: the per-file facts of the reach index (analysis/reach.py).
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
from collections import deque
from collections.abc import Iterator

from amp_clipfix.analysis.bodies import UNREAD_KINDS, peek, peeked_walk
from amp_clipfix.analysis.literal_words import PROSE_KEYWORDS, calls_may_name
from amp_clipfix.analysis.nodes import block_fields
from amp_clipfix.analysis.shapes import all_params
from amp_clipfix.analysis.summary import STATEMENTS, Summary, called_name
from amp_clipfix.analysis.text_lines import TextLines
from amp_clipfix.patterns import lazy
from amp_clipfix.records import field, record
from amp_clipfix.sources.prefilter import python_text

# Decorators that keep a method a plain function of the class (anything else may make its
# name hold another callable: a property's value, a wrapper).
PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod", "abstractmethod", "override"})
WORD = lazy(r"[^\W\d]\w*")
WALRUS = lazy(r"([^\W\d]\w*)\s*:=")
# Builtins whose string arguments are messages; `getattr` / `hasattr` read an attribute.
MESSAGE_BUILTINS = frozenset(
    name
    for name in dir(builtins)
    if name.endswith(("Error", "Exception", "Warning")) or name in ("print", "Exception")
)
ATTRIBUTE_READS = frozenset({"getattr", "hasattr"})
LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical"})
LOGGERS = frozenset({"logger", "_logger", "LOGGER", "log"})
DOC_KEYWORDS = frozenset(keyword.decode("ascii") for keyword in PROSE_KEYWORDS)
# The statements that may store an attribute (`attribute_targets`), and the arguments that may
# write a string (`string_arguments`).
TARGETING = (
    ast.Assign,
    ast.Delete,
    ast.AnnAssign,
    ast.AugAssign,
    ast.For,
    ast.AsyncFor,
    ast.With,
    ast.AsyncWith,
)
STRINGS = (ast.Constant, ast.List, ast.Tuple, ast.Set)
INERT_NODES = (
    ast.Constant,
    ast.List,
    ast.Tuple,
    ast.Set,
    ast.Dict,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
    ast.JoinedStr,
)
# A dict value that is no callable whatever runs: an empty display, a number, a one-line
# string, a constant, alone before the next key or the end of the display.
INERT_VALUE = lazy(
    rb"\s*(?:\[\s*\]|\{\s*\}|\(\s*\)|-?[0-9][0-9_.eE+-]*|True|False|None"
    rb"|\"[^\"\\\n]*\"|'[^'\\\n]*')\s*(?:,|\}|$)"
)


@record
class FileNames:
    """What one file binds by name: its functions (any depth) and the names it gives a value
    other than as a function (`value_names`; `every`: any name, a star import)."""

    functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = field(default_factory=dict)
    value_names: set[str] = field(default_factory=set)
    # bound at module level to a value (an assignment, a loop, a renamed import, a module)
    module_values: set[str] = field(default_factory=set)
    every: bool = False
    # the module whose calls' keywords and string arguments are not read yet, and its text
    # (`call_values`: read when a name asked may be among them, literal_words.calls_may_name)
    unread: tuple[Summary, bytes] | None = field(default=None, compare=False, repr=False)
    # the names its classes and imports bind (`own_names`), found in the same walk
    bound: set[str] = field(default_factory=set, compare=False, repr=False)

    def binds_value(self, name: str, data: bytes) -> bool:
        """The file gives `name` a value (a dict's string key, `{"name": v}`, read from the
        text: a namespace or record built from `**` of that dict has the attribute). A star
        import does not: it binds each name under its own name, to the object the other
        module binds (a value there, or a function)."""
        if name in self.value_names or dict_key(name, data):
            return True
        if self.unread is None or not calls_may_name(name, self.unread[1]):
            return False
        summary, self.unread = self.unread[0], None
        self.value_names.update(call_values(summary, self))
        return name in self.value_names


def file_names(summary: Summary, data: bytes) -> FileNames:
    """The names a module binds (`FileNames`), read from its summary's statements and calls
    (not a walk of every expression). Values: an attribute store (`x.name = ...`, also in a
    tuple, a loop, `with`, `del`), a binding in a module or class body (assignment, loop,
    `with`, `except`, a renamed import, a module import), a keyword of a call (fields,
    namespaces, `replace`), a parameter of an `__init__` (`self.hparams.name`), a word of a
    string argument (`setattr`, a named tuple's fields, an argparse `dest`; not the name
    `getattr` / `hasattr` read, not the prose of a message or a `help` text: see
    `named_arguments`), a `global` / `nonlocal` name, a walrus or match capture anywhere.
    Local variables of functions are not values of attributes, and neither is a value that
    is never callable (`inert`: `x.name = 0`, `f(name=[])`), since a call of it runs nothing."""
    found = FileNames()
    values = found.value_names
    tree = summary.tree
    module_level = {id(s) for s in statements_of(tree.body)}
    walked = peeked_statements(summary)
    class_level = {
        id(s) for c in walked if isinstance(c, ast.ClassDef) for s in statements_of(c.body)
    }
    for statement in walked:
        if isinstance(statement, ast.ClassDef):
            found.bound.add(statement.name)
        elif isinstance(statement, (ast.Import, ast.ImportFrom)):
            found.bound.update((a.asname or a.name).split(".")[0] for a in statement.names)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.functions.setdefault(statement.name, []).append(statement)
            if statement.name == "__init__":
                values.update(a.arg for a in all_params(statement.args))
            if not all(plain_decorator(d) for d in statement.decorator_list):
                values.add(statement.name)  # a property's value, a wrapper: any value
            continue
        if isinstance(statement, ast.ImportFrom) and any(a.name == "*" for a in statement.names):
            found.every = True
        if isinstance(statement, (ast.Global, ast.Nonlocal)):
            values.update(statement.names)
        elif isinstance(statement, ast.Match):
            for case in statement.cases:
                for node in ast.walk(case.pattern):
                    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
                        values.add(node.name)
                    elif isinstance(node, ast.MatchMapping) and node.rest:
                        values.add(node.rest)
        callable_value = True
        if isinstance(statement, TARGETING):  # the others store no attribute
            callable_value = not inert_assignment(statement)
            if callable_value:
                values.update(attribute_targets(statement))
        scoped = id(statement) in module_level or id(statement) in class_level
        if scoped:
            names = stored_names(statement)
            if callable_value:
                values.update(names)
            if id(statement) in module_level:
                found.module_values.update(names)
    values.update(walrus_names(data))
    text = summary.lines.data if isinstance(summary.lines, TextLines) else None
    if text is not None and python_text(text) is text:  # the text parsed, NFKC-stable
        found.unread = (summary, text)
    else:
        values.update(call_values(summary, found))
    return found


def peeked_statements(summary: Summary) -> list[ast.stmt]:
    """`summary.walked_statements()`, in its order, for facts that keep no statement of a
    function nothing has read but its nested `def`s (names, say): such a body is looked at
    with `bodies.peek` and stays unread (a reach index's question read every body of each
    file it asked of, then held to the end of the run: 16 MB of DeepLearningExamples' peak)."""
    found: list[ast.stmt] = []
    todo: deque[ast.AST] = deque([summary.tree])
    while todo:
        node = todo.popleft()
        if isinstance(node, ast.stmt):
            found.append(node)
        body = peek(node) if type(node) in UNREAD_KINDS else None  # type: ignore[arg-type]
        for name in block_fields(type(node)):
            value = body if name == "body" and body is not None else getattr(node, name, None)
            if type(value) is list:
                todo.extend(item for item in value if isinstance(item, STATEMENTS))
    return found


def call_values(summary: Summary, found: FileNames) -> set[str]:
    """The names the module's calls give a value (`file_names`): their keywords, the words of
    their string arguments."""
    values: set[str] = set()
    own = own_names(summary, found)
    # names and strings only are kept: a body nothing else read is looked at and stays unread
    for call in (node for node in peeked_walk(summary.tree) if type(node) is ast.Call):
        for keyword in call.keywords:
            if keyword.arg is not None and not inert(keyword.value):
                values.add(keyword.arg)
        if not any(isinstance(a, STRINGS) for a in call.args) and not any(
            isinstance(k.value, STRINGS) for k in call.keywords
        ):
            continue  # no argument can write a string (`string_arguments`)
        for argument in named_arguments(call, own):
            for text in string_arguments(argument):
                values.update(WORD.findall(text))  # `setattr(x, "name", v)`, a record's fields
                values.add(text.lstrip("-").replace("-", "_"))  # an argparse `dest`
    return values


def text_binds(name: str, data: bytes) -> bool:
    """What `file_names` and `binds_value` read of `name` in the text, not the tree: a walrus
    target (`name :=`, wherever it stands) or a dict key (`dict_key`)."""
    return name in walrus_names(data) or dict_key(name, data)


@functools.lru_cache(maxsize=64)
def walrus_names(data: bytes) -> frozenset[str]:
    """The names the text writes before `:=` (WALRUS), once per text: each name asked of a
    file reads them (`text_binds`)."""
    if b":=" not in data:
        return frozenset()
    return frozenset(WALRUS.findall(data.decode("utf-8", "replace")))


def inert(value: ast.expr) -> bool:
    """A value that is never callable: a constant, a display or comprehension, an f-string
    (`ns.name(...)` of an attribute given it raises, it runs no project code)."""
    return isinstance(value, INERT_NODES)


def inert_assignment(statement: ast.stmt) -> bool:
    """`name = []`, `x.name = 0`, `x.name: T = 0`: one inert value to plain names or attributes
    (not a tuple target, which takes the value apart; not an annotated name, `name: T = None`,
    which in a class body is a field whose value a constructor gives, also positionally)."""
    targets: list[ast.expr]
    if isinstance(statement, ast.AnnAssign):
        targets = [statement.target] if isinstance(statement.target, ast.Attribute) else []
    elif isinstance(statement, ast.Assign):
        targets = [t for t in statement.targets if isinstance(t, (ast.Name, ast.Attribute))]
        targets = targets if len(targets) == len(statement.targets) else []
    else:
        return False
    return bool(targets) and statement.value is not None and inert(statement.value)


def own_names(summary: Summary, found: FileNames) -> set[str]:
    """The names the module binds itself (functions, classes, values, imports under their own
    name): a builtin so named may be the module's own."""
    return set(found.functions) | found.module_values | found.bound


def named_arguments(call: ast.Call, own: set[str]) -> Iterator[ast.expr]:
    """The arguments of a call whose strings may name an attribute (all of them, but the name
    `getattr` / `hasattr` read, and prose a builtin exception, `print`, `warnings.warn` or a
    logging call shows, or a `help` / `description` / `epilog` keyword documents: a string
    with a space in it is never a name itself, and such calls do not split it)."""
    func = call.func
    builtin = func.id if isinstance(func, ast.Name) and func.id not in own else None
    shows = (builtin is not None and builtin in MESSAGE_BUILTINS) or message_call(func, own)
    for index, argument in enumerate(call.args):
        if builtin in ATTRIBUTE_READS and index == 1:
            continue  # `getattr(x, "name")` reads the attribute, it gives it no value
        if not (shows and prose(argument)):
            yield argument
    for keyword in call.keywords:
        if not ((shows or keyword.arg in DOC_KEYWORDS) and prose(keyword.value)):
            yield keyword.value


def message_call(func: ast.expr, own: set[str]) -> bool:
    """`warnings.warn(...)`, `logging.info(...)`, `logger.warning(...)`: a module-level `logger`
    (the file binds it; the word says the rest) or the `logging` / `warnings` module."""
    if not isinstance(func, ast.Attribute) or not isinstance(func.value, ast.Name):
        return False
    receiver = func.value.id
    if receiver == "warnings":
        return func.attr == "warn"
    if receiver == "logging":
        return func.attr in LOG_METHODS
    return func.attr in LOG_METHODS and receiver in LOGGERS and receiver in own


def prose(argument: ast.expr) -> bool:
    """A string (or f-string) with white space in it, or a `+` / `%` / `.format` of one."""
    while isinstance(argument, ast.BinOp):
        argument = argument.left
    if isinstance(argument, ast.Call) and isinstance(argument.func, ast.Attribute):
        argument = argument.func.value
    if isinstance(argument, ast.JoinedStr):
        return any(prose(v) for v in argument.values if isinstance(v, ast.Constant))
    return (
        isinstance(argument, ast.Constant)
        and isinstance(argument.value, str)
        and any(c.isspace() for c in argument.value)
    )


def attribute_targets(statement: ast.stmt) -> Iterator[str]:
    """The attribute names a statement stores or deletes (`x.name = ...`, `for x.name in`)."""
    targets: list[ast.expr] = []
    if isinstance(statement, (ast.Assign, ast.Delete)):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in statement.items if i.optional_vars is not None]
    for target in targets:
        if isinstance(target, ast.Name):
            continue  # nothing below a plain name
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            if not isinstance(target.ctx, ast.Load):  # `self.name = ...`
                yield target.attr
            continue  # its receiver is a name read: nothing below it is stored
        for node in ast.walk(target):
            if isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load):
                yield node.attr


def string_arguments(argument: ast.expr) -> Iterator[str]:
    """The strings an argument writes: itself, the elements of a list, tuple or set."""
    nodes: list[ast.expr | None] = [argument]
    if isinstance(argument, (ast.List, ast.Tuple, ast.Set)):
        nodes = list(argument.elts)
    for node in nodes:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value


def statements_of(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The statements of a module or class body and of its blocks (`if`, `try`, `for`,
    `with`, `match`), not those of the functions and classes defined in it."""
    for statement in body:
        yield statement
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            yield from statements_of(
                [s for s in getattr(statement, name, None) or () if isinstance(s, ast.stmt)]
            )
        for handler in getattr(statement, "handlers", None) or ():
            yield from statements_of(handler.body)
        for case in getattr(statement, "cases", None) or ():
            yield from statements_of(case.body)


def stored_names(statement: ast.stmt) -> set[str]:
    """The plain names a statement binds in its own scope."""
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
        targets = [statement.target]
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in statement.items if i.optional_vars is not None]
    elif isinstance(statement, ast.Delete):
        targets = list(statement.targets)
    found = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    if isinstance(statement, ast.ImportFrom):  # under its own name: the same function or object
        found.update(a.asname for a in statement.names if a.asname and a.asname != a.name)
    elif isinstance(statement, ast.Import):  # a module (`import a.b` binds `a`)
        found.update((a.asname or a.name).split(".")[0] for a in statement.names)
    if isinstance(statement, ast.Try):
        found.update(h.name for h in statement.handlers if h.name)
    return found


def plain_decorator(decorator: ast.expr) -> bool:
    return called_name(decorator) in PLAIN_DECORATORS


def dict_key(name: str, data: bytes) -> bool:
    """The text writes `name` as a string followed by a colon (a dict literal's key) and a
    value that may be callable: not `[]`, `{}`, `()`, a number, a string, `True`, `False` or
    `None` alone (`{"name": [], ...}`: a namespace made of it has no method `name`)."""
    return any(not INERT_VALUE.match(data, key.end()) for key in dict_keys(name).finditer(data))


@functools.lru_cache(maxsize=1024)
def dict_keys(name: str) -> re.Pattern[bytes]:
    """`["']name["']\\s*:`, compiled once per name, the name first (`re` skips to the literal;
    a leading class is tried at every byte) and its quote looked behind."""
    word = re.escape(name.encode("ascii"))
    return re.compile(word + rb"(?<=[\"']" + word + rb")[\"']\s*:")
