"""How each kind of file names a package's version: lock files, requirement files, pyproject.toml,
setup.cfg and setup.py (read as data with `ast`, never run), conda environments. A reader takes
a file's bytes and the package names, and gives the pins it finds (or raises PinError).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from amp_clipfix.paths import excerpt, has_too_many_digits, too_many_digits, unreadable_value
from amp_clipfix.patterns import lazy
from amp_clipfix.project.config import parsed_toml, toml_reader
from amp_clipfix.project.requirement_lines import canonical_name, plain_parts, requirement_name
from amp_clipfix.records import record

if TYPE_CHECKING:  # constraints are parsed only when a pin file names Lightning
    import ast

    from packaging.specifiers import SpecifierSet


Packages = Sequence[str]  # canonical distribution names, highest priority first


class PinError(Exception):
    """A pin file that cannot be read: one line, without the file name."""


class PastLimit(PinError):
    """A number or version of more digits than Python turns into an integer: bad input, one
    error line naming the file (exit 2, the run goes on), not a warning (issue 39)."""


def value_error(prefix: str, error: ValueError) -> PinError:
    """The PinError of a reader's ValueError (PastLimit for a number past Python's limit)."""
    kind = PastLimit if "integer string conversion" in str(error) else PinError
    return kind(f"{prefix}{unreadable_value(error)}")


@record(frozen=True)
class Pin:
    """One requirement of a package found in a file."""

    package: str  # canonical: lightning, pytorch-lightning, lightning-fabric, ...
    specifier: SpecifierSet
    text: str  # as a person reads it: `lightning>=2.0,<3`
    optional: bool = False  # an extra, a dependency group, a dev section, a docs/test file

    @property
    def exact(self) -> Version | None:
        """The version of a `==X` pin (no wildcard), else None."""
        specs = list(self.specifier)
        if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
            try:
                return Version(specs[0].version)
            except InvalidVersion:
                return None
        return None


Reader = Callable[[bytes, Packages], list[Pin]]  # a file's bytes -> its pins; raises PinError


def make_pin(
    name: str, specifier: str, packages: Packages, text: str | None = None, optional: bool = False
) -> Pin | None:
    """A pin when `name` is one of `packages` and `specifier` is a version constraint."""
    package = canonical_name(name)
    if package not in packages or not specifier.strip():
        return None
    if has_too_many_digits(specifier):  # no version of it can be compared
        raise PastLimit(f"{package}: not a version constraint: {too_many_digits()}")
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(specifier)
    except InvalidSpecifier:
        raise PinError(f"{package}: not a version constraint: {excerpt(specifier)}") from None
    return Pin(package, spec, text or f"{package}{specifier}", optional)


def requirement_pin(line: str, packages: Packages, optional: bool = False) -> Pin | None:
    """A PEP 508 line (`lightning[extra]>=2.0,<3; python_version>"3.8"`)."""
    if not names_package(line, packages):  # most lines of a file: no need to parse them
        return None
    parsed = simple_requirement(line)
    if parsed is None:
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            requirement = Requirement(line)
        except InvalidRequirement as error:
            reason = str(error).splitlines()[0] if str(error) else "invalid"
            reason = excerpt(reason, 80, quoted=False)
            raise PinError(f"not a requirement: {excerpt(line)} ({reason})") from None
        parsed = requirement.name, str(requirement.specifier)
    name, specifier = parsed
    shown = f"{canonical_name(name)}{specifier}"
    written = line.split(";")[0].strip()
    text = _without_extras("".join(written.split())) if written else shown
    return make_pin(name, specifier, packages, text, optional)


def _without_extras(text: str) -> str:
    """`text` without its `[...]` extras (a pattern compiled only for a text that has one)."""
    return re.sub(r"\[[^\]]*\]", "", text) if "[" in text else text


def simple_requirement(line: str) -> tuple[str, str] | None:
    """The name and the specifier of a line in the plain shape most requirement lines have
    (`lightning[extra] >= 2.0, < 3`: no marker, URL or parentheses), read with
    `SpecifierSet` alone, which is what `Requirement` gives for them: importing
    `packaging.requirements` (its markers import `platform`, `subprocess`, `logging`) costs
    more than the rest of a small project's pins (~20 ms). None for any other line, and
    for a specifier `SpecifierSet` refuses or a number past Python's limit: `Requirement`
    reads those, and says what is wrong."""
    parts = plain_parts(line)
    if parts is None or has_too_many_digits(line):
        return None
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    name, written = parts
    try:
        specifier = SpecifierSet(written)
    except InvalidSpecifier:
        return None
    return name, str(specifier)


def names_package(line: str, packages: Packages) -> bool:
    """The requirement's name is one of `packages` (`lightning[extra]>=2`, `Lightning_Fabric`,
    not `lightning-utilities`): only such a line can be a pin, or a malformed one worth a
    warning."""
    name = requirement_name(line)
    return name is not None and canonical_name(name) in packages


def pins_of_lines(lines: list[str], packages: Packages, optional: bool = False) -> list[Pin]:
    pins = []
    for line in lines:
        if line.strip() and (pin := requirement_pin(line.strip(), packages, optional)):
            pins.append(pin)
    return pins


def load_toml(data: bytes) -> dict[str, Any]:
    try:
        return parsed_toml(data)
    except toml_reader().TOMLDecodeError as error:
        raise PinError(f"invalid TOML: {excerpt(str(error), 120, quoted=False)}") from None
    except ValueError as error:
        if isinstance(error, UnicodeDecodeError):
            raise
        raise value_error("invalid TOML: ", error) from None


def toml_lock_pins(data: bytes, packages: Packages) -> list[Pin]:
    """uv.lock, poetry.lock, pdm.lock: `[[package]]` tables with `name` and `version`; a
    package only a dev group needs (poetry's `category = "dev"`, pdm's `groups`) is second
    tier."""
    entries = load_toml(data).get("package", [])
    if not isinstance(entries, list):
        raise PinError("`package` is not an array of tables")
    pins = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("version"), str):
            continue
        groups = entry.get("groups")
        optional = entry.get("category") == "dev" or (
            isinstance(groups, list) and bool(groups) and "default" not in groups
        )
        pin = make_pin(str(entry.get("name", "")), f"=={entry['version']}", packages)
        if pin is not None:
            text = f"{pin.package} {entry['version']}"
            pins.append(Pin(pin.package, pin.specifier, text, optional))
    return pins


def pipfile_lock_pins(data: bytes, packages: Packages) -> list[Pin]:
    """Pipfile.lock: JSON `{"default": {name: {"version": "==X"}}, "develop": {...}}`."""
    import json  # here: only a project with a Pipfile.lock reads JSON

    try:
        document = json.loads(data.decode("utf-8"))
    except ValueError as error:
        if isinstance(error, UnicodeDecodeError):
            raise
        raise PinError(f"invalid JSON: {excerpt(str(error), 120, quoted=False)}") from None
    pins = []
    for section in ("default", "develop"):
        entries = document.get(section, {}) if isinstance(document, dict) else {}
        for name, entry in entries.items() if isinstance(entries, dict) else ():
            version = entry.get("version") if isinstance(entry, dict) else None
            if isinstance(version, str):
                pin = make_pin(name, version, packages, optional=section == "develop")
                pins.extend([pin] if pin is not None else [])
    return pins


LOCK_READERS: dict[str, Reader] = {
    "uv.lock": toml_lock_pins,
    "poetry.lock": toml_lock_pins,
    "pdm.lock": toml_lock_pins,
    "Pipfile.lock": pipfile_lock_pins,
}


def requirements_pins(data: bytes, packages: Packages, optional: bool = False) -> list[Pin]:
    """requirements*.txt: PEP 508 lines; options (`-r`, `-e`, `--hash`) and URLs are skipped."""
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    lines = []
    for raw in text.replace("\\\n", " ").splitlines():
        line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()
        line = re.split(r"\s--?[a-z]", line, maxsplit=1)[0].strip()
        if line and not line.startswith("-") and "://" not in line:
            lines.append(line)
    return pins_of_lines(lines, packages, optional)


_REQUIREMENT_READERS = {
    optional: partial(requirements_pins, optional=optional) for optional in (False, True)
}


def requirements_reader(optional: bool) -> Reader:
    """The reader of an install (False) or docs/test (True) requirement file; one object per
    kind, so that a file is parsed once whether its exact pins or its ranges are asked."""
    return _REQUIREMENT_READERS[optional]


def pyproject_pins(data: bytes, packages: Packages) -> list[Pin]:
    """[project] dependencies (first tier), optional dependencies and [dependency-groups]
    (second), Poetry's main table (first) and its dev tables and groups (second)."""
    document = load_toml(data)
    project = document.get("project", {}) if isinstance(document.get("project"), dict) else {}
    pins = pins_of_lines(list(string_items(project.get("dependencies", []))), packages)
    extras = [
        line
        for group in (
            *dict_values(project.get("optional-dependencies")),
            *dict_values(document.get("dependency-groups")),
        )
        for line in string_items(group)
    ]
    pins += pins_of_lines(extras, packages, optional=True)
    tool = document.get("tool", {}) if isinstance(document.get("tool"), dict) else {}
    poetry = tool.get("poetry", {}) if isinstance(tool.get("poetry"), dict) else {}
    tables = [(poetry.get("dependencies"), False), (poetry.get("dev-dependencies"), True)]
    tables.extend(
        (group.get("dependencies"), True)
        for group in dict_values(poetry.get("group"))
        if isinstance(group, dict)
    )
    for table, optional in tables:
        for name, constraint in table.items() if isinstance(table, dict) else ():
            pin = poetry_pin(str(name), constraint, packages, optional)
            if pin is not None:
                pins.append(pin)
    return pins


def string_items(value: Any) -> Iterator[str]:
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, str))


def dict_values(value: Any) -> list[Any]:
    return list(value.values()) if isinstance(value, dict) else []


def poetry_pin(name: str, constraint: Any, packages: Packages, optional: bool) -> Pin | None:
    """`lightning = "^2.0"`, `{version = "~1.9", extras = [...]}` or a list of such tables."""
    if isinstance(constraint, list):
        constraint = constraint[0] if constraint else None
    if isinstance(constraint, dict):
        constraint = constraint.get("version")
    if not isinstance(constraint, str) or canonical_name(name) not in packages:
        return None
    specifier = poetry_specifier(constraint)
    text = f"{canonical_name(name)} {constraint.strip()}"
    return make_pin(name, specifier, packages, text, optional)


def poetry_specifier(constraint: str) -> str:
    """Poetry's `^1.9.5`, `~2.0`, `2.4.0`, `2.*`, `>=2.0,<3` as a PEP 440 specifier."""
    parts = []
    for part in re.split(r"\s*,\s*|\s+(?=[<>=!~^])", constraint.strip()):
        if part in ("", "*"):
            continue
        if part.startswith("^"):
            parts.extend(caret(part[1:]))
        elif part.startswith("~") and not part.startswith("~="):
            parts.extend(tilde(part[1:]))
        elif part[0].isdigit():
            parts.append(f"=={part}")
        else:
            parts.append(part)
    return ",".join(parts) or ">=0"


def release_numbers(text: str) -> list[int]:
    try:
        return list(Version(text.strip()).release)
    except InvalidVersion:
        raise PinError(f"not a version: {excerpt(text)}") from None


def caret(text: str) -> list[str]:
    """`^1.9.5` -> >=1.9.5,<2.0.0; `^0.2` -> >=0.2,<0.3."""
    numbers = release_numbers(text)
    index = next((i for i, n in enumerate(numbers) if n), len(numbers) - 1)
    upper = [*numbers[:index], numbers[index] + 1]
    return [f">={text.strip()}", f"<{'.'.join(map(str, upper))}"]


def tilde(text: str) -> list[str]:
    """`~2.0.3` -> >=2.0.3,<2.1; `~2` -> >=2,<3."""
    numbers = release_numbers(text)
    upper = [numbers[0] + 1] if len(numbers) == 1 else [numbers[0], numbers[1] + 1]
    return [f">={text.strip()}", f"<{'.'.join(map(str, upper))}"]


def setup_cfg_pins(data: bytes, packages: Packages) -> list[Pin]:
    """setup.cfg `[options] install_requires` (first tier) and `[options.extras_require]`."""
    import configparser  # only a project with a setup.cfg

    parser = configparser.ConfigParser(interpolation=None)
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    try:
        parser.read_string(text, source="setup.cfg")
    except configparser.Error as error:
        raise PinError(f"cannot parse: {one_line(error)}") from None
    pins = []
    if parser.has_option("options", "install_requires"):
        pins += pins_of_lines(cfg_lines([parser.get("options", "install_requires")]), packages)
    if parser.has_section("options.extras_require"):
        extras = [value for _, value in parser.items("options.extras_require")]
        pins += pins_of_lines(cfg_lines(extras), packages, optional=True)
    return pins


def one_line(error: Exception) -> str:
    """A parser's message, which quotes the file: on one line, escaped and short."""
    return excerpt(" ".join(str(error).split()), 80, quoted=False)


def cfg_lines(values: list[str]) -> list[str]:
    return [line for value in values for line in re.split(r"[\n;]", value)]


def setup_py_pins(data: bytes, packages: Packages) -> list[Pin]:
    """`install_requires` (first tier) and `extras_require` of a `setup(...)` call, read as
    literals, following module-level names (each once, so `REQS = REQS + [...]` ends)."""
    return [
        pin
        for lines, optional in setup_py_requirements(data)
        for pin in pins_of_lines(list(lines), packages, optional)
    ]


@lru_cache(maxsize=4)
def setup_py_requirements(data: bytes) -> tuple[tuple[tuple[str, ...], bool], ...]:
    """setup_py_pins' requirement lines of each keyword (and whether they are extras), the
    same for every package: parsed once per text for a run's Lightning and torch searches."""
    import ast  # here: only a project with a setup.py parses one

    try:
        tree = ast.parse(data, filename="setup.py")
    except (SyntaxError, ValueError) as error:
        reason = getattr(error, "msg", None) or str(error)
        raise PinError(f"cannot parse: {excerpt(reason, 80, quoted=False)}") from None
    assigned: dict[str, list[ast.expr]] = {}
    for statement in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(statement, ast.Assign):
            targets, value = statement.targets, statement.value
        elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
            targets, value = [statement.target], statement.value
        for target in targets:
            if isinstance(target, ast.Subscript):  # EXTRAS["all"] = ...: part of EXTRAS
                target = target.value
            if isinstance(target, ast.Name) and value is not None:
                assigned.setdefault(target.id, []).append(value)
    found: list[tuple[tuple[str, ...], bool]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and call_name(node.func).endswith("setup")):
            continue
        for keyword in node.keywords:
            if keyword.arg in ("install_requires", "extras_require"):
                lines = literal_strings(keyword.value, assigned)
                found.append((tuple(lines), keyword.arg == "extras_require"))
    return tuple(found)


def call_name(func: ast.expr) -> str:
    import ast

    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def literal_strings(node: ast.expr, assigned: dict[str, list[ast.expr]]) -> list[str]:
    """The strings of a list/tuple/dict literal, `+` of them, a string of lines, and what
    module-level names were assigned (each name followed once): without recursion, so any
    depth of nesting and any self-reference ends."""
    import ast

    strings: list[str] = []
    followed: set[str] = set()
    pending: list[ast.AST] = [node]
    while pending:
        current = pending.pop()
        children: list[ast.AST] = []
        if isinstance(current, ast.Constant) and isinstance(current.value, str):
            strings.extend(current.value.splitlines())
        elif isinstance(current, ast.Name):
            if current.id not in followed:
                followed.add(current.id)
                children = list(assigned.get(current.id, ()))
        elif isinstance(current, ast.Dict):
            children = [value for value in current.values if value is not None]
        elif isinstance(current, (ast.List, ast.Tuple, ast.Set)):
            children = list(current.elts)
        elif isinstance(current, (ast.Starred, ast.Subscript)):
            children = [current.value]
        elif isinstance(current, ast.BinOp) and isinstance(current.op, (ast.Add, ast.BitOr)):
            children = [current.left, current.right]
        pending.extend(reversed(children))  # left to right
    return strings


CONDA_NAMES = {"pytorch": "torch"}  # conda's name for torch


CONDA_ENTRY = lazy(r"^(?:[\w.-]+::)?([A-Za-z0-9_.-]+)\s*(.*)$")


def conda_pins(data: bytes, packages: Packages) -> list[Pin]:
    """environment.yml: `dependencies` entries (conda `name=1.9.5`) and their `pip:` list."""
    from ruamel.yaml import YAML, YAMLError

    text = data.decode("utf-8")
    try:
        document = YAML(typ="safe", pure=True).load(text)
    except YAMLError as error:
        raise PinError(f"invalid YAML: {one_line(error)}") from None
    except (ValueError, TypeError, OverflowError) as error:  # a scalar its constructors refuse
        raise PinError(f"invalid YAML: {type(error).__name__}") from None
    entries = document.get("dependencies", []) if isinstance(document, dict) else []
    pins: list[Pin] = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            pins.extend(pins_of_lines(list(string_items(entry.get("pip"))), packages))
        elif isinstance(entry, str) and (match := CONDA_ENTRY.match(entry.strip())):
            name, spec = match.groups()
            name = CONDA_NAMES.get(name.lower(), name)
            text = f"{canonical_name(name)}{spec.strip()}"
            pin = make_pin(name, conda_specifier(spec), packages, text)
            pins.extend([pin] if pin is not None else [])
    return pins


def conda_specifier(spec: str) -> str:
    """Conda's `=1.9.5` (that release) and `=1.9` (1.9.*) as PEP 440; others as written."""
    spec = spec.strip().split()[0] if spec.strip() else ""
    if spec.startswith("=") and not spec.startswith("=="):
        version = spec[1:].rstrip(".*")
        return f"=={version}" if len(version.split(".")) >= 3 else f"=={version}.*"
    return spec


READERS: dict[str, Reader] = {
    **LOCK_READERS,
    "requirements.txt": requirements_reader(False),
    "pyproject.toml": pyproject_pins,
    "setup.cfg": setup_cfg_pins,
    "setup.py": setup_py_pins,
    "environment.yml": conda_pins,
}
"""Every reader, by the file it reads (for tests that feed them any bytes)."""
