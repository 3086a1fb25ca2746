"""The queue: k distinct annotators per unit, never the same unit twice, no races."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from annotator.labelling.models import Assignment
from annotator.labelling.selectors import annotator_progress, unit_content
from annotator.labelling.services import assignment_next, label_submit
from annotator.memberships.services import study_overlap_set
from audit.archive.models import Unit
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study

pytestmark = pytest.mark.django_db


def submit(assignment, **kwargs):
    content = unit_content(unit=assignment.unit)
    return label_submit(
        assignment=assignment,
        annotation=source_risk(content, **kwargs),
        client_submission_id=f"00000000-0000-0000-0000-{assignment.pk:012d}",
        parent_digest=None,
    )


def test_import_creates_one_unit_per_tuple_or_complete_answer(risk_study, claims_study):
    assert risk_study.units.count() == risk_study.tuples.count()
    complete = claims_study.observations.filter(answer__status="complete").count()
    assert claims_study.units.count() == complete
    assert claims_study.units.filter(tuple__isnull=False).count() == 0


def test_an_unfinished_assignment_comes_back_until_it_is_submitted(risk_study, people):
    first = assignment_next(study=risk_study, annotator=people["ann_a"])
    assert assignment_next(study=risk_study, annotator=people["ann_a"]) == first
    submit(first)
    second = assignment_next(study=risk_study, annotator=people["ann_a"])
    assert second != first
    assert second.unit_id != first.unit_id


def test_each_unit_goes_to_k_distinct_annotators(risk_study, people):
    study_overlap_set(study=risk_study, overlap=2)
    taken = {}
    for name in ("ann_a", "ann_b", "ann_c"):
        assignment = assignment_next(study=risk_study, annotator=people[name])
        taken[name] = assignment.unit_id
        submit(assignment)
    # a and b share the first unit; c, the third annotator, gets the next one.
    assert taken["ann_a"] == taken["ann_b"]
    assert taken["ann_c"] != taken["ann_a"]
    unit = Unit.objects.get(pk=taken["ann_a"])
    assert unit.assigned_count == 2


def test_an_annotator_never_gets_the_same_unit_twice_and_the_queue_ends(db):
    study = make_study("small", "source-risk-1.0.0", "source-risk.jsonl", overlap=3)
    people = add_people(study)
    seen = []
    while (assignment := assignment_next(study=study, annotator=people["ann_a"])) is not None:
        seen.append(assignment.unit_id)
        submit(assignment)
    assert len(seen) == len(set(seen)) == study.units.count()
    progress = annotator_progress(study=study, annotator=people["ann_a"])
    assert (progress.done, progress.assigned) == (len(seen), len(seen))
    assert progress.open_assignment_id is None


def test_progress_counts_only_ones_own_work(risk_study, people):
    submit(assignment_next(study=risk_study, annotator=people["ann_a"]))
    assignment_next(study=risk_study, annotator=people["ann_a"])
    assignment_next(study=risk_study, annotator=people["ann_b"])

    mine = annotator_progress(study=risk_study, annotator=people["ann_a"])
    theirs = annotator_progress(study=risk_study, annotator=people["ann_b"])

    assert (mine.done, mine.assigned) == (1, 2)
    assert (theirs.done, theirs.assigned) == (0, 1)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_never_share_the_last_slot():
    """Eight annotators ask at the same moment with k = 1: every one gets its own unit."""
    study = make_study("race", "source-risk-1.0.0", "source-risk.jsonl", overlap=1)
    people = add_people(study)
    from django.contrib.auth import get_user_model

    from annotator.memberships.models import Membership, Role

    annotators = [people["ann_a"], people["ann_b"], people["ann_c"]]
    for n in range(5):
        user = get_user_model().objects.create_user(username=f"extra{n}", password="pw")
        Membership.objects.create(study=study, user=user, role=Role.ANNOTATOR)
        annotators.append(user)
    barrier = threading.Barrier(len(annotators))
    results, errors = {}, []

    def take(user):
        try:
            barrier.wait()
            results[user.username] = assignment_next(study=study, annotator=user).unit_id
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=take, args=(user,)) for user in annotators]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert len(set(results.values())) == len(annotators)
    assert Assignment.objects.filter(study=study).count() == len(annotators)
    assert all(u.assigned_count <= 1 for u in Unit.objects.filter(study=study))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_one_annotators_requests_at_the_same_moment_each_take_their_own_number():
    """Several tabs of one annotator ask at once (k = 1, so each walk locks its own unit):
    they count the same next number, the unique constraint refuses all but one slot, the
    others write nothing (neither the unit's count nor the order's cursor) and count
    again."""
    study = make_study("tabs", "source-risk-1.0.0", "source-risk.jsonl", overlap=1)
    person = add_people(study)["ann_a"]
    assignment_next(study=study, annotator=person)  # draws the order once
    Assignment.objects.filter(study=study).delete()
    Unit.objects.filter(study=study).update(assigned_count=0)
    tabs = 3  # each may count again twice: the third attempt is the last
    barrier = threading.Barrier(tabs)
    errors = []

    def take():
        from annotator.labelling.services import _assignment_create

        try:
            unit = Unit.objects.filter(study=study).order_by("pk")[barrier.wait()]
            _assignment_create(study=study, unit_id=unit.pk, annotator=person, counted=True)
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=take) for _ in range(tabs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    numbers = sorted(Assignment.objects.filter(study=study).values_list("number", flat=True))
    assert numbers == list(range(1, tabs + 1))
    counted = dict(Unit.objects.filter(study=study).values_list("pk", "assigned_count"))
    held = Assignment.objects.filter(study=study).values_list("unit_id", flat=True)
    assert counted == {pk: int(pk in set(held)) for pk in counted}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_unit_referenced_by_an_open_transaction_is_still_handed_out():
    """Drawing an order inserts a row per unit, whose foreign-key check key-share locks
    every unit (at commit, the constraints being deferred; made immediate here so that the
    window lasts while the other annotator asks): the queue's lock (FOR NO KEY UPDATE SKIP
    LOCKED) must not skip them all, as FOR UPDATE did (eight annotators asking at once
    sometimes got nothing)."""
    from django.db import transaction

    from annotator.labelling.models import QueueOrder, QueueSeed
    from annotator.labelling.services import queue_positions_add

    study = make_study("held", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    QueueSeed.objects.create(study=study)
    drawn, release = threading.Event(), threading.Event()
    errors = []

    def draw_and_hold():
        try:
            with transaction.atomic():
                with connection.cursor() as cursor:
                    cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
                order = QueueOrder.objects.create(
                    study=study, annotator=people["ann_b"], seed=QueueSeed.objects.get().seed
                )
                queue_positions_add(order=order)  # every unit now key-share locked
                drawn.set()
                release.wait(timeout=30)
        except Exception as exc:
            errors.append(exc)
        finally:
            connection.close()

    holder = threading.Thread(target=draw_and_hold)
    holder.start()
    try:
        assert drawn.wait(timeout=30)
        assignment = assignment_next(study=study, annotator=people["ann_a"])
    finally:
        release.set()
        holder.join()
    assert errors == []
    assert assignment is not None
