"""One `trainer.fit(model, ...)` of the project, its model read on first ask.

`ProjectFacts.fits` reads every `.fit(` call's receiver (the Trainers it may be). A question
about one Trainer (`modules_of`) needs the models of that Trainer's fits only: the model of a
fit is evaluated when a question first needs it, as its own question of the evaluator, with the
same answer whenever it is asked (the evaluator's memo holds values that depend on their key
only).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.frame import Ctx
from amp_clipfix.analysis.values import ClsV, Inst, TrainerV


@dataclass
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
