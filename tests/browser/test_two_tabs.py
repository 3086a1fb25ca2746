"""One annotator, one item, two tabs: a draft saved in one tab is never silently
overwritten by the other, and a submission that a second tab overtook is refused with
both versions shown and nothing lost."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotator.labelling.models import Draft, Label
from tests.browser.helpers import assign, expect_left_form, login_fast, open_form, unit_where

pytestmark = pytest.mark.browser

RISK = "demo-source-risk"


def to_front(page):
    """Work in this tab: a background tab gets no animation frames, and Playwright waits
    for them before it clicks."""
    page.bring_to_front()
    return page


def autosaved(page):
    return page.expect_response(
        lambda response: response.url.endswith("/draft") and response.request.method == "POST"
    )


def fill_unresolved(page, rationale: str) -> None:
    for key in ("I", "A", "M", "D"):
        page.check(f'input[name="field-{key}"][value="U"]')
    page.check('input[name="field-passage_support"][value="U"]')
    page.check('input[name="field-source_role"][value="unknown"]')
    for key in ("d_Q", "d_R", "d_P", "d_S"):
        page.fill(f'input[name="field-{key}"]', "0")
    page.fill('textarea[name="rationale"]', rationale)


@pytest.fixture
def two_tabs(context, demo):
    unit = unit_where(demo.studies[RISK], tuple__source__text__contains="😂")
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    first, second = context.new_page(), context.new_page()
    open_form(first, assignment)
    open_form(second, assignment)
    return assignment, first, second


def test_a_draft_from_another_tab_is_a_conflict_and_the_choice_is_the_users(two_tabs):
    assignment, first, second = two_tabs
    to_front(first)
    with autosaved(first) as response:
        first.fill('textarea[name="rationale"]', "from the first tab")
    assert response.value.status == 200
    expect(first.locator("#draft-status")).to_contain_text("Saved")

    to_front(second)
    with autosaved(second) as response:
        second.fill('textarea[name="rationale"]', "from the second tab")
    assert response.value.status == 409
    status = second.locator("#draft-status")
    expect(status).to_contain_text("Another tab or device stored a newer draft")
    assert Draft.objects.get(assignment=assignment).payload["rationale"] == "from the first tab"

    with autosaved(second) as response:
        status.get_by_role("button", name="Keep this tab’s work").click()
    assert response.value.status == 200
    expect(status).to_contain_text("Saved")
    assert Draft.objects.get(assignment=assignment).payload["rationale"] == "from the second tab"


def test_a_submission_overtaken_by_another_tab_is_refused_and_kept(two_tabs):
    assignment, first, second = two_tabs
    fill_unresolved(to_front(first), "submitted in the first tab")
    first.click("#submit-label")
    expect(first.locator(".messages")).to_contain_text("Label submitted")

    fill_unresolved(to_front(second), "submitted in the second tab")
    second.click("#submit-label")
    expect(second.locator("#form-errors")).to_contain_text("stale_revision")
    compare = second.locator("#stale-compare")
    expect(compare.locator('[data-version="mine"]')).to_contain_text("submitted in the second tab")
    expect(compare.locator('[data-version="latest"]')).to_contain_text("submitted in the first tab")
    expect(second.locator('textarea[name="rationale"]')).to_have_value(
        "submitted in the second tab"
    )
    assert Label.objects.filter(assignment=assignment).count() == 1

    # Submitting again stores the second tab's version as revision 2; revision 1 stays.
    second.click("#submit-label")
    expect_left_form(second, assignment)
    expect(second.locator(".messages")).to_contain_text("Revision 2 submitted")
    labels = list(Label.objects.filter(assignment=assignment).order_by("revision"))
    assert [label.annotation["rationale"] for label in labels] == [
        "submitted in the first tab",
        "submitted in the second tab",
    ]
    assert labels[1].parents == [labels[0].record_digest]
