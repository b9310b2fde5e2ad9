"""A function of ours named so that a later run finds it again, for what a cache entry keeps.

A cached answer may depend on which function made it (a pin file's reader, a question's text
test). The entry can only hold that function by name, and the name is only a key when it finds
the very same function again: a module-level function of amp-clipfix's own modules. A lambda, a
closure, a method or another package's function has no such name, and its answer is not kept.
"""

from __future__ import annotations

import importlib


def stored_name(function: object) -> tuple[str, str] | None:
    """`(module, qualified name)` of `function` when that finds it again; None otherwise."""
    module = getattr(function, "__module__", None) or ""
    name = getattr(function, "__qualname__", None) or "<"
    if not module.startswith("amp_clipfix.") or "<" in name:
        return None
    if getattr(importlib.import_module(module), name, None) is not function:
        return None
    return module, name
