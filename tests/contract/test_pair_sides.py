"""Answer pairs: the mapping between an annotator's left/right and the stored roles
(audit.contract.sides), and the record contract's rule that a stored pair label carries a
valid side mapping. Pure: no database."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from audit.contract import codebook_from_dict, codes
from audit.contract.fields import check_annotation, side_fields
from audit.contract.record import check_record
from audit.contract.sides import client_problems, picked_side, sides_of, to_client, to_stored
from tests.archive.unit_kinds import PAIR_CODEBOOK, annotation, pair_lines, pair_record
from tests.contract.factories import span_of

PAIRS = codebook_from_dict(PAIR_CODEBOOK)
REGISTRY = {PAIRS.key: PAIRS}
SCHEMA = json.loads(
    (Path(__file__).resolve().parents[2] / "audit" / "schemas" / "record-1.schema.json").read_text(
        encoding="utf-8"
    )
)
LEFT_EVALUATED = sides_of(left_is_evaluated=True)
RIGHT_EVALUATED = sides_of(left_is_evaluated=False)

#: A codebook with a side field, a spans field and a grade, to map every kind of place.
RICH = codebook_from_dict(
    {
        **PAIR_CODEBOOK,
        "name": "rich-pair",
        "fields": [
            *PAIR_CODEBOOK["fields"],
            {"code": "flaws", "type": "spans", "label": "Flawed passages", "required": False},
            {
                "code": "fluency",
                "type": "grade",
                "label": "Fluency of the better one",
                "grades": [{"value": 0, "anchor": "poor"}, {"value": 1, "anchor": "good"}],
            },
        ],
    }
)


def _client(preference: str, snapshot: str = "left") -> dict[str, Any]:
    return {
        "values": {
            "preference": preference,
            "flaws": [{"snapshot": snapshot, "start": 0, "end": 3, "quote": "The"}],
            "fluency": 1,
        },
        "reasons": {"preference": "names the router"},
        "spans": [
            {"field": "preference", "snapshot": snapshot, "start": 0, "end": 3, "quote": "The"}
        ],
        "rationale": None,
    }


# --- the mapping -----------------------------------------------------------------------


def test_sides_of_each_order_names_both_roles_once():
    assert LEFT_EVALUATED == {"left": "answer", "right": "baseline"}
    assert RIGHT_EVALUATED == {"left": "baseline", "right": "answer"}


def test_side_fields_are_choice_fields_with_left_and_right():
    assert side_fields(PAIRS) == ("preference",)
    assert side_fields(RICH) == ("preference",)


@pytest.mark.parametrize(
    ("picked", "sides", "stored"),
    [
        ("left", LEFT_EVALUATED, "answer"),  # Good: the evaluated answer was on the left
        ("right", LEFT_EVALUATED, "baseline"),  # Bad
        ("left", RIGHT_EVALUATED, "baseline"),  # Bad: the baseline was on the left
        ("right", RIGHT_EVALUATED, "answer"),  # Good
        ("same", LEFT_EVALUATED, "same"),
        ("same", RIGHT_EVALUATED, "same"),
    ],
)
def test_a_pick_is_stored_as_the_role_of_the_side_picked(picked, sides, stored):
    result = to_stored(RICH, _client(picked), sides)
    assert result["values"]["preference"] == stored
    assert result["sides"] == sides
    assert picked_side(stored, sides) == (None if picked == "same" else picked)


def test_spans_on_a_side_cite_the_answer_that_side_showed():
    stored = to_stored(RICH, _client("left", "right"), RIGHT_EVALUATED)
    assert stored["spans"][0]["snapshot"] == "answer"
    assert stored["values"]["flaws"][0]["snapshot"] == "answer"
    stored = to_stored(RICH, _client("left", "right"), LEFT_EVALUATED)
    assert stored["spans"][0]["snapshot"] == "baseline"
    assert stored["values"]["flaws"][0]["snapshot"] == "baseline"
    # the query is nobody's side
    assert to_stored(RICH, _client("left", "query"), LEFT_EVALUATED)["spans"][0]["snapshot"] == (
        "query"
    )


def test_grades_and_reasons_pass_unchanged():
    stored = to_stored(RICH, _client("right"), RIGHT_EVALUATED)
    assert stored["values"]["fluency"] == 1
    assert stored["reasons"] == {"preference": "names the router"}


@pytest.mark.parametrize("sides", [LEFT_EVALUATED, RIGHT_EVALUATED])
@pytest.mark.parametrize("picked", ["left", "same", "right"])
def test_to_client_inverts_to_stored_key_order_included(picked, sides):
    client = _client(picked, "right")
    back = to_client(RICH, to_stored(RICH, client, sides))
    assert back == client
    assert json.dumps(back) == json.dumps(client)  # the same keys in the same order


def test_the_server_writes_sides_whatever_the_client_sent():
    client = {**_client("left"), "sides": RIGHT_EVALUATED}
    assert to_stored(RICH, client, LEFT_EVALUATED)["sides"] == LEFT_EVALUATED


def test_an_adjudicator_reads_a_label_in_their_own_order():
    # an annotator who saw the evaluated answer on the right picked it (right)
    stored = to_stored(RICH, _client("right", "right"), RIGHT_EVALUATED)
    # an adjudicator who sees it on the left reads "left" and spans on the left
    seen = to_client(RICH, stored, LEFT_EVALUATED)
    assert seen["values"]["preference"] == "left"
    assert seen["spans"][0]["snapshot"] == "left"
    assert "sides" not in seen


def test_a_client_naming_roles_is_refused_with_the_place():
    problems = client_problems(RICH, _client("answer", "baseline"))
    assert [(p.code, p.path) for p in problems] == [
        (codes.INVALID_FIELD, "annotation.values.preference"),
        (codes.SPAN_MALFORMED, "annotation.spans[0].snapshot"),
        (codes.SPAN_MALFORMED, "annotation.values.flaws[0].snapshot"),
    ]
    assert client_problems(RICH, _client("left")) == []


# --- the record contract ---------------------------------------------------------------


def _record(note: dict[str, Any]) -> dict[str, Any]:
    evaluated, baseline = pair_lines(1)
    return pair_record(evaluated, baseline, note)


def _stored_note(picked: str, sides: dict[str, str]) -> dict[str, Any]:
    """A label as stored, its span made on the side that showed the evaluated answer."""
    evaluated, _ = pair_lines(1)
    text = evaluated["answer"]["text"]
    shown = "left" if sides["left"] == "answer" else "right"
    client = {
        "values": {"preference": picked},
        "reasons": {"preference": "it names the router"},
        "spans": [{"field": "preference", **span_of(text, "Acme X2", shown)}],
    }
    stored = to_stored(PAIRS, client, sides)
    return {**annotation(stored.pop("values")), **stored}


@pytest.mark.parametrize("sides", [LEFT_EVALUATED, RIGHT_EVALUATED])
def test_a_stored_pair_label_with_its_sides_is_accepted(sides):
    note = _stored_note("right", sides)
    assert note["spans"][0]["snapshot"] == "answer"
    record = _record(note)
    result = check_record(record, REGISTRY)
    assert result.ok, result.message
    assert Draft202012Validator(SCHEMA).is_valid(record)


def test_a_pair_label_without_sides_is_refused():
    note = _stored_note("right", RIGHT_EVALUATED)
    del note["sides"]
    record = _record(note)
    result = check_record(record, REGISTRY)
    assert result.reason == codes.MISSING_FIELD
    assert "annotation.sides" in result.message
    assert not Draft202012Validator(SCHEMA).is_valid(record)


@pytest.mark.parametrize(
    "sides",
    [
        {"left": "answer", "right": "answer"},
        {"left": "left", "right": "right"},
        {"left": "answer"},
        {"left": "answer", "right": "baseline", "middle": "same"},
        ["answer", "baseline"],
        None,
    ],
)
def test_a_pair_label_with_an_invalid_side_mapping_is_refused(sides):
    note = _stored_note("right", RIGHT_EVALUATED)
    note["sides"] = sides
    record = _record(note)
    result = check_record(record, REGISTRY)
    assert result.reason == codes.INVALID_FIELD
    assert "annotation.sides" in result.message
    assert not Draft202012Validator(SCHEMA).is_valid(record)


@pytest.mark.parametrize("value", ["left", "right", "good"])
def test_a_stored_pair_label_names_roles_not_sides(value):
    note = _stored_note("right", RIGHT_EVALUATED)
    note["values"]["preference"] = value
    result = check_record(_record(note), REGISTRY)
    assert result.reason == codes.INVALID_FIELD
    assert "answer, same, baseline" in result.message


def test_sides_belong_to_answer_pair_annotations_only():
    toxicity = codebook_from_dict(
        json.loads(
            (
                Path(__file__).resolve().parents[2]
                / "fixtures"
                / "codebooks"
                / "toxicity-1.0.0.json"
            ).read_text(encoding="utf-8")
        )
    )
    note = {"kind": "independent", "annotator": "a", "values": None, "sides": LEFT_EVALUATED}
    problems = check_annotation(toxicity, copy.deepcopy(note))
    assert (codes.UNKNOWN_FIELD, "annotation.sides") in [(p.code, p.path) for p in problems]
