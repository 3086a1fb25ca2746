"""Gold units and qualification through the real queue and submission services, on the
database: a scripted annotator's accuracy, the qualification gate, gold kept out of
reliability and outcomes, and pause/resume."""

from __future__ import annotations

import json
import uuid

import pytest

from annotator.adjudication.jobs import outcomes_sweep
from annotator.labelling.models import Assignment, Draft, Label, LabelKind, QueueSeed
from annotator.labelling.order import order_of
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import (
    AnnotatorPaused,
    QualificationRefused,
    assignment_next,
    draft_save,
    label_submit,
)
from annotator.quality.models import GoldItem, KeptDraft
from annotator.quality.reports import quality_of_annotators
from annotator.quality.scoring import Proportion
from annotator.quality.services import (
    QualityError,
    annotator_pause,
    annotator_resume,
    gold_mark_from_file,
    gold_mark_from_finals,
    quality_plan_set,
)
from audit.archive.models import Unit, UnitState
from audit.ledger.models import LedgerEntry
from metrics.selectors import report_inputs_fetch
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import assign
from tests.quality.conftest import RIGHT, WRONG, answer, key_file

pytestmark = pytest.mark.django_db


def qualify(study, user, *, right: int, of: int = 10):
    """Answer the first ``of`` items (the qualification set) with ``right`` of them right."""
    handed = []
    for index in range(of):
        assignment, label = answer(study, user, RIGHT if index < right else WRONG)
        handed.append((assignment, label))
    return handed


def test_a_scripted_annotator_right_on_8_of_10_gold_items_scores_0_8_with_its_interval(
    study, people, units
):
    gold_mark_from_file(study=study, data=key_file(units[:10], qualification=True))
    quality_plan_set(study=study, gold_rate=0.0, qualification_size=10, qualification_threshold=0.8)

    handed = qualify(study, people["ann_a"], right=8)

    assert all(assignment.gold for assignment, _ in handed)
    assert {assignment.unit_id for assignment, _ in handed} == {unit.pk for unit in units[:10]}
    assert all(label.kind == LabelKind.GOLD for _, label in handed)
    (a,) = [
        q
        for q in quality_of_annotators(study=study, qualification=(10, 0.8))
        if q.username == "ann_a"
    ]
    assert a.gold == Proportion(8, 10)
    assert a.gold.rate == 0.8
    low, high = a.gold.interval
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)
    assert a.qualification.passed
    # Passed: the next item is a real unit, never one held as gold.
    nxt = assignment_next(study=study, annotator=people["ann_a"])
    assert not nxt.gold
    assert nxt.unit_id not in {unit.pk for unit in units[:10]}


def test_failing_the_qualification_set_refuses_real_units_with_a_clear_message(
    study, people, units
):
    gold_mark_from_file(study=study, data=key_file(units[:10], qualification=True))
    quality_plan_set(study=study, gold_rate=0.0, qualification_size=10, qualification_threshold=0.9)
    qualify(study, people["ann_a"], right=8)

    with pytest.raises(QualificationRefused) as refused:
        assignment_next(study=study, annotator=people["ann_a"])

    assert refused.value.code == "qualification_failed"
    assert "did not pass the qualification set" in refused.value.message
    assert "8 of 10 items matched" in refused.value.message
    assert "90%" in refused.value.message
    assert not Assignment.objects.filter(annotator=people["ann_a"], gold=False).exists()


def test_a_revision_cannot_turn_a_failed_qualification_into_a_pass(study, people, units):
    gold_mark_from_file(study=study, data=key_file(units[:2], qualification=True))
    quality_plan_set(study=study, gold_rate=0.0, qualification_size=2, qualification_threshold=1)
    handed = qualify(study, people["ann_a"], right=1, of=2)
    wrong_assignment, wrong_label = handed[1]
    label_submit(
        assignment=wrong_assignment,
        annotation=source_risk(unit_content(unit=wrong_assignment.unit), values=RIGHT),
        client_submission_id=uuid.uuid4(),
        parent_digest=wrong_label.record_digest,
    )

    with pytest.raises(QualificationRefused, match="1 of 2 items matched"):
        assignment_next(study=study, annotator=people["ann_a"])


def test_too_few_qualification_units_says_so(study, people, units):
    gold_mark_from_file(study=study, data=key_file(units[:3], qualification=True))
    with pytest.raises(QualityError, match="needs as many qualification units"):
        quality_plan_set(
            study=study, gold_rate=0.0, qualification_size=5, qualification_threshold=0.8
        )


def test_gold_enters_the_queue_at_the_study_rate(study, people, units):
    # Gold units are real units too: the last three of this annotator's own seeded order,
    # so that the regular walk (8 items here) never reaches them before the gold turns do.
    seed = QueueSeed.objects.get_or_create(study=study)[0].seed
    ordered = order_of(seed=seed, annotator_id=people["ann_a"].pk, unit_ids=[u.pk for u in units])
    gold_units = [unit for unit in units if unit.pk in set(ordered[-3:])]
    gold_mark_from_file(study=study, data=key_file(gold_units, qualification=False))
    quality_plan_set(study=study, gold_rate=0.25, qualification_size=0, qualification_threshold=0.8)

    handed = [answer(study, people["ann_a"])[0] for _ in range(8)]

    assert [assignment.gold for assignment in handed] == [False, False, False, True] * 2
    assert {a.unit_id for a in handed if a.gold} <= {unit.pk for unit in gold_units}
    assert len({a.unit_id for a in handed}) == 8


def test_a_unit_held_as_gold_is_never_handed_out_again_once_the_plan_stops_gold(
    study, people, units
):
    gold_mark_from_file(study=study, data=key_file(units[:1], qualification=True))
    quality_plan_set(study=study, gold_rate=0.0, qualification_size=1, qualification_threshold=0)
    gold, _ = answer(study, people["ann_a"])
    assert gold.gold
    assert gold.unit_id == units[0].pk  # the lowest unit: the regular walk's first pick
    quality_plan_set(study=study, gold_rate=0.0, qualification_size=0, qualification_threshold=0)

    handed = [answer(study, people["ann_a"])[0] for _ in range(len(units) - 1)]

    assert units[0].pk not in {assignment.unit_id for assignment in handed}
    assert not any(assignment.gold for assignment in handed)
    assert assignment_next(study=study, annotator=people["ann_a"]) is None


def test_gold_labels_never_enter_reliability_outcomes_or_unit_state(study, people, units):
    gold_mark_from_file(study=study, data=key_file(units[:4], qualification=True))
    quality_plan_set(study=study, gold_rate=0.0, qualification_size=4, qualification_threshold=0.5)
    qualify(study, people["ann_a"], right=3, of=4)
    qualify(study, people["ann_b"], right=4, of=4)
    answer(study, people["ann_a"])  # one real label each, on the same unit
    answer(study, people["ann_b"])
    outcomes_sweep.run()

    gold = Label.objects.filter(kind=LabelKind.GOLD)
    assert gold.count() == 8
    assert {label.annotation["kind"] for label in gold} == {"independent"}
    assert not LedgerEntry.objects.filter(record_digest__in=gold.values("record_digest")).exists()
    inputs = report_inputs_fetch(study=study)
    assert {head.record_digest for head in inputs.heads} == set(
        Label.objects.filter(kind=LabelKind.INDEPENDENT).values_list("record_digest", flat=True)
    )
    assert len(inputs.heads) == 2
    for unit in Unit.objects.filter(pk__in=[u.pk for u in units[:4]]):
        assert unit.submitted_count == 0
        assert unit.assigned_count == 0
        assert unit.state == UnitState.OPEN


def test_gold_from_final_records_takes_the_final_label_as_key(study, people, units):
    first, _ = answer(study, people["ann_a"], (1, 0, None, 0))
    answer(study, people["ann_b"], (1, 0, None, 0), assignment=None)
    unit = Unit.objects.get(pk=first.unit_id)
    assert unit.state == UnitState.AGREED

    marked = gold_mark_from_finals(study=study, unit_digests=[unit.digest])

    assert marked.created == 1
    item = GoldItem.objects.get(unit=unit)
    assert item.key == {
        "A": "0",
        "D": "0",
        "I": "1",
        "M": "U",
        "passage_support": "1",
        "source_role": "affiliate_marketing",
    }
    # Again: nothing changes. A unit with no final record is named in the refusal.
    assert gold_mark_from_finals(study=study, unit_digests=[unit.digest]).unchanged == 1
    unlabelled = Unit.objects.filter(study=study, labels__isnull=True).order_by("id").first()
    with pytest.raises(QualityError) as refused:
        # A unit never labelled: the seeded queue may have handed out any of them first.
        gold_mark_from_finals(study=study, unit_digests=[unlabelled.digest, "nope"])
    assert refused.value.code == "no_final_record"
    messages = [problem["message"] for problem in refused.value.problems]
    assert any("has no final record yet" in message for message in messages)
    assert any("no unit 'nope'" in message for message in messages)


def test_a_key_file_with_bad_lines_marks_nothing_and_lists_every_line(study, units):
    good = key_file(units[:1], qualification=False).decode()
    data = (
        good
        + "not json\n"
        + json.dumps({"unit": units[1].digest, "key": {"Z": 1}})
        + "\n"
        + '{"unit": "missing", "key": {"I": 1}}\n'
        + good
    ).encode()

    with pytest.raises(QualityError) as refused:
        gold_mark_from_file(study=study, data=data)

    lines = [problem["line"] for problem in refused.value.problems]
    assert lines == [2, 3, 4, 5]
    assert "unknown field Z" in refused.value.problems[1]["message"]
    assert "again (line 1)" in refused.value.problems[3]["message"]
    assert not GoldItem.objects.exists()


def test_a_gold_key_is_never_changed_in_place(study, units):
    gold_mark_from_file(study=study, data=key_file(units[:1], qualification=False))
    with pytest.raises(QualityError) as refused:
        gold_mark_from_file(
            study=study, data=key_file(units[:1], qualification=False, key={"I": 0})
        )
    assert refused.value.code == "gold_key_conflict"
    assert GoldItem.objects.get().key["I"] == "1"


def test_pause_returns_open_assignments_to_the_pool_and_keeps_drafts(study, people):
    a, b = people["ann_a"], people["ann_b"]
    held = assignment_next(study=study, annotator=a)
    draft_save(assignment=held, payload={"predicates": {"I": 1}}, base_version=None)
    draft_save(assignment=held, payload={"predicates": {"I": 0}}, base_version=1)
    unit_id = held.unit_id
    assert Unit.objects.get(pk=unit_id).assigned_count == 1

    released = annotator_pause(study=study, annotator=a)

    assert released == 1
    assert not Assignment.objects.filter(pk=held.pk).exists()
    assert Unit.objects.get(pk=unit_id).assigned_count == 0
    assert KeptDraft.objects.get(annotator=a, unit_id=unit_id).payload == {"predicates": {"I": 0}}
    with pytest.raises(AnnotatorPaused) as refused:
        assignment_next(study=study, annotator=a)
    assert "paused by its researcher" in refused.value.message
    assert "drafts are kept" in refused.value.message
    # The slot is free for someone else meanwhile (given directly: each annotator's queue
    # has an order of its own); a unit others have started comes first in A's queue.
    assign(Unit.objects.get(pk=unit_id), b)

    annotator_resume(study=study, annotator=a)
    again = assignment_next(study=study, annotator=a)

    assert again.unit_id == unit_id
    draft = Draft.objects.get(assignment=again)
    assert draft.payload == {"predicates": {"I": 0}}
    assert draft.version == 2
    assert not KeptDraft.objects.exists()


def test_pausing_someone_who_is_not_an_annotator_is_refused(study, people):
    with pytest.raises(Exception, match="is not an annotator of study qc"):
        annotator_pause(study=study, annotator=people["res"])


def test_agreement_with_the_others_counts_pairs_of_latest_revisions(study, people, units):
    a, b, c = people["ann_a"], people["ann_b"], people["ann_c"]
    study.overlap = 3
    study.save(update_fields=["overlap"])
    # Unit 1: all three agree. Unit 2: a and b agree, c differs (at first), then c revises
    # to agree: only latest revisions count.
    answer(study, a)
    answer(study, b)
    answer(study, c)
    answer(study, a, WRONG)
    answer(study, b, WRONG)
    second, first_try = answer(study, c, RIGHT)
    label_submit(
        assignment=second,
        annotation=source_risk(unit_content(unit=second.unit), values=WRONG, rationale="checked"),
        client_submission_id=uuid.uuid4(),
        parent_digest=first_try.record_digest,
    )
    # Unit 3: a and b differ.
    answer(study, a)
    answer(study, b, (None, 1, 1, 0))

    quality = {q.username: q for q in quality_of_annotators(study=study)}

    assert quality["ann_a"].agreement == Proportion(4, 5)
    assert quality["ann_b"].agreement == Proportion(4, 5)
    assert quality["ann_c"].agreement == Proportion(4, 4)
    assert sum(point.proportion.n for point in quality["ann_a"].agreement_by_week) == 5
    assert quality["ann_a"].gold == Proportion(0, 0)
