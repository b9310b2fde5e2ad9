"""Create one virtual environment per Lightning release the runtime fixtures need.

Each fixtures/runtime/<case>/case.json may name the release its program runs on with
`"runtime": ["pytorch-lightning==1.9.5", "setuptools>=77.0.3,<81"]` (requirement lines, the
Lightning pin first). Cases without it run on the interpreter that runs the tests. This script
makes `.venvs/<name>` for every such list (`<name>` from the first pin: `pytorch-lightning-1.9.5`)
with torch==2.13.0 installed first (a CPU wheel: any other torch request pulls a CUDA build), then
the listed requirements. A venv whose stamp file matches its requirements is left alone, so a
second run takes well under a second.

    python scripts/runtime_venvs.py            # create what is missing, report seconds per venv
    python scripts/runtime_venvs.py --list     # print name and requirements, create nothing
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "runtime"
VENVS = ROOT / ".venvs"
TORCH = "torch==2.13.0"
STAMP = "amp-clipfix-venv.json"


def venv_name(requirements: list[str]) -> str:
    """`pytorch-lightning==1.9.5` -> `pytorch-lightning-1.9.5` (the first line names the venv)."""
    name, _, version = requirements[0].partition("==")
    if not version or not name.strip():
        raise SystemExit(f"the first runtime requirement must be an exact pin: {requirements[0]!r}")
    return f"{name.strip().lower().replace('_', '-')}-{version.strip()}"


def wanted_venvs(cases: Path = CASES) -> dict[str, list[str]]:
    """{venv name: requirements}, merged over every case that names the same release."""
    wanted: dict[str, list[str]] = {}
    for spec in sorted(cases.glob("*/case.json")):
        requirements = json.loads(spec.read_text(encoding="utf-8")).get("runtime")
        if not requirements:
            continue
        merged = wanted.setdefault(venv_name(requirements), [])
        merged.extend(line for line in requirements if line not in merged)
    return wanted


def interpreter(name: str, venvs: Path = VENVS) -> Path:
    return venvs / name / "bin" / "python"


def is_ready(name: str, requirements: list[str] | None = None, venvs: Path = VENVS) -> bool:
    """The venv exists and was made for `requirements` (default: what the fixtures ask)."""
    if requirements is None:
        requirements = wanted_venvs().get(name, [])
    stamp = venvs / name / STAMP
    if not (stamp.is_file() and interpreter(name, venvs).exists()):
        return False
    try:
        return json.loads(stamp.read_text(encoding="utf-8"))["requirements"] == requirements
    except (ValueError, KeyError, TypeError):
        return False


def pip(python: Path, *args: str) -> None:
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--quiet", *args], check=True)


def create(name: str, requirements: list[str], venvs: Path = VENVS) -> float:
    """(Re)create one venv; returns the seconds it took."""
    started = time.perf_counter()
    target = venvs / name
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(target)], check=True)
    python = interpreter(name, venvs)
    pip(python, TORCH)  # first, so that Lightning never resolves another torch
    pip(python, TORCH, *requirements)
    seconds = time.perf_counter() - started
    stamp = {"requirements": requirements, "seconds": round(seconds, 1)}
    (target / STAMP).write_text(json.dumps(stamp, indent=2) + "\n", encoding="utf-8")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the venvs; create nothing")
    args = parser.parse_args()
    wanted = wanted_venvs()
    for name, requirements in wanted.items():
        if args.list:
            print(f"{name}: {' '.join(requirements)}")
        elif is_ready(name, requirements):
            print(f"{name}: ready ({interpreter(name)})")
        else:
            print(f"{name}: creating ({TORCH} {' '.join(requirements)}) ...", flush=True)
            print(f"{name}: created in {create(name, requirements):.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
