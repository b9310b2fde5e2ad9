"""How the runtime tests run a case's training program: forked from tests/runtime/forkserver.py,
a server per interpreter that imported torch and Lightning once (importing them took about nine
tenths of each program's time), or, where a test compares the two, as a fresh `python <entry>`.

Every runtime module that runs programs shares these servers: a worker keeps idle ones for the
interpreter it last used only (the tests run release by release), and all are closed at the end
of the session (tests/runtime/conftest.py). Only the training programs are forked: the CLI under
test runs in the test's process in test_runtime_fix.py (tests/piped.py) and in a process of its
own elsewhere (docs/proof.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

FORKSERVER = Path(__file__).with_name("forkserver.py")
EXPECT_CLIPPING = "AMP_CLIPFIX_EXPECT_CLIPPING"
REPORT = "AMP_CLIPFIX_REPORT"
TIMEOUT = 300


@dataclass(frozen=True)
class Proc:
    """What a child process did; str() is a readable summary for assertion messages."""

    command: str
    returncode: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        return (
            f"$ {self.command}\nexit code {self.returncode}\n"
            f"--- stdout (tail) ---\n{self.stdout[-3000:]}\n"
            f"--- stderr (tail) ---\n{self.stderr[-3000:]}"
        )

    def __repr__(self) -> str:
        return f"Proc({self.command!r}, exit {self.returncode})"


def child_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """A clean, predictable environment for a child Python."""
    child_env = {k: v for k, v in os.environ.items() if k not in (EXPECT_CLIPPING, REPORT)}
    child_env.update(PYTHONDONTWRITEBYTECODE="1", PYTHONIOENCODING="utf-8", NO_COLOR="1")
    child_env.update(env or {})
    return child_env


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Proc:
    """Run a child Python with a clean, predictable environment and capture its output."""
    completed = subprocess.run(
        args,
        cwd=cwd,
        env=child_env(env),
        capture_output=True,
        encoding="utf-8",
        errors="replace",
        timeout=TIMEOUT,
        check=False,
    )
    return Proc(" ".join(args), completed.returncode, completed.stdout, completed.stderr)


class ForkServer:
    """tests/runtime/forkserver.py under one interpreter: torch and Lightning imported once, a
    forked child per program."""

    def __init__(self, python: str) -> None:
        self.python = python
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self._process = subprocess.Popen(
            [python, str(FORKSERVER)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=child_env(),
            encoding="utf-8",
        )
        self._reply()

    def _reply(self) -> dict:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            self._log.seek(0)
            log = self._log.read().decode(errors="replace")[-3000:]
            raise RuntimeError(f"the fork server of {self.python} exited:\n{log}")
        return json.loads(line)

    def run(self, args: list[str], cwd: Path, env: dict[str, str]) -> Proc:
        """`python *args` in `cwd` with `child_env(env)`, as `run` would, but forked."""
        assert self._process.stdin is not None
        stdout, stderr = (cwd.parent / f"{cwd.name}.{n}.{uuid.uuid4().hex}" for n in (1, 2))
        request = {"argv": args, "cwd": str(cwd), "env": child_env(env), "timeout": TIMEOUT}
        request.update(stdout=str(stdout), stderr=str(stderr))
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        returncode = self._reply()["returncode"]
        read = {"encoding": "utf-8", "errors": "replace"}
        output = stdout.read_text(**read), stderr.read_text(**read)
        return Proc(f"{self.python} {' '.join(args)} (forked)", returncode, *output)

    def close(self) -> None:
        if self._process.stdin is not None:
            self._process.stdin.close()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._log.close()


class ForkServers:
    """Idle fork servers of the interpreter last asked for; one per program running at the same
    time. Asking for another interpreter closes the idle servers of the others: each holds its
    own torch and Lightning in memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, list[ForkServer]] = {}
        self._pool: ThreadPoolExecutor | None = None

    def run(self, python: str, args: list[str], cwd: Path, env: dict[str, str]) -> Proc:
        with self._lock:
            idle = self._idle.setdefault(python, [])
            server = idle.pop() if idle else None
            others = [s for other, kept in self._idle.items() if other != python for s in kept]
            self._idle = {python: idle}
        for other in others:
            other.close()
        if server is None:
            server = ForkServer(python)
        proc = server.run(args, cwd, env)  # a server that failed is not used again
        with self._lock:
            self._idle.setdefault(python, []).append(server)
        return proc

    def start(self, python: str, args: list[str], cwd: Path, env: dict[str, str]) -> Future[Proc]:
        """`run` in a thread of its own: the program runs while the test goes on."""
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="program")
            pool = self._pool
        return pool.submit(self.run, python, args, cwd, env)

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            idle, self._idle = self._idle, {}
        for servers in idle.values():
            for server in servers:
                server.close()


PROGRAMS = ForkServers()
