"""Reliability of a codebook of fields: alpha at each field's level with U excluded, and
nominal with U as a category of its own (metrics.report_build). Pure: no database."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrics import reliability
from metrics.matrices import Matrix, U
from metrics.report_build import _item_report

CODERS = ("p-a", "p-b")
# Grades of two coders on six units, one U: ranks matter (0 vs 2 is worse than 1 vs 2).
GRADES = [["0", "1", "2", "2", U, "1"], ["1", "1", "2", "0", "2", "1"]]
NUMBERS = [["0.1", "0.5", "0.95", "0.4"], ["0.15", "0.5", "0.9", "0.2"]]


def matrix(data) -> Matrix:
    units = list(range(len(data[0])))
    return Matrix.of_values(CODERS, units, np.zeros(len(units), dtype=np.int64), data)


def resolved(data) -> list[list[float]]:
    return [[math.nan if v == U else float(v) for v in row] for row in data]


@pytest.mark.parametrize(("data", "level"), [(GRADES, "ordinal"), (NUMBERS, "interval")])
def test_u_excluded_gives_alpha_at_the_fields_level_over_the_values(data, level):
    item = _item_report("f", "F", matrix(data), n_boot=0, seed=0, level=level)
    expected = reliability.krippendorff_alpha(resolved(data), level)
    assert item["level"] == level
    assert item["u_missing"]["level"] == level
    assert item["u_missing"]["alpha"]["value"] == pytest.approx(expected)
    # The categories are the values, named as stored.
    assert set(item["u_missing"]["categories"]) <= {v for row in data for v in row}


def test_u_as_its_own_category_is_nominal_and_differs_from_the_ordinal_alpha():
    item = _item_report("f", "F", matrix(GRADES), n_boot=0, seed=0, level="ordinal")
    nominal = reliability.krippendorff_alpha(GRADES, "nominal")
    assert item["u_category"]["level"] == "nominal"
    assert item["u_category"]["alpha"]["value"] == pytest.approx(nominal)
    assert item["u_category"]["alpha"]["value"] != pytest.approx(
        item["u_missing"]["alpha"]["value"]
    )


def test_a_non_numeric_value_falls_back_to_nominal_saying_so():
    data = [["a", "b"], ["a", "a"]]
    item = _item_report("f", "F", matrix(data), n_boot=0, seed=0, level="ordinal")
    assert item["u_missing"]["level"] == "nominal"


def test_the_first_codebooks_reports_keep_their_shape():
    item = _item_report("I", "I", matrix(GRADES), n_boot=0, seed=0)
    assert "level" not in item
    assert "level" not in item["u_missing"]
