from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import get_user_model

from annotator.memberships.models import Membership, Role
from audit.archive.models import Study
from audit.archive.services import codebook_install_file

CODEBOOKS = Path(settings.BASE_DIR) / "fixtures" / "codebooks"


@pytest.fixture
def codebooks(db):
    return {
        path.stem: codebook_install_file(path=path)[0] for path in sorted(CODEBOOKS.glob("*.json"))
    }


@pytest.fixture
def study(codebooks):
    return Study.objects.create(
        slug="routers", title="Routers", codebook=codebooks["source-risk-1.0.0"]
    )


@pytest.fixture
def people(study):
    model = get_user_model()
    users = {}
    for name, role in (
        ("researcher", Role.RESEARCHER),
        ("annotator", Role.ANNOTATOR),
        ("outsider", None),
    ):
        users[name] = model.objects.create_user(username=name, password="pw-" + name)
        if role:
            Membership.objects.create(study=study, user=users[name], role=role)
    return users
