"""Codebook format 2: fields, derived values and annotations (audit.contract.fields).

Pure: no database. The codebook here is one that no code knows (a toxicity rubric).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from audit.contract import codebook_from_dict, codes
from audit.contract.codebook import CodebookProblems, codebook_problems
from audit.contract.errors import ContractError
from audit.contract.fields import check_annotation, derive, derive_short_circuit, field_values
from audit.contract.record import check_record
from tests.contract.factories import make_answer_record, seal, span_of

RUBRIC: dict[str, Any] = {
    "claimgate": "codebook",
    "format_version": 2,
    "name": "toxicity",
    "version": "1.0.0",
    "unit": "answer",
    "title": "Toxicity",
    "description": "A rubric no code knows.",
    "fields": [
        {
            "code": "severity",
            "type": "grade",
            "label": "Severity",
            "definition": "How harmful the answer is.",
            "key": "s",
            "grades": [
                {"value": 0, "anchor": "severe"},
                {"value": 1, "anchor": "mild"},
                {"value": 2, "anchor": "none"},
            ],
            "evidence": "required",
        },
        {
            "code": "tone",
            "type": "grade",
            "label": "Tone",
            "grades": [{"value": 0, "anchor": "hostile"}, {"value": 1, "anchor": "neutral"}],
        },
        {
            "code": "target",
            "type": "choice",
            "label": "Target",
            "key": "t",
            "choices": [
                {"code": "person", "label": "A person", "key": "p"},
                {"code": "group", "label": "A group", "key": "g"},
                {"code": "none", "label": "No one", "key": "n"},
            ],
            "reason": "required",
        },
        {"code": "harmful", "type": "verdict", "label": "Harmful", "allow_u": False},
        {"code": "note", "type": "text", "label": "Note", "required": False},
    ],
    "derived": [{"code": "pass", "rule": "min", "inputs": ["severity", "tone"], "threshold": 1}],
}
BOOK = codebook_from_dict(RUBRIC)
REGISTRY = {BOOK.key: BOOK}


def _annotation(**values: Any) -> dict[str, Any]:
    base = {"severity": 2, "tone": 1, "target": "none", "harmful": False}
    base.update(values)
    text = make_answer_record()["answer"]["text"]
    return {
        "kind": "independent",
        "annotator": "a7",
        "values": base,
        "reasons": {"target": "nobody is named"},
        "spans": [{"field": "severity", **span_of(text, "The museum opens", "answer")}],
        "rationale": None,
        "assisted": None,
    }


def _record(annotation: dict[str, Any]) -> dict[str, Any]:
    record = make_answer_record(sealed=False)
    record["codebook"] = {"name": "toxicity", "version": "1.0.0"}
    record["annotation"] = copy.deepcopy(annotation)
    return seal(record)


def test_a_format_2_codebook_loads_with_its_fields_and_defaults():
    assert BOOK.format_version == 2
    assert [f.code for f in BOOK.fields] == ["severity", "tone", "target", "harmful", "note"]
    severity = BOOK.fields[0]
    assert (severity.level, severity.allow_u, severity.codes) == ("ordinal", True, (0, 1, 2))
    assert BOOK.fields[2].level == "nominal"
    assert BOOK.fields[2].codes == ("person", "group", "none")
    assert BOOK.derived[0].inputs == ("severity", "tone")
    assert BOOK.predicates == ()
    assert BOOK.verdicts == ()


def test_a_malformed_codebook_is_refused_with_every_problem_named():
    bad = copy.deepcopy(RUBRIC)
    bad["fields"][0]["grades"][1]["value"] = 5  # grades run 0..n
    bad["fields"][1]["type"] = "slider"  # unknown type
    bad["fields"][2]["key"] = "s"  # taken by severity
    bad["fields"][3]["placement"] = "document"  # not a query_documents codebook
    bad["derived"][0]["inputs"] = ["severity", "nothing"]
    bad["colour"] = "blue"
    problems = codebook_problems(bad)
    paths = [p.path for p in problems]
    assert "fields[0] (severity).grades[1].value" in paths
    assert "fields[1] (tone).type" in paths
    assert "fields[2] (target).key" in paths
    assert "fields[3] (harmful).placement" in paths
    assert "derived[0] (pass).inputs[1]" in paths
    assert "colour" in paths
    with pytest.raises(CodebookProblems) as caught:
        codebook_from_dict(bad)
    assert isinstance(caught.value, ContractError)
    assert f"{len(problems)} problems" in caught.value.message
    assert len(caught.value.problems) == len(problems) >= 6


def test_a_sound_annotation_has_no_problems_and_derives_pass():
    annotation = _annotation()
    assert check_annotation(BOOK, annotation) == []
    assert derive(BOOK, annotation) == {"pass": True}


@pytest.mark.parametrize(
    ("severity", "tone", "expected"),
    [
        (0, None, False),  # a 0 decides the fail even beside a U (short-circuit rule)
        (None, 1, None),  # only U and passing grades: unknown
        (1, 1, True),
        (2, 0, False),
    ],
)
def test_min_rule_with_u(severity, tone, expected):
    assert derive(BOOK, _annotation(severity=severity, tone=tone))["pass"] is expected


def test_every_problem_of_an_annotation_is_named_by_field():
    annotation = _annotation(severity=3, target="robot", harmful=None, colour=1)
    annotation["reasons"] = {}
    annotation["spans"] = []
    problems = check_annotation(BOOK, annotation)
    paths = {p.path: p.code for p in problems}
    assert paths["annotation.values.severity"] == codes.INVALID_FIELD
    assert paths["annotation.values.target"] == codes.INVALID_FIELD
    assert paths["annotation.values.harmful"] == codes.INVALID_FIELD  # U not allowed
    assert paths["annotation.values.colour"] == codes.UNKNOWN_FIELD
    assert paths["annotation.reasons.target"] == codes.MISSING_FIELD
    assert paths["annotation.spans (severity)"] == codes.SPAN_MISSING


def test_a_format_2_record_passes_the_record_checker():
    result = check_record(_record(_annotation()), REGISTRY)
    assert result.ok, result.message
    assert result.unit == "answer"
    assert result.endpoint is None


def test_a_format_2_record_with_problems_is_refused_naming_them_all():
    annotation = _annotation(severity="2", tone=7)
    result = check_record(_record(annotation), REGISTRY)
    assert not result.ok
    assert result.reason == codes.INVALID_FIELD
    assert "2 problems" in result.message
    assert "annotation.values.severity" in result.message
    assert "annotation.values.tone" in result.message
    assert result.record_digest  # the refused record can still be named


def test_a_span_quote_that_does_not_match_the_answer_is_refused():
    annotation = _annotation()
    annotation["spans"][0]["quote"] = "something else entirely"
    result = check_record(_record(annotation), REGISTRY)
    assert not result.ok
    assert result.reason == codes.SPAN_QUOTE_MISMATCH


def test_r_o_and_claims_summary_are_derived_from_fields():
    binary = [{"code": "0", "label": "no"}, {"code": "1", "label": "yes"}]
    book = codebook_from_dict(
        {
            "claimgate": "codebook",
            "format_version": 2,
            "name": "risk-fields",
            "version": "1",
            "unit": "answer",
            "fields": [
                {"code": code, "type": "choice", "label": code, "choices": binary}
                for code in ("I", "A", "M", "D")
            ]
            + [{"code": "claims", "type": "claims", "label": "Claims"}],
            "derived": [
                {"code": "R_O", "rule": "R_O", "inputs": {k: k for k in "IAMD"}},
                {"code": "supported", "rule": "claims_summary", "inputs": ["claims"]},
            ],
        }
    )
    claim = {
        "id": "c1",
        "span": {"snapshot": "answer", "start": 0, "end": 3, "quote": "The"},
        "source": None,
        "quote_span": None,
        "kind": "verifiable",
        "reason": None,
        "supported": None,
        "accurate": None,
    }
    annotation = {
        "kind": "independent",
        "annotator": "a",
        "values": {"I": "1", "A": "1", "M": None, "D": "0", "claims": [claim]},
    }
    assert check_annotation(book, annotation) == []
    assert derive(book, annotation) == {"R_O": None, "supported": None}
    annotation["values"]["A"] = "0"
    assert derive_short_circuit(book, annotation) == {"R_O": 0}
    assert field_values(book, annotation)["A"] == "0"


def test_query_documents_fields_repeat_per_document():
    book = codebook_from_dict(
        {
            "claimgate": "codebook",
            "format_version": 2,
            "name": "qd",
            "version": "1",
            "unit": "query_documents",
            "fields": [
                {
                    "code": "grade",
                    "type": "grade",
                    "label": "Grade",
                    "placement": "document",
                    "grades": [{"value": v, "anchor": str(v)} for v in range(3)],
                },
                {"code": "note", "type": "text", "label": "Note", "placement": "set"},
            ],
        }
    )
    texts = {"query": "q", "document:0": "one", "document:1": "two"}
    annotation = {
        "kind": "independent",
        "annotator": "a",
        "values": {"note": "fine"},
        "documents": [{"values": {"grade": 2}}, {"values": {"grade": None}}],
    }
    assert check_annotation(book, annotation, texts) == []
    assert field_values(book, annotation)["grade"] == [2, None]
    annotation["documents"].pop()
    problems = check_annotation(book, annotation, texts)
    assert [p.path for p in problems] == ["annotation.documents"]


def test_set_level_links_and_groups_name_documents_by_position():
    book = codebook_from_dict(
        {
            "claimgate": "codebook",
            "format_version": 2,
            "name": "qd-set",
            "version": "1",
            "unit": "query_documents",
            "fields": [
                {"code": "contradictions", "type": "links", "label": "C", "placement": "set"},
                {"code": "redundancy", "type": "groups", "label": "R", "placement": "set"},
            ],
        }
    )
    texts = {"query": "q", **{f"document:{n}": "d" for n in range(3)}}
    annotation = {
        "kind": "independent",
        "annotator": "a",
        "values": {
            "contradictions": [{"document": 0, "by": 2}],
            "redundancy": [{"representative": 1, "members": [1, 2]}],
        },
        "documents": [{"values": {}}, {"values": {}}, {"values": {}}],
    }
    assert check_annotation(book, annotation, texts) == []
    annotation["values"]["contradictions"] = [{"document": 3, "by": 0}, {"document": 1, "by": 1}]
    annotation["values"]["redundancy"] = [
        {"representative": 0, "members": [1, 2]},
        {"representative": 2, "members": [2, 0]},
    ]
    paths = [p.path for p in check_annotation(book, annotation, texts)]
    assert paths == [
        "annotation.values.contradictions[0]",
        "annotation.values.contradictions[1]",
        "annotation.values.redundancy[0].representative",
        "annotation.values.redundancy[1].members",
    ]


def test_relations_need_a_query_documents_unit_at_set_level():
    problems = codebook_problems(
        {**RUBRIC, "fields": [{"code": "links", "type": "links", "label": "L"}], "derived": []}
    )
    assert [p.path for p in problems] == ["fields[0] (links).placement"]


@pytest.mark.parametrize("key", ["u", "U"])
def test_a_field_may_not_take_the_key_of_u(key):
    bad = copy.deepcopy(RUBRIC)
    bad["fields"][0]["key"] = key  # inside a field "u" chooses U: the field's own key would clash
    problems = codebook_problems(bad)
    assert [(p.path, p.message) for p in problems] == [
        (
            "fields[0] (severity).key",
            "'u' chooses U (unresolved) inside a field: give the field another key",
        )
    ]
