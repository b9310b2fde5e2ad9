"""Classes in the evaluator: attribute lookup through the bases, what methods assign to `self`,
`self.hparams`, and the method resolution order.
"""

from __future__ import annotations

import ast

from amp_clipfix.analysis.bodies import UNREAD_KINDS
from amp_clipfix.analysis.class_members import assignments_to, self_assigned_names
from amp_clipfix.analysis.descriptors import descriptor_values, is_descriptor
from amp_clipfix.analysis.dispatch import receiver_of
from amp_clipfix.analysis.frame import Ctx, EvaluatorBase
from amp_clipfix.analysis.shapes import all_params, attribute_targets, bound_names, first_param
from amp_clipfix.analysis.values import (
    ClsV,
    Ext,
    Fn,
    Inst,
    ModuleV,
    Opaque,
    SelfV,
)


class ClassModel(EvaluatorBase):
    """Attributes of modules, classes and instances: methods, `self.<attr>` assignments,
    `self.hparams`, and the bases of a class."""

    def ev_attribute(self, node: ast.Attribute, ctx: Ctx) -> list[object]:
        base = node.value
        if isinstance(base, ast.Attribute) and base.attr == "hparams":
            owners = [v for v in self.ev(base.value, ctx) if isinstance(v, SelfV)]
            if owners:
                return [v for owner in owners for v in self.hparam(owner.cls, node.attr, node)]
        return [
            v for value in self.ev(base, ctx) for v in self.attribute_of(value, node.attr, node)
        ]

    def attribute_of(self, value: object, attr: str, node: ast.AST) -> list[object]:
        if isinstance(value, Ext):
            return self.resolve_qname(f"{value.qname}.{attr}", node, None)  # type: ignore[arg-type]
        if isinstance(value, ModuleV):
            return self.module_symbol(value.summary, attr, node)
        if isinstance(value, SelfV):
            return self.instance_attribute(value.cls, attr, node, skip_own=value.is_super)
        if isinstance(value, Inst):
            found = self.instance_attribute(value.cls, attr, node)
            field = self.field_values(value, attr)
            if field is None:
                return found
            values, declared = field  # what the construction gives it, then its methods'
            kept = (v for v in found if not isinstance(v, Opaque) or id(v.node) not in declared)
            return [*values, *kept]
        if isinstance(value, ClsV):
            return self.instance_attribute(value, attr, node, bound=False)
        summary = getattr(value, "summary", None)
        return [Opaque(node, summary)]  # type: ignore[arg-type]

    def instance_attribute(
        self, cls: ClsV, attr: str, node: ast.AST, bound: bool = True, skip_own: bool = False
    ) -> list[object]:
        """A method of the class (or a base), or what its methods assign to `self.<attr>`;
        decided at run time (at `node`, the asker's place: the memo holds what the class shows,
        never one asker's place) when the project shows none."""
        key = (id(cls.node), attr + ("/super" if skip_own else "") + ("" if bound else "/cls"))
        values = self.recall(self.attr_cache, "attr", key)
        if values is None:
            if self.cycle("attr", key):
                return []  # the attribute read inside its own value adds none of its own
            entered = self.enter("attr", key)
            found: list[object] | None = None
            try:
                values = []
                classes = [c for c in self.mro(cls) if isinstance(c, ClsV)]
                for klass in classes[1:] if skip_own else classes:
                    values.extend(self.class_attribute(klass, attr, bound, cls))
                    if values and any(isinstance(v, Fn) for v in values):
                        break
                found = values
            finally:
                self.leave(entered, self.attr_cache, "attr", key, found)
        return values or [Opaque(node, cls.summary)]

    def class_attribute(
        self, klass: ClsV, attr: str, bound: bool, runtime: ClsV | None = None
    ) -> list[object]:
        """`runtime`: the class of the instance read (klass or a subclass of it)."""
        values: list[object] = []
        for statement in self.class_members(klass.node).get(attr, ()):
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if statement.name == attr:
                    receiver = receiver_of(klass, runtime) if bound else None
                    if bound and is_descriptor(self, statement, klass):
                        return descriptor_values(self, statement, klass, receiver)  # a read runs it
                    return [Fn(statement, klass.summary, klass.node, bound, receiver)]
                assignments = self.self_assignments(statement).get(attr)
                if assignments:
                    ctx = self.ctx(klass.summary, statement, klass.node)
                    for inner in assignments:
                        values.extend(self.self_assignment(inner, attr, statement, ctx))
            elif isinstance(statement, ast.AnnAssign) and attr in bound_names(statement):
                # a dataclass / config field: the constructor may set it
                values.append(Opaque(statement, klass.summary))
            elif isinstance(statement, ast.Assign) and attr in bound_names(statement):
                values.extend(self.binding(statement, attr, self.ctx(klass.summary, None, None)))
        return values

    def class_members(self, cls: ast.ClassDef) -> dict[str, list[ast.stmt]]:
        """The statements of a class's body that may give it the attribute, by name, in their
        order (class_attribute reads only those): a method of that name or one that assigns
        `self.<name>`, a class-level assignment of it. Once per class, not per attribute read
        (NeMo read 32,000 attributes)."""
        key = id(cls)
        if key not in self.members_cache:
            found: dict[str, list[ast.stmt]] = {}
            for statement in cls.body:
                if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if type(statement) in UNREAD_KINDS:  # looked at, not read for good
                        assigned = self_assigned_names(statement)
                    else:
                        assigned = list(self.self_assignments(statement))
                    names = {statement.name, *assigned}
                elif isinstance(statement, (ast.AnnAssign, ast.Assign)):
                    names = set(bound_names(statement))
                else:
                    continue
                for name in names:
                    found.setdefault(name, []).append(statement)
            self.members_cache[key] = (cls, found)
        return self.members_cache[key][1]

    def self_assignments(self, method: ast.AST) -> dict[str, list[ast.AST]]:
        """The statements of a method that assign `self.<attr>`, by attr: one walk per method,
        not one per attribute asked about (big model classes are asked about hundreds)."""
        key = id(method)
        if key not in self.assignments_cache:
            statements = self.statements(method)  # assignments are statements
            self.assignments_cache[key] = assignments_to(first_param(method), statements)
        return self.assignments_cache[key]

    def self_assignment(self, node: ast.AST, attr: str, method: ast.AST, ctx: Ctx) -> list[object]:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        values: list[object] = []
        self_name = first_param(method)
        for target in targets:
            for element, path in attribute_targets(target):
                if (
                    element.attr == attr
                    and isinstance(element.value, ast.Name)
                    and element.value.id == self_name
                ):
                    assert value is not None, "targets come with their value"
                    values.extend(self.ev_path(value, path, ctx))
        return values

    def hparam(self, cls: ClsV, name: str, node: ast.AST) -> list[object]:
        """`self.hparams.<name>`: the `__init__` parameter of that name (save_hyperparameters)."""
        for klass in self.mro(cls):
            if not isinstance(klass, ClsV):
                continue
            for statement in klass.node.body:
                if (
                    isinstance(statement, ast.FunctionDef)
                    and statement.name == "__init__"
                    and any(p.arg == name for p in all_params(statement.args))
                ):
                    ctx = self.ctx(klass.summary, statement, klass.node)
                    return self.parameter(statement, name, node, ctx)
        return [Opaque(node, cls.summary)]

    def mro(self, cls: ClsV) -> list[object]:
        """The class and its bases, depth first: project classes as ClsV, others as Ext."""
        key = id(cls.node)
        known = self.recall(self.mro_cache, "mro", key)
        if known is not None:
            return known
        if self.cycle("mro", key):
            return [cls]  # a class among its own bases (`class Model(Model)` of a name
            # bound twice): its bases are those found around this
        entered = self.enter("mro", key)
        found: list[object] | None = None
        try:
            order: list[object] = [cls]
            ctx = self.ctx_of(cls.summary, cls.node)
            for base in cls.node.bases:
                for value in self.ev(base, ctx):
                    if isinstance(value, ClsV):
                        order.extend(b for b in self.mro(value) if b not in order)
                    elif isinstance(value, Ext):
                        order.append(value)
            found = order
        finally:
            self.leave(entered, self.mro_cache, "mro", key, found)
        return order

    def derives_from(self, cls: ClsV, qualified: frozenset[str]) -> bool:
        return any(isinstance(b, Ext) and b.qname in qualified for b in self.mro(cls))
