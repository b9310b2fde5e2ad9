"""`trace --apply` / `--dry-run`: the static rules' fixes, anchored on the sites the run showed.

Two routes, and each finding says which it took:
- static: the static analysis runs on the files that hold the observed sites; a static finding
  of the same code with a site on an observed line is the observed finding, and its fix (with
  the strategies, safety rules and fixpoint of `apply`) is the one written.
- observed site: a loud error of a fused optimizer (ACF001, ACF002) the static analysis does not
  find (an optimizer from a registry, a config, a factory) is fixed where the run saw the
  optimizer built: `fused=False` in that call, whatever the call's other arguments; a plain
  backward in manual optimization (ACF008) becomes `MODULE.manual_backward(loss)` where it ran.
Anything else the static analysis does not find is reported, unfixed, with why.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from amp_clipfix.kinds import ErrorKind, FileError, Strategy
from amp_clipfix.models import Confidence, Finding, Fix, Site, SiteKind
from amp_clipfix.options import Settings
from amp_clipfix.records import replace
from amp_clipfix.results import FileChange, RunResult
from amp_clipfix.sources.text import SourceError, SourceFile, encode_text, read_source
from amp_clipfix.sources.yaml import BOOLEAN_FLIPS
from amp_clipfix.trace.findings import Run, first_frame

MANUAL_BACKWARD_SAFETY = (
    "`loss.backward()` becomes `self.manual_backward(loss)` where the run called it (the name "
    "the module had there): Lightning scales the loss under fp16 and unscales before the step"
)
UNFUSE_SAFETY = (
    "fused=False where the run built the optimizer: the same maths (foreach kernels), a "
    "slightly slower step; a class built there that takes no `fused` argument would refuse it"
)

UNFUSE_KEY_SAFETY = (
    "`fused: false` in the config key whose value the run's optimizer was built with: the same "
    "maths (foreach kernels), a slightly slower step; every run of that config gets it"
)


def unfuse_key(site: Site) -> tuple[SourceFile, bytes] | str:
    """The config file with the `fused` key's token flipped, or why not (one line)."""
    from amp_clipfix.sources.yaml import compose_documents, fix_config

    try:
        source = read_source(site.path)
        text = fix_config(source.text, [site])
        compose_documents(text)
        return source, encode_text(source, text)
    except SourceError as error:
        return f"cannot fix {site.detail.split(' (', 1)[0]} in the config: {error}"


def same_file(a: Path, b: Path) -> bool:
    return os.path.realpath(a) == os.path.realpath(b)


def matches(static: Finding, seen: Finding) -> bool:
    """Same code, and a static site's lines meet those of a site the run saw."""
    if static.code != seen.code:
        return False
    return any(
        same_file(mine.path, theirs.path)
        and mine.span.line <= theirs.span.end_line
        and theirs.span.line <= mine.span.end_line
        for mine in static.sites
        for theirs in seen.sites
    )


def fix_observed(
    findings: Sequence[Finding],
    run: Run,
    settings: Settings,
    started: float,
    yes: bool,
    dry_run: bool,
) -> int:
    """Fix, show and write as `apply` does; the exit code `apply` gives."""
    from amp_clipfix import running
    from amp_clipfix.output.report import finding_line
    from amp_clipfix.reporting import echo
    from amp_clipfix.writing import is_interactive, plain_output

    result = fixed_result(findings, settings, run)
    for finding in result.findings:
        route = finding.notes[-1] if finding.fix or finding.refusal is None else finding.refusal
        echo(f"trace: {finding_line(finding).split(': ', 1)[0]}: {route}", err=True)
    files = tuple(sorted({change.source.path for change in result.changes}))
    with_paths = replace(settings, paths=files or settings.paths)
    try:
        running.apply(
            with_paths,
            started,
            yes,
            dry_run,
            None,
            interactive=is_interactive(),
            plain=plain_output(),
            walk=lambda *_, **__: result,
        )
    except SystemExit as leaving:
        return int(leaving.code or 0)
    return 0  # pragma: no cover - apply always exits


def fixed_result(findings: Sequence[Finding], settings: Settings, run: Run) -> RunResult:
    """The observed findings, each with the fix of its route, and the changes they make."""
    from amp_clipfix.options import settings_from
    from amp_clipfix.running import execute

    files = sorted(
        {site.path for finding in findings for site in finding.sites if site.path.is_file()}
    )
    static = RunResult((), (), (), 0, 0, 0)
    if files:
        scoped = settings_from(
            paths=files,
            strategy=None,
            lightning_version=None,
            exclude=(),
            output_format=settings.output_format,
            jobs=1,
            stdin_filename=None,
            quiet=True,
            no_cache=True,
        )
        static = execute(scoped, fix=True)
    kept: list[Finding] = []
    renamed: dict[Finding, Finding] = {}
    changes: list[FileChange] = []
    errors: list[FileError] = list(static.errors)
    for seen in findings:
        found = [finding for finding in static.findings if matches(finding, seen)]
        if found:
            for finding in found:
                if finding not in renamed:
                    route = (
                        "fixed through the static finding at the same site"
                        if finding.fix
                        else ("the static analysis finds it too, without a fix")
                    )
                    renamed[finding] = replace(
                        finding,
                        confidence=Confidence.OBSERVED,
                        notes=(*finding.notes, *seen.notes, route),
                    )
                    kept.append(renamed[finding])
            continue
        direct = fix_at_site(seen, changes, run)
        if isinstance(direct, FileError):
            errors.append(direct)
            kept.append(replace(seen, refusal=direct.message))
        elif direct is not None:
            finding, change = direct
            kept.append(finding)
            changes.append(change)
        else:
            kept.append(replace(seen, refusal=no_fix_reason(seen)))
    for change in static.changes:
        mine = tuple(renamed[f] for f in change.findings if f in renamed)
        if mine:
            changes.append(replace(change, findings=mine))
    return RunResult(
        findings=tuple(kept),
        changes=tuple(sorted(changes, key=lambda change: str(change.source.path))),
        errors=tuple(errors),
        files_seen=len(files),
        files_parsed=static.files_parsed,
        projects=1,
        edits={renamed[f]: e for f, e in static.edits.items() if f in renamed},
        per_project=static.per_project,
        targets=static.targets,
    )


def no_fix_reason(seen: Finding) -> str:
    if seen.code in ("ACF001", "ACF002"):
        return "the run saw no user frame where the optimizer was built"
    if seen.code == "ACF008":
        return "the run saw no name for the LightningModule where backward was called"
    return (
        "the static analysis does not find this site, and its fix needs the names the code "
        "uses (the scaler, the optimizer) at the clip: change it as the rule's page shows "
        f"(amp-clipfix explain {seen.code})"
    )


def fix_at_site(
    seen: Finding, changes: Sequence[FileChange], run: Run
) -> tuple[Finding, FileChange] | FileError | None:
    """What the static analysis missed, fixed where the run saw it: ACF001 / ACF002
    `fused=False` where the optimizer was built, ACF008 `manual_backward` where backward ran."""
    from amp_clipfix.trace.call_fixes import manual_backward_call, unfuse_call

    kind = {"ACF001": SiteKind.FUSED_OPTIMIZER, "ACF002": SiteKind.FUSED_OPTIMIZER}.get(
        seen.code, SiteKind.BACKWARD if seen.code == "ACF008" else None
    )
    sites = [site for site in seen.sites if site.kind is kind]
    keys = [site for site in sites if site.in_config]
    if len(keys) == 1:  # the value comes from one key of a config the run read: fixed there
        sites = keys
    if not sites or any(same_file(c.source.path, sites[0].path) for c in changes):
        return None
    site = sites[0]
    if site.in_config:
        made = unfuse_key(site)
        fix = Fix(Strategy.UNFUSE, (site,), UNFUSE_KEY_SAFETY, safe=True)
    elif kind is SiteKind.FUSED_OPTIMIZER:
        made = unfuse_call(site.path, site.span.line)
        fix = Fix(Strategy.UNFUSE, (site,), UNFUSE_SAFETY, safe=True)
    else:
        receiver = backward_receiver(run, site)
        if receiver is None:
            return None
        made = manual_backward_call(site.path, site.span.line, receiver)
        fix = Fix(Strategy.UNSCALE, (site,), MANUAL_BACKWARD_SAFETY, safe=True)
    if isinstance(made, str):
        return FileError(site.path, made, kind=ErrorKind.FIX, line=site.span.line)
    source, new_data = made
    route = (
        f"fixed in the config the run read: {site.detail.split(' (', 1)[0]} becomes "
        f"{BOOLEAN_FLIPS.get(site.value or '', 'false')}"
        if site.in_config
        else "fixed at the observed site: the static analysis does not find it"
    )
    finding = replace(seen, fix=fix, notes=(*seen.notes, route))
    return finding, FileChange(source, new_data, (finding,))


def backward_receiver(run: Run, site: Site) -> str | None:
    """The name the run saw the LightningModule under where `loss.backward()` ran."""
    for backward in run.events("backward"):
        frame = first_frame(backward)
        if frame and same_file(Path(frame[0]), site.path) and frame[1] == site.span.line:
            return (backward.get("module") or {}).get("receiver")
    return None
