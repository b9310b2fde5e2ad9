"""Regular expressions compiled when first used, not when their module is imported.

Python compiles a pattern with Python code (re._parser, re._compiler): 0.1-0.7 ms each. A
module's patterns were all compiled at its import, and a run imports many modules for one of
their functions: a small project's `check` compiled 25-47 patterns it never used (5-8 ms of
runs of 90-140 ms). `lazy` gives an object that compiles its pattern at the first method call
and then keeps the compiled pattern's methods as its own attributes, so a use costs what one
of the compiled pattern costs.
"""

from __future__ import annotations

import re
from typing import Any, AnyStr, cast


class LazyPattern:
    """A pattern compiled at its first use; `pattern` is the source, as `re.Pattern` has it."""

    def __init__(self, pattern: str | bytes, flags: int) -> None:
        self.pattern = pattern
        self._flags = flags

    def __getattr__(self, name: str) -> Any:
        """Called for a name not yet among the object's attributes: the compiled pattern's
        attribute, kept (a method's next call is a plain attribute read)."""
        if name.startswith("__"):  # copy, pickle and the like ask before any use
            raise AttributeError(name)
        compiled = self.__dict__.get("_compiled")
        if compiled is None:
            compiled = self._compiled = re.compile(self.pattern, self._flags)
        value = getattr(compiled, name)
        setattr(self, name, value)
        return value


def lazy(pattern: AnyStr, flags: int | re.RegexFlag = 0) -> re.Pattern[AnyStr]:
    """`re.compile(pattern, flags)`, compiled when first used (module-level patterns)."""
    return cast("re.Pattern[AnyStr]", LazyPattern(pattern, flags))
