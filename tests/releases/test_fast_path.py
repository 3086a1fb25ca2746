"""The compiled path of a release build writes the reference path's bytes.

``bundle_write(reference=True)`` parses and serializes every value with the standard
library only; the default path parses labels with orjson, writes records and table lines
with it where its bytes are the canonical ones (checked against each record's digest) and
writes tables column by column. Both must give the same files, byte for byte, on studies
whose labels hold what orjson writes otherwise (floats below 1e-4, non-ASCII text, text
with ``e-`` and ``0.0000`` in it).
"""

from __future__ import annotations

import uuid

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit.archive.models import Unit
from audit.archive.records import UNIT_VALUES, record_build, unit_contents_of
from audit.contract.canonical import canonical_json_unchecked
from audit.releases import formats as rf
from audit.releases.services import _parsed, _record_line, bundle_write
from tests.annotation.annotations import source_risk
from tests.releases.conftest import labelled_study


def files_of(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def _both_ways(study, tmp_path):
    fast = bundle_write(study=study, name="v1", directory=tmp_path / "fast")
    reference = bundle_write(study=study, name="v1", directory=tmp_path / "ref", reference=True)
    return fast, reference


def test_a_labelled_study_gives_the_same_bytes_both_ways(db, releases_root, tmp_path):
    study = labelled_study().study
    fast, reference = _both_ways(study, tmp_path)
    assert files_of(tmp_path / "fast") == files_of(tmp_path / "ref")
    assert fast.files == reference.files
    assert fast.files[rf.RECORDS]["bytes"] > 0


def test_withheld_texts_give_the_same_bytes_both_ways(db, releases_root, tmp_path):
    study = labelled_study().study
    for where, reference in (("fast", False), ("ref", True)):
        bundle_write(
            study=study,
            name="v1",
            directory=tmp_path / where,
            withhold_texts=True,
            reference=reference,
        )
    assert files_of(tmp_path / "fast") == files_of(tmp_path / "ref")
    assert b'"quote_sha256"' in (tmp_path / "fast" / rf.RECORDS).read_bytes()


def test_answer_claims_give_the_same_bytes_both_ways(claims_labelled, tmp_path):
    _both_ways(claims_labelled, tmp_path)
    assert files_of(tmp_path / "fast") == files_of(tmp_path / "ref")


def test_values_orjson_writes_otherwise_give_the_same_bytes(db, releases_root, tmp_path):
    labelled = labelled_study()
    study = labelled.study
    user = labelled.people["ann_a"]
    assignment = assignment_next(study=study, annotator=user)
    annotation = source_risk(
        unit_content(unit=assignment.unit),
        rationale="Ünïcode ✓ 💶, a self-made e-mail, 0.00001 and 3e-7 as text",
    )
    annotation["evidence"] = {"d_Q": 1e-05, "d_R": 9.99e-05, "d_P": 0.0001, "d_S": 5e-324}
    label = label_submit(
        assignment=assignment,
        annotation=annotation,
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label
    label_submitted.run(label.pk)

    _both_ways(study, tmp_path)
    assert files_of(tmp_path / "fast") == files_of(tmp_path / "ref")
    records = (tmp_path / "fast" / rf.RECORDS).read_bytes()
    assert b'"d_Q":{"value":1e-05' in records or b'"d_Q":1e-05' in records


def test_a_label_orjson_parses_otherwise_falls_back_to_the_standard_parser(db, releases_root):
    # orjson reads an integer outside 64 bits as a float: the record then hashes to another
    # digest, and the line comes from the standard parser and encoder instead.
    study = labelled_study().study
    unit = Unit.objects.filter(study=study).order_by("id").values(*UNIT_VALUES).first()
    content = unit_contents_of(study=study, units=[unit])[unit["id"]]
    annotation = {"kind": "independent", "annotator": "a-1", "note": 2**70, "w": 1e-7}
    record = record_build(study=study, content=content, annotation=annotation, parents=[])
    text = canonical_json_unchecked(annotation).decode("utf-8")
    label = {
        "annotation_text": text,
        "parents_text": "[]",
        "record_digest": record["record_digest"],
    }
    _parsed(label, reference=False)
    assert label["fast"]
    assert type(label["annotation"]["note"]) is float

    built, line = _record_line(study, content, label)

    assert line == canonical_json_unchecked(record) + b"\n"
    assert type(built["annotation"]["note"]) is int
    assert label["fast"] is False


def test_the_labels_of_a_unit_share_its_serialized_part(db, releases_root):
    # The unit's part of a record is serialized once; each label's line splices its
    # annotation and parents around it and is the canonical record, digest included.
    study = labelled_study().study
    unit = Unit.objects.filter(study=study).order_by("id").values(*UNIT_VALUES).first()
    content = unit_contents_of(study=study, units=[unit])[unit["id"]]
    first = record_build(
        study=study,
        content=content,
        annotation={"kind": "independent", "annotator": "a-1", "note": "é 💶", "w": 0.25},
        parents=[],
    )
    second = record_build(
        study=study,
        content=content,
        annotation={"kind": "independent", "annotator": "a-1", "w": 3e-7},
        parents=[first["record_digest"]],
    )
    shared: dict = {}
    for record in (first, second):
        label = {
            "annotation_text": canonical_json_unchecked(record["annotation"]).decode("utf-8"),
            "parents_text": canonical_json_unchecked(record["parents"]).decode("utf-8"),
            "record_digest": record["record_digest"],
        }
        _parsed(label, reference=False)
        built, line = _record_line(study, content, label, shared)
        assert line == canonical_json_unchecked(record) + b"\n"
        assert built == record
    assert list(shared) == [unit["id"]]
