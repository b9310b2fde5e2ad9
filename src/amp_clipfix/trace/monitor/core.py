"""The monitor's state, its records and the helpers every hook uses."""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import weakref
from typing import Any

ENV_RECORD = "AMP_CLIPFIX_TRACE"
ENV_STEPS = "AMP_CLIPFIX_TRACE_STEPS"
ENV_OVERFLOW = "AMP_CLIPFIX_TRACE_OVERFLOW"
ENV_NORMS = "AMP_CLIPFIX_TRACE_NORMS"  # measure the norm after each clip (one more reduction)

HUGE_SCALE = 3.0e38  # any gradient above 1.2 overflows float32 once scaled by it
STOP_EXIT = 0

# Modules whose classes are wrapped once they are imported, and what wraps them.
LIGHTNING_FABRIC = ("lightning.fabric.fabric", "lightning_fabric.fabric")
LIGHTNING_TRAINER = ("lightning.pytorch.trainer.trainer", "pytorch_lightning.trainer.trainer")
LIGHTNING_MODULE = ("lightning.pytorch.core.module", "pytorch_lightning.core.module")


class _State(threading.local):
    def __init__(self) -> None:
        self.busy = 0  # inside a wrapper: nested library calls are not recorded again
        self.outer: dict[str, Any] | None = None  # the record of the wrapped call we are in
        self.in_scaler_step = False
        self.stepped = False
        self.manual_backward = 0


STATE = _State()
SKIPPED_PREFIXES: list[str] = []  # the interpreter's own folders, set by install()
OWN_FOLDER = os.path.dirname(os.path.abspath(__file__)) + os.sep
RECORD: dict[str, Any] = {"path": None, "pid": None}
COUNTS = {"steps": 0, "updates": 0}
OPTIMIZERS: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
SCALERS: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
SCALED: set[int] = set()  # scalers whose scale() ran since their last update()
LIMIT: dict[str, Any] = {"steps": 3, "overflow": False, "norms": False, "overflow_state": 0}
LIGHTNING_MODULE_CLASSES: list[type] = []
RECORDED_ERRORS: set[int] = set()


# -- records --------------------------------------------------------------------------------


BUFFER: list[str] = []  # records not written yet: written together, in one write() each time
BUFFERED = 64
URGENT = frozenset({"process", "error", "stop", "monitor_error"})


def emit(kind: str, **fields: Any) -> dict[str, Any]:
    """Record one event (a JSON line) and return it. Lines are written in batches, each batch
    with one write() to the file opened for appending (whole lines, whatever other processes
    write), at once for an error, a stop or a new process, and at exit."""
    record = {"event": kind, "pid": os.getpid(), **fields}
    if RECORD["path"] is None:
        return record
    if RECORD["pid"] != os.getpid():  # a forked child: its parent writes what it buffered
        BUFFER.clear()
        RECORD["pid"] = os.getpid()
    BUFFER.append(json.dumps(record, default=repr) + "\n")
    if len(BUFFER) >= BUFFERED or kind in URGENT:
        flush()
    return record


def flush() -> None:
    if not BUFFER or RECORD["path"] is None or RECORD["pid"] != os.getpid():
        return
    data = "".join(BUFFER).encode("utf-8")
    BUFFER.clear()
    descriptor = os.open(RECORD["path"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, data)
    finally:
        os.close(descriptor)


def user_frames(skip: int = 1, limit: int = 8) -> list[list[Any]]:
    """The stack's frames in the user's code, innermost first: [file, line, function]."""
    frames: list[list[Any]] = []
    frame: Any = sys._getframe(skip + 1)  # noqa: SLF001 - the cheap way to walk the stack
    while frame is not None and len(frames) < limit:
        name = frame.f_code.co_filename
        if is_user_file(name):
            frames.append([os.path.abspath(name), frame.f_lineno, frame.f_code.co_name])
        frame = frame.f_back
    return frames


def traceback_frames(error: BaseException, limit: int = 8) -> list[list[Any]]:
    """The user frames of an exception's traceback, innermost first."""
    frames: list[list[Any]] = []
    tb = error.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if is_user_file(name):
            frames.append([os.path.abspath(name), tb.tb_lineno, tb.tb_frame.f_code.co_name])
        tb = tb.tb_next
    return frames[::-1][:limit]


@functools.cache
def is_user_file(name: str) -> bool:
    if name.startswith("<") or os.path.abspath(name).startswith(OWN_FOLDER):
        return False
    path = os.path.realpath(name)
    parts = path.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    return not any(path.startswith(prefix) for prefix in SKIPPED_PREFIXES)


def error_record(error: BaseException, where: str, frames: list[list[Any]] | None = None) -> None:
    """An exception that passes through a wrapper, once per exception object."""
    if id(error) in RECORDED_ERRORS:
        return
    RECORDED_ERRORS.add(id(error))
    emit(
        "error",
        where=where,
        type=type(error).__name__,
        message=str(error)[:500],
        frames=traceback_frames(error) or frames or [],
    )


def unwrap_optimizer(optimizer: Any) -> Any:
    """The torch optimizer under Lightning's wrappers (LightningOptimizer, _FabricOptimizer)."""
    for _ in range(4):
        if id(optimizer) in OPTIMIZERS:
            return optimizer
        inner = getattr(optimizer, "_optimizer", None) or getattr(optimizer, "optimizer", None)
        if inner is None:
            return optimizer
        optimizer = inner
    return optimizer


def stage_of(scaler: Any, optimizer: Any) -> str:
    state = scaler._per_optimizer_states.get(id(optimizer))  # noqa: SLF001 - .get adds none
    if not state:
        return "READY"
    stage = state.get("stage")
    return getattr(stage, "name", str(stage))


def scaler_view(optimizer: Any) -> dict[str, Any] | None:
    """The scaler whose scale() ran since its update, with the optimizer's stage in it."""
    for key in list(SCALED):
        scaler = SCALERS.get(key)
        if scaler is None or not scaler.is_enabled():
            continue
        return {
            "scaler": key,
            "scale": float(scaler.get_scale()),
            "stage": stage_of(scaler, optimizer),
        }
    return None


def maybe_stop() -> None:
    """At the end of a step: its records are written (one write), and after the last step
    the process ends."""
    if COUNTS["steps"] < LIMIT["steps"]:
        flush()
        return
    if COUNTS["steps"] >= LIMIT["steps"] and not (
        LIMIT["overflow"] and LIMIT["overflow_state"] < 2
    ):
        emit("stop", reason="steps", steps=COUNTS["steps"])
        flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(STOP_EXIT)


def manual_module() -> dict[str, Any] | None:
    """The LightningModule with manual optimization whose method is on the stack, if any."""
    if not LIGHTNING_MODULE_CLASSES:
        return None
    classes = tuple(LIGHTNING_MODULE_CLASSES)
    frame: Any = sys._getframe(2)  # noqa: SLF001
    caller = frame
    for _ in range(30):
        if frame is None:
            return None
        owner = frame.f_locals.get("self")
        if frame is caller and not isinstance(owner, classes):  # `def step(module, ...)`
            owner = next((v for v in frame.f_locals.values() if isinstance(v, classes)), None)
        if isinstance(owner, classes):
            if getattr(owner, "automatic_optimization", True):
                return None
            trainer = getattr(owner, "_trainer", None)
            plugin = getattr(trainer, "precision_plugin", None)
            scaler = getattr(plugin, "scaler", None)
            names = [name for name, value in caller.f_locals.items() if value is owner]
            return {
                "cls": type(owner).__name__,
                "file": module_file(type(owner)),
                "scaler": scaler is not None,
                "receiver": names[0] if names else None,  # its name where the call is
            }
        frame = frame.f_back
    return None


def module_file(cls: type) -> str | None:
    module = sys.modules.get(cls.__module__)
    name = getattr(module, "__file__", None)
    return os.path.abspath(name) if name else None


# -- config files ---------------------------------------------------------------------------

CONFIG_SUFFIXES = (".yaml", ".yml", ".json")
CONFIG_FILES: set[str] = set()
CONFIG_ROOT: list[str] = []  # the program's folder (its working directory at start)


def config_opened(event: str, args: tuple[Any, ...]) -> None:
    """An audit hook: the config files under the program's folder the run opens (by any
    reader: open, Path.read_text, yaml, json, OmegaConf, jsonargparse), once each, recorded by
    path. It reads nothing and changes nothing."""
    if event != "open" or not args:
        return
    name = args[0]
    if not isinstance(name, str) or not name.endswith(CONFIG_SUFFIXES):
        return
    path = os.path.abspath(name)
    if path in CONFIG_FILES or not CONFIG_ROOT or not path.startswith(CONFIG_ROOT[0]):
        return
    CONFIG_FILES.add(path)
    mode = args[1] if len(args) > 1 else None
    flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
    writes = any(c in mode for c in "wax+") if isinstance(mode, str) else False
    if writes or flags & (os.O_WRONLY | os.O_RDWR) or path == RECORD["path"]:
        return  # written, not read (the trace record itself among them)
    emit("config_file", path=path)
