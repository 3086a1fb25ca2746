"""The researcher's people page: members and roles, adding a member, setting k; only
researchers (and superusers) may use it."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.messages import get_messages
from django.urls import reverse

from annotator.memberships.models import Membership, Role
from audit.archive.models import Study

pytestmark = pytest.mark.django_db


@pytest.fixture
def url(study):
    return reverse("study-people", args=[study.slug])


@pytest.fixture
def newcomer(db):
    return get_user_model().objects.create_user(username="newcomer", password="x")


def test_a_researcher_sees_every_member_with_username_and_role(client, url, people):
    client.force_login(people["researcher"])

    response = client.get(url)

    assert response.status_code == 200
    rows = [(m.user.username, m.role) for m in response.context["memberships"]]
    assert rows == [
        ("adjudicator", Role.ADJUDICATOR),
        ("annotator", Role.ANNOTATOR),
        ("researcher", Role.RESEARCHER),
    ]
    for name in ("adjudicator", "annotator", "researcher"):
        assert name.encode() in response.content
    assert b'<label for="id_username">' in response.content
    assert b'<label for="id_role">' in response.content
    assert b'<label for="id_overlap">' in response.content


def test_a_researcher_adds_a_member_with_a_role(client, url, study, people, newcomer):
    client.force_login(people["researcher"])

    response = client.post(
        url, {"action": "member-add", "username": "newcomer", "role": Role.ADJUDICATOR}
    )

    assert response.status_code == 302
    assert response["Location"] == url
    assert Membership.objects.filter(study=study, user=newcomer, role=Role.ADJUDICATOR).exists()
    [message] = get_messages(response.wsgi_request)
    assert message.level_tag == "success"
    assert "newcomer" in str(message)


def test_adding_a_role_someone_already_holds_changes_nothing(client, url, study, people):
    client.force_login(people["researcher"])

    response = client.post(
        url, {"action": "member-add", "username": "annotator", "role": Role.ANNOTATOR}
    )

    assert response.status_code == 302
    assert Membership.objects.filter(study=study, user=people["annotator"]).count() == 1


def test_an_unknown_username_is_a_clear_form_error(client, url, study, people):
    client.force_login(people["researcher"])
    before = Membership.objects.count()

    response = client.post(
        url, {"action": "member-add", "username": "nobody-here", "role": Role.ANNOTATOR}
    )

    assert response.status_code == 400
    errors = response.context["member_form"].errors
    assert "There is no account with the username “nobody-here”" in errors["username"][0]
    assert "There is no account with the username" in response.content.decode()
    assert Membership.objects.count() == before


def test_an_unknown_role_is_a_form_error(client, url, people, newcomer):
    client.force_login(people["researcher"])

    response = client.post(url, {"action": "member-add", "username": "newcomer", "role": "boss"})

    assert response.status_code == 400
    assert "role" in response.context["member_form"].errors
    assert not Membership.objects.filter(user=newcomer).exists()


def test_a_deactivated_account_is_refused(client, url, people, newcomer):
    newcomer.is_active = False
    newcomer.save()
    client.force_login(people["researcher"])

    response = client.post(
        url, {"action": "member-add", "username": "newcomer", "role": Role.ANNOTATOR}
    )

    assert response.status_code == 400
    assert "deactivated" in response.context["member_form"].errors["username"][0]


def test_a_researcher_sets_k(client, url, study, people):
    client.force_login(people["researcher"])

    response = client.post(url, {"action": "overlap-set", "overlap": "3"})

    assert response.status_code == 302
    assert Study.objects.get(pk=study.pk).overlap == 3
    [message] = get_messages(response.wsgi_request)
    assert str(message) == "Overlap k is now 3."


@pytest.mark.parametrize("value", ["0", "21", "-1"])
def test_k_out_of_range_is_a_clear_error(client, url, study, people, value):
    client.force_login(people["researcher"])

    response = client.post(url, {"action": "overlap-set", "overlap": value})

    assert response.status_code == 400
    assert response.context["overlap_form"].errors["overlap"] == [
        "The overlap k must be between 1 and 20."
    ]
    assert "The overlap k must be between 1 and 20." in response.content.decode()
    assert Study.objects.get(pk=study.pk).overlap == 2


@pytest.mark.parametrize("value", ["", "three", "2.5"])
def test_k_that_is_not_a_whole_number_is_an_error(client, url, study, people, value):
    client.force_login(people["researcher"])

    response = client.post(url, {"action": "overlap-set", "overlap": value})

    assert response.status_code == 400
    assert response.context["overlap_form"].errors["overlap"]
    assert Study.objects.get(pk=study.pk).overlap == 2


def test_an_unknown_action_changes_nothing(client, url, study, people):
    client.force_login(people["researcher"])

    response = client.post(url, {"action": "drop-table", "overlap": "5"})

    assert response.status_code == 400
    assert Study.objects.get(pk=study.pk).overlap == 2


@pytest.mark.parametrize("name", ["annotator", "adjudicator"])
def test_members_without_the_researcher_role_get_403(client, url, study, people, name):
    client.force_login(people[name])

    page = client.get(url)
    write = client.post(url, {"action": "overlap-set", "overlap": "5"})

    assert page.status_code == 403
    assert write.status_code == 403
    assert Study.objects.get(pk=study.pk).overlap == 2


def test_an_outsider_gets_404(client, url, study, people, newcomer):
    client.force_login(people["outsider"])

    page = client.get(url)
    write = client.post(url, {"action": "member-add", "username": "outsider", "role": "researcher"})

    assert page.status_code == 404
    assert write.status_code == 404
    assert not Membership.objects.filter(user=people["outsider"]).exists()


def test_a_missing_study_is_404(client, people):
    client.force_login(people["researcher"])

    assert client.get(reverse("study-people", args=["no-such-study"])).status_code == 404


def test_anonymous_visitors_are_sent_to_log_in(client, url):
    response = client.get(url)

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_a_superuser_may_manage_any_study(client, url, study, people, newcomer):
    client.force_login(people["admin"])

    response = client.post(
        url, {"action": "member-add", "username": "newcomer", "role": Role.RESEARCHER}
    )

    assert response.status_code == 302
    assert Membership.objects.filter(study=study, user=newcomer, role=Role.RESEARCHER).exists()


def test_the_member_list_takes_a_fixed_number_of_queries(
    client, url, study, people, django_assert_max_num_queries
):
    model = get_user_model()
    for number in range(30):
        user = model.objects.create_user(username=f"person{number:02d}")
        Membership.objects.create(study=study, user=user, role=Role.ANNOTATOR)
    client.force_login(people["researcher"])

    with django_assert_max_num_queries(8):
        response = client.get(url)

    assert len(response.context["memberships"]) == 33


def test_the_study_page_links_researchers_to_it(client, study, people, url):
    client.force_login(people["researcher"])
    researcher_page = client.get(reverse("study-detail", args=[study.slug]))
    client.force_login(people["adjudicator"])
    adjudicator_page = client.get(reverse("study-detail", args=[study.slug]))

    assert f'href="{url}"'.encode() in researcher_page.content
    assert f'href="{url}"'.encode() not in adjudicator_page.content
