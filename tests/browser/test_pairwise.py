"""Seed 002's pairwise side by side in Chromium (issue 13, item 3): two annotators whose
drawn orders of one answer pair are opposite each pick the side that shows the same answer
— "left" for one (by keyboard), "right" for the other (by mouse). The stored labels are
checked against the hidden order: both are Good for the evaluated answer, and the pair is
agreed. Neither page names a role: only "Left" and "Right"."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.models import Label, LabelKind
from audit.archive.models import UnitState
from tests.annotation.pairs import (
    HIDDEN_WORDS,
    baseline_text,
    evaluated_text,
    opposite_annotators,
    pairs_study,
)
from tests.browser.conftest import TIMEOUT_MS, VIEWPORT
from tests.browser.helpers import assign, login_fast, open_form

pytestmark = pytest.mark.browser


def _pane_text(page, side: str) -> str:
    return page.locator(f'[data-snapshot="{side}"]').inner_text()


#: A ceiling for a submission's response, not a measure of speed: with Celery eager the
#: request also runs the jobs it queues (outcomes, the demo study's gate), which a loaded
#: machine may take longer than the default timeout of an action to finish.
SUBMIT_CEILING_MS = 120_000


def _submit(page) -> None:
    page.click("#submit-label", no_wait_after=True)
    expect(page.locator("body")).to_contain_text("Label submitted", timeout=SUBMIT_CEILING_MS)


def _requests_while_opening(page, assignment) -> list[str]:
    """The requests the form makes as it opens (this assignment's id masked): the same
    list, in the same order, whichever side shows which answer."""
    made: list[str] = []
    page.on("request", lambda request: made.append(f"{request.method} {request.url}"))
    open_form(page, assignment)
    return [line.replace(f"/{assignment.pk}/", "/@PK@/") for line in made]


def _no_role_in(page) -> None:
    html = page.content().lower()
    assert [word for word in HIDDEN_WORDS if word in html] == []
    names = page.eval_on_selector_all(
        "[data-snapshot]", "nodes => nodes.map(n => n.dataset.snapshot)"
    )
    assert sorted(names) == ["left", "query", "right"]


def test_two_annotators_pick_opposite_sides_for_the_same_answer_and_agree(
    browser, page, context, demo
):
    study = pairs_study("pairwise-browser", n=2)
    unit = study.units.order_by("id").first()
    n = int(unit.observation.query.query_id.rsplit("-", 1)[1])
    sees_it_left, sees_it_right = opposite_annotators(study, unit, prefix="pairwise")

    # --- the first sees the evaluated answer on the left and picks it by keyboard -------
    login_fast(context, sees_it_left, demo.url)
    first = assign(unit, sees_it_left)
    assert first.pair_left_is_evaluated is True  # the hidden order, never on the page
    requests_first = _requests_while_opening(page, first)
    expect(page.locator("#side-left-title")).to_have_text("Left")
    expect(page.locator("#side-right-title")).to_have_text("Right")
    assert _pane_text(page, "left") == evaluated_text(n)
    assert _pane_text(page, "right") == baseline_text(n)
    _no_role_in(page)
    page.click("#judgments-title")  # focus leaves the text boxes; keys now act
    page.keyboard.press("p")
    page.keyboard.press("l")
    expect(page.locator('input[name="field-preference"][value="left"]')).to_be_checked()
    page.fill("#reason-preference", "it names a quiet router that fits a small office")
    _submit(page)

    # --- the second sees it on the right and picks it by mouse, in another browser ------
    other = browser.new_context(viewport=VIEWPORT, base_url=demo.url)
    other.set_default_timeout(TIMEOUT_MS)
    try:
        login_fast(other, sees_it_right, demo.url)
        second = assign(unit, sees_it_right)
        assert second.pair_left_is_evaluated is False
        page2 = other.new_page()
        assert _requests_while_opening(page2, second) == requests_first
        assert _pane_text(page2, "left") == baseline_text(n)
        assert _pane_text(page2, "right") == evaluated_text(n)
        _no_role_in(page2)
        page2.click('label.choice:has(input[name="field-preference"][value="right"])')
        expect(page2.locator('input[name="field-preference"][value="right"]')).to_be_checked()
        page2.fill("#reason-preference", "the right one names a router that fits")
        _submit(page2)
        # the read-only page shows them their own pick again, in their own order
        page2.goto(f"/assignments/{second.pk}/")
        expect(page2.locator(".submitted-rows")).to_contain_text("Right is better")
    finally:
        other.close()

    # --- stored against the hidden order: both Good for the evaluated answer -------------
    labels = {
        label.annotator_id: label for label in Label.objects.filter(unit=unit, kind="independent")
    }
    for person, assignment in ((sees_it_left, first), (sees_it_right, second)):
        stored = labels[person.pk].annotation
        shown_left = "answer" if assignment.pair_left_is_evaluated else "baseline"
        assert stored["sides"]["left"] == shown_left
        assert stored["values"] == {"preference": "answer"}  # G
    for label in labels.values():
        label_submitted.run(label.pk)  # what the worker does after a submission
    unit.refresh_from_db()
    assert unit.state == UnitState.AGREED
    consensus = Label.objects.get(unit=unit, kind=LabelKind.CONSENSUS)
    assert consensus.annotation["values"] == {"preference": "answer"}
