from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.db.models import F, Value
from django.db.models.functions import Coalesce

from annotator.labelling.models import Assignment
from annotator.labelling.services import pair_left_is_evaluated_draw
from annotator.memberships.models import Membership, Role
from audit.archive.models import Study, Unit
from audit.archive.services import codebook_install_file, observations_import

FIXTURES = Path(settings.BASE_DIR) / "fixtures"


def make_study(slug: str, codebook: str, demo_file: str, overlap: int = 2) -> Study:
    codebooks = {
        path.stem: codebook_install_file(path=path)[0]
        for path in sorted((FIXTURES / "codebooks").glob("*.json"))
    }
    study = Study.objects.create(
        slug=slug, title=slug, codebook=codebooks[codebook], overlap=overlap
    )
    path = FIXTURES / "demo" / demo_file
    batch = observations_import(study=study, data=path.read_bytes(), file_name=path.name)
    assert batch.status != "rejected", batch.errors[:3]
    return study


@pytest.fixture
def risk_study(db):
    return make_study("risk", "source-risk-1.0.0", "source-risk.jsonl")


@pytest.fixture
def claims_study(db):
    return make_study("claims", "answer-claims-1.0.0", "answer-claims.jsonl")


def add_people(study: Study) -> dict:
    model = get_user_model()
    people = {}
    for name, role in (
        ("ann_a", Role.ANNOTATOR),
        ("ann_b", Role.ANNOTATOR),
        ("ann_c", Role.ANNOTATOR),
        ("adj", Role.ADJUDICATOR),
        ("res", Role.RESEARCHER),
    ):
        user, _ = model.objects.get_or_create(username=name)
        user.set_password("pw")
        user.save()
        Membership.objects.get_or_create(study=study, user=user, role=role)
        people[name] = user
    return people


@pytest.fixture
def people(risk_study):
    return add_people(risk_study)


def assign(unit: Unit, user: Any) -> Assignment:
    """Give ``user`` a slot on ``unit`` as the queue would (the slot counted on the unit):
    for tests about a particular unit, not about the queue's order."""
    mine = Assignment.objects.filter(study=unit.study, annotator=user).count()
    assignment = Assignment.objects.create(
        study=unit.study,
        unit=unit,
        annotator=user,
        number=mine + 1,
        # an answer pair's order for this annotator, drawn as the queue draws it
        pair_left_is_evaluated=pair_left_is_evaluated_draw(
            study=unit.study, annotator_id=user.pk, unit_id=unit.pk
        ),
    )
    Unit.objects.filter(pk=unit.pk).update(
        assigned_count=F("assigned_count") + 1, holder=Coalesce(F("holder"), Value(user.pk))
    )
    return assignment
