"""metrics.protocol: pure tests (no database; seed 002's evaluation protocol).

Hand-computed numbers first (NetGain's worked example, PassR, e(q), Usable_q, HighQ_q,
Acc_qd, trust and revised grades), then input errors, then properties.
"""

from __future__ import annotations

import itertools
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.protocol import (
    CONTRADICTED,
    DUPLICATE_DOCUMENT,
    FAILED_TRUST,
    LENGTH_MISMATCH,
    NO_DECIDED_ANSWERS,
    NO_GRADED_QUERIES,
    NO_JUDGMENTS,
    REDUNDANT,
    UNKNOWN_DOCUMENT,
    Contradiction,
    Document,
    ProtocolInputError,
    RedundancyGroup,
    accuracy_qd,
    answer_pass,
    document_grade,
    document_trust,
    higher_trust,
    net_gain,
    net_gain_bootstrap,
    pass_rate,
    query_grade,
    revised_grades,
    usability,
)

# --- NetGain --------------------------------------------------------------------------------


def test_net_gain_reproduces_the_seeds_example():
    # N = 1000, p_G = 0.189, p_B = 0.100, p_G - p_B = 0.089.
    # v = 0.189 + 0.100 - 0.089² = 0.289 - 0.007921 = 0.281079; se = √(v/N) = 0.0167654.
    # z(0.975) = 1.959964; half width = 0.0328598 → [0.0561402, 0.1218598].
    result = net_gain(189, 711, 100)
    assert (result.numerator, result.denominator) == (89, 1000)
    assert result.value == pytest.approx(8.9)
    assert (round(result.low, 2), round(result.high, 2)) == (5.61, 12.19)
    assert result.method == "normal"
    assert result.reason is None


def test_net_gain_without_judgments_is_undefined_with_a_reason():
    result = net_gain(0, 0, 0)
    assert (result.value, result.low, result.high) == (None, None, None)
    assert result.reason == NO_JUDGMENTS
    assert result.denominator == 0


def test_net_gain_all_good_has_a_degenerate_interval():
    # p_G = 1, p_B = 0: v = 1 - 1 = 0, so the interval is the point.
    result = net_gain(10, 0, 0)
    assert (result.value, result.low, result.high) == (100.0, 100.0, 100.0)


def test_net_gain_interval_is_clipped_to_the_range_of_net_gain():
    # G 1, S 1: p̂ = 0.5, v = 0.5 - 0.25 = 0.25, half = 1.96·√(0.125) = 0.693 > 0.5.
    result = net_gain(1, 1, 0)
    assert result.high == 100.0
    assert result.low == pytest.approx(100 * (0.5 - 1.959964 * 0.125**0.5), abs=1e-4)


@pytest.mark.parametrize(
    ("args", "field"),
    [((-1, 0, 0), "good"), ((0, 1.5, 0), "same"), ((0, 0, True), "bad")],
)
def test_net_gain_refuses_bad_counts_naming_them(args, field):
    with pytest.raises(ProtocolInputError) as caught:
        net_gain(*args)
    assert caught.value.field == field


def test_net_gain_refuses_a_confidence_outside_0_1():
    with pytest.raises(ProtocolInputError) as caught:
        net_gain(1, 1, 1, confidence=1.0)
    assert caught.value.field == "confidence"


def _judgments(good: int, same: int, bad: int) -> list[str]:
    return ["G"] * good + ["S"] * same + ["B"] * bad


def test_net_gain_bootstrap_one_pair_per_query_lands_near_the_normal_interval():
    judgments = _judgments(189, 711, 100)
    result = net_gain_bootstrap(judgments, [f"q{i}" for i in range(1000)], seed=11, n_boot=400)
    assert result.value == pytest.approx(8.9)
    assert result.method == "cluster_bootstrap"
    assert result.clusters == 1000
    assert result.low == pytest.approx(5.61, abs=0.6)
    assert result.high == pytest.approx(12.19, abs=0.6)


def test_net_gain_bootstrap_is_reproducible_for_a_seed():
    judgments = _judgments(30, 50, 20)
    queries = [i // 4 for i in range(100)]
    first = net_gain_bootstrap(judgments, queries, seed=3, n_boot=300)
    assert net_gain_bootstrap(judgments, queries, seed=3, n_boot=300) == first


def test_net_gain_bootstrap_widens_when_pairs_of_a_query_agree():
    # 20 queries of 10 pairs each, every pair of a query judged alike (8 G, 4 B, 8 S
    # queries): 10 pairs of a query carry one query's worth of information, so the
    # clustered interval must be wider than the normal interval that treats 200 pairs as
    # independent.
    judgments = ["G"] * 80 + ["B"] * 40 + ["S"] * 80
    queries = [i // 10 for i in range(200)]
    clustered = net_gain_bootstrap(judgments, queries, seed=5, n_boot=500)
    normal = net_gain(80, 80, 40)
    assert clustered.value == normal.value == pytest.approx(20.0)
    assert clustered.high - clustered.low > 2 * (normal.high - normal.low)


def test_net_gain_bootstrap_without_judgments_is_undefined():
    result = net_gain_bootstrap([], [], seed=0, n_boot=50)
    assert (result.value, result.low, result.high, result.reason) == (
        None,
        None,
        None,
        NO_JUDGMENTS,
    )


def test_net_gain_bootstrap_names_a_bad_judgment_and_a_length_mismatch():
    with pytest.raises(ProtocolInputError) as caught:
        net_gain_bootstrap(["G", "S", "left"], [1, 2, 3], seed=0, n_boot=10)
    assert caught.value.field == "judgments[2]"
    with pytest.raises(ProtocolInputError) as caught:
        net_gain_bootstrap(["G", "S"], [1], seed=0, n_boot=10)
    assert (caught.value.code, caught.value.field) == (LENGTH_MISMATCH, "clusters")


# --- answer rubric --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("grades", "expected"),
    [
        ([1, 2, 0, None, 2], False),  # a decided 0 fails, even beside a U
        ([None, 1, 1, 1, 2], None),  # only U and grades >= 1: unknown
        ([1, 2, 1, 1, 2], True),
        ([2, 2, 2, 2, 2], True),
        ([], None),
    ],
)
def test_answer_pass(grades, expected):
    assert answer_pass(grades) is expected


def test_answer_pass_with_threshold_two():
    assert answer_pass([2, 2, 1, 2, 2], threshold=2) is False
    assert answer_pass([2, None, 2], threshold=2) is None
    assert answer_pass([2, 2], threshold=2) is True


def test_answer_pass_refuses_a_grade_outside_the_scale():
    with pytest.raises(ProtocolInputError) as caught:
        answer_pass([1, 3])
    assert caught.value.field == "grades[1]"
    with pytest.raises(ProtocolInputError) as caught:
        answer_pass([1, True])
    assert caught.value.field == "grades[1]"
    with pytest.raises(ProtocolInputError) as caught:
        answer_pass([1], threshold=0)
    assert caught.value.field == "threshold"


def test_pass_rate_counts_unknowns_beside_the_rate():
    # Passes: answers 0 and 3; fail: 1; unknown: 2 and 4 → PassR = 2/3, two unknown.
    result = pass_rate([True, False, None, True, None])
    assert (result.numerator, result.denominator, result.unknown) == (2, 3, 2)
    assert result.value == pytest.approx(2 / 3)


def test_pass_rate_from_answer_grades():
    answers = [[1, 2, 2, 1, 1], [0, None, 2, 2, 2], [None, 1, 1, 1, 1], [2, 2, 2, 2, 1]]
    result = pass_rate(answer_pass(grades) for grades in answers)
    assert (result.numerator, result.denominator, result.unknown) == (2, 3, 1)


def test_pass_rate_without_decided_answers_is_undefined():
    result = pass_rate([None, None])
    assert (result.value, result.reason, result.unknown) == (None, NO_DECIDED_ANSWERS, 2)


def test_pass_rate_refuses_anything_but_a_pass_value():
    with pytest.raises(ProtocolInputError) as caught:
        pass_rate([True, 1])
    assert caught.value.field == "answers[1]"


# --- trust and a(q, d) ----------------------------------------------------------------------

BOUNDARY = date(2025, 1, 1)


def _doc(id_, grade=2, authority=3, **fields) -> Document:
    return Document(id=id_, grade=grade, authority=authority, **fields)


@pytest.mark.parametrize(
    ("document", "source", "temporal", "info", "value"),
    [
        (_doc("gov"), 1, None, None, 1),
        (_doc("firm", authority=2), 1, None, None, 1),
        (_doc("doc", authority=1, domain_alignment="full", producer_profile=1), 1, None, None, 1),
        (
            _doc("blog", authority=0, domain_alignment="partial", producer_profile=1),
            0,
            None,
            None,
            0,
        ),
        (_doc("anon", authority=1, domain_alignment="full"), 0, None, None, 0),  # no profile
        (_doc("new", content_time=date(2025, 3, 1), expiry_boundary=BOUNDARY), 1, 1, None, 1),
        (_doc("at", content_time=BOUNDARY, expiry_boundary=BOUNDARY), 1, 0, None, 0),
        (_doc("old", content_time=date(2024, 6, 1), expiry_boundary=BOUNDARY), 1, 0, None, 0),
        (_doc("undated", expiry_boundary=BOUNDARY), 1, 0, None, 0),
        (_doc("checked", info=1), 1, None, 1, 1),
        (_doc("refuted", info=0), 1, None, 0, 0),
    ],
)
def test_document_trust_is_the_minimum_of_the_applicable_dimensions(
    document, source, temporal, info, value
):
    trust = document_trust(document)
    assert (trust.source, trust.temporal, trust.info, trust.value) == (
        source,
        temporal,
        info,
        value,
    )
    assert trust.failed is (value == 0)


def test_a_document_failing_trust_has_grade_zero_even_when_its_grade_is_u():
    assert document_grade(_doc("refuted", grade=2, info=0)) == 0
    assert document_grade(_doc("refuted", grade=None, info=0)) == 0
    assert document_grade(_doc("gov", grade=None)) is None
    assert document_grade(_doc("gov", grade=1)) == 1


def test_document_trust_names_the_bad_field():
    with pytest.raises(ProtocolInputError) as caught:
        document_trust(_doc("x", authority=4))
    assert caught.value.field == "document.authority"
    with pytest.raises(ProtocolInputError) as caught:
        document_trust(_doc("x", domain_alignment="Full"))
    assert caught.value.field == "document.domain_alignment"
    with pytest.raises(ProtocolInputError) as caught:
        document_trust(_doc("x", content_time="2025-01-01", expiry_boundary=BOUNDARY))
    assert caught.value.field == "document.content_time"


def test_higher_trust_is_dominance_over_the_shared_dimensions():
    government = _doc("gov")
    physician = _doc("md", authority=1, domain_alignment="full", producer_profile=1)
    assert higher_trust(government, physician)
    assert not higher_trust(physician, government)
    assert not higher_trust(government, _doc("gov2"))  # equal: neither is higher
    # Higher source but older content against lower source but newer content: neither.
    old_official = _doc("a", content_time=date(2025, 2, 1), expiry_boundary=BOUNDARY)
    new_firm = _doc("b", authority=2, content_time=date(2025, 5, 1), expiry_boundary=BOUNDARY)
    assert not higher_trust(old_official, new_firm)
    assert not higher_trust(new_firm, old_official)
    # A document failing trust is never higher.
    assert not higher_trust(_doc("refuted", info=0), _doc("blog", authority=0))


def test_revised_grades_applies_trust_contradiction_and_redundancy():
    documents = [
        _doc("gov", grade=2),
        _doc("blog", grade=2, authority=1, domain_alignment="full", producer_profile=1),
        _doc("stale", grade=1, content_time=date(2024, 1, 1), expiry_boundary=BOUNDARY),
        _doc("copy1", grade=1, authority=2),
        _doc("copy2", grade=2, authority=2),
        _doc("firm", grade=1, authority=2),
        _doc("unsure", grade=None, authority=2),
    ]
    result = revised_grades(
        documents,
        contradictions=[
            Contradiction("blog", "gov"),  # gov has higher trust: blog → 0
            Contradiction("copy1", "firm"),  # equal trust: undecided, nothing changes
        ],
        redundancy=[RedundancyGroup("copy1", ("copy1", "copy2"))],
    )
    assert result.ids == ("gov", "blog", "stale", "copy1", "copy2", "firm", "unsure")
    assert result.grades == (2, 2, 0, 1, 2, 1, None)
    assert result.revised == (2, 0, 0, 1, 0, 1, None)
    assert result.reasons == (None, CONTRADICTED, FAILED_TRUST, None, REDUNDANT, None, None)
    assert result.undecided_contradictions == (Contradiction("copy1", "firm"),)
    # {2,0,0,1,0,1,U}: min 0, and the share of a′ >= 1 is 3/7 (U = 0) or 4/7 (U >= 1),
    # both below 0.8, so e = 0 whatever U is.
    assert query_grade(result.revised) == 0


def test_revised_grades_names_unknown_and_duplicate_documents():
    documents = [_doc("a"), _doc("b")]
    with pytest.raises(ProtocolInputError) as caught:
        revised_grades(documents, contradictions=[Contradiction("a", "z")])
    assert (caught.value.code, caught.value.field) == (UNKNOWN_DOCUMENT, "contradictions[0].second")
    with pytest.raises(ProtocolInputError) as caught:
        revised_grades(documents, redundancy=[RedundancyGroup("a", ("b", "c"))])
    assert caught.value.field == "redundancy[0].members[1]"
    with pytest.raises(ProtocolInputError) as caught:
        revised_grades(documents, redundancy=[RedundancyGroup("a", ("b",))])
    assert caught.value.field == "redundancy[0].representative"
    with pytest.raises(ProtocolInputError) as caught:
        revised_grades([_doc("a"), _doc("b"), _doc("a")])
    assert (caught.value.code, caught.value.field) == (DUPLICATE_DOCUMENT, "documents[2].id")
    with pytest.raises(ProtocolInputError) as caught:
        revised_grades([_doc("a"), _doc("b", grade=5)])
    assert caught.value.field == "documents[1].grade"


# --- e(q), Usable_q, HighQ_q, Acc_qd --------------------------------------------------------


@pytest.mark.parametrize(
    ("grades", "expected"),
    [
        ([2, 2, 1], 2),  # min 1 >= 1, max 2
        ([1, 1, 0, 1, 1], 1),  # min 0; share 4/5 = 0.8 >= 0.8
        ([0, 0], 0),
        ([1, 1, 1], 1),  # min 1 but max 1; share 1
        ([2, 1, 1, 0], 0),  # share 3/4 < 0.8
        ([], None),
        ([0, 0, 0, 0, None], 0),  # 0 whatever U is
        ([2, 2, 2, 2, None], None),  # U = 0 gives 1 (share 0.8), U >= 1 gives 2
        ([2, 2, 0, 0, None], 0),  # share at most 3/5
        # U = 0: share 8/11 ≈ 0.727 → 0; U >= 1: 9/11 ≈ 0.818 → 1. Unknown.
        ([1, 1, 1, 1, 1, 1, 1, 1, 0, 0, None], None),
    ],
)
def test_query_grade(grades, expected):
    assert query_grade(grades) == expected


def test_usability_of_the_briefs_three_queries():
    # a′ = {2,2,1} → e = 2; {1,1,0,1,1} → e = 1 (4/5 = 0.8); {0,0} → e = 0.
    # Usable_q = 2/3 (e >= 1), HighQ_q = 1/3 (e = 2).
    result = usability([[2, 2, 1], [1, 1, 0, 1, 1], [0, 0]])
    assert result.grades == (2, 1, 0)
    assert (result.usable.numerator, result.usable.denominator) == (2, 3)
    assert (result.high_quality.numerator, result.high_quality.denominator) == (1, 3)
    assert result.usable.value == pytest.approx(2 / 3)
    assert result.high_quality.value == pytest.approx(1 / 3)


def test_usability_counts_queries_without_documents_and_unknown_e_apart():
    result = usability([[2, 2, 1], [], [2, 2, 2, 2, None], [0]])
    assert result.grades == (2, None, None, 0)
    assert (result.no_documents, result.unknown) == (1, 1)
    assert (result.usable.numerator, result.usable.denominator) == (1, 2)


def test_usability_without_graded_queries_is_undefined():
    result = usability([[], []])
    assert result.usable.value is None
    assert result.usable.reason == NO_GRADED_QUERIES
    assert result.no_documents == 2


def test_accuracy_qd_is_a_macro_average_over_queries():
    # Shares: {2,0,1} → 2/3; {0,0} → 0; {1,U} → 1/1 (U left out). Acc_qd = (2/3+0+1)/3 = 5/9.
    # [] has no documents and [U] only U: both apart.
    result = accuracy_qd([[2, 0, 1], [0, 0], [1, None], [], [None]])
    assert result.value == pytest.approx(5 / 9)
    assert result.numerator == pytest.approx(5 / 3)
    assert result.denominator == 3
    assert (result.no_documents, result.unknown_queries, result.unknown_documents) == (1, 1, 2)


def test_accuracy_qd_names_a_bad_grade_by_query_and_document():
    with pytest.raises(ProtocolInputError) as caught:
        accuracy_qd([[1, 2], [0, "2"]])
    assert caught.value.field == "queries[1][1]"
    assert accuracy_qd([]).reason == NO_GRADED_QUERIES


def test_from_documents_to_usability():
    query = [
        _doc("gov", grade=2),
        _doc("firm", grade=1, authority=2),
        _doc("blog", grade=2, authority=0, domain_alignment="full", producer_profile=0),
    ]
    revised = revised_grades(query)
    # The blog fails W_src (ordinary individual with a failing profile): a = 0.
    assert accuracy_qd([revised.grades]).value == pytest.approx(2 / 3)
    assert usability([revised.revised]).grades == (0,)  # 2/3 < 0.8
    assert usability([revised.revised[:2]]).grades == (2,)


# --- properties -----------------------------------------------------------------------------

counts = st.integers(min_value=0, max_value=5000)
grade = st.sampled_from([0, 1, 2, None])


@settings(max_examples=200, deadline=None)
@given(counts, counts, counts, st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_net_gain_interval_contains_the_point_and_stays_in_range(good, same, bad, confidence):
    result = net_gain(good, same, bad, confidence)
    if good + same + bad == 0:
        assert result.value is None
        return
    assert -100.0 <= result.low <= result.value <= result.high <= 100.0


@settings(max_examples=100, deadline=None)
@given(counts, counts, counts)
def test_net_gain_swapping_good_and_bad_mirrors_it(good, same, bad):
    forward, backward = net_gain(good, same, bad), net_gain(bad, same, good)
    if forward.value is None:
        return
    assert backward.value == -forward.value
    assert (backward.low, backward.high) == (-forward.high, -forward.low)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.sampled_from(["G", "S", "B"]), min_size=1, max_size=40),
    st.integers(min_value=0, max_value=2**32),
)
def test_net_gain_bootstrap_one_pair_per_query_is_the_pair_bootstrap(judgments, seed):
    # Distinct query ids, indexed in order of first appearance, are exactly the pairs:
    # the same seed draws the same resamples as clusters=None.
    labels = [f"query-{len(judgments) - i}" for i in range(len(judgments))]
    by_query = net_gain_bootstrap(judgments, labels, seed, n_boot=60)
    by_pair = net_gain_bootstrap(judgments, None, seed, n_boot=60)
    assert (by_query.low, by_query.high) == (by_pair.low, by_pair.high)
    assert by_query.low <= by_query.high


@settings(max_examples=300, deadline=None)
@given(st.lists(grade, max_size=6), st.sampled_from([1, 2]))
def test_answer_pass_is_decided_exactly_when_every_resolution_of_u_agrees(grades, threshold):
    unknown = [i for i, g in enumerate(grades) if g is None]
    outcomes = set()
    for values in itertools.product([0, 1, 2], repeat=len(unknown)):
        filled = list(grades)
        for i, v in zip(unknown, values, strict=True):
            filled[i] = v
        outcomes.add(bool(filled) and min(filled) >= threshold)
    result = answer_pass(grades, threshold)
    if not grades:
        assert result is None
    elif len(outcomes) == 1:
        assert result is outcomes.pop()
    else:
        assert result is None


def _e_by_definition(grades: list[int]) -> int:
    share = sum(1 for a in grades if a >= 1) / len(grades)
    if min(grades) >= 1 and max(grades) == 2:
        return 2
    return 1 if share >= 0.8 else 0


@settings(max_examples=300, deadline=None)
@given(st.lists(grade, min_size=1, max_size=7))
def test_query_grade_is_decided_exactly_when_every_resolution_of_u_agrees(grades):
    unknown = [i for i, g in enumerate(grades) if g is None]
    outcomes = set()
    for values in itertools.product([0, 1, 2], repeat=len(unknown)):
        filled = list(grades)
        for i, v in zip(unknown, values, strict=True):
            filled[i] = v
        outcomes.add(_e_by_definition(filled))
    expected = outcomes.pop() if len(outcomes) == 1 else None
    assert query_grade(grades) == expected


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0, 1, 2]), max_size=6), max_size=8))
def test_usability_rates_are_nested(queries):
    result = usability(queries)
    if result.usable.value is None:
        assert all(not q for q in queries)
        return
    assert result.high_quality.numerator <= result.usable.numerator <= result.usable.denominator
    assert result.usable.denominator + result.no_documents == len(queries)
