"""Which module objects hold a project's module-level function as an attribute, and whether
one of them may be made: the question ACF004's clip index asks of a function before it reads
every `x.name` spelled like it as a way to it (clip_tail.ClipCapable, value_sites.py).

The evaluator makes a module object (`ModuleV`) only from a qualified name it resolves
(evaluate.resolve_project_name): an import binds one (`import pkg.mod` binds `pkg`, `import
pkg.mod as m` and `from pkg import mod` bind `mod`), and from a module object on, each
submodule is an attribute of its package (`pkg.mod`, `getattr(pkg, "mod")`, or the bare name
`mod` in the package's `__init__.py`). So the object of `a.b.mod` can be made only where an
import may bind a module named `mod` (module_objects.binds_module), or where that of `a.b`
can be made and some text writes `mod` as an attribute or a string's end. A module no import
names and no text reaches as an attribute (a script, a tool run by its path: `hpo.py`) holds
its functions for no `x.name` anywhere, however many libraries' `x.name` the project writes
(`wandb.run`, `subprocess.run`). A package or module whose name is no identifier
(`image-gen/`) is never written, so never bound nor reached.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.module_objects import (
    IMPORTS_PLAINLY,
    binds_module,
    imports_plainly,
    last_module_name,
    module_names,
    written_as_identifier,
)
from amp_clipfix.analysis.recording import python_texts, read, tested
from amp_clipfix.analysis.summary import module_name
from amp_clipfix.analysis.text_tests import attribute_written

if TYPE_CHECKING:
    from amp_clipfix.analysis.evaluate import Evaluator
    from amp_clipfix.analysis.facts import ProjectFacts
    from amp_clipfix.analysis.reach import CallReach
    from amp_clipfix.analysis.summary import Summary
    from amp_clipfix.analysis.value_sites import Found


def module_path_names(root: Path, path: Path) -> tuple[str, ...]:
    """The names of the module a file is from the top package down (a package's `__init__.py`:
    the package's; the root's own: its folder's)."""
    dotted, _ = module_name(root, path)
    return tuple(part for part in dotted.split(".") if part) or (last_module_name(path),)


class ModuleHolders:
    """The modules whose attribute a module-level function is (`exporters`), and whether an
    object of one may be made (`attribute_reachable`); the index's own parses and text tests
    (`summary`, `imports_star`) answer what the text alone cannot."""

    reach: CallReach
    facts: ProjectFacts
    evaluator: Evaluator

    def __init__(self) -> None:
        self.public: dict[str, bool] = {}  # an import may bind a module object of that name
        self.attributed: dict[str, bool] = {}  # some text writes the name as an attribute
        self.exported: dict[int, set[str]] = {}
        self.owners: dict[int, set[str]] = {}  # exported's modules and the packages above them
        self.holders: dict[int, list[tuple[str, ...]]] = {}  # exported's modules by their path
        self.packages: dict[str, bool] = {}  # module_like's answers
        self.froms: dict[Path, tuple[Summary, list[ast.ImportFrom]]] = {}  # `import_froms`

    def summary(self, path: Path) -> Summary | None:
        raise NotImplementedError

    def imports_star(self, path: Path) -> bool:
        raise NotImplementedError

    def exporters(self, function: Found) -> set[str]:
        """The names of the modules whose attribute the module-level function is: its own,
        and every module that imports it under its name (`from m import f`), in turn."""
        key = id(function.node)
        if key not in self.exported:
            name = function.node.name
            found = {last_module_name(function.summary.path)}
            paths = [function.summary.path]
            word = name.encode("ascii")
            # a file whose import clauses do not write the name imports it from nowhere
            files = [
                path
                for path in self.evaluator.files_naming(word)
                if self.evaluator.imports_name(path, word) or self.imports_star(path)
            ]
            grew = True
            while grew:
                grew = False
                for path in files:
                    own = last_module_name(path)
                    if own in found:
                        continue
                    summary = self.summary(path)
                    if summary is None or self.imports_from(summary, name, found):
                        found.add(own)
                        paths.append(path)
                        grew = True
            self.exported[key] = found
            root = self.facts.root
            self.owners[key] = {part for path in paths for part in module_names(root, path)}
            self.holders[key] = [module_path_names(root, path) for path in paths]
        return self.exported[key]

    def imports_from(self, summary: Summary, name: str, modules: set[str]) -> bool:
        """The module imports `name` (or `*`) from one of `modules` (by the last name of the
        module path), or from a package relative to it (`from . import name`)."""
        read(self.reach.contents, summary.path)
        for node in self.import_froms(summary):
            if not any(a.name in ("*", name) for a in node.names):
                continue
            if node.module is None or node.module.split(".")[-1] in modules:
                return True
        return False

    def import_froms(self, summary: Summary) -> list[ast.ImportFrom]:
        """The module's `from ... import` statements in `walked_statements`' order, listed once
        a run: `imports_from` is asked of a module once per function and set of modules."""
        kept = self.froms.get(summary.path)
        if kept is None or kept[0] is not summary:
            nodes = [n for n in summary.walked_statements() if isinstance(n, ast.ImportFrom)]
            kept = self.froms[summary.path] = (summary, nodes)
        return kept[1]

    def attribute_reachable(self, function: Found) -> bool:
        """A module object whose attribute the module-level function is may be made (see the
        module's docstring): an import may bind one of the names `binding_names` gives, asked
        of the files already parsed first, then in `public_cost`'s order (fewer files to
        parse first; every order gives one answer)."""
        self.exporters(function)
        names = {
            name for path in self.holders[id(function.node)] for name in self.binding_names(path)
        }
        ordered = sorted(names, key=self.public_cost)
        return any(self.module_public(name, parse=False) for name in ordered) or any(
            self.module_public(name) for name in ordered
        )

    def binding_names(self, names: tuple[str, ...]) -> list[str]:
        """The names an import may bind to make an object of the module `names` (its path from
        the top package) reachable: its own, and its package's (in turn, up) while some text
        writes the name below it as an attribute or a string's end (`pkg.mod`, `getattr`)."""
        found = [names[-1]]
        for index in range(len(names) - 1, 0, -1):
            if not self.attribute_named(names[index]):
                break
            found.append(names[index - 1])
        return found

    def attribute_named(self, name: str) -> bool:
        """Some file's text writes the name as an attribute (`x.name`, not `from pkg.name
        import f`) or at the end of a string (`getattr(x, "name")`)."""
        if name not in self.attributed:
            if not name.isidentifier():
                self.attributed[name] = False  # `image-gen`: no attribute spells it
            elif not name.isascii():
                self.attributed[name] = True  # spelled another way (NFKC): not looked for
            else:
                word = name.encode("ascii")
                self.attributed[name] = any(
                    self.attribute_in(path, word) for path in self.evaluator.files_naming(word)
                )
        return self.attributed[name]

    def attribute_in(self, path: Path, word: bytes) -> bool:
        """The file's text writes the word as an attribute other than in an import statement's
        dotted names, or at the end of a string (text_tests.attribute_written): a noted test of
        its text, not a read."""
        found = self.evaluator.text_answer(
            "attribute written", word, path, lambda text: attribute_written(None, text, word)
        )
        return tested(self.reach.contents, path, (("fn", "attribute_written", word),), found)

    def module_public(self, name: str, parse: bool = True) -> bool:
        """Some file's import may bind a module object of that name, or a package's
        `__init__.py` writes it as an identifier (its submodule, once imported anywhere). A
        name that is no identifier no import writes. `parse` False: only the files the
        evaluator has parsed are asked (a False then is no answer, and is not kept)."""
        if name not in self.public:
            if not name.isidentifier():
                self.public[name] = False
            elif not name.isascii():
                self.public[name] = True  # spelled another way (NFKC): not looked for
            else:
                has_summary = self.evaluator.has_summary
                paths = self.evaluator.files_naming(name.encode("ascii"))
                if any(self.binds(path, name) for path in paths if has_summary(path)):
                    self.public[name] = True
                elif not parse:
                    return False
                else:
                    self.public[name] = any(
                        self.binds(path, name) for path in paths if not has_summary(path)
                    )
        return self.public[name]

    def public_cost(self, name: str) -> tuple[int, int, str]:
        """Known answers first, then names fewer files write (fewer of them to parse)."""
        if name in self.public or not name.isidentifier() or not name.isascii():
            return 0, 0, name
        return 1, len(self.evaluator.files_naming(name.encode("ascii"))), name

    def binds(self, path: Path, name: str) -> bool:
        """The file binds a module object named `name` in an import, or it is the
        `__init__.py` of a package with a submodule of that name and writes it
        (evaluate.module_bindings: its bare name there is the submodule)."""
        package = path.stem == "__init__" and self.has_submodule(path, name)
        word = name.encode("ascii")
        if not (package or self.evaluator.imports_name(path, word) or self.imports_star(path)):
            return False  # noted tests of the text: no import clause writes the name, no `*`
        if not package:  # `import name [as x]` in code binds it, known without a parse
            found = imports_plainly(path, python_texts(self.reach.contents)[path], name)
            if tested(self.reach.contents, path, (("fn", IMPORTS_PLAINLY, name),), found):
                return True
        summary = self.summary(path)
        if summary is None:
            return True
        if package:
            return written_as_identifier(summary.tree, name)
        return binds_module(summary, name, self.module_like)

    def module_like(self, dotted: str) -> bool:
        """The qualified name may be a project module's or package's, a folder without an
        `__init__.py` included: some module's name holds it as whole parts (`from a import b`
        binds a module object only then; else `b` is what `a` holds, a module object only
        where one is made some other way, which its own writing answers)."""
        if dotted not in self.packages:
            wanted = f".{dotted}."
            self.packages[dotted] = any(
                wanted in f".{module}."
                for module, paths in self.evaluator.by_module.items()
                if paths
            )
        return self.packages[dotted]

    def has_submodule(self, path: Path, name: str) -> bool:
        """The package whose `__init__.py` the file is has a module named `name` under it, as
        the evaluator finds one (evaluate.find_module: the dotted name, or one ending with it),
        told from the project's module names without loading any."""
        package, _ = module_name(self.facts.root, path)
        dotted = f"{package}.{name}" if package else name
        evaluator = self.evaluator
        return bool(evaluator.by_module.get(dotted) or evaluator.module_tails.get("." + dotted))
