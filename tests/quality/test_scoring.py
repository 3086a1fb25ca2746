"""Pure scoring: Wilson intervals, matching a key, the gold rate, drift series and the
drift chart. No database."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotator.quality.charts import drift_chart
from annotator.quality.scoring import (
    Outcome,
    Proportion,
    Qualification,
    by_block,
    by_week,
    gold_due,
    key_of,
    key_problem,
    matches,
    values_of,
    wilson,
)
from audit.contract.engine import engine_of

CODEBOOKS = Path(__file__).resolve().parents[2] / "fixtures" / "codebooks"


def test_eight_of_ten_is_0_8_with_its_wilson_interval():
    proportion = Proportion(8, 10)

    assert proportion.rate == 0.8
    low, high = proportion.interval
    # Wilson score interval, z = 1.96: the textbook value for 8/10.
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)


def test_wilson_is_defined_at_the_edges_and_undefined_without_items():
    assert wilson(0, 10)[0] == 0.0
    assert wilson(10, 10)[1] == 1.0
    assert wilson(0, 0) is None
    assert Proportion(0, 0).rate is None
    with pytest.raises(ValueError, match="k must be within"):
        wilson(11, 10)


@given(st.integers(min_value=1, max_value=5000), st.data())
def test_wilson_holds_the_rate_inside_zero_one(n, data):
    k = data.draw(st.integers(min_value=0, max_value=n))
    low, high = wilson(k, n)
    assert 0.0 <= low <= k / n <= high <= 1.0


def test_a_label_matches_when_every_keyed_field_has_its_key():
    annotation = {
        "predicates": {"I": 1, "A": 1, "M": None, "D": 0},
        "passage_support": 1,
        "source_role": "sponsored",
    }
    values = values_of(annotation, "tuple")

    assert values == {
        "I": "1",
        "A": "1",
        "M": "U",
        "D": "0",
        "passage_support": "1",
        "source_role": "sponsored",
    }
    assert matches(key_of({"I": 1, "M": None}), values)
    assert not matches(key_of({"I": 0}), values)
    assert matches(key_of({"source_role": "sponsored", "D": 0}), values)


def test_answer_verdicts_are_compared_as_true_false_or_u():
    annotation = {"verdicts": {"cited": {"value": True, "reason": "r"}, "supported": {}}}
    values = values_of(annotation, "answer")

    assert values["cited"] == "true"
    assert values["supported"] == "U"
    assert matches(key_of({"cited": True, "supported": None}), values)


def test_a_bad_key_says_what_and_where():
    assert "non-empty" in key_problem({}, "tuple")
    assert "unknown field X" in key_problem({"X": 1}, "tuple")
    assert "field I" in key_problem({"I": [1]}, "tuple")
    assert "fraction" in key_problem({"I": 0.5}, "tuple")
    assert key_problem({"cited": True}, "answer") is None


def test_gold_comes_at_the_study_rate_and_never_above_it():
    gold = 0
    for served in range(100):
        if gold_due(served=served, gold_served=gold, rate=0.1):
            gold += 1
        assert gold <= 0.1 * (served + 1) + 1e-9
    assert gold == 10
    assert not gold_due(served=5, gold_served=0, rate=0.0)


def test_drift_by_week_and_by_fifty_items():
    start = datetime(2026, 11, 2, 9, tzinfo=UTC)  # a Monday, ISO week 45
    outcomes = [Outcome(at=start + timedelta(hours=i), right=i % 4 != 0) for i in range(120)]
    outcomes += [Outcome(at=start + timedelta(days=7, hours=i), right=False) for i in range(10)]

    weeks = by_week(outcomes)
    blocks = by_block(outcomes)

    assert [point.label for point in weeks] == ["2026-W45", "2026-W46"]
    assert sum(point.proportion.n for point in weeks) == 130
    assert [point.label for point in blocks] == ["1–50", "51–100", "101–130"]
    assert blocks[0].proportion == Proportion(37, 50)
    assert blocks[2].proportion.n == 30


def test_qualification_passes_at_the_threshold_and_fails_below():
    assert Qualification(required=10, threshold=0.8, assigned=10, right=8, scored=10).passed
    failed = Qualification(required=10, threshold=0.9, assigned=10, right=8, scored=10)
    assert failed.failed
    assert not failed.pending
    assert Qualification(required=10, threshold=0.8, assigned=3, right=3, scored=3).pending
    assert Qualification(required=0, threshold=0.8, assigned=0, right=0, scored=0).passed


def test_the_drift_chart_places_rates_and_intervals():
    start = datetime(2026, 11, 2, 9, tzinfo=UTC)
    gold = by_block([Outcome(at=start + timedelta(minutes=i), right=i < 40) for i in range(60)])
    chart = drift_chart("a-1 by 50 items", gold, [])

    assert chart is not None
    line = chart.lines[0]
    assert len(line.dots) == 2
    assert "40/50 = 0.80" in line.dots[0].text
    assert float(line.dots[0].y_low) > float(line.dots[0].cy) > float(line.dots[0].y_high)
    assert "0/10 = 0.00" in line.dots[1].text
    assert chart.lines[1].dots == ()
    assert drift_chart("empty", [], []) is None


def test_a_codebook_of_fields_is_scored_by_its_own_fields():
    """Gold keys and agreement compare a format-2 codebook's unit-level values (read
    through audit.contract.engine), as they compare the first two codebooks' fields."""
    definition = json.loads((CODEBOOKS / "toxicity-1.0.0.json").read_text(encoding="utf-8"))
    engine = engine_of(definition)
    annotation = {"values": {"civility": 0, "target": None, "harmful": True}, "reasons": {}}
    assert values_of(annotation, engine) == {"civility": "0", "target": "U", "harmful": "true"}
    assert key_problem({"civility": 0}, engine) is None
    assert "unknown field cited" in key_problem({"cited": True}, engine)
    risk = engine_of(json.loads((CODEBOOKS / "source-risk-1.0.0.json").read_text(encoding="utf-8")))
    stored = {
        "predicates": {"I": 1, "A": 0, "M": None, "D": 0},
        "passage_support": 1,
        "source_role": "sponsored",
    }
    assert (
        values_of(stored, risk)
        == values_of(stored, "tuple")
        == {
            "I": "1",
            "A": "0",
            "M": "U",
            "D": "0",
            "passage_support": "1",
            "source_role": "sponsored",
        }
    )
