"""From a monitored run's records to findings: the static rules' codes, messages and pages,
confidence `observed`, the user frames as sites and what the run measured as evidence.

A record is a dict as the monitor wrote it (trace/monitor.py); nothing here imports torch.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from amp_clipfix.models import (
    Certainty,
    Confidence,
    Finding,
    LightningPath,
    Site,
    SiteKind,
    Span,
)
from amp_clipfix.trace.config_keys import ConfigKeys

Record = dict[str, Any]

# The loud errors, by the words of their message, and the code of the rule about each.
ERRORS = (
    ("Gradient clipping is not implemented for optimizers handling the unscaling", "ACF001"),
    ("does not allow for gradient clipping because it performs unscaling", "ACF002"),
    ("Automatic gradient clipping is not supported for manual optimization", "ACF009"),
    ("is non-finite", "ACF007"),
    ("Attempted unscale_ but _scale is None", "ACF008"),
    ("unscale_() has already been called on this optimizer", "ACF004"),
)

PATHS = {
    "ACF001": LightningPath.FABRIC,
    "ACF002": LightningPath.TRAINER,
    "ACF004": LightningPath.TORCH,
    "ACF005": LightningPath.TRAINER,
    "ACF006": LightningPath.FABRIC,
    "ACF007": LightningPath.FABRIC,
    "ACF008": LightningPath.TRAINER,
    "ACF009": LightningPath.TRAINER,
}


def error_code(message: str) -> str | None:
    for words, code in ERRORS:
        if words in message:
            return code
    return None


def number(value: float | None) -> str:
    """1.5e-05 -> `1.5e-05`, 65536.0 -> `65536`, 1.0 -> `1`."""
    if value is None:
        return "?"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.3g}"


class Sites:
    """Sites at frames: the span of the outermost call (else the statement) that starts on the
    frame's line, read with `ast`; a file that cannot be read or parsed gives the line alone."""

    def __init__(self, configs: ConfigKeys | None = None) -> None:
        self.trees: dict[str, ast.Module | None] = {}
        self.configs = configs or ConfigKeys(())

    def tree(self, path: str) -> ast.Module | None:
        if path not in self.trees:
            try:
                self.trees[path] = ast.parse(Path(path).read_bytes())
            except (OSError, SyntaxError, ValueError):
                self.trees[path] = None
        return self.trees[path]

    def span(self, path: str, line: int) -> Span:
        tree = self.tree(path)
        best: Any = None  # an ast.Call or ast.stmt
        for node in ast.walk(tree) if tree is not None else ():
            if getattr(node, "lineno", None) != line:
                continue
            outer_call = isinstance(node, ast.Call) and (
                not isinstance(best, ast.Call) or node.col_offset < best.col_offset
            )
            simple_statement = isinstance(node, ast.stmt) and not hasattr(node, "body")
            if outer_call or (best is None and simple_statement):
                best = node
        if best is None or best.end_lineno is None or best.end_col_offset is None:
            return Span(line, 0, line, 0)
        return Span(line, best.col_offset, best.end_lineno, best.end_col_offset)

    def at(self, kind: SiteKind, frame: Sequence[Any], detail: str) -> Site:
        path, line = str(frame[0]), int(frame[1])
        return Site(
            kind=kind,
            path=Path(path),
            span=self.span(path, line),
            certainty=Certainty.KNOWN,
            detail=detail,
        )

    def of_class(self, kind: SiteKind, path: str, name: str, detail: str) -> Site | None:
        """The `class NAME` statement of a file, where a fix may add a method."""
        tree = self.tree(path)
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, ast.ClassDef) and node.name == name:
                end = node.end_lineno or node.lineno
                span = Span(node.lineno, node.col_offset, end, node.end_col_offset or 0)
                return Site(kind, Path(path), span, Certainty.KNOWN, detail)
        return None


def first_frame(record: Record | None) -> list[Any] | None:
    frames = (record or {}).get("frames") or []
    return frames[0] if frames else None


class Run:
    """The records of one run, indexed."""

    def __init__(self, records: Iterable[Record]) -> None:
        self.records = list(records)
        self.optimizers: dict[tuple[int, int], Record] = {}
        self.of: dict[str, list[Record]] = {}
        for item in self.records:
            self.of.setdefault(item["event"], []).append(item)
            if item["event"] == "optimizer":
                self.optimizers[(item.get("pid", 0), item.get("id", 0))] = item

    def events(self, kind: str) -> list[Record]:
        return self.of.get(kind, [])

    def optimizer(self, item: Record, key: str = "optimizer") -> Record | None:
        return self.optimizers.get((item.get("pid", 0), item.get(key, 0)))

    def skipped_steps(self) -> int:
        return sum(1 for step in self.events("step") if step.get("skipped"))


def observed(run: Run) -> list[Finding]:
    """The findings the run shows, one per code and primary site."""
    sites = Sites(ConfigKeys(str(item.get("path")) for item in run.events("config_file")))
    found: dict[tuple[str, str, int], Finding] = {}
    for finding in [
        *error_findings(run, sites),
        *scaled_clip_findings(run, sites),
        *nonfinite_risk_findings(run, sites),
        *plain_backward_findings(run, sites),
    ]:
        primary = finding.sites[0]
        key = (finding.code, str(primary.path), primary.span.line)
        found.setdefault(key, finding)
    return list(found.values())


def make(code: str, sites: Sequence[Site], evidence: str, notes: Sequence[str] = ()) -> Finding:
    from amp_clipfix.rules import RULES

    return Finding(
        code=code,
        lightning_path=PATHS[code],
        message=RULES[code].message,
        confidence=Confidence.OBSERVED,
        sites=tuple(sites),
        notes=(f"observed: {evidence}", *notes),
    )


def optimizer_site(run: Run, sites: Sites, optimizer: Record | None) -> list[Site]:
    frame = first_frame(optimizer)
    if frame is None or optimizer is None:
        return []
    fused = "fused=True" if optimizer.get("fused") else "fused=False"
    detail = f"{optimizer.get('cls')}({fused}) built here"
    fused_keys = sites.configs.sites(SiteKind.FUSED_OPTIMIZER, "fused", True)
    keys = fused_keys if optimizer.get("fused") else []
    return [sites.at(SiteKind.FUSED_OPTIMIZER, frame, detail), *keys]


def entry_site(run: Run, sites: Sites, kind: str) -> list[Site]:
    """The Trainer(...) or Fabric(...) the run built, with its precision plugin."""
    for item in run.events(kind):
        frame = first_frame(item)
        if frame is None:
            continue
        scaler = "with a GradScaler" if item.get("scaler") else "without a GradScaler"
        detail = f"{item.get('plugin')} precision {item.get('precision')!r} {scaler}"
        clip = item.get("gradient_clip_val")
        if clip:
            detail += f", gradient_clip_val={clip}"
        site_kind = SiteKind.FABRIC_PRECISION if kind == "fabric" else SiteKind.TRAINER_PRECISION
        keys = sites.configs.sites(site_kind, "precision", str(item.get("precision")))
        if isinstance(clip, (int, float)) and clip:
            keys += sites.configs.sites(SiteKind.TRAINER_CLIP, "gradient_clip_val", clip)
        return [sites.at(site_kind, frame, detail), *keys]
    return []


def error_findings(run: Run, sites: Sites) -> Iterable[Finding]:
    for error in run.events("error"):
        code = error_code(str(error.get("message", "")))
        if code is None:
            continue
        frame = first_frame(error)
        message = (str(error.get("message", "")).splitlines() or [""])[0]
        evidence = f"{error.get('type')}: {message}"
        where = str(error.get("where", ""))
        if code == "ACF004" and manual_fit(run):
            code = "ACF005"
        if code == "ACF007" and not where.startswith("fabric"):
            continue  # a torch clip with error_if_nonfinite=True: the user asked for it
        if code == "ACF008" and run.events("backward"):
            continue  # the plain backward's finding says where it comes from
        kind = SiteKind.OPTIMIZER_STEP if code == "ACF008" else SiteKind.GRAD_CLIP
        clip = [sites.at(kind, frame, f"raised {error.get('type')}")] if frame else []
        if frame in [first_frame(fit) for fit in run.events("fit")]:
            clip = []  # Lightning's own clipping, set on the Trainer: the entry site says so
        extra: list[Site] = []
        if code in ("ACF001", "ACF002"):
            clip_record = raising_clip(run, error)
            if clip_record is not None:
                extra += optimizer_site(run, sites, run.optimizer(clip_record))
            extra += entry_site(run, sites, "fabric" if code == "ACF001" else "trainer")
        elif code == "ACF009":
            extra += entry_site(run, sites, "trainer") + manual_classes(run, sites)
        if not clip and not extra:
            continue
        # the optimizer's construction (and its config key) first: that is where the fix goes
        built = [site for site in extra if site.kind is SiteKind.FUSED_OPTIMIZER]
        rest = [site for site in extra if site.kind is not SiteKind.FUSED_OPTIMIZER]
        ordered = [*built, *clip, *rest] if code in ("ACF001", "ACF002") else clip + extra
        yield make(code, ordered, evidence)


def raising_clip(run: Run, error: Record) -> Record | None:
    """The clip record the error ended (written just after it, same process)."""
    index = run.records.index(error)
    for item in run.records[index + 1 : index + 4]:
        if item["event"] in ("fabric_clip", "module_clip") and item.get("pid") == error.get("pid"):
            return item
    return None


def manual_classes(run: Run, sites: Sites) -> list[Site]:
    """The LightningModule classes the run fitted with manual optimization."""
    found = []
    for fit in run.events("fit"):
        if fit.get("automatic_optimization", True) or not fit.get("file"):
            continue
        detail = f"class {fit.get('module')}: automatic_optimization is False"
        site = sites.of_class(SiteKind.MANUAL_OPTIMIZATION, fit["file"], fit["module"], detail)
        if site is not None:
            found.append(site)
    return found


def manual_fit(run: Run) -> bool:
    return any(not fit.get("automatic_optimization", True) for fit in run.events("fit"))


def scaled_clip_findings(run: Run, sites: Sites) -> Iterable[Finding]:
    """Clips of an optimizer whose gradients the scaler had scaled and not unscaled."""
    seen: dict[tuple[str, int], list[str]] = {}
    first: dict[tuple[str, int], tuple[str, Record, float]] = {}
    others: dict[tuple[str, int], set[object]] = {}
    for clip in [*run.events("clip"), *run.events("module_clip")]:
        scaler = scaled(clip)
        frame = first_frame(clip)
        if scaler is None or frame is None or clip.get("error"):
            continue  # a clip that raised is the loud error's finding
        if clip["event"] == "module_clip" and clip.get("automatic_optimization", True):
            continue  # Lightning's own clipping runs after its unscale
        key = (str(frame[0]), int(frame[1]))
        if key not in first:
            first[key] = (scaled_code(run, clip), clip, scaler)
        others.setdefault(key, set()).add(clip.get("pid"))
        if clip.get("pid") == first[key][1].get("pid"):  # the steps of one process
            seen.setdefault(key, []).append(measure(clip, scaler))
    for key, (code, clip, scale) in first.items():
        frame = first_frame(clip)
        assert frame is not None
        bound = clip.get("bound", clip.get("clip_val"))
        where = f"{Path(key[0]).name}:{key[1]}"
        evidence = f"clip at {where} on scaled gradients: scale {number(scale)}, " + seen[key][0]
        notes = [f"step {n}: {m}" for n, m in enumerate(seen[key][1:], start=2)]
        if len(others[key]) > 1:
            notes.append(f"the same in {len(others[key]) - 1} other process(es)")
        detail = f"clips with bound {number(bound)} before the gradients are unscaled"
        optimizer = run.optimizer({"pid": clip.get("pid"), "optimizer": clip_optimizer(clip)})
        built = first_frame(optimizer)
        if optimizer is not None and built is not None:
            notes.append(
                f"the optimizer: {optimizer.get('cls')} built at {Path(built[0]).name}:{built[1]}"
            )
        yield make(code, [sites.at(SiteKind.GRAD_CLIP, frame, detail)], evidence, notes)


def clip_optimizer(clip: Record) -> int:
    if "optimizer" in clip:
        return int(clip["optimizer"])
    optimizers = clip.get("optimizers") or [0]
    return int(optimizers[0])


def scaled(clip: Record) -> float | None:
    """The scale of the gradients a clip saw, or None when they were not scaled."""
    views = clip.get("scalers") if "scalers" in clip else [clip.get("scaler_state")]
    for view in views or []:
        if view and view.get("stage") == "READY" and view.get("scale", 1.0) != 1.0:
            return float(view["scale"])
    return None


def measure(clip: Record, scale: float) -> str:
    """What the step got against what the clip meant: min(true norm, max_norm)."""
    bound = clip.get("bound", clip.get("clip_val"))
    total = clip.get("total_norm")
    if bound is None:
        return "bound unknown"
    if total is None or clip.get("function") == "clip_grad_value_":
        return f"bound {number(bound)}, each gradient bounded at {number(bound / scale)}"
    if total != total or total in (float("inf"), float("-inf")):
        return f"max_norm {number(bound)}, total norm non-finite (an overflow step)"
    applied = min(total, bound) / scale
    meant = min(total / scale, bound)
    return f"max_norm {number(bound)}, applied norm {number(applied)} (meant {number(meant)})"


def scaled_code(run: Run, clip: Record) -> str:
    if clip["event"] == "module_clip" or clip.get("manual_module"):
        return "ACF005"
    if any(fabric.get("scaler") for fabric in run.events("fabric")):
        return "ACF006"
    return "ACF004"


def nonfinite_risk_findings(run: Run, sites: Sites) -> Iterable[Finding]:
    """fabric.clip_gradients(max_norm=...) with error_if_nonfinite=True under a scaler: an
    overflow step raises. Seen without an overflow: said so, and --overflow shows the crash."""
    if any(error_code(str(e.get("message", ""))) == "ACF007" for e in run.events("error")):
        return
    for clip in run.events("fabric_clip"):
        frame = first_frame(clip)
        if frame is None or clip.get("error") or not clip.get("scaler"):
            continue
        if clip.get("max_norm") is None or not clip.get("error_if_nonfinite"):
            continue
        evidence = (
            f"fabric.clip_gradients at {Path(frame[0]).name}:{frame[1]} with max_norm "
            f"{number(clip['max_norm'])} and error_if_nonfinite=True under a GradScaler; no step "
            "overflowed in this run (`--overflow` forces one)"
        )
        site = sites.at(SiteKind.FABRIC_CLIP, frame, "keeps error_if_nonfinite=True")
        yield make("ACF007", [site], evidence)


def plain_backward_findings(run: Run, sites: Sites) -> Iterable[Finding]:
    for backward in run.events("backward"):
        module = backward.get("module") or {}
        frame = first_frame(backward)
        if backward.get("via") != "plain" or frame is None or not module.get("scaler"):
            continue
        evidence = (
            f"loss.backward() at {Path(frame[0]).name}:{frame[1]} in {module.get('cls')}, "
            "which optimizes manually under a GradScaler"
        )
        site = sites.at(SiteKind.BACKWARD, frame, "plain backward in manual optimization")
        raised = [
            f"then {e.get('type')}: {(str(e.get('message', '')).splitlines() or [''])[0]}"
            for e in run.events("error")
            if error_code(str(e.get("message", ""))) == "ACF008"
        ]
        yield make("ACF008", [site], evidence, raised[:1])


def summary_lines(run: Run, returncode: int) -> list[str]:
    """What the run did, for the report's end (stderr)."""
    steps = run.events("step")
    stop = run.events("stop")
    ended = (
        f"stopped after {stop[0].get('steps')} optimizer steps"
        if stop
        else f"the command ended (exit {returncode})"
    )
    pids = {item.get("pid") for item in run.records}
    return [
        f"trace: {len(pids)} process(es), {len(steps)} optimizer steps "
        f"({run.skipped_steps()} skipped on overflow), {ended}"
    ]
