"""The release build's plain-SQL read (audit.releases.selectors) gives what the ORM gives.

A release of tuple units on PostgreSQL reads units, labels and ledger entries by one
streamed query; the reference build (``bundle_write(reference=True)``) still reads them
through the ORM, so every byte comparison of the two builds (test_fast_path.py) also
compares the two reads. These tests compare the read values themselves, and cover the
read on a connection of its own (outside a transaction, as a worker builds a release).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection

from annotator.labelling.models import Label
from audit.archive.mapping import format_instant
from audit.archive.models import Partition, Unit
from audit.archive.records import UNIT_VALUES, unit_contents_of
from audit.contract.canonical import canonical_json
from audit.releases import selectors
from audit.releases.services import _labels_orm, bundle_write, unit_record_texts_store
from tests.releases.conftest import labelled_study
from tests.releases.test_label_texts import _set_texts

pytestmark = pytest.mark.postgres

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _raw(study, *, exclude_test: bool, chunk: int = 2):
    return list(
        selectors.tuple_chunks_raw(
            study_id=study.pk,
            codebook_unit=study.codebook.unit,
            exclude_test=exclude_test,
            chunk=chunk,
            label_cutoff=10**12,
            ledger_cutoff=10**12,
        )
    )


def _orm(study, *, exclude_test: bool):
    units = Unit.objects.filter(study=study)
    if exclude_test:
        units = units.exclude(partition=Partition.TEST)
    rows = list(units.order_by("digest").values(*UNIT_VALUES))
    labels = _labels_orm(units=rows, label_cutoff=10**12, ledger_cutoff=10**12)
    for label in labels:
        label["created_key"] = (label["created_key"] - EPOCH) // timedelta(microseconds=1)
    return rows, unit_contents_of(study=study, units=rows), labels


@pytest.mark.parametrize("exclude_test", [False, True])
def test_the_raw_read_gives_the_orm_values(db, releases_root, exclude_test):
    study = labelled_study().study
    chunks = _raw(study, exclude_test=exclude_test)
    rows, contents, labels = _orm(study, exclude_test=exclude_test)

    units = [unit for chunk_units, _, _ in chunks for unit in chunk_units]
    assert units == [
        {key: row[key] for key in ("id", "digest", "partition", "state")} for row in rows
    ]
    raw_contents = {key: value for _, chunk, _ in chunks for key, value in chunk.items()}
    assert raw_contents == contents
    raw_labels = sorted((label for _, _, chunk in chunks for label in chunk), key=lambda x: x["id"])
    assert raw_labels == sorted(labels, key=lambda label: label["id"])
    assert any(label["outcome"] is not None for label in raw_labels)
    assert len(chunks) > 1  # several chunks, every unit in one of them once
    assert all(
        {label["unit_id"] for label in chunk_labels} <= {unit["id"] for unit in chunk_units}
        for chunk_units, _, chunk_labels in chunks
    )


def test_instants_are_written_as_format_instant_writes_them(db):
    instants = [
        datetime(2026, 5, 2, 10, 0, 0, tzinfo=UTC),
        datetime(2026, 5, 2, 10, 0, 0, 120000, tzinfo=UTC),
        datetime(2026, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
        datetime(999, 1, 1, 0, 0, 0, 999999, tzinfo=UTC),
    ]
    with connection.cursor() as cursor:
        for instant in instants:
            cursor.execute(
                f"SELECT {selectors._instant('x')} FROM (SELECT %s::timestamptz AS x) v",  # noqa: S608
                [instant],
            )
            assert cursor.fetchone()[0] == format_instant(instant)


@pytest.fixture
def committed(transactional_db, settings, tmp_path):
    settings.RELEASES_ROOT = tmp_path / "releases"
    return labelled_study("relcommitted").study


def test_outside_a_transaction_the_read_has_its_own_connection(committed, tmp_path):
    # As a worker builds a release: no transaction open, so the server-side cursor runs on
    # a read-only connection of its own, and the bytes are still the reference's.
    assert not connection.in_atomic_block
    fast = bundle_write(study=committed, name="v1", directory=tmp_path / "fast")
    reference = bundle_write(study=committed, name="v1", directory=tmp_path / "ref", reference=True)
    assert fast.files == reference.files
    assert fast.files["records.jsonl"]["bytes"] > 0


def _stored_chunks(study) -> list:
    return list(
        selectors.tuple_chunks_raw(
            study_id=study.pk,
            codebook_unit=study.codebook.unit,
            exclude_test=False,
            chunk=2,
            label_cutoff=10**12,
            ledger_cutoff=10**12,
            stored=True,
        )
    )


def test_the_stored_read_gives_the_same_units_and_labels_and_each_units_texts(db, releases_root):
    study = labelled_study().study
    ids = list(Unit.objects.filter(study=study).values_list("id", flat=True))
    missing = _stored_chunks(study)
    assert all(texts is None for _, chunk, _ in missing for texts in chunk.values())
    stored = unit_record_texts_store(study=study, unit_ids=ids)

    chunks = _stored_chunks(study)
    joined = _raw(study, exclude_test=False)

    assert [units for units, _, _ in chunks] == [units for units, _, _ in joined]
    stored_labels = [label for _, _, labels in chunks for label in labels]
    joined_labels = [label for _, _, labels in joined for label in labels]
    # The same labels; the annotation's text is the label's stored canonical text (the
    # canonical serialization of the same value) instead of its jsonb's text.
    assert [_but_annotation(label) for label in stored_labels] == [
        _but_annotation(label) for label in joined_labels
    ]
    assert stored_labels
    assert all(label["canonical"] for label in stored_labels)
    assert not any(label["canonical"] for label in joined_labels)
    for label, other in zip(stored_labels, joined_labels, strict=True):
        value = json.loads(other["annotation_text"])
        assert label["annotation_text"] == canonical_json(value)
    assert {key: value for _, chunk, _ in chunks for key, value in chunk.items()} == stored


def _but_annotation(label: dict) -> dict:
    return {k: v for k, v in label.items() if k not in ("annotation_text", "canonical")}


def test_a_label_without_canonical_text_is_read_by_its_jsonb(db, releases_root):
    # Labels stored before the column existed (or whose value has no canonical text):
    # the stored read gives the jsonb's text, and the release's bytes are the reference's.
    study = labelled_study().study
    first = Label.objects.filter(study=study).order_by("id").first()
    _set_texts({first.pk: None})
    labels = [label for _, _, chunk in _stored_chunks(study) for label in chunk]
    assert [label["canonical"] for label in labels].count(False) == 1
    assert all(json.loads(label["annotation_text"]) for label in labels)
