"""The config keys behind what a run observed: the YAML / JSON files the run read (the monitor's
`config_file` records), searched for the key whose value is the one the run used.

A key matches by its last name and its value: `fused` holding `true` for an optimizer the run
built with `fused=True`; `precision` holding the run's precision (`16` or `16-mixed` for
`16-mixed`); `gradient_clip_val` holding the run's clip value. Nested keys are named by their
path (`model.init_args.fused`, `optimizer.fused`). Both formats are read by ruamel.yaml's
composer (JSON is YAML 1.2), so each key comes with its value's exact token, which a fix can
edit in place (sources/yaml.py `fix_config`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from amp_clipfix.analysis.config_sites import ConfigReader, Scalar
from amp_clipfix.models import Certainty, Site, SiteKind, Span
from amp_clipfix.sources.text import SourceError, read_source
from amp_clipfix.sources.yaml import TAG, compose_documents, mapping_items

Key = tuple[str, Scalar, Span]  # dotted path, the value, its own token's span

CONFIG_READ_SUFFIXES = (".yaml", ".yml", ".json")


class ConfigKeys:
    """The keys of the config files a run read, each file read once."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = sorted({path for path in paths if path.endswith(CONFIG_READ_SUFFIXES)})
        self.read: dict[str, list[Key]] = {}

    def keys(self, path: str) -> list[Key]:
        if path not in self.read:
            try:
                text = read_source(Path(path)).text
                roots = compose_documents(text)
            except (SourceError, OSError):
                text, roots = "", []
            reader = ConfigReader(Path(path), text)
            self.read[path] = [key for root in roots for key in walk(reader, root, "")]
        return self.read[path]

    def sites(self, kind: SiteKind, name: str, observed: object) -> list[Site]:
        """Sites of the keys named `name` whose value is the observed one."""
        found = []
        for path in self.paths:
            for dotted, scalar, span in self.keys(path):
                if dotted.rsplit(".", 1)[-1] != name or not same_value(scalar, observed):
                    continue
                detail = f"{dotted}: {scalar.token} (the config the run read)"
                found.append(
                    Site(
                        kind,
                        Path(path),
                        span,
                        Certainty.KNOWN,
                        detail,
                        value=scalar.token,
                        in_config=True,
                    )
                )
        return found


def walk(reader: ConfigReader, node: Any, prefix: str) -> Iterator[Key]:
    """Every scalar under a key, with its dotted path and its own token's span (after a tag or
    an anchor, as the static YAML sites have it)."""
    kind = type(node).__name__
    if kind == "MappingNode":
        for key, _, value in mapping_items(node):
            yield from walk(reader, value, f"{prefix}.{key}" if prefix else str(key))
    elif kind == "SequenceNode":
        for index, item in enumerate(node.value):
            yield from walk(reader, item, f"{prefix}.{index}")
    elif kind == "ScalarNode" and prefix:
        scalar = reader.scalar(node)
        if scalar is None or scalar.start < 0:
            return
        line, column = reader.position(scalar.start)
        end_line, end_column = reader.position(scalar.end)
        yield prefix, scalar, Span(line, column, end_line, end_column)


def same_value(scalar: Scalar, observed: object) -> bool:
    tag = str(scalar.node.tag)
    text = str(scalar.node.value)
    if isinstance(observed, bool):  # YAML 1.1 words too (`yes`), as PyYAML reads them
        return scalar.boolean is observed
    if isinstance(observed, (int, float)):
        if tag not in (f"{TAG}int", f"{TAG}float"):
            return False
        try:
            return float(text) == float(observed)
        except ValueError:
            return False
    if isinstance(observed, str):  # a precision: "16-mixed" is also written 16 or "16"
        return text == observed or observed.startswith(f"{text}-")
    return False
