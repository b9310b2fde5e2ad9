"""ACF009: `Trainer(gradient_clip_val=...)` trains a module that optimizes manually.

Lightning refuses automatic clipping for a module with `automatic_optimization = False`. The fix
moves the clipping into the module's `on_before_optimizer_step` with the same value and
algorithm, and removes the Trainer arguments.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from amp_clipfix.analysis.cli_config import (
    CLI_WORD,
    CliTrainer,
    Setting,
    cli_trainer,
)
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.lightning_api import (
    CLIP_ALGORITHM_ARGUMENT,
    CLIP_HOOK,
    CLIP_VAL_ARGUMENT,
    TRAINER_CLIP_ARGUMENTS,
)
from amp_clipfix.analysis.names import TRAINER_CLASSES
from amp_clipfix.analysis.shape_texts import CLIP_VAL_KEYWORD
from amp_clipfix.analysis.training import has_hook, may_be_fused
from amp_clipfix.analysis.values import ClsV, Lit
from amp_clipfix.models import Confidence, Edit, LightningPath, Site, SiteKind, Span, Strategy
from amp_clipfix.rules.base import Found, Queries, Rule, RuleFix

CODE = "ACF009"

ERROR = (
    "MisconfigurationException: Automatic gradient clipping is not supported for manual "
    "optimization. Remove `Trainer(gradient_clip_val=1.0)` or switch to automatic optimization."
)

MESSAGE = (
    "`Trainer(gradient_clip_val=...)` trains a module with manual optimization: Lightning raises "
    "MisconfigurationException (automatic gradient clipping is not supported for manual "
    "optimization)"
)

FIX = (
    "moves the clipping into the module's `on_before_optimizer_step(self, optimizer)` as "
    "`self.clip_gradients(optimizer, gradient_clip_val=..., gradient_clip_algorithm=...)` with "
    "the Trainer's value and algorithm (Lightning calls the hook inside every "
    "`optimizer.step()`, after unscaling under fp16), and removes the Trainer arguments"
)

FIX_CONFIG = (
    "moves the clipping into the module's `on_before_optimizer_step(self, optimizer)` as "
    "`self.clip_gradients(optimizer, gradient_clip_val=..., gradient_clip_algorithm=...)` with "
    "the configured value and algorithm, and sets `gradient_clip_val` to null where the "
    "configuration sets it (the YAML token, the LightningCLI `trainer_defaults` value)"
)

UNFIXED = (
    "the clipping cannot be moved as it is (the Trainer may also train a module that optimizes "
    "automatically or one the analysis does not follow, the value or algorithm is decided at "
    "run time, the module already has on_before_optimizer_step or may use a fused optimizer): "
    "clip in the module's on_before_optimizer_step by hand and remove gradient_clip_val"
)

UNFIXED_VALUES = (
    "the LightningCLI's configs set different clip values: clip in the module's "
    "on_before_optimizer_step with the value you mean and set gradient_clip_val to null"
)

WHY = (
    "With `self.automatic_optimization = False` the module steps its optimizers itself, and "
    "Lightning has no place to clip for it: `Trainer(gradient_clip_val=...)` with a value "
    "above 0 makes `trainer.fit` raise before the first step, on pytorch-lightning 1.9.5 as on "
    "lightning 2.0.9 and 2.6.6:\n\n"
    f"    {ERROR}\n\n"
    "Clipping in manual optimization belongs in the module: `self.clip_gradients(...)` in "
    "`on_before_optimizer_step`, which Lightning runs inside `optimizer.step()` after it has "
    "unscaled fp16 gradients."
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
        self.manual_backward(self.layer(batch).sum())
        opt.step()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


trainer = L.Trainer(max_epochs=1, gradient_clip_val=0.5, gradient_clip_algorithm="value")
trainer.fit(Model(), train_dataloaders=torch.randn(64, 4, 32))
"""

AFTER = BEFORE.replace(
    "        return torch.optim.SGD(self.parameters(), lr=0.1)\n",
    "        return torch.optim.SGD(self.parameters(), lr=0.1)\n\n"
    "    def on_before_optimizer_step(self, optimizer):\n"
    "        self.clip_gradients(\n"
    '            optimizer, gradient_clip_val=0.5, gradient_clip_algorithm="value"\n'
    "        )\n",
).replace(', gradient_clip_val=0.5, gradient_clip_algorithm="value")\ntrainer', ")\ntrainer")


def literal(facts: ProjectFacts, file: FileFacts, node: ast.expr) -> Lit | None:
    """The one literal the expression holds (through names and constants), else None."""
    values = facts.values(file, node)
    lits = [v for v in values if isinstance(v, Lit)]
    if lits and len(lits) == len(values) and len({(type(v.value), v.value) for v in lits}) == 1:
        return lits[0]
    return None


def writes_clip_val(call: ast.Call) -> bool:
    return any(keyword.arg == CLIP_VAL_ARGUMENT for keyword in call.keywords)


def check(queries: Queries) -> Iterator[Found]:
    facts = queries.facts
    if not facts.may_optimize_manually():
        return  # no module optimizes by hand: no Trainer's fits need to be followed
    # not parsed where no `gradient_clip_val=` keyword can be written (shape_texts.py)
    for file in facts.with_words(b"gradient_clip_val", where=CLIP_VAL_KEYWORD):
        # a call given the keyword spans the line that writes it
        for call in file.summary.calls_kept(writes_clip_val, CLIP_VAL_ARGUMENT):
            keywords = {
                k.arg: k
                for k in call.keywords
                if k.arg is not None and k.arg in TRAINER_CLIP_ARGUMENTS
            }
            if CLIP_VAL_ARGUMENT not in keywords:
                continue
            if not facts.qualified_names(file, call.func) & TRAINER_CLASSES:
                continue
            clip = literal(facts, file, keywords[CLIP_VAL_ARGUMENT].value)
            if clip is not None and (clip.value is None or float_or(clip.value) <= 0):
                continue  # no clipping: Lightning accepts it
            value = None if clip is None else clip.text
            classes, unknown = facts.modules_of(call, file)
            states = [facts.manual_optimization(c) for c in classes]
            if True not in states and None not in states:
                continue  # no module it trains optimizes manually for all the code says
            manual = [c for c, state in zip(classes, states) if state is not False]
            site = file.site(
                SiteKind.TRAINER_CLIP,
                keywords[CLIP_VAL_ARGUMENT],
                f"`{' '.join(file.code(keywords['gradient_clip_val']).split())}`",
            )
            sites = (site, *(class_site(facts, c) for c in manual))
            certain = not unknown and all(state is True for state in states)
            if certain and value is not None:
                fixes = moved(facts, file, call, keywords, classes, value)
                yield Found(sites, fixes=fixes, unfixed=None if fixes else UNFIXED)
                continue
            yield Found(
                sites,
                Confidence.REVIEW,
                review=review(unknown, states, value),
                condition="the module it trains optimizes manually",
                fixes=(),
                unfixed=UNFIXED,
            )
    yield from cli_search(facts)


def cli_search(facts: ProjectFacts) -> Iterator[Found]:
    """The LightningCLI's Trainer: `gradient_clip_val` from a YAML config's `trainer:` section
    or `trainer_defaults={...}`, and the module class the CLI fits (analysis/cli_config.py)."""
    keys = (CLIP_VAL_ARGUMENT, CLIP_ALGORITHM_ARGUMENT)
    cli = cli_trainer(facts, keys, CLIP_VAL_ARGUMENT, fitted=True)
    if cli is None or not cli.settings[CLIP_VAL_ARGUMENT]:
        return
    settings = cli.settings[CLIP_VAL_ARGUMENT]
    if cli.unknown and not cli.classes:
        if cli.calls:  # a Hydra config naming no model may serve any Trainer of the code
            yield from unknown_module(facts, settings)
        return
    states = [facts.manual_optimization(c) for c in cli.classes]
    if True not in states and None not in states:
        return  # the CLI's module optimizes automatically, which the clipping serves
    manual = [c for c, state in zip(cli.classes, states) if state is not False]
    sites = (*(s.site for s in settings), *(class_site(facts, c) for c in manual))
    values = {s.value for s in settings}
    certain = not cli.unknown and all(state is True for state in states)
    literals = {value for value in values if value is not None}
    condition = "the module it trains optimizes manually"
    why = review(cli.unknown, states, None if None in values else "1")
    if certain and None not in values:
        unset = cli.unset_in.get(CLIP_VAL_ARGUMENT)
        if not unset:
            fixes = config_moved(facts, cli, literals.pop()) if len(literals) == 1 else ()
            unfixed = UNFIXED if len(literals) == 1 else UNFIXED_VALUES
            yield Found(sites, fixes=fixes, unfixed=None if fixes else unfixed)
            return
        why = (
            f"{unset[0].name} sets no clip value: whether the run clips depends on the config "
            "it is given"
        )
        condition = "the run's config sets gradient_clip_val above 0"
    yield Found(
        sites,
        Confidence.REVIEW,
        review=why,
        condition=condition,
        fixes=(),
        unfixed=UNFIXED,
    )


def unknown_module(facts: ProjectFacts, settings: list[Setting]) -> Iterator[Found]:
    """The LightningCLI's Trainer clips, and which module it trains is chosen where the
    analysis does not follow (the command line, `subclass_mode_model`): a review when a module
    of the project optimizes manually."""
    manual: list[ClsV] = []
    for file in facts.with_words(b"automatic_optimization"):
        for node in ast.walk(file.tree):
            if isinstance(node, ast.ClassDef):
                cls = ClsV(node, facts.evaluator.summary(file.path) or file.summary)
                if facts.is_lightning_module(cls) and facts.manual_optimization(cls) is not False:
                    manual.append(cls)
    if not manual:
        return
    yield Found(
        (*(s.site for s in settings), *(class_site(facts, c) for c in manual)),
        Confidence.REVIEW,
        review=(
            "which module the LightningCLI trains is chosen where the analysis does not follow "
            "(the command line, a config it does not read)"
        ),
        condition="the module it trains optimizes manually",
        fixes=(),
        unfixed=UNFIXED,
    )


def config_moved(facts: ProjectFacts, cli: CliTrainer, value: str) -> tuple[RuleFix, ...]:
    """The hook added to the CLI's one module class; each place that sets the value (a config
    token, a `trainer_defaults` value) set to null, comments and layout kept."""
    settings = cli.settings[CLIP_VAL_ARGUMENT]
    if len(cli.classes) != 1 or any(s.token is None for s in settings):
        return ()
    algorithms = {(s.value or "").lower() for s in cli.settings[CLIP_ALGORITHM_ARGUMENT]}
    if not algorithms <= {"norm", "value"} or len(algorithms) > 1:
        return ()
    hook = hook_edit(facts, cli.classes[0], value, algorithms.pop() if algorithms else "norm")
    if hook is None:
        return ()
    edits = [hook]
    for setting in settings:
        assert setting.token is not None
        path, span = setting.token
        edits.append(Edit(path, span, "null" if setting.site.in_config else "None"))
    targets = tuple(s.site for s in settings)
    return (RuleFix(Strategy.UNSCALE, tuple(edits), True, FIX_CONFIG, targets),)


def float_or(value: object) -> float:
    """A clip value as a number (Lightning reads a string as a float); 1.0 when it is no number
    (`True` or other text clips: Lightning raises on it, so the finding stands)."""
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 1.0


def review(unknown: bool, states: list[bool | None], value: str | None) -> str:
    if value is None:
        return "the clip value is decided at run time (Lightning raises when it is above 0)"
    if unknown or None in states:
        return (
            "which modules the Trainer trains, or whether they optimize manually, is decided "
            "at run time"
        )
    return (
        "the Trainer also trains a module that optimizes automatically, which its clipping serves"
    )


def class_site(facts: ProjectFacts, cls: ClsV) -> Site:
    file = facts.file(cls.summary.path)
    assert file is not None, "a class the evaluator found is in a project file"
    return file.site(SiteKind.MANUAL_OPTIMIZATION, cls.node, f"class {cls.node.name}")


def moved(
    facts: ProjectFacts,
    file: FileFacts,
    call: ast.Call,
    keywords: dict[str, ast.keyword],
    classes: list[ClsV],
    value: str,
) -> tuple[RuleFix, ...]:
    """The hook added to the one module class the Trainer trains, the Trainer arguments gone."""
    if len(classes) != 1 or any(isinstance(a, ast.Starred) for a in call.args):
        return ()
    algorithm = "norm"
    if CLIP_ALGORITHM_ARGUMENT in keywords:
        chosen = literal(facts, file, keywords[CLIP_ALGORITHM_ARGUMENT].value)
        written = None if chosen is None else chosen.value
        if not isinstance(written, str) or written.lower() not in ("norm", "value"):
            return ()
        algorithm = written.lower()
    hook = hook_edit(facts, classes[0], value, algorithm)
    if hook is None:
        return ()
    edits = (
        hook,
        *removed(file, call, [keywords[k] for k in TRAINER_CLIP_ARGUMENTS if k in keywords]),
    )
    target = file.site(SiteKind.TRAINER_CLIP, keywords[CLIP_VAL_ARGUMENT], "")
    return (RuleFix(Strategy.UNSCALE, edits, True, FIX, (target,)),)


def hook_edit(facts: ProjectFacts, cls: ClsV, value: str, algorithm: str) -> Edit | None:
    """`on_before_optimizer_step` added to the module class, clipping with the Trainer's value
    and algorithm; None when the class has the hook already or may use a fused optimizer."""
    module = facts.file(cls.summary.path)
    if module is None or has_hook(facts, cls) or may_be_fused(facts, cls):
        return None
    hook_idx = facts.target.clip_hook_takes_optimizer_idx
    # Lightning passes the clip value and algorithm as keywords (1.9.5 and 2.6.6 alike), after
    # `optimizer_idx` on 1.x: a hook for both lines takes `*args, **kwargs`
    extra = {True: ", optimizer_idx", False: "", None: ", *args, **kwargs"}[hook_idx]
    params = "self, optimizer" + extra
    last = cls.node.body[-1]
    end = last.end_lineno or last.lineno
    indent = module.indentation(cls.node.body[0].lineno)
    inner = indent + (
        module.indentation(last.body[0].lineno)[len(indent) :]
        if isinstance(last, (ast.FunctionDef, ast.AsyncFunctionDef))
        else "    "
    )
    newline = module.newline(end)
    hook = (
        f"{newline}{indent}def {CLIP_HOOK}({params}):{newline}"
        f"{inner}self.clip_gradients(optimizer, gradient_clip_val={value}, "
        f'gradient_clip_algorithm="{algorithm}"){newline}'
    )
    return Edit(module.path, Span(end + 1, 0, end + 1, 0), hook)


def removed(file: FileFacts, call: ast.Call, gone: list[ast.keyword]) -> list[Edit]:
    """Edits that take the keywords out of the call with their commas: each run of removed
    arguments goes up to the next kept one, or back to the previous one when it is last."""
    arguments: list[ast.AST] = [*call.args, *call.keywords]
    arguments.sort(key=lambda n: (file.span(n).line, file.span(n).column))
    edits = []
    index = 0
    while index < len(arguments):
        if arguments[index] not in gone:
            index += 1
            continue
        end = index
        while end + 1 < len(arguments) and arguments[end + 1] in gone:
            end += 1
        first, last = file.span(arguments[index]), file.span(arguments[end])
        if end + 1 < len(arguments):
            after = file.span(arguments[end + 1])
            edits.append(
                Edit(file.path, Span(first.line, first.column, after.line, after.column), "")
            )
        elif index > 0:
            before = file.span(arguments[index - 1])
            span = Span(before.end_line, before.end_column, last.end_line, last.end_column)
            edits.append(Edit(file.path, span, ""))
        else:
            span = Span(first.line, first.column, last.end_line, last.end_column)
            edits.append(Edit(file.path, span, ""))
        index = end + 1
    return edits


RULE = Rule(
    lines=("pytorch-lightning 1.9", "lightning 2.0", "lightning 2.1 - 2.6"),
    code=CODE,
    name="trainer-clip-manual-optimization",
    message=MESSAGE,
    level="error",
    lightning_path=LightningPath.TRAINER,
    check=check,
    words=(b"gradient_clip_val", b".fit(", CLI_WORD),
    needs=(b"automatic_optimization",),  # manual optimization is written in the module
    short="Trainer(gradient_clip_val=...) trains a module that optimizes manually.",
    full=(
        "A `Trainer(...)` call with `gradient_clip_val` (a value above 0, or one decided at run "
        "time) whose `trainer.fit(model)` is given a LightningModule with "
        "`self.automatic_optimization = False` (in a method or the class body, of it or a "
        "project base). Certain, and fixed, when every module the Trainer fits optimizes "
        "manually; a review finding without a fix when the Trainer may also fit another module, "
        "one the analysis does not follow, or the value is decided at run time. The same for "
        "the Trainer a configuration builds: `trainer.gradient_clip_val` in a LightningCLI or "
        "Hydra YAML config, LightningCLI's `trainer_defaults={...}`, a Hydra config written in "
        "Python (`OmegaConf.create({...})`), with the class the CLI is given or the config's "
        "`model` section names; its fix sets the configured value to null in place."
    ),
    why_title="Why Lightning fails",
    why=WHY,
    example_before=BEFORE,
    example_after=AFTER,
    fix_safety={
        Strategy.UNSCALE.value: (
            f"The default (`auto`). Safe: it {FIX}. On Lightning 1.x the hook is "
            "`on_before_optimizer_step(self, optimizer, optimizer_idx)`. Only when the Trainer "
            "provably trains only that one module, the value and algorithm are literals (or "
            "constants), the module has no such hook yet and its optimizer is not fused "
            "(Lightning refuses to clip those under mixed precision: ACF002)."
        ),
    },
)
