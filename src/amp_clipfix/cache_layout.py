"""Where the cache lives: `.amp_clipfix_cache/v<version>-<format>/` in a project's root, shared by
the per-file cache (analysis/cache.py) and the replay of unchanged runs (replay.py)."""

from __future__ import annotations

import os

from amp_clipfix import __version__

CACHE_DIR = ".amp_clipfix_cache"
FORMAT = "3"  # bump when the cached data's shape (or what a run computes from it) changes


def version_folder(root: str | os.PathLike[str]) -> str:
    """This version's folder of the cache in `root`; other versions' folders are left alone."""
    return os.path.join(root, CACHE_DIR, f"v{__version__}-{FORMAT}")


def stays_inside(root: str | os.PathLike[str], folder: str | os.PathLike[str]) -> bool:
    """Whether writing into `folder` (which may not exist yet) writes inside `root`: a cache
    folder (or one of its subfolders) that a repository brings as a symbolic link to elsewhere
    is never written through."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(folder)
    return real == real_root or real.startswith(os.path.join(real_root, ""))


def write_entry(folder: str | os.PathLike[str], name: str, data: bytes) -> None:
    """`folder/name` holds `data` whole or not at all: written to a temporary file and renamed
    into place, so runs that share the cache never read half an entry. Raises OSError."""
    import tempfile  # only when writing: a replay reads

    os.makedirs(folder, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        os.replace(temporary, os.path.join(folder, name))
    except OSError:
        import contextlib

        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
