"""The Lightning release each project runs on, read from the project's own files.

1. `--lightning-version`, else `lightning-version` in `[tool.amp-clipfix]` (nearest pyproject.toml);
2. the pin that decides: the first file, in the order below, that names a Lightning package with
   a version (within one file: lightning, then pytorch-lightning, then lightning-fabric);
3. the Lightning installed next to amp-clipfix;
4. else the latest release (2.6.6).

What the project installs decides before what only an extra, a dependency group or a docs/test
requirements file asks for. Each of the two tiers asks, in this order:

- lock files: uv.lock, poetry.lock, pdm.lock, Pipfile.lock (their dev sections: second tier);
- `==` lines of requirement files (a compiled requirements file is a lock);
- pyproject.toml: `[project] dependencies` and Poetry's main table (first tier), optional
  dependencies, `[dependency-groups]`, Poetry groups (second tier);
- setup.cfg and setup.py (read as data with `ast`, never run): `install_requires` (first tier),
  `extras_require` (second tier);
- ranges in requirement files;
- conda environment.yml (pip section and conda entries).

Requirement files: `requirements.txt` and the files it includes (`-r`, `-c`) first, then the other
`requirements*.txt` and `requirements/*.txt`; those whose name says docs, tests, dev, lint, CI,
examples or benchmarks (`requirements-docs.txt`, `requirements/test.txt`) are second tier unless
an install file includes them. The report names the file that decided.

Every file is read through `observed.read_inside`: a link out of the project is never followed
(a warning says so). A file that cannot be read or parsed, whatever it holds, gives a one-line
warning (its text quoted short and escaped) and the next file is asked.

The search takes the package names (`candidate_pins(root, LIGHTNING)`), so another package's pin
is found the same way.

torch is read that way (`resolve_torch`): the first file that pins torch (`torch`; conda's
`pytorch`) gives the torch target; `--torch-version` overrides it; nothing pinned means the newest
torch amp-clipfix knows (2.13.0).
"""

from __future__ import annotations

import ast
import fnmatch
import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from amp_clipfix import observed
from amp_clipfix.paths import display_path, excerpt, os_error_reason
from amp_clipfix.project.config import ConfigError, load_config
from amp_clipfix.project.torch_release import DEFAULT_TORCH, TorchTarget, torch_releases_in
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

LIGHTNING = ("lightning", "pytorch-lightning", "lightning-fabric")  # canonical names, by priority
PACKAGES = LIGHTNING
LOCK_FILES = ("uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock")
CONDA_FILES = ("environment.yml", "environment.yaml")
LIGHTNING_PURPOSE = "the Lightning version"
TORCH = ("torch",)  # the second package read the same way (resolve_torch)
TORCH_PURPOSE = "the torch version"

Packages = Sequence[str]  # canonical distribution names, highest priority first


class PinError(Exception):
    """A pin file that cannot be read: one line, without the file name."""


@dataclass(frozen=True)
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
        warnings.append(f"{error}; not used for {LIGHTNING_PURPOSE}")
    else:
        if configured is not None:
            return Resolution(configured)
    for pin, source in candidate_pins(root, LIGHTNING, warnings):
        target = target_of(pin, display_path(source))
        if target is None:
            warnings.append(
                f"{display_path(source)}: no known Lightning release matches "
                f"{excerpt(pin.text, quoted=False)}; not used for {LIGHTNING_PURPOSE}"
            )
            continue
        return Resolution(target, once(warnings))
    return Resolution(installed_target() or DEFAULT_TARGET, once(warnings))


def once(warnings: list[str]) -> tuple[str, ...]:
    """One warning per file: a file is asked by several sources (exact pins, then ranges)."""
    seen: set[str] = set()
    kept = []
    for warning in warnings:
        path = warning.split(": ", 1)[0]
        if path not in seen:
            seen.add(path)
            kept.append(warning)
    return tuple(kept)


Reader = Callable[[bytes, Packages], list[Pin]]  # a file's bytes -> its pins; raises PinError
Accept = Callable[[Pin], bool]


def _any(pin: Pin) -> bool:
    return True


def _exact(pin: Pin) -> bool:
    return pin.exact is not None


def _range(pin: Pin) -> bool:
    return pin.exact is None


def candidate_pins(
    root: Path, packages: Packages, warnings: list[str], purpose: str = LIGHTNING_PURPOSE
) -> Iterator[tuple[Pin, Path]]:
    """The pins of `packages` that may decide, best first, each with the file it came from:
    per source (sources()), the pin of the highest-priority package. Files that cannot be
    read add a warning (ending "; not used for PURPOSE") and are skipped."""
    files = ProjectFiles(root, packages)
    listed = sources(root, files)
    for optional in (False, True):
        for path, read, accept in listed:
            if not optional and read is requirements_reader(True):
                continue  # a docs/test requirements file has no pin the project installs
            try:
                pins = files.pins(path, read)
            except PinError as error:
                warnings.append(f"{display_path(path)}: {error}; not used for {purpose}")
                continue
            pin = first_pin([p for p in pins if p.optional == optional and accept(p)], packages)
            if pin is not None:
                yield pin, path


class ProjectFiles:
    """The project's pin files, each read once (through the inside-the-project check) and
    parsed once per reader."""

    def __init__(self, root: Path, packages: Packages) -> None:
        self.root = root
        self.packages = tuple(packages)
        self.parsed: dict[tuple[Path, Reader], list[Pin] | PinError] = {}

    def data(self, path: Path) -> bytes:
        """The file's bytes; PinError when it cannot be read or leads out of the project."""
        try:
            return observed.read_inside(path, self.root)
        except observed.LeavesFolder as error:
            raise PinError(str(error.strerror)) from None
        except OSError as error:
            raise PinError(f"cannot read: {os_error_reason(error)}") from None

    def pins(self, path: Path, read: Reader) -> list[Pin]:
        key = (path, read)
        if key not in self.parsed:
            try:
                self.parsed[key] = parse_pins(read, self.data(path), self.packages)
            except PinError as error:
                self.parsed[key] = error
        found = self.parsed[key]
        if isinstance(found, PinError):
            raise found
        return found


def parse_pins(read: Reader, data: bytes, packages: Packages) -> list[Pin]:
    """`read(data)`, whatever the bytes: any content gives pins or a one-line PinError (text
    that is not UTF-8, nesting deeper than the parsers recurse, self-reference...)."""
    try:
        return read(data, packages)
    except PinError:
        raise
    except UnicodeDecodeError as error:
        raise PinError(f"not UTF-8 text (byte {error.start})") from None
    except (RecursionError, MemoryError):
        raise PinError("nested too deeply to read") from None


def sources(root: Path, files: ProjectFiles) -> list[tuple[Path, Reader, Accept]]:
    """The files to ask, in order, with their reader and which of their pins count there."""
    listed: list[tuple[Path, Reader, Accept]] = []
    for name in LOCK_FILES:
        if observed.is_file(root / name):
            listed.append((root / name, LOCK_READERS[name], _any))
    requirements = requirement_files(root, files)
    for path, optional in requirements:
        listed.append((path, requirements_reader(optional), _exact))
    for name, read in (
        ("pyproject.toml", pyproject_pins),
        ("setup.cfg", setup_cfg_pins),
        ("setup.py", setup_py_pins),
    ):
        if observed.is_file(root / name):
            listed.append((root / name, read, _any))
    for path, optional in requirements:
        listed.append((path, requirements_reader(optional), _range))
    for name in CONDA_FILES:
        if observed.is_file(root / name):
            listed.append((root / name, conda_pins, _any))
    return listed


# Words in a requirement file's name that say it is not what the project installs.
AUXILIARY_WORDS = frozenset(
    {
        "bench",
        "benchmark",
        "benchmarks",
        "check",
        "ci",
        "coverage",
        "dev",
        "develop",
        "development",
        "doc",
        "docs",
        "documentation",
        "example",
        "examples",
        "lint",
        "linting",
        "mypy",
        "notebook",
        "notebooks",
        "precommit",
        "sphinx",
        "style",
        "test",
        "testing",
        "tests",
        "tutorial",
        "tutorials",
        "typing",
    }
)


def is_auxiliary(path: Path, root: Path) -> bool:
    """`requirements-docs.txt`, `requirements/test.txt`, `requirements/_docs/base.txt`: a name
    (of the file or a folder below the root) that says docs, tests, dev..."""
    relative = os.path.relpath(path, root).lower().removesuffix(".txt")
    words = re.split(r"[^a-z0-9]+", relative.replace("pre-commit", "precommit"))
    return any(word in AUXILIARY_WORDS for word in words)


def requirement_files(root: Path, files: ProjectFiles | None = None) -> list[tuple[Path, bool]]:
    """(path, second tier) of the requirement files: `requirements.txt` and what it includes,
    then `requirements*.txt` at the root and `requirements/*.txt`, install files first."""
    found = [root / name for name in _names(root) if fnmatch.fnmatchcase(name, "requirements*.txt")]
    folder = root / "requirements"
    found += [folder / name for name in _names(folder) if name.endswith(".txt")]
    found = [path for path in found if observed.is_file(path)]
    main = root / "requirements.txt"
    installed = included_files(main, root, files) if main in found else []
    rest = [path for path in found if path not in installed]
    ordered = [(path, False) for path in installed]
    ordered += [(path, False) for path in rest if not is_auxiliary(path, root)]
    ordered += [(path, True) for path in rest if is_auxiliary(path, root)]
    return ordered


INCLUDE = re.compile(r"^\s*(?:-r|-c|--requirement|--constraint)(?:\s*=\s*|\s+|(?=[^\s-]))(\S+)")


def included_files(start: Path, root: Path, files: ProjectFiles | None) -> list[Path]:
    """`start` and every file it includes (`-r FILE`, `-c FILE`), transitively, in order; only
    files inside the project (links out of it are not followed)."""
    order: list[Path] = []
    pending = [start]
    while pending:
        path = pending.pop(0)
        if path in order:
            continue
        order.append(path)
        if files is None:
            continue
        try:
            text = files.data(path).decode("utf-8", "replace")
        except PinError:
            continue
        for line in text.splitlines():
            match = INCLUDE.match(line)
            if match is None:
                continue
            included = Path(os.path.normpath(path.parent / match[1]))
            if observed.is_file(included) and observed.inside(included, root):
                pending.append(included)
    return order


DECLARATION_FILES = ("pyproject.toml", "setup.cfg", "setup.py")


def is_pin_file(path: Path) -> bool:
    """A file of a kind `sources` reads for a project's pins (by its name, wherever it lies):
    a commit that changes only it can change the findings of its project (pre-commit)."""
    name = path.name
    return (
        name in (*LOCK_FILES, *DECLARATION_FILES, *CONDA_FILES)
        or fnmatch.fnmatchcase(name, "requirements*.txt")
        or (path.parent.name == "requirements" and name.endswith(".txt"))
    )


def _names(folder: Path) -> list[str]:
    try:
        return observed.listdir(folder)
    except OSError:
        return []


def first_pin(pins: list[Pin], packages: Packages = LIGHTNING) -> Pin | None:
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
    for package in LIGHTNING:
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


# Readers: each turns a file's bytes into the pins of `packages` it holds, or raises PinError
# (parse_pins turns what the parsers raise on odd content into one too).


def make_pin(
    name: str, specifier: str, packages: Packages, text: str | None = None, optional: bool = False
) -> Pin | None:
    """A pin when `name` is one of `packages` and `specifier` is a version constraint."""
    package = canonical_name(name)
    if package not in packages or not specifier.strip():
        return None
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
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        requirement = Requirement(line)
    except InvalidRequirement as error:
        reason = str(error).splitlines()[0] if str(error) else "invalid"
        reason = excerpt(reason, 80, quoted=False)
        raise PinError(f"not a requirement: {excerpt(line)} ({reason})") from None
    shown = f"{canonical_name(requirement.name)}{requirement.specifier}"
    written = line.split(";")[0].strip()
    text = re.sub(r"\[[^\]]*\]", "", re.sub(r"\s+", "", written)) if written else shown
    return make_pin(requirement.name, str(requirement.specifier), packages, text, optional)


def names_package(line: str, packages: Packages) -> bool:
    """The requirement's name is one of `packages` (`lightning[extra]>=2`, `Lightning_Fabric`,
    not `lightning-utilities`): only such a line can be a pin, or a malformed one worth a
    warning."""
    name = REQUIREMENT_NAME.match(line)
    return name is not None and canonical_name(name[0]) in packages


REQUIREMENT_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")


def pins_of_lines(lines: list[str], packages: Packages, optional: bool = False) -> list[Pin]:
    pins = []
    for line in lines:
        if line.strip() and (pin := requirement_pin(line.strip(), packages, optional)):
            pins.append(pin)
    return pins


def load_toml(data: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(data.decode("utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise PinError(f"invalid TOML: {excerpt(str(error), 120, quoted=False)}") from None


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
    pins: list[Pin] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and call_name(node.func).endswith("setup")):
            continue
        for keyword in node.keywords:
            if keyword.arg in ("install_requires", "extras_require"):
                lines = literal_strings(keyword.value, assigned)
                pins += pins_of_lines(lines, packages, keyword.arg == "extras_require")
    return pins


def call_name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    return func.attr if isinstance(func, ast.Attribute) else ""


def literal_strings(node: ast.expr, assigned: dict[str, list[ast.expr]]) -> list[str]:
    """The strings of a list/tuple/dict literal, `+` of them, a string of lines, and what
    module-level names were assigned (each name followed once): without recursion, so any
    depth of nesting and any self-reference ends."""
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
CONDA_ENTRY = re.compile(r"^(?:[\w.-]+::)?([A-Za-z0-9_.-]+)\s*(.*)$")


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


# torch: the same files, read the same way, for a second package.


@dataclass(frozen=True)
class TorchResolution:
    """A project's torch target and the warnings met on the way to it."""

    target: TorchTarget
    warnings: tuple[str, ...] = ()


def resolve_torch(root: Path, requested: TorchTarget | None = None) -> TorchResolution:
    """The torch of the project at `root`: `requested` (`--torch-version`) when given, else the
    first file that pins torch (candidate_pins' order), else the newest torch known. A file that
    cannot be read was reported by resolve_target already: only unknown releases warn here."""
    if requested is not None:
        return TorchResolution(requested)
    unreadable: list[str] = []
    warnings: list[str] = []
    for pin, source in candidate_pins(root, TORCH, unreadable, TORCH_PURPOSE):
        if pin.exact is not None:
            return TorchResolution(
                TorchTarget.exact(pin.exact, display_path(source)), once(warnings)
            )
        releases = torch_releases_in(pin.specifier)
        if releases:
            target = TorchTarget(releases, pin.text, display_path(source))
            return TorchResolution(target, once(warnings))
        warnings.append(
            f"{display_path(source)}: no known torch release matches "
            f"{excerpt(pin.text, quoted=False)}; not used for {TORCH_PURPOSE}"
        )
    return TorchResolution(DEFAULT_TORCH, once(warnings))
