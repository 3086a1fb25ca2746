"""Markup in archived texts and in what annotators type is shown as text: the demo's
forum source quotes ``<script>alert(1)</script>`` and ``<b>bold</b>``; no dialog may ever
open, no element may come from a snapshot, and a span over the markup stays text too."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotator.labelling.models import Label
from tests.browser.helpers import (
    assign,
    expected_span,
    login_fast,
    open_form,
    select_text,
    snapshot_selector,
    source_names,
    texts_of,
    unit_where,
    wait_for_form,
)

pytestmark = pytest.mark.browser

SCRIPT = "<script>alert(1)</script>"
RATIONALE = '<img src=x onerror="alert(2)"> and </textarea><script>alert(3)</script>'


def assert_shown_as_text(page, selector: str, text: str) -> None:
    element = page.locator(selector)
    assert element.text_content() == text
    assert element.locator("script, b, img").count() == 0


def test_markup_in_a_source_is_text_on_the_source_risk_form(page, context, events, demo):
    unit = unit_where(demo.studies["demo-source-risk"], tuple__source__text__contains=SCRIPT)
    texts = texts_of(unit)
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)

    for snapshot in ("query", "answer", "source"):
        assert_shown_as_text(page, snapshot_selector(snapshot), texts[snapshot])
    expect(page.locator(snapshot_selector("source"))).to_contain_text(SCRIPT)
    expect(page.locator(snapshot_selector("answer"))).to_contain_text("<script> tags")

    # The markup as evidence: in the span list and the highlight, still text.
    span = expected_span("source", texts["source"], SCRIPT)
    select_text(page, snapshot_selector("source"), span["start"], span["end"])
    page.locator('#span-toolbar button[data-attach="I"]').click()
    expect(page.locator('li.span-item[data-field="I"]')).to_contain_text(SCRIPT)
    expect(page.locator("mark.span-highlight")).to_have_text(SCRIPT)
    assert_shown_as_text(page, snapshot_selector("source"), texts["source"])

    page.check('input[name="field-I"][value="1"]')
    for key in ("A", "M", "D"):
        page.check(f'input[name="field-{key}"][value="U"]')
    page.check('input[name="field-passage_support"][value="U"]')
    page.check('input[name="field-source_role"][value="user_generated"]')
    for key in ("d_Q", "d_R", "d_P", "d_S"):
        page.fill(f'input[name="field-{key}"]', "0.5")
    page.fill('textarea[name="rationale"]', RATIONALE)
    page.click("#submit-label")
    expect(page.locator(".messages")).to_contain_text("Label submitted")
    label = Label.objects.get(assignment=assignment)
    assert label.annotation["spans"] == {"I": [span]}
    assert label.annotation["rationale"] == RATIONALE

    # The next item opened; the start page lists this one, and its revision form shows
    # the stored label again.
    page.goto(f"/studies/{assignment.study.slug}/annotate/")
    row = page.locator(f'tr.assignment-row[data-assignment-id="{assignment.pk}"]')
    expect(row).to_have_count(1)
    row.locator("a").click()
    wait_for_form(page)
    expect(page.locator(".revision-note")).to_be_visible()
    expect(page.locator('li.span-item[data-field="I"]')).to_contain_text(SCRIPT)
    expect(page.locator('textarea[name="rationale"]')).to_have_value(RATIONALE)
    assert_shown_as_text(page, snapshot_selector("source"), texts["source"])
    assert page.locator("img").count() == 0
    assert events.dialogs == []
    assert events.page_errors == []
    # The dialog listener does see a dialog when one opens.
    page.evaluate("() => window.alert('probe')")
    assert events.dialogs == [("alert", "probe")]


def test_markup_in_sources_is_text_on_the_claims_form(page, context, events, demo):
    unit = unit_where(
        demo.studies["demo-answer-claims"], observation__answer__text__contains="<script>"
    )
    texts = texts_of(unit)
    assert any(SCRIPT in text for text in texts["sources"].values())
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)

    assert_shown_as_text(page, snapshot_selector("answer"), texts["answer"])
    names = source_names(unit)
    for digest, text in texts["sources"].items():
        assert_shown_as_text(page, snapshot_selector(names[digest]), text)
    (digest,) = [d for d, text in texts["sources"].items() if SCRIPT in text]
    claim = expected_span("answer", texts["answer"], "<script> tags as plain text")
    select_text(page, snapshot_selector("answer"), claim["start"], claim["end"])
    expect(page.locator("#selection-preview")).to_contain_text("<script> tags")
    page.click("#add-claim")
    expect(page.locator('.claim[data-claim-id="c1"] .claim-text')).to_contain_text("<script>")
    page.locator('.claim[data-claim-id="c1"] select.claim-source').select_option(digest)
    quote = expected_span("source", texts["sources"][digest], SCRIPT)
    select_text(page, snapshot_selector(names[digest]), quote["start"], quote["end"])
    expect(page.locator("#selection-preview")).to_contain_text(SCRIPT)
    page.locator('.claim[data-claim-id="c1"] button.claim-quote').click()
    expect(page.locator('.claim[data-claim-id="c1"] .claim-quote-text')).to_contain_text(SCRIPT)
    expect(page.locator(f"{snapshot_selector(names[digest])} mark")).to_have_text(SCRIPT)
    assert page.locator(".claim script, .claim-text b").count() == 0
    assert events.dialogs == []
    assert events.page_errors == []
