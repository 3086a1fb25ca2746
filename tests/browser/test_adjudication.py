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
    assign,
    drag_select,
    expected_span,
    login_fast,
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
    expect(page.locator('tr[data-field="pred-M"]')).to_have_class(re.compile(r"\bdiffers\b"))
    expect(page.locator("#pick-status")).to_contain_text("1 field still to decide")

    # Before a rationale is written, the page says the server will refuse.
    page.focus('input[name="pick-pred-M"][value="0"]')
    page.keyboard.press("1")  # take annotator 1's M (1) with its spans
    expect(page.locator('input[name="pick-pred-M"][value="0"]')).to_be_checked()
    expect(page.locator("#pick-status")).to_contain_text("Every field is decided")
    page.click("#submit-adjudication")
    expect(page.locator("#form-errors")).to_contain_text("Rationale")
    assert not Label.objects.filter(unit=unit, kind=LabelKind.ADJUDICATED).exists()

    # Spans: drop the passage-support span, add one for I by dragging over the emoji.
    page.click('ul[data-judgment="passage_support"] button[data-remove-span]')
    expect(page.locator('ul[data-judgment="passage_support"] .removed')).to_have_count(1)
    start = texts["source"].index(NEEDLE)
    drag_select(page, snapshot_selector("source"), start, start + len(NEEDLE))
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
