"""The freeze: its refusals, its record (digests that recompute), and what it makes
irreversible — in the services and in the database itself (triggers, migration 0009).
Run on SQLite by default and on PostgreSQL with DATABASE_URL pointing at it."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from audit.archive.models import Observation, Pipeline, Study, Unit
from audit.contract.canonical import canonical_digest
from audit.ledger.gate import (
    NO_RELIABILITY,
    STAGES,
    FieldAlpha,
    GateInputs,
    ReliabilityInputs,
    evaluate_gate,
)
from audit.ledger.services import gate_inputs
from audit.partitions.models import StudyFreeze
from audit.partitions.rules import LEAKAGE, NO_UNITS, UNASSIGNED_UNITS, ShareRule, ValuesRule
from audit.partitions.services import (
    ALREADY_FROZEN,
    STUDY_FROZEN,
    PartitionError,
    freeze_preview,
    partition_overview,
    partition_rule_apply,
    study_freeze,
    study_thresholds_set,
)
from tests.partitions.conftest import LEAKY, SPLIT

pytestmark = pytest.mark.django_db


def refused(code, call, **kwargs):
    with pytest.raises(PartitionError) as refusal:
        call(**kwargs)
    assert refusal.value.code == code, refusal.value.message
    return refusal.value.message


def raw(sql, params):
    """A statement behind the application's back, in its own savepoint."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(sql, params)


def test_freeze_is_refused_while_units_are_unassigned(study, people):
    message = refused(UNASSIGNED_UNITS, study_freeze, study=study, user=people["res"])

    assert f"35 of {Unit.objects.filter(study=study).count()} units have no partition" in message
    assert not StudyFreeze.objects.exists()


def test_freeze_is_refused_while_a_group_leaks(study, people):
    preview = partition_rule_apply(study=study, rule=LEAKY)
    assert preview.leaks

    message = refused(LEAKAGE, study_freeze, study=study, user=people["res"])

    assert "2 groups appear in both partitions (2 query templates)" in message
    assert not StudyFreeze.objects.exists()


def test_freeze_is_refused_for_a_study_without_units(db, people):
    empty = Study.objects.create(slug="empty", title="empty", codebook=Study.objects.get().codebook)

    refused(NO_UNITS, study_freeze, study=empty, user=people["res"])


def test_freeze_records_digests_that_recompute(study, people):
    study_thresholds_set(study=study, thresholds={"priority_review": 0.6, "k_min": 2})
    partition_rule_apply(study=study, rule=SPLIT)
    assert partition_overview(study=study).leaks == []

    freeze = study_freeze(study=study, user=people["res"])

    freeze = StudyFreeze.objects.get(pk=freeze.pk)
    units = list(Unit.objects.filter(study=study).values_list("digest", "partition"))
    pipelines = sorted(
        Pipeline.objects.filter(
            pk__in=Observation.objects.filter(study=study).values("pipeline_id")
        ).values("name", "version", "key"),
        key=lambda p: (p["name"], p["version"], p["key"]),
    )
    assert freeze.codebook_digest == study.codebook.digest
    assert freeze.pipelines == pipelines
    assert len(pipelines) == 2
    assert freeze.pipelines_digest == canonical_digest(pipelines)
    # The reliability thresholds the gate compares alphas with are frozen too, with their
    # defaults where the study did not set them.
    assert freeze.thresholds == {
        "priority_review": 0.6,
        "k_min": 2,
        "reliability_tentative": 0.667,
        "reliability_firm": 0.8,
    }
    assert freeze.thresholds_digest == canonical_digest(freeze.thresholds)
    assert freeze.partition_digest == canonical_digest(sorted([d, p] for d, p in units))
    assert freeze.partition_counts == {"calibration": 23, "test": 12}
    assert freeze.frozen_by == people["res"]
    assert freeze.frozen_at is not None


def test_a_second_freeze_is_refused(study, people):
    partition_rule_apply(study=study, rule=SPLIT)
    study_freeze(study=study, user=people["res"])

    message = refused(ALREADY_FROZEN, study_freeze, study=study, user=people["res"])

    assert "irreversible" in message
    assert StudyFreeze.objects.count() == 1


def test_partitions_cannot_change_after_the_freeze_by_the_services(study, people):
    partition_rule_apply(study=study, rule=SPLIT)
    study_freeze(study=study, user=people["res"])
    before = list(Unit.objects.filter(study=study).values_list("digest", "partition"))

    refused(STUDY_FROZEN, partition_rule_apply, study=study, rule=ShareRule("domain", 0.5, "1"))

    assert list(Unit.objects.filter(study=study).values_list("digest", "partition")) == before


def test_partitions_cannot_change_after_the_freeze_in_the_database(study, people):
    partition_rule_apply(study=study, rule=SPLIT)
    unit = Unit.objects.filter(study=study, partition="calibration").first()
    # Before the freeze, the database lets a partition change.
    raw("UPDATE audit_unit SET partition = 'test' WHERE id = %s", [unit.pk])
    raw("UPDATE audit_unit SET partition = 'calibration' WHERE id = %s", [unit.pk])
    study_freeze(study=study, user=people["res"])

    for value in ("'test'", "NULL"):
        with pytest.raises(IntegrityError, match="refused"):
            raw(f"UPDATE audit_unit SET partition = {value} WHERE id = %s", [unit.pk])  # noqa: S608
    with pytest.raises(IntegrityError), transaction.atomic():
        Unit.objects.filter(study=study).update(partition="calibration")

    unit.refresh_from_db()
    assert unit.partition == "calibration"
    # What the queue and the jobs write to a unit stays writable.
    raw(
        "UPDATE audit_unit SET assigned_count = 1, state = 'partially_labelled', "
        "priority = 0.5, partition = partition WHERE id = %s",
        [unit.pk],
    )
    unit.refresh_from_db()
    assert (unit.assigned_count, unit.priority) == (1, 0.5)


def test_other_studies_keep_changing_their_partitions(study, people):
    from tests.annotation.conftest import make_study

    other = make_study("part-other", "source-risk-1.0.0", "source-risk.jsonl")
    partition_rule_apply(study=study, rule=SPLIT)
    study_freeze(study=study, user=people["res"])

    partition_rule_apply(study=other, rule=SPLIT)
    raw("UPDATE audit_unit SET partition = 'test' WHERE study_id = %s", [other.pk])

    assert not Unit.objects.filter(study=other, partition="calibration").exists()


@pytest.mark.postgres
def test_on_postgresql_the_refusal_is_a_restrict_violation(study, people):
    partition_rule_apply(study=study, rule=SPLIT)
    study_freeze(study=study, user=people["res"])

    with pytest.raises(IntegrityError) as refusal:
        raw("UPDATE audit_unit SET partition = 'test' WHERE study_id = %s", [study.pk])

    assert refusal.value.__cause__.sqlstate == "23001"


def test_thresholds_are_frozen_by_the_service_and_the_database(study, people):
    study_thresholds_set(study=study, thresholds={"priority_review": 0.6})
    partition_rule_apply(study=study, rule=SPLIT)
    study_freeze(study=study, user=people["res"])

    refused(STUDY_FROZEN, study_thresholds_set, study=study, thresholds={"priority_review": 0.9})
    message = refused(
        STUDY_FROZEN, study_thresholds_set, study=study, thresholds={"reliability_tentative": 0.5}
    )
    assert "is frozen: its thresholds can no longer change" in message
    with pytest.raises(IntegrityError):
        raw(
            "UPDATE audit_study SET thresholds = %s WHERE id = %s",
            ['{"priority_review": 0.9}', study.pk],
        )
    other_codebook = type(study.codebook).objects.exclude(pk=study.codebook_id).first()
    with pytest.raises(IntegrityError):
        raw(
            "UPDATE audit_study SET codebook_id = %s WHERE id = %s",
            [other_codebook.pk, study.pk],
        )
    # The title is not frozen.
    raw("UPDATE audit_study SET title = 'renamed' WHERE id = %s", [study.pk])
    study.refresh_from_db()
    assert study.thresholds == {
        "priority_review": 0.6,
        "reliability_tentative": 0.667,
        "reliability_firm": 0.8,
    }
    assert study.title == "renamed"


def test_reliability_thresholds_are_alphas_in_order(study):
    for bad in (
        {"reliability_tentative": 1.5},
        {"reliability_firm": -0.1},
        {"reliability_tentative": 0.9, "reliability_firm": 0.8},
        {"reliability_tentative": 0.9},  # above the default firm threshold
    ):
        refused("invalid_thresholds", study_thresholds_set, study=study, thresholds=bad)
    study_thresholds_set(
        study=study, thresholds={"reliability_tentative": 0.7, "reliability_firm": 0.9}
    )
    study.refresh_from_db()
    assert study.thresholds == {"reliability_tentative": 0.7, "reliability_firm": 0.9}


def test_thresholds_are_validated(study):
    refused("invalid_thresholds", study_thresholds_set, study=study, thresholds={"cut": "high"})
    refused("invalid_thresholds", study_thresholds_set, study=study, thresholds=[0.5])

    study_thresholds_set(study=study, thresholds={"cut": 0.5})
    study.refresh_from_db()
    assert study.thresholds == {"cut": 0.5}


def test_the_freeze_preview_is_what_the_freeze_records(study, people):
    partition_rule_apply(study=study, rule=SPLIT)
    preview = freeze_preview(study=study)

    freeze = study_freeze(study=study, user=people["res"])

    assert preview.problems() == []
    assert (preview.partition_digest, preview.pipelines_digest, preview.thresholds_digest) == (
        freeze.partition_digest,
        freeze.pipelines_digest,
        freeze.thresholds_digest,
    )


# --- the gate's last stage ------------------------------------------------------------


REPORTED = ReliabilityInputs(
    computed=True,
    current=True,
    alphas=(FieldAlpha("I", "I", "unassisted", 0.9, 0.8, 0.95),),
    tentative=0.667,
    firm=0.8,
)


def met_inputs(**changes) -> GateInputs:
    values = {
        "checker_version": "1",
        "conformance_passed": True,
        "records_total": 10,
        "records_refused": 0,
        "units_total": 5,
        "units_fully_labelled": 5,
        "overlap": 2,
        "reliability": REPORTED,
        "units_disputed": 0,
        "units_adjudicated": 1,
        "frozen": True,
    }
    return GateInputs(**{**values, **changes})


def test_the_gate_reaches_frozen_only_with_every_stage_before_it_met():
    assert evaluate_gate(met_inputs()).reached == "frozen"
    assert evaluate_gate(met_inputs(frozen=False)).reached == "adjudicated"
    assert evaluate_gate(met_inputs(leakage=2)).reached == "adjudicated"
    # A freeze does not make up for an earlier stage that is not met.
    for unmet, reached in (
        ({"conformance_passed": None}, None),
        ({"records_refused": 1}, "conformance"),
        ({"units_fully_labelled": 4}, "structural"),
        ({"reliability": NO_RELIABILITY}, "independent_labels"),
        ({"units_disputed": 1}, "reliability_reported"),
    ):
        report = evaluate_gate(met_inputs(**unmet))
        assert report.reached == reached, unmet
        assert report.stages[STAGES.index("frozen")].met  # frozen itself, but not reached


def test_gate_inputs_read_frozen_after_study_freeze(study, people):
    partition_rule_apply(study=study, rule=SPLIT)
    assert gate_inputs(study=study).frozen is False

    study_freeze(study=study, user=people["res"])

    assert gate_inputs(study=study).frozen is True
    frozen_stage = evaluate_gate(gate_inputs(study=study)).stages[STAGES.index("frozen")]
    assert frozen_stage.met


def test_a_rule_by_template_is_frozen_as_applied(study, people):
    rule = ValuesRule("template_id", frozenset({"opening-hours-on-date", "best-venue-near"}))
    preview = partition_rule_apply(study=study, rule=rule)
    assert preview.leaks == []  # those templates are exactly the split's domains

    freeze = study_freeze(study=study, user=people["res"])

    assert freeze.partition_counts == {"calibration": 23, "test": 12}
