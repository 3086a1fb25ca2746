"""Study versions over the same archive, and the test partition's numbers sealed until
the freeze (outcomes page and selectors)."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from django.urls import reverse

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.models import Label
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from annotator.memberships.models import Membership
from audit.archive.models import (
    AnswerSnapshot,
    Codebook,
    ImportBatch,
    Observation,
    Query,
    SourceSnapshot,
    Study,
    Tuple,
    Unit,
)
from audit.ledger.selectors import study_outcomes
from audit.partitions.models import StudyFreeze
from audit.partitions.rules import ValuesRule
from audit.partitions.selectors import partition_sealed
from audit.partitions.services import (
    INVALID_VERSION,
    SLUG_TAKEN,
    PartitionError,
    partition_rule_apply,
    study_freeze,
    study_version_create,
)
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import make_study
from tests.partitions.conftest import SPLIT, TEST_DOMAINS

pytestmark = pytest.mark.django_db


def archive_counts():
    return [model.objects.count() for model in (Query, AnswerSnapshot, SourceSnapshot, ImportBatch)]


def test_a_new_version_copies_the_archive_rows_members_and_partitions_not_labels(
    study, people, django_assert_max_num_queries
):
    partition_rule_apply(study=study, rule=SPLIT)
    label_one(study, people["ann_a"])
    study_freeze(study=study, user=people["res"])
    before = archive_counts()

    with django_assert_max_num_queries(14):
        new = study_version_create(
            study=study, slug="part-v2", title="Partitions, version 2", user=people["res"]
        )

    new = Study.objects.get(pk=new.pk)
    assert new.previous_version == study
    assert new.codebook == study.codebook
    assert new.overlap == study.overlap
    assert new.created_by == people["res"]
    assert archive_counts() == before  # nothing imported again
    for model in (Observation, Tuple, Unit):
        old_rows = model.objects.filter(study=study).count()
        assert model.objects.filter(study=new).count() == old_rows > 0
    assert sorted(Tuple.objects.filter(study=new).values_list("digest", "source_id")) == sorted(
        Tuple.objects.filter(study=study).values_list("digest", "source_id")
    )
    assert sorted(Unit.objects.filter(study=new).values_list("digest", "partition")) == sorted(
        Unit.objects.filter(study=study).values_list("digest", "partition")
    )
    # Every copied tuple unit hangs off the copied tuple and observation, not the old ones.
    for unit in Unit.objects.filter(study=new).select_related("tuple", "observation"):
        assert unit.tuple.study_id == new.pk
        assert unit.observation.study_id == new.pk
        assert unit.tuple.observation_id == unit.observation_id
        assert (unit.state, unit.assigned_count, unit.submitted_count) == ("open", 0, 0)
    assert sorted(
        Membership.objects.filter(study=new).values_list("user_id", "role", "pseudonym")
    ) == sorted(Membership.objects.filter(study=study).values_list("user_id", "role", "pseudonym"))
    assert not Label.objects.filter(study=new).exists()
    assert not StudyFreeze.objects.filter(study=new).exists()
    # Not frozen: its partitions change again.
    partition_rule_apply(study=new, rule=ValuesRule("domain", frozenset({"retail-books"})))


def test_a_new_version_of_an_answer_claims_study(db):
    study = make_study("claims-v1", "answer-claims-1.0.0", "answer-claims.jsonl")

    new = study_version_create(study=study, slug="claims-v2", title="v2", user=None)

    assert Unit.objects.filter(study=new, tuple__isnull=True).count() == (
        Unit.objects.filter(study=study).count()
    )
    for unit in Unit.objects.filter(study=new).select_related("observation"):
        assert unit.observation.study_id == new.pk
        assert unit.observation.unit_digest == unit.digest


def test_a_new_version_may_take_a_newer_codebook_version_only(study):
    newer = Codebook.objects.create(
        name=study.codebook.name,
        version="9.9.9",
        unit=study.codebook.unit,
        title="newer",
        definition={**study.codebook.definition, "version": "9.9.9"},
        digest="e" * 64,
    )
    other = Codebook.objects.exclude(name=study.codebook.name).first()

    new = study_version_create(study=study, slug="part-v2", title="v2", user=None, codebook=newer)
    assert new.codebook == newer
    with pytest.raises(PartitionError) as refusal:
        study_version_create(study=study, slug="part-v3", title="v3", user=None, codebook=other)
    assert refusal.value.code == INVALID_VERSION
    with pytest.raises(PartitionError) as refusal:
        study_version_create(study=study, slug="part-v2", title="again", user=None)
    assert refusal.value.code == SLUG_TAKEN
    with pytest.raises(PartitionError) as refusal:
        study_version_create(study=study, slug="not a slug", title="x", user=None)
    assert refusal.value.code == INVALID_VERSION


# --- sealing ----------------------------------------------------------------------------


def label_one(study, user, values=(1, 1, 1, 0)):
    assignment = assignment_next(study=study, annotator=user)
    label = label_submit(
        assignment=assignment,
        annotation=source_risk(unit_content(unit=assignment.unit), values=values),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label
    label_submitted.run(label.pk)
    return label


def test_test_numbers_open_on_the_outcomes_page_only_after_the_freeze(study, people):
    first = label_one(study, people["ann_a"])
    second = label_one(study, people["ann_b"])
    assert first.unit_id == second.unit_id
    unit = Unit.objects.select_related("observation__query").get(pk=first.unit_id)
    # Put the labelled unit in test, whichever domain it has (the complement of a
    # leakage-free split is leakage-free too).
    domains = {
        d
        for d in Unit.objects.filter(study=study).values_list(
            "observation__query__domain", flat=True
        )
    }
    to_test = (
        TEST_DOMAINS if unit.observation.query.domain in TEST_DOMAINS else domains - TEST_DOMAINS
    )
    partition_rule_apply(study=study, rule=ValuesRule("domain", frozenset(to_test)))
    client = Client()
    client.force_login(people["res"])
    url = reverse("study-outcomes", args=[study.slug])

    sealed = client.get(url)
    assert partition_sealed(Study.objects.get(pk=study.pk), "test")
    assert sealed.context["outcomes"].sealed_partitions == ["test"]
    assert "sealed until the study is frozen" in sealed.content.decode()
    test_table = next(t for t in sealed.context["outcomes"].final if t.partition == "test")
    assert test_table.sealed
    assert test_table.records == 0

    study_freeze(study=study, user=people["res"])

    opened = client.get(url)
    assert not partition_sealed(Study.objects.get(pk=study.pk), "test")
    assert opened.context["outcomes"].sealed_partitions == []
    assert "sealed until the study is frozen" not in opened.content.decode()
    test_table = next(t for t in opened.context["outcomes"].final if t.partition == "test")
    assert not test_table.sealed
    assert test_table.records == 1
    assert study_outcomes(study=Study.objects.get(pk=study.pk)).sealed_partitions == []


def test_sealing_reads_the_freeze_once_per_study_instance(study, people, django_assert_num_queries):
    partition_rule_apply(study=study, rule=SPLIT)
    fresh = Study.objects.get(pk=study.pk)
    with django_assert_num_queries(1):
        for _ in range(5):
            assert partition_sealed(fresh, "test")
    with django_assert_num_queries(0):
        assert not partition_sealed(fresh, "calibration")

    study_freeze(study=fresh, user=people["res"])

    with django_assert_num_queries(0):
        assert not partition_sealed(fresh, "test")  # study_freeze set the cache
