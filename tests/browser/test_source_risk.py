"""The source-risk form, end to end: judgments by click and by keyboard, evidence spans
selected over emoji, CJK and decomposed accents, autosave and reload, submission, and
the stored offsets checked against Python's own string indices."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotator.labelling.models import Draft, Label
from tests.browser.helpers import (
    HeldRequests,
    assign,
    autosave_of,
    drag_points,
    drag_select,
    expect_left_form,
    expected_span,
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

# The ramen review tuple: CJK throughout, an emoji in the source and one in the answer;
# every span after an emoji has code-point offsets one less than its UTF-16 offsets.
RAMEN = {"tuple__source__text__contains": "😂", "tuple__source__text__icontains": "麺屋"}
# (judgment, snapshot, text to select)
RAMEN_SPANS = [
    ("I", "source", "終電を逃した日に助かりました😂 2時まで開いている"),
    ("A", "answer", "「麺屋こだま 渋谷店」がおすすめです🍜"),
    ("M", "answer", "平日は午前2時まで営業しています"),
    ("D", "answer", "口コミによると、週末の23時以降は30分ほど並ぶ"),
    ("passage_support", "source", "金曜の23時過ぎに行ったら30分待ちでした"),
]
# Attached, then removed again.
RAMEN_REMOVED = ("I", "source", "深夜でも店員さんの対応が丁寧")


def span_items(page, judgment: str):
    return page.locator(f'li.span-item[data-field="{judgment}"]')


def attach(page, judgment: str) -> None:
    toolbar = page.locator("#span-toolbar")
    expect(toolbar).to_be_visible()
    toolbar.locator(f'button[data-attach="{judgment}"]').click()
    expect(toolbar).to_be_hidden()


def fill_rest(page, *, rationale: str | None = None) -> None:
    page.check('input[name="field-source_role"][value="user_generated"]')
    for key, value in (("d_Q", "0.6"), ("d_R", "0.25"), ("d_P", "1"), ("d_S", "0")):
        page.fill(f'input[name="field-{key}"]', value)
    if rationale is not None:
        page.fill('textarea[name="rationale"]', rationale)


def test_source_risk_spans_survive_reload_and_are_stored_in_code_points(
    page, context, events, demo
):
    study = demo.studies[RISK]
    unit = unit_where(study, **RAMEN)
    texts = texts_of(unit)
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)

    # The snapshots show their texts exactly, white space kept.
    for snapshot in ("query", "answer", "source"):
        element = page.locator(snapshot_selector(snapshot))
        assert element.text_content() == texts[snapshot]
        assert element.evaluate("e => getComputedStyle(e).whiteSpace") == "pre-wrap"

    # Judgments: I by clicking, A, M and D with the keyboard shortcuts.
    page.check('input[name="field-I"][value="1"]')
    page.keyboard.press("a")
    page.keyboard.press("1")
    page.keyboard.press("m")
    page.keyboard.press("1")
    page.keyboard.press("d")
    page.keyboard.press("0")
    expect(page.locator('input[name="field-A"][value="1"]')).to_be_checked()
    expect(page.locator('input[name="field-M"][value="1"]')).to_be_checked()
    expect(page.locator('input[name="field-D"][value="0"]')).to_be_checked()
    page.check('input[name="field-passage_support"][value="1"]')

    # Spans: the first one with a real mouse drag, the others by code-point offsets.
    expected = {}
    for number, (judgment, snapshot, needle) in enumerate(RAMEN_SPANS):
        span = expected_span(snapshot, texts[snapshot], needle)
        expected[judgment] = span
        select = drag_select if number == 0 else select_text
        assert select(page, snapshot_selector(snapshot), span["start"], span["end"]) == needle
        attach(page, judgment)
        item = span_items(page, judgment)
        expect(item).to_have_count(1)
        expect(item).to_have_attribute("data-start", str(span["start"]))
        expect(item).to_have_attribute("data-end", str(span["end"]))
        marks = page.locator(f"{snapshot_selector(snapshot)} mark.span-highlight.j-{judgment}")
        expect(marks).to_have_text(needle)

    # One more span on I, then removed again: its highlight goes with it.
    judgment, snapshot, needle = RAMEN_REMOVED
    extra = expected_span(snapshot, texts[snapshot], needle)
    select_text(page, snapshot_selector(snapshot), extra["start"], extra["end"])
    attach(page, judgment)
    expect(span_items(page, "I")).to_have_count(2)
    expect(page.locator("mark.span-highlight", has_text=needle)).to_have_count(1)
    with autosave_of(
        page, lambda draft: [span["field"] for span in draft["spans"]].count("I") == 1
    ) as response:
        page.locator(
            f'li.span-item[data-field="I"][data-start="{extra["start"]}"] button.span-remove'
        ).click()
    assert response.value.status == 200
    expect(page.locator("#draft-status")).to_contain_text("Saved")
    expect(span_items(page, "I")).to_have_count(1)
    expect(page.locator("mark.span-highlight", has_text=needle)).to_have_count(0)

    # The server holds the draft: reload with this browser's copy gone, and it comes back.
    draft = Draft.objects.get(assignment=assignment)
    assert draft.payload["spans"] == {key: [span] for key, span in expected.items()}
    page.evaluate("() => window.localStorage.clear()")
    page.reload()
    open_form(page, assignment)
    expect(page.locator("#draft-status")).to_contain_text(f"Draft version {draft.version}")
    for key, value in (("I", "1"), ("A", "1"), ("M", "1"), ("D", "0")):
        expect(page.locator(f'input[name="field-{key}"][value="{value}"]')).to_be_checked()
    expect(page.locator('input[name="field-passage_support"][value="1"]')).to_be_checked()
    for judgment, span in expected.items():
        item = span_items(page, judgment)
        expect(item).to_have_count(1)
        expect(item).to_have_attribute("data-start", str(span["start"]))
        expect(item).to_have_attribute("data-end", str(span["end"]))
    expect(page.locator("mark.span-highlight")).to_have_count(len(expected))

    fill_rest(page, rationale="Owned by the chain: see the source’s footer.")
    page.click("#submit-label")
    expect_left_form(page, assignment)
    expect(page.locator(".messages")).to_contain_text("Label submitted")

    # The stored offsets are Python's indices into the snapshot texts.
    label = Label.objects.get(assignment=assignment)
    stored = label.annotation["spans"]
    assert stored == {key: [span] for key, span in expected.items()}
    for key, (span,) in stored.items():
        text = texts[span["snapshot"]]
        assert text[span["start"] : span["end"]] == span["quote"], key
        assert span["start"] == text.index(span["quote"]), key
    assert label.annotation["predicates"] == {"I": 1, "A": 1, "M": 1, "D": 0}
    assert label.annotation["passage_support"] == 1
    assert not Draft.objects.filter(assignment=assignment).exists()
    assert events.page_errors == []
    assert events.console_errors == []
    assert events.dialogs == []


# The Lübeck café tuple: its texts are in NFD (a letter, then a combining accent), so a
# Python index counts each accent as a code point of its own.
CAFE = {"tuple__source__canonical_url__contains": "luebeck-entdecken"}
CAFE_SPANS = [
    ("I", "source", "Das Traditionscafe\u0301 in der Hu\u0308xstraße"),
    ("A", "answer", "hat sonntags von 9 bis 18 Uhr geo\u0308ffnet"),
    ("M", "query", "am Sonntag, 10. Mai 2026, geo\u0308ffnet"),
    ("passage_support", "source", "Sonntag 9–18 Uhr"),
]


def test_nfd_spans_dragged_with_the_mouse_are_stored_in_code_points(page, context, events, demo):
    unit = unit_where(demo.studies[RISK], **CAFE)
    texts = texts_of(unit)
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)

    expected = {}
    for judgment, snapshot, needle in CAFE_SPANS:
        span = expected_span(snapshot, texts[snapshot], needle)
        expected[judgment] = span
        selector = snapshot_selector(snapshot)
        assert drag_select(page, selector, span["start"], span["end"]) == needle
        attach(page, judgment)
        expect(span_items(page, judgment)).to_have_attribute("data-start", str(span["start"]))
        expect(span_items(page, judgment)).to_have_attribute("data-end", str(span["end"]))
    assert any("\u0301" in span["quote"] or "\u0308" in span["quote"] for span in expected.values())

    for key, value in (("I", "1"), ("A", "1"), ("M", "1"), ("D", "U")):
        page.check(f'input[name="field-{key}"][value="{value}"]')
    page.check('input[name="field-passage_support"][value="1"]')
    fill_rest(page)
    page.click("#submit-label")
    expect(page.locator(".messages")).to_contain_text("Label submitted")

    label = Label.objects.get(assignment=assignment)
    assert label.annotation["spans"] == {key: [span] for key, span in expected.items()}
    assert label.annotation["predicates"] == {"I": 1, "A": 1, "M": 1, "D": None}
    for (span,) in label.annotation["spans"].values():
        text = texts[span["snapshot"]]
        assert text[span["start"] : span["end"]] == span["quote"]
    assert events.page_errors == []


# The Tel Aviv bookshop tuple: right-to-left text, an emoji and a ZWJ family emoji (five
# code points, one character) in the answer.
BOOKS = {"tuple__source__canonical_url__contains": "horim-bair"}


def test_rtl_and_zwj_spans_are_saved_in_code_points(page, context, events, demo):
    unit = unit_where(demo.studies[RISK], **BOOKS)
    texts = texts_of(unit)
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)
    family = "👨\u200d👩\u200d👧"
    assert family in texts["answer"]

    expected = {}
    for judgment, snapshot, needle in (
        ("A", "answer", "מבחר גדול בעברית ובאנגלית 📚"),
        ("M", "answer", "שעת סיפור למשפחות " + family),
        ("I", "source", "תוכן ממומן בשיתוף ספרי הגפן"),
    ):
        span = expected_span(snapshot, texts[snapshot], needle)
        expected[judgment] = span
        assert select_text(page, snapshot_selector(snapshot), span["start"], span["end"]) == needle
        attach(page, judgment)
        expect(span_items(page, judgment)).to_have_attribute("data-start", str(span["start"]))
        expect(span_items(page, judgment)).to_have_attribute("data-end", str(span["end"]))

    # Shortcut letters typed into the rationale are text, not judgments.
    with autosave_of(page, lambda draft: draft["rationale"] == "a1 m0") as response:
        page.locator('textarea[name="rationale"]').press_sequentially("a1 m0")
    assert response.value.status == 200
    expect(page.locator('textarea[name="rationale"]')).to_have_value("a1 m0")
    expect(page.locator("input[type=radio]:checked")).to_have_count(0)

    draft = Draft.objects.get(assignment=assignment)
    assert draft.payload["spans"] == {key: [span] for key, span in expected.items()}
    for key, (span,) in draft.payload["spans"].items():
        assert texts[span["snapshot"]][span["start"] : span["end"]] == span["quote"], key
    assert events.page_errors == []


def test_a_selection_made_while_the_form_loads_still_attaches(page, context, events, demo):
    """The texts are on screen before the form's script runs: a selection made then
    survives the script's start and gets the toolbar."""
    unit = unit_where(demo.studies[RISK], **RAMEN)
    texts = texts_of(unit)
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    script = HeldRequests(page, "**/static/js/annotate.js")
    page.goto(f"/assignments/{assignment.pk}/", wait_until="commit")
    judgment, snapshot, needle = RAMEN_SPANS[0]
    span = expected_span(snapshot, texts[snapshot], needle)
    expect(page.locator(snapshot_selector(snapshot))).to_have_text(texts[snapshot])
    assert select_text(page, snapshot_selector(snapshot), span["start"], span["end"]) == needle
    expect(page.locator("#draft-payload")).to_have_value("")  # the script has not run yet

    script.release()
    wait_for_form(page)
    attach(page, judgment)
    expect(span_items(page, judgment)).to_have_attribute("data-start", str(span["start"]))
    expect(span_items(page, judgment)).to_have_attribute("data-end", str(span["end"]))
    assert events.page_errors == []


def test_the_toolbar_goes_when_another_selection_starts(page, context, events, demo):
    """A press in the texts starts a new selection: the toolbar of the last one goes at
    once (it would offer a selection that is gone) and comes back on release."""
    unit = unit_where(demo.studies[RISK], **RAMEN)
    texts = texts_of(unit)
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)
    toolbar = page.locator("#span-toolbar")
    _, snapshot, needle = RAMEN_SPANS[1]  # in the answer, away from the drag below
    earlier = expected_span(snapshot, texts[snapshot], needle)
    select_text(page, snapshot_selector(snapshot), earlier["start"], earlier["end"])
    expect(toolbar).to_be_visible()

    judgment, snapshot, needle = RAMEN_SPANS[0]
    span = expected_span(snapshot, texts[snapshot], needle)
    points = drag_points(page, snapshot_selector(snapshot), span["start"], span["end"])
    page.mouse.move(points["from"]["x"], points["from"]["y"])
    page.mouse.down()
    expect(toolbar).to_be_hidden()
    page.mouse.move(points["to"]["x"], points["to"]["y"], steps=8)
    page.mouse.up()
    attach(page, judgment)
    expect(span_items(page, judgment)).to_have_attribute("data-start", str(span["start"]))
    expect(span_items(page, judgment)).to_have_attribute("data-end", str(span["end"]))
    assert events.page_errors == []
