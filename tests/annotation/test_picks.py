"""Agreement, consensus and picks of a codebook of fields, and the problems' fields:
pure functions, no database (annotator.adjudication.picks, annotator.labelling.fields_page)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from annotator.adjudication.picks import (
    PickError,
    consensus_fields,
    differing_fields,
    final_from_picks,
    judgments_key,
)
from annotator.labelling.fields_page import problem_field, problems_by_field
from audit.contract.engine import compared_key, engine_of

DEFINITION = {
    "fields": [
        {"code": "g", "type": "grade", "label": "Grade"},
        {"code": "c", "type": "choice", "label": "Choice"},
        {"code": "v", "type": "verdict", "label": "Verdict"},
        {"code": "t", "type": "text", "label": "Note"},
    ]
}


def annotation(g=1, c="x", v=True, t="a", reason="r", spans=()):
    return {
        "values": {"g": g, "c": c, "v": v, "t": t},
        "reasons": {"c": reason},
        "spans": [{"field": "g", "snapshot": "answer", "start": s, "end": s + 2} for s in spans],
    }


def test_texts_reasons_and_spans_never_make_a_disagreement():
    a = annotation(t="one", reason="r1", spans=(0,))
    b = annotation(t="two", reason="r2", spans=(5,))
    assert judgments_key(DEFINITION, a) == judgments_key(DEFINITION, b)
    assert differing_fields(DEFINITION, [a, b]) == set()


def test_u_missing_and_types_are_told_apart():
    assert differing_fields(DEFINITION, [annotation(g=None), annotation(g=0)]) == {"g"}
    missing = annotation()
    del missing["values"]["v"]
    assert differing_fields(DEFINITION, [missing, annotation()]) == {"v"}
    assert differing_fields(DEFINITION, [annotation(v=True), annotation(v=1)]) == {"v"}


def test_consensus_joins_reasons_and_keeps_every_span_once():
    body = consensus_fields(
        DEFINITION, [annotation(reason="r1", spans=(0, 4)), annotation(reason="r2", spans=(4,))]
    )
    assert body["reasons"] == {"c": "r1 | r2"}
    assert [s["start"] for s in body["spans"]] == [0, 4]


def test_picks_take_value_reason_and_spans_of_the_picked_label():
    a = annotation(g=0, reason="ra", spans=(0,))
    b = annotation(g=2, c="y", reason="rb", spans=(7,))
    body = final_from_picks(DEFINITION, [a, b], {"g": 1, "c": 0})
    assert body["values"] == {"g": 2, "c": "x", "v": True, "t": "a"}
    assert body["reasons"] == {"c": "ra"}
    assert body["spans"] == b["spans"]


def test_a_differing_field_must_be_picked_and_the_refusal_names_it():
    with pytest.raises(PickError) as refused:
        final_from_picks(DEFINITION, [annotation(g=0), annotation(g=2)], {})
    assert refused.value.field == "g"
    assert "Grade" in refused.value.message
    with pytest.raises(PickError):
        final_from_picks(DEFINITION, [annotation(), annotation()], {"g": 5})


@pytest.mark.parametrize(
    ("path", "field"),
    [
        ("annotation.values.severity", "severity"),
        ("annotation.reasons.target", "target"),
        ("annotation.spans (severity)", "severity"),
        ("annotation.spans[1].quote", "target"),
        ("annotation.spans[9].quote", None),
        ("annotation.kind", None),
    ],
)
def test_a_problem_is_attached_to_the_field_its_path_names(path, field):
    given = {"spans": [{"field": "severity"}, {"field": "target"}]}
    assert problem_field(path, given) == field


def test_problems_split_by_field_keep_their_order():
    problems = [
        {"code": "a", "path": "annotation.values.x", "message": "1"},
        {"code": "b", "path": "annotation.kind", "message": "2"},
        {"code": "c", "path": "annotation.reasons.x", "message": "3"},
    ]
    by_field, rest = problems_by_field(problems, {})
    assert [p["code"] for p in by_field["x"]] == ["a", "c"]
    assert [p["code"] for p in rest] == ["b"]


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "civility": st.sampled_from([0, 1, 2, None, True, "1"]),
            "target": st.sampled_from(["person", "group", None, 1]),
            "harmful": st.sampled_from([True, False, None, 1, 0]),
        },
    )
)
def test_the_engine_compares_unit_level_fields_as_picks_does(values):
    """audit.contract.engine.compared_key (read straight from a stored annotation, as the
    agreement of every unit-level codebook is) equals picks' key, value by value, typed."""
    definition = json.loads(
        (Path(__file__).resolve().parents[2] / "fixtures/codebooks/toxicity-1.0.0.json").read_text(
            encoding="utf-8"
        )
    )
    annotation = {"values": values, "reasons": {}, "spans": []}
    assert compared_key(engine_of(definition), annotation) == judgments_key(definition, annotation)
