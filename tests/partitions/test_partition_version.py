"""The partition version moves with every change of a unit's partition, whatever writes it
(a database trigger, audit 0025): services, a bulk ORM update or a raw statement."""

from __future__ import annotations

from django.db import connection

from audit.archive.models import Unit
from audit.partitions.models import PartitionState
from audit.partitions.services import partition_rule_apply
from tests.partitions.conftest import SPLIT


def partition_version(study) -> int:
    row = PartitionState.objects.filter(study=study).values_list("version", flat=True).first()
    return row or 0


def test_a_rule_moves_the_version_once_and_an_unchanged_write_does_not(study):
    assert partition_version(study) == 0
    partition_rule_apply(study=study, rule=SPLIT)
    moved = partition_version(study)
    assert moved >= 1
    partition_rule_apply(study=study, rule=SPLIT)  # every unit keeps its partition
    assert partition_version(study) == moved
    Unit.objects.filter(study=study).update(assigned_count=0)  # not a partition change
    assert partition_version(study) == moved


def test_a_direct_update_of_a_units_partition_moves_the_version(study):
    partition_rule_apply(study=study, rule=SPLIT)
    before = partition_version(study)
    unit = Unit.objects.filter(study=study, partition="test").first()
    Unit.objects.filter(pk=unit.pk).update(partition="calibration")
    assert partition_version(study) > before
    after_orm = partition_version(study)
    table = connection.ops.quote_name(Unit._meta.db_table)
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {table} SET partition = 'test' WHERE id = %s", [unit.pk])  # noqa: S608
    assert partition_version(study) > after_orm
