"""What a person sees on a terminal's stderr: a progress bar for long runs, the summary table."""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from amp_clipfix.models import Finding, active_findings


@dataclass(frozen=True)
class RunStats:
    """The figures of the end-of-run summary."""

    projects: int
    files_seen: int
    files_parsed: int
    findings: tuple[Finding, ...]
    files_fixed: int
    errors: int
    seconds: float  # the tool's own time: waiting at the prompt is not counted
    files_unwritten: int = 0  # changes the prompt declined (or whose write failed)

    def rows(self) -> list[tuple[str, str]]:
        active = active_findings(self.findings)
        by_code = Counter(finding.code for finding in active)
        codes = ", ".join(f"{code} {count}" for code, count in sorted(by_code.items()))
        fixes = sum(1 for finding in active if finding.fix is not None)
        unwritten = f", {self.files_unwritten} left unwritten" if self.files_unwritten else ""
        return [
            ("projects", str(self.projects)),
            ("files seen", str(self.files_seen)),
            ("files parsed", str(self.files_parsed)),
            ("findings", f"{len(active)}" + (f" ({codes})" if codes else "")),
            ("fixes", f"{fixes} chosen, {self.files_fixed} files written" + unwritten),
            ("suppressed", str(len(self.findings) - len(active))),
            ("errors", str(self.errors)),
            ("wall time", f"{self.seconds:.2f} s"),
        ]


def render_summary(console: Console, stats: RunStats) -> None:
    table = Table(title="amp-clipfix summary", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    for name, value in stats.rows():
        table.add_row(name, value)
    console.print(table)


class FilesColumn(ProgressColumn):
    """`12/340 files` once discovery has counted them; nothing before (never `0/0`)."""

    def render(self, task: Task) -> Text:
        if task.total is None:
            return Text("")
        return Text(f"{int(task.completed)}/{int(task.total)} files")


SHOW_AFTER = 1.0  # seconds: a run shorter than this draws no bar (AMP_CLIPFIX_PROGRESS_AFTER)


class ProgressBar:
    """A transient rich progress bar fed by the pipeline: first the search for files (a pulsing
    bar), then every file found, counted when it has been looked at (read and filtered, or
    parsed), not only the few that are parsed. It shows only once the run has taken longer
    than `after` seconds (a small project's check ends before: no bar flashes by);
    `on_start` is called when it does."""

    def __init__(
        self,
        console: Console,
        after: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_start: Callable[[], None] = lambda: None,
    ) -> None:
        if after is None:
            try:
                after = float(os.environ.get("AMP_CLIPFIX_PROGRESS_AFTER", SHOW_AFTER))
            except ValueError:
                after = SHOW_AFTER
        self._clock, self._on_start = clock, on_start
        self._due = clock() + after
        self._started = False
        self._progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            FilesColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._task = self._progress.add_task("finding files", total=None)

    def __enter__(self) -> ProgressBar:
        self._maybe_start()
        return self

    def _maybe_start(self) -> None:
        if self._started or self._clock() < self._due:
            return
        self._started = True
        self._on_start()
        try:
            self._progress.start()
        except BaseException:  # Ctrl-C as the bar comes up: take it down again
            self._progress.stop()
            raise

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._started:
            self._progress.stop()

    @property
    def shown(self) -> bool:
        return self._started

    def planned(self, files: int) -> None:
        total = self._progress.tasks[0].total or 0
        self._progress.update(self._task, total=total + files, description="checking")
        self._maybe_start()

    def done(self, files: int) -> None:
        self._progress.advance(self._task, files)
        self._maybe_start()
