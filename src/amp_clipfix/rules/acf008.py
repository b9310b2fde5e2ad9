"""ACF008: manual optimization under fp16 calls `loss.backward()` instead of
`self.manual_backward(loss)`.

Lightning scales the loss only in `manual_backward`; a plain `backward()` leaves the GradScaler
without a scale, and Lightning's unscale inside `optimizer.step()` fails (or, mixed with
`manual_backward`, unscales gradients that were never scaled).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

from amp_clipfix.analysis.decorators import method_wrappers
from amp_clipfix.analysis.evaluate import first_param
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.shape_texts import PLAIN_BACKWARD_IN_CLASS, PLAIN_BACKWARD_WRAPPER
from amp_clipfix.analysis.summary import Summary, first_line
from amp_clipfix.analysis.training import manual_modules, runtime_review, trainers_scaler
from amp_clipfix.models import Confidence, LightningPath, SiteKind, Strategy
from amp_clipfix.rules.base import Found, Queries, Rule, RuleFix

CODE = "ACF008"

ERROR = "AssertionError: Attempted unscale_ but _scale is None."

MESSAGE = (
    "Manual optimization calls `loss.backward()` instead of `self.manual_backward(loss)`: under "
    "fp16 the loss is never scaled, and Lightning's unscale in `optimizer.step()` fails "
    "(AssertionError: Attempted unscale_ but _scale is None) or divides unscaled gradients"
)

FIX = (
    "rewrites `loss.backward(...)` to `self.manual_backward(loss, ...)`, which scales the loss "
    "with the run's GradScaler (and does what `backward` did without one): right for every "
    "precision"
)

WHY = (
    "With `self.automatic_optimization = False` Lightning scales the loss only inside "
    "`self.manual_backward(loss)` (`scaler.scale(loss).backward()` under fp16). "
    "`loss.backward()` skips that: the gradients are not scaled, and when `optimizer.step()` "
    "unscales them before the step the GradScaler has no scale yet:\n\n"
    f"    {ERROR}\n\n"
    "Once the scaler has a scale (a `manual_backward` elsewhere), the same call silently divides "
    "unscaled gradients by the scale instead: the step sees 1 / scale of the gradient."
)

BEFORE = """\
import lightning as L
import torch


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False
        self.layer = torch.nn.Linear(32, 2)

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        opt.zero_grad()
        loss = self.layer(batch).sum()
        loss.backward()
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = L.Trainer(precision="16-mixed", max_epochs=1)
trainer.fit(Model(), train_dataloaders=torch.randn(64, 4, 32))
"""

AFTER = BEFORE.replace("        loss.backward()", "        self.manual_backward(loss)")


def plain_backward(call: ast.AST) -> bool:
    """`<expr>.backward(...)` on a value, not `self.manual_backward`, `fabric.backward(loss)`
    or `scaler.scale(loss).backward()`."""
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "backward"
        and not call.args  # `fabric.backward(loss)` and `torch.autograd.backward(t)` pass one
    ):
        return False
    receiver = call.func.value
    return not (
        isinstance(receiver, ast.Call)
        and isinstance(receiver.func, ast.Attribute)
        and receiver.func.attr == "scale"
    )


def on_self(call: ast.Call, self_name: str | None) -> bool:
    func = call.func
    return isinstance(func, ast.Attribute) and (
        isinstance(func.value, ast.Name) and func.value.id == self_name
    )


def check(queries: Queries) -> Iterator[Found]:
    facts = queries.facts
    # a file whose text cannot write a plain backward call in a class is not parsed for it
    # (shape_texts.py)
    modules = manual_modules(facts, b".backward(", where=PLAIN_BACKWARD_IN_CLASS)
    for file, cls, methods, manual in modules:
        for method in methods:
            self_name = first_param(method)
            calls = [
                n
                for n in ast.walk(method)
                if isinstance(n, ast.Call) and plain_backward(n) and not on_self(n, self_name)
            ]
            if not calls:
                continue
            state = trainers_scaler(facts, cls)
            if state is False:
                break
            for call in calls:
                yield found(file, call, self_name, manual, state)
    yield from wrapped(facts)


def wrapped(facts: ProjectFacts) -> Iterator[Found]:
    """`loss.backward()` in the wrapper a project decorator puts in place of a manually
    optimizing module's method (analysis/decorators.py): its first parameter is the module."""
    if not facts.may_optimize_manually():
        return
    # nor, here, where no function returns one it defines by name (a wrapper: shape_texts.py)
    for file in facts.with_words(b".backward(", where=PLAIN_BACKWARD_WRAPPER):
        summary = facts.evaluator.summary(file.path) or file.summary
        writes = functools.partial(may_call_backward, summary)
        for wrapper, classes in method_wrappers(facts.evaluator, summary, writes):
            modules = [c for c in classes if facts.is_lightning_module(c)]
            manual = [(c, facts.manual_optimization(c)) for c in modules]
            manual = [(c, state) for c, state in manual if state is not False]
            self_name = first_param(wrapper)
            calls = [
                n
                for n in ast.walk(wrapper)
                if isinstance(n, ast.Call) and plain_backward(n) and not on_self(n, self_name)
            ]
            if not manual or not calls:
                continue
            cls, state = manual[0]
            scaler = trainers_scaler(facts, cls)
            if scaler is not False:
                for call in calls:
                    yield found(file, call, self_name, state, scaler)


def may_call_backward(summary: Summary, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function's lines (its decorators' too: `ast.walk` of a wrapper reads them,
    and the functions inside it) can write a `.backward()` call: they write `backward`, or a
    byte outside ASCII (a name spelled another way that Python reads as it, NFKC). A function
    that cannot gives no finding, so it is not asked whether a decorator returns it; its body
    is not read for it (analysis/bodies.py)."""
    lines = summary.lines[first_line(function) - 1 : function.end_lineno]
    text = b"\n".join(lines)
    return b"backward" in text or not text.isascii()


def found(
    file: FileFacts,
    call: ast.Call,
    self_name: str | None,
    manual: bool | None,
    state: bool | None,
) -> Found:
    site = file.site(SiteKind.BACKWARD, call, f"`{' '.join(file.code(call).split())}`")
    assert isinstance(call.func, ast.Attribute)
    loss = file.code(call.func.value)
    arguments = [loss, *(file.code(k) for k in call.keywords)]
    fixes: tuple[RuleFix, ...] = ()
    if self_name and "\n" not in loss:
        code = f"{self_name}.manual_backward({', '.join(arguments)})"
        fixes = (RuleFix(Strategy.UNSCALE, (file.replace(call, code),), True, FIX, (site,)),)
    review = runtime_review(manual, state)
    if review is not None:
        return Found(
            (site,),
            Confidence.REVIEW,
            review=review,
            fixes=fixes,
            condition="the module runs under fp16 mixed precision",
        )
    return Found((site,), fixes=fixes)


RULE = Rule(
    lines=("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6"),
    code=CODE,
    name="manual-optimization-plain-backward",
    message=MESSAGE,
    level="error",
    lightning_path=LightningPath.TRAINER,
    check=check,
    words=(b".backward(", b".fit("),
    needs=(b"automatic_optimization",),  # manual optimization is written in the module
    short="Manual optimization calls loss.backward() instead of self.manual_backward(loss).",
    full=(
        "In a LightningModule with `self.automatic_optimization = False`: a `<value>.backward()` "
        "call in one of its methods (not `self.manual_backward`, not "
        "`scaler.scale(loss).backward()`). Certain when a Trainer whose `fit` is given the module "
        "runs with a GradScaler; a review finding when its precision is decided at run time or "
        "no followed `fit` names the module (the fix is right for every precision); nothing when "
        "every such Trainer runs without a scaler."
    ),
    why_title="Why it fails",
    why=WHY,
    example_before=BEFORE,
    example_after=AFTER,
    fix_safety={Strategy.UNSCALE.value: f"The default (`auto`). Safe: it {FIX}."},
)
