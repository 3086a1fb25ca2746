"""Moving models between modules changed no schema: an existing database migrates as is.

The models of each app live in its capabilities' ``models.py`` files (audit.archive,
audit.ledger, ...), re-exported by the app's ``models.py`` for Django's registry; app
labels and table names are those of the migrations, so no migration was added and a
database built before the move needs nothing: ``makemigrations`` finds no change, every
table keeps its name, and ``migrate`` on a database holding rows applies nothing and
loses nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotator.memberships.models import Membership, Role
from audit.archive.models import Study
from audit.archive.services import codebook_install_file

#: Every model's table, as the migrations made them before the move.
TABLES = {
    "audit.Codebook": "audit_codebook",
    "audit.Study": "audit_study",
    "audit.Query": "audit_query",
    "audit.Pipeline": "audit_pipeline",
    "audit.AnswerSnapshot": "audit_answersnapshot",
    "audit.SourceSnapshot": "audit_sourcesnapshot",
    "audit.ImportBatch": "audit_importbatch",
    "audit.Observation": "audit_observation",
    "audit.Tuple": "audit_tuple",
    "audit.Unit": "audit_unit",
    "audit.LedgerEntry": "audit_ledgerentry",
    "audit.LedgerHead": "audit_ledgerhead",
    "audit.ConformanceRun": "audit_conformancerun",
    "audit.StudyGate": "audit_studygate",
    "audit.OutcomeSummary": "audit_outcomesummary",
    "audit.PartitionState": "audit_partitionstate",
    "audit.StudyFreeze": "audit_studyfreeze",
    "audit.Release": "audit_release",
    "audit.UnitRecordText": "audit_unitrecordtext",
    "annotator.Assignment": "annotator_assignment",
    "annotator.Draft": "annotator_draft",
    "annotator.Label": "annotator_label",
    "annotator.LabelSight": "annotator_labelsight",
    "annotator.QueueSeed": "annotator_queueseed",
    "annotator.QueueOrder": "annotator_queueorder",
    "annotator.QueuePosition": "annotator_queueposition",
    "annotator.Membership": "annotator_membership",
    "annotator.OutcomeWaiting": "annotator_outcomewaiting",
    "annotator.QualityPlan": "annotator_qualityplan",
    "annotator.GoldItem": "annotator_golditem",
    "annotator.KeptDraft": "annotator_keptdraft",
    "annotator.QualitySummary": "annotator_qualitysummary",
    "metrics.StudyReport": "metrics_studyreport",
    "metrics.PredictionSet": "metrics_predictionset",
    "metrics.Prediction": "metrics_prediction",
    "metrics.VeriScoreCohort": "metrics_veriscorecohort",
    "metrics.ComparisonSummary": "metrics_comparisonsummary",
    "metrics.ComparisonSetting": "metrics_comparisonsetting",
}


@pytest.mark.django_db
def test_the_models_need_no_new_migration():
    # Exits with status 1 if any model differs from what the migrations build.
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_every_model_keeps_its_app_label_and_table():
    found = {
        f"{model._meta.app_label}.{model.__name__}": model._meta.db_table
        for label in ("audit", "annotator", "metrics")
        for model in apps.get_app_config(label).get_models()
    }
    assert found == TABLES


def test_each_model_is_defined_in_its_capability():
    assert apps.get_model("audit", "Study").__module__ == "audit.archive.models"
    assert apps.get_model("audit", "LedgerEntry").__module__ == "audit.ledger.models"
    assert apps.get_model("audit", "StudyFreeze").__module__ == "audit.partitions.models"
    assert apps.get_model("audit", "Release").__module__ == "audit.releases.models"
    assert apps.get_model("annotator", "Label").__module__ == "annotator.labelling.models"
    assert apps.get_model("annotator", "Membership").__module__ == "annotator.memberships.models"


@pytest.mark.django_db
def test_migrate_on_a_database_with_rows_applies_nothing_and_loses_nothing(settings):
    path = Path(settings.BASE_DIR) / "fixtures" / "codebooks" / "source-risk-1.0.0.json"
    codebook, _ = codebook_install_file(path=path)
    study = Study.objects.create(slug="kept", title="Kept", codebook=codebook)
    user = get_user_model().objects.create_user(username="kept")
    Membership.objects.create(study=study, user=user, role=Role.RESEARCHER)
    tables = set(connection.introspection.table_names())
    assert set(TABLES.values()) <= tables

    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    call_command("migrate", interactive=False, verbosity=0)

    assert Study.objects.get(slug="kept").codebook == codebook
    assert Membership.objects.filter(study__slug="kept", user=user).count() == 1
    assert set(connection.introspection.table_names()) == tables
