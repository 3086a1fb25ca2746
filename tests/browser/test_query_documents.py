"""Query–document grades in Chromium (seed 002 under the engine): an annotator fills each
document's fields with the keyboard (the field's key acts on the document being worked
on, the option's key chooses) and the mouse, adds a contradiction link and a redundancy
group, sees the draft restored after a reload, submits, and the stored label holds one
entry per document and the relations by position."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotator.labelling.models import Label
from annotator.memberships.models import Role
from annotator.memberships.services import membership_add
from tests.browser.helpers import (
    assign,
    autosave_of,
    drag_select,
    expected_span,
    login_fast,
    open_form,
    snapshot_selector,
)
from tests.engine.documents import evidence_definition, make_documents_study

pytestmark = pytest.mark.browser

SLUG = "qdocs-browser"


@pytest.fixture
def documents_study(demo):
    study = make_documents_study(SLUG, queries=1)
    membership_add(study=study, user=demo.users["annotator1"], role=Role.ANNOTATOR)
    return study


def radio(name: str, value: str) -> str:
    return f'input[name="field-{name}"][value="{value}"]'


def test_an_annotator_grades_each_document_and_relates_them(
    page, context, events, demo, documents_study
):
    unit = documents_study.units.get()
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)
    expect(page.locator(".document-card")).to_have_count(3)

    # --- document 1 by keyboard: its card is the one worked on; "a" goes to its support
    # grade, "2" chooses, "t" goes on to its authority level (a field's key may not be "u":
    # that chooses U inside a field) -----------------------------------------------------
    page.click("#document-0-title")
    page.keyboard.press("a")
    expect(page.locator('fieldset[data-field="support-0"]')).to_have_class(
        re.compile(r"\bis-active\b")
    )
    page.keyboard.press("2")
    expect(page.locator(radio("support-0", "2"))).to_be_checked()
    page.keyboard.press("t")
    expect(page.locator('fieldset[data-field="authority-0"]')).to_have_class(
        re.compile(r"\bis-active\b")
    )
    page.keyboard.press("3")
    expect(page.locator(radio("authority-0", "3"))).to_be_checked()
    page.check(radio("info-0", "1"))

    # --- document 2: the keyboard in its card ("a" then "u": U), the mouse for the rest --
    page.click("#document-1-title")
    page.keyboard.press("a")
    expect(page.locator('fieldset[data-field="support-1"]')).to_have_class(
        re.compile(r"\bis-active\b")
    )
    page.keyboard.press("u")
    expect(page.locator(radio("support-1", "U"))).to_be_checked()
    expect(page.locator(radio("support-0", "2"))).to_be_checked()  # document 1 unchanged
    page.check(radio("authority-1", "2"))
    page.check(radio("info-1", "U"))
    page.fill("#reason-support-1", "the page is cut off before the figures")

    # --- document 3 by mouse ---------------------------------------------------------------
    page.check(radio("support-2", "0"))
    page.check(radio("authority-2", "0"))
    page.check(radio("info-2", "0"))
    page.check(radio("producer_profile-2", "false"))

    # --- set level: a link (a self-link is refused on the page) and a group -------------
    links = page.locator('[data-link-editor="contradictions"]')
    links.locator("select[data-link-document]").select_option("2")
    links.locator("select[data-link-by]").select_option("2")
    links.locator("button[data-link-add]").click()
    expect(page.locator('[data-note-for="contradictions"]')).to_contain_text(
        "cannot contradict itself"
    )
    links.locator("select[data-link-by]").select_option("0")
    links.locator("button[data-link-add]").click()
    expect(page.locator('[data-links-for="contradictions"] li')).to_have_text(
        ["Document 3 is contradicted by document 1×"]
    )
    groups = page.locator('[data-group-editor="redundancy"]')
    groups.locator('input[data-group-member][value="0"]').check()
    groups.locator('input[data-group-member][value="1"]').check()
    groups.locator("select[data-group-representative]").select_option("0")
    with autosave_of(page, lambda draft: bool(draft["values"].get("redundancy"))):
        groups.locator("button[data-group-add]").click()
    expect(page.locator('[data-groups-for="redundancy"] li')).to_have_count(1)
    expect(page.locator('[data-groups-for="redundancy"] li')).to_contain_text(
        "document 1 represents them"
    )

    # --- the draft restores everything after a reload ---------------------------------------
    open_form(page, assignment)
    expect(page.locator(radio("support-0", "2"))).to_be_checked()
    expect(page.locator(radio("support-1", "U"))).to_be_checked()
    expect(page.locator(radio("authority-2", "0"))).to_be_checked()
    expect(page.locator("#reason-support-1")).to_have_value(
        "the page is cut off before the figures"
    )
    expect(page.locator('[data-links-for="contradictions"] li')).to_have_count(1)
    expect(page.locator('[data-groups-for="redundancy"] li')).to_have_count(1)

    page.click("#submit-label")
    expect(page.locator("body")).to_contain_text("Label submitted")
    label = Label.objects.get(unit=unit, annotator=demo.users["annotator1"])
    documents = label.annotation["documents"]
    assert [d["values"]["support"] for d in documents] == [2, None, 0]
    assert [d["values"]["authority"] for d in documents] == ["3", "2", "0"]
    assert [d["values"]["info"] for d in documents] == ["1", None, "0"]
    assert documents[2]["values"]["producer_profile"] is False
    assert "producer_profile" not in documents[0]["values"]
    assert documents[1]["reasons"] == {"support": "the page is cut off before the figures"}
    assert label.annotation["values"] == {
        "contradictions": [{"document": 2, "by": 0}],
        "redundancy": [{"representative": 0, "members": [0, 1]}],
    }
    assert events.console_errors == []


def test_evidence_is_selected_in_a_document_and_kept_with_its_field_there(
    page, context, events, demo
):
    study = make_documents_study(SLUG + "-evidence", queries=1, definition=evidence_definition())
    membership_add(study=study, user=demo.users["annotator1"], role=Role.ANNOTATOR)
    unit = study.units.get()
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)
    page.check(radio("support-0", "U"))  # U needs no span
    page.check(radio("support-1", "2"))
    page.check(radio("support-2", "0"))
    # A resolved grade without a span: the page says so on that document's field.
    expect(page.locator('[data-missing-for="support-1"]')).to_be_visible()
    expect(page.locator('[data-missing-for="support-0"]')).to_be_hidden()
    # Select in document 2's text with the mouse and attach it to the support grade.
    needle = "Acme's own page"
    assert drag_select(page, snapshot_selector("document:1"), 0, len(needle)) == needle
    page.click('#span-toolbar button[data-attach="support"]')
    expect(page.locator('ul[data-spans-for="support"][data-spans-document="1"] li')).to_have_count(
        1
    )
    expect(page.locator('ul[data-spans-for="support"][data-spans-document="0"] li')).to_have_count(
        0
    )
    expect(page.locator('[data-missing-for="support-1"]')).to_be_hidden()
    needle_3 = "The Federal Network Agency"
    drag_select(page, snapshot_selector("document:2"), 0, len(needle_3))
    page.click('#span-toolbar button[data-attach="support"]')
    expect(page.locator('ul[data-spans-for="support"][data-spans-document="2"] li')).to_have_count(
        1
    )
    page.click("#submit-label")
    expect(page.locator("body")).to_contain_text("Label submitted")
    label = Label.objects.get(unit=unit, annotator=demo.users["annotator1"])
    assert [d["values"]["support"] for d in label.annotation["documents"]] == [None, 2, 0]
    assert label.annotation["spans"] == [
        {"field": "support", **expected_span("document:1", document_text(unit, 1), needle)},
        {"field": "support", **expected_span("document:2", document_text(unit, 2), needle_3)},
    ]
    assert events.console_errors == []


def document_text(unit, position: int) -> str:
    from annotator.labelling.selectors import unit_content

    return unit_content(unit=unit).texts[f"document:{position}"]
