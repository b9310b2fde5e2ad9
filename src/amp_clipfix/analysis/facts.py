"""What a rule with its own search is given: the project's parsed files and its facts.

A search (rules/base.py `Rule.search`) reads the `ast` trees of the files its words may be in,
asks the project's evaluator (evaluate.py, the one that follows values for every rule) what an
expression may hold, and makes typed `Site`s with suppressions and notebook cells already set.
No display text is read back: sites carry their kind, position and value.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from amp_clipfix.analysis.ast_syntax import SourceText
from amp_clipfix.analysis.collect import comment_suppressions, with_suppressions
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.read import in_cell
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import Ext, Opaque
from amp_clipfix.models import Certainty, Edit, Site, SiteKind, Span
from amp_clipfix.project.version import Target
from amp_clipfix.sources.base import Document


@dataclass
class FileFacts:
    """One Python document (a module, a notebook's code) as a search reads it."""

    document: Document
    summary: Summary
    _source: SourceText | None = None
    _suppressions: dict[int, frozenset[str]] | None = None

    @property
    def path(self) -> Path:
        return self.document.path

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
        return ast.get_source_segment(self.document.text, node) or ""

    def line(self, number: int) -> str:
        return self.source.line(number)

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
        text = self.line(line)
        ending = text[len(text.rstrip("\r\n")) :] or "\n"
        return Edit(self.path, Span(line, 0, line, 0), f"{indent}{code}{ending}")

    def replace(self, node: ast.AST, code: str) -> Edit:
        return Edit(self.path, self.span(node), code)


@dataclass
class ProjectFacts:
    """The parsed files of one project that a search's words may be in, its target release
    (Lightning, and `target.torch`), and the project's evaluator (made on first use)."""

    root: Path
    target: Target
    files: Mapping[Path, FileFacts]
    evaluator_of: Callable[[], Evaluator] = field(repr=False)
    _evaluator: Evaluator | None = None
    # The project's YAML configs (LightningCLI, Hydra) that hold a searching rule's words, as
    # read: a rule reads their sites with sources/yaml.py and edits their tokens.
    configs: Mapping[Path, Document] = field(default_factory=dict)

    @property
    def evaluator(self) -> Evaluator:
        if self._evaluator is None:
            self._evaluator = self.evaluator_of()
        return self._evaluator

    def with_words(self, *words: bytes) -> Iterator[FileFacts]:
        """The files whose text holds one of `words`, in path order."""
        for path in sorted(self.files, key=str):
            file = self.files[path]
            data = file.document.text.encode("utf-8", "replace")
            if any(word in data for word in words):
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

    def argument(self, made: Made, name: str, position: int | None = None) -> list[object]:
        """The values an argument of a library call may take; `[]` when it is not passed (a
        `**` spread that may pass it gives an `Opaque`)."""
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


@dataclass(frozen=True)
class Made:
    """A call of a library callable (by qualified name) that made a value."""

    qname: str
    call: ast.Call
    summary: Summary
