"""Run training programs as `python <entry>` would, without paying torch's and Lightning's import
each time: this process imports them once, then forks one child per program.

Run with the interpreter the programs need (the test one or a release environment's); the
runtime tests talk to it over stdin/stdout, one JSON line each way per program:

    {"argv": ["train.py"], "cwd": ..., "env": {...}, "stdout": path, "stderr": path, "timeout": s}
    {"returncode": 0}

The child changes to `cwd`, takes `env` as its whole environment, writes its output (UTF-8,
buffered as into a pipe) to the two files, runs the entry as `__main__` with the entry's folder
first on sys.path, and exits
with the code `python <entry>` would have (1 and a traceback on an uncaught exception; a negative
signal number when killed, as subprocess reports it; SIGALRM after `timeout` seconds). Imports
happen before any request, so a module's import-time state is what a fresh interpreter has; the
program's own modules are imported by the child only.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import runpy
import signal
import sys

PREIMPORT = ("torch", "lightning", "pytorch_lightning")  # the first of the last two installed


def preimport() -> list[str]:
    imported = []
    for name in PREIMPORT:
        if name == "pytorch_lightning" and "lightning" in imported:
            break
        if importlib.util.find_spec(name) is not None:
            __import__(name)
            imported.append(name)
    return imported


def exit_code(error: SystemExit) -> int:
    """What the interpreter makes of `sys.exit(code)`."""
    if error.code is None:
        return 0
    if isinstance(error.code, int):
        return error.code
    print(error.code, file=sys.stderr)
    return 1


def child(request: dict) -> int:
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    # sys.stdout and sys.stderr stay the objects the imports saw (logging handlers hold them);
    # they were empty at the fork and now write to the files. Their encoding is the child
    # environment's PYTHONIOENCODING, which this process started with too.
    entry = request["argv"][0]
    sys.argv = list(request["argv"])
    sys.path[0] = os.path.dirname(os.path.abspath(entry))
    signal.alarm(int(request["timeout"]))
    try:
        runpy.run_path(entry, run_name="__main__")
        code = 0
    except SystemExit as error:
        code = exit_code(error)
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def main() -> None:
    replies = sys.stdout
    print(json.dumps({"ready": preimport()}), file=replies, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = child(request)
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        returncode = os.waitstatus_to_exitcode(status)
        print(json.dumps({"returncode": returncode}), file=replies, flush=True)


if __name__ == "__main__":
    main()
