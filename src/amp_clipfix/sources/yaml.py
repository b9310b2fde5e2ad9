"""LightningCLI and Hydra YAML configs: composed into nodes, and fixed as in-place token edits
(their sites are read in analysis/config_sites.py).

The file is *composed* by ruamel.yaml (a graph of nodes with their start and end marks, before any
value is constructed), so a fix replaces exactly the scalar's own token: after a tag (`!!bool`) or
an anchor (`&p`), inside a block scalar (`>-`), a quoted string or a flow collection. Comments,
indentation, quoting, key order and every other byte stay as they were.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from amp_clipfix.patterns import lazy
from amp_clipfix.records import record
from amp_clipfix.sources import prefilter
from amp_clipfix.sources.base import Document, Language, Rendered, Stage, VerifyError
from amp_clipfix.sources.text import SourceError, decode_source, encode_text, line_starts

if TYPE_CHECKING:
    from amp_clipfix.models import Site

CONFIG_SUFFIXES = (".yaml", ".yml")
BOOLEAN_FLIPS = {
    **{"true": "false", "True": "False", "TRUE": "FALSE"},
    **{"yes": "no", "Yes": "No", "YES": "NO", "on": "off", "On": "Off", "ON": "OFF"},
}
TAG = "tag:yaml.org,2002:"


def has_config_suffix(path: Path) -> bool:
    return path.suffix in CONFIG_SUFFIXES


def compose_documents(text: str) -> list[Any]:
    """The node graph of every document; a YAML error is one line."""
    roots = libyaml_documents(text)
    return roots if roots is not None else ruamel_documents(text)


def ruamel_documents(text: str) -> list[Any]:
    """compose_documents by ruamel.yaml's round-trip composer (pure Python)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        return [root for root in YAML(typ="rt").compose_all(text) if root is not None]
    except YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{mark.line + 1}:{mark.column + 1}: " if mark is not None else ""
        problem = getattr(error, "problem", None) or "invalid YAML"
        raise SourceError(f"{where}cannot parse YAML: {problem}") from None
    except RecursionError:
        raise SourceError("cannot parse YAML: nested too deeply") from None


# Text that may nest deeper than ruamel's recursive composer goes (it then fails: "nested too
# deeply"), where libyaml would not: checked by ruamel itself. A line indented 64 deep (a
# search for a line break with a literal first character; the text's first line apart), or
# eight brackets in a row (found from each bracket: `too_deep` looks only when there are few).
DEEP_LINE = lazy(r"[ \t-]{64}")
DEEP_INDENT = lazy(r"\n[ \t-]{64}")
MAX_BRACKETS = 256
BRACKET_RUN = 8


def check_parses(text: str) -> None:
    """Raise compose_documents' SourceError when the text does not compose, without building
    its nodes where libyaml (PyYAML's C parser) is there: a text libyaml parses is one ruamel
    composes (tests/test_yaml_scan.py checks this on every config of the test corpora and
    fixtures); on libyaml's error, or without it, ruamel composes it and says why."""
    try:
        from yaml import YAMLError
        from yaml.cyaml import CParser
    except ImportError:
        compose_documents(text)
        return
    if too_deep(text):
        compose_documents(text)
        return
    try:  # libyaml's events are counted in C, never made Python objects (a third the time)
        CParser(text).raw_parse()
    except (YAMLError, RecursionError, MemoryError):
        compose_documents(text)


# Text libyaml reads otherwise than ruamel's round trip: a BOM or a line break other than LF
# and CRLF moves the marks, a `%YAML` directive changes the tags ruamel resolves (and a text
# without a final line break, an empty value, a folded scalar: libyaml_documents).
LIBYAML_AVOIDS = ("\ufeff", "\x85", "\u2028", "\u2029", "%YAML")


def libyaml_documents(text: str) -> list[Any] | None:
    """compose_documents' graph, composed by libyaml (PyYAML's C parser and composer, about
    25 times faster than ruamel's) with ruamel's tags: the same node kinds, values, tags,
    styles and marks, and the same node for an alias. None where it may differ, or cannot
    say why a text does not parse: ruamel composes it then. Checked node by node against
    ruamel on every YAML file of the corpora and fixtures (bench/yaml_scan.py)."""
    loader = libyaml_loader()
    if loader is None or any(part in text for part in LIBYAML_AVOIDS) or too_deep(text):
        return None
    ended = text.endswith("\n")
    if not ended and "\r" in text:
        return None  # a line break that is no LF: counted by ruamel (at_end counts LFs)
    try:  # without a final line break libyaml ends the last line there, ruamel does not
        composed = loader.compose_all(text if ended else text + "\n")
        roots = [root for root in composed if root is not None]
    except Exception:  # noqa: BLE001 - ruamel composes it and says why
        return None
    plain: set[int] | None = None  # made at the first empty value (a walk of every node)
    for node in each_node(roots):
        if type(node).__name__ == "ScalarNode":
            if node.style == ">" or (node.style == "|" and not ended):
                return None  # ruamel marks each fold of a folded scalar (`\x07`); a literal
                # one's value keeps the line break added here
            if node.start_mark.index == node.end_mark.index:
                if plain is None:
                    plain = plain_empty_values(roots, text if ended else text + "\n")
                if id(node) not in plain:
                    return None  # an empty value ruamel marks elsewhere (plain_empty_values)
            if not node.style:
                node.style = None  # plain, as ruamel says it
        if not ended:
            at_end(node, text)
    return roots


# Between a block mapping's key and the token after its empty value (`initial_checkpoint_dir:`
# alone on its line): the `:` ends its line (no comment after it), then blank and comment lines,
# then the next token's indentation.
EMPTY_VALUE_GAP = lazy(r"[ ]*:(?P<value>)[ ]*\r?\n(?:[ ]*(?:#[^\r\n]*)?\r?\n)*[ ]*")


def plain_empty_values(roots: Sequence[Any], text: str) -> set[int]:
    """The empty values of a block mapping whose `:` ends its line (EMPTY_VALUE_GAP), marked as
    ruamel marks them: where the next token starts (libyaml marks them right after the `:`).
    ruamel marks any other empty value (a sequence's, a flow collection's, one after a
    comment, one before an explicit `?` or `:`) at an indicator: those are not in the set."""
    from yaml.error import Mark

    plain: set[int] = set()
    for node in each_node(roots):
        if type(node).__name__ != "MappingNode" or node.flow_style:
            continue
        for key, value in node.value:
            mark = value.start_mark
            if type(value).__name__ != "ScalarNode" or mark.index != value.end_mark.index:
                continue
            gap = EMPTY_VALUE_GAP.match(text, key.end_mark.index)
            if gap is None or gap.start("value") != mark.index:
                continue  # not libyaml's mark after a `:` that ends its line
            index = gap.end()
            if text[index : index + 1] in ("?", ":"):
                continue
            line = text.count("\n", 0, index)
            column = index - (text.rfind("\n", 0, index) + 1)
            value.start_mark = value.end_mark = Mark(mark.name, index, line, column, None, None)
            plain.add(id(value))
    return plain


def at_end(node: Any, text: str) -> None:
    """A node of `text` + a line break whose marks lie past `text`'s end (a collection that
    ends there): marked at the end of the last line, as ruamel marks them in `text` itself."""
    end = len(text)
    for attribute in ("start_mark", "end_mark"):
        mark = getattr(node, attribute)
        if mark.index > end:
            from yaml.error import Mark

            line, column = text.count("\n"), end - (text.rfind("\n") + 1)
            setattr(node, attribute, Mark(mark.name, end, line, column, None, None))


def each_node(roots: Sequence[Any]) -> Iterator[Any]:
    """Every node of the graphs once (a node an alias shares too)."""
    pending, seen = list(roots), set()
    while pending:
        node = pending.pop()
        if id(node) not in seen:
            seen.add(id(node))
            yield node
            pending.extend(children(node))


def too_deep(text: str) -> bool:
    """Whether the text may nest deeper than ruamel composes: more than MAX_BRACKETS brackets,
    BRACKET_RUN of them in a row, or a line indented 64 deep (spaces, tabs, dashes)."""
    brackets = text.count("[") + text.count("{")
    if brackets > MAX_BRACKETS:
        return True
    if DEEP_LINE.match(text) is not None or DEEP_INDENT.search(text) is not None:
        return True
    return brackets >= BRACKET_RUN and any(bracket_run(text, bracket) for bracket in ("[", "{"))


def bracket_run(text: str, bracket: str) -> bool:
    """Whether BRACKET_RUN brackets (`[`, `{`) follow one another from some `bracket`."""
    start = text.find(bracket)
    while start >= 0:
        run = text[start : start + BRACKET_RUN]
        if len(run) == BRACKET_RUN and not run.strip("[{"):
            return True
        start = text.find(bracket, start + 1)
    return False


MAX_TAGS = 65_536  # resolved scalars kept (libyaml_loader)


@functools.cache
def libyaml_loader() -> Any:
    """A libyaml composer that resolves tags as ruamel's round trip does (YAML 1.2: `yes` is
    a string, `1_000` an int), or None without PyYAML's C extension."""
    try:
        import yaml
        from yaml.cyaml import CParser
    except ImportError:
        return None
    from ruamel.yaml import nodes
    from ruamel.yaml.resolver import VersionedResolver

    resolver = VersionedResolver()
    kinds = {
        yaml.ScalarNode: nodes.ScalarNode,
        yaml.SequenceNode: nodes.SequenceNode,
        yaml.MappingNode: nodes.MappingNode,
    }

    tags: dict[tuple[type, str | None, Any], str] = {}  # the resolver's answers (see resolve)

    class Composer(CParser):
        def resolve(self, kind: type, value: str | None, implicit: Any) -> str:
            """The tag ruamel gives; it depends on these alone (no path resolvers, no version
            directive: LIBYAML_AVOIDS), so each is asked once a run (most scalars repeat)."""
            key = (kind, value, implicit)
            tag = tags.get(key)
            if tag is None:
                if len(tags) >= MAX_TAGS:
                    tags.clear()  # a run of huge data files: kept small
                tag = tags[key] = str(resolver.resolve(kinds[kind], value, implicit))
            return tag

        def descend_resolver(self, parent: Any, index: Any) -> None:
            pass

        def ascend_resolver(self) -> None:
            pass

    class Loader:
        @staticmethod
        def compose_all(text: str) -> list[Any]:
            composer = Composer(text)
            try:
                documents = []
                while composer.check_node():
                    documents.append(composer.get_node())
                return documents
            finally:
                composer.dispose()

    return Loader


def children(node: Any) -> Iterator[Any]:
    kind = type(node).__name__
    if kind == "MappingNode":
        for key, value in node.value:
            yield key
            yield value
    elif kind == "SequenceNode":
        yield from node.value


def shared_nodes(roots: Sequence[Any], text: str | None = None) -> set[int]:
    """Ids of the nodes reached by more than one path (an alias or a merge key uses them), and
    everything inside them. Each node is entered once, so aliases cost nothing extra. Only
    an alias reaches a node again, and it names an anchor (`&name`) of the same text: a
    `text` (the one the roots were composed from) without a `&` shares none (not walked)."""
    if text is not None and "&" not in text:
        return set()
    references: dict[int, int] = {}
    nodes: dict[int, Any] = {}
    pending = list(roots)
    while pending:
        node = pending.pop()
        references[id(node)] = references.get(id(node), 0) + 1
        if id(node) not in nodes:
            nodes[id(node)] = node
            pending.extend(children(node))
    shared: set[int] = set()
    pending = [node for key, node in nodes.items() if references[key] > 1]
    while pending:
        node = pending.pop()
        if id(node) not in shared:
            shared.add(id(node))
            pending.extend(children(node))
    return shared


def mapping_items(node: Any, seen: set[int] | None = None) -> list[tuple[str, Any, Any]]:
    """(key text, key node, value node) of a mapping with merge keys applied: own keys first,
    then the merged mappings' keys not already present (YAML's merge rule). Each merged mapping
    counts once, so recursive or repeated merges cannot loop or explode."""
    seen = set() if seen is None else seen
    seen.add(id(node))
    own: list[tuple[str, Any, Any]] = []
    merged: list[tuple[str, Any, Any]] = []
    for key, value in node.value:
        if key.tag == f"{TAG}merge":
            sources = value.value if type(value).__name__ == "SequenceNode" else [value]
            for source in sources:
                if type(source).__name__ == "MappingNode" and id(source) not in seen:
                    merged.extend(mapping_items(source, seen))
        elif type(key).__name__ == "ScalarNode":
            own.append((key.value, key, value))
    present = {key for key, _, _ in own}
    for item in merged:
        if item[0] not in present:
            present.add(item[0])
            own.append(item)
    return own


@record(frozen=True)
class Mapping:
    """A mapping node with its merged items, looked up by key."""

    node: Any
    items: dict[str, tuple[Any, Any]]

    @classmethod
    def of(cls, node: Any) -> Mapping | None:
        if type(node).__name__ != "MappingNode":
            return None
        return cls(node, {key: (key_node, value) for key, key_node, value in mapping_items(node)})

    def scalar(self, key: str) -> str:
        """The text value of a scalar entry, '' when absent or not a scalar."""
        value = self.items.get(key, (None, None))[1]
        return value.value if type(value).__name__ == "ScalarNode" else ""


def fix_config(text: str, targets: Sequence[Site]) -> str:
    """Replace each target's token: `fused` booleans flip, precisions become `bf16-mixed`."""
    starts = line_starts(text)
    edits = []
    for site in targets:
        start = starts[site.span.line - 1] + site.span.column
        end = starts[site.span.end_line - 1] + site.span.end_column
        edits.append((start, end, replacement(site, text[start:end])))
    # Two findings may target the same token (a config's optimizer with each Trainer): once.
    for start, end, new in sorted(set(edits), reverse=True):
        text = text[:start] + new + text[end:]
    return text


def replacement(site: Site, token: str) -> str:
    from amp_clipfix.models import SiteKind

    if site.kind is SiteKind.FUSED_OPTIMIZER:
        return BOOLEAN_FLIPS.get(token, "false")
    if token[:1] in "\"'":
        return f"{token[0]}bf16-mixed{token[0]}"
    return "bf16-mixed"


class YamlSource:
    """LightningCLI and Hydra configs: read for their sites, fixed by exact token edits."""

    language = Language.YAML

    def handles(self, path: Path) -> bool:
        return has_config_suffix(path)

    def searchable(self, path: Path, data: bytes) -> bytes:
        return data

    # the prefilter reads the bytes themselves: `holds` itself, which it may ask of many
    # texts joined (prefilter.holds_any)
    may_mention = staticmethod(prefilter.holds)

    def prefilter(self, stage: Stage) -> Callable[[bytes], bool]:
        if stage is Stage.FUSED_OPTIMIZER:
            return prefilter.may_configure_fused_optimizer
        return prefilter.may_configure_trainer_in_config

    def load(self, path: Path, data: bytes) -> Document:
        source = decode_source(path, data)
        return Document(source, Language.YAML, source.text, self)

    def locate(self, document: Document, line: int) -> tuple[int | None, int]:
        return None, line

    def render(self, document: Document, new_text: str, parsed: bool = False) -> Rendered:
        try:
            check_parses(new_text)  # parsed, not composed: its nodes are not read
            return Rendered(encode_text(document.source, new_text))
        except SourceError as error:
            raise VerifyError(f"the fixed config does not parse: {error}") from None
