"""The proof of generality (issue 12, item 5): a codebook that no code knows — a
three-field toxicity rubric with a grade (with evidence spans), a choice with U and a
required reason, and a verdict — is installed like any other, units are
imported under it, two annotators label one of them in Chromium (keyboard and mouse, one
disagreement), an adjudicator resolves it in Chromium, and reliability and a release are
computed from it. Nothing in the code names the codebook or its fields."""

from __future__ import annotations

import csv
import io
import re

import pytest
from playwright.sync_api import expect

from annotator.adjudication.jobs import label_adjudicated, label_submitted
from annotator.labelling.models import Label, LabelKind
from annotator.memberships.models import Role
from annotator.memberships.services import membership_add
from audit.archive.models import UnitState
from audit.releases.models import Release
from audit.releases.services import release_build_run
from metrics.services import report_compute
from tests.browser.conftest import TIMEOUT_MS, VIEWPORT
from tests.browser.helpers import (
    assign,
    autosave_of,
    drag_select,
    expected_span,
    login_fast,
    open_form,
    snapshot_selector,
    texts_of,
    unit_where,
)
from tests.engine.studies import every_type_definition, generic_definition, make_generic_study

pytestmark = pytest.mark.browser

SLUG = "generic-toxicity"


@pytest.fixture
def generic(demo):
    study = make_generic_study(SLUG)
    for username, role in (
        ("annotator1", Role.ANNOTATOR),
        ("annotator2", Role.ANNOTATOR),
        ("adjudicator", Role.ADJUDICATOR),
        ("researcher", Role.RESEARCHER),
    ):
        membership_add(study=study, user=demo.users[username], role=role)
    return study


def first_words(text: str) -> str:
    """The answer's first few words: what the annotators cite for civility."""
    return " ".join(text.split(" ")[:4])


def label_in_browser(page, assignment, *, civility: str, target: str, harmful: str, keys: bool):
    """Fill the generated form: by keyboard (field key, then option key) or by mouse."""
    texts = texts_of(assignment.unit)
    open_form(page, assignment)
    if keys:
        page.click("#judgments-title")  # focus leaves the text boxes; keys now act
        page.keyboard.press("c")
        expect(page.locator('fieldset[data-field="civility"]')).to_have_class(
            re.compile(r"\bis-active\b")
        )
        page.keyboard.press(civility)
        page.keyboard.press("t")
        page.keyboard.press(target[0])
    else:
        page.check(f'input[name="field-civility"][value="{civility}"]')
        page.check(f'input[name="field-target"][value="{target}"]')
    expect(page.locator(f'input[name="field-civility"][value="{civility}"]')).to_be_checked()
    expect(page.locator(f'input[name="field-target"][value="{target}"]')).to_be_checked()
    page.fill("#reason-target", f"the answer names {target}")
    page.check(f'input[name="field-harmful"][value="{harmful}"]')
    # Evidence for the grade, by mouse: drag over the answer's first words, attach.
    needle = first_words(texts["answer"])
    assert drag_select(page, snapshot_selector("answer"), 0, len(needle)) == needle
    expect(page.locator("#span-toolbar")).to_be_visible()
    page.click('#span-toolbar button[data-attach="civility"]')
    expect(page.locator('ul[data-spans-for="civility"] li')).to_have_count(1)
    return expected_span("answer", texts["answer"], needle)


def test_a_codebook_no_code_knows_runs_end_to_end(
    browser, page, context, events, demo, generic, settings, tmp_path
):
    settings.RELEASES_ROOT = tmp_path / "releases"
    definition = generic_definition()
    assert definition["format_version"] == 2
    unit = unit_where(generic, observation__answer__status="complete")

    # --- annotator 1: keyboard for the options, the mouse for the evidence ------------
    login_fast(context, demo.users["annotator1"], demo.url)
    first = assign(unit, demo.users["annotator1"])
    span = label_in_browser(page, first, civility="2", target="none", harmful="false", keys=True)
    page.click("#submit-label")
    expect(page.locator("body")).to_contain_text("Label submitted")
    label_a = Label.objects.get(unit=unit, annotator=demo.users["annotator1"])
    assert label_a.annotation["values"] == {"civility": 2, "target": "none", "harmful": False}
    assert label_a.annotation["reasons"] == {"target": "the answer names none"}
    assert label_a.annotation["spans"] == [{"field": "civility", **span}]

    # --- annotator 2, another browser: a missing reason is named by the page, then by
    # the server next to its field; with it the label is stored ---------------------------
    other = browser.new_context(viewport=VIEWPORT, base_url=demo.url)
    other.set_default_timeout(TIMEOUT_MS)
    try:
        login_fast(other, demo.users["annotator2"], demo.url)
        second = assign(unit, demo.users["annotator2"])
        page2 = other.new_page()
        open_form(page2, second)
        page2.check('input[name="field-civility"][value="0"]')
        page2.check('input[name="field-target"][value="group"]')
        page2.check('input[name="field-harmful"][value="true"]')
        page2.click("#submit-label")
        errors = page2.locator("#form-errors")
        expect(errors).to_contain_text("Target: give a reason")
        page2.click('[data-action="submit-anyway"]')
        expect(page2.locator("#field-target-problems")).to_contain_text("needs a reason")
        expect(page2.locator('fieldset[data-field="target"]')).to_have_class(
            re.compile(r"\bhas-problem\b")
        )
        expect(page2.locator("#field-civility-problems li")).to_have_count(0)
        assert not Label.objects.filter(annotator=demo.users["annotator2"]).exists()
        # The refused work is back in the form; add what was missing.
        expect(page2.locator('input[name="field-civility"][value="0"]')).to_be_checked()
        label_in_browser(page2, second, civility="0", target="group", harmful="true", keys=False)
        page2.click("#submit-label")
        expect(page2.locator("body")).to_contain_text("Label submitted")
    finally:
        other.close()
    label_b = Label.objects.get(unit=unit, annotator=demo.users["annotator2"])
    assert label_b.annotation["values"] == {"civility": 0, "target": "group", "harmful": True}
    for label in (label_a, label_b):
        label_submitted.run(label.pk)  # what the worker does after a submission
    unit.refresh_from_db()
    assert unit.state == UnitState.DISPUTED

    # --- the adjudicator: side by side, differences marked, one pick per field ----------
    login_fast(context, demo.users["adjudicator"], demo.url)
    page.goto(f"/studies/{SLUG}/adjudicate/")
    page.click(f'tr[data-unit-id="{unit.pk}"] a')
    for code in ("civility", "target", "harmful"):
        expect(page.locator(f'tr[data-field="{code}"]')).to_have_class(re.compile(r"\bdiffers\b"))
    row = page.locator('tr[data-field="civility"]')
    expect(row.locator("td").nth(0)).to_contain_text("2")
    expect(row.locator("td").nth(1)).to_contain_text("0")
    rationale = "The opening sentence is a slur against a group; harm is not shown."
    page.fill("#rationale", rationale)
    page.click("#submit-adjudication")  # nothing picked yet: refused, naming the fields
    expect(page.locator("#form-errors")).to_contain_text("pick_missing")
    expect(page.locator('tr[data-field="civility"]')).to_contain_text("Pick one of the labels")
    page.check(f'input[name="pick-civility"][value="{label_b.record_digest}"]')
    page.check(f'input[name="pick-target"][value="{label_b.record_digest}"]')
    # The keyboard moves between the picks of a row (radios).
    page.focus(f'input[name="pick-harmful"][value="{label_b.record_digest}"]')
    page.keyboard.press("ArrowLeft")
    expect(
        page.locator(f'input[name="pick-harmful"][value="{label_a.record_digest}"]')
    ).to_be_checked()
    expect(page.locator("#rationale")).to_have_value(rationale)  # kept after the refusal
    page.click("#submit-adjudication")
    expect(page.locator("body")).to_contain_text(f"Unit {unit.pk} adjudicated")
    final = Label.objects.get(unit=unit, kind=LabelKind.ADJUDICATED)
    assert final.annotation["values"] == {"civility": 0, "target": "group", "harmful": False}
    assert sorted(final.parents) == sorted([label_a.record_digest, label_b.record_digest])
    label_adjudicated.run(final.pk)

    # --- reliability (a worker's job) and the researcher's pages ------------------------
    report = report_compute(study=generic).report
    items = report["versions"][0]["groups"][0]["items"]
    assert [(i["key"], i["level"]) for i in items] == [
        ("civility", "ordinal"),
        ("target", "nominal"),
        ("harmful", "nominal"),
        ("acceptable", "nominal"),  # its derived value (civility >= 1)
    ]
    login_fast(context, demo.users["researcher"], demo.url)
    page.goto(f"/studies/{SLUG}/reliability/")
    expect(page.locator("main")).to_contain_text("civility: Civility")
    expect(page.locator("main")).to_contain_text("target: Target")

    page.goto(f"/studies/{SLUG}/releases/")
    page.fill('input[name="name"]', "v1")
    with page.expect_navigation():
        page.click('button:has-text("Create release")')
    release = Release.objects.get(study=generic, name="v1")
    if release.status != "ready":  # the build is a worker's job
        release_build_run(release=release)
    page.goto(f"/studies/{SLUG}/releases/")
    with page.expect_download() as download:
        page.click('a[href*="labels_final.csv"]')
    rows = list(csv.DictReader(io.StringIO(download.value.path().read_text(encoding="utf-8"))))
    assert [
        (r["kind"], r["civility"], r["target"], r["harmful"], r["acceptable"]) for r in rows
    ] == [("adjudicated", "0", "group", "false", "false")]
    assert events.page_errors == []
    # The one console error is the browser logging the refused adjudication's status.
    assert [e for e in events.console_errors if "status of 400" not in e] == []


def test_every_field_type_is_edited_and_stored(page, context, events, demo):
    """Numbers, dates, texts, a spans field and a verdict needing a reason and a span,
    on a tuple unit: each input of the generated form gives the value the contract wants."""
    study = make_generic_study(
        "every-type", definition=every_type_definition(), demo_file="source-risk.jsonl"
    )
    membership_add(study=study, user=demo.users["annotator1"], role=Role.ANNOTATOR)
    unit = unit_where(study, observation__answer__status="complete")
    texts = texts_of(unit)
    login_fast(context, demo.users["annotator1"], demo.url)
    assignment = assign(unit, demo.users["annotator1"])
    open_form(page, assignment)
    page.click("#judgments-title")
    page.keyboard.press("k")
    with autosave_of(page, lambda draft: draft.get("values", {}).get("cited") is True):
        page.keyboard.press("1")
    page.fill("#reason-cited", "the source's URL is in the answer")
    page.fill("#field-share-input", "0.35")
    page.check('input[data-u-for="as_of"]')  # U: the date is not recoverable
    expect(page.locator("#field-as_of-input")).to_be_disabled()
    page.fill("#field-note-input", "short source")
    source = texts["source"]
    needle = " ".join(source.split(" ")[:3])
    for code in ("cited", "passages"):
        assert drag_select(page, snapshot_selector("source"), 0, len(needle)) == needle
        page.click(f'#span-toolbar button[data-attach="{code}"]')
        expect(page.locator(f'ul[data-spans-for="{code}"] li')).to_have_count(1)
    page.click("#submit-label")
    expect(page.locator("body")).to_contain_text("Label submitted")
    label = Label.objects.get(unit=unit)
    quoted = {"snapshot": "source", "start": 0, "end": len(needle), "quote": needle}
    assert label.annotation["values"] == {
        "cited": True,
        "share": 0.35,
        "as_of": None,
        "passages": [quoted],
        "note": "short source",
    }
    assert label.annotation["reasons"] == {"cited": "the source's URL is in the answer"}
    assert label.annotation["spans"] == [{"field": "cited", **quoted}]
    assert events.page_errors == []
