"""Which calls can reach a scaled backward, a clip or an optimizer step: an index of the
project's functions by name, so a search in run order (order.events) asks the evaluator only
about the calls that can run one.

order.events asks the evaluator what every call of a reading and of its helpers is (torch's
clip by value, a project function to enter). On accelerate and timm that was 80% of the run,
a few calls costing most of it (`utils.reduce_tensor(loss, n).item()`, `model.modules()`: the
receiver followed through every caller). An attribute call `x.name(...)` runs project code
only through what the project gives a value as its attribute `name`: the evaluator finds an
attribute's value in a module's bindings, a class body, `self.name = ...`, a field or keyword,
`getattr(x, "name")`, `self.hparams.name` (analysis/classes.py `attribute_of`), else it is a
library attribute. So:

- where the project binds `name` to a value anywhere (not only as a function), the call may
  run anything: it is asked about, as before;
- where it binds `name` only as functions (`def name`), the call runs one of those or library
  code: it is asked about only when one of those functions can reach an event (`reaches`:
  a call in it that may be a backward, an unscale, a step or a clip, or an attribute call whose
  name reaches one, or any call the index cannot follow: a plain name that is not a builtin, a
  call of a call's result);
- where it binds `name` nowhere, the call runs library code only: it is not asked about.

torch's clip is a library function: a call can be it without being spelled `clip_grad_norm_`
only where the project hands the function on as a value. Stored whole under names
(`self.clip_func = torch.nn.utils.clip_grad_norm_`, an import under another name), a call
spelled with one of those names may be it (clip_values.py: `clip_names`); handed on otherwise
(`partial(clip_grad_norm_, ...)`, an argument, a string), every call may be it and nothing is
left out (`clip_escapes`).

A function's answer reads the files that define or bind the name (noted as reads and scans,
recording.py), so an edit there invalidates the queries that relied on it.
"""

from __future__ import annotations

import ast
import builtins
import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.bound_names import FileNames, file_names, plain_decorator, text_binds
from amp_clipfix.analysis.clip_values import clip_names, project_functions, spelled
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.literal_words import read_as_written, written_binding_nothing
from amp_clipfix.analysis.names import TORCH_CLIP_NAMES as CLIP_NAMES
from amp_clipfix.analysis.order import HELPER_DEPTH, calls_of, statements
from amp_clipfix.analysis.receivers import follows_callers, from_call
from amp_clipfix.analysis.recording import (
    PREDICATES,
    Recording,
    Test,
    earlier_result,
    earlier_witness,
    holds,
    known_absent,
    python_texts,
    raw,
    read,
    tested,
)
from amp_clipfix.analysis.shapes import all_params
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.analysis.text_tests import written_free
from amp_clipfix.sources.prefilter import word_start

if TYPE_CHECKING:
    from amp_clipfix.analysis.instance_flow import Function, Sites

# Method names a call of which may be an event itself (the classifier decides by value):
# `scaler.scale(loss).backward()`, `scaler.unscale_(opt)`, `scaler.step(opt)`.
EVENT_METHODS = frozenset({"backward", "unscale_", "step"})
BUILTIN_NAMES = frozenset(dir(builtins))
# The helper levels below a called function that a reading still enters: a reading (depth 0)
# enters helpers down to order.HELPER_DEPTH, so the callee of one of its calls has two more.
LEVELS = HELPER_DEPTH - 1
# The files whose names one question reads at most, and one search (SEARCH_FILES_READ, or one
# in SEARCH_SHARE of the project's files where that is more: a wrong "may" costs a larger tree
# more): past them the question is answered "may" (a tree where the questions need more pays
# more for the index than it saves: bench/README `reach`, `reach2`).
FILES_READ = 64
SEARCH_FILES_READ = 48
SEARCH_SHARE = 8
VALUE_BOUND = "binds_attribute_value"  # the scan's predicate (recording.PREDICATES)
FREE = "written_free"  # the free-writing test noted of each file past the budget (text_tests.py)
DOT = ord(".")
# The start of a value that may be no callable (stored_text leaves it to the parse).
INERT_START = re.compile(rb"\s*(?:[-0-9\[{(\"'.]|None\b|True\b|False\b|[rbfuRBFU]+[\"'])")


def binds_attribute_value(path: Path, data: bytes, name: str) -> bool:
    """The scan's test of one file: it gives `name` a value other than as a function (a file
    that does not parse: yes)."""
    if not written_free(name, data):
        return False
    if stored_text(name, data):
        return True
    names = parsed_names(path, data)
    return names is None or names.binds_value(name, data)


@functools.lru_cache(maxsize=4)
def parsed_names(path: Path, data: bytes) -> FileNames | None:
    """The names the file binds, None when it does not parse: once per changed file for the
    several names a query asked (`query_checks.still`, `recording.Absent`)."""
    try:
        summary = summarise(path.parent, path, data.decode("utf-8", "replace"), data=data)
    except Exception:  # noqa: BLE001 - a file the summary cannot read: it may
        return None
    return None if summary is None else file_names(summary, data)


def stored_text(name: str, data: bytes) -> bool:
    """The text stores `name` as an attribute or passes it as a keyword (`x.name = v`,
    `f(a, name=v)`): a binding whatever the parse says (in a string it only says yes). Not
    `a, name = v` (a tuple of local names), nor a value that may be inert (`x.name = None`,
    `f(name=[])`): the parse decides those. The word is looked for first (a literal is the
    quick search), then what stands before it."""
    for match in stores(name).finditer(data):
        before = match.start() - 1
        while before >= 0 and data[before] in b" \t\r\n":
            before -= 1
        mark = data[before] if before >= 0 else 0
        keyword = mark in b"(," and not match.group(1)
        if (mark == DOT or keyword) and not INERT_START.match(data, match.end()):
            return True
    return False


def defines(name: str, data: bytes) -> bool:
    """The text may define a function `name` (`def name`, any spacing)."""
    return defining(name).search(data) is not None


@functools.lru_cache(maxsize=1024)
def stores(name: str) -> re.Pattern[bytes]:
    """`name` followed by `=` (not `==`), compiled once per name: asked of every file that
    writes it (`re`'s own cache costs an escape and a lookup per file)."""
    return re.compile(re.escape(name.encode("ascii")) + rb"(\s*)=(?!=)")


@functools.lru_cache(maxsize=1024)
def defining(name: str) -> re.Pattern[bytes]:
    """`\\bdef\\s+name\\b`, compiled once per name (fairseq asks 800 files about its names)."""
    return re.compile(word_start(b"def") + rb"\s+" + re.escape(name.encode("ascii")) + rb"\b")


def still_first_store(
    name: str, test: Test, naming: list[Path], contents: Mapping[Path, bytes]
) -> Path | None:
    """The first of `naming` whose text writes `name` freely and stores it (`written_free`,
    `stored_text`: `value_files`' witness without a parse), known from the earlier entry of the
    query computed again: its witness for `test` (`recording.earlier_witness`). Every file
    before that one that did not change since still fails (`binds_attribute_value`, the
    test's predicate, passes where both do), so only the changed files before it are tested,
    and the witness itself when it did not change (it may have been a parse's witness). None:
    not known so, `value_files` lists the files as a cold run does."""
    earlier = earlier_witness(contents, test)
    if earlier is None:
        return None
    witness, changed = earlier
    texts = python_texts(contents)
    for path in naming:
        key = str(path)
        if key in changed or key == witness:
            data = texts[path]
            if written_free(name, data) and stored_text(name, data):
                return path
            if key == witness:
                return None  # unchanged and no store (a parse found it): not known
    return None


PREDICATES[VALUE_BOUND] = binds_attribute_value


class CallReach:
    """Per search: which calls may reach an event (`may_run_project`), from each file's names
    (`FileNames`, read once from the summary the evaluator keeps) and each function's answer
    (`reaches`, once per function). Counts what it left out and what it read."""

    def __init__(self, facts: ProjectFacts) -> None:
        self.facts = facts
        self.evaluator = facts.evaluator
        self.files: dict[Path, FileNames] = {}
        # files whose names a cold run would have read by now, not read yet (`value_files`)
        self.promised: set[Path] = set()
        # (attribute name, levels) -> a call of it may reach an event
        self.names: dict[tuple[str, int], bool] = {}
        # (id(function node), levels) -> running it may meet an event (the nodes: `files`)
        self.functions: dict[tuple[int, int], bool] = {}
        self.values: dict[str, bool] = {}  # attribute name -> some file gives it a value
        self.calls: dict[int, bool] = {}  # id(call) -> may_run_project
        self.only_called: dict[str, bool] = {}  # attribute name -> written only as `.name(`
        # the names a call of torch's clip may be spelled with (None: any call; clip_values.py)
        self.stored: frozenset[str] | None = None
        self.clips: frozenset[str] = CLIP_NAMES
        self.escapes: bool | None = None
        # value_sites.followed's answers: the clip index and BeforeClip ask the same flow
        self.flows: dict[int, tuple[Function, Sites | None]] = {}
        self.skipped = 0  # calls not asked about
        self.asked = 0  # calls asked about

    def may_run_project(self, file: FileFacts, function: ast.AST | None, call: ast.Call) -> bool:
        """The call may be torch's clip or run project code that reaches an event: anything
        but an attribute call (on a receiver the evaluator follows to other code) whose name
        the project binds to no value, and to no function that can reach one. Kept per call:
        the search and its classifier both ask."""
        known = self.calls.get(id(call))
        if known is None:
            known = self.calls[id(call)] = self.call_runs(file, function, call)
        return known

    def call_runs(self, file: FileFacts, function: ast.AST | None, call: ast.Call) -> bool:
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and (
                follows_callers(file.summary, func.value, function)
                or (
                    from_call(self.evaluator, file.summary, func.value, function)
                    and self.method_calls_only(func.attr)
                )
            )
            and not self.clip_escapes()
            and not self.attribute_reaches(func.attr)
        ):
            self.skipped += 1
            return False
        self.asked += 1
        return True

    def method_calls_only(self, name: str) -> bool:
        """No project file writes `name` other than as a method call `.name(`: no function is
        defined under it and no value given it, so the index answers from the texts alone. A
        call on a local a call gave is asked then too (`generated_ids[0].tolist()`, whose
        receiver the evaluator follows through a model's whole `generate`)."""
        known = self.only_called.get(name)
        if known is None:
            texts = python_texts(self.contents)
            known = self.only_called[name] = (
                name.isascii()
                and name not in EVENT_METHODS
                and name not in CLIP_NAMES
                and not any(written_free(name, texts[path]) for path in self.files_naming(name))
            )
        return known

    def may_hold_instance(self, summary: Summary, call: ast.Call) -> bool:
        """The call's callee may hold a project instance (whose `__call__` it runs): anything
        but an attribute call whose name the project gives no value (a method so named is a
        function, not an instance)."""
        func = call.func
        if (
            isinstance(func, ast.Attribute)
            and follows_callers(summary, func.value)
            and not self.value_bound(func.attr)
        ):
            self.skipped += 1
            return False
        return True

    def value_bound(self, name: str) -> bool:
        """Some project file gives a value the attribute `name` other than as a function."""
        known = self.values.get(name)
        if known is None:
            known = self.values[name] = not name.isascii() or self.value_files(name) is not None
        return known

    def value_files(self, name: str) -> Path | None:
        """A file that gives `name` a value, looked for among those already read first (no
        parse); noted as the `exists` question it answers (its witness).

        When the query's earlier entry says no file does, and no file changed since says
        otherwise (`recording.known_absent`), the files are not parsed to learn it again: each
        is promised instead (counted as read and parsed wherever that decides an order or a
        budget, as the parse would have; read when asked), so the search goes on as a cold
        run's does."""
        texts = python_texts(self.contents)
        test = (holds(name.encode("ascii")), ("fn", VALUE_BOUND, name))
        absent = known_absent(self.contents, test)
        naming = self.files_naming(name)
        writing: list[Path] = []
        found = None if absent else still_first_store(name, test, naming, self.contents)
        for path in () if found is not None else naming:
            earlier = earlier_result(self.contents, path, (("fn", FREE, name),))
            if earlier is False or earlier is None and not written_free(name, texts[path]):
                continue
            writing.append(path)
            # `x.name = v`, `f(name=v)`: a witness without a parse (the first one stops the
            # listing: the files after it are not needed). Not a file whose free writing the
            # earlier entry noted: it was noted below, after a listing that met no store (or
            # while no file gave a value, which a free writing that stores would), and the
            # file has the same bytes.
            if not absent and earlier is None and stored_text(name, texts[path]):
                found = path
                break
        if found is None and writing and self.over_budget(writing):
            # may: the answer is how many files write the name freely, noted as each file's
            # free-writing test (an edit that changes only that asks again)
            free = set(writing)
            for path in naming:
                tested(self.contents, path, (("fn", FREE, name),), path in free)
            return writing[0]
        if absent:  # every file would be read and parsed, none giving a value
            self.promise(writing)
        elif found is None:
            writing.sort(key=lambda path: not self.evaluator.has_summary(path))  # stable
            found = next((p for p in writing if self.binds_value(p, name, texts[p])), None)
        if isinstance(self.contents, Recording):
            self.contents.reads.exists[test] = None if found is None else str(found)
        return found

    def binds_value(self, path: Path, name: str, data: bytes) -> bool:
        """The file gives `name` a value (`names_of`), its parse left out where the text shows
        it cannot (`literal_words.written_binding_nothing`; a Python file read as written): it
        is then promised as read, as the parse would leave it, but not as known to parse."""
        if (
            path not in self.files
            and path.suffix == ".py"
            and data is raw(self.contents)[path]  # NFKC-stable: Python reads it as written
            and read_as_written(data)
            and written_binding_nothing(name, data)
            and not text_binds(name, data)
        ):
            self.promise([path], parsed=False)
            return False
        return self.names_of(path, data).binds_value(name, data)

    def clip_escapes(self) -> bool:
        """The project hands torch's clip on as a value (stores it under a name, imports it
        under another, passes it, writes its name as a string), so a call spelled otherwise
        may be it: the gate is off. Stored whole under names only, `clips` holds them
        (clip_values.py): the clip question is still asked only of calls so spelled
        (`may_be_clip`), but the names a function reaches an event through are many more
        than those, and indexing them cost more than it saved (bench/README `mme2`)."""
        if self.escapes is None:
            project = project_functions(self.evaluator, self.summary_of, self.tree_of)
            self.stored = clip_names(self.contents, self.tree_of, project)
            self.clips = CLIP_NAMES if self.stored is None else self.stored
            self.escapes = self.stored != CLIP_NAMES
        return self.escapes

    def may_be_clip(self, call: ast.Call) -> bool:
        """The call may be torch's clip: the clip is handed on where any call may hold it, or
        the call is spelled with a name it is stored under (clip_values.py)."""
        self.clip_escapes()
        return self.stored is None or spelled(call, self.clips)

    def tree_of(self, path: Path) -> ast.Module | None:
        """The file's tree: the rule's own files (parsed for its search anyway), else the
        evaluator's."""
        file = self.facts.files.get(path) if path in self.facts.files else None
        return file.tree if file is not None else self.summary_tree(path)

    def attribute_reaches(self, name: str, levels: int = LEVELS) -> bool:
        """A call `x.name(...)` may be an event, or run a function that reaches one within
        `levels` more helper levels (order.HELPER_DEPTH: a reading enters three)."""
        key = (name, levels)
        known = self.names.get(key)
        if known is None:
            self.names[key] = True  # asked inside its own answer (recursion): may
            known = self.names[key] = self.search_attribute(name, levels)
        return known

    def search_attribute(self, name: str, levels: int) -> bool:
        if name in EVENT_METHODS or name in CLIP_NAMES or not name.isascii():
            return True
        if self.value_bound(name):
            return True
        texts = python_texts(self.contents)
        defining = [path for path in self.files_naming(name) if defines(name, texts[path])]
        if self.over_budget(defining):
            return True
        defining.sort(key=lambda path: not self.evaluator.has_summary(path))  # stable
        for path in defining:
            read(self.contents, path)  # the answer reads the bodies of its functions
            functions = self.names_of(path, texts[path]).functions.get(name, ())
            if any(self.reaches(path, function, levels) for function in functions):
                return True
        return False

    def reaches(
        self, path: Path, function: ast.FunctionDef | ast.AsyncFunctionDef, levels: int
    ) -> bool:
        """Running `function` may meet an event in it or in the helpers it calls, `levels`
        levels down (see the module's docstring)."""
        key = (id(function), levels)
        known = self.functions.get(key)
        if known is None:
            self.functions[key] = True  # recursion: may
            known = self.functions[key] = self.search_function(path, function, levels)
        return known

    def search_function(
        self, path: Path, function: ast.FunctionDef | ast.AsyncFunctionDef, levels: int
    ) -> bool:
        if any(not plain_decorator(d) for d in function.decorator_list):
            return True  # its name may hold what the decorator made
        names = self.files[path]
        local = {a.arg for a in all_params(function.args)}
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
                local.add(node.id)
        for statement in statements(function.body):
            for call in calls_of(statement):
                if self.call_may_reach(call, names, local, levels):
                    return True
        return False

    def call_may_reach(
        self, call: ast.Call, names: FileNames, local: set[str], levels: int
    ) -> bool:
        """A call in a function of the file `names` describes may be an event, or (with
        `levels` left) run a function that reaches one."""
        func = call.func
        if isinstance(func, ast.Attribute):
            if func.attr in EVENT_METHODS or func.attr in CLIP_NAMES:
                return True
            return levels > 0 and self.attribute_reaches(func.attr, levels - 1)
        if isinstance(func, ast.Name) and func.id in CLIP_NAMES:
            return True
        if levels == 0:
            return False  # no helper is entered at the last level
        if not isinstance(func, ast.Name):
            return True  # a call of a call's result, of an item: not followed
        return not self.name_quiet(func.id, names, local, levels - 1)

    def name_quiet(self, name: str, names: FileNames, local: set[str], levels: int) -> bool:
        """`name(...)` in a function of this file runs no project code that reaches an event:
        a builtin the file does not define, or a function or class named so (defined or
        imported under its own name) none of whose namesakes reaches one. A parameter, a
        local, an assignment, a renamed import, a closure's free name: may."""
        if name in local or names.every or name in names.module_values:
            return False
        if name in BUILTIN_NAMES and name not in names.functions:
            return True
        return not self.attribute_reaches(name, levels)

    # -- files ---------------------------------------------------------------------------------

    @property
    def contents(self) -> Mapping[Path, bytes]:
        """The evaluator's (recorded) texts."""
        return self.evaluator.contents

    def files_naming(self, name: str) -> list[Path]:
        return self.evaluator.files_naming(name.encode("ascii"))

    def summary_tree(self, path: Path) -> ast.Module | None:
        summary = self.summary_of(path)
        return None if summary is None else summary.tree

    def summary_of(self, path: Path) -> Summary | None:
        """The file's summary as the evaluator reads it (made once and kept for the
        evaluator), None when it cannot be read as Python."""
        summaries = self.evaluator.summaries
        summary = summaries.get(path)
        if summary is None:
            try:
                summary = self.evaluator.load(path)
            except Exception:  # noqa: BLE001 - what the evaluator would not read either
                return None
            if summary is None:
                return None
            summaries[path] = summary
        return summary

    def over_budget(self, paths: list[Path]) -> bool:
        """Reading these files' names would take the question past FILES_READ new files, or
        the search past its share of the project: the index then answers "may" (asking the evaluator
        costs less than reading them all)."""
        new = sum(1 for path in paths if path not in self.files and path not in self.promised)
        most = max(SEARCH_FILES_READ, len(self.contents) // SEARCH_SHARE)
        return new > FILES_READ or len(self.files) + len(self.promised) + new > most

    def promise(self, paths: list[Path], parsed: bool = True) -> None:
        """`paths` count as read (`names_of`) and parsed (the evaluator's `has_summary`), as
        a cold run's `value_files` leaves them, without reading them now; `parsed`: known to
        parse (the loader's note: the collection then reports no syntax error of them)."""
        for path in paths:
            if path in self.files or path in self.promised:
                continue  # read before: `names_of` gives the names it kept, parsing nothing
            self.promised.add(path)
            if path not in self.evaluator.summaries:
                self.evaluator.promised.add(path)
                if parsed:
                    self.evaluator.promise_load(path)  # the loader keeps what it makes too

    def names_of(self, path: Path, data: bytes) -> FileNames:
        if path not in self.files:
            self.promised.discard(path)  # read now: counted once
            summary = self.summary_of(path)
            self.files[path] = FileNames() if summary is None else file_names(summary, data)
        return self.files[path]
