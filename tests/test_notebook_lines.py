"""A notebook's cells read into module lines the same way, faster (session 20, branch `fixed`):
LogicalLines visits only the characters that can change its state (found by a pattern), and
escaped_command tries its patterns only on a line holding what they need. Both are checked
against the readings they replace, character by character and pattern by pattern."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from amp_clipfix.sources.notebook import (
    ASSIGNED_ESCAPE,
    ESCAPES,
    HELP_END,
    TRIPLES,
    LogicalLines,
    escaped_command,
    module_lines,
)


class CharacterByCharacter:
    """LogicalLines as it read a line before: every character in turn."""

    def __init__(self) -> None:
        self.quote: str | None = None
        self.depth = 0
        self.continued = False

    def feed(self, line: str) -> None:
        index, length, commented = 0, len(line), False
        while index < length:
            char = line[index]
            if self.quote is not None:
                if char == "\\":
                    index += 2
                elif line.startswith(self.quote, index):
                    index += len(self.quote)
                    self.quote = None
                else:
                    index += 1
                continue
            if char == "#":
                commented = True
                break
            if char in "'\"":
                self.quote = line[index : index + 3] if line[index : index + 3] in TRIPLES else char
                index += len(self.quote)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            index += 1
        ends_in_backslash = line.endswith("\\") and not commented
        if self.quote is not None and len(self.quote) == 1 and not ends_in_backslash:
            self.quote = None
        self.continued = self.quote is None and ends_in_backslash


def every_pattern(line: str) -> str | None:
    """escaped_command as it was: both patterns tried on every line."""
    stripped = line.lstrip()
    if stripped.startswith(ESCAPES) or HELP_END.match(line):
        indent = line[: len(line) - len(stripped)]
        return f"{indent}pass" if indent else "#"
    assigned = ASSIGNED_ESCAPE.match(line)
    if assigned is not None:
        return f"{assigned[1]} get_ipython()"
    return None


PIECES = st.sampled_from(
    ["a", "x1", " ", "\t", "#", "'", '"', "'''", '"""', "(", ")", "[", "]", "{", "}", "\\"]
    + ["=", "==", "!", "%", "?", "??", ".", ",", ";", "/", "é", "\u3000"]
)
LINES = st.lists(st.lists(PIECES, max_size=14).map("".join), min_size=1, max_size=6)


@settings(max_examples=2000, deadline=None)
@given(lines=LINES)
def test_logical_lines_keep_the_state_the_character_reading_kept(lines: list[str]) -> None:
    fast, slow = LogicalLines(), CharacterByCharacter()
    for line in lines:
        fast.feed(line)
        slow.feed(line)
        assert (fast.quote, fast.depth, fast.continued) == (slow.quote, slow.depth, slow.continued)
        assert fast.at_start == (slow.quote is None and slow.depth == 0 and not slow.continued)


@settings(max_examples=2000, deadline=None)
@given(lines=LINES)
def test_escaped_commands_are_the_ones_every_pattern_finds(lines: list[str]) -> None:
    for line in lines:
        assert escaped_command(line) == every_pattern(line)


def test_the_escapes_of_a_cell_are_still_found() -> None:
    cell = (
        "x = !ls -la\n"
        "y = %timeit f()\n"
        "value.attribute?\n"
        "s = '''a (\n"
        "!not a command'''\n"
        "call(1,\n"
        "  !still inside)\n"
        "if flag:\n"
        "    %pip install a \\\n"
        "  b\n"
        "z == !x\n"
    )
    assert module_lines(cell) == [
        "x = get_ipython()",
        "y = get_ipython()",
        "#",
        "s = '''a (",
        "!not a command'''",
        "call(1,",
        "  !still inside)",
        "if flag:",
        "    pass",
        "#",
        "z == !x",
        "",
    ]
