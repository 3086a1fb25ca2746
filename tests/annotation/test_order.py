"""Issue 14 item 4: each annotator's queue follows a seeded permutation of their own,
recorded server-side and reproducible from the study's seed and the annotator."""

from __future__ import annotations

import sqlite3

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotator.labelling.models import QueueOrder, QueuePosition, QueueSeed
from annotator.labelling.order import (
    P,
    answer_pair_left_is_evaluated,
    order_key,
    order_key_sql,
    order_of,
    order_parameters,
)
from annotator.labelling.services import assignment_next
from audit.archive.models import Study
from audit.archive.services import codebook_install_file, observations_import
from tests.annotation.conftest import FIXTURES, add_people, make_study
from tests.annotation.test_queue import submit

# --- pure: no database -------------------------------------------------------------------


def test_the_key_is_a_permutation_of_unit_ids():
    parameters = order_parameters(seed=12345, annotator_id=7)
    ids = [*range(1, 5001), P - 1, P - 2]
    keys = [order_key(parameters, unit_id) for unit_id in ids]
    assert len(set(keys)) == len(ids)
    assert all(0 <= key < P for key in keys)


def test_two_annotators_get_different_orders_and_each_is_reproducible():
    units = list(range(100, 160))
    first = order_of(seed=99, annotator_id=1, unit_ids=units)
    second = order_of(seed=99, annotator_id=2, unit_ids=units)
    assert sorted(first) == sorted(second) == units
    assert first != second
    assert first != units  # not the id order either
    assert order_of(seed=99, annotator_id=1, unit_ids=list(reversed(units))) == first
    # another study (another seed) gives the same annotator another order
    assert order_of(seed=100, annotator_id=1, unit_ids=units) != first


def test_the_database_computes_the_same_key_as_python():
    """The SQL expression (what the queue stores) is the pure function, to the integer."""
    parameters = order_parameters(seed=2**61 + 3, annotator_id=42)
    ids = [1, 2, 3, 1000, 65_537, 2**31 - 2, 2**31 - 1, 2**31, 2**40 + 17]
    database = sqlite3.connect(":memory:")
    database.execute("CREATE TABLE u (id INTEGER)")
    database.executemany("INSERT INTO u VALUES (?)", [(i,) for i in ids])
    rows = database.execute(f"SELECT id, {order_key_sql(parameters, 'id')} FROM u ORDER BY id")  # noqa: S608
    assert {unit_id: key for unit_id, key in rows} == {
        unit_id: order_key(parameters, unit_id) for unit_id in ids
    }


def test_pair_sides_are_drawn_per_annotator_and_unit_and_reproducible():
    draws = [
        answer_pair_left_is_evaluated(seed=5, annotator_id=a, unit_id=u)
        for a in (1, 2)
        for u in range(200)
    ]
    assert 150 < sum(draws) < 250  # about half on each side
    assert draws[:200] != draws[200:]
    assert answer_pair_left_is_evaluated(seed=5, annotator_id=2, unit_id=17) == draws[217]


# --- the queue -------------------------------------------------------------------------


def walk(study, annotator) -> list[int]:
    handed = []
    while (assignment := assignment_next(study=study, annotator=annotator)) is not None:
        handed.append(assignment.unit_id)
        submit(assignment)
    return handed


@pytest.mark.django_db
def test_each_annotator_is_handed_units_in_their_own_recorded_order():
    # Overlap 3: nobody takes a unit away from the others, so each walk is the whole order.
    study = make_study("order", "source-risk-1.0.0", "source-risk.jsonl", overlap=3)
    people = add_people(study)
    units = list(study.units.values_list("pk", flat=True))

    seen_a = walk(study, people["ann_a"])
    seen_b = walk(study, people["ann_b"])

    seed = QueueSeed.objects.get(study=study).seed
    assert seen_a == order_of(seed=seed, annotator_id=people["ann_a"].pk, unit_ids=units)
    assert seen_b == order_of(seed=seed, annotator_id=people["ann_b"].pk, unit_ids=units)
    assert seen_a != seen_b
    assert sorted(seen_a) == sorted(seen_b) == sorted(units)
    # Recorded: each order names the seed it was drawn from, and every unit's key.
    order = QueueOrder.objects.get(study=study, annotator=people["ann_a"])
    assert order.seed == seed
    stored = list(
        QueuePosition.objects.filter(order=order).order_by("key").values_list("unit_id", flat=True)
    )
    assert stored == seen_a


def study_of_lines(slug: str, lines: list[bytes], overlap: int = 2) -> Study:
    codebook, _ = codebook_install_file(path=FIXTURES / "codebooks" / "source-risk-1.0.0.json")
    study = Study.objects.create(slug=slug, title=slug, codebook=codebook, overlap=overlap)
    batch = observations_import(
        study=study, data=b"".join([HEADER, *lines]), file_name="first.jsonl"
    )
    assert batch.status != "rejected", batch.errors[:3]
    return study


HEADER, *LINES = (FIXTURES / "demo" / "source-risk.jsonl").read_bytes().splitlines(keepends=True)


@pytest.mark.django_db
def test_units_imported_after_the_order_was_drawn_are_handed_out_too():
    half = len(LINES) // 2
    study = study_of_lines("later-half", LINES[:half])
    people = add_people(study)
    first = walk(study, people["ann_a"])
    assert sorted(first) == sorted(study.units.values_list("pk", flat=True))

    batch = observations_import(
        study=study, data=b"".join([HEADER, *LINES[half:]]), file_name="rest.jsonl"
    )
    assert batch.status != "rejected", batch.errors[:3]
    second = walk(study, people["ann_a"])

    assert second
    assert not set(second) & set(first)
    assert sorted(first + second) == sorted(study.units.values_list("pk", flat=True))


@pytest.mark.django_db
def test_next_unit_costs_the_same_queries_whatever_the_number_of_units():
    small = study_of_lines("few", LINES[: len(LINES) // 3])
    large = make_study("many", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    assert small.units.count() < large.units.count()
    counts = []
    for study in (small, large):
        people = add_people(study)
        submit(assignment_next(study=study, annotator=people["ann_a"]))  # draws the order
        with CaptureQueriesContext(connection) as queries:
            assignment_next(study=study, annotator=people["ann_a"])
        counts.append(len(queries))
    assert counts[0] == counts[1]
    assert counts[0] <= 16  # the walk, and the gold, pause and item-number checks
