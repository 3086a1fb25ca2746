"""The share of left picks per annotator (metrics.position_bias): pure, no database."""

from __future__ import annotations

import pytest

from audit.contract import codes
from metrics.position_bias import NO_DECISIVE_PICKS, left_shares
from metrics.protocol import ProtocolInputError


def test_the_share_is_left_over_decisive_picks_with_same_and_u_beside_it():
    picks = [
        ("a1", "left"),
        ("a1", "left"),
        ("a1", "right"),
        ("a1", "same"),
        ("a1", None),
        ("a2", "right"),
        ("a2", "right"),
        ("a2", "left"),
        ("a2", "right"),
    ]
    shares = left_shares(picks)
    assert list(shares) == ["a1", "a2"]
    first, second = shares["a1"], shares["a2"]
    assert (first.left, first.right, first.same, first.unresolved) == (2, 1, 1, 1)
    assert first.share == pytest.approx(2 / 3)
    assert first.decisive == 3
    assert (second.left, second.right, second.share) == (1, 3, 0.25)


def test_an_annotator_with_no_decisive_pick_has_no_share():
    shares = left_shares([("a1", "same"), ("a1", None)])
    assert shares["a1"].share is None
    assert shares["a1"].reason == NO_DECISIVE_PICKS


def test_no_picks_no_annotators():
    assert left_shares([]) == {}


@pytest.mark.parametrize("bad", [("a1", "answer"), ("a1", "LEFT"), ("a1",), "left"])
def test_a_pick_that_is_not_a_side_is_refused_with_its_position(bad):
    with pytest.raises(ProtocolInputError) as refused:
        left_shares([("a0", "left"), bad])
    assert refused.value.code == codes.INVALID_FIELD
    assert refused.value.field == "picks[1]"
