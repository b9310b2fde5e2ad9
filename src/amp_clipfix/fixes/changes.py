"""Each file's fixes, made once (a results.FileChange): the diff, the written bytes and the
machine output's edits all come from them; and the helper module the fixed files may import from.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix import observed
from amp_clipfix.models import Edit, ErrorKind, FileError, Finding, Site, Strategy
from amp_clipfix.paths import index_name, os_error_reason
from amp_clipfix.project.config import ConfigError
from amp_clipfix.project.style import DEFAULT_STYLE, Style, project_style
from amp_clipfix.project.version import DEFAULT_TARGET, Target
from amp_clipfix.records import replace
from amp_clipfix.results import FileChange
from amp_clipfix.sources.base import Document, Language, Rendered, SourceError, VerifyError
from amp_clipfix.sources.text import SourceFile, decode_source, encode_text

if TYPE_CHECKING:
    import ast

    from amp_clipfix.analysis.read import ReadFile
    from amp_clipfix.fixes.transform import HelperImports


def fix_targets_by_file(
    findings: Sequence[Finding],
) -> dict[Path, dict[Strategy, list[Site]]]:
    """The codemods' targets per file; a rule's own fix (its edits, or an offer without edits
    that joins another finding's codemod: fixes/choose.py `joined`) runs no codemod."""
    targets: dict[Path, dict[Strategy, list[Site]]] = defaultdict(lambda: defaultdict(list))
    for finding in findings:
        if finding.fix is not None and not finding.fix.edits and finding.fix not in finding.offers:
            for site in finding.fix.targets:
                targets[site.path][finding.fix.strategy].append(site)
    return targets


def edits_by_file(findings: Sequence[Finding]) -> dict[Path, list[Edit]]:
    """The text edits of the rules' own fixes, per file."""
    edits: dict[Path, list[Edit]] = defaultdict(list)
    for finding in findings:
        if finding.fix is not None:
            for edit in finding.fix.edits:
                edits[edit.path].append(edit)
    return edits


def fixed_file(
    file: ReadFile,
    targets: Mapping[Strategy, Sequence[Site]],
    target: Target = DEFAULT_TARGET,
    helpers: HelperImports | None = None,
    edits: Sequence[Edit] = (),
    style: Style = DEFAULT_STYLE,
) -> Rendered:
    """The file's bytes after the fixes; raises VerifyError / SourceError when they fail.
    The rules' own edits are made first, and the codemods' targets moved past them. The lines
    the fixes wrote are laid out in the project's `style` (fixes/layout.py)."""
    rendered, verified = _fixed_file(file, targets, target, helpers, edits)
    codemod = bool(targets)  # else a rule's own text edits: checked by Python's parser only
    document = file.document
    if document.language is not Language.PYTHON or rendered.cells:
        return rendered
    from amp_clipfix.fixes.layout import laid_out

    before = document.text
    after = decode_source(document.source.path, rendered.data).text
    # the verification's `ast` tree of the fixed text is the layout's, when it is of `after`
    tree = verified[1] if verified is not None and verified[0] == after else None
    styled = laid_out(before, after, style, tree)
    if styled == after:
        return rendered
    return verified_render(document, styled, codemod)[0]


def _fixed_file(
    file: ReadFile,
    targets: Mapping[Strategy, Sequence[Site]],
    target: Target,
    helpers: HelperImports | None,
    edits: Sequence[Edit],
) -> tuple[Rendered, tuple[str, ast.Module] | None]:
    """The rendered file, and the fixed text with its `ast` tree when the verification
    parsed it (the layout reads it then instead of parsing it again)."""
    document = file.document
    if edits:
        from amp_clipfix.fixes.edits import apply_edits, moved_span, ordered

        if document.language not in (Language.PYTHON, Language.YAML):
            raise VerifyError("a rule's own fix edits Python code and YAML configs only; not fixed")
        made = ordered(edits)
        edited = apply_edits(document.text, made)
        if not targets:
            return verified_render(document, edited, codemod=False)
        targets = {
            strategy: [replace(s, span=moved_span(made, s.span)) for s in sites]
            for strategy, sites in targets.items()
        }
        file = replace(file, document=replace(document, text=edited), tree=None)
    # libcst's codemods (libcst.codemod builds its matchers: hundreds of dataclasses) are
    # imported only when a codemod runs; a rule's own edits above need none of it.
    from amp_clipfix.fixes.transform import fixed_text

    if file.tree is None and file.document.language is Language.PYTHON:  # parsed only to fix
        from amp_clipfix.fixes.elide import elide
        from amp_clipfix.sources.python import parse_libcst, verify_python

        document = file.document
        lines = [(s.span.line, s.span.end_line) for sites in targets.values() for s in sites]
        elided = elide(document.text, lines, file.syntax)
        if elided is not None:  # a large module: libcst sees what the fixes need
            part = replace(document, text=elided.text)
            fixed_part = fixed_text(
                replace(file, document=part, tree=parse_libcst(part.text)), targets, target, helpers
            )
            text = elided.restore(fixed_part)
            if text is not None:
                verify_python(part.text, fixed_part)  # the rest is the module's own statements
                return document.adapter.render(document, text, parsed=True), None
        file = replace(file, tree=parse_libcst(document.text))
    text = fixed_text(file, targets, target, helpers)
    return verified_render(document, text, codemod=True)


def verified_render(
    document: Document, text: str, codemod: bool
) -> tuple[Rendered, tuple[str, ast.Module] | None]:
    """The document rendered with `text`, verified: a YAML config by its adapter, Python code
    a codemod printed with libcst's parser and Python's, a rule's own text edits with Python's
    (sources/python.py `verify_syntax`: libcst is imported only where a codemod runs); for
    Python, with the `ast` tree the verification parsed (None where Python does not parse it)."""
    if document.language is not Language.PYTHON:
        return document.adapter.render(document, text), None
    from amp_clipfix.sources import python

    tree = (python.verify_python if codemod else python.verify_syntax)(document.text, text)
    rendered = document.adapter.render(document, text, parsed=True)
    return rendered, None if tree is None else (text, tree)


def findings_by_file(findings: Sequence[Finding]) -> dict[Path, list[Finding]]:
    """The findings whose fix targets or edits each file, in the findings' order: found in one
    pass (asked per changed file, it walked every finding's fix once per file)."""
    found: dict[Path, list[Finding]] = defaultdict(list)
    for finding in findings:
        if finding.fix is not None:
            paths = [s.path for s in finding.fix.targets] + [e.path for e in finding.fix.edits]
            for path in dict.fromkeys(paths):
                found[path].append(finding)
    return found


def fix_project(
    parsed: Mapping[Path, ReadFile],
    findings: Sequence[Finding],
    linked_inside: frozenset[Path] = frozenset(),
    target: Target = DEFAULT_TARGET,
    helper_module: tuple[str | None, Path | None] = (None, None),
    defer: bool = False,
    style: Style | None = None,
) -> tuple[list[FileChange], list[FileError]]:
    """Each file's fixes, made once: the diff, the written bytes and machine output's edits all
    come from these changes. With `helper-module` (its name and the project root) the fixed
    files import their helpers and one more change creates or updates that module. `style`:
    the project's, when the caller read it already (the fixpoint's rounds read it once)."""
    changes, errors = [], []
    helpers = helper_imports(*helper_module)
    root = helper_module[1]
    if style is None:
        style = project_style(root) if root is not None else DEFAULT_STYLE
    if defer:  # asked once: each ask walks every finding's edits against those taken
        waiting = overlapping(findings)
        findings = [f for f in findings if f not in waiting]
    by_file = fix_targets_by_file(findings)
    edits = edits_by_file(findings)
    fixing_by_file = findings_by_file(findings)
    for path in sorted(set(by_file) | set(edits)):
        file, targets = parsed[path], by_file.get(path, {})
        try:
            rendered = fixed_file(file, targets, target, helpers, edits.get(path, ()), style)
        except (VerifyError, SourceError) as error:
            errors.append(FileError(path, f"not fixed: {error}", ErrorKind.FIX))
            continue
        except Exception as error:  # noqa: BLE001 - a codemod bug must not stop the run
            message = f"not fixed: internal error: {error!r}"
            errors.append(FileError(path, message, ErrorKind.INTERNAL))
            continue
        source = file.document.source
        if rendered.data != source.data:
            fixing = tuple(fixing_by_file.get(path, ()))
            keep_links = path in linked_inside
            changes.append(FileChange(source, rendered.data, fixing, rendered.cells, keep_links))
    if helpers is not None and helpers.imported:
        return with_helper_module(changes, errors, helpers)
    return changes, errors


def overlapping(findings: Sequence[Finding]) -> set[Finding]:
    """The findings whose own edits overlap the edits of a finding before them: each waits,
    whole, for the next round of fixes (pipeline.py's fixpoint finds it again in the fixed
    text), so no fix is ever made in part. An edit equal to one taken is no overlap: it is
    made once (ACF004's `unscale_` for every clip of one step)."""
    taken: dict[Path, list[Edit]] = defaultdict(list)
    waiting: set[Finding] = set()
    for finding in findings:
        made = finding.fix.edits if finding.fix is not None else ()
        if any(clashes(edit, other) for edit in made for other in taken[edit.path]):
            waiting.add(finding)
            continue
        for edit in made:
            taken[edit.path].append(edit)
    return waiting


def clashes(one: Edit, other: Edit) -> bool:
    """Two different edits of one file that cannot both be made: their spans share text, or
    one inserts strictly inside the text the other replaces."""
    if one == other:
        return False
    a = ((one.span.line, one.span.column), (one.span.end_line, one.span.end_column))
    b = ((other.span.line, other.span.column), (other.span.end_line, other.span.end_column))
    if a[0] == a[1] or b[0] == b[1]:  # an insertion: inside the other's replaced text
        point, (start, end) = (a[0], b) if a[0] == a[1] else (b[0], a)
        return start < point < end
    return max(a[0], b[0]) < min(a[1], b[1])


def helper_imports(module: str | None, root: Path | None) -> HelperImports | None:
    if module is None or root is None:
        return None
    from amp_clipfix.fixes.transform import HelperImports

    return HelperImports(module, root)


def with_helper_module(
    changes: list[FileChange], errors: list[FileError], helpers: HelperImports
) -> tuple[list[FileChange], list[FileError]]:
    """The changes plus the helper module created or completed, which the files importing from
    it require (write_all writes them only after it). When it cannot be made, none of those
    files is changed: each gets an error line, after the one that says why."""
    from amp_clipfix.fixes.helper_module import helper_module_source
    from amp_clipfix.project.config import helper_module_path

    importing = [c for c in changes if c.source.path in helpers.importers]
    findings = tuple(dict.fromkeys(f for c in importing for f in c.findings))
    path = helpers.root / helpers.module.replace(".", "/")
    try:
        path = helper_module_path(helpers.root, helpers.module)
        if any(c.source.path == path for c in changes):
            raise SourceError("it is also a file being fixed")
        if observed.exists(path):
            source = read_helper_module(path, helpers.root)
            text = helper_module_source(source.text, helpers.imported)
            if text == source.text:
                return changes, errors
            helper = FileChange(source, encode_text(source, text), findings)
        else:
            empty = SourceFile(path, b"", "", "utf-8", False)
            new = helper_module_source(None, helpers.imported).encode("utf-8")
            helper = FileChange(empty, new, findings, created=True)
    except (SourceError, ValueError, ConfigError) as error:
        message = f"helper-module {helpers.module}: cannot be created or updated: {error}"
        refused = [
            FileError(c.source.path, f"not fixed: {NEEDS_HELPER} {helpers.module}", ErrorKind.FIX)
            for c in importing
        ]
        kept = [c for c in changes if c not in importing]
        return kept, [*errors, FileError(path, message, ErrorKind.FIX), *refused]
    needing = [replace(c, requires=(path,)) if c in importing else c for c in changes]
    return [*needing, helper], errors


NEEDS_HELPER = "it would import from helper-module"


def read_helper_module(path: Path, root: Path) -> SourceFile:
    """The helper module as it is now, read only inside the project (never through a link
    out of it)."""
    try:
        return decode_source(path, observed.read_inside(path, root))
    except OSError as error:
        raise SourceError(f"cannot read: {os_error_reason(error)}") from None


def untracked_helper(
    module: str, root: Path, index: frozenset[str], changes: Sequence[FileChange]
) -> list[FileError]:
    """Under --tracked-only (a pre-commit hook), the helper module the fixed files import from
    must be in git's index, or the commit goes without it: an error naming the file to
    `git add`, when a change creates it or it is there but untracked (a run after `git add -u`
    sees the fixed files and nothing left to fix)."""
    from amp_clipfix.paths import display_path
    from amp_clipfix.project.config import helper_module_path

    try:
        path = helper_module_path(root, module)
    except ConfigError:
        return []  # said already by the project's configuration
    created = any(change.created and change.source.path == path for change in changes)
    if index_name(path) in index or not (created or observed.lexists(path)):
        return []
    shown = display_path(path)
    message = (
        f"helper-module {module} is not in git's index (--tracked-only): the commit would lack "
        f"it; run `git add {shown}`"
    )
    return [FileError(path, message, ErrorKind.WRITE)]
