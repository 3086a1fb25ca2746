"""The consensus of agreeing labels on the engine (annotator.adjudication.services
.consensus_annotation: every label read into the engine view, the views' consensus in
annotator.adjudication.picks.consensus_view, written back by
audit.contract.engine.annotation_from_view) gives, byte for byte, the consensus the three
per-codebook branches gave before it. The old function is kept here, and only here, as
the reference. No database: the studies and labels are unsaved model instances."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from statistics import fmean
from typing import Any

import pytest

from annotator.adjudication import picks as picks_module
from annotator.adjudication.services import consensus_annotation, labels_agree
from annotator.labelling.models import Label, LabelKind
from audit.archive.models import Codebook, CodebookUnit, Study
from audit.conformance import run_suite
from audit.conformance.codebook import conformance_codebook
from audit.contract import check_record, codebook_from_dict
from audit.contract.canonical import canonical_json
from audit.contract.claim_alignment import claims_consensus
from audit.contract.endpoint import VERDICTS
from audit.contract.fields import check_annotation
from tests.contract.engine_records import (
    answer_claims_fixture_records,
    definition,
    protocol_annotations,
    source_risk_fixture_records,
)
from tests.contract.factories import reseal

FIELDS_FORMAT = 2

# --- the reference: consensus_annotation before the engine (a copy, kept only here) -------


def _old_merge_spans(annotations: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    merged: dict[str, dict[tuple, dict[str, Any]]] = {}
    for annotation in annotations:
        for judgment, spans in (annotation.get("spans") or {}).items():
            for span in spans:
                key = (span["snapshot"], span["start"], span["end"])
                merged.setdefault(judgment, {})[key] = span
    return {
        judgment: [spans[key] for key in sorted(spans)]
        for judgment, spans in sorted(merged.items())
    }


def old_consensus_annotation(*, study: Study, heads: Sequence[Label]) -> dict[str, Any]:
    annotations = [label.annotation for label in heads]
    first = annotations[0]
    common = {"kind": LabelKind.CONSENSUS.value, "annotator": "consensus", "assisted": None}
    definition = study.codebook.definition or {}
    if definition.get("format_version") == FIELDS_FORMAT:
        body = {
            **common,
            **picks_module.consensus_fields(definition, annotations),
            "rationale": None,
        }
        if "sides" in first:
            body["sides"] = dict(first["sides"])
        return body
    if study.codebook.unit == CodebookUnit.TUPLE:
        evidence = {
            key: {
                "value": fmean(a["evidence"][key]["value"] for a in annotations),
                "weight": first["evidence"][key]["weight"],
            }
            for key in first["evidence"]
        }
        return {
            **common,
            "predicates": dict(first["predicates"]),
            "passage_support": first["passage_support"],
            "source_role": first["source_role"],
            "spans": _old_merge_spans(annotations),
            "evidence": evidence,
            "rationale": None,
        }
    annotations = sorted(annotations, key=lambda a: str(a.get("annotator")))
    first = annotations[0]
    claims = claims_consensus([a.get("claims") or [] for a in annotations])
    verdicts = {
        key: {
            "value": first["verdicts"][key]["value"],
            "reason": " | ".join(
                reason for a in annotations if (reason := a["verdicts"][key].get("reason"))
            )
            or None,
        }
        for key in VERDICTS
    }
    return {**common, "claims": claims, "verdicts": verdicts, "rationale": None}


# --- agreeing label sets -----------------------------------------------------------------

#: Pseudonyms in an order that is not theirs (a10 sorts before a2), so that the order the
#: labels come in and the pseudonym order differ.
PSEUDONYMS = ("a2", "a10", "a1")


def _study(book: dict[str, Any]) -> Study:
    return Study(slug="s", codebook=Codebook(unit=book["unit"], definition=book))


def _labels(annotations: Sequence[dict[str, Any]]) -> list[Label]:
    return [Label(annotation={**a, "annotator": PSEUDONYMS[i]}) for i, a in enumerate(annotations)]


def _tuple_variants(annotation: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """``n`` annotations agreeing with ``annotation``: other evidence values, one span less
    or one more (a repeated span among them), as two annotators of one tuple differ."""
    out = []
    for i in range(n):
        a = copy.deepcopy(annotation)
        for step, entry in enumerate(a["evidence"].values()):
            entry["value"] = ((i + 1) * (step + 3) % 9) / 8
        for spans in a["spans"].values():
            if i == 1 and len(spans) == 1:
                span = spans[0]
                shorter = max(span["start"], span["end"] - 1)
                spans.append(
                    {**span, "end": shorter, "quote": span["quote"][: shorter - span["start"]]}
                )
            if i == 2:
                spans.append(dict(spans[0]))
        out.append(a)
    return out


def _answer_variants(annotation: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """Agreeing answer annotations: other reasons (some none, some empty), claims with
    other reasons and the same verdicts."""
    out = []
    for i in range(n):
        a = copy.deepcopy(annotation)
        if a["verdicts"] is not None:
            for step, entry in enumerate(a["verdicts"].values()):
                # Mostly given (so that their order shows), some none, some empty.
                entry["reason"] = {1: None, 2: ""}.get((i + step) % 4, f"r{i}-{step}")
        for claim in a["claims"]:
            claim["reason"] = None if i == 1 else f"claim reason {i}"
        out.append(a)
    return out


def _fields_variants(
    annotation: dict[str, Any], n: int, book: dict[str, Any]
) -> list[dict[str, Any]]:
    """Agreeing format-2 annotations: other reasons (per document too) and spans (on a
    field that takes them)."""
    cited = [
        f["code"]
        for f in book["fields"]
        if f.get("evidence", "none") != "none" and f.get("placement", "unit") == "unit"
    ]
    reasoned = {f["code"] for f in book["fields"] if f.get("reason", "none") != "none"}
    out = []
    for i in range(n):
        a = copy.deepcopy(annotation)
        codes = [str(code) for code in a.get("values") or {} if code in reasoned]
        if codes and i != 1:
            a["reasons"] = {**a.get("reasons", {}), codes[i % len(codes)]: f"because {i}"}
        if i == 2:
            a.pop("reasons", None)
        for index, document in enumerate(a.get("documents") or ()):
            document["reasons"] = {"support": f"doc {index} by {i}"} if (index + i) % 2 else {}
        if a.get("spans") is not None and cited and i == 0:
            a["spans"] = [
                {"field": cited[0], "snapshot": "answer", "start": 0, "end": 1, "quote": "x"}
            ]
        out.append(a)
    return out


def _same_bytes(study: Study, heads: list[Label]) -> dict[str, Any]:
    assert labels_agree(
        [h.annotation for h in heads], study.codebook.unit, study.codebook.definition
    )
    new = consensus_annotation(study=study, heads=heads)
    old = old_consensus_annotation(study=study, heads=heads)
    assert canonical_json(new) == canonical_json(old)
    return new


def _sealed(
    record: dict[str, Any], annotation: dict[str, Any], heads: Sequence[Label] = ()
) -> dict[str, Any]:
    """``record`` with ``annotation``, re-sealed; a consensus names its heads' records."""
    parents = sorted(_sealed(record, h.annotation)["record_digest"] for h in heads)
    return reseal({**copy.deepcopy(record), "annotation": annotation, "parents": parents})


@pytest.mark.parametrize("n", [2, 3])
def test_source_risk_fixture_consensus_is_unchanged(n):
    book = definition("source-risk-1.0.0")
    study = _study(book)
    registry = {(book["name"], book["version"]): codebook_from_dict(book)}
    for record in source_risk_fixture_records():
        heads = _labels(_tuple_variants(record["annotation"], n))
        for head in heads:
            assert check_record(_sealed(record, head.annotation), registry).ok
        consensus = _same_bytes(study, heads)
        result = check_record(_sealed(record, consensus, heads), registry)
        assert result.ok, result.message


def test_conformance_consensus_is_unchanged():
    book = conformance_codebook()
    study = _study(book)
    registry = {(book["name"], book["version"]): codebook_from_dict(book)}
    for record in run_suite().records:
        heads = _labels(_tuple_variants(record["annotation"], 3))
        consensus = _same_bytes(study, heads)
        assert check_record(_sealed(record, consensus, heads), registry).ok


@pytest.mark.parametrize("n", [2, 3])
def test_answer_claims_fixture_consensus_is_unchanged(n):
    book = definition("answer-claims-1.0.0")
    study = _study(book)
    registry = {(book["name"], book["version"]): codebook_from_dict(book)}
    complete = [r for r in answer_claims_fixture_records() if r["annotation"]["verdicts"]]
    assert complete
    for record in complete:
        heads = _labels(_answer_variants(record["annotation"], n))
        consensus = _same_bytes(study, heads)
        result = check_record(_sealed(record, consensus, heads), registry)
        assert result.ok, result.message


@pytest.mark.parametrize(
    "name",
    ["answer-rubric-1.0.0", "query-document-grades-1.0.0", "pairwise-1.0.0", "toxicity-1.0.0"],
)
@pytest.mark.parametrize("n", [2, 3])
def test_format_2_fixture_consensus_is_unchanged(name, n):
    book = definition(name)
    study = _study(book)
    codebook = codebook_from_dict(book)
    annotations = [a for code, a in protocol_annotations() if code == name]
    assert annotations
    for annotation in annotations:
        heads = _labels(_fields_variants(annotation, n, book))
        consensus = _same_bytes(study, heads)
        assert check_annotation(codebook, consensus) == []


def test_the_order_of_reasons_is_the_codebooks():
    """Format-1 answers join reasons in pseudonym order, format 2 in the labels' order (as
    they always did: the stored consensus digests do not move)."""
    answer = answer_claims_fixture_records()[0]["annotation"]
    annotations = []
    for reason in ("second", "third", "first"):  # by a2, a10, a1
        given = copy.deepcopy(answer)
        given["verdicts"]["cited"]["reason"] = reason
        annotations.append(given)
    book = definition("answer-claims-1.0.0")
    consensus = consensus_annotation(study=_study(book), heads=_labels(annotations))
    assert consensus["verdicts"]["cited"]["reason"] == "first | third | second"
    rubric = next(a for code, a in protocol_annotations() if code == "toxicity-1.0.0")
    labels = _labels(
        [
            {**rubric, "reasons": {"target": "first"}},  # by a2
            {**rubric, "reasons": {"target": "second"}},  # by a10
        ]
    )
    body = consensus_annotation(study=_study(definition("toxicity-1.0.0")), heads=labels)
    assert body["reasons"]["target"] == "first | second"


def test_a_failed_answers_consensus_is_a_failed_answer():
    """Agreeing labels of a failed answer (no claims, no verdicts) merge into the failed
    answer's annotation; before the engine the format-1 branch could not read them."""
    failed = next(r for r in answer_claims_fixture_records() if r["annotation"]["verdicts"] is None)
    book = definition("answer-claims-1.0.0")
    registry = {(book["name"], book["version"]): codebook_from_dict(book)}
    heads = _labels([failed["annotation"], failed["annotation"]])
    consensus = consensus_annotation(study=_study(book), heads=heads)
    assert (consensus["claims"], consensus["verdicts"]) == ([], None)
    assert check_record(_sealed(failed, consensus, heads), registry).ok
    rubric = definition("answer-rubric-1.0.0")
    common = {"kind": "independent", "annotator": "a1", "assisted": None, "rationale": None}
    heads = _labels([{**common, "values": None}, {**common, "values": None}])
    body = consensus_annotation(study=_study(rubric), heads=heads)
    assert (body["values"], body["reasons"], body["spans"]) == (None, {}, [])
    # Before: values {}, which the record checker refuses for a failed answer (null).
    assert old_consensus_annotation(study=_study(rubric), heads=heads)["values"] == {}


CLAIMS_BOOK: dict[str, Any] = {
    "claimgate": "codebook",
    "format_version": 2,
    "name": "claims-fields",
    "version": "1",
    "unit": "answer",
    "title": "Claims as a field",
    "fields": [
        {"code": "harmful", "type": "verdict", "label": "Harmful"},
        {"code": "claims", "type": "claims", "label": "Claims"},
    ],
}


def _claim(claim_id: str, start: int, end: int, reason: str | None) -> dict[str, Any]:
    text = "The museum opens at 9 am on Sundays."
    return {
        "id": claim_id,
        "span": {"snapshot": "answer", "start": start, "end": end, "quote": text[start:end]},
        "source": None,
        "quote_span": None,
        "kind": "verifiable",
        "reason": reason,
        "supported": None,
        "accurate": None,
    }


def test_a_format_2_claims_fields_consensus_aligns_the_claims_by_content():
    """A claims field of a format-2 codebook takes the aligned claims of every annotator
    (claims_consensus: decided by content, reasons joined, numbered in answer order),
    whichever label came first."""
    common = {"kind": "independent", "assisted": None, "rationale": None}
    first = {**common, "values": {"harmful": False, "claims": [_claim("x9", 4, 16, "mine")]}}
    second = {**common, "values": {"harmful": False, "claims": [_claim("k", 0, 16, "theirs")]}}
    study = _study(CLAIMS_BOOK)
    heads = _labels([first, second])
    assert labels_agree([h.annotation for h in heads], "answer", CLAIMS_BOOK)
    body = consensus_annotation(study=study, heads=heads)
    swapped = consensus_annotation(study=study, heads=_labels([second, first]))
    assert body["values"]["claims"] == swapped["values"]["claims"]
    assert body["values"]["claims"] == [{**_claim("c1", 0, 16, None), "reason": "theirs | mine"}]
    assert check_annotation(codebook_from_dict(CLAIMS_BOOK), body) == []
