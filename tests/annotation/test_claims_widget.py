"""How the generic form configures the claims editor of a claims field
(annotator.labelling.fields_page): the claim shape by format, the claim verdicts from the
field, the editor's keys yielding to the codebook's field keys, and the contract's
problems inside a claim named by the claim."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings

from annotator.labelling.fields_page import (
    claim_message,
    claims_widget,
    codebook_fields_for_page,
    fields_rows,
    problems_by_field,
)
from audit.contract.engine import engine_of
from tests.browser.test_claims_field import CODEBOOK


def claims_of(fields):
    (field,) = [f for f in fields if f["type"] == "claims"]
    return field["claims"]


def test_a_format_2_claims_field_writes_format_2_claims_with_its_own_verdicts():
    widget = claims_of(codebook_fields_for_page(CODEBOOK)["fields"])
    assert (widget["shape"], widget["source_key"]) == ("format2", "source")
    assert [(v["code"], v["key"]) for v in widget["verdicts"]] == [
        ("supported", "s"),
        ("accurate", "c"),
        ("current", ""),  # a verdict of the field's own: no key, labelled by its code
    ]
    assert widget["verdicts"][2]["label"] == "current"
    assert [k["key"] for k in widget["kinds"]] == ["verifiable", "not_truth_apt"]
    # The summary is shown; format 2 derives it and enforces nothing against a verdict.
    assert (widget["summary"], widget["summary_verdict"], widget["reason_required"]) == (
        True,
        "",
        False,
    )
    assert widget["keys"] == {
        "add": "a",
        "quote": "q",
        "next": "n",
        "previous": "p",
        "verdicts": "v",
    }


def test_the_editor_leaves_a_key_the_codebook_gives_a_field_to_that_field():
    definition = {**CODEBOOK, "fields": [dict(f) for f in CODEBOOK["fields"]]}
    definition["fields"][1]["key"] = "a"  # the verdict takes "a" (add claim)
    definition["fields"][0]["claim_verdicts"] = ["accurate"]
    widget = claims_of(codebook_fields_for_page(definition)["fields"])
    assert widget["keys"]["add"] == ""
    assert widget["keys"]["quote"] == "q"
    # Without "supported" there is no summary, and no quote rule to warn about.
    assert widget["summary"] is False


def test_a_format_1_claims_field_keeps_the_format_1_claim_shape():
    engine = engine_of(
        {
            "claimgate": "codebook",
            "format_version": 1,
            "name": "answer-claims",
            "version": "1.0.0",
            "unit": "answer",
            "verdicts": [{"key": "supported", "label": "Supported"}],
            "claim_kinds": [{"key": "verifiable", "label": "Verifiable claim"}],
        }
    )
    widget = claims_widget(
        engine.field("claims"), format_version=1, kind_labels={"verifiable": "Verifiable claim"}
    )
    assert (widget["shape"], widget["source_key"]) == ("format1", "source_digest")
    assert [v["code"] for v in widget["verdicts"]] == ["supported", "accurate"]
    assert widget["summary_verdict"] == "supported"
    assert widget["reason_required"] is True
    assert widget["kinds"] == [{"key": "verifiable", "label": "Verifiable claim"}]


def test_a_problem_inside_a_claim_names_the_claim():
    annotation = {
        "values": {"claims": [{"id": "c1", "span": {}, "supported": True}], "trustworthy": True}
    }
    path = "values.claims[0].accurate"
    assert claim_message(path, annotation, "is missing") == "Claim c1, accurate: is missing"
    assert claim_message("values.claims[0]", annotation, "a claim is an object") == (
        "Claim c1: a claim is an object"
    )
    # Not a claim (a span of a spans field, a position past the list): as given.
    spans = {"values": {"passages": [{"snapshot": "answer", "start": 0}]}}
    assert claim_message("values.passages[0].quote", spans, "differs") == "differs"
    assert claim_message("values.claims[3].accurate", annotation, "is missing") == "is missing"
    by_field, rest = problems_by_field(
        [{"code": "missing_field", "path": path, "message": "is missing"}], annotation
    )
    assert by_field["claims"][0]["message"] == "Claim c1, accurate: is missing"
    assert rest == []


def test_the_engine_of_a_format_1_answer_codebook_gives_the_editor_its_format_1_shape():
    definition = json.loads(
        (Path(settings.BASE_DIR) / "fixtures/codebooks/answer-claims-1.0.0.json").read_text()
    )
    labels = {kind["key"]: kind["label"] for kind in definition["claim_kinds"]}
    widget = claims_of(codebook_fields_for_page(definition)["fields"])
    assert (widget["shape"], widget["source_key"]) == ("format1", "source_digest")
    assert widget["summary_verdict"] == "supported"
    assert widget["reason_required"] is (definition.get("reasons", "required") == "required")
    assert [k["label"] for k in widget["kinds"]] == list(labels.values())
    optional = {**definition, "reasons": "optional"}
    assert claims_of(codebook_fields_for_page(optional)["fields"])["reason_required"] is False


def test_claims_are_shown_claim_by_claim():
    fields = codebook_fields_for_page(CODEBOOK)["fields"]
    span = {"snapshot": "answer", "start": 0, "end": 4, "quote": "Open"}
    quote = {"snapshot": "source:1", "start": 2, "end": 6, "quote": "till"}
    claim = {
        "id": "c1",
        "span": span,
        "source": "source:1",
        "quote_span": quote,
        "supported": True,
        "accurate": None,
        "current": False,
        "kind": "verifiable",
        "reason": "the page says so",
    }
    rows = fields_rows({"values": {"claims": [claim], "trustworthy": True}}, fields)
    assert rows[:6] == [
        ("Claims", "1 claim"),
        ("Claim c1", "answer [0, 4): “Open”"),
        ("Claim c1 judgments", "kind verifiable, supported true, accurate unknown, current false"),
        ("Claim c1 source", "source:1"),
        ("Claim c1 quote", "source:1 [2, 6): “till”"),
        ("Claim c1 reason", "the page says so"),
    ]
    assert ("Trustworthy", "true") in rows
