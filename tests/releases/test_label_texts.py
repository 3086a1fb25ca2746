"""Each label's annotation stored as its canonical text (``Label.annotation_canonical``,
annotator 0012): made by every path that writes labels, filled once for the labels stored
before it, and written into a release's record line only when the line hashes to the
label's record digest (else the line is serialized as before: the reference's bytes).
"""

from __future__ import annotations

import importlib

import pytest
from django.apps import apps
from django.db import IntegrityError, connection, transaction

from annotator.labelling.models import Label, LabelKind
from audit.archive import bulk
from audit.contract.canonical import canonical_json
from audit.releases.services import bundle_write
from tests.releases.conftest import labelled_study
from tests.releases.test_fast_path import files_of

MIGRATION = importlib.import_module("annotator.migrations.0012_label_annotation_canonical")


def _canonical(annotation) -> str:
    return canonical_json(annotation).decode("utf-8")


def test_every_label_written_has_its_canonical_text(db, releases_root):
    # Submissions (the labelling service's one-statement write on PostgreSQL, the ORM on
    # SQLite), consensus (bulk_create) and adjudication (create).
    study = labelled_study().study
    labels = list(Label.objects.filter(study=study))
    assert {label.kind for label in labels} >= {
        LabelKind.INDEPENDENT,
        LabelKind.CONSENSUS,
        LabelKind.ADJUDICATED,
    }
    for label in labels:
        assert label.annotation_canonical == _canonical(label.annotation)


def test_a_bulk_insert_of_labels_makes_their_texts(db, releases_root):
    # The path of the records import and the benchmarks: rows given as dicts.
    study = labelled_study().study
    label = Label.objects.filter(study=study).order_by("id").first()
    annotation = {**label.annotation, "rationale": "é 💶", "w": 3e-7}
    row = {
        "study_id": study.pk,
        "unit_id": label.unit_id,
        "kind": LabelKind.GOLD,
        "revision": 9,
        "annotation": annotation,
        "parents": [],
        "record_digest": "f" * 64,
        "codebook_digest": label.codebook_digest,
        "created_at": label.created_at,
    }
    ids = bulk.insert(Label, [row], returning="record_digest", study_id=study.pk)
    stored = Label.objects.get(pk=ids["f" * 64])
    assert stored.annotation_canonical == _canonical(annotation)
    assert '"w":3e-07' in stored.annotation_canonical


def test_a_value_without_canonical_text_stores_none(db):
    field = Label._meta.get_field("annotation_canonical")
    assert field.text_of({"x": float("nan")}) is None
    assert field.text_of({1: "a non-string key"}) is None
    assert field.text_of({"b": [1, 2.5], "a": None}) == '{"a":null,"b":[1,2.5]}'


def test_the_text_is_never_updated(db, releases_root):
    study = labelled_study().study
    with pytest.raises(IntegrityError, match="refused"), transaction.atomic():
        Label.objects.filter(study=study).update(annotation_canonical="{}")


def _set_texts(texts: dict[int, str | None]) -> None:
    """Labels' stored texts changed behind the append-only rule (as rows stored before the
    column existed, or a wrong text)."""
    with connection.cursor() as cursor:
        # No ALTER TABLE while the test's deferred foreign-key checks are pending.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("ALTER TABLE annotator_label DISABLE TRIGGER annotator_label_refuse_update")
        for pk, text in texts.items():
            cursor.execute(
                "UPDATE annotator_label SET annotation_canonical = %s WHERE id = %s", [text, pk]
            )
        cursor.execute("ALTER TABLE annotator_label ENABLE TRIGGER annotator_label_refuse_update")


@pytest.mark.postgres
def test_missing_or_wrong_texts_still_give_the_reference_bytes(db, releases_root, tmp_path):
    study = labelled_study().study
    first, second, third = Label.objects.filter(study=study).order_by("id")[:3]
    # One label without a text, one with another label's text, one with its value's text
    # written otherwise (spaces: not the bytes its record embeds).
    _set_texts(
        {
            first.pk: None,
            second.pk: third.annotation_canonical,
            third.pk: third.annotation_canonical.replace(":", ": "),
        }
    )

    bundle_write(study=study, name="v1", directory=tmp_path / "fast")
    bundle_write(study=study, name="v1", directory=tmp_path / "ref", reference=True)

    assert files_of(tmp_path / "fast") == files_of(tmp_path / "ref")


def test_the_migration_fills_the_labels_stored_before_it(transactional_db, releases_root):
    # Outside a transaction: SQLite's schema editor turns its foreign-key checks off.
    study = labelled_study().study
    labels = list(Label.objects.filter(study=study).order_by("id"))
    if connection.vendor == "postgresql":
        _set_texts({label.pk: None for label in labels})
    else:  # SQLite: the rule lifted as the migration lifts it
        with connection.schema_editor() as editor:
            MIGRATION.uninstall(MIGRATION.UPDATE_RULE)(apps, editor)
        Label.objects.filter(study=study).update(annotation_canonical=None)
        with connection.schema_editor() as editor:
            MIGRATION.install(MIGRATION.UPDATE_RULE)(apps, editor)
    assert not Label.objects.filter(study=study, annotation_canonical__isnull=False).exists()

    with connection.schema_editor() as editor:
        MIGRATION.fill(apps, editor)

    for label in Label.objects.filter(study=study):
        assert label.annotation_canonical == _canonical(label.annotation)
    # The append-only rule is back.
    with pytest.raises(IntegrityError, match="refused"), transaction.atomic():
        Label.objects.filter(study=study).update(annotation_canonical="{}")
