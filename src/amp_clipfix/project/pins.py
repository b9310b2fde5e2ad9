"""The Lightning release each project runs on, read from the project's own files.

1. `--lightning-version`, else `lightning-version` in `[tool.amp-clipfix]` (nearest pyproject.toml);
2. the pin that decides: the first file, in the order below, that names a Lightning package with
   a version (within one file: lightning, then pytorch-lightning, then lightning-fabric);
3. the Lightning installed next to amp-clipfix (what the code runs with when amp-clipfix
   shares the project's environment);
4. code evidence (project/evidence.py): a name or hook signature only one line (1.x or 2.x)
   runs narrows the target to that line's releases (the files are read again only here: a
   pre-commit or pipx environment, which has no Lightning);
5. else the latest release (2.6.6), *assumed*: what depends on the release (a spelling, a
   hook's signature) is then left for review, and the report says so.

What the project installs decides before what only an extra, a dependency group or a docs/test
requirements file asks for. Each of the two tiers asks, in this order:

- lock files: uv.lock, poetry.lock, pdm.lock, Pipfile.lock (their dev sections: second tier);
- `==` lines of requirement files (a compiled requirements file is a lock);
- pyproject.toml: `[project] dependencies` and Poetry's main table (first tier), optional
  dependencies, `[dependency-groups]`, Poetry groups (second tier);
- setup.cfg and setup.py (read as data with `ast`, never run): `install_requires` (first tier),
  `extras_require` (second tier);
- ranges in requirement files;
- conda environment.yml (pip section and conda entries);
- Dockerfiles (`Dockerfile`, `Dockerfile.*`, `*.Dockerfile` at the root, in `docker/` and
  `.devcontainer/`): `RUN pip install ...` (continued lines, `-r FILE` read too);
- second tier only (test environments): `.github/workflows/*.yml` (`pip install` in steps),
  tox.ini (`deps =`, `pip install` in `commands`) and noxfile.py (`session.install(...)` string
  literals, read with `ast`, never run), and the requirement files they install with `-r`.

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
`pytorch`) gives the torch target; `--torch-version` overrides it; nothing pinned means the torch
installed next to amp-clipfix, else the newest torch amp-clipfix knows (2.13.0), assumed.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from packaging.version import InvalidVersion, Version

from amp_clipfix import observed
from amp_clipfix.kinds import ErrorKind, FileError
from amp_clipfix.paths import display_path, excerpt
from amp_clipfix.patterns import lazy
from amp_clipfix.project.config import ConfigError, load_config
from amp_clipfix.project.pin_files import Listing, ProjectFiles
from amp_clipfix.project.pin_readers import (
    LOCK_READERS,
    Packages,
    PastLimit,
    Pin,
    PinError,
    Reader,
    conda_pins,
    pyproject_pins,
    requirements_reader,
    setup_cfg_pins,
    setup_py_pins,
)
from amp_clipfix.project.requirement_lines import canonical_name
from amp_clipfix.project.torch_release import (
    ASSUMED_TORCH,
    INSTALLED_SOURCE,
    TorchTarget,
    torch_releases_in,
)
from amp_clipfix.project.version import (
    ASSUMED_TARGET,
    Target,
    line_releases,
    parse_version,
    releases_in,
)
from amp_clipfix.records import record

LIGHTNING = ("lightning", "pytorch-lightning", "lightning-fabric")  # canonical names, by priority
PACKAGES = LIGHTNING
LOCK_FILES = ("uv.lock", "poetry.lock", "pdm.lock", "Pipfile.lock")
CONDA_FILES = ("environment.yml", "environment.yaml")
LIGHTNING_PURPOSE = "the Lightning version"
TORCH = ("torch",)  # the second package read the same way (resolve_torch)
TORCH_PURPOSE = "the torch version"


@record(frozen=True)
class Resolution:
    """A project's target, the warnings met on the way to it and its pin files' errors."""

    target: Target
    warnings: tuple[str, ...] = ()
    errors: tuple[FileError, ...] = ()


def resolve_target(
    root: Path,
    requested: Target | None = None,
    files: Iterable[Path] = (),
    pin_files: ProjectFiles | None = None,
) -> Resolution:
    """The target of the project at `root`: `requested` (the command line) when given; `files`
    (the project's source files) are read for code evidence when no pin decides. `pin_files`:
    the run's pin files, shared with its torch search (resolve_torch)."""
    if requested is not None:
        return Resolution(requested)
    warnings: list[str] = []
    errors: list[FileError] = []
    try:
        configured = configured_target(root)
    except ConfigError as error:
        warnings.append(f"{error}; not used for {LIGHTNING_PURPOSE}")
    else:
        if configured is not None:
            return Resolution(configured)
    for pin, source in candidate_pins(root, LIGHTNING, warnings, errors=errors, files=pin_files):
        target = target_of(pin, display_path(source))
        if target is None:
            warnings.append(
                f"{display_path(source)}: no known Lightning release matches "
                f"{excerpt(pin.text, quoted=False)}; not used for {LIGHTNING_PURPOSE}"
            )
            continue
        return Resolution(target, once(warnings), tuple(errors))
    installed = installed_target()
    if installed is not None:
        return Resolution(installed, once(warnings), tuple(errors))
    from amp_clipfix.project.evidence import code_evidence  # only when nothing else decides

    only_1x, only_2x = code_evidence(files, root)
    if only_1x is not None and only_2x is not None:
        warnings.append(
            f"the code holds pytorch-lightning 1.x-only ({only_1x.describe()}) and Lightning "
            f"2.x-only ({only_2x.describe()}) code; not used for {LIGHTNING_PURPOSE}"
        )
    elif (evidence := only_1x or only_2x) is not None:
        return Resolution(
            evidence_target(evidence.is_2x, evidence.describe()), once(warnings), tuple(errors)
        )
    return Resolution(ASSUMED_TARGET, once(warnings), tuple(errors))


def evidence_target(is_2x: bool, evidence: str) -> Target:
    """The releases of the line the code runs on: `pytorch-lightning 1.x from code evidence:
    `optimizer_idx` in training_step at train.py:12`."""
    pin = "Lightning 2.x" if is_2x else "pytorch-lightning 1.x"
    return Target(line_releases(is_2x), pin, f"code evidence: {evidence}")


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


Accept = Callable[[Pin], bool]


def _any(pin: Pin) -> bool:
    return True


def _exact(pin: Pin) -> bool:
    return pin.exact is not None


def _range(pin: Pin) -> bool:
    return pin.exact is None


def candidate_pins(
    root: Path,
    packages: Packages,
    warnings: list[str],
    purpose: str = LIGHTNING_PURPOSE,
    errors: list[FileError] | None = None,
    files: ProjectFiles | None = None,
) -> Iterator[tuple[Pin, Path]]:
    """The pins of `packages` that may decide, best first, each with the file it came from:
    per source (sources()), the pin of the highest-priority package. Files that cannot be
    read add a warning (ending "; not used for PURPOSE") and are skipped; one past a reader's
    limit (PastLimit) is an error in `errors` instead, once per file. `files`: the project's
    pin files as an earlier search of the run read and listed them (one for `root`)."""
    if files is None:
        files = ProjectFiles(root)
    assert files.root == root, "one project's pin files"
    if files.listed is None:
        files.listed = Listing(sources(root, files))
    listed = files.listed
    for optional in (False, True):
        for path, read, accept in listed:
            if not optional and read is requirements_reader(True):
                continue  # a docs/test requirements file has no pin the project installs
            try:
                pins = files.pins(path, read, packages)
            except PinError as error:
                line = f"{error}; not used for {purpose}"
                if errors is None or not isinstance(error, PastLimit):
                    warnings.append(f"{display_path(path)}: {line}")
                elif all(known.path != path for known in errors):
                    errors.append(FileError(path, line, ErrorKind.READ))
                continue
            pin = first_pin([p for p in pins if p.optional == optional and accept(p)], packages)
            if pin is not None:
                yield pin, path


def sources(root: Path, files: ProjectFiles) -> Iterator[tuple[Path, Reader, Accept]]:
    """The files to ask, in order, with their reader and which of their pins count there;
    each listed only when a search asks past the one before it (pin_files.Listing)."""
    for name in LOCK_FILES:
        if observed.is_file(root / name):
            yield root / name, LOCK_READERS[name], _any
    requirements = requirement_files(root, files)
    for path, optional in requirements:
        yield path, requirements_reader(optional), _exact
    for name, read in (
        ("pyproject.toml", pyproject_pins),
        ("setup.cfg", setup_cfg_pins),
        ("setup.py", setup_py_pins),
    ):
        if observed.is_file(root / name):
            yield root / name, read, _any
    for path, optional in requirements:
        yield path, requirements_reader(optional), _range
    for name in CONDA_FILES:
        if observed.is_file(root / name):
            yield root / name, conda_pins, _any
    # Imported when the listing gets this far: most projects decide before it.
    from amp_clipfix.project import install_readers as shells

    for path in shells.dockerfiles(root):
        yield path, shells.dockerfile_pins, _any
        yield from shells.included_requirements(
            path, root, files.data, files.includes(shells.shell_includes), False
        )
    for path, reader, includes in shells.test_environments(root):
        yield path, reader, _any
        yield from shells.included_requirements(
            path, root, files.data, files.includes(includes), True
        )


# Words in a requirement file's name that say it is not what the project installs.
AUXILIARY_NAMES = """
bench benchmark benchmarks check ci coverage dev develop development doc docs documentation
example examples lint linting mypy notebook notebooks precommit sphinx style test testing tests
tutorial tutorials typing
"""
AUXILIARY_WORDS = frozenset(AUXILIARY_NAMES.split())


def is_auxiliary(path: Path, root: Path) -> bool:
    """`requirements-docs.txt`, `requirements/test.txt`, `requirements/_docs/base.txt`: a name
    (of the file or a folder below the root) that says docs, tests, dev..."""
    relative = os.path.relpath(path, root).lower().removesuffix(".txt")
    words = re.split(r"[^a-z0-9]+", relative.replace("pre-commit", "precommit"))
    return any(word in AUXILIARY_WORDS for word in words)


def is_requirements_name(name: str) -> bool:
    """`fnmatch.fnmatchcase(name, "requirements*.txt")`, without the pattern fnmatch would
    compile for it: the name begins with `requirements` and ends with `.txt`, apart."""
    return name.startswith("requirements") and name.endswith(".txt") and len(name) >= 16


def requirement_files(root: Path, files: ProjectFiles | None = None) -> list[tuple[Path, bool]]:
    """(path, second tier) of the requirement files: `requirements.txt` and what it includes,
    then `requirements*.txt` at the root and `requirements/*.txt`, install files first."""
    found = [root / name for name in _names(root) if is_requirements_name(name)]
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


INCLUDE = lazy(r"^\s*(?:-r|-c|--requirement|--constraint)(?:\s*=\s*|\s+|(?=[^\s-]))(\S+)")


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
            if not line.lstrip().startswith("-"):
                continue  # an include line starts with its option: INCLUDE compiled for one
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
    if (
        name in (*LOCK_FILES, *DECLARATION_FILES, *CONDA_FILES, "tox.ini", "noxfile.py")
        or is_requirements_name(name)
        or (path.parent.name == "requirements" and name.endswith(".txt"))
        or (path.parent.name == "workflows" and name.endswith((".yml", ".yaml")))
    ):
        return True
    from amp_clipfix.project.install_readers import is_dockerfile

    return is_dockerfile(name)


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
        return Target.exact(version, INSTALLED_SOURCE, package)
    return None


INSTALLED = lazy(r"(?P<name>[^-]+)(?:-[^-]+)?\.(?:dist-info|egg-info)", re.IGNORECASE)


def installed_version(package: str) -> str | None:
    """The version of the first distribution named `package` on sys.path, as
    `importlib.metadata.version` finds it (a `*.dist-info` or `*.egg-info` folder, its
    `Version:` header), without importing importlib.metadata: ~40 ms, a tenth of a check run."""
    for entry in sys.path:
        folder = Path(entry or ".")
        try:
            names = observed.distributions(folder)
        except OSError:
            continue
        for name in names:
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


# Readers: each turns a file's bytes into the pins of `packages` it holds, or raises PinError
# (parse_pins turns what the parsers raise on odd content into one too).


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


# torch: the same files, read the same way, for a second package.


@record(frozen=True)
class TorchResolution:
    """A project's torch target, the warnings met on the way to it and the errors."""

    target: TorchTarget
    warnings: tuple[str, ...] = ()
    errors: tuple[FileError, ...] = ()


def resolve_torch(
    root: Path, requested: TorchTarget | None = None, pin_files: ProjectFiles | None = None
) -> TorchResolution:
    """The torch of the project at `root`: `requested` (`--torch-version`) when given, else the
    first file that pins torch (candidate_pins' order), else the torch installed next to
    amp-clipfix, else the newest torch known (assumed). A file that cannot be read was
    reported by resolve_target already: only unknown releases warn here. `pin_files`: the
    files as the run's Lightning search read them (resolve_target)."""
    if requested is not None:
        return TorchResolution(requested)
    unreadable: list[str] = []
    warnings: list[str] = []
    errors: list[FileError] = []
    for pin, source in candidate_pins(root, TORCH, unreadable, TORCH_PURPOSE, errors, pin_files):
        if pin.exact is not None:
            return TorchResolution(
                TorchTarget.exact(pin.exact, display_path(source)), once(warnings), tuple(errors)
            )
        releases = torch_releases_in(pin.specifier)
        if releases:
            target = TorchTarget(releases, pin.text, display_path(source))
            return TorchResolution(target, once(warnings), tuple(errors))
        warnings.append(
            f"{display_path(source)}: no known torch release matches "
            f"{excerpt(pin.text, quoted=False)}; not used for {TORCH_PURPOSE}"
        )
    installed = installed_version("torch")
    if installed is not None:
        try:
            version = Version(Version(installed).public)
        except InvalidVersion:
            pass
        else:
            return TorchResolution(
                TorchTarget.exact(version, INSTALLED_SOURCE), once(warnings), tuple(errors)
            )
    return TorchResolution(ASSUMED_TORCH, once(warnings), tuple(errors))
