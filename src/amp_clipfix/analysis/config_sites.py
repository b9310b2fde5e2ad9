"""The sites of LightningCLI and Hydra YAML configs, read from the composed node graph
(sources/yaml.py) at the exact position of each scalar token.

A value reached through an alias or a merge key (`<<: *base`) is shared: rewriting it would change
every place that uses it, so such a site is reported but never rewritten. The graph is walked once
per node and role, so an alias bomb costs as much as its text.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from collections.abc import Mapping as AnyMapping
from pathlib import Path
from typing import Any, TypeAlias

from amp_clipfix.analysis import names
from amp_clipfix.analysis.config_scan import FALSE_WORDS, NULL_WORDS, may_hold_sites, positive
from amp_clipfix.analysis.lightning_api import CLIP_VAL_ARGUMENT, TRAINER_CLIP_ARGUMENTS
from amp_clipfix.analysis.suppression import suppressed_codes
from amp_clipfix.models import Certainty, ConfigModel, FileSites, FitCall, Site, SiteKind, Span
from amp_clipfix.patterns import lazy
from amp_clipfix.records import record
from amp_clipfix.sources.text import SourceError, line_starts
from amp_clipfix.sources.yaml import TAG, Mapping, check_parses, compose_documents, shared_nodes

OPTIMIZER_NAMES = frozenset(
    {*names.FUSABLE_OPTIMIZERS, *(name.rsplit(".", 1)[-1] for name in names.FUSABLE_OPTIMIZERS)}
)


# LightningCLI (jsonargparse) and Hydra (OmegaConf) read YAML 1.1, where yes/on are booleans too.
TRUE_WORDS = frozenset({"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})


STRING_TAGS = frozenset({"!", "!!str", f"!<{TAG}str>"})


BOOL_TAGS = frozenset({"!!bool", f"!<{TAG}bool>"})


NUMBER_TAGS = frozenset({f"{TAG}int", f"{TAG}float"})


PROPERTY = lazy(r"(?:[&!][^\s]*[ \t\r\n]*)+")


SHARED = "shared through an anchor or merge key: fix it by hand"


@record(frozen=True)
class Setting:
    """One place that sets a key of the CLI's Trainer: its site, its literal (None: decided at
    run time) and where its own token may be rewritten (None: shared, or not a plain token)."""

    site: Site
    value: str | None
    token: tuple[Path, Span] | None


# The trainer keys LightningCLI's Trainer is asked for (cli_config.cli_trainer, by ACF009):
# read from the composition that gives a config's sites, so the file is not composed again.
SETTING_KEYS = TRAINER_CLIP_ARGUMENTS
# Each such key's values in a config's trainer sections (trainer_values), for the keys its
# text holds; None: not read with the sites (the scan ruled the file out, or the cache).
Settings: TypeAlias = AnyMapping[str, tuple[Setting | None, ...]] | None


@record(frozen=True)
class ConfigRead:
    """What one read of a YAML config gives: its sites and its trainer settings."""

    sites: FileSites
    settings: Settings = None


def collect_config_sites(path: Path, text: str) -> FileSites:
    """The sites of one YAML file (every document in it)."""
    return read_config(path, text).sites


def read_config(path: Path, text: str) -> ConfigRead:
    """The sites of one YAML file and, from the same composition, the values of SETTING_KEYS
    in its trainer sections. A file the key scan rules out is not composed, only checked to
    parse (a broken config is reported whatever it holds)."""
    if not may_hold_sites(text):
        check_parses(text)
        return ConfigRead(FileSites(path=path))
    roots = compose_documents(text)
    reader = ConfigReader(path, text)
    for root in roots:
        reader.read(root)
    fits = tuple(FitCall(names.CLI_TRAINER, ConfigModel(name)) for name in reader.models)
    settings = settings_from(path, text, SETTING_KEYS, roots)
    return ConfigRead(FileSites(path=path, sites=tuple(reader.sites), fits=fits), settings)


class ConfigReader:
    """Walks the composed YAML and records sites at the exact position of each scalar token."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text
        self.line_starts = line_starts(text)
        self.sites: list[Site] = []
        self.shared: set[int] = set()
        self.recorded: set[tuple[SiteKind, int]] = set()
        self.models: list[str] = []  # dotted names of the model classes the config builds

    def read(self, root: Any) -> None:
        self.shared = shared_nodes([root], self.text)
        visited: set[tuple[int, str | None]] = set()
        pending: list[tuple[Any, str | None]] = [(root, None)]
        while pending:
            node, key = pending.pop()
            role = key if key in ("optimizer", "trainer") else None
            if (id(node), role) in visited:
                continue
            visited.add((id(node), role))
            mapping = Mapping.of(node)
            if mapping is not None:
                self.visit_mapping(mapping, key)
                pending.extend((value, name) for name, (_, value) in mapping.items.items())
            elif type(node).__name__ == "SequenceNode":
                pending.extend((child, key) for child in node.value)

    def visit_mapping(self, mapping: Mapping, key: str | None) -> None:
        target = mapping.scalar("class_path") or mapping.scalar("_target_")
        if target in OPTIMIZER_NAMES or (key == "optimizer" and not target):
            self.optimizer(mapping, target or "optimizer")
        if key == "trainer" or target in names.TRAINER_CLASSES:
            self.trainer(mapping)
        if key == "model" and target and target not in self.models:
            self.models.append(target)

    def optimizer(self, node: Mapping, name: str) -> None:
        """`class_path` + `init_args.fused` (LightningCLI), `_target_` + `fused` (Hydra, also
        with `_partial_`), or a flat `optimizer:` whose class is fixed in code; its arguments
        may be nested under `kwargs:` (`getattr(torch.optim, cfg["type"])(**cfg["kwargs"])`)."""
        holder = init_args(node)
        nested = Mapping.of(holder.items.get("kwargs", (None, None))[1])
        if "fused" not in holder.items and nested is not None:
            holder = nested
        if "fused" not in holder.items:
            return
        key, value = holder.items["fused"]
        scalar = self.scalar(value)
        shape = "a list" if type(value).__name__ == "SequenceNode" else "a mapping"
        detail = f"{name} fused: {scalar.token if scalar else f'({shape})'}"
        if scalar is None or scalar.interpolated:
            self.add(SiteKind.FUSED_OPTIMIZER, key, value, scalar, Certainty.RUNTIME, detail)
        elif scalar.boolean is True:
            self.add(SiteKind.FUSED_OPTIMIZER, key, value, scalar, Certainty.KNOWN, detail, "True")
        elif scalar.boolean is None and not scalar.null:
            self.add(SiteKind.FUSED_OPTIMIZER, key, value, scalar, Certainty.RUNTIME, detail)

    def trainer(self, node: Mapping) -> None:
        if "precision" in node.items:
            self.precision(node, fixable=True)
        plugins = node.items.get("plugins", (None, None))[1]
        for plugin in self.plugins(plugins):
            holder = init_args(plugin)
            if "precision" in holder.items:
                self.precision(holder, fixable=False)
        if "gradient_clip_val" in node.items:
            self.clip(*node.items["gradient_clip_val"])

    def clip(self, key: Any, value: Any) -> None:
        scalar = self.scalar(value)
        if scalar is None:
            return
        detail = f"trainer gradient_clip_val: {scalar.token}"
        if scalar.interpolated:
            self.add(SiteKind.TRAINER_CLIP, key, value, scalar, Certainty.RUNTIME, detail)
        elif value.tag in NUMBER_TAGS and positive(value.value):
            self.add(
                SiteKind.TRAINER_CLIP,
                key,
                value,
                scalar,
                Certainty.KNOWN,
                detail,
                scalar.token,
                fixable=False,
            )

    def plugins(self, node: Any) -> Iterator[Mapping]:
        """Precision plugin configs (`class_path` / `_target_` naming a MixedPrecision)."""
        items = node.value if type(node).__name__ == "SequenceNode" else [node]
        for item in items:
            mapping = Mapping.of(item)
            if mapping is not None:
                target = mapping.scalar("class_path") or mapping.scalar("_target_")
                plugin = names.plugin_scaler_index(target)
                if plugin is not None and plugin[0] == "trainer":
                    yield mapping

    def precision(self, node: Mapping, fixable: bool) -> None:
        key, value = node.items["precision"]
        scalar = self.scalar(value)
        if scalar is None:
            return
        detail = f"trainer precision: {scalar.token}"
        if scalar.interpolated:
            self.add(SiteKind.TRAINER_PRECISION, key, value, scalar, Certainty.RUNTIME, detail)
        elif names.is_mixed_precision(value.value):
            self.add(
                SiteKind.TRAINER_PRECISION,
                key,
                value,
                scalar,
                Certainty.KNOWN,
                detail,
                value.value,
                fixable=fixable and scalar.tag in ("", *STRING_TAGS),
            )

    def scalar(self, node: Any) -> Scalar | None:
        """Where a scalar's own token lies (after its tag and anchor), or None for a list or a
        mapping."""
        if type(node).__name__ != "ScalarNode":
            return None
        start, end = node.start_mark.index, node.end_mark.index
        properties = PROPERTY.match(self.text, start, end)
        tag = ""
        if properties:
            tag = next((p for p in properties.group().split() if p.startswith("!")), "")
            start = properties.end()
        if node.style in ("|", ">"):
            start, end = self.block_content(start, end, node.value)
        token = self.text[start:end] if start >= 0 else ""
        return Scalar(node, start, end, token, tag)

    def block_content(self, start: int, end: int, value: str) -> tuple[int, int]:
        """The one content line of a block scalar (`>-` then `  16-mixed`); (-1, -1) when the
        value spans several lines (no value this tool rewrites does)."""
        text = value.strip()
        if not text or "\n" in text:
            return -1, -1
        line = bisect.bisect_right(self.line_starts, start)
        for first in self.line_starts[line:]:
            found = self.text.find(text, first, end)
            if found >= 0:
                return found, found + len(text)
        return -1, -1

    def position(self, index: int) -> tuple[int, int]:
        """1-based line and 0-based column of a character offset."""
        line = bisect.bisect_right(self.line_starts, index)
        return line, index - self.line_starts[line - 1]

    def add(
        self,
        kind: SiteKind,
        key: Any,
        value: Any,
        scalar: Scalar | None,
        certainty: Certainty,
        detail: str,
        literal: str | None = None,
        fixable: bool | None = None,
    ) -> None:
        start, end = (scalar.start, scalar.end) if scalar and scalar.start >= 0 else (-1, -1)
        if start < 0:
            start = end = value.start_mark.index
            fixable = False
        if (kind, start) in self.recorded:
            return  # the same token reached again under another role
        self.recorded.add((kind, start))
        if id(value) in self.shared:
            detail, fixable = f"{detail} ({SHARED})", False
        line, column = self.position(start)
        end_line, end_column = self.position(end)
        key_line = self.position(key.start_mark.index)[0]
        comments = {self.line_text(line), self.line_text(key_line)}
        trainer_site = kind in (SiteKind.TRAINER_PRECISION, SiteKind.TRAINER_CLIP)
        self.sites.append(
            Site(
                kind=kind,
                path=self.path,
                span=Span(line, column, end_line, end_column),
                certainty=certainty,
                detail=detail,
                value=literal,
                fixable=certainty is Certainty.KNOWN if fixable is None else fixable,
                entry=names.CLI_TRAINER if trainer_site else None,
                in_config=True,
                suppressed_codes=suppressions(comments),
            )
        )

    def line_text(self, line: int) -> str:
        start = self.line_starts[line - 1]
        end = self.line_starts[line] if line < len(self.line_starts) else len(self.text)
        return self.text[start:end]


@record(frozen=True)
class Scalar:
    """A scalar node, its own token's offsets in the text and its explicit tag (if any)."""

    node: Any
    start: int
    end: int
    token: str
    tag: str

    @property
    def interpolated(self) -> bool:
        return is_interpolation(self.node.value)

    @property
    def plain(self) -> bool:
        return self.node.style is None and self.tag in ("", *BOOL_TAGS)

    @property
    def boolean(self) -> bool | None:
        """True/False for a boolean (YAML 1.1 words too, with or without `!!bool`)."""
        if not self.plain:
            return None
        if self.node.value in TRUE_WORDS:
            return True
        return False if self.node.value in FALSE_WORDS else None

    @property
    def null(self) -> bool:
        return self.plain and not self.tag and self.node.value in NULL_WORDS


def init_args(node: Mapping) -> Mapping:
    """Where a config's arguments live: `init_args` (LightningCLI) or the node itself (Hydra)."""
    arguments = Mapping.of(node.items.get("init_args", (None, None))[1])
    return arguments if arguments is not None else node


def is_interpolation(value: object) -> bool:
    """`${...}` (Hydra / OmegaConf) is decided when the config is composed."""
    return isinstance(value, str) and "${" in value


def suppressions(lines: set[str]) -> frozenset[str] | None:
    codes: set[str] = set()
    for line in lines:
        comment = line.find("#")
        if comment >= 0:
            codes |= suppressed_codes(line[comment:])
    return frozenset(codes) or None


def config_settings(
    path: Path, text: str, keys: tuple[str, ...]
) -> dict[str, tuple[Setting | None, ...]]:
    """trainer_values of each of `keys` the text holds, from one composition (none when the
    config does not compose: the collection reports it)."""
    try:
        roots = compose_documents(text)
    except SourceError:
        return {key: () for key in keys if key in text}
    return settings_from(path, text, keys, roots)


def settings_from(
    path: Path, text: str, keys: tuple[str, ...], roots: list[Any]
) -> dict[str, tuple[Setting | None, ...]]:
    return {key: tuple(trainer_values(path, text, key, roots)) for key in keys if key in text}


def trainer_values(path: Path, text: str, key: str, roots: list[Any]) -> list[Setting | None]:
    """Each value of `key` in the trainer sections of one composed YAML config (the same walk
    as the reader: `trainer:`, or a mapping whose `_target_` / `class_path` is a Trainer), at
    its own token; None for a value that sets nothing (0, null)."""
    reader = ConfigReader(path, text)
    found: list[Setting | None] = []
    for root in roots:
        shared = shared_nodes([root], text)
        for mapping in trainer_mappings(root):
            if key not in mapping.items:
                continue
            key_node, value = mapping.items[key]
            scalar = reader.scalar(value)
            if scalar is None or scalar.start < 0:
                continue
            line, column = reader.position(scalar.start)
            end_line, end_column = reader.position(scalar.end)
            span = Span(line, column, end_line, end_column)
            written = value.value
            if scalar.interpolated:
                literal, certainty = None, Certainty.RUNTIME
            elif key == CLIP_VAL_ARGUMENT and not positive(written):
                found.append(None)
                continue
            else:
                literal, certainty = written, Certainty.KNOWN
            comments = {
                reader.line_text(line),
                reader.line_text(reader.position(key_node.start_mark.index)[0]),
            }
            site = Site(
                SiteKind.TRAINER_CLIP,
                path,
                span,
                certainty,
                f"trainer {key}: {scalar.token}",
                literal,
                fixable=False,
                entry=names.CLI_TRAINER,
                in_config=True,
                suppressed_codes=suppressions(comments),
            )
            plain = scalar.tag == "" and id(value) not in shared
            found.append(Setting(site, literal, (path, span) if plain else None))
    return found


def trainer_mappings(root: Any) -> Iterator[Mapping]:
    """The trainer mappings of a composed document (each node once)."""
    seen: set[int] = set()
    pending: list[tuple[Any, str | None]] = [(root, None)]
    while pending:
        node, key = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        mapping = Mapping.of(node)
        if mapping is not None:
            target = mapping.scalar("class_path") or mapping.scalar("_target_")
            if key == "trainer" or target in names.TRAINER_CLASSES:
                yield mapping
            pending.extend((value, name) for name, (_, value) in mapping.items.items())
        elif type(node).__name__ == "SequenceNode":
            pending.extend((child, key) for child in node.value)


def precision_lines_beside(text: str, arguments: frozenset[str], lines: set[int]) -> dict[int, str]:
    """Of the `precision` values at `lines`, those of trainer sections that also set one of
    `arguments`, each with the first (by name) it sets: a section that passes an argument its
    release lacks runs on another release. Composed only when a block mapping's text shows
    such a key beside one of them (a merged or flow-style one stays unseen, as before); raises
    SourceError when the config does not compose."""
    rows = text.splitlines()
    if not any(arguments.intersection(block_keys(rows, line)) for line in lines):
        return {}
    found: dict[int, str] = {}
    for root in compose_documents(text):
        for mapping in trainer_mappings(root):
            present = arguments.intersection(mapping.items)
            if present and "precision" in mapping.items:
                found[mapping.items["precision"][1].start_mark.line + 1] = min(present)
    return found


BLOCK_KEY = lazy(r"""(?:- +)*["']?([\w-]+)["']?[ \t]*:""")


def block_keys(rows: list[str], line: int) -> set[str]:
    """The keys written in the block mapping that holds the key of `line` (1-based), read by
    indentation: the lines above and below it whose key starts at its key's column, up to a
    line less indented."""
    row = rows[line - 1].lstrip(" ") if 0 < line <= len(rows) else ""
    match = BLOCK_KEY.match(row)
    if match is None:
        return set()
    column = len(rows[line - 1]) - len(row.lstrip("- "))  # past a sequence item's dashes
    keys = {match.group(1)}
    # a sequence item's first line starts its mapping: nothing above it is of the block
    for step in (1,) if row.startswith("-") else (-1, 1):
        index = line - 1 + step
        while 0 <= index < len(rows):
            text = rows[index].lstrip(" ")
            indent = len(rows[index]) - len(text)
            index += step
            if not text or text.startswith("#") or indent > column:
                continue
            key = BLOCK_KEY.match(text)
            if indent < column:
                # above: the first line of the sequence item this block is
                opens = step < 0 and len(rows[index - step]) - len(text.lstrip("- ")) == column
                if opens and key is not None:
                    keys.add(key.group(1))
                break
            if key is not None:
                keys.add(key.group(1))
    return keys
