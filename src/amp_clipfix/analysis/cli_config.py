"""LightningCLI's one Trainer as its configuration makes it, for every rule that asks.

The CLI builds one Trainer from the `trainer:` section of its YAML configs (`--config FILE`,
`parser_kwargs={"default_config_files": [...]}`; the collection reads every project config's
trainer section as the CLI's: `names.CLI_TRAINER`) over `trainer_defaults={...}` in code, and
fits the module class it is given (`LightningCLI(Model)`, or `model: class_path:` in a config).
A setting is a site where its value is written (a YAML scalar's own token, a dict value in the
code), whichever rule reads it; `Setting.token` says where the value may be rewritten in place
(never a value shared through a YAML anchor or a Python constant other code may read).

Cost: this is asked only by a rule that has a reason (a module that optimizes by hand), over
the configs that hold the rule's words; a config is composed again only to rewrite it. The
configs are read first: when none sets the key the rule needs, only the CLI calls whose
`trainer_defaults=` may write it are evaluated (`defaulted`), not every call of the files
naming LightningCLI.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from amp_clipfix.analysis import names, python_configs
from amp_clipfix.analysis.config_sites import SETTING_KEYS, Setting, config_settings, positive
from amp_clipfix.analysis.document_texts import MAY_WRITE_DOCUMENT, TARGET_WORDS  # its files' test
from amp_clipfix.analysis.facts import FileFacts, ProjectFacts
from amp_clipfix.analysis.python_configs import CONFIG_DOCUMENTS
from amp_clipfix.analysis.recording import scan
from amp_clipfix.analysis.resolve_base import keyword_value
from amp_clipfix.analysis.shapes import literal_of
from amp_clipfix.analysis.values import ClsV, DictV, Ext, Lit, Opaque, clips, constant_of
from amp_clipfix.models import Certainty, ConfigModel, SiteKind
from amp_clipfix.records import field, record

CLI_WORD = b"LightningCLI"
DEFAULTS_WORD = b"trainer_defaults"


@record
class CliTrainer:
    """The CLI's Trainer: the module classes it fits (`unknown`: one it may fit is not known
    here) and, per key asked, the settings that give it a value."""

    classes: list[ClsV] = field(default_factory=list)
    unknown: bool = False
    calls: int = 0  # the project's `LightningCLI(...)` calls
    settings: dict[str, list[Setting]] = field(default_factory=dict)
    # Configs that write the key with a value that sets nothing (0, null): which config a run
    # uses then decides whether the other settings apply.
    unset_in: dict[str, list[Path]] = field(default_factory=dict)


def cli_trainer(
    facts: ProjectFacts, keys: tuple[str, ...], needed: str | None = None, fitted: bool = False
) -> CliTrainer | None:
    """The project's config-built Trainer with its settings of `keys`: LightningCLI's (the
    class its call is given, `trainer_defaults`, the configs), or, without a LightningCLI call,
    the one a Hydra config builds (`trainer:` / `_target_: ...Trainer` with the class its
    `model:` section names). None when neither a CLI call nor a config sets one of the keys,
    or when none sets `needed` (a key without which the caller asks nothing more): then the
    CLI calls are not searched, only those whose `trainer_defaults` may write it (`defaulted`).
    `fitted`: the caller asks only about the module classes the Trainer is known to fit, so
    where no file names LightningCLI and no config names a model class it is None before any
    setting is read (the configs' trainer sections are not composed again)."""
    cli = CliTrainer()
    modelled = fitted and not names_cli(facts)
    if modelled:  # no CLI call: the Hydra Trainer fits the classes the configs name
        config_models(facts, cli, list(config_documents(facts, TARGET_WORDS)))
        if not cli.classes:
            return None
    documents = list(config_documents(facts, (*(k.encode() for k in keys), *TARGET_WORDS)))
    yaml_settings(facts, cli, keys)
    for key in keys:
        for file, document in documents:
            cli.settings[key].extend(document_settings(file, document, key))
    if needed is not None and not cli.settings[needed] and not defaulted(facts, needed):
        return None  # no config and no `trainer_defaults` sets the key the caller needs
    calls = list(cli_calls(facts))
    cli.calls = len(calls)
    if not calls:
        if not any(cli.settings.values()):
            return None
        if not modelled:
            config_models(facts, cli, documents)
        return cli
    for file, call in calls:
        model = keyword_value(call, "model_class") or (call.args[0] if call.args else None)
        subclasses = keyword_value(call, "subclass_mode_model")
        if subclasses is not None and constant_of(subclasses)[1] is not False:
            cli.unknown = True  # any subclass a config names
        if model is None:
            config_models(facts, cli, documents)
        else:
            for value in facts.values(file, model):
                if isinstance(value, ClsV):
                    if not any(value.node is c.node for c in cli.classes):
                        cli.classes.append(value)
                else:
                    cli.unknown = True
        for key in keys:
            cli.settings.setdefault(key, []).extend(defaults(facts, file, call, key))
    return cli


def names_cli(facts: ProjectFacts) -> bool:
    """Whether a file the rules read may name LightningCLI (`cli_calls`' files): the texts
    asked as `with_words` asks them, none parsed (a project read whole gives its files)."""
    seen: list[Path] = []

    def noted(path: Path, data: bytes) -> bool:
        seen.append(path)
        return False  # never parsed here

    noted.never = True  # type: ignore[attr-defined]  # lets no file through (certificate.form)
    for _ in facts.with_words(CLI_WORD, where=noted):
        return True
    return bool(seen)


def cli_calls(facts: ProjectFacts) -> Iterator[tuple[FileFacts, ast.Call]]:
    for file in facts.with_words(CLI_WORD):
        for call in file.summary.walked_calls():
            callee = facts.values(file, call.func)
            if any(is_cli(facts, value) for value in callee):
                yield file, call


def defaulted(facts: ProjectFacts, key: str) -> bool:
    """Whether a LightningCLI call's `trainer_defaults=` sets `key`. Only the calls whose
    keyword may hold it are evaluated: a file must write both `LightningCLI` and
    `trainer_defaults` (as `cli_calls` needs the one and `defaults` the other), and a dict
    written at the call whose keys are all strings other than `key` sets nothing."""
    for file in facts.with_words(DEFAULTS_WORD, where=writes_cli):  # the others not parsed
        for call in file.summary.calls_kept(  # it writes the keyword
            lambda c: keyword_value(c, "trainer_defaults") is not None, "trainer_defaults"
        ):
            node = keyword_value(call, "trainer_defaults")
            if node is None or not may_hold(node, key):
                continue
            callee = facts.values(file, call.func)
            if any(is_cli(facts, value) for value in callee) and defaults(facts, file, call, key):
                return True
    return False


def writes_cli(path: Path | None, data: bytes) -> bool:
    """The text writes LightningCLI (as `cli_calls` needs it), tested before the parse."""
    return CLI_WORD in data


def may_hold(node: ast.expr, key: str) -> bool:
    """False for a `{...}` written with string keys only, none of them `key` (no `**`)."""
    if not isinstance(node, ast.Dict):
        return True
    return not all(
        isinstance(k, ast.Constant) and isinstance(k.value, str) for k in node.keys
    ) or any(k.value == key for k in node.keys if isinstance(k, ast.Constant))


def is_cli(facts: ProjectFacts, value: object) -> bool:
    if isinstance(value, Ext):
        return value.qname in names.CLI_CLASSES
    return isinstance(value, ClsV) and facts.evaluator.derives_from(value, names.CLI_CLASSES)


def config_models(
    facts: ProjectFacts, cli: CliTrainer, documents: list[tuple[FileFacts, ast.expr]]
) -> None:
    """The model classes the configs name (`model: class_path: pkg.Model`, Hydra's `model:
    _target_: pkg.Model`); a model chosen elsewhere (the command line, a config file of its own
    in a Hydra defaults list) is not known here."""
    from amp_clipfix.sources.text import SourceError

    dotted: list[str] = []
    for path in sorted(facts.configs, key=str):
        try:
            fits = facts.sites_of_config(path).fits
        except SourceError:  # a config that does not compose is reported by the collection
            continue
        dotted += [f.module_class.dotted for f in fits if isinstance(f.module_class, ConfigModel)]
    for _, document in documents:
        dotted += python_configs.model_targets(document)
    for qname in dotted:
        if qname:
            values = facts.evaluator.resolve_qname(qname, ast.Constant(qname), None)  # type: ignore[arg-type]
            for value in values:
                if isinstance(value, ClsV) and not any(value.node is c.node for c in cli.classes):
                    cli.classes.append(value)
                elif not isinstance(value, ClsV):
                    cli.unknown = True
    if not dotted:
        cli.unknown = True  # the model is chosen on the command line


def config_documents(
    facts: ProjectFacts, words: tuple[bytes, ...]
) -> Iterator[tuple[FileFacts, ast.expr]]:
    """The documents given to `OmegaConf.create(...)` / `DictConfig(...)` in the project: the
    files whose text calls one (a narrower test than the words, so a file that merely names
    OmegaConf is not read) and holds one of `words` (the keys a caller reads: a document's keys
    are string literals, python_configs.mapping_items) where it may write a document that
    gives the caller something (`document_texts.may_give`); of their mappings, those that do
    (`gives`), then the call by its qualified name."""
    contents = facts.evaluator.contents
    for path in sorted(scan(contents, ("fn", MAY_WRITE_DOCUMENT, words)), key=str):
        file = facts.file(path)
        if file is None:
            continue
        # a mapping is written `{...}` or `dict(...)`: the calls on other lines have none
        # A first argument with no mapping in it (a name, a loaded file) gives no setting and
        # names no model (python_configs.walk): its callee is not evaluated.
        for call in file.summary.calls_kept(maps_first, "dict", signs=(b"{",)):
            if not gives(call.args[0], words):
                continue
            if facts.qualified_names(file, call.func) & CONFIG_DOCUMENTS:
                yield file, call.args[0]


def gives(document: ast.expr, words: tuple[bytes, ...]) -> bool:
    """The mapping holds what a caller of `config_documents` reads of a document: a model
    class named (`model: _target_: ...`, asked with TARGET_WORDS: `config_models`) or one of
    the trainer keys among `words` (`document_settings`). Another gives its caller nothing, so
    whether its call makes a config document is not asked (NeMo: 259 calls of 48 test files
    whose `DictConfig({...})` name datasets' and modules' `_target_`, none a model)."""
    if any(word in TARGET_WORDS for word in words) and python_configs.model_targets(document):
        return True
    keys = [word.decode("ascii") for word in words if word not in TARGET_WORDS]
    return any(
        key in mapping for mapping in python_configs.trainer_mappings(document) for key in keys
    )


def maps_first(call: ast.Call) -> bool:
    """The call's first argument holds a mapping written in the code (config_documents)."""
    return bool(call.args) and next(python_configs.walk(call.args[0]), None) is not None


def document_settings(file: FileFacts, document: ast.expr, key: str) -> Iterator[Setting]:
    """The key's values in a Python config document's trainer mappings."""
    for mapping in python_configs.trainer_mappings(document):
        node = mapping.get(key)
        if node is None:
            continue
        literal = literal_of(node)
        detail = f"config document trainer {key}: {file.code(node)}"
        if literal is None:
            site = file.site(SiteKind.TRAINER_CLIP, node, detail, None, Certainty.RUNTIME)
            yield Setting(site, None, None)
        elif key != "gradient_clip_val" or positive(literal):
            site = file.site(SiteKind.TRAINER_CLIP, node, detail, literal)
            yield Setting(site, literal, (file.path, file.span(node)))


def defaults(facts: ProjectFacts, file: FileFacts, call: ast.Call, key: str) -> list[Setting]:
    """`trainer_defaults={key: value}` (a literal, a constant, a dict the code builds)."""
    node = keyword_value(call, "trainer_defaults")
    if node is None:
        return []
    found: list[Setting] = []
    for value in facts.values(file, node):
        if not isinstance(value, DictV):
            continue
        for item in facts.evaluator.force(value.entries.get(key, [])):
            if not isinstance(item, (Lit, Opaque)):
                continue
            where = facts.file(item.summary.path)
            if where is None or not hasattr(item.node, "lineno"):
                continue
            detail = f"LightningCLI(trainer_defaults={{{key!r}: ...}})"
            if isinstance(item, Lit) and key == "gradient_clip_val" and not clips(item):
                continue  # sets nothing: Lightning accepts it
            if isinstance(item, Lit):
                site = where.site(SiteKind.TRAINER_CLIP, item.node, detail, item.text)
                token = (
                    (where.path, where.span(item.node))
                    if own_value(where, item.node, key)
                    else None
                )
                found.append(Setting(site, item.text, token))
            else:
                site = where.site(SiteKind.TRAINER_CLIP, item.node, detail, None, Certainty.RUNTIME)
                found.append(Setting(site, None, None))
    return found


def own_value(file: FileFacts, node: ast.AST, key: str) -> bool:
    """The literal is written as the key's value itself (`{key: 1.0}`, `dict(key=1.0)`), so
    rewriting it changes nothing else."""
    parent = file.summary.parent(node)
    if isinstance(parent, ast.Dict):
        return any(
            v is node and isinstance(k, ast.Constant) and k.value == key
            for k, v in zip(parent.keys, parent.values, strict=True)
        )
    return isinstance(parent, ast.keyword) and parent.arg == key


def yaml_settings(facts: ProjectFacts, cli: CliTrainer, keys: tuple[str, ...]) -> None:
    """The `trainer:` sections of the project's configs that hold the keys: as the
    collection's read gave them (config_sites.read_config), else from one composition of the
    file for all the keys."""
    for key in keys:
        cli.settings.setdefault(key, [])
    for path in sorted(facts.configs, key=str):
        text = facts.configs[path].text
        wanted = tuple(key for key in keys if key in text)  # the cheap scan
        if not wanted:
            continue
        known = facts.config_settings.get(path)
        read = (
            known
            if known is not None and all(key in SETTING_KEYS for key in wanted)
            else config_settings(path, text, wanted)
        )
        for key in wanted:
            for value in read[key]:
                if value is None:
                    cli.unset_in.setdefault(key, []).append(path)
                else:
                    cli.settings[key].append(value)
