"""Configuration documents written in Python: the dict literal given to `OmegaConf.create(...)`
or `DictConfig(...)` is read as a YAML config is (analysis/config_sites.py), so a config value
is a site whatever file holds it.

A mapping under `trainer:` or whose `_target_` names a Trainer class configures the config
Trainer (`names.CLI_TRAINER`: what `hydra.utils.instantiate(cfg.trainer)` builds): its
`precision` and `gradient_clip_val` are sites; a mapping whose `_target_` names a fusable
optimizer (or under `optimizer:` without one) with `fused` is a fused optimizer of the config
(what `instantiate(cfg.optimizer, params=...)` builds); `model:` with `_target_` names the class
the config Trainer fits. Syntax only, as the YAML reader: keys are string literals, nested
mappings are dict literals or `dict(...)` calls; a value that is not a literal is decided at
run time (a site of certainty runtime), a document given by name is not read.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from amp_clipfix.analysis import names
from amp_clipfix.analysis.ast_syntax import literal_value
from amp_clipfix.models import Certainty, EntryId, Site, SiteKind, Span


class CallCollector(Protocol):
    """What the reader asks of the collector visiting the call (analysis/collect_calls.py)."""

    path: Path
    source: Any
    sites: list[Site]
    entry_calls: list[EntryId]

    def code(self, node: ast.AST, sole_argument: bool = False) -> str: ...

    def span(self, node: ast.AST) -> Span: ...

    def add_value(
        self,
        kind: SiteKind,
        node: ast.expr,
        detail: str,
        counts: Callable[[str], bool],
        fixable: bool = True,
    ) -> None: ...


CONFIG_DOCUMENTS = names.of_kind(names.Kind.CONFIG_DOCUMENT)
# `torch.optim.AdamW` and `AdamW` (a `_target_` is a dotted path; Hydra also takes a class name
# its config imports, which the YAML reader accepts too).
OPTIMIZER_NAMES = frozenset(
    {*names.FUSABLE_OPTIMIZERS, *(name.rsplit(".", 1)[-1] for name in names.FUSABLE_OPTIMIZERS)}
)


def mapping_items(node: ast.AST) -> list[tuple[str, ast.expr]] | None:
    """(key, value) of a dict literal with string keys, or of `dict(key=value)`; None for
    anything else (a `**spread` in it leaves the keys it shows)."""
    if isinstance(node, ast.Dict):
        return [
            (key.value, value)
            for key, value in zip(node.keys, node.values, strict=True)
            if isinstance(key, ast.Constant) and isinstance(key.value, str)
        ]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return [(k.arg, k.value) for k in node.keywords if k.arg is not None]
    return None


def walk(root: ast.AST) -> Iterator[tuple[str | None, dict[str, ast.expr]]]:
    """Every mapping of a document with the key it is under."""
    pending: list[tuple[str | None, ast.AST]] = [(None, root)]
    while pending:
        key, node = pending.pop()
        items = mapping_items(node)
        if items is None:
            if isinstance(node, (ast.List, ast.Tuple)):
                pending.extend((key, element) for element in reversed(node.elts))
            continue
        yield key, dict(items)
        pending.extend((name, value) for name, value in reversed(items))


def target(mapping: dict[str, ast.expr]) -> str:
    node = mapping.get("_target_") or mapping.get("class_path")
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def trainer_mappings(document: ast.AST) -> Iterator[dict[str, ast.expr]]:
    """The mappings of a document that configure the config Trainer."""
    for key, mapping in walk(document):
        if key == "trainer" or target(mapping) in names.TRAINER_CLASSES:
            yield mapping


def model_targets(document: ast.AST) -> list[str]:
    """The dotted names of the model classes a document names (`model: _target_: ...`)."""
    return [target(m) for key, m in walk(document) if key == "model" and target(m)]


def collect_document(
    collector: CallCollector, call: ast.Call, clips: Callable[[str], bool]
) -> list[str]:
    """The sites of the document a config call is given (its first argument); returns the
    dotted names of the model classes it names."""
    if not call.args:
        return []
    name = collector.code(call.func)
    models: list[str] = []
    for key, mapping in walk(call.args[0]):
        kind = target(mapping)
        if kind in OPTIMIZER_NAMES or (key == "optimizer" and not kind):
            fused = mapping.get("fused")
            if fused is not None:
                where = key or kind.rsplit(".", 1)[-1]
                detail = f"{name}({{... {where}: fused: {collector.code(fused)}}})"
                add_fused(collector, fused, detail)
        if key == "trainer" or kind in names.TRAINER_CLASSES:
            trainer(collector, mapping, name, clips)
        if key == "model" and kind and kind not in models:
            models.append(kind)
    return models


def trainer(
    collector: CallCollector,
    mapping: dict[str, ast.expr],
    name: str,
    clips: Callable[[str], bool],
) -> None:
    collector.entry_calls.append(names.CLI_TRAINER)
    try:
        precision = mapping.get("precision")
        if precision is not None:
            detail = f"{name}({{... trainer: precision: {collector.code(precision)}}})"
            add_value(collector, SiteKind.TRAINER_PRECISION, precision, detail)
        clip = mapping.get("gradient_clip_val")
        if clip is not None:
            detail = f"{name}({{... trainer: gradient_clip_val: {collector.code(clip)}}})"
            collector.add_value(SiteKind.TRAINER_CLIP, clip, detail, clips, fixable=False)
    finally:
        collector.entry_calls.pop()


def add_value(collector: CallCollector, kind: SiteKind, node: ast.expr, detail: str) -> None:
    collector.add_value(kind, node, detail, names.is_mixed_precision)


def add_fused(collector: CallCollector, node: ast.expr, detail: str) -> None:
    """A fused optimizer of the config: no class owns it (as in a YAML config), the Trainer
    the config builds trains it."""
    literal = literal_value(node, collector.source)
    if literal not in ("True", None):
        return
    certainty = Certainty.KNOWN if literal == "True" else Certainty.RUNTIME
    collector.sites.append(
        Site(
            kind=SiteKind.FUSED_OPTIMIZER,
            path=collector.path,
            span=collector.span(node),
            certainty=certainty,
            detail=detail,
            value=literal,
            fixable=literal == "True",
            in_config=True,
        )
    )
