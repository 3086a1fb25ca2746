"""Claims of annotators aligned by answer-span overlap (issue 14 item 5): pure, no database."""

from __future__ import annotations

from audit.contract.claim_alignment import (
    claims_agree,
    claims_aligned,
    claims_consensus,
)


def claim(cid, start, end, supported=True, accurate=True, kind="verifiable", reason="r"):
    return {
        "id": cid,
        "span": {"snapshot": "answer", "start": start, "end": end, "quote": "x" * (end - start)},
        "source_digest": None,
        "quote_span": None,
        "supported": supported,
        "accurate": accurate,
        "kind": kind,
        "reason": reason,
    }


def test_claims_split_a_little_differently_still_align_and_agree():
    first = [claim("c1", 0, 40), claim("c2", 50, 90)]
    second = [claim("c1", 52, 88), claim("c2", 2, 41)]  # other order, other boundaries
    rows = claims_aligned([first, second])
    assert [row.members for row in rows] == [((0,), (1,)), ((1,), (0,))]
    assert not any(row.differs for row in rows)
    assert claims_agree([first, second])


def test_an_unmatched_claim_disputes_the_unit():
    first = [claim("c1", 0, 40), claim("c2", 50, 90)]
    second = [claim("c1", 0, 40)]
    rows = claims_aligned([first, second])
    assert [(row.members, row.why) for row in rows] == [
        (((0,), (0,)), None),
        (((1,), ()), "unmatched"),
    ]
    assert not claims_agree([first, second])


def test_a_differing_claim_verdict_or_kind_disputes_the_unit():
    base = [claim("c1", 0, 40)]
    assert not claims_agree([base, [claim("k", 0, 40, supported=False)]])
    assert not claims_agree([base, [claim("k", 0, 40, accurate=None)]])
    assert not claims_agree([base, [claim("k", 0, 40, kind="not_truth_apt")]])
    # sources, quotes and reasons may differ between agreeing claims
    other = claim("k", 0, 40, reason="another reason")
    other["source_digest"] = "f" * 64
    assert claims_agree([base, [other]])
    assert claims_aligned([base, [claim("k", 0, 40, supported=False)]])[0].why == "verdicts"


def test_spans_overlapping_by_less_than_half_of_the_shorter_one_do_not_align():
    first = [claim("c1", 0, 40)]
    second = [claim("c1", 30, 70)]  # overlap 10 of 40
    assert [row.why for row in claims_aligned([first, second])] == ["unmatched", "unmatched"]


def test_no_claims_on_either_side_agree():
    assert claims_agree([[], []])
    assert claims_aligned([[], []]) == []


def test_three_annotators_align_into_one_row_per_claim():
    rows = claims_aligned([[claim("a", 0, 40)], [claim("b", 1, 39)], [claim("c", 0, 42)]])
    assert [row.members for row in rows] == [((0,), (0,), (0,))]


def test_the_consensus_claims_do_not_depend_on_who_submitted_first():
    first = [claim("c1", 0, 40, reason="A says"), claim("c2", 50, 90, reason="A two")]
    second = [claim("x", 2, 41, reason="B says"), claim("y", 50, 90, reason="B two")]
    one = claims_consensus([first, second])
    other = claims_consensus([second, first])
    assert [c["id"] for c in one] == ["c1", "c2"]
    assert [(c["span"]["start"], c["span"]["end"]) for c in one] == [(0, 40), (50, 90)]
    assert one[0]["reason"] == "A says | B says"  # in span order: (0, 40) before (2, 41)
    assert one == other
