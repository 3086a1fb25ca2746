"""The engine's writer (audit.contract.engine.annotation_from_view): an engine view back
into the codebook's stored judgment part, the inverse of engine_values.

The round-trip law: for every stored annotation the record checker accepts,
``annotation_from_view(e, engine_values(e, a))`` is the judgment part of ``a`` (``a``
without ``kind``, ``annotator``, ``assisted``, ``rationale``, and an answer pair's
``sides``, which callers add). Harmless variants the writer normalises, each equivalent
for the checker and for every reader of the engine view:

* a format-1 tuple's empty span list for a judgment (``"D": []``): the writer lists only
  judgments that have spans, as the browser writes them (the checker reads an empty list
  and no list alike: an unresolved judgment needs no span, a resolved one refuses both);
* a format-2 annotation without ``reasons`` or ``spans``: written as ``{}`` and ``[]``
  (engine_values reads an absent one as empty).

And the other way round, for a well-formed view ``v``:
``engine_values(e, annotation_from_view(e, v)) == v``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.conformance import run_suite
from audit.conformance.codebook import conformance_codebook
from audit.contract import check_record, codebook_from_dict, codes
from audit.contract.engine import (
    SPAN_JUDGMENTS,
    annotation_from_view,
    engine_of,
    engine_values,
)
from audit.contract.errors import ContractError
from audit.contract.fields import check_annotation
from tests.contract.engine_records import (
    answer_claims_fixture_records,
    protocol_annotations,
    source_risk_fixture_records,
)
from tests.contract.engine_records import (
    definition as _definition,
)
from tests.contract.factories import (
    answer_claims_codebook,
    codebooks,
    make_answer_record,
    make_record,
    source_risk_codebook,
)

#: What callers add to the writer's output (never the writer).
CALLER_KEYS = ("kind", "annotator", "assisted", "rationale", "sides")


def judgment_part(engine: Any, annotation: dict[str, Any]) -> dict[str, Any]:
    """The stored annotation without what callers add, its harmless variants normalised
    (the module docstring says which and why)."""
    part = {k: copy.deepcopy(v) for k, v in annotation.items() if k not in CALLER_KEYS}
    if engine.format_version == 2:
        part.setdefault("reasons", {})
        part.setdefault("spans", [])
    elif engine.unit == "tuple":
        part["spans"] = {j: spans for j, spans in part["spans"].items() if spans}
    return part


def assert_round_trip(engine: Any, annotation: dict[str, Any]) -> None:
    view = engine_values(engine, annotation)
    assert annotation_from_view(engine, view) == judgment_part(engine, annotation)


# --- the conformance suite ---------------------------------------------------------------


def _records(value: Any) -> list[dict[str, Any]]:
    """Every record anywhere in a suite result's rows."""
    if isinstance(value, dict):
        if value.get("claimgate") == "record":
            return [value]
        return [r for item in value.values() for r in _records(item)]
    if isinstance(value, list):
        return [r for item in value for r in _records(item)]
    return []


def test_every_accepted_conformance_record_round_trips():
    suite = run_suite()
    definition = conformance_codebook()
    registry = {(definition["name"], definition["version"]): codebook_from_dict(definition)}
    engine = engine_of(definition)
    records = _records([suite.records, suite.mutations, suite.transitions, suite.serialization])
    accepted = [r for r in records if check_record(r, registry).ok]
    # The 81 states (the incomplete ones too) and the mutations the checker accepts.
    assert len(accepted) >= len(suite.records) == 81
    for record in accepted:
        assert_round_trip(engine, record["annotation"])


# --- the contract factories and the fixture codebooks -------------------------------------


FACTORY_RECORDS = [
    make_record(),
    make_record(predicates=(None, 1, 0, None)),
    make_record(predicates=(None, None, None, None), passage_support=None),
    make_record(predicates=(1, 0, 1, 1), passage_support=0, source_role="unknown"),
    make_answer_record(),
    make_answer_record(failed=True),
]


@pytest.mark.parametrize("index", range(len(FACTORY_RECORDS)))
def test_every_factory_record_round_trips(index):
    record = FACTORY_RECORDS[index]
    assert check_record(record, codebooks()).ok
    book = source_risk_codebook() if "source" in record else answer_claims_codebook()
    assert_round_trip(engine_of(book), record["annotation"])


def test_an_empty_span_list_is_the_harmless_variant_the_writer_drops():
    spans = make_record(predicates=(1, 1, 1, None))["annotation"]["spans"]
    record = make_record(predicates=(1, 1, 1, None), spans={**spans, "D": []})
    assert check_record(record, codebooks()).ok
    engine = engine_of(source_risk_codebook())
    written = annotation_from_view(engine, engine_values(engine, record["annotation"]))
    assert "D" not in written["spans"]
    assert written["spans"] == spans


@pytest.mark.parametrize(
    ("name", "build"),
    [
        ("source-risk-1.0.0", source_risk_fixture_records),
        ("answer-claims-1.0.0", answer_claims_fixture_records),
    ],
)
def test_every_fixture_record_of_the_format_1_codebooks_round_trips(name, build):
    definition = _definition(name)
    registry = {(definition["name"], definition["version"]): codebook_from_dict(definition)}
    engine = engine_of(definition)
    records = build()
    assert records
    for record in records:
        result = check_record(record, registry)
        assert result.ok, result.message
        assert_round_trip(engine, record["annotation"])


@pytest.mark.parametrize(
    "name",
    ["answer-rubric-1.0.0", "query-document-grades-1.0.0", "pairwise-1.0.0", "toxicity-1.0.0"],
)
def test_every_fixture_annotation_of_the_format_2_codebooks_round_trips(name):
    definition = _definition(name)
    codebook = codebook_from_dict(definition)
    engine = engine_of(definition)
    annotations = [a for n, a in protocol_annotations() if n == name]
    assert annotations
    for annotation in annotations:
        assert check_annotation(codebook, annotation) == []
        assert_round_trip(engine, annotation)


# --- the writer's output shape -----------------------------------------------------------


def test_a_tuple_view_is_written_with_the_codebooks_weights():
    definition = _definition("source-risk-1.0.0")
    engine = engine_of(definition)
    view = {
        "values": {
            "I": 1,
            "A": None,
            "M": 0,
            "D": 1,
            "passage_support": 1,
            "source_role": "sponsored",
            "d_Q": 0.5,
            "d_R": 0.25,
            "d_P": 1.0,
            "d_S": 0.0,
        },
        "reasons": {},
        "spans": [
            {"field": "passage_support", "snapshot": "source", "start": 0, "end": 2, "quote": "ab"},
            {"field": "I", "snapshot": "source", "start": 0, "end": 1, "quote": "a"},
        ],
    }
    written = annotation_from_view(engine, view)
    assert written == {
        "predicates": {"I": 1, "A": None, "M": 0, "D": 1},
        "passage_support": 1,
        "source_role": "sponsored",
        "spans": {
            "I": [{"snapshot": "source", "start": 0, "end": 1, "quote": "a"}],
            "passage_support": [{"snapshot": "source", "start": 0, "end": 2, "quote": "ab"}],
        },
        "evidence": {
            e["key"]: {"value": view["values"][e["key"]], "weight": e["weight"]}
            for e in definition["evidence_dimensions"]
        },
    }
    assert list(written["spans"]) == ["I", "passage_support"]  # judgment order
    assert dict(engine.weights) == {"d_Q": 0.25, "d_R": 0.375, "d_P": 0.25, "d_S": 0.125}


def test_an_answer_view_is_written_with_reasons_or_null():
    engine = engine_of(_definition("answer-claims-1.0.0"))
    claims = [{"id": "c1", "supported": True}]
    view = {
        "values": {"claims": claims, "cited": True, "supported": None},
        "reasons": {"cited": "two sources"},
        "spans": [],
    }
    assert annotation_from_view(engine, view) == {
        "claims": claims,
        "verdicts": {
            "cited": {"value": True, "reason": "two sources"},
            "supported": {"value": None, "reason": None},
        },
    }
    failed = {"values": None, "reasons": {}, "spans": []}
    assert annotation_from_view(engine, failed) == {"claims": [], "verdicts": None}


def test_the_writer_adds_nothing_callers_add():
    for name in ("source-risk-1.0.0", "answer-claims-1.0.0", "toxicity-1.0.0"):
        engine = engine_of(_definition(name))
        written = annotation_from_view(engine, {"values": {}, "reasons": {}, "spans": []})
        assert not set(written) & set(CALLER_KEYS)


def test_a_format_2_view_keeps_documents_and_a_failed_answer():
    engine = engine_of(_definition("query-document-grades-1.0.0"))
    documents = [{"values": {"support": 1}, "reasons": {}}]
    view = {"values": {}, "reasons": {}, "spans": [], "documents": documents}
    written = annotation_from_view(engine, view)
    assert written == view
    assert written["documents"] is not documents  # new containers, same entries
    rubric = engine_of(_definition("answer-rubric-1.0.0"))
    failed = {"values": None, "reasons": {}, "spans": []}
    assert annotation_from_view(rubric, failed) == failed


@pytest.mark.parametrize(
    ("name", "view", "code", "where"),
    [
        ("source-risk-1.0.0", {"values": {"X": 1}}, codes.UNKNOWN_FIELD, "view.values.X"),
        ("answer-claims-1.0.0", {"values": {"I": 1}}, codes.UNKNOWN_FIELD, "view.values.I"),
        (
            "source-risk-1.0.0",
            {"values": {}, "spans": [{"field": "source_role", "snapshot": "source"}]},
            codes.SPAN_MALFORMED,
            "view.spans[0].field",
        ),
        ("source-risk-1.0.0", {"values": {}, "spans": ["x"]}, codes.SPAN_MALFORMED, "spans[0]"),
        ("toxicity-1.0.0", {"values": [1]}, codes.INVALID_FIELD, "view.values"),
        ("toxicity-1.0.0", {"values": {}, "reasons": []}, codes.INVALID_FIELD, "view.reasons"),
        ("toxicity-1.0.0", [], codes.INVALID_FIELD, "the view"),
    ],
)
def test_a_malformed_view_is_refused_naming_the_place(name, view, code, where):
    with pytest.raises(ContractError) as caught:
        annotation_from_view(engine_of(_definition(name)), view)
    assert caught.value.code == code
    assert where in caught.value.message


# --- generated annotations and views -----------------------------------------------------

SOURCE_RISK = source_risk_codebook()
ANSWER_CLAIMS = answer_claims_codebook()
TOXICITY = _definition("toxicity-1.0.0")

judgment = st.sampled_from([0, 1, None])
texts = st.text(max_size=8)
spans = st.fixed_dictionaries(
    {
        "snapshot": st.sampled_from(["query", "answer", "source"]),
        "start": st.integers(0, 50),
        "end": st.integers(0, 50),
        "quote": texts,
    }
)
unit_value = st.floats(0, 1, allow_nan=False)


@st.composite
def tuple_annotations(draw: Any) -> dict[str, Any]:
    engine = engine_of(SOURCE_RISK)
    predicates = {key: draw(judgment) for key in "IAMD"}
    support = draw(judgment)
    span_map = draw(
        st.dictionaries(st.sampled_from(SPAN_JUDGMENTS), st.lists(spans, min_size=1, max_size=3))
    )
    return {
        "kind": draw(st.sampled_from(["independent", "consensus", "adjudicated"])),
        "annotator": "a1",
        "predicates": predicates,
        "passage_support": support,
        "source_role": draw(st.sampled_from(["sponsored", "unknown"])),
        "spans": span_map,
        "evidence": {
            key: {"value": draw(unit_value), "weight": weight}
            for key, weight in engine.weights.items()
        },
        "rationale": draw(st.none() | texts),
        "assisted": None,
    }


claims = st.lists(
    st.fixed_dictionaries(
        {
            "id": st.text(min_size=1, max_size=3),
            "span": spans,
            "source_digest": st.none() | st.just("sha256:" + "0" * 64),
            "quote_span": st.none() | spans,
            "supported": st.sampled_from([True, False, None]),
            "accurate": st.sampled_from([True, False, None]),
            "kind": st.sampled_from(["verifiable", "not_truth_apt"]),
            "reason": st.none() | texts,
        }
    ),
    max_size=3,
)


@st.composite
def answer_annotations(draw: Any) -> dict[str, Any]:
    common = {"kind": "independent", "annotator": "a1", "assisted": None, "rationale": None}
    if draw(st.booleans()) and draw(st.booleans()):
        return {**common, "claims": [], "verdicts": None}
    verdicts = {
        entry["key"]: {
            "value": draw(st.sampled_from([True, False, None])),
            "reason": draw(st.none() | texts),
        }
        for entry in ANSWER_CLAIMS["verdicts"]
    }
    return {**common, "claims": draw(claims), "verdicts": verdicts}


@st.composite
def format_2_annotations(draw: Any) -> dict[str, Any]:
    codes_ = [f["code"] for f in TOXICITY["fields"]]
    values = draw(
        st.none()
        | st.dictionaries(st.sampled_from(codes_), st.none() | st.integers(0, 2) | st.booleans())
    )
    annotation: dict[str, Any] = {"kind": "independent", "annotator": "a1", "values": values}
    if draw(st.booleans()):
        annotation["reasons"] = draw(st.dictionaries(st.sampled_from(codes_), texts))
    if draw(st.booleans()):
        annotation["spans"] = draw(
            st.lists(spans.map(lambda s: {"field": "civility", **s}), max_size=2)
        )
    return annotation


@settings(max_examples=150)
@given(tuple_annotations())
def test_generated_tuple_annotations_round_trip(annotation):
    assert_round_trip(engine_of(SOURCE_RISK), annotation)


@settings(max_examples=150)
@given(answer_annotations())
def test_generated_answer_annotations_round_trip(annotation):
    assert_round_trip(engine_of(ANSWER_CLAIMS), annotation)


@settings(max_examples=150)
@given(format_2_annotations())
def test_generated_format_2_annotations_round_trip(annotation):
    assert_round_trip(engine_of(TOXICITY), annotation)


@st.composite
def tuple_views(draw: Any) -> dict[str, Any]:
    """A well-formed tuple view: any of the fields and dimensions, spans in judgment order
    (as engine_values lists them), no reasons (format-1 tuples have none)."""
    engine = engine_of(SOURCE_RISK)
    pool: dict[str, Any] = {
        **{key: judgment for key in "IAMD"},
        "passage_support": judgment,
        "source_role": st.sampled_from(["sponsored", "unknown"]),
        **{d.code: unit_value for d in engine.dimensions},
    }
    chosen = draw(st.sets(st.sampled_from(sorted(pool))))
    values = {code: draw(pool[code]) for code in chosen}
    listed = []
    for key in SPAN_JUDGMENTS:
        for span in draw(st.lists(spans, max_size=2)):
            listed.append({"field": key, **span})
    return {"values": values, "reasons": {}, "spans": listed}


@st.composite
def answer_views(draw: Any) -> dict[str, Any]:
    if draw(st.booleans()) and draw(st.booleans()):
        return {"values": None, "reasons": {}, "spans": []}
    keys = [e["key"] for e in ANSWER_CLAIMS["verdicts"]]
    chosen = draw(st.sets(st.sampled_from(keys)))
    values: dict[str, Any] = {"claims": draw(claims)}
    values.update({key: draw(st.sampled_from([True, False, None])) for key in chosen})
    reasons = {key: draw(texts) for key in chosen if draw(st.booleans())}
    return {"values": values, "reasons": reasons, "spans": []}


@settings(max_examples=150)
@given(tuple_views())
def test_a_generated_tuple_view_is_read_back_as_it_was(view):
    engine = engine_of(SOURCE_RISK)
    assert engine_values(engine, annotation_from_view(engine, view)) == view


@settings(max_examples=150)
@given(answer_views())
def test_a_generated_answer_view_is_read_back_as_it_was(view):
    engine = engine_of(ANSWER_CLAIMS)
    assert engine_values(engine, annotation_from_view(engine, view)) == view


@settings(max_examples=150)
@given(format_2_annotations())
def test_a_generated_format_2_view_is_read_back_as_it_was(annotation):
    engine = engine_of(TOXICITY)
    view = engine_values(engine, annotation)
    assert engine_values(engine, annotation_from_view(engine, view)) == view
