"""The code style of a project, for the code a fix writes: line length and quote style.

Read from the project's own formatter and linter settings, the first that sets it:

- line length: `ruff.toml` / `.ruff.toml` (`line-length`), pyproject.toml `[tool.ruff]
  line-length`, `[tool.black] line-length`, setup.cfg / tox.ini / .flake8 `[flake8]
  max-line-length`, yapf's `column_limit` (`.style.yapf` `[style]`, setup.cfg `[yapf]`,
  pyproject.toml `[tool.yapf]`, the first that has the section, as yapf looks; without the
  key, the limit of its `based_on_style`: pep8 79, google / yapf / facebook 80); else 88
  (ruff's and black's default);
- quotes: ruff's `[format] quote-style` ("single" / "double"; "preserve" keeps double), else
  double (black's `skip-string-normalization` leaves any quotes alone: double is fine there).

Files are read inside the project only; a file that cannot be read or parsed says nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from amp_clipfix import observed
from amp_clipfix.project.config import parsed_toml
from amp_clipfix.records import record

DEFAULT_LINE_LENGTH = 88


@record(frozen=True)
class Style:
    line_length: int = DEFAULT_LINE_LENGTH
    quote: str = "double"  # "single" or "double"

    @property
    def quote_char(self) -> str:
        return "'" if self.quote == "single" else '"'


DEFAULT_STYLE = Style()


def project_style(root: Path) -> Style:
    """The style of the project at `root` (its settings files at the root)."""
    length: int | None = None
    quote: str | None = None
    for name, table in (
        ("ruff.toml", ()),
        (".ruff.toml", ()),
        ("pyproject.toml", ("tool", "ruff")),
    ):
        settings = toml_table(root, name, table)
        if settings is None:
            continue
        length = length or positive(settings.get("line-length"))
        format_table = settings.get("format")
        if quote is None and isinstance(format_table, dict):
            quote = quote_style(format_table.get("quote-style"))
        if length is not None:
            break
    if length is None:
        black = toml_table(root, "pyproject.toml", ("tool", "black"))
        length = positive(black.get("line-length")) if black is not None else None
    if length is None:
        for name in ("setup.cfg", "tox.ini", ".flake8"):
            length = flake8_length(root / name, root)
            if length is not None:
                break
    if length is None:
        length = yapf_column_limit(root)
    return Style(length or DEFAULT_LINE_LENGTH, quote or "double")


def toml_table(root: Path, name: str, table: tuple[str, ...]) -> dict[str, Any] | None:
    path = root / name
    if not observed.is_file(path):
        return None
    try:
        document: Any = parsed_toml(observed.read_inside(path, root))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    for key in table:
        document = document.get(key) if isinstance(document, dict) else None
    return document if isinstance(document, dict) else None


def positive(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def quote_style(value: object) -> str | None:
    return value if value in ("single", "double") else None


def flake8_length(path: Path, root: Path) -> int | None:
    section = ini_section(path, root, "flake8")
    text = section.get("max-line-length", "") if section is not None else ""
    try:
        return positive(int(text)) if text.strip() else None
    except ValueError:
        return None


# yapf's own styles' column limits (yapf/yapflib/style.py); a config without `based_on_style`
# is based on pep8.
YAPF_STYLE_LIMITS = {"pep8": 79, "google": 80, "yapf": 80, "facebook": 80}


def yapf_column_limit(root: Path) -> int | None:
    """The column limit yapf formats the project with, from the first config yapf reads: a
    project formatted by yapf fits its lines to it, not to 88."""
    section = ini_section(root / ".style.yapf", root, "style")
    if section is None:
        section = ini_section(root / "setup.cfg", root, "yapf")
    if section is None:
        table = toml_table(root, "pyproject.toml", ("tool", "yapf"))
        section = {str(k).lower(): str(v) for k, v in table.items()} if table is not None else None
    if section is None:
        return None
    text = section.get("column_limit", "").strip()
    if text:
        try:
            return positive(int(text))
        except ValueError:
            return None
    based_on = section.get("based_on_style", "pep8").strip().strip("'\"").lower()
    return YAPF_STYLE_LIMITS.get(based_on)


def ini_section(path: Path, root: Path, name: str) -> dict[str, str] | None:
    """The options of section `name` of an ini file (keys lowercased), None without it."""
    if not observed.is_file(path):
        return None
    import configparser  # only a project with such a file

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(observed.read_inside(path, root).decode("utf-8"))
        return dict(parser.items(name)) if parser.has_section(name) else None
    except (OSError, ValueError, configparser.Error):
        return None
