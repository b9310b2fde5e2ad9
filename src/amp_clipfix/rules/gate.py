"""What a rule needs of a project before its search runs (`Rule`'s `words`, `needs`,
`requires` and `imports`, rules/base.py), as rules/gates.py states it for every rule without
importing the rule's module: the pipeline decides with these which rules search a project, and
imports only the modules of the rules it runs."""

from __future__ import annotations

from amp_clipfix.records import record


@record(frozen=True)
class Gate:
    code: str
    checks: bool  # it has a check (an alias has none)
    words: tuple[bytes, ...] = ()
    needs: tuple[bytes, ...] = ()
    requires: tuple[bytes, ...] = ()
    imports: tuple[str, ...] = ()
    alias: bool = False  # it names other rules' findings (`Rule.reaches`)

    @property
    def asks_facts(self) -> bool:
        return bool(self.words)

    @property
    def needed_words(self) -> tuple[bytes, ...]:
        return self.needs or self.words
