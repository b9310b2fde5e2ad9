"""One `trainer.fit(model, ...)` of the project, its model read on first ask.

`ProjectFacts.fits` reads every `.fit(` call's receiver (the Trainers it may be). A question
about one Trainer (`modules_of`) needs the models of that Trainer's fits only: the model of a
fit is evaluated when a question first needs it, as its own question of the evaluator, with the
same answer whenever it is asked (the evaluator's memo holds values that depend on their key
only). A Trainer whose value cannot leave the code around it (`trainer_scope`) is fitted only
there: its question reads the fits of that code, not the receivers of every `.fit(` of the
project.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from amp_clipfix.analysis.nodes import calls_in
from amp_clipfix.analysis.reaching import fit_receiver
from amp_clipfix.analysis.summary import Summary
from amp_clipfix.analysis.values import ClsV, Inst, TrainerV
from amp_clipfix.records import field, record

if TYPE_CHECKING:  # a fit is read with the evaluator: its frame and dispatch come with it
    from amp_clipfix.analysis.evaluate import Evaluator
    from amp_clipfix.analysis.frame import Ctx

FIT_WORD = b".fit("  # what a file that fits a Trainer writes (ProjectFacts.fits reads those)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.Module)


@record
class Fit:
    """The Trainers a fit's receiver may be, and its model (read with `joined`)."""

    trainers: list[TrainerV]
    model: ast.expr
    ctx: Ctx
    evaluator: Evaluator
    _joined: tuple[list[ClsV], bool] | None = field(default=None, repr=False)

    def joined(self) -> tuple[list[ClsV], bool]:
        """The module classes the model may be an instance of, and whether it may be something
        the analysis does not follow."""
        if self._joined is None:
            values = self.evaluator.force(self.evaluator.ev(self.model, self.ctx))
            classes = [v.cls for v in values if isinstance(v, Inst)]
            self._joined = (classes, len(classes) != len(values))
        return self._joined

    @property
    def classes(self) -> list[ClsV]:
        return self.joined()[0]

    @property
    def unknown(self) -> bool:
        return self.joined()[1]


def is_fit(call: ast.Call) -> bool:
    """`<x>.fit(...)`: what `call_fits` reads further."""
    return isinstance(call.func, ast.Attribute) and call.func.attr == "fit"


def call_fits(evaluator: Evaluator, summary: Summary, call: ast.Call) -> list[Fit]:
    """The fits a call is, when it is `<trainer>.fit(model, ...)` whose receiver may be a
    Trainer: one per context the call is read in (dispatch.py), its model read when asked."""
    from amp_clipfix.analysis.dispatch import runtime_contexts

    if not is_fit(call):
        return []
    model = call.args[0] if call.args else None
    for keyword in call.keywords:
        if keyword.arg == "model":
            model = keyword.value
    scope = evaluator.ctx_of(summary, call).func or summary.tree
    found: list[Fit] = []
    for ctx in runtime_contexts(evaluator, summary, call):
        receiver = evaluator.force(evaluator.ev(fit_receiver(call, scope), ctx))
        trainers = [v for v in receiver if isinstance(v, TrainerV)]
        if model is not None and trainers:
            found.append(Fit(trainers, model, ctx, evaluator))
    return found


def trainer_scope(summary: Summary, call: ast.Call) -> ast.AST | None:
    """The code outside which no `fit` can be given the Trainer `call` makes, or None. The
    evaluator makes that Trainer's value (a `TrainerV` holding `call`) only where it evaluates
    `call` itself, and an attribute of it is no Trainer: so where `call` is a statement of its
    own (its value dropped: `pytest.raises` around a bad argument), or only the receiver
    of an attribute (`Trainer(...).fit(model)`), or is bound to a local name of a function that
    reads the name only as such a receiver (`trainer.fit(model)`, `trainer.logger`: never
    passed, returned, stored, put in a container, declared global or nonlocal, augmented), the
    fits of that Trainer are among the `.fit(` calls of that code (nested functions included)."""
    parent = summary.parent(call)
    if isinstance(parent, ast.Expr):
        return call  # a statement of its own: the value is dropped, nothing can fit it
    if isinstance(parent, ast.Attribute) and parent.value is call:
        return summary.enclosing(call)[0] or summary.tree
    if not (
        isinstance(parent, ast.Assign)
        and parent.value is call
        and len(parent.targets) == 1
        and isinstance(parent.targets[0], ast.Name)
    ):
        return None
    name = parent.targets[0].id
    scope = summary.parent(parent)
    while scope is not None and not isinstance(scope, SCOPES):
        scope = summary.parent(scope)
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None  # a module's or a class's name: other code may import or read it
    for node in ast.walk(scope):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return None
        if (
            isinstance(node, ast.AugAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ):
            return None
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
            holder = summary.parent(node)
            if not (isinstance(holder, ast.Attribute) and holder.value is node):
                return None
    return scope


def scope_fits(evaluator: Evaluator, summary: Summary, scope: ast.AST) -> list[Fit]:
    """The fits of the `<x>.fit(...)` calls in `scope`, in the order `ProjectFacts.fits` lists
    them: a breadth-first walk of the module meets a subtree's nodes in the order of a
    breadth-first walk of the subtree (by depth, then left to right), so the scope's own walk
    gives them without a read of the module's calls per Trainer asked about."""
    return [
        fit
        for call in calls_in(scope)
        if is_fit(call)
        for fit in call_fits(evaluator, summary, call)
    ]
