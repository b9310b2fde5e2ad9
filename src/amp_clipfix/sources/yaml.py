"""LightningCLI and Hydra YAML configs: their sites, and fixes as in-place token edits.

ruamel.yaml's round-trip loader tells where each value sits; a fix replaces exactly that token
(`true` -> `false`, `16-mixed` -> `bf16-mixed`) in the text, so comments, indentation, quoting,
key order and every other byte stay as they were.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from amp_clipfix.analysis import names
from amp_clipfix.analysis.suppression import suppressed_codes
from amp_clipfix.models import Certainty, FileSites, Site, SiteKind, Span
from amp_clipfix.sources import prefilter
from amp_clipfix.sources.base import Document, Language, Rendered, Stage, VerifyError
from amp_clipfix.sources.text import SourceError, decode_source, encode_text

CONFIG_SUFFIXES = (".yaml", ".yml")
YAML_TRAINER = "yaml:trainer"  # every trainer section of a project configures the one Trainer
OPTIMIZER_NAMES = frozenset(
    {*names.FUSABLE_OPTIMIZERS, *(name.rsplit(".", 1)[-1] for name in names.FUSABLE_OPTIMIZERS)}
)
TOKEN = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^']|'')*'|[^\s,\]\}#]+")
# LightningCLI (jsonargparse) and Hydra (OmegaConf) read YAML 1.1, where yes/on are booleans too.
YAML11_TRUE = frozenset({"yes", "Yes", "YES", "on", "On", "ON"})
YAML11_FALSE = frozenset({"no", "No", "NO", "off", "Off", "OFF"})
BOOLEAN_FLIPS = {
    **{"true": "false", "True": "False", "TRUE": "FALSE"},
    **{"yes": "no", "Yes": "No", "YES": "NO", "on": "off", "On": "Off", "ON": "OFF"},
}


def is_config(path: Path) -> bool:
    return path.suffix in CONFIG_SUFFIXES


def collect_config_sites(path: Path, text: str) -> FileSites:
    """The sites of one YAML file (every document in it)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        documents = list(YAML(typ="rt").load_all(text))
    except YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{mark.line + 1}:{mark.column + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or "invalid YAML"
        raise SourceError(f"{where}cannot parse YAML: {problem}") from None
    lines = text.splitlines()
    reader = ConfigReader(path, lines)
    for document in documents:
        reader.visit(document, key=None, trainer=False)
    return FileSites(path=path, sites=tuple(reader.sites))


class ConfigReader:
    """Walks the loaded YAML and records sites at the positions ruamel reports."""

    def __init__(self, path: Path, lines: Sequence[str]) -> None:
        self.path = path
        self.lines = lines
        self.sites: list[Site] = []

    def visit(self, node: object, key: str | None, trainer: bool) -> None:
        if isinstance(node, dict):
            target = str(node.get("class_path") or node.get("_target_") or "")
            if target in OPTIMIZER_NAMES or (key == "optimizer" and not target):
                self.optimizer(node, target or "optimizer")
            is_trainer = key == "trainer" or target in names.TRAINER_CLASSES
            if is_trainer:
                self.trainer(node)
            for child_key, child in node.items():
                self.visit(child, str(child_key), trainer or is_trainer)
        elif isinstance(node, list):
            for child in node:
                self.visit(child, key, trainer)

    def optimizer(self, node: dict, name: str) -> None:
        """`class_path` + `init_args.fused` (LightningCLI), `_target_` + `fused` (Hydra, also
        with `_partial_`), or a flat `optimizer:` whose class is fixed in code."""
        holder = init_args(node)
        if "fused" not in holder:
            return
        value = holder["fused"]
        value = True if value in YAML11_TRUE else False if value in YAML11_FALSE else value
        detail = f"{name} fused: {self.token(holder, 'fused')}"
        if value is True:
            self.add(SiteKind.FUSED_OPTIMIZER, holder, "fused", Certainty.KNOWN, detail, "True")
        elif value not in (False, None):
            self.add(SiteKind.FUSED_OPTIMIZER, holder, "fused", Certainty.RUNTIME, detail)

    def trainer(self, node: dict) -> None:
        if "precision" in node:
            self.precision(node, "precision", fixable=True)
        for plugin in self.plugins(node.get("plugins")):
            holder = init_args(plugin)
            if "precision" in holder:
                self.precision(holder, "precision", fixable=False)
        if "gradient_clip_val" in node:
            value = node["gradient_clip_val"]
            detail = f"trainer gradient_clip_val: {self.token(node, 'gradient_clip_val')}"
            if is_interpolation(value):
                self.add(
                    SiteKind.TRAINER_CLIP, node, "gradient_clip_val", Certainty.RUNTIME, detail
                )
            elif isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
                self.add(
                    SiteKind.TRAINER_CLIP,
                    node,
                    "gradient_clip_val",
                    Certainty.KNOWN,
                    detail,
                    str(value),
                    fixable=False,
                )

    def plugins(self, node: object) -> Iterator[dict]:
        """Precision plugin configs (`class_path` / `_target_` naming a MixedPrecision)."""
        items = node if isinstance(node, list) else [node]
        for item in items:
            if isinstance(item, dict):
                target = str(item.get("class_path") or item.get("_target_") or "")
                plugin = names.plugin_scaler_index(target)
                if plugin is not None and plugin[0] == "trainer":
                    yield item

    def precision(self, node: dict, key: str, fixable: bool) -> None:
        value = node[key]
        detail = f"trainer precision: {self.token(node, key)}"
        if is_interpolation(value):
            self.add(SiteKind.TRAINER_PRECISION, node, key, Certainty.RUNTIME, detail)
        elif names.is_mixed_precision(str(value)):
            self.add(
                SiteKind.TRAINER_PRECISION,
                node,
                key,
                Certainty.KNOWN,
                detail,
                str(value),
                fixable=fixable,
            )

    def token(self, node: dict, key: str) -> str:
        line, column = node.lc.value(key)  # type: ignore[attr-defined]
        match = TOKEN.match(self.lines[line], column)
        return match.group() if match else ""

    def add(
        self,
        kind: SiteKind,
        node: dict,
        key: str,
        certainty: Certainty,
        detail: str,
        value: str | None = None,
        fixable: bool | None = None,
    ) -> None:
        line, column = node.lc.value(key)  # type: ignore[attr-defined]
        token = self.token(node, key)
        span = Span(line + 1, column, line + 1, column + len(token))
        trainer_site = kind in (SiteKind.TRAINER_PRECISION, SiteKind.TRAINER_CLIP)
        self.sites.append(
            Site(
                kind=kind,
                path=self.path,
                span=span,
                certainty=certainty,
                detail=detail,
                value=value,
                fixable=certainty is Certainty.KNOWN if fixable is None else fixable,
                entry=YAML_TRAINER if trainer_site else None,
                in_config=True,
                suppressed_codes=suppressions(self.lines[line]),
            )
        )


def init_args(node: dict) -> dict:
    """Where a config's arguments live: `init_args` (LightningCLI) or the node itself (Hydra)."""
    arguments = node.get("init_args")
    return arguments if isinstance(arguments, dict) else node


def is_interpolation(value: object) -> bool:
    """`${...}` (Hydra / OmegaConf) is decided when the config is composed."""
    return isinstance(value, str) and "${" in value


def suppressions(line: str) -> frozenset[str] | None:
    comment = line.find("#")
    codes = suppressed_codes(line[comment:]) if comment >= 0 else frozenset()
    return codes or None


def fix_config(text: str, targets: Sequence[Site]) -> str:
    """Replace each target's token: `fused` booleans flip, precisions become `bf16-mixed`."""
    lines = text.splitlines(keepends=True)
    for site in sorted(targets, key=lambda s: (s.span.line, s.span.column), reverse=True):
        line = lines[site.span.line - 1]
        token = line[site.span.column : site.span.end_column]
        lines[site.span.line - 1] = (
            line[: site.span.column] + replacement(site, token) + line[site.span.end_column :]
        )
    return "".join(lines)


def replacement(site: Site, token: str) -> str:
    if site.kind is SiteKind.FUSED_OPTIMIZER:
        return BOOLEAN_FLIPS.get(token, "false")
    if token[:1] in "\"'":
        return f"{token[0]}bf16-mixed{token[0]}"
    return "bf16-mixed"


class YamlSource:
    """LightningCLI and Hydra configs: read for their sites, fixed by exact token edits."""

    language = Language.YAML

    def handles(self, path: Path) -> bool:
        return is_config(path)

    def searchable(self, path: Path, data: bytes) -> bytes:
        return data

    def prefilter(self, stage: Stage) -> Callable[[bytes], bool]:
        if stage is Stage.FUSED_OPTIMIZER:
            return prefilter.may_configure_fused_optimizer
        return prefilter.may_configure_trainer_in_config

    def load(self, path: Path, data: bytes) -> Document:
        source = decode_source(path, data)
        return Document(source, Language.YAML, source.text, self)

    def locate(self, document: Document, line: int) -> tuple[int | None, int]:
        return None, line

    def render(self, document: Document, new_text: str) -> Rendered:
        try:
            collect_config_sites(document.path, new_text)
            return Rendered(encode_text(document.source, new_text))
        except SourceError as error:
            raise VerifyError(f"the fixed config does not parse: {error}") from None
