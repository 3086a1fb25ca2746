"""Submitting: a double click stores one label, a replayed request stores nothing more,
and an expired session loses no work."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotator.labelling.models import Draft, Label
from tests.browser.helpers import (
    HeldRequests,
    assign,
    autosave_of,
    expect_left_form,
    expected_span,
    login,
    login_fast,
    open_form,
    select_text,
    snapshot_selector,
    texts_of,
    unit_where,
    wait_for_form,
)

pytestmark = pytest.mark.browser

RISK = "demo-source-risk"


def fill_unresolved(page) -> None:
    """The smallest complete source-risk label: every judgment U (no span needed)."""
    for key in ("I", "A", "M", "D"):
        page.check(f'input[name="field-{key}"][value="U"]')
    page.check('input[name="field-passage_support"][value="U"]')
    page.check('input[name="field-source_role"][value="unknown"]')
    for key in ("d_Q", "d_R", "d_P", "d_S"):
        page.fill(f'input[name="field-{key}"]', "0")


@pytest.fixture
def risk_assignment(demo):
    unit = unit_where(demo.studies[RISK], tuple__source__text__contains="😂")
    return assign(unit, demo.users["annotator1"])


def test_a_double_clicked_submit_stores_one_label(page, context, events, demo, risk_assignment):
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, risk_assignment)
    fill_unresolved(page)

    with page.expect_request(
        lambda request: request.url.endswith("/submit") and request.method == "POST"
    ) as sent:
        page.dblclick("#submit-label")
    expect_left_form(page, risk_assignment)
    expect(page.locator(".messages")).to_contain_text("Label submitted")
    assert Label.objects.filter(assignment=risk_assignment).count() == 1

    # The same request once more (a retry after a lost answer): nothing new is stored.
    request = sent.value
    again = context.request.post(
        request.url,
        data=request.post_data_buffer,
        headers={"Content-Type": request.headers["content-type"], "Referer": request.url},
    )
    assert again.ok
    assert "already stored" in again.text()
    assert Label.objects.filter(assignment=risk_assignment).count() == 1
    assert events.page_errors == []


def start_draft_then_lose_the_session(page, assignment, cookies: str) -> dict:
    """Log in through the form, make a draft with a span, then lose the session cookie
    (``session``: it expired, the csrftoken cookie outlives it) or every cookie (``all``:
    cleared by the browser or the user); the next autosave is refused."""
    texts = texts_of(assignment.unit)
    login(page, "annotator1", "annotator1-demo")
    open_form(page, assignment)
    fill_unresolved(page)
    page.check('input[name="field-I"][value="1"]')
    span = expected_span("source", texts["source"], "2時まで開いているのはありがたい")
    select_text(page, snapshot_selector("source"), span["start"], span["end"])

    # Stored before the session goes: an autosave still on its way would answer the wait
    # below with the session it left with.
    def carries_the_span(draft: dict) -> bool:
        return [
            {key: value for key, value in given.items() if key != "field"}
            for given in draft["spans"]
            if given["field"] == "I"
        ] == [span]

    with autosave_of(page, carries_the_span) as stored:
        page.locator('#span-toolbar button[data-attach="I"]').click()
    assert stored.value.status == 200
    expect(page.locator('li.span-item[data-field="I"]')).to_have_count(1)

    if cookies == "session":
        page.context.clear_cookies(name="sessionid")
    else:
        page.context.clear_cookies()
    with page.expect_response(lambda response: response.url.endswith("/draft")) as autosave:
        page.fill('textarea[name="rationale"]', "written after the session ended")
    assert autosave.value.status in (401, 403)
    expect(page.locator("#session-expired")).to_be_visible()
    return span


@pytest.mark.parametrize("cookies", ["session", "all"])
def test_an_expired_session_keeps_the_work(page, events, demo, risk_assignment, cookies):
    span = start_draft_then_lose_the_session(page, risk_assignment, cookies)
    with page.expect_response(lambda response: response.url.endswith("/submit")) as answer:
        page.click("#submit-label")
    # 401 from the view; 403 from the CSRF check when the csrftoken cookie went too.
    assert answer.value.status == (401 if cookies == "session" else 403)
    expect(page.locator("#session-expired-page")).to_contain_text(
        "your work is kept in this browser"
    )
    page.get_by_role("link", name="Log in again").click()
    assert not Label.objects.filter(assignment=risk_assignment).exists()

    # Logging in again brings the form back with the work from this browser.
    expect(page).to_have_url(re.compile(r"/accounts/login/"))
    page.fill("#id_username", "annotator1")
    page.fill("#id_password", "annotator1-demo")
    page.click("button[type=submit]")
    expect(page).to_have_url(re.compile(rf"/assignments/{risk_assignment.pk}/$"))
    # The page the login led to, not a second one: this one restores the work and
    # autosaves it, after which a reload has nothing left to restore.
    wait_for_form(page)
    expect(page.locator("#restore-notice")).to_contain_text("Restored your unsent work")
    expect(page.locator('input[name="field-I"][value="1"]')).to_be_checked()
    expect(page.locator('li.span-item[data-field="I"]')).to_have_attribute(
        "data-start", str(span["start"])
    )
    expect(page.locator('textarea[name="rationale"]')).to_have_value(
        "written after the session ended"
    )
    page.click("#submit-label")
    expect(page.locator(".messages")).to_contain_text("Label submitted")
    label = Label.objects.get(assignment=risk_assignment)
    assert label.annotation["spans"] == {"I": [span]}
    assert label.annotation["rationale"] == "written after the session ended"
    assert events.page_errors == []


def test_next_item_hands_out_a_unit_and_the_start_page_counts_it(page, context, events, demo):
    from annotator.labelling.models import Assignment

    login_fast(context, demo.users["annotator2"], demo.url)
    page.goto(f"/studies/{RISK}/annotate/")
    expect(page.locator("#next-item")).to_have_text("Next item")
    page.click("#next-item")
    expect(page).to_have_url(re.compile(r"/assignments/\d+/$"))
    (assignment,) = Assignment.objects.filter(annotator=demo.users["annotator2"])
    assert page.url.endswith(f"/assignments/{assignment.pk}/")
    open_form(page, assignment)

    page.goto(f"/studies/{RISK}/annotate/")
    expect(page.locator("#progress-done")).to_have_text("0")
    expect(page.locator("#progress-assigned")).to_have_text("1")
    expect(page.locator("#next-item")).to_have_text("Continue where you left off")
    page.click("#next-item")
    expect(page).to_have_url(re.compile(rf"/assignments/{assignment.pk}/$"))
    assert Assignment.objects.filter(annotator=demo.users["annotator2"]).count() == 1
    assert events.page_errors == []


def test_problems_are_listed_and_a_refusal_keeps_the_work(
    page, context, events, demo, risk_assignment
):
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, risk_assignment)
    fill_unresolved(page)
    page.check('input[name="field-I"][value="1"]')  # resolved, but no span
    page.fill('textarea[name="rationale"]', "kept after a refusal")

    errors = page.locator("#form-errors")
    page.click("#submit-label")
    expect(errors).to_contain_text("needs an evidence span")
    expect(errors).to_be_focused()
    assert page.url.endswith(f"/assignments/{risk_assignment.pk}/")

    # The server checks again and refuses with the contract's reason code.
    errors.get_by_role("button", name=re.compile("Submit anyway")).click()
    expect(page.locator('#form-errors .form-error[data-code="span_missing"]')).to_contain_text(
        "annotation.spans.I"
    )
    expect(page.locator('input[name="field-I"][value="1"]')).to_be_checked()
    expect(page.locator('textarea[name="rationale"]')).to_have_value("kept after a refusal")
    assert not Label.objects.filter(assignment=risk_assignment).exists()
    assert events.page_errors == []


def test_a_submission_waits_for_the_autosave_on_its_way(
    page, context, events, demo, risk_assignment
):
    """An autosave still on its way when the label is submitted must not reach the server
    after the submission (it would bring back the draft the submission deleted): the
    page sends the label once the autosave has its answer."""
    order: list[str] = []
    page.on(
        "request",
        lambda request: order.append("submit sent") if request.url.endswith("/submit") else None,
    )
    page.on(
        "requestfinished",
        lambda request: order.append("draft answered") if request.url.endswith("/draft") else None,
    )
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, risk_assignment)
    fill_unresolved(page)
    autosave = HeldRequests(page, "**/draft")
    with page.expect_request(lambda request: request.url.endswith("/draft")):
        page.fill('textarea[name="rationale"]', "submitted while an autosave was on its way")
    page.click("#submit-label")
    expect(page.locator("#submit-label")).to_have_attribute("aria-busy", "true")
    assert "submit sent" not in order

    autosave.release()
    expect(page.locator(".messages")).to_contain_text("Label submitted")
    assert order[-2:] == ["draft answered", "submit sent"]
    label = Label.objects.get(assignment=risk_assignment)
    assert label.annotation["rationale"] == "submitted while an autosave was on its way"
    assert not Draft.objects.filter(assignment=risk_assignment).exists()
    assert events.page_errors == []
