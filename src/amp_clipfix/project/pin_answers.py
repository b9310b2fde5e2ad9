"""What each pin file's reader gave, kept in the analysis cache by the file's bytes (issue 35).

A reader is a pure function of a file's bytes and the package names (`Reader(data, packages)`:
no path, so it reads nothing else), so its answer is kept as the per-file cache keeps a file's
sites: by the tool's build (the entry's name, `Cache.project_entry`) and the digest of the
bytes the run read. The run still reads every pin file (the replay notes those reads); only the
parsing is spared: NeMo's 66 requirement files are parsed once, not at every hook run.

One entry per project holds the answers the run asked for (what an earlier run asked and this
one did not is dropped), written only when they differ from the ones loaded. A pin is kept as
its package, the text of its specifier (`SpecifierSet`'s own, which it parses back to an equal
set), its text and its tier; a reader's error as its kind and its line. A reader without a
stable name (not amp-clipfix's own) is never kept. The requirement files a Dockerfile, a CI
workflow or a noxfile installs (`pip install -r FILE`, install_readers' `Includes`: pure
functions of the bytes too) are kept the same way. A cache is never a source of truth: an
entry that fails to load, or holds anything but these shapes, is no entry.
"""

from __future__ import annotations

from functools import partial

from amp_clipfix.function_names import stored_name
from amp_clipfix.project.pin_readers import Packages, PastLimit, Pin, PinError, Reader

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Protocol

    Parse = Callable[[Reader, bytes, Packages], list[Pin]]
    Includes = Callable[[bytes], list[str]]

    class Cache(Protocol):
        """What the memo asks of the analysis cache (analysis/cache.py's `Cache`)."""

        def project_entry(self, kind: str, detail: str) -> str: ...
        def load(self, key: str) -> object | None: ...
        def store(self, key: str, value: object) -> None: ...
        def digest(self, data: bytes) -> bytes: ...


KIND = "pins"
# The package list of an `includes` answer's key: a function that lists the requirement files a
# shell text installs (install_readers.shell_includes) is no reader, so its name never meets
# a reader's.
INCLUDES = ("<includes>",)
ERRORS: dict[str, type[PinError]] = {"error": PinError, "limit": PastLimit}
# A reader's pins or error, or the file names `includes` listed.
Kept = tuple[str, tuple[tuple[str, str, str, bool], ...] | tuple[str, ...] | str]


def reader_name(read: Reader | Includes) -> str | None:
    """`module.function` of one of amp-clipfix's readers or include listers (with a partial's
    bound arguments); None for any other function."""
    function, bound = read, ""
    if isinstance(read, partial):
        function, bound = read.func, repr((read.args, sorted(read.keywords.items())))
    named = stored_name(function)
    return None if named is None else f"{named[0]}.{named[1]}{bound}"


class PinMemo:
    """The readers' answers of one project's pin files, loaded from and saved to its cache."""

    def __init__(self, cache: Cache) -> None:
        self.cache = cache
        self.name = cache.project_entry(KIND, "")
        loaded = cache.load(self.name)
        self.loaded: dict[tuple[str, tuple[str, ...], bytes], Kept] = (
            loaded if type(loaded) is dict else {}
        )
        self.used: dict[tuple[str, tuple[str, ...], bytes], Kept] = {}

    def pins(self, read: Reader, data: bytes, packages: Packages, parse: Parse) -> list[Pin]:
        """`parse(read, data, packages)`, or what it gave for these bytes before."""
        name = reader_name(read)
        if name is None:
            return parse(read, data, packages)
        key = (name, tuple(packages), self.cache.digest(data))
        kept = self.loaded.get(key)
        found = None if kept is None else _restored(kept)
        if kept is None or found is None:
            try:
                pins = parse(read, data, packages)
            except PinError as error:
                kept = (_error_kind(error), str(error))
                found = error
            else:
                kept = (
                    "pins",
                    tuple((p.package, str(p.specifier), p.text, p.optional) for p in pins),
                )
                found = pins
        if kept[0] != "?":  # an error of another kind is raised again, never kept
            self.used[key] = kept
        if isinstance(found, PinError):
            raise found
        return found

    def includes(self, includes: Includes, data: bytes) -> list[str]:
        """`includes(data)`, the requirement files a Dockerfile's, a workflow's or a
        noxfile's installs name, or what it gave for these bytes before: listing them is a
        pure-Python shell (or `ast`) pass over the file, at every run that lists the pin
        files (NeMo's Dockerfiles and workflows: ~2% of the hook's command after an edit)."""
        name = reader_name(includes)
        if name is None:
            return includes(data)
        key = (name, INCLUDES, self.cache.digest(data))
        names = _included(self.loaded.get(key))
        if names is None:
            names = tuple(includes(data))  # raises as it would: nothing kept
        self.used[key] = ("includes", names)
        return list(names)

    def save(self) -> None:
        """The answers this run asked for, when they are not the ones loaded."""
        if self.used and self.used != self.loaded:
            self.cache.store(self.name, self.used)


def _included(kept: object) -> tuple[str, ...] | None:
    """The names an `includes` answer kept (`PinMemo.includes`), or None when `kept` is not
    one."""
    if type(kept) is not tuple or len(kept) != 2 or kept[0] != "includes":
        return None
    names = kept[1]
    if type(names) is not tuple or not all(type(name) is str for name in names):
        return None
    return names


def _error_kind(error: PinError) -> str:
    return "limit" if type(error) is PastLimit else "error" if type(error) is PinError else "?"


def _restored(kept: object) -> list[Pin] | PinError | None:
    """The answer `kept` holds, or None when it is not one of the shapes `pins` keeps."""
    if type(kept) is not tuple or len(kept) != 2:
        return None
    kind, value = kept
    if type(kind) is not str:
        return None
    if kind in ERRORS and type(value) is str:
        return ERRORS[kind](value)
    if kind != "pins" or type(value) is not tuple:
        return None
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    pins = []
    for item in value:
        if type(item) is not tuple or len(item) != 4:
            return None
        package, specifier, text, optional = item
        if not (type(package) is str and type(specifier) is str and type(text) is str):
            return None
        if type(optional) is not bool:
            return None
        try:
            pins.append(Pin(package, SpecifierSet(specifier), text, optional))
        except InvalidSpecifier:
            return None
    return pins
