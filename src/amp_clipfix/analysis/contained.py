"""Classes whose objects stay in the modules that name them: their methods are called only there.

A method's callers are the calls whose callee the evaluator finds to be that method
(`passed.is_callable`): an `Fn` of it, or a partial of one. The evaluator makes such a value
only from an object of the class (the class, an instance, `self` / `cls` in its methods or a
subclass's, `super()` there) read for the method's name, or from the method's name inside the
class body. The class object comes from its name (the class statement, an import, `module.Name`,
a string for `getattr` or an import path) or from a subclass; an instance from a call of the
class; `self` from the class's own methods (and its project bases' methods, run for its
instances: self-dispatch).

A class is *contained* when the modules that write its name write it only as a name read (and
imported as itself, `from m import Name`), it has no decorator, metaclass, project base or
conditional body, and every object of it stays in those modules: no object is returned,
yielded, stored (an attribute, an item, a container, a module global), captured by a nested
function, or passed to project code (a function, a class, anything the evaluator does not find
to be a library callee of no modelled kind, a list's `append`, a dict's `update`,
`fabric.launch`). Its methods may be called on it, its data attributes read, and it may be
passed to a library call (`trainer.fit(model)`), whose result holds none of its arguments for
the evaluator. A method read and not called there (`partial(self.step, ...)`,
`Dataset(self.samples)`) is a value that may be called anywhere: that method's callers are
looked for as before (`leaked`), the others' are not. A bound method carries no object the
evaluator reads attributes of, and its body reads `self` in the class's own module.

Then the callers of a method of a contained class are in the modules that name the class:
callers.py reads only those, where it read every module that writes the method's name
(`training_step` in a hundred test modules of the Lightning repository). Each check is made on
those modules' syntax, the evaluator asked only what a callee, a decorator or a base is. Any
doubt, including an evaluation cut short, answers "not contained", and the search reads what
it read before.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis import names
from amp_clipfix.analysis.contained_syntax import (
    FUNCTIONS,
    STAR_IMPORT,
    annotation,
    bound_in,
    is_super,
    library_value,
    nodes_on,
    nodes_writing,
    reads_of,
    word_lines,
)
from amp_clipfix.analysis.recording import matches, python_texts, tested
from amp_clipfix.analysis.text_tests import text_reference
from amp_clipfix.analysis.values import ClsV, Ext
from amp_clipfix.records import field, record

if TYPE_CHECKING:
    from amp_clipfix.analysis.passed import PassedCalls
    from amp_clipfix.analysis.summary import Summary

# What a contained class's body may hold: methods, class attributes, its docstring.
BODY = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign, ast.AnnAssign, ast.Expr, ast.Pass)
# Library methods whose call the evaluator reads as a store into their receiver
# (class_members.ADDING, dict_stores.STORING_METHODS) or as a call of their argument
# (passed.launch_call): an object passed to one of them may be read elsewhere.
# Library callees of these kinds hand no argument back to the evaluator's values: a Trainer's,
# a Fabric's or a LightningCLI's arguments are read by the rules only (library.call_external
# makes a TrainerV / FabricV of the call; a CLI call is decided at run time), and no attribute
# of those values is read from them (classes.attribute_of).
PASSIVE = frozenset({None, names.Kind.TRAINER, names.Kind.FABRIC, names.Kind.LIGHTNING_CLI})
# Files that may call a method beyond which its class is asked whether its objects stay in the
# modules that name it: with fewer, the check costs more than it can save.
CONTAINED_FROM = 8
# The modules one family's check reads at most (its own and those that may read its names):
# past them the class is not contained, and the search reads what it read before (a framework's
# core class, imported by eighty modules of accelerate, would cost more to check than it saves).
MODULES = 16
CONSTRUCTORS = frozenset({"__init__", "__new__", "__post_init__"})
STORING = frozenset({"append", "extend", "insert", "update", "setdefault", names.FABRIC_LAUNCH})


@record
class Kept:
    """A class's answer: the modules its objects may be in (None: any), and the methods read
    there as values (whose callers may be anywhere)."""

    files: list[Path] | None
    leaked: set[str] = field(default_factory=set)
    family: set[int] = field(default_factory=set)  # the classes checked, by id


def method_files(
    ev: PassedCalls, cls: ast.ClassDef, summary: Summary, method: str, files: list[Path]
) -> list[Path]:
    """Of `files`, the modules a search reads for the callers of the method `method` of `cls`
    (defined in `summary`): with more than CONTAINED_FROM of them, those that name the class
    when it is contained and the method is not read as a value; else all of them."""
    if len(files) <= CONTAINED_FROM:
        return files
    kept = contained(ev, cls, summary)
    if kept.files is None or method in kept.leaked:
        return files
    return [path for path in files if path in set(kept.files)]


def contained(ev: PassedCalls, cls: ast.ClassDef, summary: Summary) -> Kept:
    """Where the objects of `cls` may be (see the module's docstring): those of its family,
    the project classes that derive from the one project class at the top of its bases."""
    cuts = ev.cuts
    project = [b for b in ev.mro(ClsV(cls, summary)) if isinstance(b, ClsV)]
    roots = [b for b in project if not any(isinstance(c, ClsV) for c in ev.mro(b)[1:])]
    if ev.cuts != cuts or len(roots) != 1:
        return Kept(None)
    root = roots[0]
    key = id(root.node)
    known = ev.contained_cache.get(key)
    if known is None:
        known = Containment(ev, root.node, root.summary).kept()
        if ev.cuts != cuts:
            return Kept(None)  # an answer cut short says nothing: read as before, not memoised
        ev.contained_cache[key] = known
    assert isinstance(known, Kept)
    return known if id(cls) in known.family else Kept(None)


class Containment:
    """One family's check: its modules' uses of its classes' names and of their objects."""

    def __init__(self, ev: PassedCalls, root: ast.ClassDef, summary: Summary) -> None:
        self.ev = ev
        self.family: dict[int, tuple[ast.ClassDef, Summary]] = {id(root): (root, summary)}
        self.names = {root.name}
        self.methods: set[str] = set()
        self.leaked: set[str] = set()
        self.modules: dict[Path, Summary] = {}
        self.lines: dict[tuple[Path, str], list[int] | None] = {}  # word_lines, per module
        self.class_names: tuple[int, set[str]] = (0, set())  # class_level's, per family size
        self.summary = summary  # the module being checked

    def kept(self) -> Kept:
        while True:  # until no module and no subclass is added
            known = (len(self.family), len(self.modules))
            homes = {where.path for _, where in self.family.values()}
            wanted = [
                path
                for path in self.naming_files()
                if path not in self.modules and (path in homes or self.may_read(path))
            ]
            if len(self.modules) + len(wanted) > MODULES:
                return Kept(None)  # a class read in many modules: the check would cost more
            for path in wanted:
                module = self.ev.summary(path)
                if module is None:
                    return Kept(None)
                self.modules[path] = module
            for module in list(self.modules.values()):
                self.methods = {
                    s.name
                    for c, _ in self.family.values()
                    for s in c.body
                    if isinstance(s, FUNCTIONS)
                }
                if not self.module_keeps(module):
                    return Kept(None)
            if (len(self.family), len(self.modules)) == known:
                break
        for cls, module in list(self.family.values()):
            if not self.class_keeps(cls, module):
                return Kept(None)
        files = self.ev.word_index.in_order(set(self.modules))
        return Kept(files, self.leaked, set(self.family))

    def naming_files(self) -> list[Path]:
        found: dict[Path, None] = {}
        for name in sorted(self.names):
            found.update(dict.fromkeys(self.ev.files_naming(name.encode("ascii"))))
        return list(found)

    def may_read(self, path: Path) -> bool:
        """The module's text may read a family class: it imports one by name or imports `*`,
        or writes one as an attribute (`module.Name`) or in a string (`"pkg.Name"`). Else its
        words are another object's (its own class, a local, a comment): not parsed."""
        # each test noted with its result, not as a read of the file: an edit that keeps every
        # result keeps the answer
        contents = self.ev.contents
        data = python_texts(contents)[path]
        if tested(contents, path, (matches(STAR_IMPORT),), STAR_IMPORT.search(data) is not None):
            return True
        for name in self.names:
            word = name.encode("ascii")
            if self.ev.imports_name(path, word):
                return True
            test = (("fn", "referenced", word),)  # text_tests.referenced
            if tested(contents, path, test, text_reference(word, data)):
                return True
        return False

    def class_keeps(self, cls: ast.ClassDef, module: Summary) -> bool:
        """A class of the family: no decorator, metaclass or conditional body, no project base
        outside the family, its methods keep `self`. (One defined in a function is read by
        its name like the others: every read of the name in its module is checked.)"""
        if cls.decorator_list or cls.keywords:
            return False
        if not all(isinstance(s, BODY) for s in cls.body):
            return False  # a method or attribute made under an `if`, a nested class...
        mro = self.ev.mro(ClsV(cls, module))
        if any(isinstance(b, ClsV) and id(b.node) not in self.family for b in mro):
            return False  # a project base's methods run with its instances as `self`
        self.use_module(module)
        return all(self.method_keeps(s) for s in cls.body if isinstance(s, FUNCTIONS))

    def use_module(self, module: Summary) -> None:
        self.summary = module

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node's parent in the module checked (mapped as far as asked: Summary.parent)."""
        return self.summary.parent(node)

    def module_keeps(self, module: Summary) -> bool:
        """The module writes the family's names only as names read that keep the object,
        besides their class statements and `from m import Name`; a class statement that
        derives from one of them joins the family. A module that defines none of them and
        imports none of them by name or by `*` reads another object under such a name (its
        own class, a local): only its attributes and strings are checked there. Where a read
        may be another object as well (two classes of one name in a module), it is checked as
        if it were the family's."""
        self.use_module(module)
        names_ = self.names
        ours = self.bound_here(module)
        spelled = re.compile(rf"(?:^|[.:])(?:{'|'.join(map(re.escape, sorted(names_)))})$")
        for node in nodes_writing(module, names_):
            if isinstance(node, ast.Name) and node.id in ours:
                if isinstance(node.ctx, ast.Load) and not self.name_use_keeps(node):
                    return False  # (a store binds the name to another object)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for alias in node.names:
                    if alias.asname in names_:
                        return False
                    if names_.intersection(alias.name.split(".")) and (
                        alias.asname is not None or isinstance(node, ast.Import)
                    ):
                        return False  # `from m import Name` only: then read as itself
            elif isinstance(node, ast.Attribute) and node.attr in names_:
                return False  # `module.Name`
            elif isinstance(node, (ast.Global, ast.Nonlocal)) and ours.intersection(node.names):
                return False
            elif (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and spelled.search(node.value.strip())
            ):
                return False  # a string that may name the class (`getattr`, a path)
        return True

    def bound_here(self, module: Summary) -> set[str]:
        """The family's names whose reads in `module` may be a family class: those of the
        classes it defines, those it imports by name, all of them under a `from m import *`."""
        found = {c.name for c, where in self.family.values() if where.path == module.path}
        for node in module.walked_statements():
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name == "*":
                        return set(self.names)
                    if alias.name in self.names:
                        found.add(alias.name)
        return found

    def name_use_keeps(self, node: ast.Name) -> bool:
        """A read of a family class's name: a base of a class statement (a subclass, which
        joins the family), an annotation, or a use that keeps the class object."""
        parent = self.parent(node)
        if isinstance(parent, ast.ClassDef) and node in parent.bases:
            if id(parent) not in self.family:
                self.family[id(parent)] = (parent, self.summary)
                self.names.add(parent.name)
            return True
        if annotation(node, self.parent):
            return True  # the evaluator reads an annotation only to test it (callers.py)
        return self.use_keeps(node)

    # -- uses ------------------------------------------------------------------------------------

    def method_keeps(self, method: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """The method's decorators are the library's, and its `self` (or `cls`, or
        `super()`) stays."""
        ctx = self.ev.ctx_of(self.summary, method)
        static = False
        for decorator in method.decorator_list:
            for value in self.ev.ev(decorator, ctx):
                if not library_value(value, decorator):
                    return False
            static = static or (isinstance(decorator, ast.Name) and decorator.id == "staticmethod")
        for node in ast.walk(method):
            if isinstance(node, ast.Call) and is_super(node) and not self.use_keeps(node):
                return False  # `super()` is `self` read from the bases
        positional = [*method.args.posonlyargs, *method.args.args]
        if static or not positional:
            return True
        return self.name_keeps(method, positional[0].arg)

    def name_keeps(self, function: ast.AST, name: str) -> bool:
        """Every read of the local `name` in `function` keeps the object it holds, also in the
        functions, lambdas and classes nested in it (a closure reads it where it is written);
        none declares it global or nonlocal (it would be another scope's)."""
        key = (self.summary.path, name)
        if key not in self.lines:
            self.lines[key] = word_lines(self.summary, {name})
        nodes = nodes_on(function, self.lines[key])
        for node in nodes:
            if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
                return False
        return all(self.use_keeps(node) for node in reads_of(function, name, nodes))

    def use_keeps(self, node: ast.expr) -> bool:
        """A read of an object of the class (the class's name, an instance's local, `self`,
        `super()`) that keeps it in the modules checked."""
        parent = self.parent(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            attr = parent.attr
            dunder = attr.startswith("__") and attr.endswith("__")
            if not dunder and attr not in self.methods:
                # a data attribute (what the module stores in it, checked where stored) or the
                # library's; a class attribute may hold anything
                return not self.class_level(attr)
            called = self.parent(parent)
            if isinstance(called, ast.Call) and called.func is parent:
                return True  # a method called: its returns are checked (`return self`)
            if dunder or not isinstance(parent.ctx, ast.Load):
                return False  # the class, its dict...; a method replaced
            if not self.method_value_keeps(parent):
                self.leaked.add(attr)  # the method as a value: its callers may be anywhere
            return True
        if isinstance(parent, ast.Call) and parent.func is node:
            if isinstance(node, ast.Name) and node.id in self.names:
                return self.instance_keeps(parent)  # an instance made
            return True  # the object called: its `__call__` gives what the evaluator decides
        if isinstance(parent, ast.Compare):
            return True
        if (
            isinstance(parent, ast.IfExp)
            and node is not parent.test
            or isinstance(parent, ast.BoolOp)
        ):
            return self.instance_keeps(parent)  # the expression's value may be the object
        return self.argument_keeps(node)

    def argument_keeps(self, node: ast.expr) -> bool:
        """`node` is an argument of a library call that passes none on (library_call), or an
        element of a list, tuple, set or dict written as one (`parametrize("cls", [A, B])`,
        `Trainer(callbacks=[Sampler()])`)."""
        parent = self.parent(node)
        while (isinstance(parent, (ast.List, ast.Tuple, ast.Set)) and node in parent.elts) or (
            isinstance(parent, ast.Dict) and node in parent.values
        ):
            node, parent = parent, self.parent(parent)
        call = parent
        if isinstance(parent, ast.keyword) and parent.arg is not None:
            call = self.parent(parent)
        if isinstance(call, ast.Call) and (node in call.args or parent in call.keywords):
            return self.library_call(call)
        return False

    def method_value_keeps(self, method: ast.Attribute) -> bool:
        """A bound method read as a value stays in the modules checked: passed to a library
        call, or the function of a `functools.partial` whose result stays (read as an
        instance's: `optimizer.step(partial(self.step, model=model))`)."""
        parent = self.parent(method)
        if isinstance(parent, ast.Call) and parent.args and parent.args[0] is method:
            values = self.ev.ev(parent.func, self.ev.ctx_of(self.summary, parent))
            if values and all(
                isinstance(v, Ext) and names.kind_of(v.qname) is names.Kind.PARTIAL for v in values
            ):
                return self.instance_keeps(parent)
        return self.argument_keeps(method)

    def class_level(self, attr: str) -> bool:
        """`attr` is bound in a family class's body other than by a method (a class
        attribute: it may hold anything, a method among others)."""
        if self.class_names[0] != len(self.family):
            found = {
                n.id
                for cls, _ in self.family.values()
                for s in cls.body
                if isinstance(s, (ast.Assign, ast.AnnAssign))
                for n in ast.walk(s)
                if isinstance(n, ast.Name)
            }
            self.class_names = (len(self.family), found)
        return attr in self.class_names[1]

    def instance_keeps(self, call: ast.expr) -> bool:
        """An instance made by `Name(...)` stays: the call is a statement of its own, the
        receiver of a method call, an argument of a library call, or the only target of an
        assignment to a local of a function whose reads keep it."""
        parent = self.parent(call)
        if isinstance(parent, ast.Expr):
            return True
        if isinstance(parent, ast.Assign) and parent.value is call:
            if len(parent.targets) != 1 or not isinstance(parent.targets[0], ast.Name):
                return False
            function, _ = self.summary.enclosing(parent)
            if not isinstance(function, FUNCTIONS):
                return False  # a module global (importable) or a class attribute
            return self.name_keeps(function, parent.targets[0].id)
        return self.use_keeps(call)

    def library_call(self, call: ast.Call) -> bool:
        """`call` passes none of its arguments on for the evaluator: its callee is a library
        function of no modelled kind (or a PASSIVE one), or an attribute the evaluator leaves
        to the library, and no method it reads as a store or a launch."""
        func = call.func
        if isinstance(func, ast.Attribute) and func.attr in STORING:
            return False
        if any(isinstance(arg, ast.Starred) for arg in call.args):
            return False
        if any(keyword.arg is None for keyword in call.keywords):
            return False
        values = self.ev.ev(func, self.ev.ctx_of(self.summary, call))
        return bool(values) and all(
            (library_value(value, func) or self.inert_class(value))
            and not (isinstance(value, Ext) and names.kind_of(value.qname) not in PASSIVE)
            for value in values
        )

    def inert_class(self, value: object) -> bool:
        """A project class whose instances hold none of their construction's arguments for
        the evaluator: no record (whose fields are its arguments: fields.py), and no project
        class of its bases defines `__init__`, `__new__` or `__post_init__` (whose parameters
        would be followed to this call): `MyLightningCLI(Model)` with the library's
        `__init__`."""
        if not isinstance(value, ClsV) or self.ev.dataclass_layout(value) is not None:  # type: ignore[attr-defined]
            return False
        return not any(
            isinstance(base, ClsV) and CONSTRUCTORS.intersection(bound_in(base.node))
            for base in self.ev.mro(value)
        )
