"""What ACF001 and ACF002 share: a finding from the ways its pieces combine, and the words that
say which piece a person must decide when one is decided at run time."""

from __future__ import annotations

from collections.abc import Sequence

from amp_clipfix.analysis.link import PathPieces, Piece, sort_key
from amp_clipfix.models import Confidence
from amp_clipfix.rules.base import Found

# Each piece that may be decided at run time: how the review names it, and what it must turn
# out to be for Lightning to raise (the end of the message: "..., if <condition>").
WORDS = {
    Piece.PRECISION: ("the precision", "the precision chosen at run time is mixed"),
    Piece.FUSED: ("whether the optimizer is fused", "the optimizer is fused"),
    Piece.CLIPPED: ("whether gradients are clipped", "gradients are clipped"),
    Piece.TRAINED: ("which module the Trainer trains", "the Trainer trains this module"),
}


def found(candidates: Sequence[PathPieces]) -> Found:
    """One finding from every way its pieces combine: certain when one way has every piece
    written out, else a review finding of the same rule that names the fewest unknown pieces."""
    sites = tuple(
        sorted(
            {
                site
                for pieces in candidates
                for site in (*pieces.precision, *pieces.optimizers, *pieces.clips)
            },
            key=sort_key,
        )
    )
    # The way with the fewest unknown pieces (ties: the first in `Piece` order, whatever order
    # the ways came in).
    order = list(Piece)
    unknown = min(
        (pieces.unknown() for pieces in candidates),
        key=lambda pieces: (len(pieces), [order.index(piece) for piece in pieces]),
    )
    if not unknown:
        return Found(sites)
    named = [WORDS[piece][0] for piece in unknown]
    return Found(
        sites,
        Confidence.REVIEW,
        review=f"{' and '.join(named)} {'is' if len(named) == 1 else 'are'} decided at run time",
        condition=" and ".join(WORDS[piece][1] for piece in unknown),
    )
