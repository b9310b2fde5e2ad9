"""The names a call of torch's clip may be spelled with, where the project holds the clip as a
value: `self.clip_func = torch.nn.utils.clip_grad_norm_` makes every `x.clip_func(...)` a
possible clip, and nothing else.

ACF004 asks the evaluator whether a call is torch's clip (training.is_torch_clip: its callee's
value, however it is spelled), and reach.py leaves out calls that cannot run one. The clip is a
library function: the evaluator makes its value only where code reads it, by a name or an
attribute spelled `clip_grad_norm_` / `clip_grad_value_` (torch's module, an import) or a
string (`getattr(torch.nn.utils, "clip_grad_norm_")`). A value read there reaches a call
spelled otherwise only through what the read gives it to:

- the callee of a call (`torch.nn.utils.clip_grad_norm_(...)`): a call of the clip, spelled so;
- an assignment to plain names or attributes, as the whole value (`clip = ...`,
  `self.clip_func = ...`, also in a class body): the names stored to hold the clip, and every
  read of one is followed in turn (`f = self.clip_func` adds `f`). Not a name the project
  also declares as a field (`clip_func: Callable` in a class body) or passes as a keyword
  (`SimpleNamespace(clip_func=...)`): the evaluator reads a record's fields without their
  names (`asdict(cfg)`, `vars(ns)`, `getattr(cfg, f.name)`), so a value stored there is
  handed on;
- an import under another name (`from torch.nn.utils import clip_grad_norm_ as clip`): the new
  name holds it.

Anything else (an argument, a default, a return, a container, a lambda, a partial, a string
naming one of the names) hands the clip on where any call may hold it: `clip_names` then says
None and every call is asked, as before. Not a read whose every value is a function of the
project (the evaluator's answer, asked only of a module that reads a name otherwise: apex's own
`clip_grad_norm_`, imported and passed to `assertRaises`): that hands on the project's function,
not torch's (a project function that clips, handed on, is clip_tail.ClipCapable's question). So
a call whose callee is not a name or attribute spelled with one of the names cannot be torch's
clip, and need not be asked.

The closure is read from the files that write the names (a scan per round, noted), each file
noted as read: an edit that hands the clip on anew asks again. Past MAX_NAMES names or
MAX_FILES files it gives up (None).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.analysis.name_uses import READ, STRING, name_uses
from amp_clipfix.analysis.names import TORCH_CLIP_NAMES
from amp_clipfix.analysis.recording import holds_any, read, scan
from amp_clipfix.analysis.values import Fn

if TYPE_CHECKING:
    from amp_clipfix.analysis.frame import EvaluatorBase
    from amp_clipfix.analysis.summary import Summary

# The most names the clip may be stored under, and files read for them (beyond those writing
# torch's own names, read as before), before the answer is "anywhere" (None): a name stored
# from the clip and read everywhere costs more to follow than the calls it would leave unasked.
MAX_NAMES = 16
MAX_FILES = 64

Trees = Callable[[Path], "ast.Module | None"]
# Whether every value a read (a Name or Attribute of the file's tree) may hold is a function of
# the project (the evaluator's answer; False where it cannot tell).
Projects = Callable[[Path, "ast.Name | ast.Attribute"], bool]


def clip_names(
    contents: Mapping[Path, bytes], tree_of: Trees, project: Projects | None = None
) -> frozenset[str] | None:
    """The names (of functions, variables and attributes) a call of torch's clip may be spelled
    with, or None when the project hands the clip on otherwise (see the module docstring).
    `tree_of` gives a file's tree (None: it does not parse, and it may hand the clip on);
    `project`: whether a read holds only project functions (None: no read is asked)."""
    names: set[str] = set(TORCH_CLIP_NAMES)
    new = sorted(names)
    walked: set[Path] = set()  # read for the names the clip is stored under
    first = True
    while new:
        words = tuple(name.encode("ascii") for name in new if name.isascii())
        if len(words) < len(new):
            return None  # a name Python may spell another way (NFKC): not followed
        found: set[str] = set()
        for path in scan(contents, holds_any(words)):
            if not first:
                walked.add(path)
                if len(walked) > MAX_FILES:
                    return None
            read(contents, path)
            tree = tree_of(path)
            own = None if project is None else functools.partial(project, path)
            stored = None if tree is None else stored_names(tree, frozenset(names), own)
            if stored is None or (tree is not None and declared(tree, names - TORCH_CLIP_NAMES)):
                return None
            found |= stored - names
        names |= found
        if len(names) > MAX_NAMES:
            return None
        new, first = sorted(found), False
    return frozenset(names)


def project_functions(
    evaluator: EvaluatorBase, summary_of: Callable[[Path], Summary | None], tree_of: Trees
) -> Projects:
    """`clip_names`' question of a read: every value it may hold is a function of the project,
    by the evaluator's answer asked to its end (no cut), in the tree `tree_of` gave."""

    def holds(path: Path, node: ast.Name | ast.Attribute) -> bool:
        summary = summary_of(path)
        if summary is None or summary.tree is not tree_of(path):
            return False
        cuts = evaluator.cuts
        values = evaluator.force(evaluator.ev(node, evaluator.ctx_of(summary, node)))
        return bool(values) and evaluator.cuts == cuts and all(isinstance(v, Fn) for v in values)

    return holds


def stored_names(
    tree: ast.Module,
    names: frozenset[str],
    project: Callable[[ast.Name | ast.Attribute], bool] | None = None,
) -> set[str] | None:
    """The names the module stores a read of one of `names` under (a whole assignment's value,
    a renamed import), or None when it reads one otherwise than as a call's callee or such a
    value, or writes one as a string. `project`: a read it says holds only project functions
    hands no clip on (asked of the module's reads only where one is met: a second walk)."""
    uses = name_uses(tree, names, READ | STRING)
    if uses is None and project is not None:
        uses = name_uses(tree, names, STRING, READ)
        if uses is not None and not all(project(node) for node in uses.reads):
            return None
    return None if uses is None else uses.stored


def declared(tree: ast.Module, names: set[str]) -> bool:
    """The module declares one of `names` as a field of a class (an annotated name of its
    body) or passes one as a keyword."""
    if not names:
        return False
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg in names:
            return True
        if isinstance(node, ast.ClassDef):
            for statement in node.body:
                target = statement.target if isinstance(statement, ast.AnnAssign) else None
                if isinstance(target, ast.Name) and target.id in names:
                    return True
    return False


def spelled(call: ast.Call, names: frozenset[str]) -> bool:
    """The call's callee is a name or attribute spelled with one of `names`."""
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in names
    return isinstance(func, ast.Attribute) and func.attr in names
