"""How paths, and what went wrong with them, are shown to people: relative to the current folder,
forward slashes, and the operating system's reason in its own words.

Every stage that names a file (errors, reports, patches) uses these, so a path reads the same
everywhere. Which paths are library code (never a user's site) is a path question too, asked
before anything is parsed.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False  # typing's import is not free at start-up
if TYPE_CHECKING:
    from collections.abc import Iterable


def display_path(path: Path) -> str:
    """Paths relative to the current folder with forward slashes, as in the patch."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        relative = str(path)
    return relative.replace(os.sep, "/")


def index_name(path: str | os.PathLike[str]) -> str:
    """How a file is named in git's index as --tracked-only keeps it (settings.git_tracked):
    its absolute, normalised path in the platform's case, so that two names are equal when
    their `Path`s are (exact on POSIX, case-blind on Windows), without making a `Path`."""
    return os.path.normcase(os.path.abspath(path))


# On POSIX a name's case is its own (normcase changes nothing) and `/` is the one separator.
PLAIN_NAMES = os.sep == "/" and os.altsep is None and os.path.normcase("A") == "A"


def index_names(folder: str, names: list[str]) -> list[str]:
    """`index_name(os.path.join(folder, name))` of each name relative to `folder`, a plain name
    (no empty, `.` or `..` part: what git's index holds) joined to `folder`'s own index name
    without being normalised again: the normalisation is the same part by part, and a plain
    name's parts are left as they are (~6 us a name, 3,000 in NeMo's hook command). When every
    name is plain (`all_plain`), each is the top's text and a separator before the name, as
    `os.path.join` makes it (~0.1 us a name instead of ~1 us)."""
    top = index_name(folder)
    if all_plain(names):
        head = top if top.endswith(os.sep) else top + os.sep
        return [head + name for name in names]
    return [
        os.path.join(top, name) if is_plain(name) else index_name(os.path.join(folder, name))
        for name in names
    ]


def listing_names(listing: bytes) -> list[str]:
    """The names of a `git ... -z` listing (NUL-separated), decoded at once: `os.fsdecode` of
    each name cost ~1 us, and the hook's command on NeMo decodes 3,900 names twice. The same
    names: a file system encoding is ASCII-compatible (UTF-8, or a legacy code page whose
    multi-byte characters never hold a NUL byte), so a NUL byte decodes alone and splits the
    text where it split the bytes."""
    return [name for name in os.fsdecode(listing).split("\0") if name]


def all_plain(names: list[str]) -> bool:
    """Whether `is_plain` holds of every name, asked of their text joined by NULs at once (a
    name holds no NUL): a name that is not plain (empty, starting or ending with `/`, a `//`,
    or a part `.` or `..`) shows one of `_EMPTY_PART` or `_DOT_PART` there, and none shows
    where all are. A part `.` or `..` ends with a dot before a separator, rare in names: the
    pieces that find one (each a scan of the whole text) are looked for only where that shows.
    NeMo's 3,900 names: ~7 M instructions, against ~14 M asked name by name."""
    if not PLAIN_NAMES or not names:
        return PLAIN_NAMES
    joined = "\0".join(names)
    text = f"\0{joined}\0"
    if text.count("\0") != len(names) + 1:  # a name holds a NUL: asked name by name
        return all(map(is_plain, names))
    if any(piece in text for piece in _EMPTY_PART):
        return False
    return not (("./" in text or ".\0" in text) and any(piece in text for piece in _DOT_PART))


_EMPTY_PART = ("\0\0", "\0/", "/\0", "//")  # an empty name, a leading or trailing `/`, a `//`
_DOT_PART = (  # a part `.` or `..`: the whole name, its first, its last or a middle part
    *("\0.\0", "\0./", "/.\0", "/./"),
    *("\0..\0", "\0../", "/..\0", "/../"),
)


def is_plain(name: str) -> bool:
    """A relative name that `os.path.normpath` leaves as it is: on POSIX, parts that are not
    empty, `.` or `..` (what git's index and listings hold, but a nested repository's `x/`)."""
    if not PLAIN_NAMES or not name or name[:1] == "/" or name[-1:] == "/" or "//" in name:
        return False
    text = f"/{name}/"
    return "/./" not in text and "/../" not in text


def path_index_name(path: Path) -> str:
    """index_name of a `Path`: on POSIX the text of an absolute `Path` without a `..` part
    (nor a leading `//`) is its index name already (a `Path` drops `.` parts, repeated and
    trailing slashes)."""
    text = str(path)
    if PLAIN_NAMES and text[:1] == "/" and text[1:2] != "/" and "/.." not in text:
        return text
    return index_name(text)


def os_error_reason(error: OSError) -> str:
    """`Permission denied`, not `[Errno 13] Permission denied: '/x'` (the path is said apart)."""
    return error.strerror or str(error) or type(error).__name__


def unreadable_value(error: ValueError) -> str:
    """What a reader's ValueError that is no syntax error says: Python refuses to turn an
    integer of more than 4,300 digits (`sys.get_int_max_str_digits`) into a number, in JSON,
    TOML and versions alike; the file is reported, never read on at quadratic cost."""
    if "integer string conversion" in str(error):
        return too_many_digits()
    return excerpt(str(error), 120, quoted=False)


def too_many_digits() -> str:
    import sys

    return f"a number of more than {sys.get_int_max_str_digits():,} digits"


def has_too_many_digits(text: str) -> bool:
    """Whether `text` holds a run of more digits than Python turns into an integer."""
    import re
    import sys

    limit = sys.get_int_max_str_digits()
    if not limit or len(text) <= limit:  # no run of digits longer than the text: no pattern
        return False
    return any(len(run) > limit for run in re.findall(r"[0-9]+", text))


EXCERPT_CHARS = 60


def excerpt(text: str, limit: int = EXCERPT_CHARS, quoted: bool = True) -> str:
    """Text read from a file, as a message quotes it: `repr`'s escapes (no control character,
    line break or bidirectional override reaches a terminal raw) and at most `limit`
    characters, so that a file that is not what it seems is never dumped into a message.
    `quoted=False` for a parser's own message about the file (escaped, without quotes)."""
    shown = repr(text[:limit])
    if not quoted:
        shown = shown[1:-1]
    return shown if len(text) <= limit else f"{shown}... ({len(text)} characters)"


LIBRARY_DIRS = frozenset({"site-packages", "dist-packages"})
# The top-level packages of the libraries the analysis models (analysis/names.py's roots): a
# module of one of them is the library's own code, never the user's. Here, not in the registry,
# because the run decides it before anything but the standard library is imported.
LIBRARY_PACKAGES = frozenset({"lightning", "pytorch_lightning", "lightning_fabric", "torch"})
LIGHTNING_PACKAGES: tuple[tuple[str, ...], ...] = (
    ("lightning", "pytorch"),
    ("lightning", "fabric"),
    ("pytorch_lightning",),
    ("lightning_fabric",),
)
# Every folder name one of the rules below needs on the way to a library file.
LIBRARY_NAMES = LIBRARY_DIRS | LIBRARY_PACKAGES | {names[0] for names in LIGHTNING_PACKAGES}


def is_library(path: Path) -> bool:
    """Code under site-packages, or inside Lightning's own package, is never a user site.
    A path with no folder name of LIBRARY_NAMES is neither (asked of every file of a run: one
    set test, not the rules below)."""
    parts = path.parts
    if LIBRARY_NAMES.isdisjoint(parts):
        return False
    if LIBRARY_DIRS & set(parts):
        return True
    for package in LIGHTNING_PACKAGES:
        width = len(package)
        for index in range(len(parts) - width):
            if tuple(parts[index : index + width]) == package:
                return True
    return False


def library_files(root: Path, files: Iterable[Path]) -> set[Path]:
    """The files of the project at `root` that are a library's own code: `is_library`'s, and
    the modules whose qualified name starts with one of LIBRARY_PACKAGES as the project's
    import roots resolve it. The import roots are the project's root and its `src/` (when that
    is no package itself); a module's top-level package is its first folder below them, and it
    is a package when the project holds its `__init__.py`. So `torch/amp/grad_scaler.py` of a
    tree holding torch's sources is `torch.amp.grad_scaler` (library), while `ray/train/torch/
    x.py`, `mylib/torch/utils.py` (a package or a namespace below `mylib`) and a `torch/` folder
    of scripts without an `__init__.py` are the project's own: never a folder's name found
    anywhere in the path."""
    # Folders as strings: a tree of torch's size has thousands of files in a few hundred
    # folders, and a Path's first hash costs more than the whole question about its folder.
    files = list(files)
    parents = [os.path.dirname(os.fspath(path)) for path in files]
    packages = {parent for path, parent in zip(files, parents) if path.name == "__init__.py"}
    top = os.fspath(root)
    source = os.path.join(top, "src")
    roots = (top,) if source in packages else (source, top)
    folders: dict[str, bool] = {}  # a file's answer is its folder's: asked once per folder
    for parent in parents:
        if parent not in folders:
            folders[parent] = library_folder(parent, roots, packages)
    return {path for path, parent in zip(files, parents) if folders[parent]}


def library_folder(folder: str, roots: tuple[str, ...], packages: set[str]) -> bool:
    """Whether the modules of `folder` are library code (library_files): `roots` the import
    roots, the innermost first; `packages` the folders holding an `__init__.py`."""
    # The folder's names without a Path (a folder's text holds no empty name nor `/` of its
    # own; its root's part, `/` or a drive, names no library): ~600 Paths a NeMo run, each
    # parsed, hashed and shown once (pathlib finds its text and hash by raising at first).
    if LIBRARY_NAMES.isdisjoint(folder.split(os.sep)):
        return False  # no folder on the way is named like a library: the common case, free
    if is_library(Path(folder, "__init__.py")):  # a module of the folder, by the path rule
        return True
    for root in roots:
        relative = os.path.relpath(folder, root)
        if relative != os.curdir and relative.split(os.sep, 1)[0] != os.pardir:
            package = os.path.join(root, relative.split(os.sep, 1)[0])
            return os.path.basename(package) in LIBRARY_PACKAGES and package in packages
    return False
