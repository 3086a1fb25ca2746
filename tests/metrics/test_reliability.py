"""metrics.reliability: pure tests (no database; run with ``-p no:django``)."""

from __future__ import annotations

import functools
import json
import math
from fractions import Fraction

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics import reliability as rel

N = None

# Krippendorff, "Computing Krippendorff's Alpha-Reliability" (2011), section C: four
# observers, twelve units, values 1-5, missing data. Unit 12 has a single value and is
# not pairable. Published: nominal 0.743, ordinal 0.815, interval 0.849.
WORKED = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
]

# Cohen's classic 2x2 example: 50 units; both "yes" 20, A yes/B no 5, A no/B yes 10,
# both "no" 15.
COHEN_A = ["yes"] * 25 + ["no"] * 25
COHEN_B = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15


def random_data(rng, coders, units, k, missing=0.2, values=None):
    """Float array (NaN missing) with values drawn from ``values`` (default 0..k-1)."""
    values = np.arange(k, dtype=float) if values is None else np.asarray(values, dtype=float)
    data = rng.choice(values, size=(coders, units))
    data[rng.random(data.shape) < missing] = np.nan
    return data


def naive_alpha(data, level):
    """Alpha straight from the definition, unit by unit, in exact fractions."""
    units = [[v for v in column if v is not None] for column in zip(*data, strict=True)]
    units = [u for u in units if len(u) >= 2]
    cats = sorted({v for u in units for v in u})
    o = {(c, k): Fraction(0) for c in cats for k in cats}
    for u in units:
        for i, c in enumerate(u):
            for j, k in enumerate(u):
                if i != j:
                    o[c, k] += Fraction(1, len(u) - 1)
    n_c = {c: sum(o[c, k] for k in cats) for c in cats}
    n = sum(n_c.values())

    def delta(c, k):
        if level == "nominal":
            return Fraction(int(c != k))
        if level == "interval":
            return Fraction(c - k) ** 2
        lo, hi = sorted((cats.index(c), cats.index(k)))
        return (sum(n_c[g] for g in cats[lo : hi + 1]) - (n_c[c] + n_c[k]) / 2) ** 2

    observed = sum(o[c, k] * delta(c, k) for c in cats for k in cats)
    expected = sum(n_c[c] * n_c[k] * delta(c, k) for c in cats for k in cats)
    if expected == 0:  # no pairable values, or all in one category
        return math.nan
    return float(1 - (n - 1) * observed / expected)


# ----------------------------------------------------------------------------- alpha


@pytest.mark.parametrize(
    ("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)]
)
def test_worked_example_reproduces_the_published_values(level, published):
    value = rel.krippendorff_alpha(WORKED, level)

    assert value == pytest.approx(published, abs=5e-4)
    assert value == pytest.approx(naive_alpha(WORKED, level), abs=1e-12)


def test_worked_example_nominal_by_hand():
    # n = 40 pairable values with marginals n_c = (9, 13, 10, 5, 3), sum n_c^2 = 384.
    # Disagreeing pairs, each weighted 1/(m_u - 1): unit 2 (2,2,3,2) (16 - 10)/3 = 2,
    # unit 6 (1,2,3,4) (16 - 4)/3 = 4, unit 8 (1,1,2,1) 2; total 8.
    # alpha = 1 - (n - 1) * 8 / (n^2 - 384) = 1 - 312/1216.
    assert rel.krippendorff_alpha(WORKED) == pytest.approx(1 - 312 / 1216, abs=1e-12)


@pytest.mark.parametrize("level", rel.LEVELS)
@pytest.mark.parametrize(
    ("seed", "coders", "k"), [(0, 2, 2), (1, 3, 4), (2, 5, 3), (3, 4, 7), (4, 8, 2)]
)
def test_alpha_agrees_with_the_krippendorff_package(level, seed, coders, k):
    data = random_data(np.random.default_rng(seed), coders, 150, k)

    ours = rel.krippendorff_alpha(data, level)
    theirs = krippendorff.alpha(reliability_data=data, level_of_measurement=level)

    assert ours == pytest.approx(theirs, abs=1e-9)


@pytest.mark.parametrize("level", rel.LEVELS)
@pytest.mark.parametrize(
    "values", [[1, 4, 9, 10], [0.5, 2.25, 7.0], [-3, 100, 250_000_000], [2.5, 1e9 + 0.5, -7.25]]
)
def test_alpha_agrees_with_the_package_on_sparse_and_fractional_values(level, values):
    # Gaps in an integer range, fractions and a huge range take the other encoding paths.
    data = random_data(np.random.default_rng(11), 3, 120, 0, values=values)

    ours = rel.krippendorff_alpha(data, level)
    theirs = krippendorff.alpha(reliability_data=data, level_of_measurement=level)

    assert ours == pytest.approx(theirs, abs=1e-9)


@pytest.mark.parametrize("level", rel.LEVELS)
def test_list_rows_with_none_equal_the_nan_array(level):
    data = random_data(np.random.default_rng(5), 4, 60, 5)
    rows = [[None if np.isnan(v) else int(v) for v in row] for row in data]

    assert rel.krippendorff_alpha(rows, level) == pytest.approx(
        rel.krippendorff_alpha(data, level), abs=1e-12
    )


def test_ordinal_uses_an_explicit_order():
    grades = [["low", "mid", "high", "mid", "low"], ["mid", "mid", "high", "high", "low"]]
    ranked = [[{"low": 0, "mid": 1, "high": 2}[v] for v in row] for row in grades]

    value = rel.krippendorff_alpha(grades, "ordinal", order=["low", "mid", "high"])

    assert value == pytest.approx(rel.krippendorff_alpha(ranked, "ordinal"), abs=1e-12)
    # Alphabetical order (high < low < mid) is a different scale.
    assert rel.krippendorff_alpha(grades, "ordinal") != pytest.approx(value)


def test_ordinal_order_may_list_unobserved_categories():
    data = [[1, 2, 3, 2], [1, 3, 3, 2]]

    assert rel.krippendorff_alpha(data, "ordinal", order=[0, 1, 2, 3, 4]) == pytest.approx(
        rel.krippendorff_alpha(data, "ordinal"), abs=1e-12
    )


def test_unknown_level_and_non_numeric_interval_are_refused():
    with pytest.raises(ValueError, match="level"):
        rel.krippendorff_alpha(WORKED, "ratio")
    with pytest.raises(ValueError, match="numeric"):
        rel.krippendorff_alpha([["a", "b"], ["a", "a"]], "interval")
    with pytest.raises(ValueError, match="finite"):
        rel.krippendorff_alpha(np.array([[1.0, np.inf], [1.0, 2.0]]), "interval")


# ----------------------------------------------------------------------------- patterns


@pytest.mark.parametrize(
    ("coders", "k"),
    [(2, 4), (10, 5), (30, 3)],  # bincount of packed keys; 1-D sort of keys; axis=1 unique
)
def test_unique_columns_equals_numpy_unique_over_columns(coders, k):
    codes, _ = rel.encode(random_data(np.random.default_rng(coders), coders, 500, k))

    patterns, counts, inverse = rel.unique_columns(codes, return_inverse=True)
    expected, expected_inverse, expected_counts = np.unique(
        codes, axis=1, return_inverse=True, return_counts=True
    )

    np.testing.assert_array_equal(patterns, expected)
    np.testing.assert_array_equal(counts, expected_counts)
    np.testing.assert_array_equal(inverse, expected_inverse.ravel())
    np.testing.assert_array_equal(patterns[:, inverse], codes)


@pytest.mark.parametrize("level", rel.LEVELS)
@pytest.mark.parametrize("seed", range(4))
def test_pattern_collapse_equals_the_unit_by_unit_definition(level, seed):
    rng = np.random.default_rng(100 + seed)
    data = random_data(rng, int(rng.integers(2, 6)), 40, int(rng.integers(2, 6)), missing=0.3)
    rows = [[None if np.isnan(v) else int(v) for v in row] for row in data]

    assert rel.krippendorff_alpha(rows, level) == pytest.approx(naive_alpha(rows, level), abs=1e-12)


def naive_fleiss_ac1_raw(data):
    """Fleiss' kappa (generalised), Gwet's AC1 and raw agreement, unit by unit."""
    units = [[v for v in column if v is not None] for column in zip(*data, strict=True)]
    cats = sorted({v for column in data for v in column if v is not None})
    units = [u for u in units if len(u) >= 2]
    if not units:
        return math.nan, math.nan, math.nan
    p_a = sum(
        sum(u.count(c) * (u.count(c) - 1) for c in cats) / (len(u) * (len(u) - 1)) for u in units
    ) / len(units)
    shares = [sum(u.count(c) / len(u) for u in units) / len(units) for c in cats]
    fleiss_e = sum(p * p for p in shares)
    fleiss = (p_a - fleiss_e) / (1 - fleiss_e) if sum(p > 0 for p in shares) > 1 else math.nan
    ac1_e = sum(p * (1 - p) for p in shares) / (len(cats) - 1) if len(cats) > 1 else math.nan
    ac1 = (p_a - ac1_e) / (1 - ac1_e)
    agreeing = sum(sum(u.count(c) * (u.count(c) - 1) for c in cats) / (len(u) - 1) for u in units)
    raw = agreeing / sum(len(u) for u in units)
    return fleiss, ac1, raw


def same(a, b):
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-9)


matrices = st.integers(2, 5).flatmap(
    lambda coders: st.integers(1, 12).flatmap(
        lambda units: st.lists(
            st.lists(st.one_of(st.none(), st.integers(0, 3)), min_size=units, max_size=units),
            min_size=coders,
            max_size=coders,
        )
    )
)


@settings(max_examples=80, deadline=None, derandomize=True)
@given(data=matrices)
def test_property_coefficients_equal_their_unit_by_unit_definitions(data):
    fleiss, ac1, raw = naive_fleiss_ac1_raw(data)

    for level in rel.LEVELS:
        assert same(rel.krippendorff_alpha(data, level), naive_alpha(data, level))
    assert same(rel.fleiss_kappa(data), fleiss)
    assert same(rel.gwet_ac1(data), ac1)
    assert same(rel.raw_agreement(data), raw)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(data=matrices, seed=st.integers(0, 2**16))
def test_property_coefficients_ignore_the_order_of_units_and_coders(data, seed):
    rng = np.random.default_rng(seed)
    shuffled = [data[i] for i in rng.permutation(len(data))]
    columns = rng.permutation(len(data[0]))
    shuffled = [[row[j] for j in columns] for row in shuffled]

    for function in (rel.fleiss_kappa, rel.gwet_ac1, rel.raw_agreement):
        assert same(function(shuffled), function(data))
    for level in rel.LEVELS:
        assert same(rel.krippendorff_alpha(shuffled, level), rel.krippendorff_alpha(data, level))


# ----------------------------------------------------------------------------- encode


def test_encode_codes_missing_as_minus_one_and_sorts_categories():
    codes, categories = rel.encode([["b", None, "a"], ["a", float("nan"), "c"]])

    assert categories == ["a", "b", "c"]
    np.testing.assert_array_equal(codes, [[1, -1, 0], [0, -1, 2]])


def test_encode_keeps_first_appearance_for_unsortable_categories():
    codes, categories = rel.encode([[1, "a", None], [float("nan"), 2, "a"]])

    assert categories == [1, "a", 2]
    np.testing.assert_array_equal(codes, [[0, 1, -1], [-1, 2, 1]])


def test_encode_numeric_array_gives_python_numbers():
    codes, categories = rel.encode(np.array([[2.0, np.nan, 5.0], [5.0, 2.0, np.nan]]))

    assert categories == [2.0, 5.0]
    assert all(type(c) is float for c in categories)
    np.testing.assert_array_equal(codes, [[0, -1, 1], [1, 0, -1]])


def test_encode_refuses_ragged_rows_and_values_outside_order():
    with pytest.raises(ValueError, match="same units"):
        rel.encode([[1, 2], [1]])
    with pytest.raises(ValueError, match="not in order"):
        rel.encode([[1, 2], [1, 3]], order=[1, 2])


# ----------------------------------------------------------------------------- pairwise


def test_cohen_kappa_textbook_example():
    # p_o = 35/50 = 0.7; p_yes: A 25/50, B 30/50; p_e = 0.5*0.6 + 0.5*0.4 = 0.5;
    # kappa = (0.7 - 0.5) / (1 - 0.5) = 0.4.
    assert rel.cohen_kappa(COHEN_A, COHEN_B) == pytest.approx(0.4, abs=1e-12)


def test_cohen_kappa_uses_only_units_both_coded():
    a = [*COHEN_A, "yes", None, None]
    b = [*COHEN_B, None, "no", None]

    assert rel.cohen_kappa(a, b) == pytest.approx(0.4, abs=1e-12)


def test_cohen_kappa_undefined_cases_are_nan():
    assert math.isnan(rel.cohen_kappa(["a", "a"], ["a", "a"]))  # p_e = 1
    assert math.isnan(rel.cohen_kappa(["a", None], ["b", "a"]))  # one shared unit


def test_confusion_matrix_rows_first_coder_columns_second():
    matrix, categories = rel.confusion_matrix(COHEN_A, COHEN_B)

    assert categories == ["no", "yes"]
    np.testing.assert_array_equal(matrix, [[15, 10], [5, 20]])


def test_confusion_matrix_with_given_categories_skips_missing():
    matrix, categories = rel.confusion_matrix(
        ["x", None, "y", "x"], ["x", "y", None, "y"], categories=["y", "x", "z"]
    )

    assert categories == ["y", "x", "z"]
    np.testing.assert_array_equal(matrix, [[0, 0, 0], [1, 1, 0], [0, 0, 0]])


def test_pairwise_cohen_matches_cohen_per_pair_with_nan_for_few_shared_units():
    data = [
        [*COHEN_A, N, N],
        [*COHEN_B, N, N],
        [N] * 49 + ["yes", "yes", "no"],  # shares one unit with coders 0 and 1
    ]

    matrix = rel.pairwise_cohen(data)

    np.testing.assert_array_equal(np.diag(matrix), [1.0, 1.0, 1.0])
    assert matrix[0, 1] == matrix[1, 0] == pytest.approx(0.4, abs=1e-12)
    assert np.isnan(matrix[0, 2])
    assert np.isnan(matrix[2, 1])


def test_pairwise_cohen_on_the_worked_example_equals_cohen_on_rows():
    matrix = rel.pairwise_cohen(WORKED)

    for i in range(4):
        for j in range(4):
            if i != j:
                assert matrix[i, j] == pytest.approx(
                    rel.cohen_kappa(WORKED[i], WORKED[j]), abs=1e-12
                )


# ----------------------------------------------------------------------------- Fleiss, AC1


# Fleiss' kappa example (14 raters, 10 subjects, 5 categories): counts per subject.
FLEISS_TABLE = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def rows_from_counts(table):
    """Raters x subjects: each subject's counts dealt to raters in category order."""
    columns = [[c for c, count in enumerate(row) for _ in range(count)] for row in table]
    return [list(r) for r in zip(*columns, strict=True)]


def test_fleiss_kappa_textbook_example():
    # P_bar = 3.780 / 10 = 0.378 (P_1 = 1, P_2 = (4+30+12+2)/182 = 0.253, ...);
    # p_j = (20, 28, 39, 21, 32) / 140; P_e = 0.2134; kappa = 0.2099.
    p_bar = sum(sum(x * (x - 1) for x in row) / (14 * 13) for row in FLEISS_TABLE) / 10
    p_e = sum((sum(col) / 140) ** 2 for col in zip(*FLEISS_TABLE, strict=True))

    value = rel.fleiss_kappa(rows_from_counts(FLEISS_TABLE))

    assert value == pytest.approx((p_bar - p_e) / (1 - p_e), abs=1e-12)
    assert value == pytest.approx(0.210, abs=5e-4)


def test_fleiss_kappa_with_varying_raters_per_unit():
    # Units [a a], [a b b], [b b], [a] (the last has one value: left out).
    # P_i = 1, (0 + 2)/(3*2) = 1/3, 1 -> P_a = 7/9. Shares p_a = mean(1, 1/3, 0) = 4/9,
    # p_b = 5/9 -> P_e = 41/81. kappa = (63/81 - 41/81) / (40/81) = 22/40 = 0.55.
    data = [["a", "a", "b", "a"], ["a", "b", "b", N], [N, "b", N, N]]

    assert rel.fleiss_kappa(data) == pytest.approx(0.55, abs=1e-12)


def test_fleiss_kappa_for_two_coders_is_scotts_pi():
    # Shares: yes (25 + 30)/100 = 0.55, no 0.45; P_e = 0.505; pi = (0.7 - 0.505)/0.495.
    assert rel.fleiss_kappa([COHEN_A, COHEN_B]) == pytest.approx(0.195 / 0.495, abs=1e-12)


def test_gwet_ac1_two_coders():
    # P_a = 0.7; P_e = (0.55*0.45 + 0.45*0.55) / (2 - 1) = 0.495; AC1 = 0.205/0.505.
    assert rel.gwet_ac1([COHEN_A, COHEN_B]) == pytest.approx(0.205 / 0.505, abs=1e-12)


def test_gwet_ac1_counts_codebook_categories_when_told():
    # K = 3: P_e = 0.495 / 2 = 0.2475; AC1 = (0.7 - 0.2475) / 0.7525.
    value = rel.gwet_ac1([COHEN_A, COHEN_B], n_categories=3)

    assert value == pytest.approx(0.4525 / 0.7525, abs=1e-12)


def test_gwet_ac1_with_varying_raters_per_unit():
    # Same units as the Fleiss case: P_a = 7/9; P_e = (4/9 * 5/9 + 5/9 * 4/9) / 1 = 40/81;
    # AC1 = (63/81 - 40/81) / (41/81) = 23/41.
    data = [["a", "a", "b", "a"], ["a", "b", "b", N], [N, "b", N, N]]

    assert rel.gwet_ac1(data) == pytest.approx(23 / 41, abs=1e-12)


def test_raw_agreement_weights_each_pairable_value():
    # Two coders: plain share of units coded alike.
    assert rel.raw_agreement([COHEN_A, COHEN_B]) == pytest.approx(0.7, abs=1e-12)
    # [a a b]: 2 of its 6 ordered pairs agree, weight 1/(3-1) each -> 1 of its 3 values;
    # [a a]: 2 of 2 values. (1 + 2) / (3 + 2) = 0.6.
    assert rel.raw_agreement([["a", "a"], ["a", "a"], ["b", N]]) == pytest.approx(0.6)


# ----------------------------------------------------------------------------- bootstrap


def two_coder_data(seed, units, agree=0.8, k=3):
    rng = np.random.default_rng(seed)
    first = rng.integers(0, k, units).astype(float)
    second = np.where(rng.random(units) < agree, first, rng.integers(0, k, units))
    data = np.vstack([first, second])
    data[rng.random(data.shape) < 0.2] = np.nan
    return data


def test_bootstrap_is_reproducible_and_contains_the_estimate():
    data = two_coder_data(1, 2000)

    first = rel.bootstrap_ci(data, rel.krippendorff_alpha, n_boot=500, seed=7)
    again = rel.bootstrap_ci(data, rel.krippendorff_alpha, n_boot=500, seed=7)
    other = rel.bootstrap_ci(data, rel.krippendorff_alpha, n_boot=500, seed=8)

    assert first == again
    assert first != other
    low, high = first
    assert low < rel.krippendorff_alpha(data) < high
    assert high - low < 0.1


@pytest.mark.parametrize(
    "statistic",
    [
        rel.krippendorff_alpha,
        functools.partial(rel.krippendorff_alpha, level="ordinal"),
        functools.partial(rel.krippendorff_alpha, level="interval"),
        rel.fleiss_kappa,
        rel.gwet_ac1,
        rel.raw_agreement,
    ],
)
def test_pattern_count_bootstrap_matches_resampling_the_columns(statistic):
    # The fast path draws pattern counts; a wrapped callable takes the slow path that
    # copies resampled columns. Same distribution, so the intervals agree closely.
    data = two_coder_data(2, 400)

    fast = rel.bootstrap_ci(data, statistic, n_boot=2000, seed=1)
    slow = rel.bootstrap_ci(data, lambda d: statistic(d), n_boot=2000, seed=1)

    assert fast == pytest.approx(slow, abs=0.02)


def test_bootstrap_with_many_patterns_matches_resampling_the_columns():
    # Six coders on 80 units: nearly every unit is its own pattern, so the pattern counts are
    # drawn unit by unit instead of by NumPy's multinomial.
    data = random_data(np.random.default_rng(8), 6, 80, 3)

    fast = rel.bootstrap_ci(data, rel.krippendorff_alpha, n_boot=2000, seed=2)
    slow = rel.bootstrap_ci(data, lambda d: rel.krippendorff_alpha(d), n_boot=2000, seed=2)

    assert fast == pytest.approx(slow, abs=0.02)


def test_bootstrap_accepts_statistic_names():
    data = two_coder_data(3, 300)

    assert rel.bootstrap_ci(data, "alpha", n_boot=200) == rel.bootstrap_ci(
        data, rel.krippendorff_alpha, n_boot=200
    )
    with pytest.raises(ValueError, match="unknown statistic"):
        rel.bootstrap_ci(data, "kappa")


def test_cluster_bootstrap_is_wider_when_clusters_differ():
    # 20 domains of 50 units: coders agree fully in half of them and at chance in the rest,
    # so units of a domain are alike and resampling domains must give the wider interval.
    rng = np.random.default_rng(4)
    blocks, domains = [], []
    for d in range(20):
        first = rng.integers(0, 3, 50)
        second = first if d % 2 else rng.integers(0, 3, 50)
        blocks.append(np.vstack([first, second]))
        domains += [f"domain-{d}"] * 50
    data = np.hstack(blocks).astype(float)

    unit_low, unit_high = rel.bootstrap_ci(data, rel.krippendorff_alpha, seed=3)
    low, high = rel.bootstrap_ci(data, rel.krippendorff_alpha, seed=3, clusters=domains)
    again = rel.bootstrap_ci(data, rel.krippendorff_alpha, seed=3, clusters=domains)

    assert (low, high) == again
    assert low < rel.krippendorff_alpha(data) < high
    assert high - low > 1.5 * (unit_high - unit_low)


def test_cluster_bootstrap_matches_resampling_clusters_of_columns():
    data = two_coder_data(5, 600)
    clusters = np.arange(600) % 40

    fast = rel.bootstrap_ci(data, rel.krippendorff_alpha, n_boot=2000, clusters=clusters)
    slow = rel.bootstrap_ci(
        data, lambda d: rel.krippendorff_alpha(d), n_boot=2000, clusters=clusters
    )

    assert fast == pytest.approx(slow, abs=0.02)


def test_bootstrap_of_undefined_statistic_is_nan():
    low, high = rel.bootstrap_ci([["a", "a"], ["a", "a"]], rel.krippendorff_alpha, n_boot=20)

    assert math.isnan(low)
    assert math.isnan(high)


# ----------------------------------------------------------------------------- summarize


def test_summarize_returns_plain_json_values():
    clusters = ["d1", "d1", "d2", "d2", "d3", "d3", "d4", "d4", "d5", "d5", "d6", "d6"]

    summary = rel.summarize(WORKED, level="ordinal", clusters=clusters, n_boot=300, seed=2)

    json.dumps(summary, allow_nan=False)
    assert summary["n_units"] == 12
    assert summary["n_coders"] == 4
    assert summary["n_pairable"] == 40
    assert summary["n_pairable_units"] == 11
    assert summary["categories"] == [1, 2, 3, 4, 5]
    alpha = summary["alpha"]
    assert alpha["value"] == pytest.approx(0.815, abs=5e-4)
    assert alpha["reason"] is None
    assert alpha["low"] <= alpha["value"] <= alpha["high"]
    assert alpha["cluster_low"] <= alpha["value"] <= alpha["cluster_high"]
    for name, function in [
        ("fleiss_kappa", rel.fleiss_kappa),
        ("gwet_ac1", rel.gwet_ac1),
        ("raw_agreement", rel.raw_agreement),
    ]:
        assert summary[name]["value"] == pytest.approx(function(WORKED), abs=1e-12)
        assert summary[name]["low"] <= summary[name]["value"] <= summary[name]["high"]
    assert summary["cohen_kappa"]["matrix"] == rel.pairwise_cohen(WORKED).tolist()
    assert summary["cohen_kappa"]["shared"][1][3] == 10


def test_summarize_intervals_equal_bootstrap_ci_with_the_same_seed():
    data = two_coder_data(6, 500)

    summary = rel.summarize(data, n_boot=400, seed=9)

    assert (summary["alpha"]["low"], summary["alpha"]["high"]) == rel.bootstrap_ci(
        data, rel.krippendorff_alpha, n_boot=400, seed=9
    )
    assert summary["alpha"]["cluster_low"] is None
    assert summary["alpha"]["cluster_high"] is None


def test_summarize_single_category_gives_none_with_reason():
    summary = rel.summarize([["I", "I", "I"], ["I", "I", N]], n_boot=50, clusters=[1, 2, 3])

    json.dumps(summary, allow_nan=False)
    for name in ("alpha", "fleiss_kappa", "gwet_ac1"):
        assert summary[name]["value"] is None
        assert summary[name]["low"] is None
        assert summary[name]["reason"] == rel.REASON_SINGLE_CATEGORY
    assert summary["alpha"]["cluster_low"] is None
    assert summary["raw_agreement"]["value"] == 1.0
    assert summary["cohen_kappa"]["matrix"] == [[1.0, None], [None, 1.0]]
    assert summary["cohen_kappa"]["reasons"][0][1] == rel.REASON_SINGLE_CATEGORY


def test_summarize_names_the_reason_for_a_missing_pairwise_kappa():
    summary = rel.summarize([["a", "b", "a"], ["a", "b", "b"], [N, N, "a"]], n_boot=0)

    assert summary["cohen_kappa"]["shared"][0][2] == 1
    assert summary["cohen_kappa"]["matrix"][0][2] is None
    assert summary["cohen_kappa"]["reasons"][0][2] == rel.REASON_TOO_FEW_SHARED_UNITS
    assert summary["cohen_kappa"]["reasons"][0][1] is None


@pytest.mark.parametrize(
    "data", [[["a", N, N], [N, "b", N]], [[N, N], [N, N]], [], np.full((3, 4), np.nan)]
)
def test_summarize_without_pairable_values_gives_none_with_reason(data):
    summary = rel.summarize(data, n_boot=50)

    json.dumps(summary, allow_nan=False)
    assert summary["n_pairable"] == 0
    for name in ("alpha", "fleiss_kappa", "gwet_ac1", "raw_agreement"):
        assert summary[name]["value"] is None
        assert summary[name]["reason"] == rel.REASON_NO_PAIRABLE_VALUES


def test_summarize_with_u_as_category_or_as_missing():
    # The caller decides: "U" kept as a value (headline) or mapped to None (sensitivity).
    as_category = [["I", "U", "A", "U"], ["I", "U", "A", "A"]]
    as_missing = [[None if v == "U" else v for v in row] for row in as_category]

    headline = rel.summarize(as_category, n_boot=0)
    sensitivity = rel.summarize(as_missing, n_boot=0)

    assert headline["categories"] == ["A", "I", "U"]
    assert sensitivity["categories"] == ["A", "I"]
    assert headline["n_pairable"] == 8
    assert sensitivity["n_pairable"] == 4
    assert sensitivity["alpha"]["value"] == 1.0
    assert headline["alpha"]["low"] is None


# ----------------------------------------------------------------------------- coverage


def test_unresolved_coverage_per_coder():
    data = [["U", "A", N, "U"], ["U", "I", "A", "A"], [N, N, N, N]]

    coverage = rel.unresolved_coverage(data, unresolved="U")

    assert coverage == [
        {"coder": 0, "coded": 3, "unresolved": 2, "share": pytest.approx(2 / 3)},
        {"coder": 1, "coded": 4, "unresolved": 1, "share": 0.25},
        {"coder": 2, "coded": 0, "unresolved": 0, "share": None},
    ]


def test_unresolved_coverage_with_u_mapped_to_missing_counts_missing_cells():
    coverage = rel.unresolved_coverage([["A", N, N, "I"]])

    assert coverage == [{"coder": 0, "coded": 4, "unresolved": 2, "share": 0.5}]
