"""The monitor `amp-clipfix trace` installs in the user's interpreter (standard library only).

This file is copied, as `_amp_clipfix_monitor.py`, into a temporary folder that the command's
environment puts first on PYTHONPATH, beside a `sitecustomize.py` that chains the one the
environment had and then calls `install()`. Children (torchrun, DDP, multiprocessing spawn)
inherit the environment and so the monitor. It imports nothing of amp_clipfix and needs nothing
installed: the tool may live in another environment than the training program.

It wraps, on their first import, torch's optimizers, GradScaler and clip functions,
`Tensor.backward`, and Lightning's Fabric, Trainer and LightningModule, and writes one JSON line
per event to the file named by AMP_CLIPFIX_TRACE (appended by every process); an audit hook
notes the config files (.yaml, .yml, .json) under the program's folder that the run opens.
It changes nothing the program computes, except with AMP_CLIPFIX_TRACE_OVERFLOW=1: then the
first `scaler.update()` sets a huge scale, so that the next step overflows (and is skipped)
as one would in a long run, and the following update puts the scale back. After
AMP_CLIPFIX_TRACE_STEPS optimizer steps the process ends (exit 0) once the step's record is written.
"""

from __future__ import annotations

import atexit
import importlib.abc
import os
import sys
import sysconfig
from typing import Any

from .core import (
    CONFIG_ROOT,
    ENV_NORMS,
    ENV_OVERFLOW,
    ENV_RECORD,
    ENV_STEPS,
    LIGHTNING_FABRIC,
    LIGHTNING_MODULE,
    LIGHTNING_TRAINER,
    LIMIT,
    RECORD,
    SKIPPED_PREFIXES,
    config_opened,
    emit,
    error_record,
    flush,
)
from .lightning_hooks import install_fabric, install_module, install_trainer
from .torch_hooks import install_torch

INSTALLERS = {
    "torch": install_torch,
    **dict.fromkeys(LIGHTNING_FABRIC, install_fabric),
    **dict.fromkeys(LIGHTNING_TRAINER, install_trainer),
    **dict.fromkeys(LIGHTNING_MODULE, install_module),
}


class Finder(importlib.abc.MetaPathFinder):
    """Runs an installer right after one of INSTALLERS' modules has run its code."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        installer = INSTALLERS.get(fullname)
        if installer is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            INSTALLERS.pop(fullname, None)
            try:
                installer(module)
            except Exception as error:  # noqa: BLE001 - a release we do not know: say so
                emit("monitor_error", module=fullname, message=repr(error)[:300])

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def excepthook(original: Any) -> Any:
    def hook(kind: Any, error: BaseException, tb: Any) -> None:
        try:
            error_record(error, "uncaught")
        finally:
            original(kind, error, tb)

    return hook


def install() -> None:
    """Start recording in this process when the environment asks for it."""
    path = os.environ.get(ENV_RECORD)
    if not path:
        return
    RECORD["path"] = path
    RECORD["pid"] = os.getpid()
    LIMIT["steps"] = int(os.environ.get(ENV_STEPS) or 3)
    LIMIT["overflow"] = os.environ.get(ENV_OVERFLOW) == "1"
    LIMIT["norms"] = os.environ.get(ENV_NORMS) == "1"
    paths = sysconfig.get_paths()
    SKIPPED_PREFIXES[:] = (
        os.path.realpath(paths[key]) + os.sep
        for key in ("stdlib", "platstdlib", "purelib", "platlib")
        if key in paths
    )
    sys.meta_path.insert(0, Finder())
    CONFIG_ROOT[:] = [os.path.join(os.getcwd(), "")]
    sys.addaudithook(config_opened)
    sys.excepthook = excepthook(sys.excepthook)
    atexit.register(flush)
    emit(
        "process",
        argv=list(getattr(sys, "orig_argv", sys.argv)),
        executable=sys.executable,
        cwd=os.getcwd(),
    )
    for name in list(INSTALLERS):  # imported before us (a sitecustomize that imports torch)
        module = sys.modules.get(name)
        if module is not None:
            INSTALLERS.pop(name)(module)
