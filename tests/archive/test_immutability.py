"""Snapshots and codebooks in use cannot be edited, whatever writes to the database."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from audit.archive.models import AnswerSnapshot, Codebook, Query, SourceSnapshot
from audit.archive.services import observations_import
from tests.archive.builders import jsonl, observation

pytestmark = pytest.mark.django_db


@pytest.fixture
def imported(study):
    observations_import(study=study, data=jsonl(observation(1)), file_name="a.jsonl")


@pytest.mark.parametrize("model", [AnswerSnapshot, SourceSnapshot, Query])
def test_the_orm_cannot_edit_an_archive_row(imported, model):
    row = model.objects.first()
    row.text = "rewritten"
    with pytest.raises(IntegrityError, match="refused"), transaction.atomic():
        row.save()


def test_raw_sql_cannot_edit_a_snapshot_either(imported):
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE audit_sourcesnapshot SET text = 'rewritten'")
    assert not SourceSnapshot.objects.filter(text="rewritten").exists()


def test_a_codebook_in_use_is_immutable(study):
    with pytest.raises(IntegrityError), transaction.atomic():
        Codebook.objects.filter(pk=study.codebook_id).update(title="changed")


def test_an_unused_codebook_may_still_be_corrected(codebooks):
    unused = codebooks["answer-claims-1.0.0"]
    Codebook.objects.filter(pk=unused.pk).update(title="corrected")
    assert Codebook.objects.get(pk=unused.pk).title == "corrected"
