"""An on-disk cache of per-file collection results and project resolutions.

Like ruff's: a folder in the project root (`.amp_clipfix_cache/`) that ignores itself in git
(its own `.gitignore` holds `*`). An entry's key holds everything its value depends on: the
tool build and interpreter (`cache_layout.fingerprint`), the project root, the file's path and
bytes (a project entry: every file's, and the collected sites). Entries are sealed with this
user's secret and written to a temporary file and renamed into place: two runs sharing the
folder never read half an entry, and an entry this user did not write for this key (another
machine's, a repository's own, one changed byte) is a miss, as is anything that fails to load.
`--no-cache` bypasses it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import os
import pickle
from enum import Enum
from pathlib import Path, PurePath

from amp_clipfix.cache_layout import (
    MAX_ENTRY_BYTES,
    fingerprint,
    read_sealed,
    seal,
    secret,
    stays_inside,
    tracked,
    version_folder,
    write_entry,
)
from amp_clipfix.models import FileSites


class Cache:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.folder = Path(version_folder(root))
        self.build = fingerprint()
        self.ready = False
        self.writable: bool | None = None  # asked before the first write
        self.secret: bytes | None = secret(root)  # None until one is made: every load misses
        self.inside: dict[str, bool] = {}  # subfolder -> its real place is in the project
        self.digests: dict[int, tuple[bytes, bytes]] = {}  # id(data) -> (data, its sha256)

    def digest(self, data: bytes) -> bytes:
        """sha256 of a file's bytes, once per run: the collection, the trial and the final
        resolution key the same files (a torch-sized tree is 50 MB)."""
        known = self.digests.get(id(data))
        if known is None:  # the entry keeps the bytes alive, so no other object gets their id
            known = (data, hashlib.sha256(data).digest())
            self.digests[id(data)] = known
        return known[1]

    def key(self, path: Path, data: bytes) -> str:
        digest = hashlib.sha256()
        digest.update(f"{self.build}\0{path}\0".encode("utf-8", "surrogateescape"))
        digest.update(self.digest(data))
        return digest.hexdigest()

    def get(self, path: Path, data: bytes) -> FileSites | None:
        value = self.load(self.key(path, data))
        return value if isinstance(value, FileSites) and value.path == path else None

    def put(self, path: Path, data: bytes, sites: FileSites) -> None:
        self.store(self.key(path, data), sites)

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
        folder = os.path.join(self.folder, key[-2:])
        if self.secret is None or not self.is_inside(folder):
            return None
        value = read_sealed(self.secret, folder, key)
        if value is None:
            return None
        try:
            return CachedData(io.BytesIO(value)).load()
        except Exception:  # noqa: BLE001 - an entry that fails to load is a miss, whatever fails
            return None

    def store(self, key: str, value: object) -> None:
        folder = os.path.join(self.folder, key[-2:])
        if not self.may_write() or not self.is_inside(folder):
            return
        if self.secret is None:
            self.secret = secret(self.root, create=True)
        try:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            if self.secret is None or len(data) > MAX_ENTRY_BYTES:
                return
            self.prepare()
            write_entry(folder, key, seal(self.secret, key, data))
        except Exception:  # noqa: BLE001 - an entry that cannot be written is not written
            return

    def may_write(self) -> bool:
        """Never into a cache folder the checkout tracks (a check changes no tracked file)."""
        if self.writable is None:
            self.writable = not tracked(self.root)
        return self.writable

    def is_inside(self, folder: str) -> bool:
        """Nothing is read or written through a link that leads out of the project."""
        known = self.inside.get(folder)
        if known is None:
            known = self.inside[folder] = stays_inside(self.root, folder)
        return known

    def prepare(self) -> None:
        """Create the folder with a `.gitignore` that ignores everything in it."""
        if self.ready:
            return
        root = self.folder.parent
        if not (root / ".gitignore").exists():
            write_entry(root, ".gitignore", b"# Created by amp-clipfix automatically.\n*\n")
        self.ready = True


class CachedData(pickle.Unpickler):
    """An entry holds amp-clipfix's own dataclasses and enums and paths, nothing else. The cache
    is a folder in the project: a repository (a pull request CI checks) may bring entries of
    its own, and a pickle that may name any callable runs code when it is read."""

    def find_class(self, module: str, name: str) -> type:
        if module.startswith("amp_clipfix.") or module == "pathlib":
            try:
                found = super().find_class(module, name)
            except Exception:  # noqa: BLE001 - no such module or name: not our data
                found = None
            if isinstance(found, type) and _is_cached_type(found):
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not cached data")


def _is_cached_type(found: type) -> bool:
    if found.__module__ == "pathlib":
        return issubclass(found, PurePath)
    own = found.__module__.startswith("amp_clipfix.")
    return own and (dataclasses.is_dataclass(found) or issubclass(found, Enum))


def canonical(value: object) -> object:
    """Equal values give equal keys: pickle's bytes depend on which objects are shared and
    a set's order on the process's hash seed, so neither can key the cache (a second run read
    its sites from the cache, and missed the project entry the first run wrote)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return (type(value).__name__, *(canonical(getattr(value, f.name)) for f in fields))
    if isinstance(value, (set, frozenset)):
        return ("set", *sorted((canonical(item) for item in value), key=repr))
    if isinstance(value, dict):
        return ("dict", *sorted(((repr(canonical(k)), canonical(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return tuple(canonical(item) for item in value)
    if isinstance(value, Enum):
        return value.value
    return value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
