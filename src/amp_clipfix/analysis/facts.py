"""What a rule with its own search is given: the project's parsed files and its facts.

A check (rules/base.py `Queries.facts`) reads the `ast` trees of the files its words may be in,
asks the project's evaluator (evaluate.py) what an expression may hold, and makes typed `Site`s
with suppressions and notebook cells set; no display text is read back.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis import names
from amp_clipfix.analysis.ast_syntax import SourceText
from amp_clipfix.analysis.config_sites import Settings
from amp_clipfix.analysis.fits import FIT_WORD, Fit, call_fits, is_fit, scope_fits, trainer_scope
from amp_clipfix.analysis.lazy_files import LazyFiles
from amp_clipfix.analysis.read import in_cell
from amp_clipfix.analysis.recording import TextTest, exists, holds
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import ClsV, Ext, FabricV, Fn, Lit, Opaque, TrainerV, setting
from amp_clipfix.models import Certainty, Edit, FileSites, Site, SiteKind, Span
from amp_clipfix.patterns import lazy
from amp_clipfix.project.version import Target
from amp_clipfix.records import field, record
from amp_clipfix.sources.base import Document, SourceError

if TYPE_CHECKING:  # a search of configs alone imports no site collector or evaluator
    from amp_clipfix.analysis.evaluate import Evaluator

MANUAL_WORD = b"automatic_optimization"
# The lines as `ast.get_source_segment` splits them (at `\r\n`, `\r`, `\n` only, as Python's
# parser does), each with its line ending.
SOURCE_LINE = lazy(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def source_segment(lines: list[str], node: ast.AST) -> str | None:
    """`ast.get_source_segment(text, node)` over the text's lines split once: the stdlib splits
    the whole text again, one character at a time, at every call."""
    try:
        if node.end_lineno is None or node.end_col_offset is None:  # type: ignore[attr-defined]
            return None
        first, last = node.lineno - 1, node.end_lineno - 1  # type: ignore[attr-defined]
        start, end = node.col_offset, node.end_col_offset  # type: ignore[attr-defined]
    except AttributeError:
        return None
    if first == last:
        return lines[first].encode()[start:end].decode()
    head = lines[first].encode()[start:].decode()
    tail = lines[last].encode()[:end].decode()
    return "".join([head, *lines[first + 1 : last], tail])


@record
class FileFacts:
    """One Python document (a module, a notebook's code) as a search reads it."""

    document: Document
    summary: Summary
    _source: SourceText | None = None
    _suppressions: dict[int, frozenset[str]] | None = None
    _data: bytes | None = None
    _lines: list[str] | None = None

    @property
    def path(self) -> Path:
        return self.document.path

    @property
    def data(self) -> bytes:
        """The text as UTF-8, encoded once (every search asks which words it holds)."""
        if self._data is None:
            self._data = self.document.text.encode("utf-8", "replace")
        return self._data

    @property
    def tree(self) -> ast.Module:
        return self.summary.tree

    @property
    def source(self) -> SourceText:
        if self._source is None:
            self._source = SourceText(self.document.text, self.summary.tree)
        return self._source

    def span(self, node: ast.AST) -> Span:
        """The node's span in libcst's terms (character columns), in the document's text."""
        return self.source.span(node)

    def code(self, node: ast.AST) -> str:
        """The node's source text, as written (the whole text for the module)."""
        if isinstance(node, ast.Module):
            return self.document.text
        if self._lines is None:
            self._lines = SOURCE_LINE.findall(self.document.text)
        return source_segment(self._lines, node) or ""

    def line(self, number: int) -> str:
        """The line's text without its line ending."""
        return self.source.line(number)

    def newline(self, number: int) -> str:
        """The line ending of the line (the file's own; `\n` for a last line without one)."""
        starts = self.source.line_starts
        end = starts[number] if number < len(starts) else len(self.document.text)
        raw = self.document.text[starts[number - 1] : end]
        return raw[len(raw.rstrip("\r\n")) :] or "\n"

    def indentation(self, line: int) -> str:
        return self.source.indentation(line)

    def site(
        self,
        kind: SiteKind,
        node: ast.AST,
        detail: str,
        value: str | None = None,
        certainty: Certainty = Certainty.KNOWN,
        owner: str | None = None,
    ) -> Site:
        """A site at `node`, with the suppression comments on its lines and its notebook cell."""
        from amp_clipfix.analysis.collect import comment_suppressions, with_suppressions

        if self._suppressions is None:
            self._suppressions = comment_suppressions(self.source, self.summary.tree)
        site = Site(kind, self.path, self.span(node), certainty, detail, value, owner)
        site = with_suppressions(site, self._suppressions)
        if self.document.locate(1)[0] is not None:
            site = in_cell(site, self.document)
        return site

    def insert_before(self, statement: ast.stmt, code: str) -> Edit:
        """An edit that puts `code` (one line, no indentation) on its own line before the
        statement, at the statement's indentation; the line ending is the file's own."""
        line = statement.lineno
        indent = self.indentation(line)
        return Edit(self.path, Span(line, 0, line, 0), f"{indent}{code}{self.newline(line)}")

    def replace(self, node: ast.AST, code: str) -> Edit:
        return Edit(self.path, self.span(node), code)


@record
class ProjectFacts:
    """The parsed files of one project that a search's words may be in, its target release
    (Lightning, and `target.torch`), and the project's evaluator (made on first use)."""

    root: Path
    target: Target
    files: Mapping[Path, FileFacts]
    evaluator_of: Callable[[], Evaluator] = field(repr=False)
    _evaluator: Evaluator | None = None
    _fits: list[Fit] | None = None
    _manual_word: bool | None = None  # may_optimize_manually
    # A new evaluator for a computation of its own (candidate_answers.py; None: the project's).
    isolated_of: Callable[[], Evaluator] | None = field(default=None, repr=False)
    # Loads a project file no search word named (a module class defined elsewhere, say).
    loader: Callable[[Path], FileFacts | None] | None = field(default=None, repr=False)

    # Once the searches are done: report the files a question asked needs that do not parse.
    settle: Callable[[], None] | None = field(default=None, repr=False)  # questions.py

    def file(self, path: Path) -> FileFacts | None:
        """The parsed file at `path` (one of `files`, or loaded on first use)."""
        loaded = None if path in self.files or self.loader is None else self.loader(path)
        files = self.files
        if loaded is not None:
            if isinstance(files, LazyFiles):
                files.loaded[path] = loaded
            else:
                self.files = {**files, path: loaded}
        if isinstance(files, LazyFiles) and files.own is not None and path not in files.known:
            files.own.loads[path] = files.own.order[path] = None  # loaded, or tried
        return self.files.get(path)

    # The project's YAML configs (LightningCLI, Hydra) that hold a searching rule's words, as
    # read: a rule reads their sites with sources/yaml.py and edits their tokens.
    configs: Mapping[Path, Document] = field(default_factory=dict)
    # Their sites where the collection read them this run (None: they do not compose).
    config_sites: Mapping[Path, FileSites | None] = field(default_factory=dict)
    # Their trainer settings where that read gave them (config_sites.read_config).
    config_settings: Mapping[Path, Settings] = field(default_factory=dict)

    def sites_of_config(self, path: Path) -> FileSites:
        """A config's sites as its read gives them (composed once per run); raises SourceError
        when it does not compose."""
        if path in self.config_sites:
            sites = self.config_sites[path]
            if sites is None:
                raise SourceError(f"{path}: cannot compose")
            return sites
        from amp_clipfix.analysis.config_sites import collect_config_sites

        return collect_config_sites(path, self.configs[path].text)

    def release(self) -> None:
        """The searches are done: let go of the evaluator and of the files read (documents,
        summaries, trees). The closures that read them (project_resolve.project_facts) and the
        lazy files hold each other in a cycle, which a run with the collector off never frees."""
        self._evaluator, self.loader, self.settle = None, None, None
        if isinstance(self.files, LazyFiles):
            self.files.done.clear()
            self.files.loaded.clear()
        else:
            self.files = {}

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            self._evaluator = self.evaluator_of()
        return self._evaluator

    def with_words(self, *words: bytes, where: TextTest | None = None) -> Iterator[FileFacts]:
        """The files whose text holds one of `words` and passes `where` (calls.CallTest), in
        path order (a lazy project's files are parsed only when their text holds one)."""
        if isinstance(self.files, LazyFiles):
            yield from self.files.with_words(words, where)
            return
        for path in sorted(self.files, key=str):
            file = self.files[path]
            if any(word in file.data for word in words) and (not where or where(path, file.data)):
                yield file

    def values(self, file: FileFacts, node: ast.AST) -> list[object]:
        """What the expression may hold (evaluate.py's values; `Opaque` is run time)."""
        evaluator = self.evaluator
        summary = evaluator.summary(file.path) or file.summary
        return evaluator.force(evaluator.ev(node, evaluator.ctx_of(summary, node)))

    def qualified_names(self, file: FileFacts, node: ast.AST) -> frozenset[str]:
        """The qualified names of library objects the expression may be (`torch.nn.utils.
        clip_grad_norm_` through any import or alias); empty for project code and unknowns."""
        return frozenset(v.qname for v in self.values(file, node) if isinstance(v, Ext))

    def made_by(self, file: FileFacts, node: ast.AST) -> frozenset[str]:
        """The qualified names of the library callables whose call may have made the value of
        `node` (`scaler = torch.amp.GradScaler("cuda")` gives `torch.amp.GradScaler`)."""
        return frozenset(made.qname for made in self.constructions(file, node))

    def constructions(self, file: FileFacts, node: ast.AST) -> list[Made]:
        """The library calls that may have made the value of `node`, and the values it may
        hold that no such call made (`other`: run time, or project objects)."""
        evaluator = self.evaluator
        found: list[Made] = []
        for value in self.values(file, node):
            if (
                isinstance(value, Opaque)
                and isinstance(value.node, ast.Call)
                and value.summary is not None  # an Opaque of a config has no module
            ):
                callee, summary = value.node.func, value.summary
                made = evaluator.force(evaluator.ev(callee, evaluator.ctx_of(summary, callee)))
                found.extend(Made(v.qname, value.node, summary) for v in made if isinstance(v, Ext))
        return found

    def argument(
        self, made: Made, name: str | names.Parameter | None, position: int | None = None
    ) -> list[object]:
        """The values an argument of a library call may take (by name and position, or as the
        registry's `Parameter`); `[]` when it is not passed or the callable has no such
        argument (a `**` spread that may pass it gives an `Opaque`)."""
        if isinstance(name, names.Parameter):
            return self.argument(made, name.name, name.position)
        if name is None:
            return []
        evaluator, call = self.evaluator, made.call
        ctx = evaluator.ctx_of(made.summary, call)
        for keyword in call.keywords:
            if keyword.arg == name:
                return evaluator.force(evaluator.ev(keyword.value, ctx))
            if keyword.arg is None:
                return [Opaque(keyword.value, made.summary)]
        if position is not None and len(call.args) > position:
            if any(isinstance(arg, ast.Starred) for arg in call.args[: position + 1]):
                return [Opaque(call, made.summary)]
            return evaluator.force(evaluator.ev(call.args[position], ctx))
        return []

    # -- Lightning facts -------------------------------------------------------------------------

    def class_of(self, file: FileFacts, node: ast.AST) -> ClsV | None:
        """The class whose method holds `node` (None outside a class)."""
        _, cls = file.summary.enclosing(node)
        summary = self.evaluator.summary(file.path) or file.summary
        return None if cls is None else ClsV(cls, summary)

    def is_lightning_module(self, cls: ClsV) -> bool:
        return self.evaluator.derives_from(cls, names.LIGHTNING_MODULE_CLASSES)

    def may_optimize_manually(self) -> bool:
        """Whether any module of the project may optimize by hand: a class sets
        `automatic_optimization` (in a method, its body, a property) only where its file writes
        the word, and every class the evaluator knows is in a file it reads. False: no search
        needs to find the modules or the Trainers that train them."""
        if self._manual_word is None:
            self._manual_word = exists(self.evaluator.contents, holds(MANUAL_WORD))
        return self._manual_word

    def manual_optimization(self, cls: ClsV) -> bool | None:
        """Whether the module optimizes by hand (`self.automatic_optimization = False` in a
        method or the class body, of it or a project base): None when decided at run time."""
        if not self.may_optimize_manually():
            return False  # no class of the project sets it: Lightning's default, automatic
        evaluator = self.evaluator
        values: list[object] = []
        for klass in evaluator.mro(cls):
            if isinstance(klass, ClsV):
                found = evaluator.class_attribute(klass, "automatic_optimization", True, cls)
                values.extend(evaluator.force(found))
                if values:
                    break
        if not values:
            return False  # Lightning's default: automatic
        states = {v.value is False if isinstance(v, Lit) else None for v in values}
        if any(isinstance(v, Fn) for v in values):
            return None  # a property: its returns are not followed here
        return states.pop() if len(states) == 1 else None

    def fits(self) -> list[Fit]:
        """Every `<trainer>.fit(model, ...)` of the project whose receiver may be a Trainer:
        the Trainers it may be, and its model, read when a question needs it (analysis/fits.py:
        a question about one Trainer reads the models of its fits only)."""
        if self._fits is None:
            self._fits = []
            for file in self.with_words(FIT_WORD):
                summary = self.evaluator.summary(file.path) or file.summary
                for call in file.summary.calls_kept(is_fit, "fit"):  # a fit writes `fit`
                    self._fits += call_fits(self.evaluator, summary, call)
        return self._fits

    def trainers_of(self, cls: ClsV) -> list[TrainerV] | None:
        """The Trainers whose `fit` is given an instance of the class (or a subclass); None when
        no followed `fit` names it (it is trained elsewhere, or through a CLI)."""
        found = [
            trainer
            for fit in self.fits()
            if any(self.is_subclass(c, cls) for c in fit.classes)
            for trainer in fit.trainers
        ]
        return found or None

    def modules_of(self, call: ast.Call, file: FileFacts | None = None) -> tuple[list[ClsV], bool]:
        """The module classes the Trainer made by `call` (in `file`) fits, and whether a `fit`
        of it is given a model the analysis cannot follow (or no `fit` of it is found at all).
        A Trainer that cannot leave the code around it (fits.trainer_scope) is looked for in
        the fits of that code only, unless every fit of the project is listed already."""
        fits = self._fits
        if fits is None and file is not None:
            scope = trainer_scope(file.summary, call)
            if scope is not None:
                summary = self.evaluator.summary(file.path) or file.summary
                fits = scope_fits(self.evaluator, summary, scope) if FIT_WORD in file.data else []
        classes: list[ClsV] = []
        unknown = False
        seen = False
        for fit in self.fits() if fits is None else fits:
            if any(trainer.call is call for trainer in fit.trainers):
                seen = True
                classes += [c for c in fit.classes if not any(c.node is k.node for k in classes)]
                unknown = unknown or fit.unknown
        return classes, unknown or not seen

    def is_subclass(self, cls: ClsV, base: ClsV) -> bool:
        return any(isinstance(c, ClsV) and c.node is base.node for c in self.evaluator.mro(cls))

    def uses_scaler(self, entry: TrainerV | FabricV) -> bool | None:
        """Whether a Trainer or Fabric runs with a GradScaler (precision `16-mixed`, `16`,
        `"16"`, or a precision plugin given one): None when decided at run time."""
        if entry.call is None or entry.summary is None:
            return None  # a subclass's super().__init__, a factory: not read here
        library = names.FABRIC if isinstance(entry, FabricV) else names.TRAINER
        made = Made("", entry.call, entry.summary)
        plugins = self.argument(made, library.plugins)
        states = [self.plugin_scaler(value) for value in self.plugin_values(made, plugins)]
        if states:
            return any_scaler(states)
        precision = self.argument(made, library.precision)
        if not precision:
            return False  # the default precision, 32-true
        return scaler_of_precision(precision)

    def plugin_values(self, made: Made, plugins: list[object]) -> list[object]:
        """The plugin objects given to `plugins=` (one, or the items of a list or tuple)."""
        call = made.call
        node = next((k.value for k in call.keywords if k.arg == "plugins"), None)
        if isinstance(node, (ast.List, ast.Tuple)):
            evaluator = self.evaluator
            ctx = evaluator.ctx_of(made.summary, node)
            return [v for item in node.elts for v in evaluator.force(evaluator.ev(item, ctx))]
        return plugins

    def plugin_scaler(self, value: object) -> bool | None:
        """Whether a precision plugin object uses a GradScaler; False for other plugins."""
        if not (isinstance(value, Opaque) and isinstance(value.node, ast.Call)):
            return None if isinstance(value, Opaque) else False
        evaluator = self.evaluator
        callee, summary = value.node.func, value.summary
        if summary is None:
            return None
        made_by = evaluator.force(evaluator.ev(callee, evaluator.ctx_of(summary, callee)))
        qnames = [v.qname for v in made_by if isinstance(v, Ext)]
        entries = [names.entry_of(q) for q in qnames]
        known = [e for e in entries if e is not None and e.kind is names.Kind.PRECISION_PLUGIN]
        if not known:
            return False if qnames else None
        made = Made(qnames[0], value.node, summary)
        scaler = self.argument(made, known[0].scaler)
        if any(not (isinstance(v, Lit) and v.value is None) for v in scaler):
            return True
        return scaler_of_precision(self.argument(made, known[0].precision))


def any_scaler(states: Iterable[bool | None]) -> bool | None:
    """Several answers to "is there a GradScaler?" (plugins of one call, the Trainers or Fabrics
    a value may be): True when one certainly has one, False when none has, else None."""
    known = set(states)
    return True if True in known else (None if None in known else False)


def scaler_of_precision(values: list[object]) -> bool | None:
    """A GradScaler for `16-mixed`, `16`, `"16"`; none for other literals; None when decided at
    run time: an unknown value, or literals that disagree (`"16-mixed" if cuda else
    "bf16-mixed"` is a choice the run makes, not a certain GradScaler)."""
    states = {
        setting(value) in names.SCALER_PRECISIONS if isinstance(value, Lit) else None
        for value in values
    }
    return states.pop() if len(states) == 1 else None


@record(frozen=True)
class Made:
    """A call of a library callable (by qualified name) that made a value."""

    qname: str
    call: ast.Call
    summary: Summary
