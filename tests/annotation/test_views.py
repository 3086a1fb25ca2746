"""The annotation pages through HTTP: access, blinding, escaping, drafts and submissions."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client, override_settings
from django.urls import reverse
from django.utils.html import escape

from annotator.labelling.fields_page import form_state
from annotator.labelling.models import Assignment, Draft, Label
from annotator.labelling.selectors import label_head, unit_content
from annotator.labelling.services import assignment_next, draft_save, label_submit
from audit.archive.models import Unit
from audit.contract.engine import engine_of
from tests.annotation.annotations import answer_claims, source_risk
from tests.annotation.conftest import add_people, assign

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"
#: A half-done source-risk draft as it is stored: the codebook's shape, written from the
#: form's state by the engine (nothing else answered, no span yet).
DRAFT_STORED = {
    "predicates": {"I": 1},
    "spans": {},
    "evidence": {},
    "rationale": "half done",
}


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def form_url(assignment: Assignment) -> str:
    return reverse("assignment-form", args=[assignment.pk])


def draft_url(assignment: Assignment) -> str:
    return reverse("assignment-draft", args=[assignment.pk])


def submit_url(assignment: Assignment) -> str:
    return reverse("assignment-submit", args=[assignment.pk])


def page_data(response) -> dict:
    """The JSON the page hands to its scripts (the one json_script element)."""
    match = re.search(
        r'<script id="annotate-data" type="application/json">(.*?)</script>',
        response.content.decode(),
        re.S,
    )
    assert match, "the page has no annotate-data element"
    return json.loads(match.group(1))


def form_errors(response) -> str:
    match = re.search(r'<div id="form-errors"[^>]*>(.*?)</div>', response.content.decode(), re.S)
    assert match, "the page has no #form-errors element"
    return match.group(1)


@pytest.fixture
def assignment(risk_study, people) -> Assignment:
    return assignment_next(study=risk_study, annotator=people["ann_a"])


@pytest.fixture
def ann_a(people) -> Client:
    return client_for(people["ann_a"])


def form_body(assignment: Assignment, annotation):
    """An annotation as the generic form sends it: its state, the engine's view (format-1
    codebooks store another shape, which the server writes from it)."""
    return form_state(engine_of(assignment.study.codebook.definition), annotation)


def post_submit(client, assignment, annotation, *, sid=None, parent=""):
    return client.post(
        submit_url(assignment),
        {
            "annotation": json.dumps(form_body(assignment, annotation)),
            "client_submission_id": str(sid or uuid.uuid4()),
            "parent_digest": parent,
        },
    )


def valid_annotation(assignment, **kwargs) -> dict:
    content = unit_content(unit=assignment.unit)
    annotation = source_risk(content, **kwargs)
    return annotation


# --- the start page -------------------------------------------------------------------


def test_the_start_page_shows_only_the_annotators_own_progress(risk_study, people, ann_a):
    mine = assignment_next(study=risk_study, annotator=people["ann_a"])
    other = assignment_next(study=risk_study, annotator=people["ann_b"])
    label_submit(
        assignment=other,
        annotation=valid_annotation(other),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    )

    response = ann_a.get(reverse("annotate-start", args=[risk_study.slug]))

    assert response.status_code == 200
    body = response.content.decode()
    assert 'id="progress-done">0<' in body
    assert 'id="progress-assigned">1<' in body
    assert '<progress id="progress-bar" value="0" max="1">' in body
    assert form_url(mine) in body
    assert form_url(other) not in body
    assert "ann_b" not in body
    assert "overlap" not in body.lower()


def test_the_start_page_links_submitted_items_for_revision(risk_study, people, ann_a, assignment):
    label_submit(
        assignment=assignment,
        annotation=valid_annotation(assignment),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    )
    body = ann_a.get(reverse("annotate-start", args=[risk_study.slug])).content.decode()
    assert f'<a href="{form_url(assignment)}?revise=1">Revise</a>' in body
    assert 'id="progress-done">1<' in body


def test_next_item_redirects_to_the_form_of_the_assignment(risk_study, people, ann_a):
    response = ann_a.post(reverse("annotate-start", args=[risk_study.slug]))
    assignment = Assignment.objects.get(annotator=people["ann_a"])
    assert response.status_code == 302
    assert response["Location"] == form_url(assignment)


def test_next_item_says_when_nothing_is_left(risk_study, people, ann_a):
    Unit.objects.filter(study=risk_study).update(assigned_count=risk_study.overlap)
    response = ann_a.post(reverse("annotate-start", args=[risk_study.slug]), follow=True)
    assert response.status_code == 200
    assert "Nothing is left for you to annotate" in response.content.decode()
    assert not Assignment.objects.filter(annotator=people["ann_a"]).exists()


def test_the_start_page_is_for_annotators_of_the_study_only(risk_study, people):
    url = reverse("annotate-start", args=[risk_study.slug])
    assert client_for(people["res"]).get(url).status_code == 403
    assert client_for(people["adj"]).post(url).status_code == 403
    stranger = type(people["ann_a"]).objects.create(username="stranger")
    assert client_for(stranger).get(url).status_code == 404
    assert Client().get(url).status_code == 302  # a page: anonymous users log in first


def test_the_start_page_reads_a_fixed_number_of_queries(
    risk_study, people, ann_a, django_assert_max_num_queries
):
    url = reverse("annotate-start", args=[risk_study.slug])
    for _ in range(4):
        assignment = assignment_next(study=risk_study, annotator=people["ann_a"])
        label_submit(
            assignment=assignment,
            annotation=valid_annotation(assignment),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        )
    ann_a.get(url)  # warm the session and the messages
    with django_assert_max_num_queries(9):
        response = ann_a.get(url)
    assert response.content.decode().count('class="assignment-row"') == 4


def test_the_start_page_lists_one_page_of_items_newest_first(
    risk_study, people, ann_a, monkeypatch
):
    from annotator.labelling import views

    monkeypatch.setattr(views, "START_PAGE_SIZE", 2)
    url = reverse("annotate-start", args=[risk_study.slug])
    mine = []
    for _ in range(5):
        assignment = assignment_next(study=risk_study, annotator=people["ann_a"])
        label_submit(
            assignment=assignment,
            annotation=valid_annotation(assignment),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        )
        mine.append(assignment)

    def rows(page: str) -> list[int]:
        body = ann_a.get(f"{url}?page={page}").content.decode()
        return [int(pk) for pk in re.findall(r'data-assignment-id="(\d+)"', body)]

    assert rows("1") == [mine[4].pk, mine[3].pk]
    assert rows("2") == [mine[2].pk, mine[1].pk]
    assert rows("3") == [mine[0].pk]
    assert rows("99") == rows("3")  # past the end: the last page
    assert rows("x") == rows("1")
    body = ann_a.get(f"{url}?page=2").content.decode()
    assert 'href="?page=1" rel="prev"' in body
    assert 'href="?page=3" rel="next"' in body
    assert 'id="progress-assigned">5<' in body  # the progress counts every item


def test_the_study_page_links_annotators_to_their_page(risk_study, people):
    url = reverse("study-detail", args=[risk_study.slug])
    target = reverse("annotate-start", args=[risk_study.slug])
    assert target in client_for(people["ann_a"]).get(url).content.decode()
    assert target not in client_for(people["res"]).get(url).content.decode()


# --- the forms --------------------------------------------------------------------------


def test_the_source_risk_form_renders_the_unit_and_the_contract_hooks(assignment, ann_a):
    response = ann_a.get(form_url(assignment))

    assert response.status_code == 200
    # The one generic form, from the codebook's engine fields.
    assert response.templates[0].name == "annotator/form_fields.html"
    body = response.content.decode()
    for snapshot in ("query", "answer", "source"):
        assert f'data-snapshot="{snapshot}"' in body
    for key in ("I", "A", "M", "D", "passage_support"):
        for value in ("1", "0", "U"):
            assert f'name="field-{key}" value="{value}"' in body
        assert f'data-attach="{key}"' in body
    for key in ("d_Q", "d_R", "d_P", "d_S"):
        assert f'name="field-{key}"' in body
        assert f'data-range-for="field-{key}-input"' in body
    roles = [role["key"] for role in assignment.study.codebook.definition["source_roles"]]
    for role in roles:
        assert f'name="field-source_role" value="{role}"' in body
    for hook in ('id="span-toolbar"', 'name="rationale"', 'id="draft-status"',
                 'id="form-errors"', 'id="submit-label"'):  # fmt: skip
        assert hook in body
    assert '"includeIndicatorStyles":false' in body
    data = page_data(response)
    content = unit_content(unit=assignment.unit)
    assert data["texts"] == {
        "query": content.query["text"],
        "answer": content.answer["text"],
        "source": content.source["text"],
    }
    assert data["initial"] == {"origin": "empty", "state": None}
    assert data["draft_version"] == 0
    assert data["parent_digest"] == ""
    fields = {field["code"]: field for field in data["codebook"]["fields"]}
    assert [fields[key]["key"] for key in "IAMD"] == ["i", "a", "m", "d"]
    for key in ("I", "A", "M", "D", "passage_support"):
        keys = {option["value"]: option["key"] for option in fields[key]["options"]}
        assert keys == {"1": "1", "0": "0", "U": "u"}
    # What to look for, role by role.
    looks = {
        role["key"]: role["look_for"]
        for role in assignment.study.codebook.definition["source_roles"]
    }
    assert {o["value"]: o["definition"] for o in fields["source_role"]["options"]} == looks
    for text in looks.values():
        assert escape(text) in body
    uuid.UUID(response.context["client_submission_id"].hex)


def test_the_claims_form_renders_the_answer_with_all_its_sources(claims_study):
    people = add_people(claims_study)
    # An answer with several sources, whatever order the queue would hand them out in.
    unit = next(
        u for u in claims_study.units.order_by("id") if len(unit_content(unit=u).sources) > 1
    )
    assignment = assign(unit, people["ann_a"])
    response = client_for(people["ann_a"]).get(form_url(assignment))

    assert response.status_code == 200
    # The one generic form, its claims field edited by the claims widget.
    assert response.templates[0].name == "annotator/form_fields.html"
    body = response.content.decode()
    content = unit_content(unit=assignment.unit)
    assert len(content.sources) > 1
    for index, source in enumerate(content.sources):
        assert f'data-snapshot="source:{index}"' in body
        # A format-1 claim names its source by digest.
        assert f'<option value="{source["digest"]}" data-source-name="source:{index}"' in body
    for key in ("cited", "supported", "accurate", "timely", "relevant", "complete"):
        for value in ("true", "false", "U"):
            assert f'name="field-{key}" value="{value}"' in body
        assert f'name="reason-{key}"' in body
    for hook in ('id="add-claim"', 'id="summary-mismatch"', 'class="claim-source"',
                 'class="claim-quote"', 'class="claim-kind"', 'class="claim-reason"'):  # fmt: skip
        assert hook in body
    data = page_data(response)
    texts = [data["texts"][f"source:{index}"] for index in range(len(content.sources))]
    assert texts == [s["text"] for s in content.sources]


def test_another_annotators_assignment_does_not_exist_for_them(assignment, people):
    for name in ("ann_b", "adj", "res"):
        client = client_for(people[name])
        assert client.get(form_url(assignment)).status_code == 404
        assert client.post(draft_url(assignment), {"payload": "{}"}).status_code == 404
        body = valid_annotation(assignment)
        assert post_submit(client, assignment, body).status_code == 404
    assert not Label.objects.exists()
    assert not Draft.objects.exists()


@pytest.mark.parametrize("codebook", ["risk", "claims"])
def test_snapshot_text_is_escaped_never_markup(codebook, risk_study, claims_study):
    study = risk_study if codebook == "risk" else claims_study
    people = add_people(study)
    unit = next(
        unit
        for unit in Unit.objects.filter(study=study).order_by("id")
        if any(SCRIPT in s["text"] for s in unit_content(unit=unit).sources)
    )
    assignment = Assignment.objects.create(
        study=study, unit=unit, annotator=people["ann_a"], number=1
    )

    response = client_for(people["ann_a"]).get(form_url(assignment))

    body = response.content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert SCRIPT not in body
    # The JSON for the scripts escapes it too, and still carries the exact text.
    assert "\\u003Cscript\\u003Ealert(1)\\u003C/script\\u003E" in body
    data = page_data(response)
    assert any(SCRIPT in text for text in data["texts"].values())


def test_the_form_shows_nothing_of_other_annotators_priority_or_state(
    risk_study, people, assignment, ann_a
):
    other = assignment_next(study=risk_study, annotator=people["ann_b"])
    assert other.unit_id == assignment.unit_id
    label_submit(
        assignment=other,
        annotation=valid_annotation(other, rationale="SECRET-B-RATIONALE"),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    )
    Unit.objects.filter(pk=assignment.unit_id).update(priority=0.123456)
    pseudonym_b = Label.objects.get(annotator=people["ann_b"]).annotation["annotator"]

    body = ann_a.get(form_url(assignment)).content.decode()

    assert "SECRET-B-RATIONALE" not in body
    assert "ann_b" not in body
    assert pseudonym_b not in body
    assert "0.123456" not in body
    assert "partially_labelled" not in body
    assert '"weight"' not in body  # the codebook's weights make the priority
    assert "0.375" not in body  # d_R's weight


def test_a_revision_starts_from_the_head_label_without_weights(assignment, ann_a):
    label = label_submit(
        assignment=assignment,
        annotation=valid_annotation(assignment, rationale="first"),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label

    response = ann_a.get(form_url(assignment) + "?revise=1")

    data = page_data(response)
    assert data["parent_digest"] == label.record_digest
    assert data["initial"]["origin"] == "head"
    state = data["initial"]["state"]
    assert state["rationale"] == "first"
    evidence = {key: state["values"][key] for key in ("d_Q", "d_R", "d_P", "d_S")}
    assert evidence == {"d_Q": 0.5, "d_R": 0.25, "d_P": 1.0, "d_S": 0.0}
    assert '"weight"' not in response.content.decode()
    assert "annotator" not in state
    assert "kind" not in state
    body = response.content.decode()
    assert f'name="parent_digest" id="parent-digest" value="{label.record_digest}"' in body
    assert "Submit revision" in body


# --- drafts -------------------------------------------------------------------------------


def test_a_draft_saves_and_answers_with_its_new_version(assignment, ann_a):
    # The form's state (the engine's view), stored in the codebook's own shape.
    payload = {"values": {"I": 1}, "reasons": {}, "spans": [], "rationale": "half done"}

    response = ann_a.post(draft_url(assignment), {"payload": json.dumps(payload), "version": "0"})

    assert response.status_code == 200
    assert "Saved" in response.content.decode()
    assert response["X-Draft-Version"] == "1"
    stored = Draft.objects.get(assignment=assignment).payload
    assert stored == DRAFT_STORED
    again = ann_a.post(draft_url(assignment), {"payload": json.dumps(payload), "version": "1"})
    assert again["X-Draft-Version"] == "2"
    # It opens again as the state it was saved from.
    data = page_data(ann_a.get(form_url(assignment)))
    assert data["initial"] == {"origin": "draft", "state": payload}


def test_a_draft_of_the_first_source_risk_form_still_opens(assignment, ann_a):
    """A draft kept by the format-1 form before the generic one (the stored shape, its
    evidence values bare) opens with everything it held."""
    content = unit_content(unit=assignment.unit)
    quote = content.source["text"][:12]
    span = {"snapshot": "source", "start": 0, "end": len(quote), "quote": quote}
    payload = {
        "predicates": {"I": 1, "D": None},
        "passage_support": 0,
        "source_role": "sponsored",
        "spans": {"I": [span]},
        "evidence": {"d_Q": 0.6, "d_S": 0},
        "rationale": "from the old form",
    }
    draft_save(assignment=assignment, payload=payload, base_version=None)

    data = page_data(ann_a.get(form_url(assignment)))

    assert data["initial"]["origin"] == "draft"
    assert data["initial"]["state"] == {
        "values": {
            "I": 1,
            "D": None,
            "passage_support": 0,
            "source_role": "sponsored",
            "d_Q": 0.6,
            "d_S": 0,
        },
        "reasons": {},
        "spans": [{"field": "I", **span}],
        "rationale": "from the old form",
    }


def test_a_reload_restores_the_draft(assignment, ann_a):
    draft_save(assignment=assignment, payload={"rationale": "kept"}, base_version=None)
    data = page_data(ann_a.get(form_url(assignment)))
    assert data["initial"] == {
        "origin": "draft",
        "state": {"values": {}, "reasons": {}, "spans": [], "rationale": "kept"},
    }
    assert data["draft_version"] == 1


def test_a_stale_draft_version_is_a_conflict_and_overwrites_nothing(assignment, ann_a):
    draft_save(assignment=assignment, payload={"rationale": "tab 2"}, base_version=0)

    response = ann_a.post(
        draft_url(assignment), {"payload": json.dumps({"rationale": "tab 1"}), "version": "0"}
    )

    assert response.status_code == 409
    body = response.content.decode()
    assert "Another tab or device stored a newer draft (version 1)" in body
    assert 'data-draft-action="reload"' in body
    assert "Saved" not in body
    assert Draft.objects.get(assignment=assignment).payload == {"rationale": "tab 2"}


@pytest.mark.parametrize(
    ("payload", "version"),
    [("{not json", "0"), ("[1, 2]", "0"), ('"text"', "0"), ("{}", "minus one")],
)
def test_a_bad_draft_request_is_400(assignment, ann_a, payload, version):
    response = ann_a.post(draft_url(assignment), {"payload": payload, "version": version})
    assert response.status_code == 400
    assert "Not stored" in response.content.decode()
    assert not Draft.objects.exists()


# --- submissions ----------------------------------------------------------------------


def test_a_submission_stores_a_label_and_opens_the_next_item(risk_study, people, assignment, ann_a):
    draft_save(assignment=assignment, payload={"rationale": "draft"}, base_version=None)

    response = post_submit(ann_a, assignment, valid_annotation(assignment))

    assert response.status_code == 302
    following = Assignment.objects.get(annotator=people["ann_a"], number=2)
    assert response["Location"] == form_url(following)
    label = Label.objects.get()
    assert (label.assignment_id, label.revision) == (assignment.pk, 1)
    assert not Draft.objects.exists()
    page = ann_a.get(response["Location"]).content.decode()
    assert "Label submitted" in page
    assert "Item 2" in page
    # The browser's unsent copy of the submitted item is forgotten on the next item's page.
    assert f'data-forget-storage="claimgate:assignment:{assignment.pk}"' in page


def test_the_setting_to_return_to_the_list_is_kept(risk_study, people, assignment, ann_a):
    response = ann_a.post(
        submit_url(assignment),
        {
            "annotation": json.dumps(form_body(assignment, valid_annotation(assignment))),
            "client_submission_id": str(uuid.uuid4()),
            "parent_digest": "",
            "after_submit": "list",
        },
    )

    assert response["Location"] == reverse("annotate-start", args=[risk_study.slug])
    assert not Assignment.objects.filter(annotator=people["ann_a"], number=2).exists()
    # The next form opens with the setting chosen.
    following = assignment_next(study=risk_study, annotator=people["ann_a"])
    body = ann_a.get(form_url(following)).content.decode()
    assert '<option value="list" selected>' in body


def test_back_after_a_submission_shows_the_stored_revision_read_only(assignment, ann_a):
    post_submit(ann_a, assignment, valid_annotation(assignment, rationale="stored words"))

    response = ann_a.get(form_url(assignment))

    assert "no-store" in response["Cache-Control"]
    body = response.content.decode()
    assert "already submitted" in body
    assert f'href="{form_url(assignment)}?revise=1">Revise this item</a>' in body
    assert "stored words" in body
    assert 'id="label-form"' not in body


def test_an_unchanged_revision_is_not_stored_and_says_so(assignment, ann_a):
    post_submit(ann_a, assignment, valid_annotation(assignment))
    head = label_head(assignment=assignment)
    draft_save(assignment=assignment, payload={"rationale": "same"}, base_version=None)

    response = post_submit(
        ann_a, assignment, valid_annotation(assignment), parent=head.record_digest
    )

    assert response["Location"] == form_url(assignment)
    assert Label.objects.count() == 1
    assert not Draft.objects.exists()
    page = ann_a.get(response["Location"]).content.decode()
    assert "Nothing changed since your revision 1, so no new revision was stored." in page


def test_item_numbers_are_the_annotators_own(risk_study, people, ann_a):
    # Another annotator's work goes first: it must not show in ann_a's numbers.
    for _ in range(3):
        assignment_next(study=risk_study, annotator=people["ann_b"])
    mine = [assignment_next(study=risk_study, annotator=people["ann_a"])]
    label_submit(
        assignment=mine[0],
        annotation=valid_annotation(mine[0]),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    )
    mine.append(assignment_next(study=risk_study, annotator=people["ann_a"]))

    assert [a.number for a in mine] == [1, 2]
    body = ann_a.get(reverse("annotate-start", args=[risk_study.slug])).content.decode()
    numbers = re.findall(r'<td class="num">(\d+)</td>', body)
    assert numbers == ["2", "1"]
    assert "Item 2 ·" in ann_a.get(form_url(mine[1])).content.decode()


def test_a_revision_names_its_parent(assignment, ann_a):
    first = post_submit(ann_a, assignment, valid_annotation(assignment))
    assert first.status_code == 302
    head = label_head(assignment=assignment)

    second = post_submit(
        ann_a, assignment, valid_annotation(assignment, rationale="r2"), parent=head.record_digest
    )

    assert second.status_code == 302
    revision = label_head(assignment=assignment)
    assert revision.revision == 2
    assert revision.parents == [head.record_digest]


def test_the_same_client_submission_twice_stores_one_label(assignment, ann_a):
    sid = uuid.uuid4()
    annotation = valid_annotation(assignment)
    first = post_submit(ann_a, assignment, annotation, sid=sid)
    second = post_submit(ann_a, assignment, annotation, sid=sid)
    assert (first.status_code, second.status_code) == (302, 302)
    assert Label.objects.count() == 1
    assert "already stored" in ann_a.get(second["Location"]).content.decode()


def test_a_refused_annotation_is_400_with_its_reason_and_keeps_the_work(assignment, ann_a):
    annotation = valid_annotation(assignment, rationale="my careful reasoning")
    annotation["spans"].pop("I")  # I is resolved (1) but cites nothing

    response = post_submit(ann_a, assignment, annotation)

    assert response.status_code == 400
    errors = form_errors(response)
    assert "span_missing" in errors
    assert "annotation.spans.I has no span" in errors
    data = page_data(response)
    assert data["initial"]["origin"] == "submitted"
    assert data["initial"]["state"]["rationale"] == "my careful reasoning"
    values = data["initial"]["state"]["values"]
    assert {key: values[key] for key in "IAMD"} == {"I": 1, "A": 1, "M": 1, "D": 0}
    assert not Label.objects.exists()


def test_a_summary_mismatch_is_refused_with_its_code(claims_study):
    people = add_people(claims_study)
    # An answer with sources, so that the annotation has a claim (whatever the queue's
    # seeded order would hand out first).
    answered = next(u for u in claims_study.units.order_by("id") if unit_content(unit=u).sources)
    assignment = assign(answered, people["ann_a"])
    annotation = answer_claims(unit_content(unit=assignment.unit))
    annotation["claims"][0]["supported"] = False  # but the answer says supported: true

    response = post_submit(client_for(people["ann_a"]), assignment, annotation)

    assert response.status_code == 400
    assert "summary_mismatch" in form_errors(response)
    assert page_data(response)["initial"]["state"]["values"]["claims"][0]["supported"] is False


@pytest.mark.parametrize(
    "fields",
    [
        {"annotation": "{oops", "client_submission_id": str(uuid.uuid4())},
        {"annotation": "{}", "client_submission_id": "not-a-uuid"},
        {"annotation": "{}", "client_submission_id": str(uuid.uuid4()), "parent_digest": "x"},
    ],
)
def test_a_malformed_submission_is_400_and_stores_nothing(assignment, ann_a, fields):
    response = ann_a.post(submit_url(assignment), fields)
    assert response.status_code == 400
    assert form_errors(response).strip()
    assert not Label.objects.exists()


def test_a_stale_submission_is_409_and_shows_both_versions(assignment, ann_a):
    # Another tab submitted first, after this one had opened the form (parent: none).
    label_submit(
        assignment=assignment,
        annotation=valid_annotation(assignment, rationale="THE STORED ONE"),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    )
    head = label_head(assignment=assignment)

    response = post_submit(ann_a, assignment, valid_annotation(assignment, rationale="MINE"))

    assert response.status_code == 409
    body = response.content.decode()
    assert "stale_revision" in form_errors(response)
    compare = body[body.index('id="stale-compare"') :]
    mine = compare[compare.index('data-version="mine"') : compare.index('data-version="latest"')]
    latest = compare[compare.index('data-version="latest"') :]
    assert "MINE" in mine
    assert "THE STORED ONE" not in mine
    assert "THE STORED ONE" in latest
    assert '<div class="differs"><dt>Rationale</dt>' in mine
    assert '<div><dt>Relationship</dt><dd dir="auto">1 yes</dd>' in mine  # the same in both
    data = page_data(response)
    assert data["initial"]["state"]["rationale"] == "MINE"
    assert data["head_state"]["rationale"] == "THE STORED ONE"
    assert data["parent_digest"] == head.record_digest  # submitting again makes revision 2
    assert Label.objects.count() == 1


def test_an_expired_session_gets_401_not_a_redirect(assignment):
    anonymous = Client()
    draft = anonymous.post(draft_url(assignment), {"payload": "{}", "version": "0"})
    submit = post_submit(anonymous, assignment, valid_annotation(assignment))

    for response in (draft, submit):
        assert response.status_code == 401
        assert "Location" not in response
        body = response.content.decode()
        assert "your session expired" in body.lower()
        assert "your work is kept in this browser" in body
        assert reverse("login") in body
    assert not Draft.objects.exists()
    assert not Label.objects.exists()


@override_settings(CSRF_FAILURE_VIEW="annotator.labelling.views.csrf_failure")
def test_a_submission_without_any_cookie_says_the_session_expired(assignment):
    anonymous = Client(enforce_csrf_checks=True)  # no session, no CSRF cookie
    submit = post_submit(anonymous, assignment, valid_annotation(assignment))
    draft = anonymous.post(draft_url(assignment), {"payload": "{}", "version": "0"})
    for response in (submit, draft):
        assert response.status_code == 403
        assert "your work is kept in this browser" in response.content.decode()
    other = anonymous.post(reverse("annotate-start", args=[assignment.study.slug]))
    assert other.status_code == 403
    assert "your work is kept" not in other.content.decode()


def test_draft_and_submit_only_take_posts(assignment, ann_a):
    assert ann_a.get(draft_url(assignment)).status_code == 405
    assert ann_a.get(submit_url(assignment)).status_code == 405


# --- what the templates and scripts may contain (Content-Security-Policy) ------------------

TEMPLATES = sorted((Path(settings.BASE_DIR) / "templates" / "annotator").glob("*.html"))
SCRIPTS = sorted((Path(settings.BASE_DIR) / "static" / "js").glob("*.js"))


def test_there_are_templates_and_scripts_to_check():
    names = {path.name for path in TEMPLATES}
    assert {"form_fields.html", "start.html"} <= names
    assert {"spans.js", "annotate.js", "claims.js"} <= {path.name for path in SCRIPTS}


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda path: path.name)
def test_templates_have_no_inline_script_handler_or_style(path):
    text = path.read_text(encoding="utf-8")
    for match in re.finditer(r"<script\b([^>]*)>(.*?)</script\s*>", text, re.S | re.I):
        attributes, body = match.groups()
        assert "src=" in attributes, f"inline script in {path.name}"
        assert not body.strip(), f"script with code in {path.name}"
    assert not re.search(r"<style\b", text, re.I), f"<style> in {path.name}"
    assert not re.search(r"\sstyle\s*=", text, re.I), f"style attribute in {path.name}"
    assert not re.search(r"\son[a-z]+\s*=", text, re.I), f"event handler attribute in {path.name}"
    assert not re.search(r"=\s*[\"']?\s*javascript:", text, re.I), f"javascript: URL in {path.name}"
    assert "hx-on" not in text


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda path: path.name)
def test_scripts_need_no_eval_and_write_no_markup(path):
    text = path.read_text(encoding="utf-8")
    for construct in (
        "eval(",
        "new Function",
        ".innerHTML",
        ".outerHTML",
        "insertAdjacentHTML",
        "document.write",
        'setAttribute("style"',
    ):
        assert construct not in text, f"{construct} in {path.name}"
