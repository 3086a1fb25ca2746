"""Release label columns from the engine (audit.releases.formats.label_table and
label_cells over audit.contract.engine.engine_of), for every codebook: format 1 keeps
exactly the columns, order, types and cells its releases always had (the per-codebook
lists they came from are kept here, and only here, as the reference); format 2 keeps its
field columns. Pure: no database."""

from __future__ import annotations

from typing import Any

import pytest

from audit.contract import codebook_from_dict
from audit.contract.endpoint import VERDICTS
from audit.contract.engine import engine_of
from audit.releases import formats as rf
from tests.contract.engine_records import (
    answer_claims_fixture_records,
    definition,
    protocol_annotations,
    source_risk_fixture_records,
)
from tests.contract.factories import make_answer_record, make_record

# --- the reference: the per-codebook columns and cells before the engine ------------------

OLD_SOURCE_RISK = (
    ("I", "int"),
    ("A", "int"),
    ("M", "int"),
    ("D", "int"),
    ("passage_support", "int"),
    ("source_role", "string"),
    ("spans", "json"),
    ("evidence", "json"),
    ("rationale", "string"),
)
OLD_ANSWER_CLAIMS = (
    *((key, "bool") for key in VERDICTS),
    ("claim_count", "int"),
    ("claims", "json"),
    ("verdicts", "json"),
    ("rationale", "string"),
)


def old_cells(annotation: dict[str, Any], kind: str) -> dict[str, Any]:
    row: dict[str, Any] = {"rationale": annotation.get("rationale")}
    if kind == "tuple":
        predicates = annotation.get("predicates") or {}
        row.update({key: predicates.get(key) for key in "IAMD"})
        row["passage_support"] = annotation.get("passage_support")
        row["source_role"] = annotation.get("source_role")
        row["spans"] = annotation.get("spans")
        row["evidence"] = annotation.get("evidence")
    else:
        verdicts = annotation.get("verdicts")
        for key in VERDICTS:
            verdict = (verdicts or {}).get(key)
            row[key] = verdict.get("value") if isinstance(verdict, dict) else None
        claims = annotation.get("claims") or []
        row["claim_count"] = len(claims)
        row["claims"] = claims
        row["verdicts"] = verdicts
    return row


def new_cells(engine: Any, annotation: dict[str, Any]) -> dict[str, Any]:
    return {"rationale": annotation.get("rationale"), **rf.label_cells(engine, annotation)}


COMMON = rf.label_table("labels_final", "tuple").columns[:10]


@pytest.mark.parametrize(
    ("book", "unit", "old"),
    [
        (definition("source-risk-1.0.0"), "tuple", OLD_SOURCE_RISK),
        (definition("answer-claims-1.0.0"), "answer", OLD_ANSWER_CLAIMS),
        (None, "tuple", OLD_SOURCE_RISK),
        (None, "answer", OLD_ANSWER_CLAIMS),
    ],
)
@pytest.mark.parametrize("name", ["labels_independent", "labels_final", "labels_gold"])
def test_format_1_columns_are_todays(book, unit, old, name):
    gold = (("gold_key", "json"), ("gold_right", "bool")) if name == "labels_gold" else ()
    table = rf.label_table(name, unit, engine_of(book, unit=unit))
    assert table.columns == COMMON + old + gold
    assert rf.label_table(name, unit).columns == table.columns


def _annotations(unit: str) -> list[dict[str, Any]]:
    if unit == "tuple":
        records = [
            *source_risk_fixture_records(),
            make_record(),
            make_record(predicates=(None, None, 1, None), passage_support=None),
        ]
    else:
        records = [
            *answer_claims_fixture_records(),
            make_answer_record(),
            make_answer_record(failed=True),
        ]
    annotations = [r["annotation"] for r in records]
    # Labels as a release reads them, sound or not: parts missing, verdicts not objects.
    annotations += [{"kind": "independent", "annotator": "a1"}, {"predicates": None}]
    annotations += [{"verdicts": {"cited": "yes", "supported": {}}, "claims": None}]
    return annotations


@pytest.mark.parametrize(
    ("name", "unit"), [("source-risk-1.0.0", "tuple"), ("answer-claims-1.0.0", "answer")]
)
def test_format_1_cells_are_todays(name, unit):
    engine = engine_of(definition(name))
    columns = set(rf.label_table("labels_final", unit, engine).names) - {n for n, _ in COMMON}
    for annotation in _annotations(unit):
        cells = new_cells(engine, annotation)
        assert cells == old_cells(annotation, unit)
        assert set(cells) == columns


@pytest.mark.parametrize(
    "name",
    ["answer-rubric-1.0.0", "query-document-grades-1.0.0", "pairwise-1.0.0", "toxicity-1.0.0"],
)
def test_format_2_columns_and_cells_are_its_fields(name):
    book = definition(name)
    codebook = codebook_from_dict(book)
    engine = engine_of(book)
    table = rf.label_table("labels_final", book["unit"], engine)
    assert table.columns == COMMON + rf.field_columns(codebook)
    for code, annotation in protocol_annotations():
        if code == name:
            assert rf.label_cells(engine, annotation) == rf.field_cells(codebook, annotation)
