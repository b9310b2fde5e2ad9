"""Unified diffs of byte strings, computed with Myers' O(ND) algorithm.

Everything works on bytes so that a patch reproduces a file byte for byte under `git apply`,
whatever its encoding (latin-1, UTF-8 with a BOM) or line endings (LF, CRLF, CR). The standard
library's sequence matcher is deliberately not used: it does not find a minimal diff and its
"junk" heuristics make the output depend on the content in surprising ways.
"""

from __future__ import annotations

from amp_clipfix.patterns import lazy
from amp_clipfix.records import record

__all__ = ["DiffLine", "Hunk", "diff_hunks", "format_patch", "split_lines"]

_NO_NEWLINE = b"\\ No newline at end of file\n"


@record(frozen=True)
class DiffLine:
    """One line of a hunk: `tag` is " " (context), "-" (removed) or "+" (added)."""

    tag: str
    text: bytes  # with its ending; only a file's unterminated last line has none


@record(frozen=True)
class Hunk:
    """A hunk with the numbers of its `@@` header.

    Starts are 1-based; as in `diff -u`, a side with a count of 0 has as start the line *before*
    the hunk (0 when it is at the top of the file).
    """

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[DiffLine, ...]


def split_lines(data: bytes) -> list[bytes]:
    """Split after each b"\\n", keeping the endings, the way git sees lines.

    A CR-only file is therefore a single line: git would see it that way too.
    """
    parts = data.split(b"\n")
    lines = [part + b"\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])  # unterminated last line
    return lines


def _myers(a: list[int], b: list[int]) -> list[str]:
    """Return a shortest edit script from `a` to `b` as a list of " ", "-" and "+" tags.

    Myers (1986): walk the edit graph diagonal by diagonal. `v[k]` is the furthest x reached on
    diagonal k = x - y with d edits; each step takes one edit (down = insert, right = delete) and
    then follows the free "snake" of equal elements. The first d that reaches (n, m) is minimal.
    One snapshot of `v` per d is kept (O(D^2) memory) to walk the path back afterwards.
    """
    n, m = len(a), len(b)
    v: dict[int, int] = {1: 0}
    trace: list[dict[int, int]] = []
    for d in range(n + m + 1):
        trace.append(dict(v))
        for k in range(-d, d + 1, 2):
            x = v[k + 1] if _from_above(v, k, d) else v[k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            v[k] = x
            if x >= n and y >= m:
                return _backtrack(trace, n, m)
    raise AssertionError("unreachable: d = n + m always reaches the end")


def _from_above(v: dict[int, int], k: int, d: int) -> bool:
    """Tell whether diagonal k is best reached down from k+1 (an insertion) or right from k-1.

    The furthest-reaching neighbour wins and the tie rule is fixed, so the script is deterministic;
    backtracking must take the very same decision, hence one shared function.
    """
    return k == -d or (k != d and v[k - 1] < v[k + 1])


def _backtrack(trace: list[dict[int, int]], n: int, m: int) -> list[str]:
    """Rebuild the edit script from the end point by undoing one edit per snapshot."""
    tags: list[str] = []
    x, y = n, m
    for d in range(len(trace) - 1, -1, -1):
        v = trace[d]
        k = x - y
        prev_k = k + 1 if _from_above(v, k, d) else k - 1
        prev_x = v[prev_k]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:  # the snake after the edit
            tags.append(" ")
            x -= 1
            y -= 1
        if d > 0:
            tags.append("+" if x == prev_x else "-")
        x, y = prev_x, prev_y
    tags.reverse()
    return tags


def _edit_script(old: list[bytes], new: list[bytes]) -> list[DiffLine]:
    """Align `old` and `new` as DiffLines, removals before additions within each changed block."""
    # A common prefix and suffix are always part of some minimal script; trimming them keeps the
    # Myers search small for the usual codemod edit (a few lines changed in a large file).
    pre = 0
    while pre < len(old) and pre < len(new) and old[pre] == new[pre]:
        pre += 1
    suf = 0
    while suf < len(old) - pre and suf < len(new) - pre and old[-1 - suf] == new[-1 - suf]:
        suf += 1
    mid_old, mid_new = old[pre : len(old) - suf], new[pre : len(new) - suf]

    # Compare small integers rather than byte strings inside the O(ND) loop.
    ids: dict[bytes, int] = {}
    a = [ids.setdefault(line, len(ids)) for line in mid_old]
    b = [ids.setdefault(line, len(ids)) for line in mid_new]

    # A line that does not occur at all in the other file is an edit in every script: leave such
    # lines out of the search (as GNU diff does), which makes rewritten blocks cheap, then put
    # them back between the matched lines. The number of matches, hence minimality, is unchanged.
    in_a, in_b = set(a), set(b)
    keep_a = [i for i, x in enumerate(a) if x in in_b]
    keep_b = [j for j, y in enumerate(b) if y in in_a]
    matches: list[tuple[int, int]] = []  # (old index, new index) of the lines kept as context
    i = j = 0
    for tag in _myers([a[k] for k in keep_a], [b[k] for k in keep_b]):
        if tag == " ":
            matches.append((keep_a[i], keep_b[j]))
        i += tag != "+"
        j += tag != "-"
    matches.append((len(a), len(b)))  # sentinel: flush the edits after the last match

    result = [DiffLine(" ", line) for line in old[:pre]]
    i = j = 0
    for match_i, match_j in matches:
        # Between two matches, removals come before additions, as in `diff -u`.
        result += [DiffLine("-", line) for line in mid_old[i:match_i]]
        result += [DiffLine("+", line) for line in mid_new[j:match_j]]
        if match_i < len(a):
            result.append(DiffLine(" ", mid_old[match_i]))
        i, j = match_i + 1, match_j + 1
    result += [DiffLine(" ", line) for line in old[len(old) - suf :]]
    return result


def diff_hunks(old: bytes, new: bytes, context: int = 3) -> list[Hunk]:
    """Diff two byte strings line by line into `diff -u`-style hunks.

    Changes separated by at most 2 * `context` unchanged lines share a hunk, as with `diff -u`,
    because their contexts would overlap or touch.
    """
    if context < 0:
        raise ValueError("context must be >= 0")
    script = _edit_script(split_lines(old), split_lines(new))
    changes = [pos for pos, line in enumerate(script) if line.tag != " "]
    if not changes:
        return []

    # Group the changed positions: a gap of more than 2 * context equal lines starts a new hunk.
    groups: list[tuple[int, int]] = []
    first = last = changes[0]
    for pos in changes[1:]:
        if pos - last - 1 > 2 * context:
            groups.append((first, last))
            first = pos
        last = pos
    groups.append((first, last))

    # Lines of each file before each position of the script, to number the hunks.
    old_before = [0]
    new_before = [0]
    for line in script:
        old_before.append(old_before[-1] + (line.tag != "+"))
        new_before.append(new_before[-1] + (line.tag != "-"))

    hunks = []
    for first, last in groups:
        start = max(0, first - context)
        stop = min(len(script), last + 1 + context)
        old_count = old_before[stop] - old_before[start]
        new_count = new_before[stop] - new_before[start]
        hunks.append(
            Hunk(
                old_start=old_before[start] + (old_count > 0),
                old_count=old_count,
                new_start=new_before[start] + (new_count > 0),
                new_count=new_count,
                lines=tuple(script[start:stop]),
            )
        )
    return hunks


def _range(start: int, count: int) -> bytes:
    """Format one side of an `@@` header; like diff and git, a count of 1 is left implicit."""
    return b"%d" % start if count == 1 else b"%d,%d" % (start, count)


# Characters that make git write (and expect) a path in C-style double quotes.
_NEEDS_QUOTING = lazy(rb'[\x00-\x1f"\\\x7f]')
_C_ESCAPES = {b"\t"[0]: b"\\t", b"\n"[0]: b"\\n", b'"'[0]: b'\\"', b"\\"[0]: b"\\\\"}


def _quote_path(raw: bytes) -> bytes:
    """Quote a path the way git does when it holds quotes, backslashes or control characters,
    or bytes that are not UTF-8 (a file named b"\\xff.py": `"a/\\377.py"`, as git's own diff
    writes it and `git apply` reads it), so a patch header is text whatever the name's bytes."""
    try:
        raw.decode("utf-8")
        utf8 = True
    except UnicodeDecodeError:
        utf8 = False
    if utf8 and not _NEEDS_QUOTING.search(raw):
        return raw
    out = bytearray(b'"')
    for byte in raw:
        if byte in _C_ESCAPES:
            out += _C_ESCAPES[byte]
        elif byte < 0x20 or byte == 0x7F or (byte >= 0x80 and not utf8):
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    out += b'"'
    return bytes(out)


def format_patch(
    old: bytes, new: bytes, path: str, context: int = 3, created: bool = False
) -> bytes:
    """Return a unified patch from `old` to `new` for `path` that `git apply` accepts.

    `path` is relative with forward slashes; it is written as `a/PATH` and `b/PATH` (so `git
    apply`'s default -p1 strips the prefixes). A `created` file's old side is `/dev/null`, which
    tells `git apply` (and `patch`) to create it. Returns b"" when there is nothing to change.
    """
    hunks = diff_hunks(old, new, context)
    if not hunks:
        return b""
    name = path.encode("utf-8", "surrogateescape")
    out = [
        b"--- " + (b"/dev/null" if created else _quote_path(b"a/" + name)) + b"\n",
        b"+++ " + _quote_path(b"b/" + name) + b"\n",
    ]
    for hunk in hunks:
        out.append(
            b"@@ -%s +%s @@\n"
            % (_range(hunk.old_start, hunk.old_count), _range(hunk.new_start, hunk.new_count))
        )
        for line in hunk.lines:
            out.append(line.tag.encode("ascii") + line.text)
            if not line.text.endswith(b"\n"):
                # Only a file's last line can lack b"\n"; the marker tells git not to add one.
                out.append(b"\n" + _NO_NEWLINE)
    return b"".join(out)
