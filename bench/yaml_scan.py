"""Check the YAML key scan and the parse check against the full reader, on every YAML file of
the given trees (the corpora of bench/corpora.py, the fixtures): a file the scan rules out
(config_sites.may_hold_sites) must give no site and no fit when composed, and a text libyaml
parses must be one ruamel composes (sources/yaml.check_parses). Prints the counts and each
disagreement; exit 1 on one.

    python bench/yaml_scan.py /work/corpora/*+* fixtures
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml as pyyaml

from amp_clipfix.analysis.config_sites import ConfigReader, may_hold_sites
from amp_clipfix.sources.text import SourceError
from amp_clipfix.sources.yaml import compose_documents


def main(roots: list[str]) -> int:
    wrong = 0
    for root in roots:
        files = skipped = broken = 0
        for path in sorted(Path(root).rglob("*")):
            if path.suffix not in (".yaml", ".yml") or not path.is_file():
                continue
            text = path.read_bytes().decode("utf-8", "replace")
            files += 1
            try:
                roots_ = compose_documents(text)
            except SourceError:
                roots_ = None
                broken += 1
            try:
                list(pyyaml.parse(text, Loader=pyyaml.CSafeLoader))
                parses = True
            except Exception:  # noqa: BLE001
                parses = False
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
        print(f"{root}: {files} YAML files, {skipped} ruled out by the scan, {broken} broken")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
