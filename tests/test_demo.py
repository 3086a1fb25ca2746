"""`make demo`'s data: both studies, the users, idempotent loading, pages served."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from annotator.labelling.services import assignment_next
from audit.archive.models import Study, Tuple

pytestmark = pytest.mark.django_db


def load() -> None:
    call_command("load_demo", "--allow-without-debug", stdout=None)


def test_demo_loads_both_studies_and_every_user(capsys):
    load()
    out = capsys.readouterr().out

    studies = {s.slug: s for s in Study.objects.select_related("codebook")}
    assert studies["demo-source-risk"].codebook.name == "source-risk"
    assert studies["demo-answer-claims"].codebook.name == "answer-claims"
    assert studies["demo-source-risk"].tuples.count() >= 30
    users = set(get_user_model().objects.values_list("username", flat=True))
    assert {"annotator1", "annotator2", "adjudicator", "researcher", "admin"} <= users
    for username in ("annotator1", "annotator2", "adjudicator", "researcher", "admin"):
        assert username in out
    assert "annotator1-demo" in out


def test_loading_the_demo_twice_changes_nothing():
    load()
    before = (Tuple.objects.count(), get_user_model().objects.count())
    load()
    assert (Tuple.objects.count(), get_user_model().objects.count()) == before


def test_demo_refuses_to_run_without_debug():
    with pytest.raises(CommandError, match="DEBUG"):
        call_command("load_demo")


def test_the_login_page_and_both_studies_are_served(client):
    load()
    assert client.get(reverse("login")).status_code == 200
    assert client.login(username="researcher", password="researcher-demo")
    home = client.get(reverse("home")).content.decode()
    assert "demo-source-risk" in home
    assert "demo-answer-claims" in home
    for slug in ("demo-source-risk", "demo-answer-claims"):
        assert client.get(reverse("study-detail", args=[slug])).status_code == 200


def test_anonymous_visitors_are_sent_to_login(client):
    response = client.get(reverse("home"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_loading_the_demo_again_leaves_a_frozen_study_as_it_is(capsys):
    from audit.archive.models import Unit
    from audit.partitions.services import study_freeze

    load()
    study = Study.objects.get(slug="demo-source-risk")
    Unit.objects.filter(study=study).update(partition="calibration")
    study_freeze(study=study, user=get_user_model().objects.get(username="researcher"))
    before = Tuple.objects.count()
    capsys.readouterr()

    load()

    assert "study demo-source-risk: frozen, left as it is" in capsys.readouterr().out
    assert Tuple.objects.count() == before


def test_missing_and_forbidden_pages_are_the_sites_own(client, django_user_model):
    load()
    client.force_login(django_user_model.objects.get(username="annotator1"))

    missing = client.get("/no/such/page/")
    forbidden = client.get(reverse("study-partitions", args=["demo-source-risk"]))

    assert missing.status_code == 404
    assert "Nothing here" in missing.content.decode()
    assert forbidden.status_code == 403
    assert "Not allowed" in forbidden.content.decode()
    for page in (missing, forbidden):
        body = page.content.decode()
        assert "Claimgate" in body
        assert "URLconf" not in body
        assert "Traceback" not in body


def test_the_demo_settings_show_no_debug_pages():
    import importlib

    from django.conf import settings as active

    dev = importlib.import_module("config.settings.dev")
    assert dev.DEBUG is False
    assert dev.CLAIMGATE_DEMO is True
    assert "whitenoise.middleware.WhiteNoiseMiddleware" in dev.MIDDLEWARE
    assert active.DEBUG is False


def test_the_demo_protocol_setting_shows_table_ii_at_once(client):
    load()
    slugs = ("demo-protocol-documents", "demo-protocol-rubric", "demo-protocol-pairs")
    annotator = get_user_model().objects.get(username="annotator1")
    for slug in slugs:
        study = Study.objects.get(slug=slug)
        # Every unit but the last has a final label; the queue hands out the last next.
        last = study.units.order_by("-id").first()
        assert study.units.filter(state="agreed").count() == study.units.count() - 1
        assert assignment_next(study=study, annotator=annotator).unit_id == last.pk
    assert client.login(username="researcher", password="researcher-demo")
    detail = client.get(reverse("study-detail", args=["demo-protocol-pairs"])).content.decode()
    assert reverse("study-comparison", args=["demo-protocol-pairs"]) in detail
    page = client.get(reverse("study-comparison", args=["demo-protocol-pairs"])).content.decode()
    for slug in slugs:
        assert slug in page
    assert "NetGain = (N<sub>G</sub> − N<sub>B</sub>) / N" in page
    assert "no final label decides" not in page
    assert "no study of this protocol" not in page


def test_the_demo_comparison_shows_each_annotators_share_of_left_picks(client):
    load()
    study = Study.objects.get(slug="demo-protocol-pairs")
    assert client.login(username="researcher", password="researcher-demo")
    response = client.get(reverse("study-comparison", args=["demo-protocol-pairs"]))
    rows = response.context["left_shares"]
    # Both demo annotators judged every pair but the last; their picks are the sides they
    # saw (their orders differ), counted from the stored roles and sides.
    assert len(rows) == 2
    judged = study.units.count() - 1
    for row in rows:
        assert row["left"] + row["right"] + row["same"] + row["unresolved"] == judged
    assert 'id="position-bias"' in response.content.decode()
