"""The Lightning release each project runs on, read from the project's own files.

The first source that names a Lightning package with a version wins:

1. `--lightning-version`, else `lightning-version` in `[tool.amp-clipfix]` (nearest pyproject.toml);
2. lock files: uv.lock, poetry.lock, pdm.lock, Pipfile.lock, requirements*.txt lines with `==`;
3. declared dependencies: pyproject.toml ([project], dependency groups, Poetry tables),
   setup.cfg, setup.py (read as data with `ast`, never run), requirements*.txt ranges, conda
   environment.yml (pip section and conda entries);
4. the Lightning installed next to amp-clipfix;
5. else the latest release (2.6.6).

Packages: lightning, pytorch-lightning, lightning-fabric (in that order within one file). A file
that cannot be read gives a one-line warning and the next source is asked.

torch is read the same way, from the same files in the same order (`resolve_torch`): the first
file that pins torch (`torch`; conda's `pytorch`) gives the torch target; `--torch-version`
overrides it; nothing pinned means the newest torch amp-clipfix knows (2.13.0).
"""

from __future__ import annotations

import ast
import fnmatch
import json
import re
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from amp_clipfix import observed
from amp_clipfix.paths import display_path
from amp_clipfix.project.config import ConfigError, load_config
from amp_clipfix.project.torch_release import (
    DEFAULT_TORCH,
    TorchTarget,
    torch_releases_in,
)
from amp_clipfix.project.version import (
    DEFAULT_TARGET,
    Target,
    parse_version,
    releases_in,
)

if TYPE_CHECKING:  # constraints are parsed only when a pin file names Lightning
    from packaging.specifiers import SpecifierSet

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11 only
    import tomli as tomllib

PACKAGES = ("lightning", "pytorch-lightning", "lightning-fabric")  # canonical names, by priority
TORCH_PACKAGES = ("torch",)  # the second package read the same way (resolve_torch)
READ_PACKAGES = PACKAGES + TORCH_PACKAGES
LOCK_FILES = ("uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock")
CONDA_FILES = ("environment.yml", "environment.yaml")


class PinError(Exception):
    """A pin file that cannot be read: one line, without the file name."""


@dataclass(frozen=True)
class Pin:
    """One Lightning requirement found in a file."""

    package: str  # canonical: lightning, pytorch-lightning, lightning-fabric or torch
    specifier: SpecifierSet
    text: str  # as a person reads it: `lightning>=2.0,<3`

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


@dataclass(frozen=True)
class Resolution:
    """A project's target and the warnings met on the way to it."""

    target: Target
    warnings: tuple[str, ...] = ()


def resolve_target(root: Path, requested: Target | None = None) -> Resolution:
    """The target of the project at `root`: `requested` (the command line) when given."""
    if requested is not None:
        return Resolution(requested)
    warnings: list[str] = []
    try:
        configured = configured_target(root)
    except ConfigError as error:
        warnings.append(f"{error}; not used for the Lightning version")
    else:
        if configured is not None:
            return Resolution(configured)
    for source, read, accept in sources(root):
        try:
            pins = read(source)
        except PinError as error:
            warnings.append(f"{display_path(source)}: {error}; not used for the Lightning version")
            continue
        except OSError as error:
            warnings.append(f"{display_path(source)}: cannot read: {error.strerror or error}")
            continue
        pin = first_pin([pin for pin in pins if accept(pin)])
        if pin is None:
            continue
        target = target_of(pin, display_path(source))
        if target is None:
            warnings.append(
                f"{display_path(source)}: no known Lightning release matches {pin.text}; "
                "not used for the Lightning version"
            )
            continue
        return Resolution(target, once(warnings))
    return Resolution(installed_target() or DEFAULT_TARGET, once(warnings))


def once(warnings: list[str]) -> tuple[str, ...]:
    """One warning per file: requirements files are read twice, pyproject.toml by two readers."""
    seen: set[str] = set()
    kept = []
    for warning in warnings:
        path = warning.split(": ", 1)[0]
        if path not in seen:
            seen.add(path)
            kept.append(warning)
    return tuple(kept)


Reader = Callable[[Path], list[Pin]]
Accept = Callable[[Pin], bool]


def _any(pin: Pin) -> bool:
    return True


def _exact(pin: Pin) -> bool:
    return pin.exact is not None


def _range(pin: Pin) -> bool:
    return pin.exact is None


def sources(root: Path) -> Iterator[tuple[Path, Reader, Accept]]:
    """The files to ask, in order, with their reader and which of their pins count there."""
    for name in LOCK_FILES:
        if observed.is_file(root / name):
            yield root / name, LOCK_READERS[name], _any
    requirements = requirement_files(root)
    for path in requirements:
        yield path, requirements_pins, _exact
    for name, read in (
        ("pyproject.toml", pyproject_pins),
        ("setup.cfg", setup_cfg_pins),
        ("setup.py", setup_py_pins),
    ):
        if observed.is_file(root / name):
            yield root / name, read, _any
    for path in requirements:
        yield path, requirements_pins, _range
    for name in CONDA_FILES:
        if observed.is_file(root / name):
            yield root / name, conda_pins, _any


def requirement_files(root: Path) -> list[Path]:
    """requirements*.txt at the root, then requirements/*.txt."""
    found = [root / name for name in _names(root) if fnmatch.fnmatchcase(name, "requirements*.txt")]
    folder = root / "requirements"
    found += [folder / name for name in _names(folder) if name.endswith(".txt")]
    return [path for path in found if observed.is_file(path)]


def _names(folder: Path) -> list[str]:
    try:
        return observed.listdir(folder)
    except OSError:
        return []


def first_pin(pins: list[Pin], packages: tuple[str, ...] = PACKAGES) -> Pin | None:
    """The pin of the highest-priority package (lightning, then pytorch-lightning, ...)."""
    for package in packages:
        for pin in pins:
            if pin.package == package:
                return pin
    return None


def target_of(pin: Pin, source: str) -> Target | None:
    """An exact pin is that release (known or not); a range is the known releases it admits."""
    version = pin.exact
    if version is not None:
        return Target.exact(version, source, pin.package)
    releases = releases_in(pin.specifier)
    if not releases:
        return None
    return Target(releases, pin.text, source)


def installed_target() -> Target | None:
    """The Lightning installed next to amp-clipfix (never imported: metadata only)."""
    for package in PACKAGES:
        found = installed_version(package)
        if found is None:
            continue
        try:
            version = Version(found)
        except InvalidVersion:
            continue
        return Target.exact(version, "installed distribution", package)
    return None


INSTALLED = re.compile(r"(?P<name>[^-]+)(?:-[^-]+)?\.(?:dist-info|egg-info)", re.IGNORECASE)


def installed_version(package: str) -> str | None:
    """The version of the first distribution named `package` on sys.path, as
    `importlib.metadata.version` finds it (a `*.dist-info` or `*.egg-info` folder, its
    `Version:` header), without importing importlib.metadata: ~40 ms, a tenth of a check run."""
    for entry in sys.path:
        folder = Path(entry or ".")
        for name in _names(folder):
            match = INSTALLED.fullmatch(name)
            if match is None or canonical_name(match["name"]) != package:
                continue
            for metadata in ("METADATA", "PKG-INFO", ""):  # "": an egg-info file (distutils)
                version = metadata_version(folder / name / metadata)
                if version is not None:
                    return version
    return None


def metadata_version(path: Path) -> str | None:
    try:
        for line in observed.read_text(path, errors="replace").splitlines():
            if line.lower().startswith("version:"):
                return line.split(":", 1)[1].strip()
            if not line.strip():  # the headers end at the first empty line
                return None
    except OSError:
        return None
    return None


def canonical_name(name: str) -> str:
    """A distribution's name as PEP 503 compares it (`Pytorch_Lightning` -> pytorch-lightning)."""
    return re.sub(r"[-_.]+", "-", name).lower()


# Readers: each returns the Lightning pins of one file, or raises PinError.


def make_pin(name: str, specifier: str, text: str | None = None) -> Pin | None:
    """A pin when `name` is a Lightning package and `specifier` is a version constraint."""
    package = canonical_name(name)
    if package not in READ_PACKAGES or not specifier.strip():
        return None
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        spec = SpecifierSet(specifier)
    except InvalidSpecifier:
        raise PinError(f"{name}: not a version constraint: {specifier!r}") from None
    return Pin(package, spec, text or f"{package}{specifier}")


def requirement_pin(line: str) -> Pin | None:
    """A PEP 508 line (`lightning[extra]>=2.0,<3; python_version>"3.8"`)."""
    if not names_lightning(line):  # most lines of a requirements file: no need to parse them
        return None
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirement = Requirement(line)
    except InvalidRequirement as error:
        if names_lightning(line):
            reason = str(error).splitlines()[0]
            raise PinError(f"not a requirement: {line!r} ({reason})") from None
        return None
    shown = f"{canonical_name(requirement.name)}{requirement.specifier}"
    written = line.split(";")[0].strip()
    text = re.sub(r"\[[^\]]*\]", "", re.sub(r"\s+", "", written)) if written else shown
    return make_pin(requirement.name, str(requirement.specifier), text)


def names_lightning(line: str) -> bool:
    """The requirement's name is a Lightning package (`lightning[extra]>=2`, `Lightning_Fabric`,
    not `lightning-utilities`): only such a line can be a pin, or a malformed one worth a
    warning."""
    name = REQUIREMENT_NAME.match(line)
    return name is not None and canonical_name(name[0]) in READ_PACKAGES


REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def pins_of_lines(lines: list[str]) -> list[Pin]:
    return [pin for line in lines if line.strip() and (pin := requirement_pin(line.strip()))]


def load_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(observed.read_bytes(path).decode("utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise PinError(f"invalid TOML: {error}") from None


def configured_target(root: Path) -> Target | None:
    """`lightning-version` in [tool.amp-clipfix] of the nearest pyproject.toml (ConfigError when
    that file is broken)."""
    config = load_config(root)
    if not config.lightning_version or config.path is None:
        return None
    return Target.exact(parse_version(config.lightning_version), configured_source(config.path))


def configured_source(path: Path) -> str:
    """How a release set in configuration is named: `pyproject.toml [tool.amp-clipfix]`."""
    return f"{display_path(path)} [tool.amp-clipfix]"


def toml_lock_pins(path: Path) -> list[Pin]:
    """uv.lock, poetry.lock, pdm.lock: `[[package]]` tables with `name` and `version`."""
    packages = load_toml(path).get("package", [])
    if not isinstance(packages, list):
        raise PinError("`package` is not an array of tables")
    pins = []
    for entry in packages:
        if not isinstance(entry, dict) or not isinstance(entry.get("version"), str):
            continue
        pin = make_pin(str(entry.get("name", "")), f"=={entry['version']}")
        if pin is not None:
            pins.append(Pin(pin.package, pin.specifier, f"{pin.package} {entry['version']}"))
    return pins


def pipfile_lock_pins(path: Path) -> list[Pin]:
    """Pipfile.lock: JSON `{"default": {name: {"version": "==X"}}, "develop": {...}}`."""
    try:
        data = json.loads(observed.read_text(path))
    except (ValueError, UnicodeDecodeError) as error:
        raise PinError(f"invalid JSON: {error}") from None
    pins = []
    for section in ("default", "develop"):
        entries = data.get(section, {}) if isinstance(data, dict) else {}
        for name, entry in entries.items() if isinstance(entries, dict) else ():
            version = entry.get("version") if isinstance(entry, dict) else None
            if isinstance(version, str) and (pin := make_pin(name, version)) is not None:
                pins.append(pin)
    return pins


LOCK_READERS: dict[str, Reader] = {
    "uv.lock": toml_lock_pins,
    "poetry.lock": toml_lock_pins,
    "pdm.lock": toml_lock_pins,
    "Pipfile.lock": pipfile_lock_pins,
}


def requirements_pins(path: Path) -> list[Pin]:
    """requirements*.txt: PEP 508 lines; options (`-r`, `-e`, `--hash`) and URLs are skipped."""
    try:
        text = observed.read_text(path)
    except UnicodeDecodeError:
        raise PinError("not UTF-8 text") from None
    lines = []
    for raw in text.replace("\\\n", " ").splitlines():
        line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()
        line = re.split(r"\s--?[a-z]", line, maxsplit=1)[0].strip()
        if line and not line.startswith("-") and "://" not in line:
            lines.append(line)
    return pins_of_lines(lines)


def pyproject_pins(path: Path) -> list[Pin]:
    """[project] dependencies and optional dependencies, [dependency-groups], Poetry tables."""
    data = load_toml(path)
    project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
    lines = list(string_items(project.get("dependencies", [])))
    for extra in dict_values(project.get("optional-dependencies")):
        lines.extend(string_items(extra))
    for group in dict_values(data.get("dependency-groups")):
        lines.extend(string_items(group))
    pins = pins_of_lines(lines)
    tool = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
    poetry = tool.get("poetry", {}) if isinstance(tool.get("poetry"), dict) else {}
    tables = [poetry.get("dependencies"), poetry.get("dev-dependencies")]
    tables.extend(
        group.get("dependencies")
        for group in dict_values(poetry.get("group"))
        if isinstance(group, dict)
    )
    for table in tables:
        for name, constraint in table.items() if isinstance(table, dict) else ():
            pin = poetry_pin(name, constraint)
            if pin is not None:
                pins.append(pin)
    return pins


def string_items(value: Any) -> Iterator[str]:
    if isinstance(value, list):
        yield from (item for item in value if isinstance(item, str))


def dict_values(value: Any) -> list[Any]:
    return list(value.values()) if isinstance(value, dict) else []


def poetry_pin(name: str, constraint: Any) -> Pin | None:
    """`lightning = "^2.0"`, `{version = "~1.9", extras = [...]}` or a list of such tables."""
    if isinstance(constraint, list):
        constraint = constraint[0] if constraint else None
    if isinstance(constraint, dict):
        constraint = constraint.get("version")
    if not isinstance(constraint, str) or canonical_name(name) not in READ_PACKAGES:
        return None
    specifier = poetry_specifier(constraint)
    return make_pin(name, specifier, f"{canonical_name(name)} {constraint.strip()}")


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
        raise PinError(f"not a version: {text!r}") from None


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


def setup_cfg_pins(path: Path) -> list[Pin]:
    """setup.cfg `[options] install_requires` and `[options.extras_require]`."""
    import configparser  # only a project with a setup.cfg

    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(observed.read_text(path), source=str(path))
    except (configparser.Error, UnicodeDecodeError) as error:
        raise PinError(f"cannot parse: {' '.join(str(error).split())}") from None
    values = []
    if parser.has_option("options", "install_requires"):
        values.append(parser.get("options", "install_requires"))
    if parser.has_section("options.extras_require"):
        values.extend(value for _, value in parser.items("options.extras_require"))
    return pins_of_lines([line for value in values for line in re.split(r"[\n;]", value)])


def setup_py_pins(path: Path) -> list[Pin]:
    """`install_requires` (and `extras_require`) of a `setup(...)` call, read as literals."""
    try:
        tree = ast.parse(observed.read_bytes(path), filename=str(path))
    except (SyntaxError, ValueError) as error:
        raise PinError(f"cannot parse: {getattr(error, 'msg', error)}") from None
    constants = {
        target.id: node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    lines: list[str] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and call_name(node.func).endswith("setup")):
            continue
        for keyword in node.keywords:
            if keyword.arg in ("install_requires", "extras_require"):
                lines.extend(literal_strings(keyword.value, constants))
    return pins_of_lines(lines)


def call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def literal_strings(node: ast.expr, constants: dict[str, ast.expr]) -> list[str]:
    """Strings of a list/tuple/dict literal, following one module-level name."""
    if isinstance(node, ast.Name) and node.id in constants:
        node = constants[node.id]
    if isinstance(node, ast.Dict):
        return [s for value in node.values if value for s in literal_strings(value, constants)]
    if isinstance(node, (ast.List, ast.Tuple)):
        constants_ = [element for element in node.elts if isinstance(element, ast.Constant)]
        return [element.value for element in constants_ if isinstance(element.value, str)]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return literal_strings(node.left, constants) + literal_strings(node.right, constants)
    return []


CONDA_NAMES = {"pytorch": "torch"}  # conda's name for torch
CONDA_ENTRY = re.compile(r"^(?:[\w.-]+::)?([A-Za-z0-9_.-]+)\s*(.*)$")


def conda_pins(path: Path) -> list[Pin]:
    """environment.yml: `dependencies` entries (conda `name=1.9.5`) and their `pip:` list."""
    from ruamel.yaml import YAML, YAMLError

    try:
        data = YAML(typ="safe", pure=True).load(observed.read_text(path))
    except (YAMLError, UnicodeDecodeError) as error:
        raise PinError(f"invalid YAML: {' '.join(str(error).split())[:200]}") from None
    entries = data.get("dependencies", []) if isinstance(data, dict) else []
    pins: list[Pin] = []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict):
            pins.extend(pins_of_lines(list(string_items(entry.get("pip")))))
        elif isinstance(entry, str) and (match := CONDA_ENTRY.match(entry.strip())):
            name, spec = match.groups()
            name = CONDA_NAMES.get(name.lower(), name)
            pin = make_pin(name, conda_specifier(spec), f"{canonical_name(name)}{spec.strip()}")
            pins.extend([pin] if pin is not None else [])
    return pins


def conda_specifier(spec: str) -> str:
    """Conda's `=1.9.5` (that release) and `=1.9` (1.9.*) as PEP 440; others as written."""
    spec = spec.strip().split()[0] if spec.strip() else ""
    if spec.startswith("=") and not spec.startswith("=="):
        version = spec[1:].rstrip(".*")
        return f"=={version}" if len(version.split(".")) >= 3 else f"=={version}.*"
    return spec


# torch: the same files, read the same way, for a second package.


@dataclass(frozen=True)
class TorchResolution:
    """A project's torch target and the warnings met on the way to it."""

    target: TorchTarget
    warnings: tuple[str, ...] = ()


def resolve_torch(root: Path, requested: TorchTarget | None = None) -> TorchResolution:
    """The torch of the project at `root`: `requested` (`--torch-version`) when given, else the
    first file that pins torch (the order of `sources`), else the newest torch known."""
    if requested is not None:
        return TorchResolution(requested)
    warnings: list[str] = []
    for source, read, accept in sources(root):
        try:
            pins = read(source)
        except (PinError, OSError):
            continue  # resolve_target has said so already
        pin = first_pin([pin for pin in pins if accept(pin)], TORCH_PACKAGES)
        if pin is None:
            continue
        if pin.exact is not None:
            return TorchResolution(TorchTarget.exact(pin.exact, display_path(source)))
        releases = torch_releases_in(pin.specifier)
        if releases:
            return TorchResolution(TorchTarget(releases, pin.text, display_path(source)))
        warnings.append(
            f"{display_path(source)}: no known torch release matches {pin.text}; "
            "not used for the torch version"
        )
    return TorchResolution(DEFAULT_TORCH, tuple(warnings))
