"""Format 1 on the engine (audit.contract.engine): the first two codebooks described as
fields and derived values, and their stored annotations read in the engine's terms,
without changing a stored record. The derived values the engine computes from the
adapter's view are the ones the record checker computes from the record itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.conformance.codebook import conformance_codebook, dimension_weights
from audit.conformance.fixtures import build_record
from audit.conformance.states import all_states
from audit.contract import check_record, codebook_from_dict
from audit.contract.endpoint import VERDICTS, resolve_short_circuit
from audit.contract.engine import (
    ABSENT,
    engine_fields,
    engine_of,
    engine_values,
    field_value,
    value_at,
)
from audit.contract.fields import derive, derive_short_circuit
from tests.contract.factories import make_answer_record, make_record

CODEBOOKS = Path(__file__).resolve().parents[2] / "fixtures" / "codebooks"


def _definition(name: str) -> dict:
    return json.loads((CODEBOOKS / f"{name}.json").read_text(encoding="utf-8"))


def test_source_risk_is_four_binary_grades_passage_support_a_role_and_r_o():
    definition = _definition("source-risk-1.0.0")
    fields, derived = engine_fields(definition)
    assert [(f.code, f.type, f.level, f.allow_u, f.evidence, f.reason) for f in fields] == [
        *((key, "grade", "nominal", True, "required", "none") for key in "IAMD"),
        ("passage_support", "grade", "nominal", True, "required", "none"),
        ("source_role", "choice", "nominal", False, "none", "none"),
    ]
    assert all(f.codes == (0, 1) for f in fields[:5])
    by_key = {p["key"]: p for p in definition["predicates"]}
    assert [(f.label, f.definition, f.key) for f in fields[:4]] == [
        (by_key[k]["label"], by_key[k]["definition"], by_key[k]["shortcut"]) for k in "IAMD"
    ]
    assert fields[5].codes == tuple(r["key"] for r in definition["source_roles"])
    assert [(d.code, d.rule, d.inputs) for d in derived] == [("R_O", "R_O", ("I", "A", "M", "D"))]
    engine = engine_of(definition)
    assert [d.code for d in engine.dimensions] == [
        d["key"] for d in definition["evidence_dimensions"]
    ]
    assert engine.reported_derived == ()  # the seed-000 report has no R_O item
    assert dict(engine.item_labels) == {
        "I": "I: Relationship",
        "A": "A: Adoption",
        "M": "M: Materiality",
        "D": "D: Disclosure",
        "passage_support": "Passage support",
        "source_role": "Source role",
    }


def test_answer_claims_is_claims_six_verdicts_with_reasons_and_the_summary():
    definition = _definition("answer-claims-1.0.0")
    fields, derived = engine_fields(definition)
    assert [(f.code, f.type) for f in fields] == [
        ("claims", "claims"),
        *((key, "verdict") for key in VERDICTS),
    ]
    assert all(f.reason == "required" and f.allow_u for f in fields[1:])
    assert fields[0].claim_kinds == ("verifiable", "not_truth_apt")
    assert [(d.code, d.rule, d.inputs) for d in derived] == [
        ("claims_supported", "claims_summary", ("claims",))
    ]
    optional = engine_of({**definition, "reasons": "optional"})
    assert {f.reason for f in optional.value_fields} == {"optional"}


def test_a_format_2_codebook_is_its_own_fields():
    definition = _definition("toxicity-1.0.0")
    codebook = codebook_from_dict(definition)
    engine = engine_of(definition)
    assert engine.fields == codebook.fields
    assert engine.derived == codebook.derived
    assert engine.paths["civility"] == ("values", "civility")
    annotation = {"values": {"civility": 1}, "reasons": {}, "spans": []}
    assert engine_values(engine, annotation)["values"] is annotation["values"]


def test_unit_kind_only_gives_the_format_1_codes():
    assert [f.code for f in engine_of(None, unit="tuple").value_fields] == [
        "I",
        "A",
        "M",
        "D",
        "passage_support",
        "source_role",
    ]
    assert [f.code for f in engine_of(None, unit="answer").value_fields] == list(VERDICTS)


def test_the_engine_is_read_once_per_definition_object():
    definition = _definition("source-risk-1.0.0")
    assert engine_of(definition) is engine_of(definition)
    assert engine_of(dict(definition)) == engine_of(definition)


def test_a_tuple_annotation_in_engine_terms():
    record = make_record(predicates=(1, None, 0, 1), passage_support=None)
    engine = engine_of(_definition("source-risk-1.0.0"))
    view = engine_values(engine, record["annotation"])
    assert view["values"] == {
        "I": 1,
        "A": None,
        "M": 0,
        "D": 1,
        "passage_support": None,
        "source_role": "affiliate_marketing",
        "d_Q": 0.7,
        "d_R": 0.2,
        "d_P": 0.4,
    }
    assert view["reasons"] == {}
    assert [s["field"] for s in view["spans"]] == ["I", "M", "D"]
    spans = record["annotation"]["spans"]
    assert [{k: v for k, v in s.items() if k != "field"} for s in view["spans"]] == [
        *spans["I"],
        *spans["M"],
        *spans["D"],
    ]


def test_an_absent_value_is_not_u():
    engine = engine_of(None, unit="tuple")
    annotation = {"predicates": {"I": None}}
    assert value_at(annotation, engine.paths["I"]) is None
    assert value_at(annotation, engine.paths["A"]) is ABSENT
    assert "A" not in engine_values(engine, annotation)["values"]
    assert field_value(engine, annotation, "A") is None


def test_an_answer_annotation_in_engine_terms():
    record = make_answer_record()
    engine = engine_of(_definition("answer-claims-1.0.0"))
    view = engine_values(engine, record["annotation"])
    assert view["values"]["claims"] is record["annotation"]["claims"]
    assert {k: v for k, v in view["values"].items() if k != "claims"} == dict.fromkeys(
        VERDICTS, True
    )
    assert view["reasons"] == dict.fromkeys(VERDICTS, "test")
    failed = make_answer_record(failed=True)["annotation"]
    assert engine_values(engine, failed) == {"values": None, "reasons": {}, "spans": []}


def test_r_o_from_the_engine_view_is_the_checkers_for_all_81_states():
    """The conformance suite's 81 records: the engine's R_O and its short-circuit
    sensitivity, from the adapter's view, are the checker's endpoint and sensitivity."""
    definition = conformance_codebook()
    codebook = codebook_from_dict(definition)
    engine = engine_of(definition)
    weights = dimension_weights(definition)
    for index, state in enumerate(all_states()):
        record = build_record(index, state, weights)
        result = check_record(record, {codebook.key: codebook})
        assert result.ok, result.message
        view = engine_values(engine, record["annotation"])
        assert derive(engine, view) == {"R_O": result.endpoint}
        assert derive_short_circuit(engine, view) == {"R_O": result.short_circuit}
        assert result.short_circuit == resolve_short_circuit(*state)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["verifiable", "not_truth_apt"]), st.sampled_from([True, False, None])
        ),
        max_size=4,
    )
)
def test_the_claims_summary_from_the_engine_view_is_the_checkers(claims):
    engine = engine_of(_definition("answer-claims-1.0.0"))
    annotation = {
        "claims": [{"kind": kind, "supported": supported} for kind, supported in claims],
        "verdicts": {key: {"value": None, "reason": "r"} for key in VERDICTS},
    }
    verifiable = [s for kind, s in claims if kind == "verifiable"]
    expected = (
        False
        if False in verifiable
        else True
        if verifiable and all(s is True for s in verifiable)
        else None
    )
    assert derive(engine, engine_values(engine, annotation)) == {"claims_supported": expected}


@pytest.mark.parametrize("name", ["source-risk-1.0.0", "answer-claims-1.0.0"])
def test_a_stored_record_is_read_not_changed(name):
    record = make_record() if name.startswith("source") else make_answer_record()
    before = json.dumps(record, sort_keys=True)
    engine_values(engine_of(_definition(name)), record["annotation"])
    assert json.dumps(record, sort_keys=True) == before
