"""Adjudication in the browser: an adjudicator resolves a disputed source-risk unit by
taking sides with the keyboard, removing a span and adding one from a selection (with an
emoji in it), and learns before submitting that a rationale is required."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.models import Label, LabelKind
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import label_submit
from audit.archive.models import Unit, UnitState
from tests.annotation.annotations import source_risk
from tests.browser.helpers import (
    HeldRequests,
    assign,
    drag_points,
    drag_select,
    expected_span,
    login_fast,
    select_and_click,
    select_text,
    snapshot_selector,
    texts_of,
    unit_where,
)

pytestmark = pytest.mark.browser

RISK = "demo-source-risk"
NEEDLE = "助かりました😂 2時まで開いている"


@pytest.fixture
def disputed_unit(demo):
    unit = unit_where(demo.studies[RISK], tuple__source__text__contains="😂")
    for username, values in (("annotator1", (1, 1, 1, 0)), ("annotator2", (1, 1, None, 0))):
        assignment = assign(unit, demo.users[username])
        label = label_submit(
            assignment=assignment,
            annotation=source_risk(unit_content(unit=unit), values=values),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        ).label
        label_submitted.run(label.pk)
    unit.refresh_from_db()
    assert unit.state == UnitState.DISPUTED
    return unit


def test_the_adjudicator_resolves_a_disputed_unit(page, context, events, demo, disputed_unit):
    unit = disputed_unit
    texts = texts_of(unit)
    login_fast(context, demo.users["adjudicator"], demo.url)
    page.goto(f"/studies/{RISK}/adjudicate/")
    page.click(f'tr[data-unit-id="{unit.pk}"] a')
    expect(page).to_have_url(re.compile(rf"/adjudicate/{unit.pk}/$"))
    expect(page.locator('tr[data-field="M"]')).to_have_class(re.compile(r"\bdiffers\b"))
    expect(page.locator("#pick-status")).to_contain_text("1 field still to decide")

    # Before a rationale is written, the page says the server will refuse.
    first_m = page.locator('tr[data-field="M"] td[data-column="0"] input[name="pick-M"]')
    page.locator('tr[data-field="M"] td[data-column="1"] input[name="pick-M"]').focus()
    page.keyboard.press("1")  # take annotator 1's M (1) with its spans
    expect(first_m).to_be_checked()
    expect(page.locator("#pick-status")).to_contain_text("Every field is decided")
    page.click("#submit-adjudication")
    expect(page.locator("#form-errors")).to_contain_text("Rationale")
    assert not Label.objects.filter(unit=unit, kind=LabelKind.ADJUDICATED).exists()

    # Spans: drop the passage-support span, add one for I by dragging over the emoji.
    page.click('ul[data-judgment="passage_support"] button[data-remove-span]')
    expect(page.locator('ul[data-judgment="passage_support"] .removed')).to_have_count(1)
    start = texts["source"].index(NEEDLE)
    assert drag_select(page, snapshot_selector("source"), start, start + len(NEEDLE)) == NEEDLE
    expect(page.locator("#span-toolbar")).to_be_visible()
    page.click('#span-toolbar button[data-attach="I"]')
    expect(page.locator('ul[data-judgment="I"] .added')).to_contain_text(NEEDLE)
    page.check('input[name="pick-passage_support"][value="own"]')
    page.select_option('select[data-own="passage_support"]', "U")

    page.fill("#rationale", "The review states the opening hours; M holds for a late visit.")
    page.click("#submit-adjudication")

    expect(page).to_have_url(re.compile(rf"/studies/{RISK}/adjudicate/$"))
    expect(page.locator(".messages")).to_contain_text(f"Unit {unit.pk} adjudicated")
    final = Label.objects.get(unit=unit, kind=LabelKind.ADJUDICATED)
    heads = Label.objects.filter(unit=unit, kind=LabelKind.INDEPENDENT)
    assert final.parents == sorted(h.record_digest for h in heads)
    annotation = final.annotation
    assert annotation["predicates"] == {"I": 1, "A": 1, "M": 1, "D": 0}
    assert annotation["passage_support"] is None
    assert "passage_support" not in annotation["spans"]
    assert expected_span("source", texts["source"], NEEDLE) in annotation["spans"]["I"]
    assert annotation["rationale"].startswith("The review states")
    assert Unit.objects.get(pk=unit.pk).state == UnitState.ADJUDICATED
    assert events.page_errors == []
    assert events.dialogs == []


# The page, not the test, decides when a selection is read: these hold on any machine.
EARLIER = "麺屋こだま 渋谷店"


def open_adjudication(page, context, demo, unit) -> None:
    login_fast(context, demo.users["adjudicator"], demo.url)
    page.goto(f"/adjudicate/{unit.pk}/")
    expect(page.locator("#pick-status")).to_contain_text("1 field still to decide")


def added_to_i(page):
    return page.locator('ul[data-judgment="I"] .added')


def test_the_toolbar_attaches_the_selection_it_is_pressed_with(
    page, context, events, demo, disputed_unit
):
    """A toolbar shown for one selection, pressed at once after another is made, adds the
    other: what is selected when the button is pressed, not what the page last saw."""
    texts = texts_of(disputed_unit)
    source = snapshot_selector("source")
    open_adjudication(page, context, demo, disputed_unit)
    toolbar = page.locator("#span-toolbar")
    earlier = texts["source"].index(EARLIER)
    select_text(page, source, earlier, earlier + len(EARLIER))
    expect(toolbar).to_be_visible()

    start = texts["source"].index(NEEDLE)
    select_and_click(page, source, start, start + len(NEEDLE), '[data-attach="I"]')
    expect(added_to_i(page)).to_have_count(1)
    expect(added_to_i(page)).to_contain_text(NEEDLE)
    expect(toolbar).to_be_hidden()
    assert events.page_errors == []


def test_the_toolbar_stays_away_while_the_mouse_selects(page, context, events, demo, disputed_unit):
    """A press starts a new selection: the toolbar of the last one goes at once and comes
    back only when the button is released, for the whole new selection."""
    texts = texts_of(disputed_unit)
    source = snapshot_selector("source")
    open_adjudication(page, context, demo, disputed_unit)
    toolbar = page.locator("#span-toolbar")
    earlier = texts["source"].index(EARLIER)
    select_text(page, source, earlier, earlier + len(EARLIER))
    expect(toolbar).to_be_visible()

    start = texts["source"].index(NEEDLE)
    points = drag_points(page, source, start, start + len(NEEDLE))
    page.mouse.move(points["from"]["x"], points["from"]["y"])
    page.mouse.down()
    expect(toolbar).to_be_hidden()
    page.mouse.move(points["to"]["x"], points["to"]["y"], steps=8)
    expect(toolbar).to_be_hidden()
    page.mouse.up()
    expect(toolbar).to_be_visible()
    page.click('#span-toolbar button[data-attach="I"]')
    expect(added_to_i(page)).to_have_count(1)
    expect(added_to_i(page)).to_contain_text(NEEDLE)
    assert events.page_errors == []


def test_a_selection_made_while_the_page_loads_still_attaches(
    page, context, events, demo, disputed_unit
):
    """The texts are on screen before the page's script runs: a selection made then
    survives the script's start and gets the toolbar."""
    texts = texts_of(disputed_unit)
    source = snapshot_selector("source")
    login_fast(context, demo.users["adjudicator"], demo.url)
    script = HeldRequests(page, "**/static/js/adjudicate.js")
    page.goto(f"/adjudicate/{disputed_unit.pk}/", wait_until="commit")
    expect(page.locator(source)).to_have_text(texts["source"])
    start = texts["source"].index(NEEDLE)
    assert select_text(page, source, start, start + len(NEEDLE)) == NEEDLE
    expect(page.locator("#pick-status")).to_be_empty()  # the script has not run yet

    script.release()
    expect(page.locator("#pick-status")).to_contain_text("1 field still to decide")
    expect(page.locator("#span-toolbar")).to_be_visible()
    page.click('#span-toolbar button[data-attach="I"]')
    expect(added_to_i(page)).to_contain_text(NEEDLE)
    assert events.page_errors == []
