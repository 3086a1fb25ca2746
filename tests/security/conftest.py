from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from annotator.memberships.models import Membership, Role
from audit.archive.models import Study
from audit.archive.services import codebook_install_file

CODEBOOKS = Path(settings.BASE_DIR) / "fixtures" / "codebooks"
PASSWORD = "a-long-test-passphrase"


@pytest.fixture
def study(db):
    codebook = codebook_install_file(path=CODEBOOKS / "source-risk-1.0.0.json")[0]
    return Study.objects.create(slug="routers", title="Routers", codebook=codebook, overlap=2)


@pytest.fixture
def people(study):
    """A researcher, an annotator and an adjudicator of ``study``, someone who belongs to
    no study, and a superuser; every password is PASSWORD."""
    model = get_user_model()
    users = {}
    for name, role in (
        ("researcher", Role.RESEARCHER),
        ("annotator", Role.ANNOTATOR),
        ("adjudicator", Role.ADJUDICATOR),
        ("outsider", None),
    ):
        users[name] = model.objects.create_user(username=name, password=PASSWORD)
        if role:
            Membership.objects.create(study=study, user=users[name], role=role)
    users["admin"] = model.objects.create_superuser(
        username="admin", password=PASSWORD, email="admin@example.org"
    )
    return users


@pytest.fixture
def lockout(settings):
    """Switch the login lockout on (test settings keep it off for the test client's login)."""
    settings.AXES_ENABLED = True
    return settings
