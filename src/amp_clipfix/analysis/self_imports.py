"""A module that imports a name from a module of its own name: a notebook `hyperpyyaml.ipynb`
that runs `from hyperpyyaml import load_hyperpyyaml`, a script `wandb.py` importing `wandb`.

The evaluator resolves such an import to the module itself (evaluate.py `find_module`: a name
or its tail), whose binding of the name is that same import: resolving it again meets the
resolution already running, an import cycle cut to the library's name (`Ext`). That cut is a
bound outside the evaluation's key, so nothing that read the name was memoised for the run
(frame.py `leave`), and each question read it anew: speechbrain's 179 recipes import
`load_hyperpyyaml`, and the `hparams` it loads are behind most of their values.

Yet the cycle closes on the same name and the same module whatever is running around it (the
import's own resolution comes back to itself, through nothing but the module's own binding):
the answer is the library's name, always. It is given so here, as a fact of the module, not
a cut.
"""

from __future__ import annotations

import ast
from typing import Protocol

from amp_clipfix.analysis import names
from amp_clipfix.analysis.summary import Summary


class Modules(Protocol):
    """What is asked of the evaluator (evaluate.py): its module search and `global` rebinds."""

    def find_module(self, dotted: str, near: Summary | None = None) -> Summary | None: ...

    def rebinds(self, summary: Summary) -> dict[str, list[ast.AST]]: ...


def imports_itself(ev: Modules, summary: Summary, name: str, qname: str) -> bool:
    """`summary` binds `name` only by importing `qname`, which resolves to `name` of
    `summary` itself (evaluate.py `resolve_project_name`: the longest prefix that is a
    module, other than the whole name being this one, is this module, and `name` is what is
    left), with no function rebinding it (`global name`): its value is `Ext(qname)`. Asked
    where module_bindings reads an imported name (not bound at the module's top)."""
    parts = qname.split(".")
    if len(parts) < 2 or parts[-1] != name or parts[0] in names.EXTERNAL_ROOTS:
        return False
    prefix = ".".join(parts[:-1])
    if summary.name != prefix and not summary.name.endswith("." + prefix):
        return False  # find_module gives a module of that name or of that tail only
    whole = ev.find_module(qname, summary)  # the first prefix resolve_project_name tries
    if whole is not None and whole is not summary:
        return False
    return ev.find_module(prefix, summary) is summary and not ev.rebinds(summary).get(name)
