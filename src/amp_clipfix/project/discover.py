"""Turn the paths given on the command line into projects and the Python files to process.

Each path belongs to the project whose root is the nearest folder with a project marker; files are
grouped per project so that project-wide settings apply once. Walking never follows symlinked
folders (so link loops cannot hang it). Nothing outside the project is ever taken: a path whose
real location (every link on the way resolved, linked folders too) lies outside its project's
real root is refused, and a linked file is listed under the path of the file it leads to, so
the patch and the report name the file that will be written.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from amp_clipfix import observed
from amp_clipfix.kinds import ErrorKind, FileError
from amp_clipfix.paths import all_plain, is_plain, listing_names, os_error_reason
from amp_clipfix.records import record

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
SOURCE_SUFFIXES = (".py", ".ipynb", ".yaml", ".yml")  # files found by walking folders

DEFAULT_EXCLUDES = (
    ".git",
    ".hg",
    ".svn",
    ".venv",
    "venv",
    "env",
    "site-packages",
    "node_modules",
    "build",
    "dist",
    "__pycache__",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".ruff_cache",
    ".pytest_cache",
    ".eggs",
)


@record(frozen=True)
class Project:
    """A project root and its Python files (absolute, sorted, unique)."""

    root: Path
    files: tuple[Path, ...]
    # Files with several hard links, every one of which was found here: rewriting them in
    # place keeps the names linked. Other hard-linked files are replaced, so that a name
    # outside the tree is never written through.
    linked_inside: frozenset[Path] = frozenset()


@record(frozen=True)
class Discovery:
    """Projects sorted by root, one-line errors for paths that could not be used, and notes
    for paths that held nothing to read (not an error: the run's exit code does not change)."""

    projects: tuple[Project, ...]
    errors: tuple[FileError, ...]
    notes: tuple[str, ...] = ()


class _Found(NamedTuple):
    """A file a walk or the command line found. A tuple, not a record: a walk makes one per
    file (3,000 on NeMo), and a record's checked `__init__` cost ~9% of `discover`."""

    path: Path
    root: Path
    is_link: bool


def find_project_root(path: Path) -> Path:
    """The nearest folder at or above `path` with a project marker, else `path`'s own folder."""
    absolute = _absolute(path)
    start = absolute if observed.is_dir(absolute) else absolute.parent
    for folder in (start, *start.parents):
        if any(observed.lexists(folder / marker) for marker in PROJECT_MARKERS):
            return folder
    return start


Excludes = Sequence[str] | Callable[[Path], Sequence[str]]


def discover(
    paths: Sequence[Path],
    exclude: Excludes = (),
    force_exclude: bool = False,
    implied: Collection[Path] = (),
    tracked_only: bool = False,
) -> Discovery:
    """Collect the Python files under `paths`, grouped by project; bad paths become error lines.

    `exclude` is a list of globs, or each project root's own list (its configuration). Paths
    named explicitly are kept even if excluded (any suffix), unless `force_exclude` (ruff's
    `--force-exclude`, what pre-commit hooks need): then an excluded named path is skipped with a
    note that says so. A file reached twice is listed once. Projects that end up with no files
    are left out. `implied` paths (the project roots a partial run adds) get no notes.
    `tracked_only`: the run keeps only the files git's index holds (settings.py), so git need
    not list the untracked files of an implied root (_index_listed).
    """
    globs_of = _globs_of(exclude)
    found: list[_Found] = []
    errors: list[FileError] = []
    notes: list[str] = []
    # given, absolute, the files walked, why the folder itself is excluded (None: it is not)
    folders: list[tuple[Path, Path, list[_Found], str | None]] = []
    for given in paths:
        absolute = _absolute(given)
        if not observed.exists(absolute):
            kind = (
                "broken symbolic link"
                if observed.is_symlink(absolute)
                else "no such file or directory"
            )
            errors.append(FileError(given, kind, ErrorKind.PATH))
        elif _leaves_project(absolute):
            message = "a link leads outside the project; not processed"
            errors.append(FileError(given, message, ErrorKind.PATH))
        elif not (observed.is_dir(absolute) or observed.is_file(absolute)):
            errors.append(FileError(given, "not a regular file or directory", ErrorKind.PATH))
        else:
            root = find_project_root(absolute)
            globs = globs_of(root)
            reason = exclusion(absolute, root, globs)
            if reason is not None and force_exclude:
                notes.append(f"{given}: excluded ({reason}); skipped (--force-exclude)")
            elif observed.is_dir(absolute):
                walked = _walk(absolute, root, globs, errors)
                folders.append((given, absolute, walked, reason))
            else:
                is_link = observed.is_symlink(absolute)
                found.append(_Found(_linked_file(absolute, root), root, is_link))
    pairs = [(absolute, walked) for _, absolute, walked, _ in folders]
    index_only = frozenset(a for g, a, _, _ in folders if tracked_only and g in implied)
    kept = _not_git_ignored(pairs, index_only)
    chosen, linked_inside, several = _dedupe([*found, *(item for left in kept for item in left)])
    if index_only and not _index_listed(several, pairs, kept):
        kept = _not_git_ignored(pairs)
        chosen, linked_inside, _ = _dedupe([*found, *(item for left in kept for item in left)])
    for (given, _, walked, reason), left in zip(folders, kept):
        if given in implied:
            pass
        elif walked and not left:
            notes.append(f"{given}: excluded (ignored by git); nothing read")
        elif not left and reason is not None:
            notes.append(f"{given}: excluded ({reason}); nothing read")
        elif not left:
            notes.append(f"{given}: no Python files, notebooks or configs found")

    files_by_root: dict[Path, list[Path]] = {}
    for item in chosen:
        files_by_root.setdefault(item.root, []).append(item.path)
    projects = tuple(
        Project(
            root=root,
            files=tuple(sorted(set(files), key=path_order)),
            linked_inside=frozenset(files) & linked_inside if linked_inside else frozenset(),
        )
        for root, files in sorted(files_by_root.items())
    )
    return Discovery(projects=projects, errors=tuple(errors), notes=tuple(notes))


def path_order(path: Path) -> tuple[str, ...]:
    """Path's own order (part by part), computed once per path rather than per comparison."""
    return path.parts


def _walk(top: Path, root: Path, globs: tuple[str, ...], errors: list[FileError]) -> list[_Found]:
    """Python files under `top`, iteratively and in sorted order, without following folder links."""
    real_root = Path(observed.realpath(root))
    found: list[_Found] = []
    pending = [top]
    while pending:
        folder = pending.pop()
        try:
            entries = observed.scandir(folder)
        except OSError as error:
            message = f"cannot read folder: {os_error_reason(error)}"
            errors.append(FileError(folder, message, ErrorKind.READ))
            continue
        subfolders: list[Path] = []
        for entry in entries:
            # A path is made only for what is kept (most entries of a tree are other files),
            # by joining the name to the folder's: parsing the whole `entry.path` again cost
            # twice as much (~0.012 s of NeMo's 3,000 files). The same `Path`: a name holds no
            # separator.
            entry_path = folder / entry.name if globs else None
            if entry_path is not None and _is_excluded(entry_path, root, globs):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in DEFAULT_EXCLUDES:
                        subfolders.append(entry_path or folder / entry.name)
                elif entry.name.endswith(SOURCE_SUFFIXES) and entry.is_file():
                    entry_path = entry_path or folder / entry.name
                    is_link = entry.is_symlink()
                    if is_link and not observed.inside(entry_path, real_root):
                        continue
                    path = _linked_file(entry_path, root) if is_link else entry_path
                    found.append(_Found(path, root, is_link))
            except OSError as error:
                message = f"cannot read: {os_error_reason(error)}"
                errors.append(FileError(entry_path or folder / entry.name, message, ErrorKind.READ))
        # Reversed so that popping from the end visits subfolders in sorted order.
        pending.extend(reversed(subfolders))
    return found


def _globs_of(exclude: Excludes) -> Callable[[Path], tuple[str, ...]]:
    """Each project root's exclude globs, trailing slashes dropped, computed once per root."""
    cache: dict[Path, tuple[str, ...]] = {}

    def globs_of(root: Path) -> tuple[str, ...]:
        if root not in cache:
            patterns = exclude(root) if callable(exclude) else exclude
            cache[root] = tuple(p.rstrip("/") for p in patterns if p.rstrip("/"))
        return cache[root]

    return globs_of


def exclusion(path: Path, root: Path, globs: tuple[str, ...]) -> str | None:
    """Why a named path is excluded, or None: a glob matches it or a folder it lies in (relative
    to its project root), or it lies in a folder skipped by default (`site-packages`, `.venv`,
    ...) below its project root or the current folder."""
    relative = Path(os.path.relpath(path, root))
    inside_root = relative.parts[:1] != ("..",)
    candidates = [relative, *(parent for parent in relative.parents if parent.parts)]
    for candidate in candidates if inside_root else ():
        for glob in globs:
            if glob_matches(candidate.as_posix(), candidate.name, glob):
                return f"matches exclude {glob!r}"
    below = [relative.parts if inside_root else ()]
    here = Path(os.path.relpath(path, os.getcwd()))
    if here.parts[:1] != ("..",):
        below.append(here.parts)
    for parts in below:
        skipped = next((part for part in parts if part in DEFAULT_EXCLUDES), None)
        if skipped is not None:
            return f"inside {skipped!r}, skipped by default"
    return None


def _is_excluded(path: Path, root: Path, globs: tuple[str, ...]) -> bool:
    if not globs:
        return False
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    return any(glob_matches(relative, path.name, glob) for glob in globs)


def glob_matches(relative: str, name: str, glob: str) -> bool:
    """Whether an exclude or per-file-ignores glob matches a path (`relative`: to the project
    root, with `/`) or its `name`, as ruff matches both."""
    return fnmatch.fnmatch(relative, glob) or fnmatch.fnmatch(name, glob)


def _index_listed(
    several: bool, folders: list[tuple[Path, list[_Found]]], kept: list[list[_Found]]
) -> bool:
    """Whether files listed from git's index alone (`index_only` folders) give the projects,
    files and links that the full listing (untracked files too) gives once `--tracked-only`
    drops what the index lacks (ProjectConfigurer._tracked). A file the index lacks is
    dropped there anyway; before that it can only change which name of a file `_dedupe`
    keeps, and whether a project exists. So the index's listing is taken when no file found
    has several hard links (an untracked one and a tracked one would share an inode) and no
    walked folder kept nothing (its project might otherwise exist with no file)."""
    return not several and all(left or not walked for (_, walked), left in zip(folders, kept))


def _not_git_ignored(
    folders: list[tuple[Path, list[_Found]]], index_only: Collection[Path] = ()
) -> list[list[_Found]]:
    """Inside a git checkout, drop what git ignores (every `.gitignore`, nested ones too, and
    the repository's exclude files): git itself answers, so its rules hold exactly, once per
    repository for all the folders given in it. Outside a checkout, without git, or inside a
    nested repository git does not list, files stay. A repository whose folders are all
    `index_only` is listed from its index alone: git then walks no folder for untracked
    files (NeMo: ~4 ms of git's CPU instead of ~21 ms)."""
    kept = [walked for _, walked in folders]
    by_repository: dict[Path, list[int]] = {}
    for index, (folder, walked) in enumerate(folders):
        repository = _repository_of(folder)
        if walked and repository is not None:
            by_repository.setdefault(repository, []).append(index)
    for repository, indexes in by_repository.items():
        untracked = not all(folders[index][0] in index_only for index in indexes)
        listed = _git_listing(repository, [folders[index][0] for index in indexes], untracked)
        for index in indexes:
            folder, walked = folders[index]
            if listed is None:
                # No git, or git refuses the checkout ("dubious ownership" in CI containers):
                # read the ignore files ourselves rather than silently processing them.
                ignored = GitIgnoreFiles(folder)
                kept[index] = [item for item in walked if not ignored.ignores(item.path)]
            else:
                prefix = os.path.join(str(repository), "")
                kept[index] = [
                    item
                    for item in walked
                    if _listed_or_nested(item.path, repository, listed, prefix)
                ]
    return kept


def _repository_of(folder: Path) -> Path | None:
    """Where git is asked about `folder`: its checkout, or the folder itself when it is
    reached through a link (git resolves the link; its listing is then relative to it)."""
    checkout = _checkout_of(folder)
    if checkout is None or observed.realpath(folder) == str(folder):
        return checkout
    return folder


def _checkout_of(folder: Path) -> Path | None:
    """The checkout git finds from `folder`: the nearest folder with a `.git`."""
    return next((p for p in (folder, *folder.parents) if observed.exists(p / ".git")), None)


def _git_listing(repository: Path, folders: list[Path], untracked: bool = True) -> set[str] | None:
    """What git lists (tracked, or with `untracked` untracked and not ignored) under `folders`,
    relative to `repository`; None when git cannot be asked."""
    specs = [os.path.relpath(folder, repository) for folder in folders]
    command = ["--literal-pathspecs", "ls-files", "-z", "--cached"]
    if untracked:
        command += ["--others", "--exclude-standard"]
    listing = observed.git([*command, "--", *specs], repository)
    if listing is None:
        return None
    names = listing_names(listing)
    if all_plain(names):  # what normpath leaves as they are, asked of all at once
        return set(names)
    return {name if is_plain(name) else os.path.normpath(name) for name in names}


class GitIgnoreFiles:
    """`.gitignore` files (every level) and `.git/info/exclude`, read with pathspec (the matcher
    black and others use): the fallback when git itself cannot be asked."""

    def __init__(self, folder: Path) -> None:
        checkout = _checkout_of(folder)
        assert checkout is not None, "asked only inside a checkout"
        self.repository = checkout
        self.specs: dict[tuple[Path, tuple[str, ...]], Any] = {}

    def spec(self, folder: Path, names: tuple[str, ...] = (".gitignore",)) -> Any:
        if (folder, names) not in self.specs:
            from pathspec import GitIgnoreSpec

            lines: list[str] = []
            for name in names:
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    data = observed.read_inside(folder / name, self.repository)
                    lines += data.decode("utf-8").splitlines()
            self.specs[folder, names] = GitIgnoreSpec.from_lines(lines)
        return self.specs[folder, names]

    def ignores(self, path: Path) -> bool:
        """Ignored itself, or inside an ignored folder (git does not look into those)."""
        parts = Path(os.path.relpath(path, self.repository)).parts
        folders = (Path(*parts[:depth]) for depth in range(1, len(parts)))
        return any(self.decides(folder, True) for folder in folders) or self.decides(
            Path(*parts), False
        )

    def decides(self, relative: Path, is_folder: bool) -> bool:
        """The last matching pattern decides: `.git/info/exclude` first, then every
        `.gitignore` from the repository root down to the path's own folder."""
        levels = [(self.spec(self.repository, (".git/info/exclude",)), relative)]
        for depth in range(len(relative.parts)):
            folder = self.repository.joinpath(*relative.parts[:depth])
            levels.append((self.spec(folder), Path(*relative.parts[depth:])))
        ignored = False
        for spec, inside in levels:
            decision = spec.check_file(inside.as_posix() + ("/" if is_folder else "")).include
            if decision is not None:
                ignored = decision
        return ignored


def _listed_or_nested(path: Path, folder: Path, listed: set[str], prefix: str) -> bool:
    """Whether git lists `path` (`prefix`: `folder` with a separator, made once a listing)."""
    text = str(path)
    if text.startswith(prefix) and text[len(prefix) :] in listed:  # the usual case, cheaply
        return True
    relative = Path(os.path.relpath(path, folder))
    if os.path.normpath(relative) in listed:
        return True
    # git lists a nested repository as a folder, not its files: those are not ignored.
    return any(
        observed.exists(folder / parent / ".git") for parent in relative.parents if parent.parts
    )


def _dedupe(found: list[_Found]) -> tuple[list[_Found], frozenset[Path], bool]:
    """One entry per real file (symlinks and hard links alike): the first plain path to it,
    else the first link to it; the chosen paths whose hard links were all found; whether any
    file found has several hard links."""
    chosen: dict[tuple[int, int] | str, _Found] = {}
    # the plain names of each file with several hard links (only those can be linked_inside:
    # a set made per file cost ~1 us each, 3,000 in NeMo's hook command)
    names: dict[tuple[int, int] | str, set[str]] = {}
    links: dict[tuple[int, int] | str, int] = {}
    for item in found:
        try:
            device, inode, hard_links = observed.identity(item.path)
            key: tuple[int, int] | str = (device, inode)
            links[key] = hard_links
        except OSError:
            key, hard_links = observed.realpath(item.path), 0
        if hard_links > 1 and not item.is_link:
            names.setdefault(key, set()).add(str(item.path))
        current = chosen.get(key)
        if current is None or (current.is_link and not item.is_link):
            chosen[key] = item
    linked_inside = frozenset(
        chosen[key].path
        for key, count in links.items()
        if count > 1 and len(names.get(key, ())) == count
    )
    several = any(count > 1 for count in links.values())
    return list(chosen.values()), linked_inside, several


def _leaves_project(path: Path) -> bool:
    """The real location of `path` is outside the real root of the project it seems to be in
    (`dirlink/out.py` where `dirlink` leads elsewhere)."""
    return not observed.inside(path, find_project_root(path))


def _linked_file(path: Path, root: Path) -> Path:
    """The file a link inside the project leads to, spelled under the project root as given
    (so `/tmp` and its real name on macOS show the same)."""
    real = observed.realpath(path)
    return root / os.path.relpath(real, observed.realpath(root))


def _absolute(path: Path) -> Path:
    """Absolute and normalized (`..` removed) without resolving symlinks."""
    return Path(os.path.abspath(path))
