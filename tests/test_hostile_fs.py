"""Hostile input, round three (issue 39), the file system's half: a read-only check never
touches a project file, every write survives any signal, a failed write keeps the old file, no
open waits on a pipe, and nothing the tool leaves behind goes stale unsaid. Real files, real
links, real signals, real FIFOs; each test failed on 0.10.0."""

from __future__ import annotations

import json
import marshal
import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from amp_clipfix.cache_layout import Entries, open_folder, seal, secret, version_folder
from amp_clipfix.observed import CACHE_DIR
from amp_clipfix.output.report import is_error_line
from amp_clipfix.replay import STATUSES

REPO = Path(__file__).resolve().parent.parent
GOOD = (REPO / "fixtures" / "fabric_precision_kwarg_16_mixed" / "input" / "train.py").read_bytes()


def run(project: Path, *arguments: str, cache: bool = True) -> subprocess.CompletedProcess[bytes]:
    """`amp-clipfix ARGUMENTS` as a user starts it from `project`, output piped (as in CI)."""
    environment = dict(os.environ)
    if cache:
        environment.pop("AMP_CLIPFIX_NO_CACHE", None)
    return subprocess.run(
        [sys.executable, "-m", "amp_clipfix", *arguments],
        cwd=project,
        env=environment,
        capture_output=True,
        timeout=300,
        check=False,
    )


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every name under `folder` with its bytes (a link: where it leads)."""
    found: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        name = str(path.relative_to(folder))
        if path.is_symlink():
            found[name] = f"-> {os.readlink(path)}"
        elif path.is_file():
            found[name] = path.read_bytes()
    return found


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project git cannot vouch for (no .git: a tarball, a docker COPY) with findings and a
    `src/` of 40 modules."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "pyproject.toml").write_bytes(b"")
    (root / "train.py").write_bytes(GOOD)
    for number in range(40):
        (root / "src" / f"m{number}.py").write_text(f"x = {number}\n")
    return root


# --- 1. The cache: nothing read, written or pruned through a link, wherever it leads ----------


def _link(project: Path, where: str) -> None:
    version = Path(version_folder(project))
    if where == "the cache folder":
        (project / CACHE_DIR).symlink_to("src", target_is_directory=True)
    elif where == "this version's folder":
        (project / CACHE_DIR).mkdir()
        version.symlink_to("../src", target_is_directory=True)
    else:  # the replay's folder, or a folder of the per-file cache: every folder name is taken
        version.mkdir(parents=True)
        names = [f"{number:02x}" for number in range(256)]
        for name in ["replay"] if where == "the replay folder" else names:
            (version / name).symlink_to("../../src", target_is_directory=True)


@pytest.mark.parametrize(
    "where",
    ["the replay folder", "the cache folder", "this version's folder", "every entry folder"],
)
def test_a_check_never_writes_or_prunes_through_a_link_in_the_cache(
    project: Path, where: str
) -> None:
    _link(project, where)
    sources = snapshot(project / "src")

    for _ in range(3):  # a run that notes, one that replays or notes again, one more
        result = run(project, "check", "--lightning-version", "2.6.6", ".")
        assert result.returncode == 1, result.stderr
        assert b"ACF001" in result.stdout

    assert snapshot(project / "src") == sources


def test_pruning_removes_only_records_the_cache_wrote(project: Path) -> None:
    """A name of the right shape is not enough: a file the cache did not seal (the project's,
    a link to one) is never removed, however old."""
    assert run(project, "check", ".").returncode == 1
    folder = Path(version_folder(project)) / "replay"
    key = secret(project)
    assert key is not None and folder.is_dir()
    for number in range(80):
        planted = folder / f"{number:064x}"
        if number < 40:
            planted.write_bytes(f"user data {number}\n".encode())
        else:
            planted.symlink_to(project / "src" / f"m{number - 40}.py")
        os.utime(planted, ns=(number * 10**9, number * 10**9), follow_symlinks=False)
    ours = folder / f"{99:064x}"
    ours.write_bytes(seal(key, ours.name, marshal.dumps(({}, [], 0))))
    os.utime(ours, ns=(10**9, 10**9))
    # the planted names only: the cache's own records (the replay's, the table of settled
    # reads) may be written again by the second run, as a file's age crosses the settle bound
    planted_names = {f"{number:064x}" for number in range(80)}
    planted_now = {name: data for name, data in snapshot(folder).items() if name in planted_names}
    assert len(planted_now) == 80

    assert run(project, "check", "--select", "ACF", ".").returncode == 1

    left = snapshot(folder)
    assert ours.name not in left  # an old record of this user's is removed
    assert {name: left.get(name) for name in planted_names} == planted_now
    assert all((project / "src" / f"m{n}.py").read_text() == f"x = {n}\n" for n in range(40))


def test_a_folder_swapped_for_a_link_after_it_was_opened_redirects_nothing(
    project: Path,
) -> None:
    """The cache's folders are held open and every name in them is looked up relative to the
    open folder: a link swapped in on the way mid-run changes nothing outside the cache."""
    parts = [CACHE_DIR, "v-test", "replay"]
    folder = open_folder(project, parts, create=True)
    assert folder is not None
    with folder:
        (project / CACHE_DIR).rename(project / "moved")
        (project / CACHE_DIR).symlink_to("src", target_is_directory=True)
        folder.write("entry", b"sealed bytes")
        folder.unlink("entry")
        folder.write("entry", b"sealed bytes")
    assert (project / "moved" / "v-test" / "replay" / "entry").read_bytes() == b"sealed bytes"
    assert sorted(path.name for path in (project / "src").iterdir()) == sorted(
        f"m{number}.py" for number in range(40)
    )
    assert open_folder(project, parts) is None  # opened again: the link is refused


def test_a_cache_folder_of_another_user_is_neither_read_nor_written(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache folder another user made (a shared checkout, a container's root) is not this
    user's to read or write: the run is another user's as far as the cache can tell."""
    assert run(project, "check", ".").returncode == 1
    before = snapshot(project / CACHE_DIR)
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(project).st_uid + 1)
    entries = Entries(project)
    entries.key = b"k" * 32
    replay = os.path.join(version_folder(project), "replay")
    assert open_folder(project, [CACHE_DIR]) is None
    assert not entries.write(replay, f"{0:064x}", b"value")
    assert entries.read(replay, next(iter(os.listdir(replay)))) is None
    entries.prune(replay, 0, lambda name: True)
    assert snapshot(project / CACHE_DIR) == before


def test_the_cache_still_works_where_every_folder_is_plain(project: Path) -> None:
    first = run(project, "check", ".")
    assert first.returncode == 1
    version = Path(version_folder(project))
    assert (project / CACHE_DIR / ".gitignore").read_bytes().endswith(b"*\n")
    noted = [p for p in (version / "replay").iterdir() if p.name != STATUSES]
    assert len(noted) == 1
    assert any(path.name != "replay" for path in version.iterdir())  # per-file entries
    second = run(project, "check", ".")
    assert (second.stdout, second.returncode) == (first.stdout, 1)


# --- 2. A signal mid-rewrite: every name holds the old bytes or the new ones ------------------

REWRITE = """
import os, signal, sys
import amp_clipfix.output.write as write

# Ctrl-C as a terminal's shell leaves it: a suite run as a background job without job control
# starts every child with SIGINT ignored, which the rewrite rightly keeps ignored after it
signal.signal(signal.SIGINT, signal.default_int_handler)
from amp_clipfix.sources.text import read_source

real_open, sent = open, []

class Hooked:
    '''The file the in-place rewrite opens: the signal lands right before it truncates.'''

    def __init__(self, file):
        self.file = file

    def __enter__(self):
        return self

    def __exit__(self, *exception):
        return self.file.__exit__(*exception)

    def __getattr__(self, name):
        return getattr(self.file, name)

    def truncate(self, *size):
        if not sent:
            sent.append(True)
            os.kill(os.getpid(), getattr(signal, sys.argv[1]))
        return self.file.truncate(*size)

write.open = lambda *arguments, **options: Hooked(real_open(*arguments, **options))
write.write_atomic(read_source("a.py"), b"y = 2\\n", keep_hard_links=True)
"""


@pytest.mark.parametrize(
    ("name", "code"), [("SIGTERM", 128 + 15), ("SIGHUP", 128 + 1), ("SIGINT", -2)]
)
def test_a_signal_mid_rewrite_leaves_every_name_whole(tmp_path: Path, name: str, code: int) -> None:
    """A hard-linked file is rewritten in place (its inode kept): a signal between the write
    and the truncate used to leave the new text followed by the old tail under both names."""
    old = b"x = 1\n" * 20_000
    (tmp_path / "a.py").write_bytes(old)
    os.link(tmp_path / "a.py", tmp_path / "b.py")

    result = subprocess.run(
        [sys.executable, "-c", REWRITE, name],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        check=False,
    )

    assert result.returncode == code, result.stderr  # the signal still ends the process
    data = (tmp_path / "a.py").read_bytes()
    assert data in (old, b"y = 2\n"), data[:40]
    assert (tmp_path / "b.py").read_bytes() == data
    assert os.path.samefile(tmp_path / "a.py", tmp_path / "b.py")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.py", "b.py"]


# --- 3. An output file: written whole or kept as it was ---------------------------------------


def limited(size: int) -> Callable[[], None]:
    """`ulimit -f`: the child may write no file beyond `size` bytes (EFBIG past it)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def run_limited(project: Path, size: int, *arguments: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "amp_clipfix", *arguments],
        cwd=project,
        capture_output=True,
        timeout=300,
        check=False,
        # no bytecode: under the size limit a first compile of the tool could leave a cut
        # `.pyc` behind for every later run of the suite to fail on
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=limited(size),  # noqa: PLW1509 - the child starts no thread before exec
    )


def test_a_report_that_cannot_be_written_whole_keeps_the_old_one(project: Path) -> None:
    report = project / "out.sarif"
    report.write_bytes(b"the report of the last run\n")

    result = run_limited(project, 4096, "check", "--format", "sarif", "-o", "out.sarif", ".")

    assert result.returncode == 2, result.stderr
    assert result.stderr.decode().splitlines() == [
        "out.sarif: error: cannot write: File too large; the old file is kept"
    ]
    assert report.read_bytes() == b"the report of the last run\n"
    assert sorted(path.name for path in project.iterdir()) == [
        "out.sarif",
        "pyproject.toml",
        "src",
        "train.py",
    ]


def test_a_report_file_is_replaced_whole(project: Path) -> None:
    report = project / "out.sarif"
    report.write_bytes(b"x" * 100_000)  # longer than the new report: nothing of it may stay
    report.chmod(0o640)
    os.symlink("out.sarif", project / "latest.sarif")

    result = run(project, "check", "--format", "sarif", "-o", "latest.sarif", ".", cache=False)

    assert result.returncode == 1, result.stderr
    assert json.loads(report.read_bytes())["runs"][0]["results"]
    assert (project / "latest.sarif").is_symlink()  # the link the user named stays a link
    assert stat.S_IMODE(report.stat().st_mode) == 0o640


@pytest.mark.parametrize("into", ["a pipe", "a file"])
def test_a_report_to_dev_stdout_is_written_where_stdout_goes(project: Path, into: str) -> None:
    """/dev/stdout is never replaced (nor the file the shell opened for it: its descriptor
    would keep the old one)."""
    out = project / "report.txt"
    out.write_bytes(b"")
    before = out.stat().st_ino
    with out.open("wb") as file:
        result = subprocess.run(
            [sys.executable, "-m", "amp_clipfix", "check", "--no-cache", "-o", "/dev/stdout"],
            cwd=project,
            stdout=file if into == "a file" else subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=300,
            check=False,
        )
    assert result.returncode == 1, result.stderr
    report = out.read_bytes() if into == "a file" else result.stdout
    assert b"train.py:19:9: ACF001" in report
    assert out.stat().st_ino == before


def test_a_report_folder_that_does_not_exist_is_one_line_and_exit_2(project: Path) -> None:
    result = run(project, "check", "-o", "no/such/folder/report.txt", ".", cache=False)
    assert result.returncode == 2
    assert result.stderr.decode().splitlines() == [
        "no/such/folder/report.txt: error: cannot write: No such file or directory; nothing written"
    ]


def test_a_patch_that_cannot_be_written_whole_keeps_the_old_one(project: Path) -> None:
    (project / "patches").mkdir()
    old = project / "patches" / "project.patch"
    old.write_bytes(b"the patch of the last run\n")

    result = run_limited(project, 1024, "apply", "--dry-run", "--patch-dir", "patches", ".")

    assert result.returncode == 2, result.stderr
    assert "patches/project.patch: error: cannot write: File too large" in result.stderr.decode()
    assert old.read_bytes() == b"the patch of the last run\n"
    assert list((project / "patches").iterdir()) == [old]


# --- 4. A pipe where a file is read: never waited on ------------------------------------------

HELPER_CASE = REPO / "fixtures" / "trainer_unscale_helper_module_created" / "input"


def test_a_helper_module_that_is_a_pipe_is_one_line(tmp_path: Path) -> None:
    root = tmp_path / "helpers"
    shutil.copytree(HELPER_CASE, root)
    os.mkfifo(root / "mypkg" / "amp_helpers.py")
    model = (root / "mypkg" / "model.py").read_bytes()

    result = run(root, "apply", "--yes", "--strategy", "unscale", ".", cache=False)

    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.decode().splitlines() if is_error_line(line)]
    assert errors == [
        "mypkg/amp_helpers.py: error: helper-module mypkg.amp_helpers: cannot be created or "
        "updated: cannot read: not a regular file",
        "mypkg/model.py: error: not fixed: it would import from helper-module mypkg.amp_helpers",
    ]
    assert (root / "mypkg" / "model.py").read_bytes() == model
    assert stat.S_ISFIFO((root / "mypkg" / "amp_helpers.py").lstat().st_mode)


SWAPPED_AT_THE_PROMPT = """
import os, sys
import amp_clipfix.cli as cli

original = cli.write_changes

def swapped_while_waiting(*arguments, **options):
    # what happens while the question waits for an answer: the file becomes a pipe
    os.unlink("train.py")
    os.mkfifo("train.py")
    return original(*arguments, **options)

cli.write_changes = swapped_while_waiting
cli.main(["apply", "--yes", "--strategy", "unfuse", "--no-cache", "."])
"""


def test_a_file_swapped_for_a_pipe_before_it_is_written_is_one_line(project: Path) -> None:
    (project / "other.py").write_bytes(GOOD)

    result = subprocess.run(
        [sys.executable, "-c", SWAPPED_AT_THE_PROMPT],
        cwd=project,
        capture_output=True,
        timeout=120,
        check=False,
    )

    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.decode().splitlines() if is_error_line(line)]
    assert errors == ["train.py: error: cannot re-read before writing: not a regular file"]
    assert b"fused=False" in (project / "other.py").read_bytes()  # the run goes on
    assert stat.S_ISFIFO((project / "train.py").lstat().st_mode)


# --- 5. Nothing stale: the helper module a commit needs, a patch of an earlier run ------------


def git(root: Path, *arguments: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *arguments],
        cwd=root,
        capture_output=True,
        check=True,
    )


def test_the_fix_hook_never_passes_a_commit_that_lacks_the_helper_module(tmp_path: Path) -> None:
    """pre-commit's fix hook (`apply --yes --tracked-only`) creates the helper module; after
    `git add -u` (which stages the fixed file, never the new one) its second run used to pass
    and the commit imported a module it lacked."""
    root = tmp_path / "helpers"
    shutil.copytree(HELPER_CASE, root)
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    hook = ["apply", "--yes", "--tracked-only", "--force-exclude", "--strategy", "unscale"]
    hook += ["--", "mypkg/model.py"]
    line = (
        "mypkg/amp_helpers.py: error: helper-module mypkg.amp_helpers is not in git's index "
        "(--tracked-only): the commit would lack it; run `git add mypkg/amp_helpers.py`"
    )

    first = run(root, *hook, cache=False)
    assert first.returncode == 2, first.stderr
    assert line in first.stderr.decode().splitlines()
    assert (root / "mypkg" / "amp_helpers.py").is_file()  # the fix is written all the same

    git(root, "add", "-u")
    second = run(root, *hook, cache=False)
    assert second.returncode == 2, second.stderr
    assert [ln for ln in second.stderr.decode().splitlines() if is_error_line(ln)] == [line]

    git(root, "add", "mypkg/amp_helpers.py")
    third = run(root, *hook, cache=False)
    assert third.returncode == 0, third.stderr


def test_a_reused_patch_folder_keeps_no_stale_patch(tmp_path: Path) -> None:
    """A bulk run writes `<project>.patch` per project; once a project has nothing to fix, the
    patch an earlier run wrote for it is removed, and said; a file of that name the tool did
    not write is named, never removed."""
    for name in ("a", "b", "c"):
        (tmp_path / "repos" / name).mkdir(parents=True)
        (tmp_path / "repos" / name / "pyproject.toml").write_bytes(b"")
        (tmp_path / "repos" / name / "train.py").write_bytes(GOOD)
    bulk = ["apply", "--dry-run", "--strategy", "unfuse", "--patch-dir", "patches"]
    bulk += ["repos/a", "repos/b", "repos/c"]
    assert run(tmp_path, *bulk, cache=False).returncode == 1
    patches = tmp_path / "patches"
    assert sorted(path.name for path in patches.iterdir()) == ["a.patch", "b.patch", "c.patch"]
    git(tmp_path / "repos" / "a", "apply", str(patches / "a.patch"))
    (tmp_path / "repos" / "b" / "train.py").write_bytes(GOOD.replace(b"fused=True", b"fused=False"))
    (patches / "b.patch").write_bytes(b"my own notes\n")  # a file the tool did not write

    again = run(tmp_path, *bulk, cache=False)

    assert again.returncode == 1, again.stderr
    assert sorted(path.name for path in patches.iterdir()) == ["b.patch", "c.patch"]
    lines = again.stderr.decode().splitlines()
    assert "removed patches/a.patch (repos/a: nothing to fix now)" in lines
    assert (
        "warning: patches/b.patch: repos/b has nothing to fix now; the file there was not "
        "written by amp-clipfix and is left as it is"
    ) in lines
    assert (patches / "b.patch").read_bytes() == b"my own notes\n"
