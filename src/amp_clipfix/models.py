"""Plain data that flows between the pipeline stages: sites, findings, fixes and edits.

Every stage reads these and returns new ones; none of them is mutated after it is made.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path

# Their home before kinds.py (the light types a run needs before anything is parsed):
from amp_clipfix.kinds import ErrorKind, FileError, Strategy, active_findings  # noqa: F401
from amp_clipfix.records import field, record

ALL_CODES = "*"  # a suppression comment without codes silences every code


class SiteKind(str, Enum):
    """What a piece of code contributes to the failure."""

    FABRIC_PRECISION = "fabric-precision"  # Fabric(precision=...) or its plugin
    FABRIC_CLIP = "fabric-clip"  # fabric.clip_gradients(...)
    TRAINER_PRECISION = "trainer-precision"  # Trainer(precision=...) or its plugin
    TRAINER_CLIP = "trainer-clip"  # Trainer(gradient_clip_val=...)
    MODULE_CLIP = "module-clip"  # self.clip_gradients(...) in a LightningModule
    FUSED_OPTIMIZER = "fused-optimizer"  # torch.optim.X(..., fused=True)
    # Sites of rules with their own search (rules/base.py `Rule.check` with `words`):
    GRAD_SCALER = "grad-scaler"  # a torch GradScaler, or a precision that makes one
    BACKWARD = "backward"  # scaler.scale(loss).backward(), self.manual_backward(loss), ...
    GRAD_CLIP = "grad-clip"  # a clip call: torch.nn.utils.clip_grad_norm_(...), ...
    OPTIMIZER_STEP = "optimizer-step"  # scaler.step(opt), opt.step()
    MANUAL_OPTIMIZATION = "manual-optimization"  # self.automatic_optimization = False
    TRAINER_AMP = "trainer-amp"  # Trainer(amp_backend=...), Trainer(amp_level=...)
    TORCH_AMP = "torch-amp"  # torch.cuda.amp.GradScaler(...), torch.cuda.amp.autocast(...)
    TRAINER_STRATEGY = "trainer-strategy"  # Trainer(strategy="fsdp"), FSDPStrategy(...)

    @property
    def role(self) -> str:
        """The piece of the failure it is, in the words reports use."""
        return ROLES.get(self) or ("precision" if self.value.endswith("precision") else "clip")


ROLES = {
    SiteKind.FUSED_OPTIMIZER: "fused optimizer",
    SiteKind.GRAD_SCALER: "scaler",
    SiteKind.BACKWARD: "backward",
    SiteKind.OPTIMIZER_STEP: "step",
    SiteKind.MANUAL_OPTIMIZATION: "manual optimization",
    SiteKind.TRAINER_AMP: "amp argument",
    SiteKind.TORCH_AMP: "deprecated AMP call",
    SiteKind.TRAINER_STRATEGY: "strategy",
}


class Certainty(str, Enum):
    """Whether the site's value is written in the code or decided at run time."""

    KNOWN = "known"
    RUNTIME = "runtime"


class Sharding(str, Enum):
    """The strategy of the Fabric / Trainer a site configures: whether it shards the model
    (FSDP, DeepSpeed), which the unscale fix does not support (its helper raises there)."""

    NONE = "none"  # no strategy given, or one that does not shard ("ddp", DDPStrategy())
    SHARDED = "sharded"  # "fsdp", "deepspeed_stage_2", FSDPStrategy(), an FSDPPrecision plugin
    UNKNOWN = "unknown"  # decided at run time (a variable, `**kwargs`, a class of the project)


class Through(str, Enum):
    """How a site's value reaches its call: as an argument, as the `**spread` itself (which may
    or may not set the key), or as an entry inside a spread dict."""

    ARGUMENT = "argument"
    SPREAD = "spread"  # Trainer(**params): may set precision / gradient_clip_val
    SPREAD_ENTRY = "spread-entry"  # AdamW(**{"fused": flag}): the entry's value


class Confidence(str, Enum):
    """A finding is certain, or depends on a value decided at run time (a person reviews)."""

    HIGH = "high"
    REVIEW = "review"
    OBSERVED = "observed"  # seen in a monitored run (`amp-clipfix trace`)


@record(frozen=True, order=True)
class Span:
    """A range in a file: 1-based lines, 0-based columns, like libcst's CodeRange."""

    line: int
    column: int
    end_line: int
    end_column: int


@record(frozen=True, order=True)
class EntryId:
    """Which `Fabric(...)` / `Trainer(...)` a site configures: the call by its place, or (`cli`)
    the LightningCLI's one Trainer that every YAML trainer section configures."""

    path: Path
    line: int
    column: int
    cli: bool = False


@record(frozen=True, order=True)
class UseId:
    """Where an optimizer built with a site's `fused` value is used, or which module class a
    `fit` trains: a class of a file by name, or (`name` empty) the file itself."""

    path: Path
    name: str = ""

    @property
    def is_class(self) -> bool:
        return bool(self.name)


@record(frozen=True, order=True)
class ConfigModel:
    """A config's `model` section names the class the LightningCLI's Trainer fits by dotted
    name (`class_path` / `_target_`); the project resolution turns it into a `UseId`."""

    dotted: str


def entry_order(entry: EntryId | None) -> tuple[object, ...]:
    """A total order of entries, None first, that never compares a path with None."""
    if entry is None:
        return ("",)
    return (str(entry.path), entry.line, entry.column, entry.cli)


@record(frozen=True, order=True)
class ClassRef:
    """A class of the project by position: where a fix may add a method."""

    path: Path
    span: Span  # the `class` statement
    name: str


@record(frozen=True)
class Edit:
    """Replace the text at `span` of `path` with `replacement` (a whole-statement rewrite may
    also be expressed by a codemod; edits are what machine output reports)."""

    path: Path
    span: Span
    replacement: str


@record(frozen=True)
class Site:
    """One place in the code that takes part in the failure.

    `value` is the literal as written (e.g. `"16-mixed"`, `True`, `1.0`), or `None` when the value
    is decided at run time; `owner` names the class the site belongs to (for module sites and
    optimizers built in `configure_optimizers`), `fixable` tells whether a codemod can rewrite it.
    """

    kind: SiteKind
    path: Path
    span: Span
    certainty: Certainty
    detail: str
    value: str | None = None
    owner: str | None = None
    fixable: bool = True
    suppressed_codes: frozenset[str] | None = None
    entry: EntryId | None = None  # which Fabric / Trainer it configures
    cell: int | None = None  # in a notebook: the cell number, and the span within that cell
    cell_span: Span | None = None
    in_config: bool = False  # read from a YAML config (LightningCLI / Hydra), not from code
    # Classes or files where the optimizer built with this `fused` value is used, when that is
    # elsewhere than the site itself (a factory, a default, a constant).
    users: tuple[UseId, ...] = ()
    note: str | None = None  # e.g. that the place also serves other callers
    sharding: Sharding = Sharding.NONE  # the strategy of the Fabric / Trainer it configures
    through: Through = Through.ARGUMENT
    clip_call: bool = False  # an `x.clip_gradients(...)` call (Lightning runs it as written)
    # The LightningModule classes whose own methods build the optimizer with this value (through
    # a factory, a default, a constant): the class an unscale override goes into.
    built_in: tuple[ClassRef, ...] = ()

    @property
    def shown_span(self) -> Span:
        """The position a person sees: within the cell for notebooks, else in the file."""
        return self.cell_span or self.span


@record(frozen=True)
class ClassInfo:
    """A class definition, kept so that LightningModule subclasses can be found across files."""

    name: str
    path: Path
    base_names: tuple[str, ...]  # qualified names of the bases as imported in its module
    is_lightning_module: bool  # a base is Lightning's own LightningModule
    clips_unscaled: bool = False  # its configure_gradient_clipping is the unscale fix's
    # Derives from LightningModule through the project's classes, each base followed by value
    # (imports, aliases, re-exports); set by the project resolution for the classes that own a
    # fused optimizer (analysis/resolve.py: with_module_classes).
    module_class: bool = False


@record(frozen=True)
class FitCall:
    """`trainer.fit(model, ...)`: which Trainer trains which module class (a config's dotted
    name until the project resolution finds the class); None where the analysis could not
    tell."""

    trainer: EntryId | None
    module_class: UseId | ConfigModel | None


@record(frozen=True)
class FileSites:
    """Everything the collector learned from one file."""

    path: Path
    sites: tuple[Site, ...] = ()
    classes: tuple[ClassInfo, ...] = ()
    has_guard_helper: bool = False
    fits: tuple[FitCall, ...] = ()
    candidates: tuple[Span, ...] = ()  # calls whose callee only the project evaluator can name


class LightningPath(str, Enum):
    """Which Lightning entry point raises: they differ in error and in which fixes work."""

    FABRIC = "fabric"
    TRAINER = "trainer"
    TORCH = "torch"  # plain torch (a GradScaler of its own), no Lightning entry point


@record(frozen=True)
class Fix:
    """A fix chosen for a finding: which codemod runs on which sites, and what it changes."""

    strategy: Strategy
    targets: tuple[Site, ...]
    safety: str  # what it changes in behaviour, shown in the diff view and machine output
    leftover: tuple[Site, ...] = ()  # sites of the same kind it cannot rewrite: a partial fix
    safe: bool = False  # ruff's fix safety: True when behaviour and numerics stay the same
    # A rule's own fix (rules/base.py `RuleFix`): text edits made by the rule's search, applied
    # as they are (no codemod of fixes/codemods runs for it); `targets` are the sites it changes.
    edits: tuple[Edit, ...] = ()


@record(frozen=True)
class Finding:
    """A linked set of sites that makes Lightning raise, with the fix chosen for it (if any)."""

    code: str
    lightning_path: LightningPath
    message: str
    confidence: Confidence
    sites: tuple[Site, ...]
    fix: Fix | None = None
    refusal: str | None = None  # why the requested strategy does not apply
    review: str | None = None  # what a person must decide (a finding with confidence review)
    suppressed: bool = False
    notes: tuple[str, ...] = field(default=())
    # A rule with its own search offers its fixes here, one per strategy; choose.py picks one.
    offers: tuple[Fix, ...] = ()

    @property
    def resolved(self) -> bool:
        """Fixed completely by its fix: nothing of it is left for a person."""
        return self.fix is not None and not self.fix.leftover

    @property
    def primary(self) -> Site:
        """The site reported first: the one the fix changes, else the first site."""
        if self.fix is not None and self.fix.targets:
            return self.fix.targets[0]
        return min(
            self.sites,
            key=lambda site: (
                str(site.path),
                site.span.line,
                site.span.column,
                site.kind.value,  # a `**spread` is a precision and a clip site at one position
                entry_order(site.entry),
            ),
        )
