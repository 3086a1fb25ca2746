"""Submissions: checked by the contract, idempotent, revision-aware, append-only."""

from __future__ import annotations

import copy
import uuid

import pytest
from django.db import IntegrityError, connection, transaction

from annotator.labelling.models import Draft, Label
from annotator.labelling.selectors import label_head, unit_content
from annotator.labelling.services import (
    DraftConflict,
    LabelRefused,
    RevisionUnchanged,
    StaleRevision,
    assignment_next,
    draft_save,
    label_submit,
    record_build,
)
from audit.archive.models import UnitState
from audit.archive.selectors import codebook_registry
from audit.contract import check_record, codes
from tests.annotation.annotations import answer_claims, source_risk
from tests.annotation.conftest import add_people, assign

pytestmark = pytest.mark.django_db


@pytest.fixture
def assignment(risk_study, people):
    return assignment_next(study=risk_study, annotator=people["ann_a"])


def submit(assignment, annotation=None, *, sid=None, parent=None):
    content = unit_content(unit=assignment.unit)
    return label_submit(
        assignment=assignment,
        annotation=annotation if annotation is not None else source_risk(content),
        client_submission_id=sid or uuid.uuid4(),
        parent_digest=parent,
    )


def test_a_submitted_label_is_a_record_the_checker_accepts(assignment, risk_study):
    label = submit(assignment).label

    content = unit_content(unit=assignment.unit)
    record = record_build(
        study=risk_study, content=content, annotation=label.annotation, parents=label.parents
    )
    result = check_record(record, codebook_registry())
    assert result.ok, result.message
    assert result.record_digest == label.record_digest
    assert result.endpoint == 1
    assert label.annotation["annotator"].startswith("a-")
    assert label.annotation["evidence"]["d_Q"] == {"value": 0.5, "weight": 0.25}
    assignment.refresh_from_db()
    assert assignment.submitted_at is not None
    assignment.unit.refresh_from_db()
    assert (assignment.unit.submitted_count, assignment.unit.state) == (
        1,
        UnitState.PARTIALLY_LABELLED,
    )


def test_the_same_client_submission_twice_stores_one_label(assignment):
    sid = uuid.uuid4()
    first = submit(assignment, sid=sid)
    second = submit(assignment, sid=sid)
    assert (first.replayed, second.replayed) == (False, True)
    assert second.label.pk == first.label.pk
    assert Label.objects.count() == 1


def test_a_revision_points_to_its_parent_and_keeps_the_old_label(assignment):
    first = submit(assignment).label
    content = unit_content(unit=assignment.unit)
    revised = submit(
        assignment, source_risk(content, rationale="second look"), parent=first.record_digest
    ).label

    assert revised.revision == 2
    assert revised.parents == [first.record_digest]
    assert revised.record_digest != first.record_digest
    assert label_head(assignment=assignment) == revised
    assert Label.objects.get(pk=first.pk).annotation == first.annotation


def test_an_identical_revision_is_refused_as_unchanged_and_writes_nothing(assignment):
    first = submit(assignment).label
    content = unit_content(unit=assignment.unit)

    with pytest.raises(RevisionUnchanged) as unchanged:
        # The same annotation as sent again (weights, kind and pseudonym are the server's).
        submit(assignment, source_risk(content), parent=first.record_digest)

    assert unchanged.value.code == "unchanged_revision"
    assert unchanged.value.head == first
    assert Label.objects.count() == 1


def test_a_stale_submission_gets_a_conflict_and_writes_nothing(assignment):
    first = submit(assignment).label
    content = unit_content(unit=assignment.unit)
    submit(assignment, source_risk(content, rationale="tab one"), parent=first.record_digest)

    with pytest.raises(StaleRevision) as conflict:
        submit(assignment, source_risk(content, rationale="tab two"), parent=first.record_digest)

    assert conflict.value.head.revision == 2
    assert Label.objects.count() == 2


def test_a_first_submission_naming_a_parent_is_stale(assignment):
    with pytest.raises(StaleRevision):
        submit(assignment, parent="0" * 64)


def bad_annotations(content):
    good = source_risk(content)
    outside = copy.deepcopy(good)
    outside["spans"]["I"][0].update(start=10**6, end=10**6 + 3)
    quote = copy.deepcopy(good)
    quote["spans"]["A"][0]["quote"] = "not what the answer says"
    no_span = copy.deepcopy(good)
    del no_span["spans"]["M"]
    string_u = copy.deepcopy(good)
    string_u["predicates"]["D"] = "U"
    boolean = copy.deepcopy(good)
    boolean["predicates"]["I"] = True
    return {
        codes.SPAN_OUT_OF_RANGE: outside,
        codes.SPAN_QUOTE_MISMATCH: quote,
        codes.SPAN_MISSING: no_span,
        codes.PREDICATE_STRING: string_u,
        codes.PREDICATE_BOOLEAN: boolean,
    }


@pytest.mark.parametrize(
    "reason",
    [
        codes.SPAN_OUT_OF_RANGE,
        codes.SPAN_QUOTE_MISMATCH,
        codes.SPAN_MISSING,
        codes.PREDICATE_STRING,
        codes.PREDICATE_BOOLEAN,
    ],
)
def test_the_contract_refuses_bad_annotations_with_its_reason(assignment, reason):
    bad = bad_annotations(unit_content(unit=assignment.unit))[reason]
    with pytest.raises(LabelRefused) as refused:
        submit(assignment, bad)
    assert refused.value.code == reason
    assert refused.value.message
    assert Label.objects.count() == 0


def test_unresolved_predicates_need_no_span_and_are_accepted(assignment):
    content = unit_content(unit=assignment.unit)
    label = submit(assignment, source_risk(content, values=(1, None, None, 0))).label
    assert label.annotation["predicates"] == {"I": 1, "A": None, "M": None, "D": 0}


def test_an_answer_unit_takes_claims_and_verdicts(claims_study):
    people = add_people(claims_study)
    unit = next(u for u in claims_study.units.order_by("id") if unit_content(unit=u).sources)
    assignment = assign(unit, people["ann_a"])
    content = unit_content(unit=assignment.unit)

    label = label_submit(
        assignment=assignment,
        annotation=answer_claims(content),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label

    assert label.annotation["verdicts"]["supported"]["value"] is True


def test_a_summary_mismatch_is_refused(claims_study):
    people = add_people(claims_study)
    unit = next(u for u in claims_study.units.order_by("id") if unit_content(unit=u).sources)
    assignment = assign(unit, people["ann_a"])
    annotation = answer_claims(unit_content(unit=assignment.unit))
    annotation["claims"][0]["supported"] = False  # but the answer says supported: true

    with pytest.raises(LabelRefused) as refused:
        label_submit(
            assignment=assignment,
            annotation=annotation,
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        )
    assert refused.value.code == codes.SUMMARY_MISMATCH


@pytest.mark.parametrize(
    "statement", ["UPDATE annotator_label SET revision = 9", "DELETE FROM annotator_label"]
)
def test_the_database_refuses_to_change_a_submitted_label(assignment, statement):
    submit(assignment)
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(statement)
    assert Label.objects.get().revision == 1


def test_the_orm_cannot_edit_a_label_either(assignment):
    label = submit(assignment).label
    label.annotation = {"forged": True}
    with pytest.raises(IntegrityError), transaction.atomic():
        label.save()


def test_drafts_autosave_and_refuse_a_stale_tab(assignment):
    first = draft_save(assignment=assignment, payload={"predicates": {"I": 1}}, base_version=0)
    second = draft_save(assignment=assignment, payload={"predicates": {"I": 0}}, base_version=1)
    assert (first.version, second.version) == (1, 2)

    with pytest.raises(DraftConflict) as conflict:
        draft_save(assignment=assignment, payload={"predicates": {"I": 1}}, base_version=1)

    assert conflict.value.draft.payload == {"predicates": {"I": 0}}
    assert Draft.objects.get().version == 2


def test_submitting_removes_the_draft(assignment):
    draft_save(assignment=assignment, payload={"x": 1}, base_version=None)
    submit(assignment)
    assert not Draft.objects.exists()
