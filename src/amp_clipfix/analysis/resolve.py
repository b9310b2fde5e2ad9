"""The per-project resolution: sites the per-file collector cannot see alone.

Over the files' summaries (summary.py) and the evaluator (evaluate.py) it
- refines sites decided at run time in their own file (`fused=self.hparams.fused`,
  `Trainer(**cfg)`, `Fabric(precision=precision)`) to the literals that decide them: an
  `__init__` default, a dict entry, a module constant, a factory's argument;
- finds optimizers built elsewhere (factories and their `**kwargs`, mixins and base classes,
  `functools.partial` / lambdas passed into `__init__`, `getattr(torch.optim, name)`, any call
  passing `fused` whose callee cannot be followed) for each module class and each file that
  clips on a Fabric;
- finds Trainer subclasses configured in `super().__init__(...)`, clipping in Callbacks and in
  `super().configure_gradient_clipping(...)`, and Fabric clips whose receiver is a parameter;
- follows `trainer.fit(model, ...)` to the Trainer and the module class it trains.
Library code (site-packages, Lightning's own package) is never a user site.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.collect import collect_sites
from amp_clipfix.analysis.evaluate import Evaluator
from amp_clipfix.analysis.resolve_base import Found
from amp_clipfix.analysis.resolve_callees import CalleeSearch
from amp_clipfix.analysis.resolve_optimizers import CLASS_WORDS, OptimizerSearch
from amp_clipfix.analysis.resolve_trainers import TrainerSearch
from amp_clipfix.analysis.summary import Summary, summarise
from amp_clipfix.analysis.values import ClsV
from amp_clipfix.models import ConfigModel, FileSites, Site, SiteKind, UseId
from amp_clipfix.paths import is_library
from amp_clipfix.records import replace


class Resolution(CalleeSearch, OptimizerSearch, TrainerSearch):
    """The searches of one resolution over one project's files, run in a fixed order."""

    # -- the three searches --------------------------------------------------------------------

    def run(self, trial: bool = False) -> Found:
        """All searches; a trial (which only tells which Trainer files to read) needs the
        fused optimizers and the fits of their classes alone."""
        self.identify_callees()
        if not self.may_find_fused():
            self.keep_callee_sites()
            return self.found
        self.settle_strategies()
        if not trial:
            self.plugin_entries()
        self.refine_runtime_sites()
        self.module_optimizers()
        if not trial:
            if self.any_fused():  # a Trainer's settings matter only beside a fused optimizer
                self.trainer_subclasses()
            self.clip_calls()
        self.fabric_optimizers()
        self.fit_calls()
        if not trial:
            self.cli_calls()
            self.settle_plugins()
        self.keep_callee_sites()
        return self.found

    def may_find_fused(self) -> bool:
        """Whether the project may hold a fused optimizer's site: a file's own (the collector's,
        a candidate's callee), or one the optimizer searches find, which find none where no
        fused optimizer can be built (`may_build_fused`). Only ACF001 and ACF002 read the
        resolution's sites, and each of their findings holds a fused optimizer: without one,
        no plugin, precision, clip, Trainer or fit is followed. `may_build_fused` is asked
        here only where the module class search would ask it anyway (a file writes a class
        word): elsewhere learning it may cost more than the searches it spares."""
        if self.any_fused():
            return True
        if self.fused_possible is None and not self.files_with(*CLASS_WORDS):
            return True
        return self.may_build_fused()


def project_evaluator(
    root: Path, contents: dict[Path, bytes], load: Callable[[Path], Summary | None]
) -> Evaluator:
    """The evaluator of one project's Python files; what it learns holds for every resolution
    of the same files (a trial over the first files collected, then the full one)."""
    from amp_clipfix.analysis.summary import module_name

    python = {path: data for path, data in contents.items() if path.suffix in (".py", ".ipynb")}
    evaluator = Evaluator({}, load, python)
    evaluator.index_modules({module_name(root, path)[0]: path for path in python})
    return evaluator


def resolve(
    root: Path,
    files: dict[Path, FileSites],
    contents: dict[Path, bytes],
    load: Callable[[Path], Summary | None],
    evaluator: Evaluator | None = None,
    trial: bool = False,
) -> dict[Path, FileSites]:
    """The files' sites after the project resolution (files without sites may appear)."""
    if evaluator is None:
        evaluator = project_evaluator(root, contents, load)
    python = evaluator.contents  # a query's reads are noted (queries.Recording)
    found = Resolution(evaluator, files, python).run(trial)
    files = {path: with_config_models(evaluator, file) for path, file in files.items()}
    result = dict(files)
    changed = set(found.sites) | set(found.fits) | {p for p, _, _ in found.drop}
    for path in changed | {p for p, _, _ in found.sharding}:
        file = result.get(path, FileSites(path=path))
        kept = [
            replace(site, sharding=found.sharding.get(key, site.sharding))
            for site in file.sites
            if (key := (site.path, site.span, site.kind)) not in found.drop
        ]
        # `found.sites` holds each (kind, span, entry) once (ResolutionBase.add)
        found_here = {
            (site.kind, site.span, site.entry): site for site in found.sites.get(path, [])
        }
        kept_keys = {(old.kind, old.span, old.entry) for old in kept}
        added = [site for key, site in found_here.items() if key not in kept_keys]
        merged = [
            merge_users(site, found_here.get((site.kind, site.span, site.entry))) for site in kept
        ]
        result[path] = replace(
            file,
            sites=tuple(merged + added),
            fits=tuple(file.fits) + tuple(found.fits.get(path, [])),
        )
    return {path: with_module_classes(evaluator, file) for path, file in result.items()}


def with_module_classes(evaluator: Evaluator, file: FileSites) -> FileSites:
    """Which of the file's classes that own a fused optimizer derive from LightningModule
    through the project's classes: each base is the class it is (an import, a relative or
    aliased one, a module's attribute, a package's re-export), never a class of the same name."""
    owners = {
        site.owner
        for site in file.sites
        if site.kind is SiteKind.FUSED_OPTIMIZER and site.owner is not None
    }
    if not any(info.name in owners and not info.is_lightning_module for info in file.classes):
        return file
    summary = evaluator.summary(file.path)
    if summary is None:
        return file
    classes = []
    for info in file.classes:
        if info.name in owners and not info.is_lightning_module:
            nodes = [node for node in summary.classes() if node.name == info.name]
            derived = any(
                evaluator.derives_from(ClsV(node, summary), names.LIGHTNING_MODULE_CLASSES)
                for node in nodes
            )
            info = replace(info, module_class=derived)
        classes.append(info)
    return replace(file, classes=tuple(classes))


def resolve_module(path: Path, text: str) -> FileSites:
    """The sites of one module resolved as a project of its own (a codemod run alone, by
    `python -m libcst.tool codemod`): the collector's sites, and what the resolution finds by
    value there (which Fabric a clip is on, say)."""
    tree = ast.parse(text)
    sites = collect_sites(path, text, tree)
    summary = summarise(path.parent, path, text, tree)
    data = text.encode("utf-8")
    load: Callable[[Path], Summary | None] = lambda p: summary if p == path else None  # noqa: E731
    return resolve(path.parent, {path: sites}, {path: data}, load).get(path, sites)


def with_config_models(evaluator: Evaluator, file: FileSites) -> FileSites:
    """A config's fits name their model class by dotted name: the project's class it is, or
    None (not known here) when the name is not a class of the project."""
    if not any(isinstance(fit.module_class, ConfigModel) for fit in file.fits):
        return file
    fits = []
    for fit in file.fits:
        if isinstance(fit.module_class, ConfigModel):
            qname = fit.module_class.dotted
            values = evaluator.resolve_qname(qname, ast.Constant(qname), None)  # type: ignore[arg-type]
            keys = {value.key if isinstance(value, ClsV) else None for value in values}
            fits += [replace(fit, module_class=key) for key in sorted(keys, key=str) or [None]]
        else:
            fits.append(fit)
    return replace(file, fits=tuple(fits))


def merge_users(site: Site, other: Site | None) -> Site:
    """The collected site with the users and owners the resolution found for it too."""
    if other is None:
        return site
    users = tuple(sorted(set(site.users) | set(other.users)))
    built_in = tuple(sorted(set(site.built_in) | set(other.built_in)))
    return replace(site, users=users, built_in=built_in)


def trainer_files_needed(resolved: dict[Path, FileSites]) -> set[Path] | None:
    """The files whose Trainers can take part, from a first resolution: those of the Trainers
    a followed `fit` links to a module class with a fused optimizer; None when some such class
    has no followed fit (then every Trainer may train it) or a config holds a fused optimizer."""
    sites = [site for file in resolved.values() for site in file.sites]
    fits = [fit for file in resolved.values() for fit in file.fits]
    needed: set[Path] = set()
    for site in sites:
        if site.kind is not SiteKind.FUSED_OPTIMIZER or is_library(site.path):
            continue
        if site.in_config or site.path.suffix in (".yaml", ".yml"):
            return None  # a config's optimizer: the config's Trainer trains it
        keys = {user for user in site.users if user.is_class}
        if site.owner is not None:
            keys.add(UseId(site.path, site.owner))
        for key in keys:
            entries = [fit.trainer for fit in fits if fit.module_class == key and fit.trainer]
            if not entries and any(user == key for user in site.users):
                return None
            needed.update(entry.path for entry in entries if not entry.cli)
    return needed
