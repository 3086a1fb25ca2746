"""Records assembled from stored canonical texts (audit.releases.record_texts) are the
canonical encoder's bytes, and a release that reads them writes the reference's bytes.

The pure part: any tuple record body, cut into the unit's texts, the study's constant
members and a label's annotation and parents, reassembles to
:func:`audit.contract.canonical.canonical_json` of the sealed record (hypothesis). The
database part (PostgreSQL, where the texts are stored and read): the stored texts are
the canonical texts of each unit's members as the ORM reads them, stored once, never
updated; a release with missing or wrong texts still writes the reference's bytes.
"""

from __future__ import annotations

import hashlib
from types import SimpleNamespace

import pytest
from django.db import IntegrityError, transaction
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.archive.models import CodebookUnit, Unit
from audit.archive.records import UNIT_VALUES, UnitContent, record_body, unit_contents_of
from audit.contract.canonical import canonical_json
from audit.releases import record_texts
from audit.releases.models import UnitRecordText
from audit.releases.services import _constant_text, bundle_write, unit_record_texts_store
from tests.contract.test_canonical_fast import json_values, text
from tests.releases.conftest import labelled_study
from tests.releases.test_fast_path import files_of

objects = st.dictionaries(text, json_values, max_size=6)


def _sealed_line(body: dict) -> tuple[str, bytes]:
    """The record line as the record's sealing makes it: the canonical encoder's bytes of
    the body, then of the body with its digest."""
    digest = hashlib.sha256(canonical_json(body)).hexdigest()
    return digest, canonical_json({**body, "record_digest": digest}) + b"\n"


@settings(max_examples=300)
@given(
    annotation=objects,
    parents=st.lists(st.text(max_size=64), max_size=3),
    answer=objects,
    query=objects,
    pipeline=objects,
    source=objects,
    sampling=st.none() | objects,
    digest=text,
    codebook=st.tuples(text, text),
)
def test_a_record_assembled_from_texts_is_the_canonical_record(
    annotation, parents, answer, query, pipeline, source, sampling, digest, codebook
):
    study = SimpleNamespace(codebook=SimpleNamespace(name=codebook[0], version=codebook[1]))
    content = UnitContent(
        unit_id=1,
        codebook_unit=CodebookUnit.TUPLE,
        digest=digest,
        query=query,
        pipeline=pipeline,
        answer=answer,
        sources=[source],
        sampling=sampling,
    )
    body = record_body(study=study, content=content, annotation=annotation, parents=parents)
    record_digest, expected = _sealed_line(body)
    unit_answer, head, tail = record_texts.unit_texts(body)

    texts = {
        "annotation": canonical_json(annotation),
        "parents": canonical_json(parents),
        "answer": unit_answer,
        "constant": _constant_text(study),
        "head": head,
        "tail": tail,
    }

    assert record_texts.record_line(**texts, record_digest=record_digest) == expected
    assert record_texts.record_line(**texts, record_digest="0" * 64) is None


def test_only_a_tuple_record_is_cut_into_texts():
    with pytest.raises(record_texts.NotATupleRecord):
        record_texts.unit_texts({"answer": {}, "documents": [], "unit_digest": "x"})


def test_the_cut_follows_the_sorted_order_of_the_members():
    order = sorted(record_texts.UNIT_KEYS | {"annotation", "parents", "record_digest"})
    assert order == [
        "annotation",
        *record_texts.ANSWER,
        *record_texts.CONSTANT,
        "parents",
        *record_texts.HEAD,
        "record_digest",
        *record_texts.TAIL,
    ]


@pytest.mark.postgres
def test_the_stored_texts_are_the_canonical_texts_of_the_orm_values(db, releases_root):
    study = labelled_study().study
    units = list(Unit.objects.filter(study=study).values(*UNIT_VALUES))
    ids = [unit["id"] for unit in units]

    texts = unit_record_texts_store(study=study, unit_ids=ids)
    again = unit_record_texts_store(study=study, unit_ids=ids)  # one row per unit, kept

    assert again == texts
    contents = unit_contents_of(study=study, units=units)
    stored = {row.unit_id: row for row in UnitRecordText.objects.filter(unit__study=study)}
    assert set(stored) == set(contents) == set(texts)
    for unit_id, content in contents.items():
        body = record_body(study=study, content=content, annotation={}, parents=[])
        row = stored[unit_id]
        for column, keys in (
            ("answer", record_texts.ANSWER),
            ("head", record_texts.HEAD),
            ("tail", record_texts.TAIL),
        ):
            members = canonical_json({key: body[key] for key in keys})[1:-1]
            assert getattr(row, column).encode("utf-8") == members
            assert getattr(texts[unit_id], column) == members


def _store_all(study):
    ids = list(Unit.objects.filter(study=study).values_list("id", flat=True))
    unit_record_texts_store(study=study, unit_ids=ids)


@pytest.mark.postgres
def test_stored_texts_are_never_updated(db, releases_root):
    study = labelled_study().study
    _store_all(study)
    with pytest.raises(IntegrityError, match="refused"), transaction.atomic():
        UnitRecordText.objects.filter(unit__study=study).update(answer='"answer":{}')


@pytest.mark.postgres
def test_missing_or_wrong_texts_still_give_the_reference_bytes(db, releases_root, tmp_path):
    study = labelled_study().study
    _store_all(study)
    first, second = UnitRecordText.objects.filter(unit__study=study).order_by("unit_id")[:2]
    # One unit without texts (filled again by the build), one with a text that is not its
    # own (every line of it fails the digest check and is rebuilt from the archive).
    UnitRecordText.objects.filter(unit_id=first.unit_id).delete()
    UnitRecordText.objects.filter(unit_id=second.unit_id).delete()
    UnitRecordText.objects.create(
        unit_id=second.unit_id, answer=first.answer, head=first.head, tail=first.tail
    )

    bundle_write(study=study, name="v1", directory=tmp_path / "fast")
    bundle_write(study=study, name="v1", directory=tmp_path / "ref", reference=True)

    assert files_of(tmp_path / "fast") == files_of(tmp_path / "ref")
    assert UnitRecordText.objects.filter(unit_id=first.unit_id).exists()
