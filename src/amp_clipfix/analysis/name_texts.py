"""Tests of one file's text that tell the caller search (callers.py) whether the file can name
a project module's function or class at all, before it is parsed: each is noted with its result
(`recording.tested`), not as a read of the file, so an edit that keeps every result keeps the
answers that rest on them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path

from amp_clipfix.analysis.contained_syntax import STAR_IMPORT
from amp_clipfix.analysis.frame import EvaluatorBase
from amp_clipfix.analysis.recording import holds, matches, raw, tested
from amp_clipfix.analysis.text_tests import import_names, text_reference, written_free
from amp_clipfix.sources.prefilter import python_text, word_start


@functools.lru_cache(maxsize=256)
def star_from(word: bytes) -> re.Pattern[bytes]:
    """`from word import *` (also `from word.sub import *`) as a statement writes it: spaces,
    tabs and continuations between its words."""
    gap = rb"(?:[ \t\f]|\\(?:\r\n|\r|\n))+"
    rest = rb"(?:[^\r\n\\]|\\(?:\r\n|\r|\n|.))*?"  # to the `import` of that statement
    star = rb"(?<![A-Za-z0-9_])import[ \t\f\\(\r\n]*\*"
    return re.compile(
        word_start(b"from") + gap + re.escape(word) + rb"(?![A-Za-z0-9_])" + rest + star
    )


class NameTexts(EvaluatorBase):
    """Whether a file's text imports a name, holds a word, may reach a module's name or
    names a method."""

    def name_text(self, path: Path) -> bytes:
        """The file's text as its tests read it (recording.python_texts), not noted as a read."""
        return python_text(raw(self.contents)[path])

    def imports_name(self, path: Path, name: bytes) -> bool:
        """Whether a file's `import` clauses write `name` (`from m import a, b`, also in
        parentheses or after `import` on its line): where a module-level function can be
        imported by name. Noted as a test of the file's text (text_tests.imports)."""
        if path not in self.import_index:
            self.import_index[path] = import_names(self.name_text(path))
        found = name in self.import_index[path]
        return tested(self.contents, path, (("fn", "imports", name),), found)

    def may_name_from(self, path: Path, module_word: bytes, word: bytes) -> bool:
        """Whether the file can name the module-level `word` of a module named `module_word`:
        it imports `word` by name or reaches it through the module (`through_module`). Its
        text tests are made once per file, module name and word, whatever module of that name
        asks: many modules of one name defining one function (a hundred `train.py` each with
        its `compute_loss`) each ask it of every file naming the word. The answer rests on the
        file's text alone, noted when first made (what a query noted counts for the later ones:
        queries.py)."""
        key = (path, module_word, word)
        found = self.module_reach.get(key)
        if found is None:
            found = self.imports_name(path, word) or self.through_module(path, module_word, word)
            self.module_reach[key] = found
        return found

    def holds_word(self, path: Path, word: bytes) -> bool:
        """Whether the file's bytes hold `word`, noted as that test of its text."""
        found = self.text_answer("holds word", word, path, lambda text: word in text)
        return tested(self.contents, path, (holds(word),), found)

    def names_module(self, path: Path, module_word: bytes) -> bool:
        """Whether the file's text writes the ASCII module name `module_word` other than as a
        method call `.name(` (text_tests.written_free: a byte that is not ASCII next to it
        counts as a boundary), noted as that test of its text. A module object is never
        called, so `x.main(...)` holds no module `main` (it calls an attribute of `x`; `x`,
        were it the module, is written before the dot): a module whose function has its own
        name (`main.py`'s `main`, `train.py`'s `train`) is not named by every file calling
        `tf.test.main()` or `model.train()`. Spaces between the dot, the name and the bracket,
        a comment or a docstring count as a writing (a superset of where Python reads it)."""
        name = module_word.decode("ascii")
        found = self.text_answer("free word", module_word, path, lambda t: written_free(name, t))
        return tested(self.contents, path, (("fn", "written_free", name),), found)

    def through_module(self, path: Path, module_word: bytes, word: bytes) -> bool:
        """Whether a file that does not import `word` by name may still reach the module-level
        `word` of the module named `module_word`: it writes the module's name, and either
        `word` as an attribute (`runner.Runner`) or in a string (`getattr(m, "Runner")`), or
        an `import *` that can bring it in bare. A file naming it only in a comment or a
        docstring (`runner (Runner): the runner`), inside a longer name (`pretrained` for the
        module `pretrain`) or only as a method call (`names_module`), cannot: it is not
        parsed."""
        if not module_word or not self.holds_word(path, module_word):
            return False
        if module_word.isascii() and not self.names_module(path, module_word):
            return False
        if not self.module_made(module_word):
            return False  # no text anywhere can make the module's object, nor import it bare
        if self.imports_star(path):
            return True
        return self.referenced(path, word)

    def imports_star(self, path: Path) -> bool:
        """Whether the file's text writes an `import *`, noted as that test of its text."""
        star = self.text_answer("import *", b"", path, lambda t: STAR_IMPORT.search(t) is not None)
        return tested(self.contents, path, (matches(STAR_IMPORT),), star)

    def imports_all_from(self, path: Path, module_word: bytes) -> bool:
        """Whether the file's text writes `from <module_word> import *` (star_from), noted as
        that test of its text."""
        pattern = star_from(module_word)
        found = self.text_answer("star from", module_word, path, lambda t: bool(pattern.search(t)))
        return tested(self.contents, path, (matches(pattern),), found)

    def package_of(self, path: Path, module_word: bytes) -> bool:
        """Whether the file is the `__init__.py` of a package holding a module or package of
        that name (where its bare name is the submodule: evaluate.module_bindings), from the
        project's file list (a query's key holds it)."""
        if path.name != "__init__.py":
            return False
        inner = path.parent / module_word.decode("ascii")
        files = raw(self.contents)
        if self.project_folders is None:  # once per run, not a scan of every file per name
            self.project_folders = {folder for file in files for folder in file.parents}
        return inner.with_name(inner.name + ".py") in files or inner in self.project_folders

    def module_made(self, module_word: bytes) -> bool:
        """Whether an object of a module named `module_word` may be made anywhere in the
        project, or its names imported bare. The evaluator makes a module object only from an
        import (module_holders.py): an import clause writing the name (`import pkg.name`,
        `from pkg import name`), a package's attribute or a string (`pkg.name`,
        `getattr(pkg, "name")`, `from .name import *`), the bare name in the `__init__.py` of
        a package holding it; `from name import *` brings its names in bare. A file that writes the
        name in none of these ways (`def main():` for a module `main.py`) makes none; where no
        file does, no `x.f` and no star anywhere reaches its function `f`: only the files
        importing `f` by name can call it (ColossalAI's `examples/.../mnist/main.py`, whose
        `train` every script calling `model.train()` and defining `main` was asked about). A
        name not all ASCII (spelled another way): may."""
        known = self.made_modules.get(module_word)
        if known is None:
            known = not module_word.isascii() or any(
                self.package_of(path, module_word)
                or self.imports_name(path, module_word)
                or self.imports_all_from(path, module_word)
                or self.referenced(path, module_word)
                for path in self.files_naming(module_word)
            )
            self.made_modules[module_word] = known
        return known

    def referenced(self, path: Path, word: bytes) -> bool:
        """Whether the file's text writes `word` as an attribute (`x.word`) or at the end of a
        string (`getattr(x, "word")`): the only ways another file can name a method. A name
        the text may spell another way (not ASCII): parse to know."""
        if not word.isascii():
            return True
        test = (("fn", "referenced", word),)  # text_tests.referenced
        found = self.text_answer(
            "references word", word, path, lambda text: text_reference(word, text)
        )
        return tested(self.contents, path, test, found)

    def text_answer(
        self, kind: str, word: bytes, path: Path, answer: Callable[[bytes], bool]
    ) -> bool:
        """A test of the file's text, computed once per file and word: the caller search asks
        the same of a file for every function of a name defined in many modules (icefall's
        hundred `train.py`), each answer noted by the caller as its test (`tested`)."""
        key = (kind, word.decode("ascii", "surrogateescape"), path)
        known = self.written_texts.get(key)
        if known is None:
            known = self.written_texts[key] = answer(self.name_text(path))
        return known
