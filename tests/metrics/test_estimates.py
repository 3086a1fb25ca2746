"""metrics.estimates: pure tests (no database; Hájek weights and a judge against gold).

Hand-computed numbers first, then input errors, then properties of the estimators and of
the cluster bootstrap.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics import reliability as rel
from metrics.estimates import (
    LENGTH_MISMATCH,
    NO_INCLUSION_PROBABILITIES,
    NO_VALUES,
    EstimateInputError,
    cluster_bootstrap_totals,
    hajek,
    hajek_bootstrap,
    judge_scores,
    mean_interval,
    net_gain_estimates,
    pass_rate_estimates,
    proportion_interval,
    proportion_intervals,
    rate_estimates,
    ratio_interval,
    usability_estimates,
)

# --- Hájek ----------------------------------------------------------------------------------


def test_hajek_weights_by_inverse_inclusion_probability():
    # Weights 1/π = 4, 4, 2, 2. Σ y/π = 4·1 = 4; Σ 1/π = 12 → 4/12 = 1/3.
    # Unweighted: 1/4. The unit with y = 1 was sampled at a quarter, so it stands for more.
    result = hajek([1, 0, 0, 0], [0.25, 0.25, 0.5, 0.5])
    assert result.weighted == pytest.approx(1 / 3)
    assert result.unweighted == pytest.approx(0.25)
    assert (result.n, result.excluded) == (4, 0)
    assert result.weighted_low is None


def test_hajek_takes_arrays():
    result = hajek(np.array([1.0, 0.0, 0.0, 0.0]), np.array([0.25, 0.25, 0.5, 0.5]))
    assert result.weighted == pytest.approx(1 / 3)


def test_hajek_leaves_none_out_and_counts_it():
    result = hajek([True, False, None, False, False], [0.25, 0.25, 0.1, 0.5, 0.5])
    assert result.weighted == pytest.approx(1 / 3)
    assert result.unweighted == pytest.approx(0.25)
    assert (result.n, result.excluded) == (4, 1)


def test_hajek_of_nothing_is_undefined():
    result = hajek([None, None], [0.5, 0.5])
    assert (result.weighted, result.unweighted, result.reason) == (None, None, NO_VALUES)
    assert result.excluded == 2
    assert hajek([], []).reason == NO_VALUES


@pytest.mark.parametrize("probability", [0, 0.0, -0.1, 1.5, math.nan, math.inf, True, "0.5"])
def test_hajek_refuses_a_probability_outside_0_1_naming_its_position(probability):
    with pytest.raises(EstimateInputError) as caught:
        hajek([1, 0, 1], [0.5, 1.0, probability])
    assert caught.value.field == "inclusion_probabilities[2]"


def test_hajek_refuses_bad_values_and_lengths():
    with pytest.raises(EstimateInputError) as caught:
        hajek([1, math.nan], [0.5, 0.5])
    assert caught.value.field == "values[1]"
    with pytest.raises(EstimateInputError) as caught:
        hajek([1, 0], [0.5])
    assert (caught.value.code, caught.value.field) == (LENGTH_MISMATCH, "inclusion_probabilities")
    with pytest.raises(EstimateInputError) as caught:
        hajek_bootstrap([1, 0], [0.5, 0.5], ["a"], seed=0, n_boot=10)
    assert (caught.value.code, caught.value.field) == (LENGTH_MISMATCH, "clusters")
    with pytest.raises(EstimateInputError) as caught:
        hajek_bootstrap([1, 0], [0.5, 0.5, 0.5], None, seed=0, n_boot=10)
    assert caught.value.field == "probabilities"


def test_hajek_bootstrap_is_reproducible_and_brackets_both_estimates():
    values = [1, 0, 0, 0, 1, 1, 0, None, 0, 1, 0, 0]
    probabilities = [0.25, 0.25, 0.5, 0.5, 1.0, 0.2, 0.2, 0.4, 0.8, 0.5, 0.5, 1.0]
    answers = ["a1", "a1", "a2", "a2", "a3", "a3", "a4", "a4", "a5", "a5", "a6", "a6"]
    first = hajek_bootstrap(values, probabilities, answers, seed=21, n_boot=300)
    assert hajek_bootstrap(values, probabilities, answers, seed=21, n_boot=300) == first
    point = hajek(values, probabilities)
    assert (first.weighted, first.unweighted, first.n, first.excluded) == (
        point.weighted,
        point.unweighted,
        11,
        1,
    )
    assert first.clusters == 6
    assert 0.0 <= first.weighted_low <= first.weighted <= first.weighted_high <= 1.0
    assert 0.0 <= first.unweighted_low <= first.unweighted <= first.unweighted_high <= 1.0


def test_hajek_bootstrap_with_no_values_is_undefined():
    result = hajek_bootstrap([None], [0.5], ["q"], seed=0, n_boot=10)
    assert (result.weighted, result.weighted_low, result.reason) == (None, None, NO_VALUES)


# --- the cluster bootstrap ------------------------------------------------------------------


def test_cluster_bootstrap_draws_whole_clusters():
    # Cluster sizes 1, 2 and 3: every resample draws 3 clusters, so its unit count is a
    # sum of three sizes, and the y column (y = 1 only in the size-3 cluster) is 3 × the
    # copies of that cluster.
    columns = [[0, 1], [0, 1], [0, 1], [1, 1], [1, 1], [1, 1]]
    clusters = ["a", "b", "b", "c", "c", "c"]
    totals = cluster_bootstrap_totals(columns, clusters, n_boot=200, seed=4)
    assert totals.shape == (200, 2)
    possible = {a + b + c for a in (1, 2, 3) for b in (1, 2, 3) for c in (1, 2, 3)}
    assert set(totals[:, 1].astype(int)) <= possible
    assert set(totals[:, 0].astype(int)) <= {0, 3, 6, 9}
    again = cluster_bootstrap_totals(columns, clusters, n_boot=200, seed=4)
    assert np.array_equal(totals, again)


def test_cluster_bootstrap_of_nothing_is_empty():
    assert cluster_bootstrap_totals(np.zeros((0, 3)), [], n_boot=10, seed=0).shape == (0, 3)
    assert cluster_bootstrap_totals([[1.0]], None, n_boot=0, seed=0).shape == (0, 1)


# --- a judge against gold -------------------------------------------------------------------

# Twelve units in four domains; gold and judge values "pass", "fail" or None (U).
#   (gold, judge)    units
#   (pass, pass)     4
#   (pass, fail)     1
#   (pass, U)        1
#   (fail, fail)     3
#   (fail, pass)     1
#   (U, U)           1
#   (U, fail)        1
# Categories sort as fail, pass, then U. Confusion (rows gold, columns judge):
#          fail pass  U | gold
#   fail      3    1  0 |  4
#   pass      1    4  1 |  6
#   U         1    0  1 |  2
#   judge     5    5  2 | 12
# Accuracy = (3 + 4 + 1) / 12 = 2/3.
# p_o = 96/144, p_e = (4·5 + 6·5 + 2·2)/144 = 54/144; kappa = (96 - 54)/(144 - 54) = 42/90
# = 7/15 ≈ 0.4667.
# Precision: fail 3/5, pass 4/5, U 1/2. Recall: fail 3/4, pass 4/6, U 1/2.
# Gate with positive "pass": α = gold fail accepted / gold fail = 1/4;
# β = gold pass not accepted (fail or U) / gold pass = 2/6 = 1/3.
GOLD = ["pass"] * 6 + ["fail"] * 4 + [None] * 2
JUDGE = ["pass"] * 4 + ["fail", None] + ["fail"] * 3 + ["pass"] + [None, "fail"]
DOMAINS = ["health", "law", "travel", "finance"] * 3


def test_judge_scores_by_hand():
    scores = judge_scores(JUDGE, GOLD, DOMAINS, seed=2024, n_boot=300, positive="pass")
    assert scores.categories == ("fail", "pass", None)
    assert scores.confusion == ((3, 1, 0), (1, 4, 1), (1, 0, 1))
    assert scores.n == 12
    assert (scores.accuracy.numerator, scores.accuracy.denominator) == (8, 12)
    assert scores.accuracy.value == pytest.approx(2 / 3)
    assert scores.kappa.value == pytest.approx(7 / 15)
    by_class = {c.category: c for c in scores.classes}
    assert by_class["fail"].precision.value == pytest.approx(3 / 5)
    assert by_class["pass"].precision.value == pytest.approx(4 / 5)
    assert by_class[None].precision.value == pytest.approx(1 / 2)
    assert by_class["fail"].recall.value == pytest.approx(3 / 4)
    assert by_class["pass"].recall.value == pytest.approx(4 / 6)
    assert by_class[None].recall.value == pytest.approx(1 / 2)
    assert (by_class["pass"].gold, by_class["pass"].predicted) == (6, 5)
    alpha, beta = scores.accepted_error, scores.false_block
    assert (alpha.numerator, alpha.denominator, alpha.value) == (1, 4, 0.25)
    assert (beta.numerator, beta.denominator) == (2, 6)
    assert beta.value == pytest.approx(1 / 3)
    assert scores.clusters == 4


def test_judge_scores_intervals_are_reproducible_for_a_seed():
    first = judge_scores(JUDGE, GOLD, DOMAINS, seed=2024, n_boot=300, positive="pass")
    again = judge_scores(JUDGE, GOLD, DOMAINS, seed=2024, n_boot=300, positive="pass")
    assert again == first
    for estimate in (first.accuracy, first.kappa, first.accepted_error, first.false_block):
        assert estimate.low is not None
        assert estimate.low <= estimate.high
    assert 0.0 <= first.accuracy.low <= first.accuracy.high <= 1.0


def test_judge_scores_kappa_agrees_with_reliability_with_u_as_a_category():
    scores = judge_scores(JUDGE, GOLD, DOMAINS, seed=0, n_boot=0)
    as_u = [["U" if v is None else v for v in row] for row in (GOLD, JUDGE)]
    assert scores.kappa.value == pytest.approx(rel.cohen_kappa(*as_u))
    assert (scores.kappa.low, scores.kappa.high) == (None, None)  # n_boot = 0
    assert scores.accepted_error is None


def test_a_perfect_judge():
    gold = ["pass", "fail", "pass", None]
    scores = judge_scores(gold, gold, None, seed=1, n_boot=50, positive="pass")
    assert scores.accuracy.value == 1.0
    assert scores.kappa.value == pytest.approx(1.0)
    assert (scores.accepted_error.value, scores.false_block.value) == (0.0, 0.0)


def test_a_gate_whose_positive_never_occurs_keeps_its_row_and_column():
    scores = judge_scores(
        ["fail", "fail"], ["fail", None], None, seed=1, n_boot=20, positive="pass"
    )
    assert scores.categories == ("fail", "pass", None)
    assert scores.false_block.value is None  # no gold pass
    assert scores.accepted_error.value == 0.0


def test_judge_scores_refuses_bad_input():
    with pytest.raises(EstimateInputError) as caught:
        judge_scores(["pass"], ["pass", "fail"], None, seed=0)
    assert (caught.value.code, caught.value.field) == (LENGTH_MISMATCH, "predicted")
    with pytest.raises(EstimateInputError) as caught:
        judge_scores(["pass", math.nan], ["pass", "fail"], None, seed=0)
    assert caught.value.field == "predicted[1]"
    with pytest.raises(EstimateInputError) as caught:
        judge_scores(["pass"], [["pass"]], None, seed=0)
    assert caught.value.field == "gold[0]"
    with pytest.raises(EstimateInputError) as caught:
        judge_scores(["pass"], ["pass"], ["a", "b"], seed=0)
    assert caught.value.field == "clusters"
    with pytest.raises(EstimateInputError) as caught:
        judge_scores(["pass"], ["pass"], None, seed=0, confidence=95)
    assert caught.value.field == "confidence"


# --- properties -----------------------------------------------------------------------------

outcome = st.one_of(st.none(), st.integers(min_value=0, max_value=1))
probability = st.floats(min_value=0.01, max_value=1.0)


@settings(max_examples=200, deadline=None)
@given(st.lists(outcome, min_size=1, max_size=30), probability)
def test_hajek_with_equal_probabilities_is_the_plain_mean(values, p):
    result = hajek(values, [p] * len(values))
    present = [v for v in values if v is not None]
    if not present:
        assert result.weighted is None
        return
    assert result.unweighted == pytest.approx(sum(present) / len(present))
    assert result.weighted == pytest.approx(result.unweighted)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-1e3, 1e3), probability), min_size=1, max_size=30),
    st.floats(min_value=0.05, max_value=1.0),
)
def test_hajek_is_unchanged_by_scaling_every_probability(pairs, scale):
    values = [v for v, _ in pairs]
    probabilities = [p for _, p in pairs]
    original = hajek(values, probabilities).weighted
    scaled = hajek(values, [p * scale for p in probabilities]).weighted
    assert scaled == pytest.approx(original, rel=1e-9, abs=1e-9)
    assert min(values) - 1e-9 <= original <= max(values) + 1e-9


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(outcome, probability), min_size=1, max_size=25),
    st.integers(min_value=0, max_value=2**32),
)
def test_one_unit_per_cluster_is_the_unit_bootstrap(pairs, seed):
    # Distinct labels in a list are indexed in order of first appearance, i.e. as the
    # units themselves: the same seed gives the same resamples as clusters=None.
    values = [v for v, _ in pairs]
    probabilities = [p for _, p in pairs]
    labels = [f"answer-{i * 7919 % 10007}" for i in range(len(pairs))]
    clustered = hajek_bootstrap(values, probabilities, labels, seed, n_boot=60)
    units = hajek_bootstrap(values, probabilities, None, seed, n_boot=60)
    assert clustered == units


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(outcome, st.integers(0, 5)), min_size=1, max_size=25),
    st.integers(min_value=0, max_value=2**32),
)
def test_with_equal_probabilities_the_weighted_interval_is_the_unweighted_one(pairs, seed):
    values = [v for v, _ in pairs]
    clusters = [c for _, c in pairs]
    result = hajek_bootstrap(values, [0.5] * len(values), clusters, seed, n_boot=60)
    if result.weighted is None:
        return
    assert result.weighted_low == pytest.approx(result.unweighted_low)
    assert result.weighted_high == pytest.approx(result.unweighted_high)


labels = st.sampled_from(["pass", "fail", "review", None])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(labels, labels), min_size=1, max_size=40))
def test_judge_scores_point_values_match_their_definitions(pairs):
    gold = [g for g, _ in pairs]
    predicted = [p for _, p in pairs]
    scores = judge_scores(predicted, gold, None, seed=0, n_boot=0, positive="pass")
    agree = sum(1 for g, p in pairs if g == p)
    assert scores.accuracy.value == pytest.approx(agree / len(pairs))
    assert sum(map(sum, scores.confusion)) == len(pairs)
    as_u = [["U" if v is None else v for v in row] for row in (gold, predicted)]
    expected = rel.cohen_kappa(*as_u)
    if math.isnan(expected):
        assert scores.kappa.value is None
    else:
        assert scores.kappa.value == pytest.approx(expected)
    gold_fail = [p for g, p in pairs if g is not None and g != "pass"]
    if gold_fail:
        accepted = sum(1 for p in gold_fail if p == "pass") / len(gold_fail)
        assert scores.accepted_error.value == pytest.approx(accepted)
    gold_pass = [p for g, p in pairs if g == "pass"]
    if gold_pass:
        blocked = sum(1 for p in gold_pass if p != "pass") / len(gold_pass)
        assert scores.false_block.value == pytest.approx(blocked)


# --- a report's rate ------------------------------------------------------------------------


def test_a_rate_with_inclusion_probabilities_is_a_prevalence_weighted_beside_unweighted():
    result = rate_estimates([1, 0, 0, 0], [0.25, 0.25, 0.5, 0.5], ["a", "a", "b", "c"], seed=3)
    assert result["prevalence"] is True
    assert result["weighted"]["value"] == pytest.approx(1 / 3)
    assert result["unweighted"]["value"] == pytest.approx(0.25)
    assert (result["n"], result["numerator"], result["clusters"]) == (4, 1, 3)
    low, high = result["weighted"]["low"], result["weighted"]["high"]
    assert 0.0 <= low <= 1 / 3 <= high <= 1.0


def test_a_rate_without_every_inclusion_probability_is_not_a_prevalence():
    result = rate_estimates([1, 0, None, 1], [0.5, None, 0.5, 0.5], None, seed=3, n_boot=200)
    assert result["prevalence"] is False
    assert result["weighted"] is None
    assert result["weighted_reason"] == NO_INCLUSION_PROBABILITIES
    assert result["missing_probabilities"] == 1
    assert (result["n"], result["excluded"], result["numerator"]) == (3, 1, 2)
    assert result["unweighted"]["value"] == pytest.approx(2 / 3)
    assert result["unweighted"]["low"] <= result["unweighted"]["high"]


def test_a_rate_of_nothing_is_undefined():
    result = rate_estimates([], [], None, seed=0, n_boot=10)
    assert result["prevalence"] is False
    assert result["unweighted"]["value"] is None


def test_a_hand_made_two_by_two_with_u_and_its_clustered_interval():
    # Gate values pass/fail plus U. Domain "a": three units where the judge agrees with
    # gold (pass/pass, fail/fail, U/U); domain "b": three where it does not (pass/fail,
    # fail/pass, fail/U).
    # Confusion (rows gold, columns judge):
    #          fail pass  U
    #   fail     1    1   1
    #   pass     1    1   0
    #   U        0    0   1
    # Accuracy 3/6; gold totals 3, 2, 1 and judge totals 2, 2, 2 give p_e = 12/36 = 1/3 and
    # kappa = (1/2 - 1/3)/(2/3) = 1/4. With positive "pass": alpha = gold fail passed = 1/3,
    # beta = gold pass blocked = 1/2.
    gold = ["pass", "fail", None, "pass", "fail", "fail"]
    judge = ["pass", "fail", None, "fail", "pass", None]
    domains = ["a", "a", "a", "b", "b", "b"]
    scores = judge_scores(judge, gold, domains, seed=7, n_boot=1000, positive="pass")
    assert scores.confusion == ((1, 1, 1), (1, 1, 0), (0, 0, 1))
    assert scores.kappa.value == pytest.approx(1 / 4)
    assert (scores.accepted_error.numerator, scores.accepted_error.denominator) == (1, 3)
    assert (scores.false_block.numerator, scores.false_block.denominator) == (1, 2)
    # Two domains drawn with replacement: (a, a) gives accuracy 1, (b, b) 0 and a mixed draw
    # 1/2, each pair with probability 1/4, 1/4, 1/2. With 1000 draws both ends occur far more
    # than 2.5% of the time, so the 95% interval is [0, 1]: domains move together.
    assert (scores.accuracy.low, scores.accuracy.high) == (0.0, 1.0)
    # The same units drawn one by one (no clustering) give a narrower interval.
    units = judge_scores(judge, gold, None, seed=7, n_boot=1000, positive="pass")
    assert units.accuracy.high - units.accuracy.low < 1.0


def test_proportion_interval_is_the_unit_bootstrap_of_a_share():
    low, high = proportion_interval(30, 100, n_boot=2000, seed=5)
    # The normal approximation gives 0.3 ± 1.96·sqrt(0.3·0.7/100) = [0.210, 0.390].
    assert low == pytest.approx(0.21, abs=0.02)
    assert high == pytest.approx(0.39, abs=0.02)
    assert proportion_interval(0, 0, n_boot=100, seed=5) == (None, None)
    assert proportion_interval(4, 4, n_boot=100, seed=5) == (1.0, 1.0)
    with pytest.raises(EstimateInputError):
        proportion_interval(5, 4, n_boot=100, seed=5)


def test_pooled_ratio_interval_draws_answers_with_all_their_claims():
    # Two answers: 9 of 9 claims supported, 0 of 1. Pooled 9/10; a resample draws the
    # answers whole, so the pooled rate is 1 (both the first), 0.9 (one each) or 0 (both
    # the second): never a value in between.
    low, high = ratio_interval([9, 0], [9, 1], n_boot=1000, seed=2)
    assert (low, high) == (0.0, 1.0)
    low, high = mean_interval([0.5, 0.5, 0.5], n_boot=100, seed=2)
    assert (low, high) == (0.5, 0.5)


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=2, max_size=40), st.integers(0, 2**16))
def test_the_unit_bootstrap_over_distinct_values_matches_copying_units(values, seed):
    # Drawing distinct values by multinomial counts and drawing units one by one are the
    # same distribution: with many resamples their intervals agree closely.
    fast = mean_interval(values, n_boot=4000, seed=seed)
    slow = mean_interval(values, list(range(len(values))), n_boot=4000, seed=seed)
    spread = max(values) - min(values)
    assert fast[0] == pytest.approx(slow[0], abs=0.15 * spread + 1e-9)
    assert fast[1] == pytest.approx(slow[1], abs=0.15 * spread + 1e-9)


# --- seed 002's protocol rates, weighted ------------------------------------------------------


def test_pass_rate_weighted_beside_unweighted_over_queries():
    result = pass_rate_estimates(
        [True, False, False, False, None],
        [0.25, 0.25, 0.5, 0.5, 0.5],
        ["q1", "q1", "q2", "q3", "q3"],
        seed=1,
    )
    assert result["weighted"]["value"] == pytest.approx(1 / 3)
    assert result["unweighted"]["value"] == pytest.approx(0.25)
    assert (result["n"], result["excluded"], result["clusters"]) == (4, 1, 3)


def test_usable_and_highq_per_query_weighted():
    # e = 2, 1, 0, None with π = 0.25, 0.5, 0.5, 0.5: weights 4, 2, 2 (the None is counted).
    result = usability_estimates([2, 1, 0, None], [0.25, 0.5, 0.5, 0.5], seed=1, n_boot=200)
    usable, high = result["usable_q"], result["highq_q"]
    assert usable["weighted"]["value"] == pytest.approx(6 / 8)
    assert usable["unweighted"]["value"] == pytest.approx(2 / 3)
    assert high["weighted"]["value"] == pytest.approx(4 / 8)
    assert high["unweighted"]["value"] == pytest.approx(1 / 3)
    assert usable["excluded"] == 1
    with pytest.raises(EstimateInputError) as caught:
        usability_estimates([3], [0.5], seed=1)
    assert caught.value.field == "query_grades[0]"


def test_net_gain_reproduces_seed_002_and_weights_it():
    # Seed 002: G 189, S 711, B 100 -> +8.9%.
    outcomes = ["G"] * 189 + ["S"] * 711 + ["B"] * 100
    queries = [f"q{i}" for i in range(1000)]
    result = net_gain_estimates(outcomes, [None] * 1000, queries, seed=3, n_boot=500)
    assert result["unweighted"]["value"] == pytest.approx(8.9)
    assert result["weighted"] is None
    assert result["weighted_reason"] == NO_INCLUSION_PROBABILITIES
    low, high = result["unweighted"]["low"], result["unweighted"]["high"]
    assert 4.5 < low < 8.9 < high < 13.5  # the seed's normal interval is [5.61, 12.19]
    # Weighted: one G at π = 0.25 (w 4), one B at π = 0.5 (w 2), one S at π = 0.5 (w 2):
    # (4 - 2) / 8 = +25%, unweighted (1 - 1)/3 = 0%.
    weighted = net_gain_estimates(["G", "B", "S"], [0.25, 0.5, 0.5], ["a", "b", "c"], seed=3)
    assert weighted["weighted"]["value"] == pytest.approx(25.0)
    assert weighted["unweighted"]["value"] == pytest.approx(0.0)


def test_many_proportion_intervals_at_once():
    bounds = proportion_intervals([(30, 100), (0, 0), (4, 4), (0, 7)], n_boot=2000, seed=5)
    assert bounds[0][0] == pytest.approx(0.21, abs=0.02)
    assert bounds[0][1] == pytest.approx(0.39, abs=0.02)
    assert bounds[1:] == [(None, None), (1.0, 1.0), (0.0, 0.0)]
    assert proportion_intervals([(30, 100)], n_boot=500, seed=5) == proportion_intervals(
        [(30, 100)], n_boot=500, seed=5
    )
    with pytest.raises(EstimateInputError) as caught:
        proportion_intervals([(1, 2), (3, 2)], n_boot=10, seed=0)
    assert caught.value.field == "counts[1]"
