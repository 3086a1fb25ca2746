"""The started-unit walk and the unit's holder hint (audit.archive.models.Unit.holder):
the hint names a current holder of a counted slot, or nobody, through slots taken,
released on pause and released once their labels were seen; and on PostgreSQL the walk
of an annotator who worked ahead alone does not read the units they hold alone."""

from __future__ import annotations

import importlib
import json

import pytest
from django.db import connection

from annotator.labelling.models import Assignment, SightVia
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import (
    _queue_order,
    _started_unit,
    assignment_next,
    label_submit,
    labels_seen_record,
)
from annotator.quality.services import annotator_pause, annotator_resume
from audit.archive.models import Unit
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, make_study

pytestmark = pytest.mark.django_db


def submit(assignment):
    return label_submit(
        assignment=assignment,
        annotation=source_risk(unit_content(unit=assignment.unit)),
        client_submission_id=f"00000000-0000-0000-0000-{assignment.pk:012d}",
        parent_digest=None,
    )


def holders_of(unit_id: int) -> set[int]:
    return set(
        Assignment.objects.filter(unit_id=unit_id, gold=False).values_list(
            "annotator_id", flat=True
        )
    )


def both_hold_one(study, people):
    """ann_a takes a unit, and ann_b (overlap 2) joins it: a's assignment."""
    first = assignment_next(study=study, annotator=people["ann_a"])
    assignment_next(study=study, annotator=people["ann_b"])
    return first


def assert_hints_sound(study) -> None:
    """Every unit's hint names one of its counted holders, or nobody; a unit somebody
    holds and whose hint is null is allowed (a visit more), a stale name is not."""
    for unit in Unit.objects.filter(study=study):
        holders = holders_of(unit.pk)
        assert unit.assigned_count == len(holders)
        assert unit.holder is None or unit.holder in holders, (unit.pk, unit.holder, holders)


def test_a_slot_names_its_holder_and_a_second_keeps_the_first(risk_study, people):
    first = assignment_next(study=risk_study, annotator=people["ann_a"])
    assert Unit.objects.get(pk=first.unit_id).holder == people["ann_a"].pk
    second = assignment_next(study=risk_study, annotator=people["ann_b"])
    assert second.unit_id == first.unit_id  # overlap 2: b joins a's unit
    assert Unit.objects.get(pk=first.unit_id).holder == people["ann_a"].pk
    assert_hints_sound(risk_study)


def test_pausing_the_named_holder_moves_the_hint_to_the_other(risk_study, people):
    first = both_hold_one(risk_study, people)
    annotator_pause(study=risk_study, annotator=people["ann_a"])
    unit = Unit.objects.get(pk=first.unit_id)
    assert (unit.assigned_count, unit.holder) == (1, people["ann_b"].pk)
    annotator_pause(study=risk_study, annotator=people["ann_b"])
    unit.refresh_from_db()
    assert (unit.assigned_count, unit.holder) == (0, None)
    assert_hints_sound(risk_study)


def test_pausing_another_holder_leaves_the_hint(risk_study, people):
    first = both_hold_one(risk_study, people)
    annotator_pause(study=risk_study, annotator=people["ann_b"])
    unit = Unit.objects.get(pk=first.unit_id)
    assert (unit.assigned_count, unit.holder) == (1, people["ann_a"].pk)


def test_a_slot_released_once_its_labels_were_seen_moves_the_hint(risk_study, people):
    first = both_hold_one(risk_study, people)
    labels_seen_record(
        user=people["ann_a"], units=Unit.objects.filter(pk=first.unit_id), via=SightVia.RELEASE
    )
    unit = Unit.objects.get(pk=first.unit_id)
    assert not Assignment.objects.filter(annotator=people["ann_a"], unit=unit).exists()
    assert (unit.assigned_count, unit.holder) == (1, people["ann_b"].pk)
    assert_hints_sound(risk_study)


def test_a_lone_annotator_paused_leaves_no_hint_and_resumed_is_named_again(risk_study, people):
    first = assignment_next(study=risk_study, annotator=people["ann_a"])
    annotator_pause(study=risk_study, annotator=people["ann_a"])
    unit = Unit.objects.get(pk=first.unit_id)
    assert (unit.assigned_count, unit.holder) == (0, None)
    annotator_resume(study=risk_study, annotator=people["ann_a"])
    again = assignment_next(study=risk_study, annotator=people["ann_a"])
    assert Unit.objects.get(pk=again.unit_id).holder == people["ann_a"].pk
    assert_hints_sound(risk_study)


def test_the_walk_still_offers_a_unit_others_hold_and_never_ones_own(db):
    study = make_study("three", "source-risk-1.0.0", "source-risk.jsonl", overlap=3)
    people = add_people(study)
    for _ in range(3):
        submit(assignment_next(study=study, annotator=people["ann_a"]))
    # b joins a's units one by one (count 2 with hint a), never a unit twice
    for _ in range(3):
        mine = assignment_next(study=study, annotator=people["ann_b"])
        assert Unit.objects.get(pk=mine.unit_id).holder == people["ann_a"].pk
        submit(mine)
    # c, and then a and b again: a walks past units hinted a, b past the ones held by both
    order = _queue_order(study=study, annotator=people["ann_a"])
    assert _started_unit(study=study, annotator=people["ann_a"], order=order) is None
    order = _queue_order(study=study, annotator=people["ann_b"])
    assert _started_unit(study=study, annotator=people["ann_b"], order=order) is None
    order = _queue_order(study=study, annotator=people["ann_c"])
    found = _started_unit(study=study, annotator=people["ann_c"], order=order)
    assert found is not None
    assert Unit.objects.get(pk=found[0]).assigned_count == 2
    assert_hints_sound(study)


def _unit_rows_read(plan: dict) -> int:
    """Rows the plan read from the unit table: every scan of it or of its indexes, with
    the rows its filter removed."""
    total = 0
    node_type = plan.get("Node Type", "")
    on_units = plan.get("Relation Name") == Unit._meta.db_table or plan.get(
        "Index Name", ""
    ).startswith("unit_")
    if on_units and node_type != "Bitmap Heap Scan":
        loops = plan.get("Actual Loops", 1)
        total += (plan.get("Actual Rows", 0) + plan.get("Rows Removed by Filter", 0)) * loops
    for child in plan.get("Plans", []):
        total += _unit_rows_read(child)
    return total


#: Units held by the lone annotator in the plan's test: enough for an index to be worth
#: reading to the planner (on a few dozen rows any plan reads the whole table).
LONE_UNITS = 3_000


@pytest.mark.postgres
def test_the_walk_of_a_lone_annotator_does_not_read_their_own_units(db):
    """ann_a labelled ahead alone (each of their units holds one slot of two); ann_b holds
    one unit. ann_a's started-unit walk reads b's unit only, however many units a holds
    alone: counted on the plan's scans of the unit table and its indexes (EXPLAIN
    ANALYZE on analyzed tables)."""
    study = make_study("lone", "source-risk-1.0.0", "source-risk.jsonl")
    people = add_people(study)
    theirs = Unit.objects.filter(study=study).order_by("id").first()
    alone = Unit.objects.bulk_create(
        Unit(
            study=study,
            observation_id=theirs.observation_id,
            digest=f"lone-{number:06d}",
            assigned_count=1,
            holder=people["ann_a"].pk,
        )
        for number in range(LONE_UNITS)
    )
    Assignment.objects.bulk_create(
        Assignment(study=study, unit=unit, annotator=people["ann_a"], number=number)
        for number, unit in enumerate(alone, start=1)
    )
    Assignment.objects.create(study=study, unit=theirs, annotator=people["ann_b"], number=1)
    Unit.objects.filter(pk=theirs.pk).update(assigned_count=1, holder=people["ann_b"].pk)
    order = _queue_order(study=study, annotator=people["ann_a"])

    statements: list[tuple[str, object]] = []

    def keep(execute, sql, params, many, context):
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(keep):
        found = _started_unit(study=study, annotator=people["ann_a"], order=order)
    assert found is not None
    assert found[0] == theirs.pk
    ((sql, params),) = statements
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Unit._meta.db_table}, {Assignment._meta.db_table}")
        # Here nearly every unit is held: a whole-table read is cheapest. In a study of
        # 10⁴ units the planner takes the index by itself (docs/benchmarks.md, "The lone
        # annotator's walk"); what is tested is that the index skips a's units.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
        (plan,) = cursor.fetchone()
    if isinstance(plan, str):
        plan = json.loads(plan)
    read = _unit_rows_read(plan[0]["Plan"])
    assert read <= 2, json.dumps(plan, indent=1)


def test_the_migration_names_a_holder_of_every_held_unit(risk_study, people):
    """audit 0023's data step, run on units whose hints are gone: each held unit is given
    the smallest id among its counted holders."""
    first = assignment_next(study=risk_study, annotator=people["ann_b"])
    assignment_next(study=risk_study, annotator=people["ann_a"])
    submit(first)
    assignment_next(study=risk_study, annotator=people["ann_b"])
    Unit.objects.update(holder=None)
    migration = importlib.import_module("audit.migrations.0023_unit_holder")
    with connection.cursor() as cursor:  # what its step runs (a schema editor's execute)
        cursor.execute(migration.HINT_SQL)
    held = Unit.objects.filter(study=risk_study, assigned_count__gte=1)
    assert held.count() == 2
    for unit in held:
        assert unit.holder == min(holders_of(unit.pk))
    assert not Unit.objects.filter(assigned_count=0, holder__isnull=False).exists()
