"""Insert a helper function that a fix needs into the user's module, once, after its imports.

The guard and unscale fixes call small helpers of their own; each is kept as source text so the
inserted code is exactly what the runtime tests run. The helper goes after the module's whole
import section (docstring, `from __future__`, plain imports, `try: import ... except
ImportError:` and `if TYPE_CHECKING:` blocks, and the simple statements users put between imports,
such as `sys.path.insert(...)`), so no import ends up below a definition (ruff E402), and with
the blank lines PEP 8 asks for around a top-level function (ruff E30x).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import libcst as cst

TWO_BLANK_LINES = (cst.EmptyLine(), cst.EmptyLine())


def has_helper(module: cst.Module, name: str) -> bool:
    """Whether the module already defines the helper at top level (inserting is idempotent)."""
    return any(
        isinstance(statement, cst.FunctionDef) and statement.name.value == name
        for statement in module.body
    )


def is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def is_type_checking(test: cst.BaseExpression) -> bool:
    """`TYPE_CHECKING` or `typing.TYPE_CHECKING` (any module prefix)."""
    name = test.attr if isinstance(test, cst.Attribute) else test
    return isinstance(name, cst.Name) and name.value == "TYPE_CHECKING"


def branches(statement: cst.Try | cst.If) -> list[cst.BaseSuite]:
    """Every block of a try or if statement (handlers, elif, else, finally)."""
    if isinstance(statement, cst.Try):
        blocks = [statement.body, *(handler.body for handler in statement.handlers)]
        blocks += [part.body for part in (statement.orelse, statement.finalbody) if part]
        return blocks
    blocks = [statement.body]
    orelse = statement.orelse
    while isinstance(orelse, cst.If):
        blocks.append(orelse.body)
        orelse = orelse.orelse
    if orelse is not None:
        blocks.append(orelse.body)
    return blocks


def suite_lines(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    """The statements of a block; a one-line suite (`try: import x`) counts as one line."""
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    assert isinstance(block, cst.SimpleStatementSuite)
    return [cst.SimpleStatementLine(body=block.body)]


def is_import_statement(statement: cst.BaseStatement) -> bool:
    """An import line, or a block that exists to import: `if TYPE_CHECKING: ...`, `try: import x
    except ImportError: x = None`, `if sys.version_info >= ...: import a else: import b`: simple
    lines only, at least one of them an import."""
    if is_import_line(statement):
        return True
    if isinstance(statement, cst.If) and is_type_checking(statement.test):
        return True
    if not isinstance(statement, (cst.Try, cst.If)):
        return False
    lines = [line for block in branches(statement) for line in suite_lines(block)]
    return all(
        isinstance(line, cst.SimpleStatementLine) or is_import_statement(line) for line in lines
    ) and any(is_import_statement(line) for line in lines)


def uses_name(node: cst.CSTNode, name: str) -> bool:
    """Whether `name` is read anywhere inside `node` (a helper must be defined before that)."""
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Name(self, visited: cst.Name) -> None:
            nonlocal found
            found = found or visited.value == name

    node.visit(Finder())
    return found


def insertion_index(body: Sequence[cst.BaseStatement], name: str) -> int:
    """Just after the last statement of the import section.

    The section runs from the top to the first compound statement that is not an import block
    (a `def`, `class`, loop...) or the first line that uses the helper; simple statements
    between imports (`sys.path.insert(...)`, constants) belong to it.
    """
    index = 0
    for position, statement in enumerate(body):
        if is_import_statement(statement) or (position == 0 and is_docstring(statement)):
            index = position + 1
        elif not isinstance(statement, cst.SimpleStatementLine) or uses_name(statement, name):
            break
    return index


@lru_cache(maxsize=32)
def parsed_statement(
    source: str, config: cst.PartialParserConfig | None = None
) -> cst.SimpleStatementLine | cst.BaseCompoundStatement:
    """The first statement of a fix's own source text, parsed once per text and parser config:
    libcst's nodes are immutable, so every fixed file may hold the same one (a project with a
    fix in each of 300 files parsed the same helper 300 times, most of the fixes' time)."""
    if config is None:
        return cst.parse_module(source).body[0]
    return cst.parse_statement(source, config=config)


def insert_helper(module: cst.Module, helper_source: str) -> cst.Module:
    """Insert the helper after the module's imports, with PEP 8 blank lines around it."""
    helper = parsed_statement(helper_source.replace("\n", module.default_newline))
    name = helper.name.value if isinstance(helper, cst.FunctionDef) else ""
    body = list(module.body)
    index = insertion_index(body, name)
    helper = helper.with_changes(leading_lines=TWO_BLANK_LINES if index else ())
    if index < len(body):
        following = body[index]
        kept = list(following.leading_lines)
        while kept and kept[0].comment is None:
            kept.pop(0)
        body[index] = following.with_changes(leading_lines=(*TWO_BLANK_LINES, *kept))
    body.insert(index, helper)
    return module.with_changes(body=body)
