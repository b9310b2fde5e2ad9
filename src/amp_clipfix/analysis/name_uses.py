"""Where a module writes some names, told apart by how: the one walk behind the questions
"does this module only call the name?" (reach's callers of torch's clip, manual_clips),
"under which names does it store it?" (clip_values), "does it write it as a value?"
(clip_tail, written_events) and "does it write it as an identifier at all?" (clip_tail's
module names). Each asks with the uses that end its question (`stops`); the walk is breadth
first, so a call or an assignment is met before its callee or value.

A use is a Name or Attribute spelled with one of the names (a callee, the whole value of an
assignment, another read, a store or `del`), an import clause that renames it or writes it
anywhere in its dotted names, a string equal to it, or a `global` / `nonlocal` naming it. A
`def` or a parameter of that name is no use (the callers' questions find those themselves)."""

from __future__ import annotations

import ast

from amp_clipfix.analysis.nodes import child_nodes

# How a name is written (bits, so a question's `stops` is their union).
NAME_READ = 1  # `f(clip)`, `x = clip, 1`: a Name read other than as a callee or a stored value
NAME_STORED = 2  # `f = clip` (an assignment's whole value, to plain names or attributes)
NAME_WRITTEN = 4  # `clip = ...`, `del clip`
ATTR_READ = 8  # `f(nn.utils.clip)`
ATTR_STORED = 16  # `self.f = nn.utils.clip`
ATTR_WRITTEN = 32  # `obj.clip = ...`, `del obj.clip`
RENAMED = 64  # `from torch.nn.utils import clip as c`
STRING = 128  # `getattr(utils, "clip")`
GLOBAL = 256  # `global clip` (a binding the module's own code may change)
CALLED = 512  # `clip(...)`, `nn.utils.clip(...)`: the callee (else listed in Uses.calls)
IMPORTED = 1024  # `import pkg.clip`, `from pkg.clip import x`, `from pkg import clip [as c]`

READ = NAME_READ | ATTR_READ
STORED = NAME_STORED | ATTR_STORED
WRITTEN = NAME_WRITTEN | ATTR_WRITTEN

LOAD, NAME, ATTRIBUTE, CALL = ast.Load, ast.Name, ast.Attribute, ast.Call
CONSTANT, ASSIGN, ANN_ASSIGN, ALIAS = ast.Constant, ast.Assign, ast.AnnAssign, ast.alias
IMPORT_FROM = ast.ImportFrom


class Uses:
    """What a walk that no stop ended found: the calls whose callee is spelled with one of
    the names (in the walk's order), the names a whole value or a renaming import stores one
    under, and the Names and Attributes of the kinds the walk was asked to list (`reads`)."""

    __slots__ = ("calls", "stored", "reads")

    def __init__(self) -> None:
        self.calls: list[ast.Call] = []
        self.stored: set[str] = set()
        self.reads: list[ast.Name | ast.Attribute] = []


def name_uses(tree: ast.AST, names: frozenset[str], stops: int, lists: int = 0) -> Uses | None:
    """The module's calls of `names` and the names it stores them under; None at the first
    use of a kind in `stops`; the uses of a kind in `lists` (and not in `stops`) listed. One
    loop over a list that grows as it goes (breadth first, in `ast.walk`'s order without the
    expression contexts: nodes.child_nodes)."""
    uses = Uses()
    callees: set[int] = set()
    values: dict[int, list[str]] = {}
    todo: list[ast.AST] = [tree]
    for node in todo:  # grows as it goes: breadth first
        kind = type(node)
        if kind is NAME or kind is ATTRIBUTE:
            name = node.id if kind is NAME else node.attr  # type: ignore[attr-defined]
            if name in names and id(node) not in callees:
                attribute = kind is ATTRIBUTE
                if type(node.ctx) is not LOAD:  # type: ignore[attr-defined]
                    use = ATTR_WRITTEN if attribute else NAME_WRITTEN
                elif id(node) in values:
                    use = ATTR_STORED if attribute else NAME_STORED
                    uses.stored.update(values[id(node)])
                else:
                    use = ATTR_READ if attribute else NAME_READ
                if use & stops:
                    return None
                if use & lists:
                    uses.reads.append(node)  # type: ignore[arg-type]
            if kind is NAME:
                continue
        elif kind is CALL:
            func = node.func  # type: ignore[attr-defined]
            if spelling(func) in names:
                if CALLED & stops:
                    return None
                callees.add(id(func))
                uses.calls.append(node)  # type: ignore[arg-type]
        elif kind is CONSTANT:
            if node.value in names and STRING & stops:  # type: ignore[attr-defined]
                return None
            continue
        elif kind is ASSIGN or kind is ANN_ASSIGN:
            value = node.value  # type: ignore[attr-defined]
            if value is not None and spelling(value) in names:
                targets = assigned_names(node)  # type: ignore[arg-type]
                if targets is not None:
                    values[id(value)] = targets
        elif kind is ALIAS:
            dotted, asname = node.name, node.asname  # type: ignore[attr-defined]
            if IMPORTED & stops and (asname in names or not names.isdisjoint(dotted.split("."))):
                return None
            own = dotted.rsplit(".", 1)[-1]
            if own in names and asname is not None and asname != own:
                if RENAMED & stops:
                    return None
                uses.stored.add(asname)
            continue
        elif kind is IMPORT_FROM:
            module = node.module  # type: ignore[attr-defined]
            if IMPORTED & stops and module and not names.isdisjoint(module.split(".")):
                return None
        elif kind is ast.Global or kind is ast.Nonlocal:
            if GLOBAL & stops and not names.isdisjoint(node.names):  # type: ignore[attr-defined]
                return None
            continue
        todo.extend(child_nodes(node))
    return uses


def spelling(node: ast.expr) -> str | None:
    """The name a Name or Attribute is spelled with (an attribute's last name)."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def assigned_names(statement: ast.Assign | ast.AnnAssign) -> list[str] | None:
    """The plain names or attributes an assignment stores its whole value to (`a = b = v`,
    `self.f: T = v`), or None when a target takes the value apart or stores it elsewhere."""
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    names: list[str] = []
    for target in targets:
        if isinstance(target, ast.Name):
            names.append(target.id)
        elif isinstance(target, ast.Attribute):
            names.append(target.attr)
        else:
            return None  # a tuple, an item, a starred target: taken apart or stored elsewhere
    return names


def called_only(tree: ast.Module, names: frozenset[str]) -> list[ast.Call] | None:
    """The calls whose callee is written with one of `names` (a name, or an attribute's last
    name); None when the module writes one otherwise: not as a callee, imported under another
    name, or as a string."""
    uses = name_uses(tree, names, READ | STORED | WRITTEN | RENAMED | STRING)
    return None if uses is None else uses.calls
