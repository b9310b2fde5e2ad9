"""`apply`'s writing: the diff shown, the question per file on a terminal, the patch files, and
the writes themselves with Ctrl-C held until the file under way is done."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from amp_clipfix.kinds import ErrorKind, FileError, active_findings
from amp_clipfix.output.report import plural
from amp_clipfix.output.safe_text import terminal_safe
from amp_clipfix.paths import display_path
from amp_clipfix.pipeline import FileChange, RunResult
from amp_clipfix.records import record
from amp_clipfix.reporting import COLOR, OutputFileError, colored_console, echo, is_tty

if TYPE_CHECKING:
    from amp_clipfix.models import Finding


class Interrupted(KeyboardInterrupt):
    """Ctrl-C that came while files were being written: those already written are named."""

    def __init__(self, written: int) -> None:
        super().__init__()
        self.written = written


def plain_output() -> bool:
    """A plain patch when stdout is not a terminal or colour is switched off (NO_COLOR,
    --color never); --color always draws the coloured diff even piped."""
    if COLOR[0] != "auto":
        return COLOR[0] == "never"
    return not is_tty(sys.stdout) or "NO_COLOR" in os.environ


def project_roots(result: RunResult) -> dict[Path, Path]:
    """The project root of each changed file."""
    return {
        change.source.path: project.root
        for project in result.per_project
        for change in project.changes
    }


def show_changes(result: RunResult, plain: bool) -> None:
    """Every change: a plain patch on stdout when `plain` (plain_output()), else rich diffs."""
    changes = result.changes
    if plain:
        from amp_clipfix.output.patches import patch_with_base

        out = sys.stdout.buffer
        patch = patch_with_base(changes, project_roots(result))
        if is_tty(sys.stdout):  # NO_COLOR on a terminal: file text never reaches it raw
            patch = terminal_safe(patch.decode("utf-8", "surrogateescape")).encode(
                "utf-8", "backslashreplace"
            )
        out.write(patch)
        out.flush()
        return
    show = change_shower(result)
    for change in changes:
        show(change)


def change_shower(result: RunResult) -> Callable[[FileChange], None]:
    """Renders one file's diff with rich on stdout, with what its fixes change."""
    from amp_clipfix.output.diff import diff_hunks
    from amp_clipfix.output.diff_view import render_file_diff

    console = colored_console()

    def show(change: FileChange) -> None:
        notes = []
        for finding in change.findings:
            notes.append(f"{finding.code} {finding.message}")
            if finding.fix is not None:
                label = "safe" if finding.fix.safe else "unsafe"
                notes.append(f"fix: {finding.fix.strategy.value} ({label}) — {finding.fix.safety}")
        path = display_path(change.source.path)
        if not change.cells:
            hunks = diff_hunks(change.source.data, change.new_data)
            render_file_diff(console, path, hunks, change.source.encoding, notes)
        for number, old, new in change.cells:  # a notebook: one diff per changed cell
            hunks = diff_hunks(old.encode(), new.encode())
            render_file_diff(console, f"{path} (cell {number})", hunks, "utf-8", notes)
            notes = []

    return show


def write_patch_dir(result: RunResult, folder: Path) -> list[FileError]:
    """One `<project>.patch` per project with changes, paths relative to the project's root;
    a patch that cannot be written (its name is a link, say) is an error line, the others are
    still written. A project with nothing to fix now loses the patch an earlier run wrote for
    it (a file of that name that starts with PATCH_MARK), and says so: a reused folder never
    keeps a stale patch unsaid. Names come from every project of the run, so a project's
    patch keeps its name from one run to the next."""
    from amp_clipfix.output.patches import PATCH_MARK, patch_of, project_patch_names
    from amp_clipfix.output.write import WriteError, write_own_file

    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        reason = error.strerror or str(error)
        raise OutputFileError(str(folder), f"cannot make the folder: {reason}") from None
    errors = []
    projects = result.per_project
    for name, project in zip(project_patch_names([p.root for p in projects]), projects):
        target = folder / name
        if not project.changes:
            _remove_stale_patch(target, project.root, PATCH_MARK)
            continue
        patch = b"".join(patch_of(c, project.root) for c in project.changes)
        try:
            write_own_file(target, patch_header(project.root) + patch)
        except WriteError as error:
            errors.append(FileError(target, str(error), ErrorKind.WRITE))
            continue
        echo(
            terminal_safe(f"wrote {display_path(target)} ({display_path(project.root)})"),
            err=True,
        )
    return errors


def patch_header(root: Path) -> bytes:
    """The first line of a `--patch-dir` patch: whose it is and how to apply it (a `#` line
    `git apply` and `patch` skip), and the mark that says amp-clipfix wrote the file."""
    from amp_clipfix.output.patches import PATCH_MARK, comment

    shown = display_path(root)
    return PATCH_MARK + comment(f"{shown} (git -C {shown} apply FILE)")[2:]


def _remove_stale_patch(target: Path, root: Path, mark: bytes) -> None:
    """`target`, the patch of a project with nothing to fix now: removed when an earlier run
    wrote it (a plain file starting with `mark`), else named; either way said on stderr."""
    from amp_clipfix import observed

    if not os.path.lexists(target):
        return
    shown, project = display_path(target), display_path(root)
    try:
        ours = not os.path.islink(target) and observed.read_file(target).startswith(mark)
    except OSError:
        ours = False
    if ours:
        try:
            os.unlink(target)
        except OSError as error:
            reason = error.strerror or str(error)
            message = f"warning: {shown}: {project} has nothing to fix now; not removed: {reason}"
            echo(terminal_safe(message), err=True)
            return
        echo(terminal_safe(f"removed {shown} ({project}: nothing to fix now)"), err=True)
    else:
        echo(
            terminal_safe(
                f"warning: {shown}: {project} has nothing to fix now; the file there was not "
                "written by amp-clipfix and is left as it is"
            ),
            err=True,
        )


def fixed_findings(result: RunResult, written: Sequence[FileChange]) -> frozenset[Finding]:
    """Findings whose fix is complete and every file of which was written."""
    paths = {change.source.path for change in written}
    return frozenset(
        finding
        for finding in active_findings(result.findings)
        if finding.resolved
        and finding.fix is not None
        and all(site.path in paths for site in finding.fix.targets)
    )


def is_interactive() -> bool:
    """Someone can answer the prompt: stdin and stdout (where the diffs are drawn) are
    terminals. Decided once, before any diff is drawn: a run with only stderr redirected
    draws each diff and asks (the question then goes to stdout, see `prompt_stream`)."""
    return is_tty(sys.stdin) and is_tty(sys.stdout)


def prompt_stream() -> bool:
    """Whether the question goes to stderr (a terminal) rather than stdout (stderr is
    redirected: the person reads stdout)."""
    return is_tty(sys.stderr)


PROMPT_HELP = """\
y - write this file
n - do not write this file
a - write this file and all the remaining ones
q - quit; do not write this file or any of the remaining ones
? - print help"""


ANSWERS = {"y": "y", "yes": "y", "n": "n", "no": "n", "a": "a", "all": "a", "q": "q", "quit": "q"}


@record
class PromptState:
    open: bool = False  # a question is on the screen, its line not ended yet


PROMPT = PromptState()


def ask(question: str) -> str:
    """One answer among `ANSWERS` (end of input is `q`); anything else prints the help and
    asks again."""
    while True:
        PROMPT.open = True  # before the question shows: Ctrl-C may come at any moment
        err = prompt_stream()
        with waiting_for_a_line() as wait:
            echo(question, nl=False, err=err)
            wait()
            line = sys.stdin.readline()
        PROMPT.open = False
        if not line:  # end of input (Ctrl-D): quit
            echo(err=err)
            return "q"
        answer = ANSWERS.get(line.strip().lower())
        if answer is not None:
            return answer
        echo(PROMPT_HELP, err=err)


@contextlib.contextmanager
def waiting_for_a_line() -> Iterator[Callable[[], None]]:
    """A function that returns once a line can be read from the terminal, or raises
    KeyboardInterrupt on Ctrl-C however close to the start of the wait it comes. Python runs a
    signal's handler between bytecodes, so a SIGINT that lands after the last of them and
    before a plain blocking read began (someone pressing Ctrl-C as the question appears, a busy
    machine pausing the process right there) would leave that read waiting for a line: the
    interrupt noted, never raised. Made before the question shows, the wait also watches the
    pipe the signal itself writes to (signal.set_wakeup_fd). A terminal's read gives one whole
    line, so sys.stdin's buffer is empty whenever the wait begins. Off a terminal (a test's
    stream), off the main thread and on Windows: no wait, a plain readline."""
    import select
    import signal
    import threading

    if (
        sys.platform == "win32"
        or not is_tty(sys.stdin)
        or threading.current_thread() is not threading.main_thread()
    ):
        yield lambda: None
        return
    stdin = sys.stdin.fileno()
    woken, wake = os.pipe()

    def wait() -> None:
        while stdin not in select.select([stdin, woken], [], [])[0]:
            os.read(woken, 512)  # a signal whose handler returned (Ctrl-C's raises)

    try:
        os.set_blocking(wake, False)  # the signal handler writes to it: it must never block
        previous = signal.set_wakeup_fd(wake, warn_on_full_buffer=False)
        try:
            yield wait
        finally:
            signal.set_wakeup_fd(previous)
    finally:
        os.close(woken)
        os.close(wake)


def choose_changes(
    changes: Sequence[FileChange], show: Callable[[FileChange], None] | None
) -> tuple[list[FileChange], float]:
    """Per file, like `git add -p`: y, n, a (this and the rest), q (nothing more), ? (help).
    The helper module is not asked about: it is written when a file that imports from it is.
    Returns the changes to write and the seconds spent waiting for answers."""
    required = {path for change in changes for path in change.requires}
    asked = [change for change in changes if change.source.path not in required]
    chosen: list[FileChange] = []
    waited = 0.0
    for number, change in enumerate(asked, start=1):
        if show is not None:
            show(change)
        path = terminal_safe(display_path(change.source.path))
        began = time.perf_counter()
        answer = ask(f"({number}/{len(asked)}) Write {path}? [y,n,a,q,?] ")
        waited += time.perf_counter() - began
        if answer in ("y", "a"):
            chosen.append(change)
        if answer == "a":
            chosen.extend(asked[number:])
        if answer in ("a", "q"):
            break
    return with_helper_modules(changes, chosen), waited


def with_helper_modules(
    changes: Sequence[FileChange], chosen: Sequence[FileChange]
) -> list[FileChange]:
    """The chosen changes, after the helper modules they import from (written first)."""
    needed = {path for change in chosen for path in change.requires}
    helpers = [change for change in changes if change.source.path in needed]
    return [*helpers, *(change for change in chosen if change.source.path not in needed)]


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[list[int]]:
    """Ctrl-C while files are written is taken after the write under way (no file is left
    half done; each write is atomic anyway); the list holds the signal when one came."""
    import signal
    import threading

    caught: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield caught
        return
    previous = signal.signal(signal.SIGINT, lambda number, frame: caught.append(number))
    try:
        yield caught
    finally:
        signal.signal(signal.SIGINT, previous)


def write_changes(
    changes: Sequence[FileChange],
    yes: bool,
    dry_run: bool,
    show: Callable[[FileChange], None] | None = None,
    roots: dict[Path, Path] | None = None,
    interactive: bool = False,
) -> tuple[list[FileChange], list[FileError], float]:
    """Write (or not); the changes written, the writes that failed, and the seconds spent
    waiting at the prompt. `roots`: each changed file's project root, which no write may leave;
    `interactive`: someone can answer the prompt (is_interactive())."""
    if not changes:
        return [], [], 0.0
    if dry_run:
        echo("Dry run: nothing written.", err=True)
        return [], [], 0.0
    chosen, waited = list(changes), 0.0
    if not yes:
        if not interactive:
            echo(
                "Not a terminal and no --yes: nothing written (use --yes to write, --dry-run "
                "to only show).",
                err=True,
            )
            return [], [], 0.0
        chosen, waited = choose_changes(changes, show)
        if not chosen:
            echo("Nothing written.", err=True)
            return [], [], waited
    from amp_clipfix.output.write import write_all

    with interrupts_deferred() as caught:
        # failures are reported with the run's other errors (and in JSON/SARIF) by `finish`
        written, failed = write_all(chosen, roots, stop=lambda: bool(caught))
    if caught:
        raise Interrupted(len(written))
    echo(f"Fixed {plural(len(written), 'file')}.", err=True)
    left = [change for change in changes if change not in written]
    if left:
        names = ", ".join(terminal_safe(display_path(c.source.path)) for c in left)
        echo(
            f"Left unwritten, fixes not applied: {plural(len(left), 'file')} ({names}).",
            err=True,
        )
    return written, failed, waited
