"""A memoised query's cache entry (queries.py): its answer, what it left, and its read fields,
each its value or, when large, an entry of its own shared by the queries that read the same."""

from __future__ import annotations

from amp_clipfix.records import record

KINDS = (tuple, dict, dict, dict, set, set, dict, dict)  # each stored read field's type
SHARED_BYTES = 4096  # a read field this large (pickled) is stored as an entry of its own


@record(frozen=True)
class Shared:
    """A read field stored as an entry of its own, `reads-<sha256 of its pickle>`: the queries
    of a run share it where they read the same (what the rules read is cumulative: ACF004's
    files, tests and whole-project analyses again in every rule after it; on fairseq the
    relevance alone is 0.2 MB and 900 paths an answer), so a run loads it once. So is a large
    `derived` answer: the fields holding it differ query by query, it does not."""

    key: str


@record(frozen=True)
class Entry:
    """A query's cache entry: an `Answer` whose read fields (recording.READ_FIELDS, in order)
    are each its value or the `Shared` entry that holds it."""

    revision: str
    reads: tuple[object, ...]
    value: object
    touched: bool
    left: object  # what its computation left (certificate.Left)
    parts: object  # its search's answers per candidate file (candidate_answers.Kept)
    chained: object = None  # what it left, chained into the later keys for its reads (`detach`)
