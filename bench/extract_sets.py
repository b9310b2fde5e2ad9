"""Make the repository sets issue 35's sweeps run on (`bench/corpora.py --root DIR`).

    python bench/extract_sets.py --mirrors /work/.mirror --into /work corpora fresh2 fresh3 fresh4

Each set is a list in `bench/sets/<set>.txt`, one public repository a line as `owner+name`.
Each repository must already be a bare mirror at `<mirrors>/<owner>+<name>/repo` (a git
directory, as the session's fetch tool makes them; fetched code is never committed here). Its
HEAD is written to `<into>/<set>/<owner>+<name>/` (the 14 `corpora` to `<into>/corpora/`),
leaving out the blobs the mirror does not hold (its largest files), and made a git repository
of one commit, as the tool reads a project git tracks. A folder that already holds `.git` is
left as it is. The JSON references for `--compare` are saved from main with
`python bench/corpora.py --root <into>/<set> --save <refs>/<set>-<commit>`.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

SETS = Path(__file__).resolve().parent / "sets"
GIT_USER = ["-c", "user.name=bench", "-c", "user.email=bench@example.invalid"]


def blobs(git: list[str]) -> list[tuple[bytes, bytes, str]]:
    """HEAD's files: (mode, object id, path)."""
    listing = subprocess.run([*git, "ls-tree", "-r", "-z", "HEAD"], capture_output=True, check=True)
    found = []
    for item in listing.stdout.split(b"\0"):
        if item:
            meta, path = item.split(b"\t", 1)
            mode, kind, sha = meta.split()
            if kind == b"blob":
                found.append((mode, sha, os.fsdecode(path)))
    return found


def extract(mirror: Path, dest: Path) -> int:
    """HEAD of `mirror` written under `dest`; the number of files the mirror lacks."""
    git = ["git", "--git-dir", str(mirror)]
    missing = 0
    with subprocess.Popen(
        [*git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as cat:
        assert cat.stdin is not None and cat.stdout is not None
        for mode, sha, path in blobs(git):
            cat.stdin.write(sha + b"\n")
            cat.stdin.flush()
            header = cat.stdout.readline().split()
            if header[1] == b"missing":
                missing += 1
                continue
            data = cat.stdout.read(int(header[2]))
            cat.stdout.read(1)
            target = dest / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if mode == b"120000":
                target.symlink_to(os.fsdecode(data))
            else:
                target.write_bytes(data)
                if mode == b"100755":
                    target.chmod(0o755)
        cat.stdin.close()
    return missing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", help="names of bench/sets/*.txt")
    parser.add_argument("--mirrors", type=Path, required=True)
    parser.add_argument("--into", type=Path, required=True)
    arguments = parser.parse_args()
    for name in arguments.sets:
        root = arguments.into / name
        for repository in (SETS / f"{name}.txt").read_text().split():
            dest = root / repository
            if (dest / ".git").is_dir():
                continue
            shutil.rmtree(dest, ignore_errors=True)
            dest.mkdir(parents=True)
            missing = extract(arguments.mirrors / repository / "repo", dest)
            subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
            subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
            commit = ["git", *GIT_USER, "commit", "-q", "--no-verify", "-m", "snapshot"]
            subprocess.run(commit, cwd=dest, check=True)
            print(f"{name}/{repository}: {missing} files the mirror lacks left out", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
