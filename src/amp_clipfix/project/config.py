"""Settings from `[tool.amp-clipfix]` of the nearest `pyproject.toml`, as ruff reads its own.

The nearest `pyproject.toml` at or above the start folder wins, even without the table, so a
project never picks up a parent project's settings. Command-line options override these.
"""

from __future__ import annotations

import functools
import keyword
import sys
from pathlib import Path
from typing import Any

from amp_clipfix import observed
from amp_clipfix.kinds import Strategy
from amp_clipfix.paths import display_path, excerpt, unreadable_value
from amp_clipfix.project.version import parse_version
from amp_clipfix.records import record, replace

TABLE = "amp-clipfix"
KEYS = (
    "strategy",
    "lightning-version",
    "exclude",
    "extend-exclude",
    "select",
    "extend-select",
    "ignore",
    "per-file-ignores",
    "helper-module",
)
OWN_FILE = "amp-clipfix.toml"  # `--config amp-clipfix.toml`: the keys at its top level
STRATEGIES = tuple(strategy.value for strategy in Strategy)


class ConfigError(Exception):
    """A one-line error naming the file and, where there is one, the key."""


@record(frozen=True)
class Config:
    """The settings found; `None` (or empty) means "not set". `exclude` replaces the default
    user excludes, `extend_exclude` adds to them; `path` is the file they were read from."""

    strategy: str | None = None
    lightning_version: str | None = None
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    select: tuple[str, ...] | None = None  # finding codes (or prefixes) to report; None: all
    ignore: tuple[str, ...] = ()  # codes (or prefixes) never reported
    extend_select: tuple[str, ...] = ()  # codes (or prefixes) added to `select`
    # (glob, codes) pairs: findings reported in a file the glob matches (relative to the
    # project's root, as ruff's `per-file-ignores`) are not reported for those codes.
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # The dotted module the fixes import their helpers from (created or updated by the run);
    # None: each fixed module gets its own copy.
    helper_module: str | None = None
    path: Path | None = None


def find_pyproject(start: Path) -> Path | None:
    """The nearest `pyproject.toml` at or above `start` (a folder, or a file's folder)."""
    start = Path(observed.realpath(start))
    folder = start if observed.is_dir(start) else start.parent
    for candidate in (folder, *folder.parents):
        if observed.is_file(candidate / "pyproject.toml"):
            return candidate / "pyproject.toml"
    return None


def toml_reader() -> Any:
    """tomllib, imported when a TOML file is first read: a project without one reads none."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        import tomli as tomllib
    return tomllib


@functools.lru_cache(maxsize=16)
def parsed_toml(data: bytes) -> dict[str, Any]:
    """The TOML document of these exact bytes. A run reads one pyproject.toml for its options,
    its project's configuration and its pins: keyed by the bytes, the memo gives what parsing
    them again would (an error is raised again each time, never kept). Callers only read it."""
    return toml_reader().loads(data.decode("utf-8"))


def load_config(start: Path) -> Config:
    """The configuration for files under `start`; an empty `Config` when there is none."""
    path = find_pyproject(start)
    if path is None:
        return Config()
    return load_config_file(path)


def load_config_file(path: Path) -> Config:
    """The configuration of one file: `[tool.amp-clipfix]` of a `pyproject.toml`, or the top
    level of any other TOML file (`amp-clipfix.toml`, given with `--config`)."""
    name = display_path(path)
    data = _read_toml(path, name)
    if path.name == "pyproject.toml":
        tool = data.get("tool", {})
        table = tool.get(TABLE) if isinstance(tool, dict) else None
        if table is None:
            return Config()
        where = f"{name}: [tool.{TABLE}]"
    else:
        table, where = data, f"{name}:"
    return config_from_table(table, where, path)


def _read_toml(path: Path, name: str) -> dict[str, Any]:
    tomllib = toml_reader()
    try:
        # Read only inside its own folder: a pyproject.toml that links out is not read.
        return parsed_toml(observed.read_inside(path, path.parent))
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{name}: invalid TOML: {excerpt(str(error), 120, False)}") from None
    except UnicodeDecodeError as error:
        raise ConfigError(f"{name}: invalid TOML: not UTF-8 at byte {error.start}") from None
    except (RecursionError, MemoryError):
        raise ConfigError(f"{name}: invalid TOML: nested too deeply to read") from None
    except ValueError as error:  # after its subclasses above: a number too long to read
        raise ConfigError(f"{name}: invalid TOML: {unreadable_value(error)}") from None
    except observed.LeavesFolder as error:
        raise ConfigError(f"{name}: {error.strerror}") from None
    except OSError as error:
        raise ConfigError(f"{name}: cannot read: {error.strerror or error}") from None


def config_from_table(table: object, where: str, path: Path | None) -> Config:
    """A validated `Config` from the table of `[tool.amp-clipfix]` (or a `--config` file or
    override); ConfigError names `where` and the key."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    for key in table:
        if key not in KEYS:
            raise ConfigError(f"{where} unknown key {excerpt(key)} (known keys: {', '.join(KEYS)})")
    return Config(
        strategy=_strategy(where, table.get("strategy")),
        lightning_version=_lightning_version(where, table.get("lightning-version")),
        exclude=_globs(where, "exclude", table["exclude"]) if "exclude" in table else None,
        extend_exclude=_globs(where, "extend-exclude", table.get("extend-exclude", [])),
        select=_codes(where, "select", table["select"]) if "select" in table else None,
        extend_select=_codes(where, "extend-select", table.get("extend-select", [])),
        ignore=_codes(where, "ignore", table.get("ignore", [])),
        per_file_ignores=_per_file(where, table.get("per-file-ignores", {})),
        helper_module=_helper_module(where, table.get("helper-module")),
        path=path,
    )


def overrides_of(texts: tuple[str, ...]) -> dict[str, Any]:
    """`--config "KEY = VALUE"` overrides (ruff's form), each one TOML key of the table; a key
    given twice keeps the last value. Raises ConfigError naming the option."""
    if not texts:
        return {}
    tomllib = toml_reader()
    table: dict[str, Any] = {}
    for text in texts:
        try:
            parsed = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ConfigError(
                f"--config {excerpt(text)}: neither a file nor KEY = VALUE "
                f"({excerpt(str(error), 80, False)})"
            ) from None
        table.update(parsed)
    config_from_table(table, "--config", None)  # every key and value checked here
    return table


def with_overrides(config: Config, overrides: dict[str, Any]) -> Config:
    """`config` with the keys `overrides` sets replaced (a `--config KEY = VALUE` wins over
    every file)."""
    if not overrides:
        return config
    given = config_from_table(overrides, "--config", None)
    changes = {key.replace("-", "_"): getattr(given, key.replace("-", "_")) for key in overrides}
    return replace(config, **changes)


def shown_value(value: Any) -> str:
    """A value of the file in a message: escaped and short (`excerpt`), with its type when it
    is not a string."""
    if isinstance(value, str):
        return excerpt(value)
    return f"{excerpt(repr(value), quoted=False)} ({type(value).__name__})"


def _strategy(where: str, value: Any) -> str | None:
    if value is None or value in STRATEGIES:
        return value
    shown = shown_value(value)
    raise ConfigError(f"{where} 'strategy' must be one of {', '.join(STRATEGIES)}, not {shown}")


def _lightning_version(where: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        # `lightning-version = 2.10` would be the float 2.1: insist on a string.
        raise ConfigError(
            f"{where} 'lightning-version' must be a quoted string like \"2.6.6\", "
            f"not {shown_value(value)}"
        )
    try:
        parse_version(value)
    except ValueError:
        raise ConfigError(
            f"{where} 'lightning-version' must be X.Y or X.Y.Z, not {excerpt(value)}"
        ) from None
    return value.strip()


def _globs(where: str, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        shown = shown_value(value)
        raise ConfigError(f"{where} {key!r} must be a list of glob strings, not {shown}")
    return tuple(value)


def _codes(where: str, key: str, value: Any) -> tuple[str, ...]:
    """Codes as written, upper-cased; whether they exist is checked (with a warning) by the
    caller, which knows the rules."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        shown = shown_value(value)
        raise ConfigError(f'{where} {key!r} must be a list of codes like "ACF001", not {shown}')
    return tuple(item.strip().upper() for item in value if item.strip())


def _per_file(where: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """`{"tests/*" = ["ACF001"]}`: a table of glob -> list of codes."""
    if not isinstance(value, dict) or not all(
        isinstance(codes, list) and all(isinstance(code, str) for code in codes)
        for codes in value.values()
    ):
        raise ConfigError(
            f"{where} 'per-file-ignores' must be a table of glob = [codes] like "
            f'{{"tests/*" = ["ACF001"]}}, not {shown_value(value)}'
        )
    return tuple(
        (glob, tuple(code.strip().upper() for code in codes if code.strip()))
        for glob, codes in value.items()
    )


def is_dotted_name(value: str) -> bool:
    """`pkg.sub.module`: identifiers that are not keywords, joined by dots."""
    return bool(value) and all(
        part.isidentifier() and not keyword.iskeyword(part) for part in value.split(".")
    )


def _helper_module(where: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not is_dotted_name(value.strip()):
        raise ConfigError(
            f"{where} 'helper-module' must be a dotted module name like \"mypkg.amp_helpers\", "
            f"not {shown_value(value)}"
        )
    return value.strip()


def helper_module_path(root: Path, dotted: str) -> Path:
    """`mypkg.amp_helpers` -> `<root>/mypkg/amp_helpers.py` (or under `src/` when the package
    lives there; `.../__init__.py` when the name is a package). Raises ConfigError when the
    path would leave the project (a symlinked folder)."""
    parts = dotted.split(".")
    base = root
    if not observed.exists(root / parts[0]) and observed.is_dir(root / "src" / parts[0]):
        base = root / "src"
    package = base.joinpath(*parts)
    path = package / "__init__.py" if observed.is_dir(package) else package.with_suffix(".py")
    if not observed.inside(path, root):
        raise ConfigError(
            f"'helper-module' {dotted!r} resolves outside the project ({display_path(root)})"
        )
    return path
