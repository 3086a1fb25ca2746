"""The adjudicator's final label as an engine view (annotator.adjudication.final), for the
first codebooks on the engine: picks, own values, span edits, final claims and averaged
evidence dimensions, then the writer gives the stored format-1 shape. Pure: no database."""

from __future__ import annotations

import pytest

from annotator.adjudication.final import OWN, EditError, final_view
from annotator.adjudication.picks import PickError
from audit.contract.engine import annotation_from_view, engine_of, engine_values
from tests.contract.factories import WEIGHTS, answer_claims_codebook, source_risk_codebook

SOURCE = {"snapshot": "source", "start": 0, "end": 4, "quote": "Acme"}
ANSWER = {"snapshot": "answer", "start": 4, "end": 8, "quote": "Acme"}


def tuple_annotation(m: int | None, d_q: float, passage: list[dict]) -> dict:
    spans = {"I": [SOURCE], "A": [ANSWER], "D": [ANSWER], "passage_support": passage}
    if m is not None:
        spans["M"] = [ANSWER]
    return {
        "kind": "independent",
        "annotator": "p-1",
        "assisted": None,
        "predicates": {"I": 1, "A": 1, "M": m, "D": 0},
        "passage_support": 1,
        "source_role": "unknown",
        "spans": spans,
        "evidence": {
            key: {"value": d_q if key == "d_Q" else 0.5, "weight": weight}
            for key, weight in WEIGHTS.items()
        },
        "rationale": "mine",
    }


@pytest.fixture
def tuple_engine():
    return engine_of(source_risk_codebook())


def test_picks_take_a_labels_value_and_spans_and_dimensions_are_averaged(tuple_engine):
    first = tuple_annotation(1, 0.0, [SOURCE])
    second = tuple_annotation(None, 1.0, [SOURCE])
    views = [engine_values(tuple_engine, a) for a in (first, second)]
    view = final_view(tuple_engine, views, {"M": 1})
    stored = annotation_from_view(tuple_engine, view)
    assert stored["predicates"] == {"I": 1, "A": 1, "M": None, "D": 0}
    assert "M" not in stored["spans"]  # a U takes no span (the second label's)
    assert stored["spans"]["I"] == [SOURCE]
    assert stored["evidence"]["d_Q"] == {"value": 0.5, "weight": WEIGHTS["d_Q"]}
    assert set(stored) == {"predicates", "passage_support", "source_role", "spans", "evidence"}


def test_a_differing_field_must_be_picked(tuple_engine):
    views = [engine_values(tuple_engine, tuple_annotation(m, 0.5, [SOURCE])) for m in (1, None)]
    with pytest.raises(PickError) as caught:
        final_view(tuple_engine, views, {})
    assert caught.value.field == "M"


def test_own_values_and_span_edits(tuple_engine):
    views = [engine_values(tuple_engine, tuple_annotation(m, 0.5, [SOURCE])) for m in (1, None)]
    added = {"field": "I", **ANSWER}
    edits = {
        "own": {"passage_support": {"value": None, "reason": ""}},
        "removed": [{"field": "I", "snapshot": "source", "start": 0, "end": 4}],
        "added": [added],
    }
    view = final_view(tuple_engine, views, {"M": 0, "passage_support": OWN}, edits)
    stored = annotation_from_view(tuple_engine, view)
    assert stored["passage_support"] is None
    assert "passage_support" not in stored["spans"]  # own value: the labels' spans go
    assert stored["spans"]["I"] == [ANSWER]
    assert stored["predicates"]["M"] == 1
    assert stored["spans"]["M"] == [ANSWER]


def test_an_own_pick_needs_a_value_and_edits_have_their_shape(tuple_engine):
    views = [engine_values(tuple_engine, tuple_annotation(1, 0.5, [SOURCE]))] * 2
    with pytest.raises(PickError, match="write your own value"):
        final_view(tuple_engine, views, {"I": OWN}, {})
    with pytest.raises(PickError, match="no value of the adjudicator's own"):
        final_view(tuple_engine, views, {"d_Q": OWN}, {"own": {"d_Q": {"value": 1}}})
    with pytest.raises(EditError, match=r"edits\.added\[0\]: start must be an integer"):
        final_view(tuple_engine, views, {}, {"added": [{**ANSWER, "field": "I", "start": "0"}]})
    with pytest.raises(EditError, match=r"edits\.removed: must be a JSON array"):
        final_view(tuple_engine, views, {}, {"removed": {}})


def answer(supported: bool) -> dict:
    claim = {
        "id": "c1",
        "span": ANSWER,
        "source_digest": "a" * 64,
        "quote_span": SOURCE,
        "supported": supported,
        "accurate": True,
        "kind": "verifiable",
        "reason": "said so",
    }
    verdicts = {
        key: {"value": supported if key == "supported" else True, "reason": f"{key}: seen"}
        for key in ("cited", "supported", "accurate", "timely", "relevant", "complete")
    }
    return {"kind": "independent", "annotator": "p", "claims": [claim], "verdicts": verdicts}


def test_answers_take_the_final_claims_and_own_verdicts_with_reasons():
    engine = engine_of(answer_claims_codebook())
    views = [engine_values(engine, answer(value)) for value in (True, False)]
    written = {**answer(True)["claims"][0], "reason": "the adjudicator's"}
    edits = {
        "own": {"supported": {"value": True, "reason": "The claim is supported."}},
        "claims": {"claims": [written]},
    }
    stored = annotation_from_view(engine, final_view(engine, views, {"supported": OWN}, edits))
    assert stored["claims"] == [written]
    assert stored["verdicts"]["supported"] == {"value": True, "reason": "The claim is supported."}
    assert stored["verdicts"]["cited"] == {"value": True, "reason": "cited: seen"}
    with pytest.raises(EditError, match="not a claims field"):
        final_view(engine, views, {"supported": 0}, {"claims": {"supported": []}})


def test_a_failed_answer_stays_failed():
    engine = engine_of(answer_claims_codebook())
    failed = {"kind": "independent", "annotator": "p", "claims": [], "verdicts": None}
    views = [engine_values(engine, failed)] * 2
    stored = annotation_from_view(engine, final_view(engine, views, {}))
    assert stored == {"claims": [], "verdicts": None}
