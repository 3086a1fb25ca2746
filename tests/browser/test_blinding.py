"""Blinding in the browser: a second annotator sees nothing of the first one's work on
the same unit — no spans, quotes, judgments or rationale on their pages — and the first
one's assignment does not exist for them."""

from __future__ import annotations

import json
import re
import uuid

import pytest
from playwright.sync_api import expect

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.models import Assignment
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import draft_save, label_submit
from annotator.memberships.models import Membership, Role
from annotator.memberships.services import pseudonym_of, study_overlap_set
from audit.archive.models import Unit
from tests.annotation.annotations import source_risk
from tests.browser.helpers import assign, login, login_fast, open_form, unit_where

pytestmark = pytest.mark.browser

RISK = "demo-source-risk"
SUBMITTED_RATIONALE = "A1-SUBMITTED-RATIONALE: the footer names the owner"
DRAFT_RATIONALE = "A1-DRAFT-RATIONALE: still checking the imprint"


@pytest.fixture
def first_annotators_work(demo):
    """annotator1 submitted a label on one unit and holds a draft on another."""
    study = demo.studies[RISK]
    annotator1 = demo.users["annotator1"]
    shared = unit_where(study, tuple__source__text__contains="😂")
    other = unit_where(study, tuple__source__canonical_url__contains="luebeck-entdecken")
    submitted = assign(shared, annotator1)
    annotation = source_risk(unit_content(unit=shared), rationale=SUBMITTED_RATIONALE)
    label_submit(
        assignment=submitted,
        annotation=annotation,
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    )
    drafted = assign(other, annotator1)
    draft_save(
        assignment=drafted,
        payload={**annotation, "rationale": DRAFT_RATIONALE},
        base_version=None,
    )
    quotes = {span["quote"] for spans in annotation["spans"].values() for span in spans}
    return {"unit": shared, "submitted": submitted, "drafted": drafted, "quotes": quotes}


def assert_no_trace(html: str) -> None:
    for secret in (SUBMITTED_RATIONALE, DRAFT_RATIONALE, "annotator1"):
        assert secret not in html


def test_second_annotator_sees_nothing_of_the_first(
    page, context, events, demo, first_annotators_work
):
    work = first_annotators_work
    annotator2 = demo.users["annotator2"]
    login_fast(context, annotator2, demo.url)

    # Their start page: their own (empty) progress and list, nothing of annotator1's.
    page.goto(f"/studies/{RISK}/annotate/")
    expect(page.locator("#progress-done")).to_have_text("0")
    expect(page.locator("#progress-assigned")).to_have_text("0")
    expect(page.locator("tr.assignment-row")).to_have_count(0)
    assert_no_trace(page.content())

    # The same unit, handed to them: a blank form.
    mine = assign(work["unit"], annotator2)
    page.goto(f"/studies/{RISK}/annotate/")
    expect(page.locator("tr.assignment-row")).to_have_count(1)
    page.click("#next-item")
    expect(page).to_have_url(re.compile(rf"/assignments/{mine.pk}/$"))
    open_form(page, mine)
    html = page.content()
    assert_no_trace(html)
    assert work["submitted"].labels.get().record_digest not in html
    expect(page.locator("li.span-item")).to_have_count(0)
    expect(page.locator("mark.span-highlight")).to_have_count(0)
    expect(page.locator("input[type=radio]:checked")).to_have_count(0)
    expect(page.locator('textarea[name="rationale"]')).to_have_value("")
    expect(page.locator('input[name="field-source_role"]:checked')).to_have_count(0)
    expect(page.locator(".revision-note")).to_have_count(0)
    data = json.loads(page.locator("#annotate-data").text_content())
    assert data["initial"]["state"] is None
    assert data["head_state"] is None
    assert data["parent_digest"] == ""
    # A quote is a piece of the snapshot text, which both see; as evidence, never.
    evidence = "".join(page.locator("#label-form .span-list").all_text_contents())
    assert evidence == ""
    assert not any(quote in evidence for quote in work["quotes"])

    # annotator1's assignments do not exist for annotator2, page or endpoint alike.
    for theirs in (work["submitted"], work["drafted"]):
        response = page.goto(f"/assignments/{theirs.pk}/")
        assert response.status == 404
        assert_no_trace(page.content())
        token = next(c["value"] for c in context.cookies() if c["name"] == "csrftoken")
        for endpoint in ("draft", "submit"):
            answer = context.request.post(
                f"{demo.url}/assignments/{theirs.pk}/{endpoint}",
                form={"payload": "{}", "version": "0", "annotation": "{}"},
                headers={"X-CSRFToken": token, "Referer": demo.url + "/"},
            )
            assert answer.status == 404, (endpoint, answer.status)
            assert_no_trace(answer.text())
    assert events.page_errors == []


def test_a_shared_browser_keeps_no_copy_after_submit_and_logout(page, context, demo):
    unit = unit_where(demo.studies[RISK], tuple__source__text__contains="😂")
    assignment = assign(unit, demo.users["annotator1"])
    login(page, "annotator1", "annotator1-demo")
    open_form(page, assignment)
    for key in ("I", "A", "M", "D"):
        page.check(f'input[name="field-{key}"][value="U"]')
    page.check('input[name="field-passage_support"][value="U"]')
    page.check('input[name="field-source_role"][value="unknown"]')
    for key in ("d_Q", "d_R", "d_P", "d_S"):
        page.fill(f'input[name="field-{key}"]', "0")
    page.fill('textarea[name="rationale"]', SUBMITTED_RATIONALE)
    page.click("#submit-label")
    expect(page.locator(".messages")).to_contain_text("Label submitted")
    page.locator("header form.logout button").click()
    expect(page).to_have_url(re.compile(r"/accounts/login/"))

    # annotator2 logs in on the same browser.
    page.fill("#id_username", "annotator2")
    page.fill("#id_password", "annotator2-demo")
    page.click("button[type=submit]")
    expect(page.locator("header .who")).to_have_text("annotator2")
    stored = page.evaluate("() => JSON.stringify(Object.entries(window.localStorage))")
    assert SUBMITTED_RATIONALE not in stored


def test_an_annotator_adjudicator_never_gets_the_unit_they_adjudicated(page, context, events, demo):
    """The attack of issue 11, in the browser: someone who annotates and adjudicates reads
    both labels of a disputed unit, the study's overlap is raised, and "Next item" never
    hands them that unit: every other unit comes, then nothing is left."""
    study = demo.studies[RISK]
    unit = unit_where(study, tuple__source__text__contains="😂")
    for username, values in (("annotator1", (1, 1, 1, 0)), ("annotator2", (1, 1, None, 0))):
        label = label_submit(
            assignment=assign(unit, demo.users[username]),
            annotation=source_risk(unit_content(unit=unit), values=values),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        ).label
        label_submitted.run(label.pk)
    dual = demo.users["adjudicator"]
    Membership.objects.get_or_create(study=study, user=dual, role=Role.ANNOTATOR)
    login_fast(context, dual, demo.url)

    page.goto(f"/adjudicate/{unit.pk}/")
    expect(page.locator("#pick-status")).to_contain_text("still to decide")
    for username in ("annotator1", "annotator2"):
        expect(page.locator("body")).to_contain_text(
            pseudonym_of(study=study, user=demo.users[username])
        )
    study_overlap_set(study=study, overlap=3)

    handed = []
    for _ in range(Unit.objects.filter(study=study).count() + 1):
        page.goto(f"/studies/{RISK}/annotate/")
        page.click("#next-item")
        page.wait_for_load_state()
        found = re.search(r"/assignments/(\d+)/$", page.url)
        if found is None:
            break
        assignment = Assignment.objects.select_related("unit").get(pk=int(found[1]))
        handed.append(assignment.unit_id)
        assert assignment.unit_id != unit.pk, "handed the unit whose labels it read"
        label_submit(
            assignment=assignment,
            annotation=source_risk(unit_content(unit=assignment.unit)),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        )
    expect(page.locator("body")).to_contain_text("Nothing is left for you to annotate")
    assert unit.pk not in handed
    assert len(handed) == Unit.objects.filter(study=study).count() - 1
    assert events.page_errors == []
