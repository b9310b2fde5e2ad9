"""Pins written as install commands: Dockerfiles, CI workflows, tox.ini, noxfile.py (read, never
run), and which of a project's files hold them (pins.sources asks these after the declared pins).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from amp_clipfix import observed
from amp_clipfix.paths import excerpt
from amp_clipfix.patterns import lazy
from amp_clipfix.project.pin_readers import (
    Packages,
    Pin,
    PinError,
    Reader,
    cfg_lines,
    one_line,
    pins_of_lines,
    requirements_reader,
)

# Installs written as commands: Dockerfiles, CI workflows, tox.ini, noxfile.py. A command is
# read, never run: `pip install ARGS` (also `pip3`, `python -m pip`, `uv pip`), its requirement
# arguments as PEP 508 lines, its `-r FILE` / `-c FILE` as files to read (`shell_includes`). An
# argument holding a shell or CI variable (`$PL`, `${{ matrix.pl }}`) is decided elsewhere: skipped.

SHELL_SEPARATORS = frozenset({"&&", "||", ";", "|", "&"})
PIP_OPTIONS_WITH_VALUE = frozenset(
    {
        "-i",
        "--index-url",
        "--extra-index-url",
        "-f",
        "--find-links",
        "--target",
        "-t",
        "--prefix",
        "--root",
        "--python-version",
        "--platform",
        "--implementation",
        "--abi",
        "--cache-dir",
        "--trusted-host",
        "--src",
        "--progress-bar",
        "--upgrade-strategy",
        "--python",
        "-e",
        "--editable",
    }
)
INCLUDE_OPTIONS = frozenset({"-r", "--requirement", "-c", "--constraint"})
QUOTING = lazy(r"[\\'\"]")  # what shlex may turn into other characters of a word
# A word shlex reads (posix) is the line's own characters less the quotes around its parts and
# the backslashes that escape one: with those deleted, the line holds every word's text.
UNQUOTED = str.maketrans("", "", "\\'\"")


def shell_commands(text: str, holding: tuple[str, ...] = ()) -> Iterator[list[str]]:
    """The words of each command of a shell text: lines joined at a trailing `\\`, split with
    shlex (comments dropped), cut at `&&`, `;`, `|`. With `holding`, only the lines whose
    words may hold every one of those (shlex's pure-Python pass over each line of a long
    workflow or README costs more than the rest of a small project's pins): a word is made of
    the line's characters with only quotes and escaping backslashes left out, so the line less
    those (UNQUOTED) must hold them as text (`p"i"p`, `ins\\tall` are still read)."""
    import shlex

    joined = re.sub(r"\\\r?\n", " ", text.replace("\r\n", "\n"))
    for line in joined.split("\n"):
        if holding and not all(word in line for word in holding):
            if not QUOTING.search(line):
                continue
            unquoted = line.translate(UNQUOTED)
            if not all(word in unquoted for word in holding):
                continue
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            words = list(lexer)
        except ValueError:  # an unclosed quote: read it as plain words
            words = line.split()
        command: list[str] = []
        for word in words:
            if word in SHELL_SEPARATORS:
                yield command
                command = []
            else:
                command.append(word)
        yield command


def pip_arguments(words: list[str]) -> list[str] | None:
    """What follows `install` in a pip command (`pip`, `pip3`, `python -m pip`, `uv pip`,
    `RUN pip`), else None."""
    for index, word in enumerate(words):
        name = word.rsplit("/", 1)[-1]
        if re.fullmatch(r"pip\d?(\.\d+)?", name) and words[index + 1 : index + 2] == ["install"]:
            return words[index + 2 :]
    return None


def install_arguments(text: str) -> tuple[tuple[str, bool], ...]:
    """(argument, is an include file) of every `pip install` in a shell text. Memoised by the
    text: a run asks each workflow or Dockerfile several times (its includes and its pins, for
    Lightning's pin and for torch's), and shlex's pure-Python pass is the pins' main cost."""
    return _install_arguments(text)


@functools.lru_cache(maxsize=256)
def _install_arguments(text: str) -> tuple[tuple[str, bool], ...]:
    return tuple(_arguments(text))


def _arguments(text: str) -> Iterator[tuple[str, bool]]:
    for words in shell_commands(text, holding=("pip", "install")):
        arguments = pip_arguments(words)
        if arguments is None:
            continue
        skip = False
        include = False
        for word in arguments:
            if skip:
                skip = False
                continue
            if include:
                include = False
                yield word, True
                continue
            if word in INCLUDE_OPTIONS:
                include = True
            elif word in PIP_OPTIONS_WITH_VALUE:
                skip = True
            elif match := re.fullmatch(r"(?:-r|-c|--requirement=|--constraint=)(\S+)", word):
                yield match[1], True
            elif not word.startswith("-"):
                yield word, False


def requirement_words(words: Iterable[str]) -> list[str]:
    """The arguments that are requirements (not a path, URL, wheel or a variable)."""
    kept = []
    for word in words:
        if "$" in word or "://" in word or word.startswith((".", "/")) or word.endswith(".whl"):
            continue
        kept.append(word)
    return kept


def shell_pins(data: bytes, packages: Packages, optional: bool = False) -> list[Pin]:
    """`pip install` lines of a shell text (a Dockerfile's RUN, a CI step)."""
    text = data.decode("utf-8")
    words = [word for word, include in install_arguments(text) if not include]
    return pins_of_lines(requirement_words(words), packages, optional)


def shell_includes(data: bytes) -> list[str]:
    """The requirement files a shell text's `pip install -r FILE` reads, as written."""
    text = data.decode("utf-8", "replace")
    return [word for word, include in install_arguments(text) if include and "$" not in word]


def dockerfile_pins(data: bytes, packages: Packages) -> list[Pin]:
    """A Dockerfile: its `RUN pip install ...` (the image the project ships: first tier)."""
    return shell_pins(data, packages)


def workflow_pins(data: bytes, packages: Packages) -> list[Pin]:
    """A CI workflow (`.github/workflows/*.yml`): `pip install` in its `run:` steps, read as
    shell text (a test environment: second tier)."""
    return shell_pins(data, packages, optional=True)


def tox_pins(data: bytes, packages: Packages) -> list[Pin]:
    """tox.ini: `deps =` of every `[testenv*]` section (a `py38: ` factor prefix is dropped)
    and `pip install` in its `commands` (test environments: second tier)."""
    import configparser

    parser = configparser.ConfigParser(interpolation=None, strict=False)
    text = data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    try:
        parser.read_string(text, source="tox.ini")
    except configparser.Error as error:
        raise PinError(f"cannot parse: {one_line(error)}") from None
    lines: list[str] = []
    for section in parser.sections():
        if not section.startswith("testenv"):
            continue
        for line in cfg_lines([parser.get(section, "deps", fallback="")]):
            line = re.sub(r"^\s*[\w.,!-]+:\s+", "", line).strip()  # `py38: lightning==1.9`
            if line and not line.startswith("-"):
                lines.append(line)
        commands = parser.get(section, "commands", fallback="")
        lines += [word for word, include in install_arguments(commands) if not include]
    return pins_of_lines(requirement_words(lines), packages, optional=True)


def noxfile_pins(data: bytes, packages: Packages) -> list[Pin]:
    """noxfile.py, read as data with `ast` (never run): the string literals of
    `session.install(...)` calls and of `session.run("pip", "install", ...)` (test
    environments: second tier); `"-r", "FILE"` pairs are includes (`noxfile_includes`)."""
    return pins_of_lines(
        requirement_words(w for w, include in noxfile_arguments(data) if not include),
        packages,
        optional=True,
    )


def noxfile_includes(data: bytes) -> list[str]:
    return [word for word, include in noxfile_arguments(data) if include]


def noxfile_arguments(data: bytes) -> Iterator[tuple[str, bool]]:
    import ast

    try:
        tree = ast.parse(data, filename="noxfile.py")
    except (SyntaxError, ValueError) as error:
        reason = getattr(error, "msg", None) or str(error)
        raise PinError(f"cannot parse: {excerpt(reason, 80, quoted=False)}") from None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        strings = [
            arg.value
            for arg in node.args
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str)
        ]
        if node.func.attr == "install":
            words = strings
        elif node.func.attr == "run" and (pip := pip_arguments(strings)) is not None:
            words = pip
        else:
            continue
        include = False
        for word in words:
            if include:
                include = False
                yield word, True
            elif word in INCLUDE_OPTIONS:
                include = True
            elif not word.startswith("-"):
                yield word, False


READERS: dict[str, Reader] = {
    "Dockerfile": dockerfile_pins,
    "ci.yml": workflow_pins,
    "tox.ini": tox_pins,
    "noxfile.py": noxfile_pins,
}
"""The install-command readers, by a file they read (for tests that feed them any bytes)."""


DOCKER_FOLDERS = ("", "docker", ".devcontainer")


def is_dockerfile(name: str) -> bool:
    return name == "Dockerfile" or name.startswith("Dockerfile.") or name.endswith(".Dockerfile")


def dockerfiles(root: Path) -> list[Path]:
    """`Dockerfile`, `Dockerfile.*`, `*.Dockerfile` at the root, in docker/ and .devcontainer/."""
    found = []
    for folder in DOCKER_FOLDERS:
        base = root / folder if folder else root
        found += [base / n for n in sorted(_names(base)) if is_dockerfile(n)]
    return [path for path in found if observed.is_file(path)]


Includes = Callable[[bytes], list[str]]


def test_environments(root: Path) -> list[tuple[Path, Reader, Includes]]:
    """CI workflows, tox.ini and noxfile.py: what the project is tested with (second tier)."""
    found: list[tuple[Path, Reader, Includes]] = []
    workflows = root / ".github" / "workflows"
    for name in sorted(_names(workflows)):
        if name.endswith((".yml", ".yaml")) and observed.is_file(workflows / name):
            found.append((workflows / name, workflow_pins, shell_includes))
    if observed.is_file(root / "tox.ini"):
        found.append((root / "tox.ini", tox_pins, _no_includes))
    if observed.is_file(root / "noxfile.py"):
        found.append((root / "noxfile.py", noxfile_pins, noxfile_includes))
    return found


def _no_includes(data: bytes) -> list[str]:
    return []


def included_requirements(
    path: Path, root: Path, data: Callable[[Path], bytes], includes: Includes, optional: bool
) -> list[tuple[Path, Reader, Callable[[Pin], bool]]]:
    """The requirement files an install command reads (`pip install -r FILE`), relative to
    the project root (where a Dockerfile's context or a CI job usually starts) or to the file
    itself, inside the project only."""
    try:
        written = includes(data(path))
    except PinError:
        return []
    listed: list[tuple[Path, Reader, Callable[[Pin], bool]]] = []
    for name in written:
        for base in (root, path.parent):
            candidate = Path(os.path.normpath(base / name))
            if observed.is_file(candidate) and observed.inside(candidate, root):
                listed.append((candidate, requirements_reader(optional), _any))
                break
    return listed


def _any(pin: Pin) -> bool:
    return True


def _names(folder: Path) -> list[str]:
    try:
        return observed.listdir(folder)
    except OSError:
        return []
