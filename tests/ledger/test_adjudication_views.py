"""Adjudication pages through HTTP: the queue, the side-by-side page, access, and the final
label stored through ``adjudication_submit`` (jobs are called directly, as in
test_outcomes.py)."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.models import Label, LabelKind
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from annotator.memberships.models import Membership, Role
from audit.archive.models import Unit, UnitState
from tests.annotation.annotations import answer_claims, source_risk
from tests.annotation.conftest import add_people, assign, make_study

pytestmark = pytest.mark.django_db

ROW = re.compile(r'<tr class="(?P<classes>[^"]*)" data-field="(?P<field>[^"]+)"')


@pytest.fixture
def study(db):
    return make_study("adj", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)


@pytest.fixture
def people(study):
    people = add_people(study)
    # The adjudicator labels too, in this study: their own units never reach their queue.
    Membership.objects.create(study=study, user=people["adj"], role=Role.ANNOTATOR)
    return people


def label(study, user, annotation_of, unit=None):
    """``user``'s label on the next unit of their queue, or on ``unit`` (given directly:
    each annotator's queue has an order of its own)."""
    assignment = (
        assignment_next(study=study, annotator=user) if unit is None else assign(unit, user)
    )
    submitted = label_submit(
        assignment=assignment,
        annotation=annotation_of(unit_content(unit=assignment.unit)),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label
    label_submitted.run(submitted.pk)
    return submitted


def risk(values, rationale=None):
    return lambda content: source_risk(content, values=values, rationale=rationale)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def rows_of(html: str) -> dict[str, set[str]]:
    return {m["field"]: set(m["classes"].split()) for m in ROW.finditer(html)}


def page_data(html: str) -> dict:
    found = re.search(r'<script id="adjudicate-data" type="application/json">(.*?)</script>', html)
    return json.loads(found[1])


def row_html(html: str, field: str) -> str:
    """The table row of one field."""
    found = re.search(rf'<tr class="[^"]*" data-field="{re.escape(field)}".*?</tr>', html, re.S)
    assert found, field
    return found[0]


def cells_of(row: str) -> list[str]:
    return re.findall(r'<td class="value-cell".*?</td>', row, re.S)


def picks_of(head: Label, *fields: str) -> dict[str, str]:
    """What the page sends when the adjudicator takes ``head``'s value of ``fields``."""
    return {f"pick-{field}": head.record_digest for field in fields}


@pytest.fixture
def disputed(study, people):
    """u1 and u2 disputed between A and B, u3 disputed between the adjudicator and C,
    u4 agreed; priorities set so that u2 comes before u1."""
    a1 = label(study, people["ann_a"], risk((1, 1, 1, 0)))
    b1 = label(
        study, people["ann_b"], risk((1, 1, None, 0), rationale="<b>M?</b> <script>x</script>")
    )
    a2 = label(study, people["ann_a"], risk((0, 1, 1, 0)))
    label(study, people["ann_b"], risk((1, 1, 1, 0)))
    own = label(study, people["adj"], risk((1, 1, 1, 0)))
    label(study, people["ann_c"], risk((1, 0, 1, 0)))
    agreed = label(study, people["ann_a"], risk((1, 1, 1, 1)))
    label(study, people["ann_b"], risk((1, 1, 1, 1)))
    Unit.objects.filter(pk=a1.unit_id).update(priority=0.2)
    Unit.objects.filter(pk=a2.unit_id).update(priority=0.9)
    Unit.objects.filter(pk=own.unit_id).update(priority=0.95)
    units = {
        "u1": Unit.objects.get(pk=a1.unit_id),
        "u2": Unit.objects.get(pk=a2.unit_id),
        "own": Unit.objects.get(pk=own.unit_id),
        "agreed": Unit.objects.get(pk=agreed.unit_id),
    }
    assert [units[k].state for k in ("u1", "u2", "own")] == [UnitState.DISPUTED] * 3
    assert units["agreed"].state == UnitState.AGREED
    return {"units": units, "a1": a1, "b1": b1}


# --- the queue -------------------------------------------------------------------------------


def test_queue_lists_disputed_units_by_priority_without_the_adjudicators_own(
    study, people, disputed, django_assert_max_num_queries
):
    client = client_for(people["adj"])
    url = reverse("adjudication-queue", kwargs={"slug": study.slug})

    with django_assert_max_num_queries(8):
        response = client.get(url)

    assert response.status_code == 200
    html = response.content.decode()
    listed = [int(i) for i in re.findall(r'class="queue-row" data-unit-id="(\d+)"', html)]
    units = disputed["units"]
    assert listed == [units["u2"].pk, units["u1"].pk]  # highest priority first
    assert units["own"].pk not in listed
    assert 'id="count-disputed">3<' in html
    assert 'id="count-agreed">1<' in html
    assert 'id="count-adjudicated">0<' in html
    assert 'id="count-waiting">2<' in html
    assert "you labelled it" in html
    assert "0.900" in html  # adjudicators may see the priority


def test_queue_queries_do_not_grow_with_the_queue(
    study, people, disputed, django_assert_num_queries
):
    client = client_for(people["adj"])
    url = reverse("adjudication-queue", kwargs={"slug": study.slug})
    client.get(url)  # session warm
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as before:
        client.get(url)
    label(study, people["ann_a"], risk((0, 0, 0, 0)))
    label(study, people["ann_c"], risk((1, 1, 1, 1)))
    assert Unit.objects.filter(study=study, state=UnitState.DISPUTED).count() == 4
    with django_assert_num_queries(len(before.captured_queries)):
        response = client.get(url)
    assert response.content.decode().count('class="queue-row"') == 3


def test_queue_refuses_annotators_and_hides_the_study_from_outsiders(study, people):
    url = reverse("adjudication-queue", kwargs={"slug": study.slug})
    response = client_for(people["ann_a"]).get(url)
    assert response.status_code == 403
    assert "not an adjudicator" in response.content.decode()
    outsider = get_user_model().objects.create_user("outsider", password="pw")
    assert client_for(outsider).get(url).status_code == 404
    assert Client().get(url).status_code == 302  # to the login page


def test_study_page_links_adjudicators_to_the_queue(study, people):
    url = reverse("study-detail", kwargs={"slug": study.slug})
    queue = reverse("adjudication-queue", kwargs={"slug": study.slug})
    assert queue in client_for(people["adj"]).get(url).content.decode()
    assert queue not in client_for(people["ann_a"]).get(url).content.decode()


# --- access to a unit --------------------------------------------------------------------------


def test_unit_page_is_missing_for_annotators_and_outsiders(study, people, disputed):
    """Not 403 for an annotator: a unit id they did not label must tell them nothing, as
    for a unit that does not exist (tests/test_blinding.py walks this route too)."""
    unit = disputed["units"]["u1"]
    url = reverse("adjudication-unit", kwargs={"unit_id": unit.pk})
    outsider = get_user_model().objects.create_user("outsider", password="pw")
    for user in (people["ann_a"], people["ann_c"], outsider):
        assert client_for(user).get(url).status_code == 404
        assert client_for(user).post(url, {"rationale": "x"}).status_code == 404
    missing = reverse("adjudication-unit", kwargs={"unit_id": 999_999})
    assert client_for(people["adj"]).get(missing).status_code == 404


def test_nobody_adjudicates_a_unit_they_labelled(study, people, disputed):
    unit = disputed["units"]["own"]
    url = reverse("adjudication-unit", kwargs={"unit_id": unit.pk})
    client = client_for(people["adj"])

    response = client.get(url)
    assert response.status_code == 403
    assert "Nobody adjudicates a tuple they labelled themselves" in response.content.decode()
    head = Label.objects.filter(unit=unit, kind=LabelKind.INDEPENDENT).first()
    response = client.post(
        url,
        {
            **picks_of(head, "I", "A", "M", "D", "passage_support", "source_role"),
            "edits": "{}",
            "rationale": "mine",
            "client_submission_id": str(uuid.uuid4()),
        },
    )
    assert response.status_code == 403
    assert not Label.objects.filter(unit=unit, kind=LabelKind.ADJUDICATED).exists()


# --- the side-by-side page ---------------------------------------------------------------------


def test_side_by_side_page_shows_both_labels_and_marks_the_differing_fields(
    study, people, disputed
):
    unit = disputed["units"]["u1"]
    response = client_for(people["adj"]).get(
        reverse("adjudication-unit", kwargs={"unit_id": unit.pk})
    )

    assert response.status_code == 200
    html = response.content.decode()
    a1, b1 = disputed["a1"], disputed["b1"]
    assert a1.annotation["annotator"] in html
    assert b1.annotation["annotator"] in html
    assert "ann_a" not in html
    assert "ann_b" not in html
    rows = rows_of(html)
    assert "differs" in rows["M"]
    for same in ("I", "A", "D", "passage_support", "source_role"):
        assert "differs" not in rows[same], same
    # B left M unresolved, without a span: A's cell lists a span, B's none.
    first, second = cells_of(row_html(html, "M"))
    assert "span-item" in first
    assert "span-item" not in second
    assert {"d_Q", "note"} <= set(rows)  # an evidence dimension, the annotators' rationales
    assert "the mean is kept" in row_html(html, "d_Q")
    assert 'name="pick-d_Q"' not in html  # averaged, never picked
    for judgment in ("I", "passage_support"):  # the final label's spans, per judgment
        assert f'data-final-spans="{judgment}"' in html
    # B's rationale is shown as text, in the table and in the page data alike.
    assert "&lt;b&gt;M?&lt;/b&gt; &lt;script&gt;x&lt;/script&gt;" in html
    assert "<script>x</script>" not in html
    data = page_data(html)
    assert data["editable"] is True
    assert [c["pseudonym"] for c in data["columns"]] == [
        a1.annotation["annotator"],
        b1.annotation["annotator"],
    ]
    source = unit_content(unit=unit).source["text"]
    assert f'data-snapshot="source" dir="auto">{escape(source)}</div>' in html
    assert "Disputed" in html
    assert f'name="pick-M" value="{a1.record_digest}"' in html
    assert 'name="pick-M" value="own"' in html
    assert 'id="rationale"' in html
    assert "(required)" in html


def test_submitting_the_final_label_stores_an_adjudicated_record_over_the_independent_ones(
    study, people, disputed
):
    unit = disputed["units"]["u1"]
    url = reverse("adjudication-unit", kwargs={"unit_id": unit.pk})
    heads = list(Label.objects.filter(unit=unit, kind=LabelKind.INDEPENDENT).order_by("id"))
    before = [(h.pk, h.record_digest, h.annotation) for h in heads]
    client = client_for(people["adj"])
    submission = str(uuid.uuid4())
    body = {
        **picks_of(disputed["a1"], "M"),
        "edits": "{}",
        "rationale": "The source's commission notice settles M.",
        "client_submission_id": submission,
        "page_state": "{}",
    }

    response = client.post(url, body)

    assert response.status_code == 302
    assert response["Location"] == reverse("adjudication-queue", kwargs={"slug": study.slug})
    final = Label.objects.get(unit=unit, kind=LabelKind.ADJUDICATED)
    assert final.parents == sorted(h.record_digest for h in heads)
    assert final.annotator == people["adj"]
    assert final.annotation["rationale"] == "The source's commission notice settles M."
    assert final.annotation["predicates"] == {"I": 1, "A": 1, "M": 1, "D": 0}
    assert final.annotation["evidence"]["d_Q"] == {"value": 0.5, "weight": 0.25}
    assert Unit.objects.get(pk=unit.pk).state == UnitState.ADJUDICATED
    after = Label.objects.filter(unit=unit, kind=LabelKind.INDEPENDENT).order_by("id")
    assert [(h.pk, h.record_digest, h.annotation) for h in after] == before

    # A replay of the same submission stores nothing twice.
    assert client.post(url, body).status_code == 302
    assert Label.objects.filter(unit=unit, kind=LabelKind.ADJUDICATED).count() == 1

    # The queue says so, and the unit now reads as adjudicated, read-only.
    queue = client.get(response["Location"]).content.decode()
    assert f"Unit {unit.pk} adjudicated" in queue
    assert f'data-unit-id="{unit.pk}"' not in queue
    page = client.get(url).content.decode()
    assert "Adjudicated" in page
    assert 'id="final-label"' in page
    assert "The source&#x27;s commission notice settles M." in page
    for head in heads:
        assert head.record_digest in page
    assert 'id="adjudicate-form"' not in page
    assert page_data(page)["editable"] is False


def test_a_missing_rationale_is_refused_with_the_reason_and_keeps_the_work(study, people, disputed):
    unit = disputed["units"]["u1"]
    url = reverse("adjudication-unit", kwargs={"unit_id": unit.pk})
    state = {"own": {"M": "U"}, "ownReason": {}, "removed": [], "added": [], "claims": []}

    response = client_for(people["adj"]).post(
        url,
        {
            "pick-M": "own",
            "edits": json.dumps({"own": {"M": {"value": None, "reason": ""}}}),
            "rationale": "   ",
            "client_submission_id": str(uuid.uuid4()),
            "page_state": json.dumps(state),
        },
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert 'data-code="no_rationale"' in html
    assert "an adjudication needs a written rationale" in html
    assert page_data(html)["restored"] == state
    assert 'name="pick-M" value="own" checked' in html  # the picks are kept too
    assert not Label.objects.filter(unit=unit, kind=LabelKind.ADJUDICATED).exists()
    assert Unit.objects.get(pk=unit.pk).state == UnitState.DISPUTED


def test_a_final_label_the_contract_refuses_shows_the_checkers_reason(study, people, disputed):
    unit = disputed["units"]["u1"]
    # The string is not the unresolved value (null).
    edits = {"own": {"M": {"value": "U", "reason": ""}}}
    submission = str(uuid.uuid4())

    response = client_for(people["adj"]).post(
        reverse("adjudication-unit", kwargs={"unit_id": unit.pk}),
        {
            "pick-M": "own",
            "edits": json.dumps(edits),
            "rationale": "M stays open",
            "client_submission_id": submission,
        },
    )

    assert response.status_code == 400
    html = response.content.decode()
    assert re.search(r'data-code="[a-z_]+"', html)
    assert "M stays open" in html  # the rationale is kept
    assert f'value="{submission}"' in html  # and the same submission id, for a retry
    assert not Label.objects.filter(unit=unit, kind=LabelKind.ADJUDICATED).exists()


def test_an_agreed_unit_has_nothing_to_adjudicate_and_shows_no_labels(study, people, disputed):
    unit = disputed["units"]["agreed"]
    response = client_for(people["adj"]).get(
        reverse("adjudication-unit", kwargs={"unit_id": unit.pk})
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="not-disputed"' in html
    assert "Agreed" in html
    assert disputed["a1"].annotation["annotator"] not in html
    assert 'id="adjudicate-form"' not in html


# --- answer-claims ------------------------------------------------------------------------------


def test_answer_claims_units_are_adjudicated_from_verdicts_and_claims(db):
    study = make_study("adj-claims", "answer-claims-1.0.0", "answer-claims.jsonl", overlap=2)
    people = add_people(study)

    def disagreeing(content):
        annotation = answer_claims(content)
        annotation["verdicts"]["timely"] = {"value": False, "reason": "last year's hours"}
        return annotation

    # An answer with sources, so that each annotator's label has a claim.
    answered = next(u for u in study.units.order_by("id") if unit_content(unit=u).sources)
    first = label(study, people["ann_a"], answer_claims, unit=answered)
    label(study, people["ann_b"], disagreeing, unit=answered)
    unit = Unit.objects.get(pk=first.unit_id)
    assert unit.state == UnitState.DISPUTED
    url = reverse("adjudication-unit", kwargs={"unit_id": unit.pk})
    client = client_for(people["adj"])

    html = client.get(url).content.decode()
    rows = rows_of(html)
    assert "differs" in rows["timely"]
    assert "differs" not in rows["cited"]
    assert "claims" not in rows  # claims are compared in their own aligned table
    assert "last year&#x27;s hours" in html
    # The two claims align on one row that agrees; each can be kept.
    assert html.count('class="claim-row"') == 1
    assert 'class="claim-row differs"' not in html
    assert 'data-keep-claim="0:0"' in html
    assert 'data-keep-claim="1:0"' in html

    # The adjudicator's own "timely", the agreeing claim kept (as the page keeps it).
    edits = {
        "own": {"timely": {"value": None, "reason": "the effective period is unclear"}},
        "claims": {"claims": first.annotation["claims"]},
    }
    response = client.post(
        url,
        {
            "pick-timely": "own",
            "edits": json.dumps(edits),
            "rationale": "Neither date is established by the archive.",
            "client_submission_id": str(uuid.uuid4()),
        },
    )

    assert response.status_code == 302
    final = Label.objects.get(unit=unit, kind=LabelKind.ADJUDICATED)
    assert final.annotation["verdicts"]["timely"]["value"] is None
    assert final.annotation["claims"] == first.annotation["claims"]
    assert len(final.parents) == 2
    assert Unit.objects.get(pk=unit.pk).state == UnitState.ADJUDICATED
