"""An on-disk cache of per-file collection results and project resolutions.

Like ruff's: a folder in the project root (`.amp_clipfix_cache/`) that ignores itself in git
(its own `.gitignore` holds `*`). An entry's key holds everything its value depends on: the
tool build and interpreter (`cache_layout.fingerprint`), the project root, the file's path and
bytes (a project entry: every file's, and the collected sites). Entries are sealed with this
user's secret and written to a temporary file and renamed into place: two runs sharing the
folder never read half an entry, and an entry this user did not write for this key (another
machine's, a repository's own, one changed byte) is a miss, as is anything that fails to load.
Every folder on the way is a plain folder of this user, opened without following a link
(cache_layout.Entries): a link a repository ships in its cache folder is never written through.
`--no-cache` bypasses it.
"""

from __future__ import annotations

import contextlib
import copyreg
import hashlib
import io
import os
import pickle
from collections.abc import Callable
from enum import Enum
from pathlib import Path, PurePath
from stat import S_IFDIR, S_IFREG

from amp_clipfix import observed
from amp_clipfix.cache_layout import (
    MAX_ENTRY_BYTES,
    SEAL,
    TAG_BYTES,
    Entries,
    _plain,
    fingerprint,
    unseal,
    version_folder,
)
from amp_clipfix.records import is_record, record_names

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from amp_clipfix.analysis.file_values import FileValues
    from amp_clipfix.analysis.per_file_entry import PerFileEntry
    from amp_clipfix.models import FileSites


class Cache:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = Path(version_folder(root))
        self.build = fingerprint()
        self.entries = Entries(root)
        self.digests: dict[int, tuple[bytes, bytes]] = {}  # id(data) -> (data, its digest)
        self.paths: dict[str, Path] = {}  # the paths the entries loaded hold, by their text
        # file_tests.FileTests by test, file_values.FileValues by kind: saved at the end
        self.per_file: dict[str, PerFileEntry] = {}

    def digest(self, data: bytes) -> bytes:
        """blake2b-256 of a file's bytes, once per run: the collection, the trial and the final
        resolution key the same files (a torch-sized tree is 50 MB). The digest the replay's
        notes made when the run read the file (`observed.content_digest`): one hash per file."""
        known = self.digests.get(id(data))
        if known is None:  # the entry keeps the bytes alive, so no other object gets their id
            known = (data, observed.content_digest(data))
            self.digests[id(data)] = known
        return known[1]

    def key(self, path: Path, data: bytes) -> str:
        digest = hashlib.sha256()
        digest.update(f"{self.build}\0{path}\0".encode("utf-8", "surrogateescape"))
        digest.update(self.digest(data))
        return digest.hexdigest()

    def get(self, path: Path, data: bytes) -> FileSites | None:
        from amp_clipfix.models import FileSites  # a file to parse: the analysis is imported

        together, digest = self.values("sites"), self.digest(data)
        value = together.get(path, digest)  # the project's entry first (file_values.py)
        if isinstance(value, FileSites) and value.path == path:
            return value
        value = self.load(self.key(path, data))
        if not (isinstance(value, FileSites) and value.path == path):
            return None
        together.put(path, digest, value)
        return value

    def put(self, path: Path, data: bytes, sites: FileSites) -> None:
        self.store(self.key(path, data), sites)
        self.values("sites").put(path, self.digest(data), sites)

    def text(self, kind: str, path: Path, data: bytes, compute: Callable[[], bytes]) -> bytes:
        """`compute()`, a text made from the file's bytes alone (a notebook's code), by its key
        (the project's entry of such texts first: file_values.py)."""
        together, digest = self.values(kind), self.digest(data)
        value = together.get(path, digest)
        if isinstance(value, bytes):
            return value
        key = f"{kind}-{self.key(path, data)}"
        value = self.load(key)
        if not isinstance(value, bytes):
            value = compute()  # raises as it would without the cache: nothing is stored
            self.store(key, value)
        together.put(path, digest, value)
        return value

    def values(self, kind: str) -> FileValues:
        """The run's per-file values of `kind` kept in one project entry (file_values.py): one
        object a run, loaded when first asked."""
        found = self.per_file.get(f"values {kind}")
        if found is None:  # the first ask of the run (an import statement costs ~4 K instructions)
            from amp_clipfix.analysis.file_values import FileValues

            key = self.project_entry("values", kind)
            found = FileValues(key, self.load(key), self.store)
            self.per_file[f"values {kind}"] = found
        return found  # type: ignore[return-value]  # under "values ...": a FileValues alone

    def save_per_file(self) -> None:
        """Once the run is done: the per-file entries it answered enough files of elsewhere,
        written again (per_file_entry.py)."""
        for entry in self.per_file.values():
            entry.save()

    def project_entry(self, kind: str, detail: str) -> str:
        """The name of one of the project's own entries (`kind`: the word index, a file test),
        by the build, the root and `detail` (what else its value depends on)."""
        head = f"{self.build}\0{kind}\0{self.root}\0{detail}"
        return f"{kind}-{hashlib.sha256(head.encode('utf-8', 'surrogateescape')).hexdigest()}"

    def project_key(self, stage: str, inputs: dict[Path, bytes], sites: object) -> str:
        """A project resolution depends on the project's root (module names), every file's
        text and on the collected sites."""
        head = f"{self.build}\0{stage}\0{self.root}\0"
        digest = hashlib.sha256(head.encode("utf-8", "surrogateescape"))
        for path in sorted(inputs, key=str):
            digest.update(str(path).encode("utf-8", "surrogateescape") + b"\0")
            digest.update(self.digest(inputs[path]))
        digest.update(repr(canonical(sites)).encode("utf-8", "surrogateescape"))
        return "project-" + digest.hexdigest()

    def load(self, key: str) -> object | None:
        """The value stored under `key`, or None: a miss is anything but a value this user
        stored under this key (nothing else is ever unpickled), and any failure to load."""
        value = self.entries.read(os.path.join(self.folder, key[-2:]), key)
        if value is None:
            return None
        try:
            return CachedData(io.BytesIO(value), self.paths).load()
        except Exception:  # noqa: BLE001 - an entry that fails to load is a miss, whatever fails
            return None

    def prune_queries(self, used: set[str]) -> None:
        """Remove the query entries (queries.py) not in `used`, but the newest `KEPT_QUERIES`
        (of the queries and revisions, and apart of the shared reads, which a run writes few
        of): only plain files of this user with such a name, sealed under it with this user's
        secret, in plain folders of this user opened without following a link (as
        `Entries.prune`), nothing outside the cache's folders."""
        entries, key = self.entries, self.entries.key
        top = None if key is None else entries.folder(str(self.folder))
        if key is None or top is None:
            return
        with top:
            try:
                shards = [n for n in top.names() if (s := top.status(n)) and _plain(s, S_IFDIR)]
            except OSError:
                return
        found: list[tuple[int, str, str]] = []
        for shard in shards:
            opened = entries.folder(os.path.join(self.folder, shard))
            if opened is not None:
                with opened, contextlib.suppress(OSError):
                    for name in opened.names():
                        if not is_query_name(name) or name in used:
                            continue
                        status = opened.status(name)
                        if status is not None and _plain(status, S_IFREG):
                            found.append((status.st_mtime_ns, shard, name))
        shared = sorted((f for f in found if f[2].startswith("reads-")), reverse=True)
        others = sorted((f for f in found if not f[2].startswith("reads-")), reverse=True)
        for _, shard, name in [*others[KEPT_QUERIES:], *shared[KEPT_QUERIES:]]:
            opened = entries.folder(os.path.join(self.folder, shard))
            if opened is not None:
                with opened, contextlib.suppress(OSError):
                    data = opened.read(name, len(SEAL) + TAG_BYTES + MAX_ENTRY_BYTES)
                    if data is not None and unseal(key, name, data) is not None:
                        opened.unlink(name)

    def store(self, key: str, value: object) -> None:
        try:
            data = pickled(value)
        except Exception:  # noqa: BLE001 - a value that cannot be pickled is not stored
            return
        self.store_pickled(key, data)

    def store_pickled(self, key: str, data: bytes) -> None:
        """Store what `load` gives as the value `data` is the pickle of."""
        self.entries.write(os.path.join(self.folder, key[-2:]), key, data)


# Query entries kept beyond the ones a run used: another command's on the same project (the
# pre-commit hook's, a `--select` run) stays warm across a few runs of this one.
KEPT_QUERIES = 48
_HEX = frozenset("0123456789abcdef")


def is_query_name(name: str) -> bool:
    """A query's, a revision's or a shared read's entry name (queries.py): the kind, a dash,
    64 hex digits."""
    kind, _, digest = name.partition("-")
    return kind in ("query", "revision", "reads") and len(digest) == 64 and _HEX.issuperset(digest)


def shared_key(data: bytes) -> str:
    """The name of the entry that holds a large read field's pickled `data` (queries.py
    `share`): one entry for equal fields, whichever query wrote them."""
    return f"reads-{hashlib.sha256(data).hexdigest()}"


def pickled(value: object) -> bytes:
    """The bytes an entry holds for `value`: pickle's, but a path of this system's class as
    its text (`path_of`). pickle's own form names the path's parts, parsed again one by one
    when loaded (8.6 us a path, ~7 ms of the 837 paths NeMo's hook command loads); a text
    is parsed once (5.7 us), and once a run for the paths several entries hold (`Cache.paths`:
    339 texts there)."""
    buffer = io.BytesIO()
    _EntryPickler(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


def path_of(text: str) -> Path:
    """The path an entry holds as `text` (`pickled`); loading, CachedData builds it once a run."""
    return Path(text)


def _path_reduced(path: Path) -> tuple[Callable[[str], Path], tuple[str]]:
    return path_of, (str(path),)


class _EntryPickler(pickle.Pickler):
    # By exact class, as pickle asks it: another PurePath class keeps pickle's own form.
    dispatch_table = {**copyreg.dispatch_table, type(Path()): _path_reduced}


class CachedData(pickle.Unpickler):
    """An entry holds amp-clipfix's own dataclasses and enums and paths, nothing else. The cache
    is a folder in the project: a repository (a pull request CI checks) may bring entries of
    its own, and a pickle that may name any callable runs code when it is read."""

    def __init__(self, file: io.BytesIO, paths: dict[str, Path] | None = None) -> None:
        super().__init__(file)
        self.paths = {} if paths is None else paths  # the run's paths by text (Cache.paths)

    def path(self, text: object) -> Path:
        """`path_of`, once a run per text: paths are immutable, so entries share them."""
        if type(text) is not str:
            raise pickle.UnpicklingError("a path is held as its text")
        found = self.paths.get(text)
        if found is None:
            found = self.paths[text] = Path(text)
        return found

    def find_class(self, module: str, name: str) -> Any:
        """The class, once a process: a warm run unpickles ~1,400 class references (NeMo's
        hook command), of a few dozen classes. A name that is no cached data is never kept:
        it raises each time. `path_of` is the one function an entry names (`pickled`)."""
        if name == "path_of" and module == __name__:
            return self.path
        known = _FOUND.get((module, name))
        if known is not None:
            return known
        if module.startswith("amp_clipfix.") or module == "pathlib":
            try:
                found = super().find_class(module, name)
            except Exception:  # noqa: BLE001 - no such module or name: not our data
                found = None
            if isinstance(found, type) and _is_cached_type(found):
                _FOUND[module, name] = found
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not cached data")


_FOUND: dict[tuple[str, str], type] = {}  # the classes CachedData found, by module and name


def _is_cached_type(found: type) -> bool:
    if found.__module__ == "pathlib":
        return issubclass(found, PurePath)
    own = found.__module__.startswith("amp_clipfix.")
    return own and (_is_dataclass(found) or is_record(found) or issubclass(found, Enum))


def _is_dataclass(kind: type) -> bool:
    """`dataclasses.is_dataclass` of a class, without importing dataclasses for a run that
    made none (a check with nothing to find)."""
    return hasattr(kind, "__dataclass_fields__")


def canonical(value: object) -> object:
    """Equal values give equal keys: pickle's bytes depend on which objects are shared and
    a set's order on the process's hash seed, so neither can key the cache (a second run read
    its sites from the cache, and missed the project entry the first run wrote). How a value
    is read depends on its class alone, found once per class (`_shape`): a warm run keys its
    queries by every collected site (NeMo: 20,000 values, 4x the time asked value by value)."""
    kind = type(value)
    shape = _SHAPES.get(kind)
    if shape is None:
        shape = _SHAPES[kind] = _shape(kind)
    if shape is _SCALAR:
        return value
    if type(shape) is tuple:  # a dataclass or record: its class's name, its fields in order
        return (shape[0], *[canonical(getattr(value, name)) for name in shape[1]])
    if shape is _SEQUENCE:
        return tuple([canonical(item) for item in value])  # type: ignore[attr-defined]
    if shape is _TEXT:
        return str(value)
    if shape is _ENUM:
        return value.value  # type: ignore[attr-defined]
    if shape is _SET:
        return ("set", *sorted((canonical(item) for item in value), key=repr))  # type: ignore[attr-defined]
    items = value.items()  # type: ignore[attr-defined]
    return ("dict", *sorted((repr(canonical(k)), canonical(v)) for k, v in items))


_SCALAR, _SEQUENCE, _TEXT, _ENUM, _SET, _DICT = "scalar", "sequence", "text", "enum", "set", "dict"
_SHAPES: dict[type, object] = {}  # by class: how canonical reads its values (_shape)


def _shape(kind: type) -> object:
    """How canonical reads a value of class `kind`, tested in this order: a class (any
    metaclass's instance) as its text; a dataclass's or a record's fields; a set; a dict; a
    list or tuple; an Enum's value; str, int, float, bool, None as they are; else its text."""
    if issubclass(kind, type):
        return _TEXT
    if _is_dataclass(kind):
        import dataclasses  # imported already: it made the class

        fields = dataclasses.fields(kind)  # type: ignore[arg-type]  # checked just above
        return (kind.__name__, tuple(f.name for f in fields))
    if is_record(kind):
        return (kind.__name__, record_names(kind))
    for bases, shape in _KINDS:
        if issubclass(kind, bases):
            return shape
    return _TEXT


_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    ((set, frozenset), _SET),
    (dict, _DICT),
    ((list, tuple), _SEQUENCE),
    (Enum, _ENUM),
    ((str, int, float, bool, type(None)), _SCALAR),
)
