"""The started-unit walk under a backlog (annotator.labelling.services._started_unit):
when many units held by others wait for another label, the caller's own order is walked
round from their ``started_cursor`` instead of every such unit being read (PostgreSQL;
the embedded default always reads every started unit: the last test).

The thresholds are lowered here so that the demo study (a few dozen units) has a
backlog; the plan test uses the real ones."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.utils import timezone

from annotator.labelling import services
from annotator.labelling.models import Assignment, LabelSight, QueueOrder, QueuePosition, SightVia
from annotator.labelling.services import _queue_order, _started_unit, assignment_next
from audit.archive.models import Unit
from tests.annotation.conftest import add_people, assign, make_study

pytestmark = pytest.mark.django_db
postgres = pytest.mark.postgres


@pytest.fixture
def backlog(monkeypatch):
    """Two units held by others make a backlog."""
    monkeypatch.setattr(services, "STARTED_BACKLOG", 2)


def keys_of(order: QueueOrder, unit_ids) -> dict[int, int]:
    return dict(
        QueuePosition.objects.filter(order=order, unit_id__in=list(unit_ids)).values_list(
            "unit_id", "key"
        )
    )


def in_order_of(study, user) -> list[int]:
    """The study's units in ``user``'s order (drawn now if it was not yet)."""
    order = _queue_order(study=study, annotator=user)
    return list(
        QueuePosition.objects.filter(order=order)
        .order_by("key", "unit_id")
        .values_list("unit_id", flat=True)
    )


def hold(study, user, unit_ids) -> list[int]:
    """``user`` takes a slot on each of ``unit_ids`` and labels it."""
    for unit_id in unit_ids:
        assign(Unit.objects.get(pk=unit_id), user)
    Assignment.objects.filter(annotator=user, unit_id__in=unit_ids).update(
        submitted_at=timezone.now()
    )
    return list(unit_ids)


def take_started(study, user) -> list[int]:
    """Every unit the queue hands ``user`` while it hands started ones, in turn (each
    marked done at once, so that the next one is asked for)."""
    handed = []
    while True:
        assignment = assignment_next(study=study, annotator=user)
        if assignment is None or Unit.objects.get(pk=assignment.unit_id).assigned_count == 1:
            return handed  # a fresh unit (or none): the backlog is done
        handed.append(assignment.unit_id)
        Assignment.objects.filter(pk=assignment.pk).update(submitted_at=timezone.now())


@postgres
def test_a_backlog_is_handed_in_the_callers_order_and_moves_their_cursor(
    risk_study, people, backlog
):
    b_order = in_order_of(risk_study, people["ann_b"])
    waiting = hold(risk_study, people["ann_a"], sorted(b_order[::3][:8]))
    handed = take_started(risk_study, people["ann_b"])
    order = QueueOrder.objects.get(study=risk_study, annotator=people["ann_b"])
    keys = keys_of(order, waiting)
    # In b's order. The last one: two left are a backlog no more, so it comes from
    # reading every started unit (also the first in b's order), and the cursor stays.
    assert handed == sorted(waiting, key=keys.__getitem__)
    assert order.started_cursor == keys[handed[-2]]


@postgres
def test_the_backlog_walk_gives_the_unit_the_full_read_would_give_first(
    risk_study, people, monkeypatch
):
    b_order = in_order_of(risk_study, people["ann_b"])
    hold(risk_study, people["ann_a"], b_order[4:10])
    order = _queue_order(study=risk_study, annotator=people["ann_b"])
    few = _started_unit(study=risk_study, annotator=people["ann_b"], order=order)
    monkeypatch.setattr(services, "STARTED_BACKLOG", 2)
    many = _started_unit(study=risk_study, annotator=people["ann_b"], order=order)
    assert few.unit_id == many.unit_id == b_order[4]
    assert few.key is None  # no backlog: the cursor stays
    assert many.key == keys_of(order, [b_order[4]])[b_order[4]]


@postgres
def test_a_unit_started_behind_the_cursor_comes_at_the_next_round(risk_study, people, backlog):
    b_order = in_order_of(risk_study, people["ann_b"])
    waiting = hold(risk_study, people["ann_a"], b_order[4:10])
    order = _queue_order(study=risk_study, annotator=people["ann_b"])
    keys = keys_of(order, b_order)
    order.started_cursor = keys[waiting[2]]  # b has had three of them
    # Meanwhile c starts a unit that comes before all of them in b's order.
    hold(risk_study, people["ann_c"], [b_order[1]])
    found = _started_unit(study=risk_study, annotator=people["ann_b"], order=order)
    assert (found.unit_id, found.key) == (waiting[3], keys[waiting[3]])  # on from the cursor
    order.started_cursor = keys[waiting[-1]]  # the end of the round
    found = _started_unit(study=risk_study, annotator=people["ann_b"], order=order)
    assert found.unit_id == b_order[1]  # round again from b's first key


@postgres
def test_a_window_without_a_unit_falls_back_to_reading_every_started_unit(
    risk_study, people, backlog, monkeypatch
):
    b_order = in_order_of(risk_study, people["ann_b"])
    hold(risk_study, people["ann_a"], b_order[5:11])
    order = _queue_order(study=risk_study, annotator=people["ann_b"])
    keys = keys_of(order, b_order)
    # One position on each side: b's first (behind the cursor) and third (ahead of it),
    # both held by nobody.
    monkeypatch.setattr(services, "STARTED_WINDOW", 1)
    order.started_cursor = keys[b_order[1]]
    found = _started_unit(study=risk_study, annotator=people["ann_b"], order=order)
    assert found.unit_id == b_order[5]  # the full read: the first in b's order
    assert found.key == keys[b_order[5]]  # still a backlog: the cursor moves to it


@postgres
def test_the_backlog_walk_keeps_the_blinding_and_leaves_ones_own_units(risk_study, people, backlog):
    b_order = in_order_of(risk_study, people["ann_b"])
    waiting = hold(risk_study, people["ann_a"], b_order[2:12])
    seen = waiting[::3]
    LabelSight.objects.bulk_create(
        LabelSight(
            user=people["ann_b"], unit_id=unit_id, via=SightVia.RECORD, seen_at=timezone.now()
        )
        for unit_id in seen
    )
    mine = hold(risk_study, people["ann_b"], [waiting[1]])
    handed = take_started(risk_study, people["ann_b"])
    assert handed == [u for u in waiting if u not in seen and u not in mine]


@postgres
def test_overlap_three_joins_units_with_one_and_two_labels(db, backlog):
    study = make_study("three", "source-risk-1.0.0", "source-risk.jsonl", overlap=3)
    people = add_people(study)
    c_order = in_order_of(study, people["ann_c"])
    waiting = hold(study, people["ann_a"], c_order[:6])
    hold(study, people["ann_b"], waiting[:3])
    assert take_started(study, people["ann_c"]) == waiting
    # b labelled three of them with a: only the other three are b's to join, with the
    # fresh unit c holds now.
    fresh = Assignment.objects.get(annotator=people["ann_c"], submitted_at__isnull=True).unit_id
    assert sorted(take_started(study, people["ann_b"])) == sorted([*waiting[3:], fresh])


# --- on PostgreSQL: what the walk reads ---------------------------------------------------

#: Units held by one annotator alone in the plan test: a backlog well over the threshold.
BACKLOG_UNITS = 3_000


def _unit_rows_read(plan: dict) -> int:
    """Rows the plan's scans of the unit table (and its indexes) returned or filtered."""
    total = 0
    on_units = plan.get("Relation Name") == Unit._meta.db_table or plan.get(
        "Index Name", ""
    ).startswith("unit_")
    if on_units and plan.get("Node Type") != "Bitmap Heap Scan":
        loops = plan.get("Actual Loops", 1)
        total += (plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0)) * loops
    for child in plan.get("Plans", []):
        total += _unit_rows_read(child)
    return total


@pytest.mark.postgres
def test_under_a_backlog_the_walk_reads_a_bounded_number_of_units(db):
    """ann_a labelled 3,000 units alone; ann_b's walk counts up to the threshold and walks
    their order to the first of them, instead of reading the 3,000 (EXPLAIN ANALYZE)."""
    study = make_study("backlog", "source-risk-1.0.0", "source-risk.jsonl")
    people = add_people(study)
    theirs = Unit.objects.filter(study=study).order_by("id").first()
    Unit.objects.bulk_create(
        Unit(
            study=study,
            observation_id=theirs.observation_id,
            digest=f"backlog-{number:06d}",
            assigned_count=1,
            holder=people["ann_a"].pk,
        )
        for number in range(BACKLOG_UNITS)
    )
    order = _queue_order(study=study, annotator=people["ann_b"])
    statements: list[tuple[str, object]] = []

    def keep(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        found = _started_unit(study=study, annotator=people["ann_b"], order=order)
    assert found is not None
    assert found.key is not None  # the backlog walk found it
    first = (
        QueuePosition.objects.filter(order=order, unit__assigned_count=1)
        .order_by("key", "unit_id")
        .values_list("unit_id", flat=True)
        .first()
    )
    assert found.unit_id == first
    assert len(statements) == 2  # the count, which says "a backlog"; the walk
    read = 0
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Unit._meta.db_table}, {QueuePosition._meta.db_table}")
        for sql, params in statements:
            cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
            (plan,) = cursor.fetchone()
            if isinstance(plan, str):
                plan = json.loads(plan)
            read += _unit_rows_read(plan[0]["Plan"])
    # Up to the threshold counted, then a unit or two tested: not the 3,000.
    assert read <= services.STARTED_BACKLOG + 16, json.dumps(plan, indent=1)
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE NOT from_sql")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any("WITH RECURSIVE" in sql for sql in prepared)  # the walk: its plan is fixed


def test_the_embedded_default_reads_every_started_unit(risk_study, people, backlog):
    """Without PostgreSQL there is no backlog walk: the first started unit in the
    caller's order, and their started cursor stays."""
    b_order = in_order_of(risk_study, people["ann_b"])
    waiting = hold(risk_study, people["ann_a"], b_order[3:9])
    order = _queue_order(study=risk_study, annotator=people["ann_b"])
    order.started_cursor = keys_of(order, [waiting[2]])[waiting[2]]
    found = _started_unit(study=risk_study, annotator=people["ann_b"], order=order)
    if connection.vendor == "postgresql":
        assert found.unit_id == waiting[3]  # round from the cursor
    else:
        assert (found.unit_id, found.key) == (waiting[0], None)
