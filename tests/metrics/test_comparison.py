"""Seed 002's Table II, pure: per-query totals, the paired difference interval, the rows,
the CSV and the chart (no database)."""

from __future__ import annotations

import pytest

from metrics.comparison import Pairwise, Side, compare, csv_rows, delta_chart
from metrics.estimates import EstimateInputError, ratio_difference_interval
from metrics.protocol import net_gain, net_gain_bootstrap


def test_the_difference_interval_is_paired_over_queries():
    # Both systems move together query by query: the difference never changes sign.
    first = [(1, 1), (1, 1), (0, 1), (1, 1), (0, 1)] * 4
    second = [(0, 1), (1, 1), (0, 1), (0, 1), (0, 1)] * 4
    low, high = ratio_difference_interval(first, second, n_boot=500, seed=3)
    assert 0 < low <= 0.4 <= high <= 0.8
    assert (low, high) == ratio_difference_interval(first, second, n_boot=500, seed=3)


def test_identical_sides_give_a_zero_width_interval():
    rows = [(1, 2), (0, 3), (2, 2)]
    assert ratio_difference_interval(rows, rows, n_boot=200, seed=1) == (0.0, 0.0)


def test_a_zero_denominator_everywhere_is_undefined_and_bad_rows_are_named():
    assert ratio_difference_interval([(0, 0)], [(0, 1)], n_boot=50, seed=1) == (None, None)
    with pytest.raises(EstimateInputError, match=r"second\[1\]"):
        ratio_difference_interval([(0, 1), (1, 1)], [(0, 1), (2, 1)], n_boot=5, seed=1)
    with pytest.raises(EstimateInputError, match="second"):
        ratio_difference_interval([(0, 1)], [], n_boot=5, seed=1)


def test_a_side_keeps_per_query_totals_and_counts_unknowns_apart():
    side = Side()
    side.add_answer("q1", True)
    side.add_answer("q1", False)
    side.add_answer("q2", None)
    side.add_documents("q1", (2, 0, 2), (2, 0, 0))  # Acc 2/3, e = 0
    side.add_documents("q2", (2, 1, 1), (2, 1, 1))  # Acc 1, e = 2
    side.add_documents("q3", (), ())  # no documents: apart
    side.add_documents("q4", (None, None), (None, None))  # all U: apart
    assert side.counts("pass_r") == {
        "numerator": 1,
        "denominator": 2,
        "value": 0.5,
        "answers": 3,
        "unknown": 1,
    }
    acc = side.counts("acc_qd")
    assert (acc["denominator"], acc["no_documents"], acc["unknown_queries"]) == (2, 1, 1)
    assert acc["value"] == pytest.approx((2 / 3 + 1) / 2)
    assert acc["unknown_documents"] == 2
    usable = side.counts("usable_q")
    assert (usable["numerator"], usable["denominator"], usable["unknown"]) == (1, 2, 1)
    assert side.counts("highq_q")["numerator"] == 1
    assert side.rows("pass_r") == {"q1": (1, 2), "q2": (0, 0), "q3": (0, 0), "q4": (0, 0)}


def test_the_seeds_three_queries_give_usable_two_thirds_and_high_one_third():
    side = Side()
    for query, revised in (("a", (2, 2, 1)), ("b", (1, 1, 0, 1, 1)), ("c", (0, 0))):
        side.add_documents(query, revised, revised)
    assert side.counts("usable_q")["value"] == pytest.approx(2 / 3)
    assert side.counts("highq_q")["value"] == pytest.approx(1 / 3)


def _sides():
    evaluated, baseline = Side(), Side()
    for i in range(10):
        evaluated.add_answer(f"q{i}", i < 8)  # 8/10
        baseline.add_answer(f"q{i}", i < 5)  # 5/10
        evaluated.add_documents(f"q{i}", (2, 1, 1), (2, 1, 1))
        baseline.add_documents(f"q{i}", (2, 0), (2, 0) if i < 6 else (1, 1))
    return evaluated, baseline


def test_compare_gives_table_ii_rows_in_percentage_points_and_net_gain_in_percent():
    evaluated, baseline = _sides()
    pairs = Pairwise()
    for i, judgment in enumerate("GGGSSSSBGS" * 3):
        pairs.add(f"q{i % 10}", judgment)
    table = compare(
        {"rubric": evaluated, "query_documents": evaluated},
        {"rubric": baseline, "query_documents": baseline},
        pairs,
        seed=7,
        n_boot=300,
    )
    rows = {row["metric"]: row for row in table["rows"]}
    assert [row["metric"] for row in table["rows"]] == [
        "acc_qd",
        "usable_q",
        "highq_q",
        "pass_r",
        "net_gain",
    ]
    assert rows["pass_r"]["delta"] == pytest.approx(30.0)
    assert rows["pass_r"]["low"] <= 30.0 <= rows["pass_r"]["high"]
    # Acc_qd: 1.0 against (6 × 0.5 + 4 × 0.5) / 10 = 0.5.
    assert rows["acc_qd"]["delta"] == pytest.approx(50.0)
    # Usable: 10/10 against 4/10 (e = 1 for {1, 1}; e = 0 for {2, 0}); HighQ: 10/10 against 0.
    assert rows["usable_q"]["delta"] == pytest.approx(60.0)
    assert rows["highq_q"]["delta"] == pytest.approx(100.0)
    assert rows["highq_q"]["low"] == rows["highq_q"]["high"] == pytest.approx(100.0)
    gain = rows["net_gain"]
    normal = net_gain(12, 15, 3)
    boot = net_gain_bootstrap(pairs.judgments, pairs.queries, seed=7, n_boot=300)
    assert (gain["good"], gain["same"], gain["bad"], gain["n"]) == (12, 15, 3, 30)
    assert gain["value"] == pytest.approx(30.0)
    assert (gain["normal"]["low"], gain["normal"]["high"]) == (normal.low, normal.high)
    assert (gain["bootstrap"]["low"], gain["bootstrap"]["high"]) == (boot.low, boot.high)
    assert gain["bootstrap"]["clusters"] == 10


def test_a_missing_study_or_value_says_why():
    evaluated, _ = _sides()
    table = compare({"rubric": evaluated}, {"rubric": Side()}, None, n_boot=10)
    rows = {row["metric"]: row for row in table["rows"]}
    assert rows["acc_qd"]["reason"] == "no_study"
    assert rows["pass_r"]["reason"] == "no_values"
    assert rows["pass_r"]["delta"] is None
    assert rows["net_gain"]["reason"] == "no_study"
    empty = compare({}, {}, Pairwise(), n_boot=10)["rows"][-1]
    assert (empty["reason"], empty["value"], empty["n"]) == ("no_judgments", None, 0)


def test_a_pair_judgment_other_than_g_s_b_is_refused():
    with pytest.raises(ValueError, match="'left'"):
        Pairwise().add("q1", "left")


def test_the_csv_has_one_row_per_metric_and_the_chart_one_mark_per_row():
    evaluated, baseline = _sides()
    pairs = Pairwise(["G", "B", "S"], ["q1", "q2", "q3"])
    table = compare(
        {"rubric": evaluated, "query_documents": evaluated},
        {"rubric": baseline, "query_documents": baseline},
        pairs,
        n_boot=50,
    )
    rows = list(csv_rows(table))
    assert rows[0][:3] == ["metric", "unit", "evaluated"]
    assert [r[0] for r in rows[1:]] == ["Acc_qd", "Usable_q", "HighQ_q", "PassR_ans", "NetGain_ans"]
    assert rows[4][2:9] == ["80.00", 8, 10, "50.00", 5, 10, "30.00"]
    assert rows[5][12:16] == [1, 1, 1, 3]
    chart = delta_chart(table)
    assert len(chart["marks"]) == 5
    assert chart["extent"] == 100.0
    assert chart["marks"][3]["x"] > chart["zero"]  # +30 pp right of no difference
    assert chart["ticks"][2] == {"x": chart["zero"], "label": "0"}
