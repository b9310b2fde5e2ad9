"""Write `src/amp_clipfix/rules/gates.py` from the rule modules: each rule's code and what it
needs of a project before its search runs (`words`, `needs`, `requires`, `imports`), so that a
run decides which rules search a project before it imports any rule module (rules/__init__.py).

    python scripts/rule_gates.py          # write it
    python scripts/rule_gates.py --check  # exit 1 when the committed file differs

`tests/test_rule_gates.py` fails while the committed file is not what this writes, so a rule
module and its gate never disagree.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from amp_clipfix import rules

GATES = Path(rules.__file__).resolve().parent / "gates.py"
HEAD = '''"""What each rule needs of a project before its search runs, by code, in code order
(a run reads these and imports only the rule modules it runs; rules/__init__.py). Generated
by scripts/rule_gates.py from the rule modules: do not edit (tests/test_rule_gates.py)."""

from __future__ import annotations

from amp_clipfix.rules.gate import Gate

GATES: dict[str, Gate] = {
'''


def literal(value: str | bytes) -> str:
    """`repr`, in double quotes where the text holds none (as ruff formats it)."""
    text = repr(value)
    quoted = text[1:] if isinstance(value, bytes) else text
    if quoted[0] == "'" and '"' not in quoted:
        text = text.replace("'", '"')
    return text


def gates_text() -> str:
    entries = []
    for name in rules._rule_modules():
        rule = __import__(f"{rules.__name__}.{name}", fromlist=["RULE"]).RULE
        lines = [f"        {literal(rule.code)},\n", f"        checks={rule.check is not None},\n"]
        for field in ("words", "needs", "requires", "imports"):
            values = getattr(rule, field)
            if len(values) == 1:
                lines.append(f"        {field}=({literal(values[0])},),\n")
            elif values:
                items = "".join(f"            {literal(value)},\n" for value in values)
                lines.append(f"        {field}=(\n{items}        ),\n")
        if rule.reaches is not None:
            lines.append("        alias=True,\n")
        entries.append(f"    {literal(rule.code)}: Gate(\n{''.join(lines)}    ),\n")
    return HEAD + "".join(entries) + "}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the file differs")
    arguments = parser.parse_args()
    text = gates_text()
    if arguments.check:
        same = GATES.read_text(encoding="utf-8") == text
        if not same:
            print(f"{GATES} is stale: run python scripts/rule_gates.py", file=sys.stderr)
        return 0 if same else 1
    GATES.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
