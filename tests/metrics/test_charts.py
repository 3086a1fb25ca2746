"""Confusion heat maps: labels wider than a cell slant, so that neighbours never overlap.
Pure: no database."""

from __future__ import annotations

from metrics.charts import heat_map


def test_long_column_labels_slant_and_the_chart_makes_room_for_them():
    roles = ["affiliate_marketing", "competitor", "corporate_affiliate", "unknown"]
    matrix = [[1 if i == j else 0 for j in range(4)] for i in range(4)]

    chart = heat_map("Source role", {"categories": roles, "matrix": matrix})

    assert chart.slanted
    last_x = float(chart.column_labels[-1][1])
    assert chart.width >= last_x + 3.8 * len("affiliate_marketing") * 0.9


def test_short_column_labels_stay_upright():
    chart = heat_map("I", {"categories": ["0", "1"], "matrix": [[3, 1], [0, 4]]})
    assert not chart.slanted
