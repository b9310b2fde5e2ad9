"""ACF012: `torch.cuda.amp.GradScaler(...)`, `torch.cuda.amp.autocast(...)`,
`torch.cpu.amp.autocast(...)`: deprecated since torch 2.4 (FutureWarning).

A rule with its own search and fixes (CONTRIBUTING.md): the calls are known by qualified name
through any import form (`from torch.cuda.amp import GradScaler as GS`, `from torch.cuda import
amp`), rewritten to the `torch.amp` spelling with the device argument, and the imports are kept
tidy: an import nothing uses any more is removed, `import torch` added only when no module-level
name holds torch. The rewrite is offered only where every torch release the project's pins admit
has the new spelling (`torch.amp.autocast` from 1.12, `torch.amp.GradScaler` from 2.3).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator, Sequence

from amp_clipfix.analysis.bodies import peeked_walk, unread_body
from amp_clipfix.analysis.calls import arguments, library_call_files, library_calls
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.names import LIBRARY, Kind
from amp_clipfix.models import ALL_CODES, Edit, LightningPath, Site, SiteKind, Span, Strategy
from amp_clipfix.records import record
from amp_clipfix.rules.base import Found, Queries, Rule, RuleFix, safety
from amp_clipfix.sources.text import line_starts

CODE = "ACF012"
WORDS = (b"cuda.amp", b"cpu.amp", b"cuda import amp", b"cpu import amp")

# Deprecated callable -> (name in torch.amp, device).
AMP_NAMES = {Kind.GRAD_SCALER: "GradScaler", Kind.AUTOCAST: "autocast"}
OLD_AMP = {
    name: (AMP_NAMES[entry.kind], entry.device)
    for name, entry in LIBRARY.items()
    if entry.kind in AMP_NAMES and entry.device
}
# torch.cuda.amp.autocast(enabled, dtype, cache_enabled) and torch.cpu.amp.autocast take these
# positionally; torch.amp.autocast(device_type, dtype, enabled, cache_enabled) does not.
AUTOCAST_POSITIONAL = ("enabled", "dtype", "cache_enabled")
# The spellings that replace them: a branch that calls one of these next to the old call is a
# fallback for older torch (`torch.amp.GradScaler("cuda") if new_torch else
# torch.cuda.amp.GradScaler()`), not a call to rewrite.
NEW_AMP = frozenset(
    name for name, entry in LIBRARY.items() if entry.kind in AMP_NAMES and entry.torch_amp
)
TORCH_CHAIN = re.compile(r"(?P<root>[A-Za-z_]\w*)\.(?:cuda|cpu)\.amp\.(?:GradScaler|autocast)")

MESSAGE = (
    "`torch.cuda.amp` / `torch.cpu.amp` AMP classes are deprecated: torch 2.4 and newer warn "
    "(FutureWarning) at each call; `torch.amp` takes the device instead"
)

FIX = (
    "calls `torch.amp.GradScaler` / `torch.amp.autocast` with the device the old class "
    'passed (`"cuda"` or `"cpu"`) and the same arguments (autocast\'s positional ones as '
    "keywords), the classes the old ones subclass; an import nothing uses any more is removed"
)

BEFORE = """\
import torch

scaler = torch.cuda.amp.GradScaler(init_scale=1024)
with torch.cuda.amp.autocast(dtype=torch.float16):
    pass
"""

AFTER = """\
import torch

scaler = torch.amp.GradScaler("cuda", init_scale=1024)
with torch.amp.autocast("cuda", dtype=torch.float16):
    pass
"""


@record(frozen=True)
class Rewrite:
    """One deprecated call and its rewrite: the edits of the call, the binding its callee
    reads (a candidate for removal), whether it needs a module-level `torch`."""

    site: Site
    edits: tuple[Edit, ...]
    binding: str | None  # the imported name the old callee used, when it is not `torch`
    needs_torch: bool


def check(queries: Queries) -> Iterator[Found]:
    facts = queries.facts
    torch = facts.target.torch
    if not torch.warns_on_old_amp:
        return
    for file in library_call_files(facts, WORDS, OLD_AMP.keys()):
        calls = list(library_calls(facts, file, OLD_AMP.keys()))
        if not calls:
            continue
        calls = [(c, q) for c, q in calls if not is_fallback(facts, file, c)]
        torch_name = module_torch_name(file)
        planned: list[tuple[Site, Rewrite | None, str | None]] = []
        for call, qnames in calls:
            kinds = {OLD_AMP[q] for q in qnames}
            name, device = next(iter(kinds))
            site = file.site(SiteKind.TORCH_AMP, call, f"`{file.code(call.func)}(...)`")
            available = (
                torch.has_amp_grad_scaler if name == "GradScaler" else torch.has_amp_autocast
            )
            rewrite, why = None, None
            if torch.assumed:
                why = (
                    f"no rewrite: no pin names the torch release ({torch.version_label} is only "
                    f"assumed) and `torch.amp.{name}` is not in older ones; pin torch or pass "
                    "--torch-version"
                )
            elif not available:
                first = "2.3" if name == "GradScaler" else "1.12"
                why = (
                    f"no rewrite: `torch.amp.{name}` is not in every torch release the pins "
                    f"admit ({torch.version_label}; added in {first})"
                )
            elif len(kinds) == 1 and not suppressed(site):
                rewrite = rewrite_call(facts, file, call, name, device, torch_name or "torch", site)
                if rewrite is None:
                    why = "no rewrite: the call's arguments cannot be carried over as written"
            elif len(kinds) > 1:
                why = "no rewrite: the callee may be more than one of the deprecated classes"
            planned.append((site, rewrite, why))
        rewrites = [r for _, r, _ in planned if r is not None]
        imports = import_edits(file, rewrites, torch_name) if rewrites else ()
        for site, rewrite, why in planned:
            if rewrite is None or imports is None:
                why = why or "no rewrite: the file's imports cannot be tidied safely"
                yield Found((site,), review=why)
                continue
            edits = rewrite.edits + imports
            yield Found((site,), fixes=(RuleFix(Strategy.MIGRATE, edits, True, FIX, (site,)),))


def is_fallback(facts: ProjectFacts, file: FileFacts, call: ast.Call) -> bool:
    """The call is one branch of a choice whose other branch calls the `torch.amp` spelling:
    `if`/`else` (statement or expression), or `try`/`except` (the old one in the handler).
    The summary's parents are mapped only around the statements asked about, not the whole
    module (torch's test modules)."""
    parent_of = file.summary.parent
    node: ast.AST = call
    while (parent := parent_of(node)) is not None:
        others: list[ast.AST] = []
        if isinstance(parent, (ast.If, ast.IfExp)):
            body: list[ast.AST] = [*parent.body] if isinstance(parent.body, list) else [parent.body]
            orelse: list[ast.AST] = (
                [*parent.orelse] if isinstance(parent.orelse, list) else [parent.orelse]
            )
            others = orelse if any(node is n for n in body) else body
        elif isinstance(parent, ast.ExceptHandler) and (handled := parent_of(parent)):
            others = list(handled.body)  # type: ignore[attr-defined]
        if any(
            isinstance(inner, ast.Call) and facts.qualified_names(file, inner.func) & NEW_AMP
            for other in others
            for inner in ast.walk(other)
        ):
            return True
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        node = parent
    return False


def suppressed(site: Site) -> bool:
    codes = site.suppressed_codes or frozenset()
    return ALL_CODES in codes or CODE in codes


def module_torch_name(file: FileFacts) -> str | None:
    """A module-level name bound to the torch module (`import torch`, `import torch as th`,
    `import torch.nn`), or None."""
    for statement in file.tree.body:
        if isinstance(statement, ast.Import):
            for alias in statement.names:
                if alias.asname and alias.name == "torch":
                    return alias.asname
                if not alias.asname and alias.name.split(".")[0] == "torch":
                    return "torch"
    return None


def rewrite_call(
    facts: ProjectFacts,
    file: FileFacts,
    call: ast.Call,
    name: str,
    device: str,
    torch_name: str,
    site: Site,
) -> Rewrite | None:
    if any(isinstance(a, ast.Starred) for a in call.args):
        return None  # positions unknown: a person rewrites it
    if name == "autocast" and len(call.args) > len(AUTOCAST_POSITIONAL):
        return None
    written = file.code(call.func)
    chain = TORCH_CHAIN.fullmatch(written)
    root = chain["root"] if chain else None
    if root is not None and file.summary.imports.get(root) == "torch":
        callee, binding, needs_torch = f"{root}.amp.{name}", None, False
    else:
        base = call.func
        while isinstance(base, ast.Attribute):
            base = base.value
        if not isinstance(base, ast.Name):
            return None
        callee, binding, needs_torch = f"{torch_name}.amp.{name}", base.id, True
    edits = [file.replace(call.func, callee)]
    quote = '"'
    if call.args or call.keywords:
        first = arguments(call)[0]
        start = file.span(first)
        separator = ", "
        if start.line > file.span(call.func).end_line and start.column == len(
            file.indentation(start.line)
        ):  # one argument per line: the device gets its own
            separator = f",{line_ending(file, start.line)}{file.indentation(start.line)}"
        edits.append(
            Edit(
                file.path,
                Span(start.line, start.column, start.line, start.column),
                f"{quote}{device}{quote}{separator}",
            )
        )
    else:
        end = file.span(call)
        at = Span(end.end_line, end.end_column - 1, end.end_line, end.end_column - 1)
        if file.code(call)[len(written) :].strip() != "()":
            return None
        edits.append(Edit(file.path, at, f"{quote}{device}{quote}"))
    if name == "autocast":
        for argument, keyword_name in zip(call.args, AUTOCAST_POSITIONAL):
            start = file.span(argument)
            if (start.line, start.column) == (edits[1].span.line, edits[1].span.column):
                edits[1] = Edit(file.path, edits[1].span, f"{edits[1].replacement}{keyword_name}=")
            else:
                at = Span(start.line, start.column, start.line, start.column)
                edits.append(Edit(file.path, at, f"{keyword_name}="))
    return Rewrite(site, tuple(edits), binding, needs_torch)


def import_edits(
    file: FileFacts, rewrites: Sequence[Rewrite], torch_name: str | None
) -> tuple[Edit, ...] | None:
    """The import edits every rewrite of the file shares: bindings nothing reads any more are
    removed from their import, `import torch` is added where needed. None when the imports
    cannot be tidied safely (a person rewrites the calls)."""
    # walked once (ast.walk's nodes less the contexts): a module can hold millions; no node is
    # kept past the edits (spans), so the bodies nothing else read stay unread, to be let go
    nodes = list(peeked_walk(file.tree))
    lines = {r.site.span.line for r in rewrites}
    named: dict[str, list[ast.Name]] = defaultdict(list)  # each a name's readers, once
    calls: dict[int, list[ast.AST]] = defaultdict(list)  # the calls on the rewrites' lines
    for node in nodes:
        if isinstance(node, ast.Name):
            named[node.id].append(node)
        elif isinstance(node, ast.Call) and node.lineno in lines:
            calls[node.lineno].append(node)
    rewritten_roots = {
        id(node) for r in rewrites for node in callee_roots(file, r, calls[r.site.span.line])
    }
    unused = set()
    for binding in {r.binding for r in rewrites if r.binding}:
        readers = [node for node in named.get(binding, ()) if id(node) not in rewritten_roots]
        if not readers:
            unused.add(binding)
    statements: dict[int, tuple[ast.stmt, list[ast.alias]]] = {}
    for binding in unused:
        found = binding_statements(nodes, binding)
        if not all(isinstance(s, (ast.Import, ast.ImportFrom)) for s, _ in found):
            continue  # bound otherwise too (an assignment, a def): left as it is
        for statement, alias in found:  # every import of it (one per function, say)
            statements.setdefault(id(statement), (statement, []))[1].append(alias)
    needs_torch = torch_name is None and any(r.needs_torch for r in rewrites)
    edits: list[Edit] = []
    torch_added = not needs_torch
    for statement, aliases in sorted(statements.values(), key=lambda pair: pair[0].lineno):
        kept = [alias for alias in statement.names if alias not in aliases]  # type: ignore[attr-defined]
        if not own_lines(file, statement):
            return None
        if kept:
            edits.append(line_edit(file, statement, import_text(statement, kept)))
        elif not torch_added and statement in file.tree.body:
            edits.append(line_edit(file, statement, "import torch"))
            torch_added = True
        else:
            edits.append(line_edit(file, statement, None, first_in_block(nodes, statement)))
    if not torch_added:
        anchor = next(
            (s for s in file.tree.body if isinstance(s, (ast.Import, ast.ImportFrom))), None
        )
        if anchor is None or not own_lines(file, anchor) or id(anchor) in statements:
            return None
        edits.append(file.insert_before(anchor, "import torch"))
    return tuple(edits)


def callee_roots(file: FileFacts, rewrite: Rewrite, nodes: list[ast.AST]) -> list[ast.Name]:
    """The Name nodes at the root of the rewritten call's old callee (`nodes`: the calls that
    start on its line; a call's span starts on its first line, so only calls there count)."""
    found = []
    line = rewrite.site.span.line
    for node in nodes:
        if (
            isinstance(node, ast.Call)
            and node.lineno == line
            and file.span(node) == rewrite.site.span
        ):
            base = node.func
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name):
                found.append(base)
    return found


def binding_statements(nodes: list[ast.AST], name: str) -> list[tuple[ast.stmt, ast.alias]]:
    """The import statements that bind `name`, with the alias that does (`nodes`: the module's
    tree, walked)."""
    found: list[tuple[ast.stmt, ast.alias]] = []
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound = alias.asname or (
                    alias.name.split(".")[0] if isinstance(node, ast.Import) else alias.name
                )
                if bound == name:
                    found.append((node, alias))
        elif isinstance(node, (ast.Assign, ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            targets = node.targets if isinstance(node, ast.Assign) else []
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) or (
                getattr(node, "name", None) == name
            ):
                found.append((node, ast.alias(name)))  # bound otherwise too: not removable
    return found


def first_in_block(nodes: list[ast.AST], statement: ast.stmt) -> bool:
    """The statement is the first of a function's, class's or compound statement's body (its
    removal would leave a blank line right under the header; `nodes`: the module, walked by
    `peeked_walk`: a body nothing has read is looked at as the walk did, and stays unread)."""
    return any(
        isinstance(node, ast.stmt)
        and statement in (unread_body(node) or getattr(node, "body", None) or [])[:1]
        for node in nodes
    )


def own_lines(file: FileFacts, statement: ast.stmt) -> bool:
    """The statement alone on its lines (no `;`, nothing before or after it)."""
    span = file.span(statement)
    first, last = file.line(span.line), file.line(span.end_line)
    return not first[: span.column].strip() and not last[span.end_column :].strip(" \t\r\n")


def import_text(statement: ast.stmt, kept: list[ast.alias]) -> str:
    names = ", ".join(a.name if not a.asname else f"{a.name} as {a.asname}" for a in kept)
    if isinstance(statement, ast.ImportFrom):
        return f"from {'.' * statement.level}{statement.module or ''} import {names}"
    return f"import {names}"


def line_edit(
    file: FileFacts, statement: ast.stmt, text: str | None, opens_block: bool = False
) -> Edit:
    """The statement's whole lines replaced by `text` at its indentation (None: removed with
    its line break, and with the blank line after it when it opened its block)."""
    span = file.span(statement)
    last = file.line(span.end_line)
    if text is not None:
        replacement = f"{file.indentation(span.line)}{text}"
        return Edit(file.path, Span(span.line, 0, span.end_line, len(last)), replacement)
    lines = len(line_starts(file.document.text))
    if opens_block and lines > span.end_line + 1 and not file.line(span.end_line + 1).strip():
        return Edit(file.path, Span(span.line, 0, span.end_line + 2, 0), "")
    if lines > span.end_line:  # a line break follows
        return Edit(file.path, Span(span.line, 0, span.end_line + 1, 0), "")
    return Edit(file.path, Span(span.line, 0, span.end_line, len(last)), "")


def line_ending(file: FileFacts, line: int) -> str:
    starts = line_starts(file.document.text)
    text = file.document.text[starts[line - 1] : starts[line] if line < len(starts) else None]
    return text[len(text.rstrip("\r\n")) :] or "\n"


RULE = Rule(
    lines=("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6", "no Lightning"),
    code=CODE,
    name="torch-deprecated-amp-namespace",
    message=MESSAGE,
    level="warning",
    lightning_path=LightningPath.TORCH,
    check=check,
    words=WORDS,
    short="`torch.cuda.amp.GradScaler` / `autocast` and `torch.cpu.amp.autocast` are deprecated.",
    full=(
        "A call of `torch.cuda.amp.GradScaler`, `torch.cuda.amp.autocast`, "
        "`torch.cpu.amp.autocast` or `torch.cpu.amp.GradScaler`, known by qualified name "
        "through any import form and alias, on a project whose torch may be 2.4 or newer (the "
        "first release that warns). The rewrite is offered where every torch release the pins "
        "admit has the new spelling: `torch.amp.autocast(device_type, ...)` from torch 1.12, "
        "`torch.amp.GradScaler(device, ...)` from torch 2.3; a call with `*args` is reported "
        "and left to a person. A call in one branch of an `if`/`else` or `try`/`except` "
        "whose other branch calls the `torch.amp` spelling is a fallback for older torch "
        "(Lightning's own plugins have one) and is not reported."
    ),
    why_title="Why torch warns",
    why=(
        "torch 2.4 deprecated the per-device AMP classes in favour of one `torch.amp` API that "
        "takes the device: `torch.cuda.amp.GradScaler(args...)` warns `FutureWarning: "
        "torch.cuda.amp.GradScaler(args...) is deprecated. Please use "
        "torch.amp.GradScaler('cuda', args...) instead.` at every construction, and "
        "`torch.cuda.amp.autocast(args...)` / `torch.cpu.amp.autocast(args...)` likewise "
        "point to `torch.amp.autocast('cuda', args...)`. The old classes are thin subclasses "
        "that pass their device to the new ones; a project that runs with "
        "`-W error::FutureWarning` (or a test suite that does) fails on them. One difference: "
        "`torch.cuda.amp.autocast()` passes `dtype=torch.float16` itself, "
        '`torch.amp.autocast("cuda")` uses the default autocast dtype, which is float16 '
        "unless the program changed it with `torch.set_autocast_dtype`."
    ),
    example_before=BEFORE,
    example_after=AFTER,
    fix_safety={
        Strategy.MIGRATE.value: safety(
            Strategy.MIGRATE,
            f"The default (`auto`), where the project's torch has the new spelling: it {FIX}.",
        ),
    },
)
