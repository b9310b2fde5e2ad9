"""Parameters followed to their callers: which files can call a function (from an index of each
file's names), which calls do, and what each call binds to the parameters.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Callable
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.arguments import (
    CallArguments,
    binds_nothing,
    super_init_binds_nothing,
)
from amp_clipfix.analysis.contained import method_files
from amp_clipfix.analysis.cycles import cut_value
from amp_clipfix.analysis.decorators import wrapped_functions, wrapper_self
from amp_clipfix.analysis.descriptors import property_accessor
from amp_clipfix.analysis.dispatch import dispatched_caller
from amp_clipfix.analysis.frame import MAX_DEPTH, MAX_VALUES, Ctx
from amp_clipfix.analysis.name_texts import NameTexts
from amp_clipfix.analysis.nested_calls import calling_scopes, seen_in
from amp_clipfix.analysis.passed import PassedCalls
from amp_clipfix.analysis.passon import Node, followed
from amp_clipfix.analysis.plain_binds import bound_once
from amp_clipfix.analysis.recording import (
    Recording,
    earlier_scan,
    holds,
    matches,
    matches_text,
    noted,
    noted_again,
    python_texts,
    scan,
    tested,
)
from amp_clipfix.analysis.relevance import WORD, class_matches
from amp_clipfix.analysis.shapes import all_params, is_method, is_module_level, is_super_call
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.text_tests import call_of, whole_word, whole_word_text
from amp_clipfix.analysis.text_tests import written as written_in
from amp_clipfix.analysis.values import (
    ClsV,
    DictV,
    Ext,
    FabricV,
    Opaque,
    SelfV,
)

# (a call found where the function's name is written, its caller's context) -> whether the
# asker needs to know if it calls the function (CallerIndex.callers_kept)
Keep = Callable[[ast.Call, Ctx], bool]
# Files writing a method's name beyond which its callers are looked for only where its class
# (or a subclass) is named too: see method_caller_files.
METHOD_CALLER_FILES = 100


class CallerIndex(PassedCalls, NameTexts, CallArguments):
    """A parameter's values from the calls of its function in the project, and the files that
    can hold those calls."""

    def parameter(self, function: ast.AST, name: str, node: ast.AST, ctx: Ctx) -> list[object]:
        params = all_params(function.args)  # type: ignore[attr-defined]
        method = is_method(ctx.summary, function)
        positional = [*function.args.posonlyargs, *function.args.args]  # type: ignore[attr-defined]
        if method and positional and positional[0].arg == name and ctx.cls is not None:
            if isinstance(ctx.runtime, ClsV) and function is ctx.func:
                return [SelfV(ctx.runtime)]  # the subclass instantiated (dispatch.py)
            return [SelfV(ClsV(ctx.cls, ctx.summary))]
        if ctx.bindings is not None and function is ctx.func:
            return self.bound_values(ctx, name, node)  # the call's argument (returns.py)
        if isinstance(function, ast.Lambda):
            return [Opaque(node, ctx.summary)]
        decorated = wrapper_self(self, function, name, ctx) or wrapped_functions(
            self, function, name, ctx
        )
        if decorated is not None:
            return decorated  # a decorator's wrapper or wrapped function (decorators.py)
        key = (id(function), name)
        known = self.recall(self.callers_cache, "callers", key)
        if known is not None:
            return known
        if self.cycle("callers", key):
            # a recursive call adds no value of its own; while its cycle is settled, the
            # values it has so far (cycles.py)
            return cut_value(self, ("callers", key), [])
        param = next(p for p in params if p.arg == name)
        return followed(self, Node(key, function, param, ctx), node)

    def parameter_values(self, function: ast.AST, param: ast.arg, ctx: Ctx) -> list[object]:
        return self.declared_fabric(self.parameter_from_callers(function, param, ctx), param, ctx)

    def declared_fabric(self, values: list[object], param: ast.arg, ctx: Ctx) -> list[object]:
        """`fabric: L.Fabric` (also `Optional[...]`, a string): what no call shows is a Fabric
        the code declares, made where the analysis does not see (`values` itself otherwise)."""
        if any(isinstance(v, Opaque) for v in values) and self.declares_fabric(
            param.annotation, ctx
        ):
            return [v for v in values if not isinstance(v, Opaque)] + [FabricV(None)]
        return values

    def declares_fabric(self, annotation: ast.expr | None, ctx: Ctx, depth: int = 0) -> bool:
        """Whether a parameter's annotation names Lightning's Fabric (a subclass of it, an
        `Optional[...]` / `X | None` of it, or the same written as a string), by value."""
        if annotation is None or depth > 3:
            return False
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                parsed = ast.parse(annotation.value, mode="eval").body
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return False
            ast.copy_location(parsed, annotation)
            return self.declares_fabric(parsed, ctx, depth + 1)
        if isinstance(annotation, ast.Subscript):
            inner = annotation.slice
            parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            return any(self.declares_fabric(part, ctx, depth + 1) for part in parts)
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            return any(
                self.declares_fabric(side, ctx, depth + 1)
                for side in (annotation.left, annotation.right)
            )
        if not isinstance(annotation, (ast.Name, ast.Attribute)):
            return False
        for value in self.ev(annotation, ctx):
            if isinstance(value, Ext) and value.qname in names.FABRIC_CLASSES:
                return True
            if isinstance(value, ClsV) and self.derives_from(value, names.FABRIC_CLASSES):
                return True
        return False

    def parameter_from_callers(self, function: ast.AST, param: ast.arg, ctx: Ctx) -> list[object]:
        """Every value the project's calls of `function` give `param` (the default when no
        call is found; decided at run time when there is no default either), as far as a read
        can see them. Every read bounds a value (cycles.py `bounded`: its first MAX_VALUES - 1
        distinct known values, the rest one run-time value), so once more than MAX_VALUES are
        known the later calls cannot change what is read. They are left unasked where the read
        makes nothing of each value (no item or list stores into the parameter) and no cycle
        round it can be settled any more (cycles.py `settle` puts a settled cycle's values in
        the order of where each is written): a cycle it cannot settle or a hard cut met since
        it began rules that out for it and for every evaluation around it."""
        values: list[object] = []
        known: set[int] = set()  # bounded's count: distinct values not decided at run time
        plain = not self.item_statements(function, param.arg)
        plain = plain and not self.list_statements(function, param.arg)
        unsettled, cuts = self.unsettled, self.cuts
        found = self.callers(function, ctx)
        for call, caller in found:
            method = is_method(ctx.summary, function)
            bound = bound_once(self, function, call, caller, method, ctx.summary)
            added = self.force(bound.get(param.arg, []))
            values.extend(added)
            if plain:
                known.update(id(value) for value in added if not isinstance(value, Opaque))
                if len(known) > MAX_VALUES and (self.unsettled != unsettled or self.cuts != cuts):
                    break
        if values:
            return values
        if found and self.low < len(self.serials) - 1:
            # Called, but only from inside a cycle through an evaluation still running (a
            # ring of factories passing `fused` on): the values come round through that one,
            # which adds them; this is no entry point called from outside.
            return values
        if found:  # called only from inside its own cycle: a ring no call enters (cycles.py)
            self.unsettled += 1
        return self.entry_values(function, param, ctx)

    def entry_values(self, function: ast.AST, param: ast.arg, ctx: Ctx) -> list[object]:
        """A parameter no call in the project gives a value (also a member of a ring no call
        enters, passon.py): an entry point (a CLI, a test runner) calls it from outside, so
        its default is one value among those decided at run time."""
        default = self.default_of(function, param, ctx)
        if default is not None:
            values = self.ev(default, self.ctx_of(ctx.summary, function))
            return [*values, Opaque(param, ctx.summary)]
        if param is function.args.kwarg:  # type: ignore[attr-defined]
            return [DictV(closed=False)]
        return [Opaque(param, ctx.summary)]

    def callers(self, function: ast.AST, ctx: Ctx) -> list[tuple[ast.Call, Ctx]]:
        """The calls of `function` in the project (a class's `__init__`: its instantiations),
        found once per function, class and depth: each of its parameters asks for them, and
        so do the helpers' readings (callables.caller_readings)."""
        key = (id(function), id(ctx.cls), id(ctx.summary), ctx.depth)
        known = self.recall(self.found_callers, "found", key)
        if known is not None:
            return known  # type: ignore[return-value]
        if self.cycle("found", key):  # asked inside its own search: searched anew, as before
            return self.search_callers(function, ctx)
        entered = self.enter("found", key)
        found: list[tuple[ast.Call, Ctx]] | None = None
        try:
            found = self.search_callers(function, ctx)
        finally:
            self.leave(entered, self.found_callers, "found", key, found)  # type: ignore[arg-type]
        return found

    def callers_kept(self, function: ast.AST, ctx: Ctx, keep: Keep) -> list[tuple[ast.Call, Ctx]]:
        """`callers`' calls less those `keep` turns down (analysis/tail_callers.py), whose
        callee is then never evaluated (a receiver built by a registry costs thousands of
        evaluations). Found already: filtered. Not memoised (the asker's own)."""
        key = (id(function), id(ctx.cls), id(ctx.summary), ctx.depth)
        known: list[tuple[ast.Call, Ctx]] | None = self.recall(  # type: ignore[assignment]
            self.found_callers, "found", key
        )
        if known is not None:
            return [(call, at) for call, at in known if keep(call, at)]
        return self.search_callers(function, ctx, keep)

    def search_callers(
        self, function: ast.AST, ctx: Ctx, keep: Keep | None = None
    ) -> list[tuple[ast.Call, Ctx]]:
        name = function.name  # type: ignore[attr-defined]
        cls = ctx.cls
        if cls is not None and property_accessor(ctx.summary, cls, function):
            return []  # a property's setter: run by assignment, never by a call (no file read)
        init = cls is not None and name == "__init__"
        # another file names a method only as an attribute or in a string (name_texts.py)
        method = cls is not None and not init and ctx.summary.parent(function) is cls
        wanted = cls.name if cls is not None and init else name
        found = []
        scope = calling_scopes(ctx.summary, function)  # where a nested function's calls are
        for path in self.caller_files(function, wanted, ctx):
            # A file writing the name only where it is defined neither calls nor passes it on
            # (a helper, `fabric.launch`, a Thread): not parsed. (`__init__`: `super()`.)
            if not self.may_pass(path, wanted) and not (init and self.may_call(path, name)):
                continue
            if method and path != ctx.summary.path and not self.referenced(path, name.encode()):
                continue  # a method's name in a comment (`backward compatibility`): not parsed
            summary = self.summary(path)
            if summary is None:
                continue
            for call in calls_named(summary, wanted):
                caller = self.ctx_of(summary, call)
                if caller.depth + ctx.depth > MAX_DEPTH:
                    self.cuts += 1  # not the key's depth (a function and a name)
                    continue
                if (keep is not None and not keep(call, caller)) or not seen_in(scope, caller):
                    continue  # not asked: it cannot matter, or cannot be it (nested_calls.py)
                if binds_nothing(call, function):
                    continue  # it raises before the body runs (arguments.py)
                if self.calls_function(call, caller, function, cls):
                    found.extend(self.through_partial(call, caller, function, cls))
                elif cls is not None and not init:  # `self.<name>(...)` in a base's method
                    owner = ClsV(cls, ctx.summary)
                    runtime = dispatched_caller(self, call, caller, function, owner)
                    if runtime is not None:
                        found.append((call, runtime))
            # passed as a value to what calls it: a helper, `fabric.launch`, a Thread
            more = self.passed_calls(function, cls, summary, ctx)
            if cls is not None and init:
                more.extend(self.super_inits_of(cls, function, summary, ctx))
            found.extend(m for m in more if keep is None or keep(*m))
        return found

    def super_inits_of(
        self, cls: ast.ClassDef, init: ast.AST, summary: Summary, ctx: Ctx
    ) -> list[tuple[ast.Call, Ctx]]:
        """`super().__init__(...)` in a subclass's method calls the base's `__init__` (`init`)
        with those arguments (a subclass passes its config on to the base that uses it). One
        whose arguments `init` refuses is none, whatever class it is in: its class's bases
        (other modules, parsed to know them) are not asked for."""
        found = []
        for call in summary.calls("__init__"):
            if not is_super_call(call.func):
                continue
            caller = self.ctx_of(summary, call)
            if caller.cls is None or caller.cls is cls:
                continue
            method = caller.func
            if method is not None and summary.parent(method) is not caller.cls:
                method = None  # a nested function's `super()`: not the class's method
            if super_init_binds_nothing(call, init, method):
                continue
            if caller.depth + ctx.depth > MAX_DEPTH:
                self.cuts += 1
                continue
            mro = self.mro(ClsV(caller.cls, summary))
            if any(isinstance(base, ClsV) and base.node is cls for base in mro[1:]):
                found.append((call, caller))
        return found

    def may_pass(self, path: Path, name: str) -> bool:
        """Whether the file's text writes `name` as a whole word other than where it is
        defined: only there can it call the function or pass it on as a value
        (`run(fn=self.name)`, `fabric.launch(name)`)."""
        return self.written(path, name, whole_word)

    def may_call(self, path: Path, name: str) -> bool:
        """Whether the file's text can hold a call indexed under `name` (`name(`, `x.name(`:
        Summary.calls): the name, then only what may stand between a callee and its `(`
        (spaces, line breaks, comments, continuations)."""
        return self.written(path, name, call_of)

    def written(self, path: Path, name: str, pattern: Callable[[bytes], re.Pattern[bytes]]) -> bool:
        """Whether `pattern(name)` matches the file's text other than right after `def` or
        `class`, before the file is parsed (a method every test module defines,
        `training_step`, is written elsewhere in few of them). A name the text may spell
        another way (not ASCII): parse to know."""
        if not name.isascii():
            return True
        key = (pattern.__name__, name, path)
        if key not in self.written_texts:
            data = python_texts(self.contents)[path]
            self.written_texts[key] = written_in(path, data, pattern.__name__, name)
        # a test of the text noted with its result, not a read of the file (text_tests.py)
        test = (("fn", "written", pattern.__name__, name),)
        return tested(self.contents, path, test, self.written_texts[key])

    def files_with(self, word: bytes) -> list[Path]:
        if word not in self.word_files:
            self.word_files[word] = scan(self.contents, holds(word))
            return self.word_files[word]
        return noted_again(self.contents, (holds(word),), self.word_files[word])

    def caller_files(self, function: ast.AST, wanted: str, ctx: Ctx) -> list[Path]:
        """Files that can call `wanted`, found in their text before any is parsed: a function
        or class defined inside a function is called only in its own file; a module-level one
        only where it is imported by name or reached through its module's name; a method
        anywhere its name is written."""
        word = wanted.encode("utf-8")
        own = ctx.summary.path
        definition = function if wanted == getattr(function, "name", None) else ctx.cls
        if definition is None or not is_module_level(ctx.summary, definition):
            if definition is not None and not isinstance(
                ctx.summary.parent(definition), ast.ClassDef
            ):  # a staticmethod is its class's: other files may call it
                return [own]  # nested in a function: no other file can name it
            owner = ctx.summary.parent(definition) if definition is function else None
            if isinstance(owner, ast.ClassDef) and word.isascii():
                files = self.method_caller_files(word, owner, own)
                if ctx.cls is owner:  # where the class's objects may be (contained.py)
                    return method_files(self, owner, ctx.summary, wanted, files)
                return files
            return self.files_with(word)
        key = (wanted, own)
        if key not in self.caller_files_cache:
            # once per name and defining file, from an index of each file's names made once
            # per run: asked from many places, the text scans cost minutes on a torch-sized tree
            module_word = ctx.summary.name.rsplit(".", 1)[-1].encode("utf-8", "surrogateescape")
            naming = {  # its own file is one (not searched: a scan per name of one module)
                path
                for path in self.files_naming(word)
                if path != own and self.may_name_from(path, module_word, word)
            }
            self.caller_files_cache[key] = self.word_index.in_order({own, *naming})
        return self.caller_files_cache[key]

    def method_caller_files(self, word: bytes, cls: ast.ClassDef, own: Path) -> list[Path]:
        """Files that can call the method `word` of `cls`: every file that writes the method's
        name, as long as they are few (METHOD_CALLER_FILES); beyond that, those of them that
        also write the name of the class or of a project class deriving from it (by its text),
        where an instance is made, named or subclassed. A common name (`update`: a dict's, in
        hundreds of files of a big tree) made a search parse and follow every one of them; the
        price of the bound is an instance that reaches such a file only through values (an
        argument, a return) when more than that many files write the name."""
        key = (f"{cls.name}.{word.decode()}@{cls.lineno}", own)
        if key not in self.caller_files_cache:
            test, contents = whole_word(word), python_texts(self.contents)
            writers = self.word_index.built(word)  # once the index is made: no text scanned
            if writers is None:  # a query computed again: its entry's listing of the writers
                writers = earlier_scan(self.contents, (holds(word), matches(test)))
            if writers is not None:
                many = len(writers) > METHOD_CALLER_FILES
            else:
                # the files holding the text, as far as the count needs: a common name is
                # written more than METHOD_CALLER_FILES times long before the end of a big tree
                text = self.word_files.get(word) or (p for p, d in contents.items() if word in d)
                writing = (path for path in text if test.search(contents[path]))
                counted = len(list(itertools.islice(writing, METHOD_CALLER_FILES + 1)))
                many = counted > METHOD_CALLER_FILES
            if many:
                if isinstance(self.contents, Recording):  # a later run checks the whole scan
                    noted(self.contents, (holds(word), matches(test)), self.files_naming_all(word))
                holders: set[Path] = set()
                for name in self.subclass_names(cls.name.encode("utf-8")):
                    holders.update(self.files_naming(name))
                # the word test only where the class is named too: not on hundreds of files
                if writers is not None:
                    naming = holders.intersection(writers)
                else:
                    naming = {
                        p for p in holders if word in contents[p] and test.search(contents[p])
                    }
            else:
                naming = set(self.files_naming(word))
            self.caller_files_cache[key] = self.word_index.in_order({own, *naming})
        return self.caller_files_cache[key]

    def subclass_names(self, base: bytes) -> set[bytes]:
        """`base` and the names of the project classes that derive from it, by the text of
        their `class` lines (relevance.class_matches), through any number of project classes;
        only files that write a name already found are read."""
        wanted = {base}
        todo = [base]
        while todo:
            name = todo.pop()
            for path in self.files_naming(name):
                if path not in self.class_index:
                    self.class_index[path] = [
                        (match[2], set(WORD.findall(match[3])))
                        for match in class_matches(self.contents[path])
                    ]
                for defined, bases in self.class_index[path]:
                    if name in bases and defined not in wanted:
                        wanted.add(defined)
                        todo.append(defined)
        return wanted

    def files_naming(self, name: bytes) -> list[Path]:
        """The files whose text writes `name` as a whole word (an ASCII identifier; others are
        looked for as text): the files that hold it as text, then a word test on those only
        (an index of every word of a torch-sized tree cost seconds and a hundred MB)."""
        if not name.isascii():
            return self.files_with(name)
        if name not in self.name_files:
            self.name_files[name] = self.files_naming_all(name)
            return self.name_files[name]
        test = (holds(name), matches_text(whole_word_text(name)))
        return noted_again(self.contents, test, self.name_files[name])

    def files_naming_all(self, name: bytes) -> list[Path]:
        """files_naming of an ASCII name, noted as the scan it stands for: from the index, or
        while a query is computed again from its earlier entry's scan (the changed files
        tested), else from the files holding the name, each searched for it as a word."""
        # noted by the pattern's text: from the index, no pattern is compiled per name asked
        test = (holds(name), matches_text(whole_word_text(name)))
        indexed = self.word_index.naming(name)
        if indexed is None:
            holding = self.files_with(name)  # noted as a cold run notes it (a scan, or taken)
            indexed = earlier_scan(self.contents, test)
            if indexed is None:
                contents, word = python_texts(self.contents), whole_word(name)
                indexed = [path for path in holding if word.search(contents[path])]
        return noted(self.contents, test, indexed)

    def calls_function(
        self, call: ast.Call, caller: Ctx, function: ast.AST, cls: ast.ClassDef | None
    ) -> bool:
        return self.is_callable(self.ev(call.func, caller), function, cls)


def calls_named(summary: Summary, wanted: str) -> list[ast.Call]:
    """The calls of `summary` whose callee may be `wanted` by its name: written with it
    (Summary.calls), or with a name the module imports it as (`from m import f as g`: `g(...)`),
    in source order. What each call runs is the evaluator's to say (`calls_function`)."""
    found = summary.calls(wanted)
    aliases = [
        local
        for local, qualified in summary.imports.items()
        if local != wanted and qualified.rsplit(".", 1)[-1] == wanted
    ]
    if not aliases:
        return found
    more = [call for alias in aliases for call in summary.calls(alias)]
    return sorted([*found, *more], key=lambda call: (call.lineno, call.col_offset))
