"""Check the YAML key scan and the parse check against the full reader, on every YAML file of
the given trees (the corpora of bench/corpora.py, the fixtures): a file the scan rules out
(config_sites.may_hold_sites) must give no site and no fit when composed, and a text libyaml
parses must be one ruamel composes (sources/yaml.check_parses), and libyaml's graph
(sources/yaml.libyaml_documents) must be ruamel's, node by node (kind, tag, value, style,
marks, the node an alias shares). Prints the counts and each disagreement; exit 1 on one.

    python bench/yaml_scan.py /work/corpora/*+* fixtures
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml as pyyaml

from amp_clipfix.analysis.config_sites import ConfigReader, may_hold_sites
from amp_clipfix.sources.text import SourceError
from amp_clipfix.sources.yaml import children, libyaml_documents, ruamel_documents


def main(roots: list[str]) -> int:
    wrong = 0
    for root in roots:
        files = skipped = broken = fast = 0
        for path in sorted(Path(root).rglob("*")):
            if path.suffix not in (".yaml", ".yml") or not path.is_file():
                continue
            text = path.read_bytes().decode("utf-8", "replace")
            files += 1
            try:
                roots_ = ruamel_documents(text)
            except SourceError:
                roots_ = None
                broken += 1
            try:
                list(pyyaml.parse(text, Loader=pyyaml.CSafeLoader))
                parses = True
            except Exception:  # noqa: BLE001
                parses = False
            graph = libyaml_documents(text)
            if graph is not None:
                fast += 1
                if roots_ is None or shape(graph) != shape(roots_):
                    print(f"libyaml's graph is not ruamel's: {path}")
                    wrong += 1
            if parses and roots_ is None:
                print(f"libyaml parses, ruamel does not: {path}")
                wrong += 1
            if may_hold_sites(text):
                continue
            skipped += 1
            if roots_ is None:
                continue
            reader = ConfigReader(path, text)
            for node in roots_:
                reader.read(node)
            if reader.sites or reader.models:
                print(f"scan skipped a file with sites: {path}")
                wrong += 1
        print(
            f"{root}: {files} YAML files, {skipped} ruled out by the scan, {broken} broken, "
            f"{fast} composed by libyaml"
        )
    return 1 if wrong else 0


def shape(roots: list[object]) -> list[tuple[object, ...]]:
    """Every node in walk order: kind, tag, value (a scalar's), style, flow style, marks
    (index, line, column), and the order in
    which it was first reached (an alias reaches an earlier node again)."""
    order: dict[int, int] = {}
    out: list[tuple[object, ...]] = []
    pending = list(reversed(roots))
    while pending:
        node = pending.pop()
        kind = type(node).__name__
        first = order.setdefault(id(node), len(order))
        value = node.value if kind == "ScalarNode" else None  # type: ignore[attr-defined]
        out.append(
            (
                kind,
                str(node.tag),  # type: ignore[attr-defined]
                value,
                getattr(node, "style", None),
                bool(getattr(node, "flow_style", False)),
                *marks(node.start_mark),  # type: ignore[attr-defined]
                *marks(node.end_mark),  # type: ignore[attr-defined]
                first,
            )
        )
        if first == len(order) - 1:
            pending.extend(reversed(list(children(node))))
    return out


def marks(mark: object) -> tuple[int, int, int]:
    return mark.index, mark.line, mark.column  # type: ignore[attr-defined]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
