"""The annotation API through HTTP: each endpoint, each status code it documents."""

from __future__ import annotations

import io
import json
import uuid

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.labelling.models import Assignment, Draft, Label
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, draft_save, label_submit
from annotator.memberships.models import Membership, Role
from audit.archive.models import Study
from audit.archive.services import codebook_install, observations_import
from audit.contract import codes
from tests.annotation.annotations import answer_claims, source_risk
from tests.annotation.conftest import FIXTURES, add_people

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_throttle_history():
    cache.clear()
    yield
    cache.clear()


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def take(study, user) -> Assignment:
    return assignment_next(study=study, annotator=user)


def annotation_for(assignment, **kwargs) -> dict:
    return source_risk(unit_content(unit=assignment.unit), **kwargs)


def submit_body(assignment, **kwargs) -> dict:
    return {"annotation": annotation_for(assignment, **kwargs), "client_submission_id": uuid4()}


def uuid4() -> str:
    return str(uuid.uuid4())


def labels_url(assignment) -> str:
    return reverse("api-assignment-labels", args=[assignment.pk])


def draft_url(assignment) -> str:
    return reverse("api-assignment-draft", args=[assignment.pk])


# --- GET /api/studies/{slug}/assignments/ ---------------------------------------------


def test_list_shows_only_the_callers_own_assignments(risk_study, people):
    mine = [take(risk_study, people["ann_a"])]
    label_submit(
        assignment=mine[0],
        annotation=annotation_for(mine[0]),
        client_submission_id=uuid4(),
        parent_digest=None,
    )
    mine.append(take(risk_study, people["ann_a"]))
    take(risk_study, people["ann_b"])

    response = api_as(people["ann_a"]).get(reverse("api-assignments", args=[risk_study.slug]))

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert [row["id"] for row in body["results"]] == [mine[1].pk, mine[0].pk]
    row = body["results"][1]
    assert row["submitted"] is True
    assert row["study"] == risk_study.slug
    assert row["url"].endswith(reverse("api-assignment", args=[mine[0].pk]))
    assert set(row) == {"id", "study", "query", "assigned_at", "submitted_at", "submitted", "url"}


def test_list_filters_on_submitted(risk_study, people):
    done = take(risk_study, people["ann_a"])
    label_submit(
        assignment=done,
        annotation=annotation_for(done),
        client_submission_id=uuid4(),
        parent_digest=None,
    )
    open_one = take(risk_study, people["ann_a"])
    url = reverse("api-assignments", args=[risk_study.slug])
    client = api_as(people["ann_a"])

    submitted = client.get(url, {"submitted": "true"}).json()["results"]
    still_open = client.get(url, {"submitted": "false"}).json()["results"]

    assert [row["id"] for row in submitted] == [done.pk]
    assert [row["id"] for row in still_open] == [open_one.pk]


def test_list_answers_400_naming_an_unknown_query_parameter(risk_study, people):
    url = reverse("api-assignments", args=[risk_study.slug])
    response = api_as(people["ann_a"]).get(url, {"submited": "false", "limit": 5})

    assert response.status_code == 400
    body = response.json()
    assert body["reason"] == "unknown_query_parameter"
    assert body["parameters"] == ["submited"]
    assert "submitted" in body["message"]


def test_list_answers_400_naming_an_invalid_filter_value(risk_study, people):
    url = reverse("api-assignments", args=[risk_study.slug])
    response = api_as(people["ann_a"]).get(url, {"submitted": "maybe"})

    assert response.status_code == 400
    assert response.json()["reason"] == "invalid_query_parameter"
    assert response.json()["parameters"] == ["submitted"]
    assert "maybe" in response.json()["message"]


def test_list_refuses_a_limit_or_offset_that_is_not_a_whole_number(risk_study, people):
    url = reverse("api-assignments", args=[risk_study.slug])
    client = api_as(people["ann_a"])

    for query in ({"offset": "null"}, {"limit": "0"}, {"limit": "-1"}, {"offset": "1.5"}):
        response = client.get(url, query)
        assert response.status_code == 400, query
        assert response.json()["reason"] == "invalid_query_parameter", query
    assert client.get(url, {"limit": "1", "offset": "0"}).status_code == 200


def test_list_paginates_with_limit_and_offset(risk_study, people):
    for _ in range(3):
        done = take(risk_study, people["ann_a"])
        label_submit(
            assignment=done,
            annotation=annotation_for(done),
            client_submission_id=uuid4(),
            parent_digest=None,
        )
    url = reverse("api-assignments", args=[risk_study.slug])

    body = api_as(people["ann_a"]).get(url, {"limit": 2, "offset": 1}).json()

    assert body["count"] == 3
    assert len(body["results"]) == 2
    assert body["previous"] is not None


def test_list_runs_a_fixed_number_of_queries(risk_study, people, django_assert_max_num_queries):
    for _ in range(4):
        done = take(risk_study, people["ann_a"])
        label_submit(
            assignment=done,
            annotation=annotation_for(done),
            client_submission_id=uuid4(),
            parent_digest=None,
        )
    url = reverse("api-assignments", args=[risk_study.slug])
    with django_assert_max_num_queries(8):
        assert api_as(people["ann_a"]).get(url).status_code == 200


def test_list_access_researcher_403_outsider_404_anonymous_401(risk_study, people):
    url = reverse("api-assignments", args=[risk_study.slug])
    outsider = type(people["ann_a"]).objects.create(username="outsider")

    assert api_as(people["res"]).get(url).status_code == 403
    assert api_as(outsider).get(url).status_code == 404
    assert api_as(people["ann_a"]).get(reverse("api-assignments", args=["nope"])).status_code == (
        404
    )
    anonymous = APIClient().get(url)
    assert anonymous.status_code == 401
    assert anonymous["WWW-Authenticate"] == "Token"


def test_study_list_refuses_unknown_query_parameters_and_hides_overlap(risk_study, people):
    client = api_as(people["ann_a"])

    refused = client.get(reverse("api-studies"), {"slug": "risk"})
    listed = client.get(reverse("api-studies"))

    assert refused.status_code == 400
    assert refused.json()["parameters"] == ["slug"]
    assert listed.status_code == 200
    assert "overlap" not in listed.json()[0]


# --- POST /api/studies/{slug}/assignments/next/ --------------------------------------


def test_next_hands_out_201_then_the_same_unfinished_one_200(risk_study, people):
    url = reverse("api-assignment-next", args=[risk_study.slug])
    client = api_as(people["ann_a"])

    first = client.post(url)
    again = client.post(url)

    assert first.status_code == 201
    assert first["Location"].endswith(reverse("api-assignment", args=[first.json()["id"]]))
    assert again.status_code == 200
    assert again.json()["id"] == first.json()["id"]
    assert first.json()["unit"]["kind"] == "tuple"


def test_next_answers_204_when_nothing_is_left(db):
    from tests.annotation.conftest import make_study

    study = make_study("tiny", "source-risk-1.0.0", "source-risk.jsonl", overlap=1)
    people = add_people(study)
    while (assignment := take(study, people["ann_b"])) is not None:
        label_submit(
            assignment=assignment,
            annotation=annotation_for(assignment),
            client_submission_id=uuid4(),
            parent_digest=None,
        )

    response = api_as(people["ann_a"]).post(reverse("api-assignment-next", args=[study.slug]))

    assert response.status_code == 204
    assert response.content == b""


def test_next_is_for_annotators_only(risk_study, people):
    url = reverse("api-assignment-next", args=[risk_study.slug])
    assert api_as(people["res"]).post(url).status_code == 403
    assert api_as(people["adj"]).post(url).status_code == 403
    assert Assignment.objects.count() == 0


def test_next_refuses_unknown_query_parameters(risk_study, people):
    url = reverse("api-assignment-next", args=[risk_study.slug])
    response = api_as(people["ann_a"]).post(url + "?force=1")
    assert response.status_code == 400
    assert response.json()["parameters"] == ["force"]
    assert Assignment.objects.count() == 0


# --- GET /api/assignments/{id}/ ---------------------------------------------------------


FORBIDDEN_KEYS = {"overlap", "priority", "state", "assigned_count", "submitted_count", "sampling"}


def all_keys(value) -> set[str]:
    if isinstance(value, dict):
        return set(value) | {key for item in value.values() for key in all_keys(item)}
    if isinstance(value, list):
        return {key for item in value for key in all_keys(item)}
    return set()


def test_detail_shows_the_unit_codebook_draft_and_head(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    first = label_submit(
        assignment=assignment,
        annotation=annotation_for(assignment),
        client_submission_id=uuid4(),
        parent_digest=None,
    ).label
    draft_save(assignment=assignment, payload={"note": "second look"}, base_version=None)

    response = api_as(people["ann_a"]).get(reverse("api-assignment", args=[assignment.pk]))

    assert response.status_code == 200
    body = response.json()
    content = unit_content(unit=assignment.unit)
    assert body["unit"] == {
        "kind": "tuple",
        "digest": content.digest,
        "query": content.query,
        "answer": content.answer,
        "source": content.source,
    }
    assert body["codebook"]["name"] == "source-risk"
    assert body["codebook"]["version"] == "1.0.0"
    assert body["codebook"]["definition"]["allow_assisted"] is True
    assert body["draft"]["payload"] == {"note": "second look"}
    assert body["draft"]["version"] == 1
    assert body["draft"]["etag"] == '"draft-1"'
    assert body["head"]["record_digest"] == first.record_digest
    assert body["head"]["revision"] == 1
    assert body["head"]["annotation"] == {
        **first.annotation,
        "evidence": {"d_Q": 0.5, "d_R": 0.25, "d_P": 1.0, "d_S": 0.0},
    }
    dimensions = body["codebook"]["definition"]["evidence_dimensions"]
    assert {item["key"] for item in dimensions} == {"d_Q", "d_R", "d_P", "d_S"}
    assert "weight" not in response.content.decode()
    assert body["head"]["assisted"] is None
    assert not all_keys(body) & FORBIDDEN_KEYS
    assert "overlap" not in response.content.decode().lower()
    assert "priority" not in response.content.decode().lower()


def test_detail_of_an_answer_unit_lists_its_sources(claims_study):
    people = add_people(claims_study)
    assignment = take(claims_study, people["ann_a"])

    body = api_as(people["ann_a"]).get(reverse("api-assignment", args=[assignment.pk])).json()

    content = unit_content(unit=assignment.unit)
    assert body["unit"]["kind"] == "answer"
    assert body["unit"]["sources"] == content.sources
    assert "source" not in body["unit"]
    assert body["draft"] is None
    assert body["head"] is None


def test_detail_of_someone_elses_assignment_is_404(risk_study, people):
    theirs = take(risk_study, people["ann_a"])
    url = reverse("api-assignment", args=[theirs.pk])

    assert api_as(people["ann_b"]).get(url).status_code == 404
    assert api_as(people["res"]).get(url).status_code == 404
    assert api_as(people["ann_a"]).get(reverse("api-assignment", args=[999999])).status_code == (
        404
    )
    assert APIClient().get(url).status_code == 401


def test_detail_runs_a_fixed_number_of_queries(claims_study, django_assert_max_num_queries):
    people = add_people(claims_study)
    assignment = take(claims_study, people["ann_a"])
    with django_assert_max_num_queries(10):
        response = api_as(people["ann_a"]).get(reverse("api-assignment", args=[assignment.pk]))
    assert response.status_code == 200


# --- PUT /api/assignments/{id}/draft/ ----------------------------------------------------


def test_draft_first_save_201_then_if_match_200_with_etags(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    client = api_as(people["ann_a"])

    created = client.put(draft_url(assignment), {"payload": {"I": 1}}, format="json")
    saved = client.put(
        draft_url(assignment),
        {"payload": {"I": 0}},
        format="json",
        HTTP_IF_MATCH='W/"draft-1"',
    )

    assert created.status_code == 201
    assert created["ETag"] == '"draft-1"'
    assert saved.status_code == 200
    assert saved["ETag"] == '"draft-2"'
    assert saved.json()["payload"] == {"I": 0}
    assert Draft.objects.get(assignment=assignment).version == 2


def test_draft_without_if_match_on_an_existing_draft_is_428(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    draft_save(assignment=assignment, payload={"I": 1}, base_version=None)

    response = api_as(people["ann_a"]).put(
        draft_url(assignment), {"payload": {"I": 0}}, format="json"
    )

    assert response.status_code == 428
    assert response.json()["reason"] == "if_match_required"
    assert response.json()["version"] == 1
    assert Draft.objects.get(assignment=assignment).payload == {"I": 1}


def test_draft_with_a_stale_if_match_is_412_with_the_current_version(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    draft_save(assignment=assignment, payload={"tab": 1}, base_version=None)
    draft_save(assignment=assignment, payload={"tab": 2}, base_version=1)

    response = api_as(people["ann_a"]).put(
        draft_url(assignment), {"payload": {"tab": 1}}, format="json", HTTP_IF_MATCH='"draft-1"'
    )

    assert response.status_code == 412
    assert response["ETag"] == '"draft-2"'
    assert response.json()["reason"] == "draft_conflict"
    assert response.json()["version"] == 2
    assert Draft.objects.get(assignment=assignment).payload == {"tab": 2}


def test_draft_if_match_star_and_draft_zero(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    client = api_as(people["ann_a"])

    star_without_draft = client.put(
        draft_url(assignment), {"payload": {}}, format="json", HTTP_IF_MATCH="*"
    )
    zero = client.put(
        draft_url(assignment), {"payload": {"a": 1}}, format="json", HTTP_IF_MATCH='"draft-0"'
    )
    star = client.put(
        draft_url(assignment), {"payload": {"a": 2}}, format="json", HTTP_IF_MATCH="*"
    )

    assert star_without_draft.status_code == 412
    assert zero.status_code == 201
    assert star.status_code == 200
    assert star["ETag"] == '"draft-2"'


def test_draft_refuses_a_malformed_if_match_and_a_bad_payload(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    client = api_as(people["ann_a"])

    malformed = client.put(
        draft_url(assignment), {"payload": {}}, format="json", HTTP_IF_MATCH='"draft-1'
    )
    not_an_object = client.put(draft_url(assignment), {"payload": [1, 2]}, format="json")
    missing = client.put(draft_url(assignment), {"data": {}}, format="json")

    assert malformed.status_code == 400
    assert malformed.json()["reason"] == "invalid_if_match"
    assert not_an_object.status_code == 400
    assert list(not_an_object.json()) == ["payload"]
    assert missing.status_code == 400
    assert list(missing.json()) == ["payload"]
    assert not Draft.objects.exists()


def test_draft_of_someone_elses_assignment_is_404(risk_study, people):
    theirs = take(risk_study, people["ann_a"])
    draft_save(assignment=theirs, payload={"secret": 1}, base_version=None)

    response = api_as(people["ann_b"]).put(
        draft_url(theirs), {"payload": {}}, format="json", HTTP_IF_MATCH='"draft-1"'
    )

    assert response.status_code == 404
    assert Draft.objects.get(assignment=theirs).payload == {"secret": 1}


# --- GET/POST /api/assignments/{id}/labels/ ----------------------------------------------


def test_a_submission_id_reused_on_another_assignment_is_refused(risk_study, people):
    first = take(risk_study, people["ann_a"])
    client = api_as(people["ann_a"])
    body = submit_body(first)
    assert client.post(labels_url(first), body, format="json").status_code == 201
    second = take(risk_study, people["ann_a"])
    assert second.unit_id != first.unit_id

    reused = client.post(
        labels_url(second),
        {**submit_body(second), "client_submission_id": body["client_submission_id"]},
        format="json",
    )

    assert reused.status_code == 409
    assert reused.json()["reason"] == "submission_id_reused"
    assert reused.json()["latest"] is None
    assert Label.objects.filter(assignment=second).count() == 0


def test_submit_201_then_replay_200_with_the_same_label(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    client = api_as(people["ann_a"])
    body = submit_body(assignment)

    first = client.post(labels_url(assignment), body, format="json")
    replay = client.post(labels_url(assignment), body, format="json")

    assert first.status_code == 201
    assert replay.status_code == 200
    assert first.json() == replay.json()
    digest = first.json()["record_digest"]
    assert first["ETag"] == f'"{digest}"'
    assert first.json()["revision"] == 1
    assert first.json()["parents"] == []
    assert Label.objects.count() == 1
    assert not Draft.objects.filter(assignment=assignment).exists()


def test_submit_a_revision_with_if_match_and_list_them(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    client = api_as(people["ann_a"])
    first = client.post(labels_url(assignment), submit_body(assignment), format="json")

    second = client.post(
        labels_url(assignment),
        submit_body(assignment, rationale="second look"),
        format="json",
        HTTP_IF_MATCH=first["ETag"],
    )
    listed = client.get(labels_url(assignment))

    assert second.status_code == 201
    assert second.json()["revision"] == 2
    assert second.json()["parents"] == [first.json()["record_digest"]]
    assert listed.status_code == 200
    assert [item["revision"] for item in listed.json()] == [1, 2]


def test_submit_of_an_unchanged_revision_is_409_and_stores_nothing(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    client = api_as(people["ann_a"])
    first = client.post(labels_url(assignment), submit_body(assignment), format="json")

    again = client.post(
        labels_url(assignment), submit_body(assignment), format="json", HTTP_IF_MATCH=first["ETag"]
    )

    assert again.status_code == 409
    assert again.json()["reason"] == "unchanged_revision"
    assert again.json()["latest"]["record_digest"] == first.json()["record_digest"]
    assert Label.objects.count() == 1


def test_submit_on_an_outdated_revision_is_409_showing_the_latest(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    client = api_as(people["ann_a"])
    first = client.post(labels_url(assignment), submit_body(assignment), format="json")
    second = client.post(
        labels_url(assignment),
        submit_body(assignment, rationale="tab one"),
        format="json",
        HTTP_IF_MATCH=first["ETag"],
    )

    stale = client.post(
        labels_url(assignment),
        submit_body(assignment, rationale="tab two"),
        format="json",
        HTTP_IF_MATCH=first["ETag"],
    )
    as_if_first = client.post(labels_url(assignment), submit_body(assignment), format="json")

    for response in (stale, as_if_first):
        assert response.status_code == 409
        assert response.json()["reason"] == "stale_revision"
        assert response.json()["latest"]["record_digest"] == second.json()["record_digest"]
        assert response.json()["latest"]["annotation"]["rationale"] == "tab one"
        assert response["ETag"] == second["ETag"]
    assert Label.objects.count() == 2


def test_submit_naming_a_parent_before_anything_was_submitted_is_409(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    response = api_as(people["ann_a"]).post(
        labels_url(assignment),
        submit_body(assignment),
        format="json",
        HTTP_IF_MATCH=f'"{"0" * 64}"',
    )
    assert response.status_code == 409
    assert response.json()["latest"] is None


@pytest.mark.parametrize("if_match", ["*", '"draft-1"', f'"{"a" * 64}", "{"b" * 64}"', "a b"])
def test_submit_with_a_malformed_if_match_is_400(risk_study, people, if_match):
    assignment = take(risk_study, people["ann_a"])
    response = api_as(people["ann_a"]).post(
        labels_url(assignment), submit_body(assignment), format="json", HTTP_IF_MATCH=if_match
    )
    assert response.status_code == 400
    assert response.json()["reason"] == "invalid_if_match"
    assert not Label.objects.exists()


def test_submit_refused_by_the_contract_is_400_with_the_checker_reason(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    body = submit_body(assignment)
    body["annotation"]["predicates"]["D"] = "U"

    response = api_as(people["ann_a"]).post(labels_url(assignment), body, format="json")

    assert response.status_code == 400
    assert response.json()["reason"] == codes.PREDICATE_STRING
    assert "D" in response.json()["message"]
    assert not Label.objects.exists()


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"client_submission_id": "not-a-uuid"}, "client_submission_id"),
        ({"client_submission_id": None}, "client_submission_id"),
        ({"annotation": [1]}, "annotation"),
        ({"assisted": {"model": ""}}, "model"),
        ({"assisted": {"model": "m", "score": 0.9}}, "assisted"),
    ],
)
def test_submit_with_an_invalid_body_names_the_field(risk_study, people, change, field):
    assignment = take(risk_study, people["ann_a"])
    body = {**submit_body(assignment), **change}

    response = api_as(people["ann_a"]).post(labels_url(assignment), body, format="json")

    assert response.status_code == 400
    assert field in json.dumps(response.json())
    assert not Label.objects.exists()


def test_submit_missing_fields_are_named(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    response = api_as(people["ann_a"]).post(labels_url(assignment), {}, format="json")
    assert response.status_code == 400
    assert set(response.json()) == {"annotation", "client_submission_id"}


def test_an_assisted_submission_is_marked_with_its_model(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    body = {**submit_body(assignment), "assisted": {"model": "judge-7b@2026-05"}}

    response = api_as(people["ann_a"]).post(labels_url(assignment), body, format="json")

    assert response.status_code == 201
    assert response.json()["assisted"] == {"model": "judge-7b@2026-05"}
    assert response.json()["annotation"]["assisted"] == {"model": "judge-7b@2026-05"}
    assert Label.objects.get().assisted_model == "judge-7b@2026-05"
    detail = api_as(people["ann_a"]).get(reverse("api-assignment", args=[assignment.pk]))
    assert detail.json()["head"]["assisted"] == {"model": "judge-7b@2026-05"}


def test_assisted_twice_with_different_models_is_400(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    body = submit_body(assignment)
    body["annotation"]["assisted"] = {"model": "one"}
    body["assisted"] = {"model": "two"}

    response = api_as(people["ann_a"]).post(labels_url(assignment), body, format="json")

    assert response.status_code == 400
    assert list(response.json()) == ["assisted"]


def test_assisted_in_a_study_whose_codebook_forbids_it_is_refused(db):
    definition = json.loads(
        (FIXTURES / "codebooks" / "source-risk-1.0.0.json").read_text(encoding="utf-8")
    )
    definition.update(version="1.0.0-unassisted", allow_assisted=False)
    codebook, _ = codebook_install(definition=definition)
    study = Study.objects.create(slug="unassisted", title="unassisted", codebook=codebook)
    lines = (FIXTURES / "demo" / "source-risk.jsonl").read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["codebook"]["version"] = "1.0.0-unassisted"
    data = "\n".join([json.dumps(header), *lines[1:]]).encode()
    assert observations_import(study=study, data=data, file_name="x.jsonl").status != "rejected"
    people = add_people(study)
    assignment = take(study, people["ann_a"])
    body = {**submit_body(assignment), "assisted": {"model": "judge"}}

    response = api_as(people["ann_a"]).post(labels_url(assignment), body, format="json")

    assert response.status_code == 400
    assert response.json()["reason"] == codes.INVALID_FIELD
    assert "forbids assisted" in response.json()["message"]


def test_answer_claims_submission_through_the_api(claims_study):
    people = add_people(claims_study)
    assignment = take(claims_study, people["ann_a"])
    body = {
        "annotation": answer_claims(unit_content(unit=assignment.unit)),
        "client_submission_id": uuid4(),
    }
    response = api_as(people["ann_a"]).post(labels_url(assignment), body, format="json")
    assert response.status_code == 201, response.json()


def test_labels_of_someone_elses_assignment_are_404(risk_study, people):
    theirs = take(risk_study, people["ann_a"])
    label_submit(
        assignment=theirs,
        annotation=annotation_for(theirs),
        client_submission_id=uuid4(),
        parent_digest=None,
    )
    client = api_as(people["ann_b"])

    listed = client.get(labels_url(theirs))
    submitted = client.post(labels_url(theirs), submit_body(theirs), format="json")

    assert (listed.status_code, submitted.status_code) == (404, 404)
    assert Label.objects.count() == 1


def test_a_former_annotator_no_longer_reaches_their_assignment(risk_study, people):
    assignment = take(risk_study, people["ann_a"])
    Membership.objects.filter(user=people["ann_a"], role=Role.ANNOTATOR).delete()
    response = api_as(people["ann_a"]).get(reverse("api-assignment", args=[assignment.pk]))
    assert response.status_code == 404


def test_submissions_are_throttled_with_the_submit_scope(risk_study, people, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"submit": "2/minute"},
    }
    assignment = take(risk_study, people["ann_a"])
    client = api_as(people["ann_a"])
    body = submit_body(assignment)

    codes_seen = [
        client.post(labels_url(assignment), body, format="json").status_code for _ in range(3)
    ]
    reads = client.get(labels_url(assignment))

    assert codes_seen == [201, 200, 429]
    assert int(client.post(labels_url(assignment), body, format="json")["Retry-After"]) > 0
    assert reads.status_code == 200
    assert settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["submit"]


# --- tokens ------------------------------------------------------------------------------


def test_issue_token_prints_a_token_that_authenticates_a_script(risk_study, people):
    out = io.StringIO()
    call_command("issue_token", "ann_a", stdout=out)
    token = out.getvalue().strip()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")

    taken = client.post(reverse("api-assignment-next", args=[risk_study.slug]))
    assignment = Assignment.objects.get(pk=taken.json()["id"])
    submitted = client.post(labels_url(assignment), submit_body(assignment), format="json")
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Token not-a-token")

    assert taken.status_code == 201
    assert submitted.status_code == 201
    assert bad.get(reverse("api-assignments", args=[risk_study.slug])).status_code == 401


def test_issue_token_is_stable_and_rotates_on_request(people):
    def issue(*args):
        out = io.StringIO()
        call_command("issue_token", "ann_a", *args, stdout=out)
        return out.getvalue().strip()

    first = issue()
    assert issue() == first
    assert issue("--rotate") != first


def test_issue_token_for_an_unknown_user_fails(db):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no user"):
        call_command("issue_token", "nobody")
