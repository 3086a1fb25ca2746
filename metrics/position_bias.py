"""The share of "left" picks per annotator: a position-bias check of the pairwise side by
side protocol (DESIGN.md, "Seed 002's evaluation protocol"). Pure: no Django.

Each annotator sees each answer pair in an order drawn for them, so an annotator with no
bias toward a side picks the left answer about as often as the right one. The share is
taken over **decisive** picks (left or right); "same" and U are counted beside it, never in
it. An annotator with no decisive pick has share ``None`` (reason ``no_decisive_picks``).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from dataclasses import dataclass

from audit.contract import codes
from metrics.protocol import ProtocolInputError

#: An annotator with no left or right pick: the share is undefined.
NO_DECISIVE_PICKS = "no_decisive_picks"
#: What a pick may be: a side, "same", or ``None`` (U).
PICKS = ("left", "right", "same", None)


@dataclass(frozen=True)
class LeftShare:
    """One annotator's picks: ``left`` and ``right`` (decisive), ``same``, ``unresolved``
    (U), and ``share`` = left / (left + right), ``None`` with ``reason`` when undefined."""

    left: int
    right: int
    same: int
    unresolved: int
    share: float | None
    reason: str | None = None

    @property
    def decisive(self) -> int:
        return self.left + self.right


def left_shares(picks: Iterable[tuple[Hashable, str | None]]) -> dict[Hashable, LeftShare]:
    """The share of left picks of each annotator, from ``(annotator, picked)`` pairs where
    ``picked`` is ``"left"``, ``"right"``, ``"same"`` or ``None`` (U): the side as the
    annotator saw it (audit.contract.sides.picked_side recovers it from a stored label).
    Annotators in the order they first appear. A pick of anything else raises
    :class:`metrics.protocol.ProtocolInputError` naming its position."""
    counts: dict[Hashable, list[int]] = {}
    for index, item in enumerate(picks):
        if not isinstance(item, tuple) or len(item) != 2:
            raise ProtocolInputError(
                codes.INVALID_FIELD, f"picks[{index}]", "is not an (annotator, picked) pair"
            )
        annotator, picked = item
        if picked not in PICKS:
            raise ProtocolInputError(
                codes.INVALID_FIELD,
                f"picks[{index}]",
                f'picked is {picked!r}; one of "left", "right", "same" or None (U)',
            )
        row = counts.setdefault(annotator, [0, 0, 0, 0])
        row[PICKS.index(picked)] += 1
    out = {}
    for annotator, (left, right, same, unresolved) in counts.items():
        decisive = left + right
        out[annotator] = LeftShare(
            left=left,
            right=right,
            same=same,
            unresolved=unresolved,
            share=left / decisive if decisive else None,
            reason=None if decisive else NO_DECISIVE_PICKS,
        )
    return out
