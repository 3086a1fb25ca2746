"""Releases report gold labels in their own table, never in the label tables, the
records or the outcomes."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from annotator.labelling.models import Label, LabelKind
from annotator.quality.services import gold_mark_from_file, quality_plan_set
from audit.releases import formats as rf
from audit.releases.services import bundle_write
from tests.quality.conftest import RIGHT, WRONG, answer, key_file

pytestmark = pytest.mark.django_db


def _jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_gold_labels_are_in_their_own_table_only(study, people, units, tmp_path):
    gold_mark_from_file(study=study, data=key_file(units[:2], qualification=True))
    quality_plan_set(study=study, gold_rate=0.0, qualification_size=2, qualification_threshold=0.5)
    answer(study, people["ann_a"], RIGHT)
    answer(study, people["ann_a"], WRONG)
    answer(study, people["ann_a"])  # qualified: a real unit, then B on the same one
    answer(study, people["ann_b"], RIGHT)
    answer(study, people["ann_b"], RIGHT)
    answer(study, people["ann_b"])
    gold_digests = set(
        Label.objects.filter(kind=LabelKind.GOLD).values_list("record_digest", flat=True)
    )
    assert len(gold_digests) == 4

    directory = tmp_path / "bundle"
    bundle_write(study=study, name="v1", directory=directory)

    gold = _jsonl(directory / "labels_gold.jsonl")
    assert {row["record_digest"] for row in gold} == gold_digests
    assert {row["kind"] for row in gold} == {"gold"}
    assert sorted(row["gold_right"] for row in gold) == [False, True, True, True]
    assert gold[0]["gold_key"] == {"A": "1", "D": "0", "I": "1", "M": "1"}
    assert pq.read_table(directory / "labels_gold.parquet").num_rows == 4
    for name in ("labels_independent.jsonl", "labels_final.jsonl", "outcomes.jsonl"):
        assert not gold_digests & {row["record_digest"] for row in _jsonl(directory / name)}
    records = _jsonl(directory / rf.RECORDS)[1:]
    assert not gold_digests & {record["record_digest"] for record in records}
    assert len(records) == 3  # two independent labels and their consensus
    assert "| gold labels (their own table) | 4 |" in (directory / rf.README).read_text()
    assert "labels_gold.csv" in (directory / rf.MANIFEST).read_text()
