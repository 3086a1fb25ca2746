"""The claims editor as a widget of the generic form (issue 12): a format-2 answer codebook
with a `claims` field (a claim verdict of its own beside supported and accurate), a
verdict and a derived `claims_summary`, labelled in Chromium by two annotators, one with
the mouse and one with the keyboard. Each stored annotation is a record the checker
accepts, with format-2 claims (`source` a snapshot name, one key per claim verdict); a
claim verdict left out is refused by the server, named on the claims field."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotator.labelling.models import Label
from annotator.labelling.selectors import label_record, unit_content
from annotator.memberships.models import Role
from annotator.memberships.services import membership_add
from audit.archive.selectors import codebook_registry
from audit.contract import check_record
from tests.browser.conftest import TIMEOUT_MS, VIEWPORT
from tests.browser.helpers import (
    assign,
    drag_select,
    expected_span,
    login_fast,
    open_form,
    select_text,
    snapshot_selector,
    unit_where,
)
from tests.engine.studies import make_generic_study

pytestmark = pytest.mark.browser

SLUG = "claim-check"
#: A codebook no code knows, with a claims field: its claim verdicts are the two the
#: summary reads and one of its own ("current"), whose controls come from the field.
CODEBOOK = {
    "claimgate": "codebook",
    "format_version": 2,
    "name": "claim-check",
    "version": "1.0.0",
    "unit": "answer",
    "title": "Claim check",
    "description": "Split the answer into its core claims, cite each one's source passage, "
    "judge support, accuracy and currency, then say whether the answer is trustworthy.",
    "fields": [
        {
            "code": "claims",
            "type": "claims",
            "label": "Claims",
            "definition": "Each core claim of the answer with the passage it relies on.",
            "claim_kinds": ["verifiable", "not_truth_apt"],
            "claim_verdicts": ["supported", "accurate", "current"],
        },
        {
            "code": "register",
            "type": "choice",
            "label": "Register",
            "definition": "How the answer speaks.",
            "key": "r",
            # Option keys that are claims keys too (next / previous claim): in the
            # field, the option's key wins.
            "choices": [
                {"code": "neutral", "label": "Neutral", "key": "n"},
                {"code": "promotional", "label": "Promotional", "key": "p"},
            ],
            "allow_u": False,
            "reason": "none",
            "evidence": "none",
            "level": "nominal",
        },
        {
            "code": "trustworthy",
            "type": "verdict",
            "label": "Trustworthy",
            "definition": "Would a careful reader act on this answer as it is?",
            "key": "w",
            "allow_u": True,
            "reason": "optional",
            "evidence": "none",
            "level": "nominal",
        },
    ],
    "derived": [
        {
            "code": "claims_supported",
            "rule": "claims_summary",
            "inputs": ["claims"],
            "label": "Supported, from the claims",
        }
    ],
}
# (answer text of the claim, marker of its source's text, quote in that source)
VERIFIABLE = ("平日は午前2時まで営業しています", "第1位は", "平日は午前2時まで営業しています")
OPINION = "「麺屋こだま 渋谷店」がおすすめです🍜"


@pytest.fixture
def study(demo):
    study = make_generic_study(SLUG, definition=CODEBOOK)
    for username in ("annotator1", "annotator2"):
        membership_add(study=study, user=demo.users[username], role=Role.ANNOTATOR)
    return study


def the_unit(study):
    """The ramen answer (CJK with an emoji), its texts by snapshot name, and the name of
    the source that holds the quote."""
    unit = unit_where(study, observation__answer__text__contains="🍜")
    content = unit_content(unit=unit)
    texts = {"answer": content.answer["text"]}
    for index, source in enumerate(content.sources):
        texts[f"source:{index}"] = source["text"]
    (name,) = [n for n, text in texts.items() if n.startswith("source:") and VERIFIABLE[1] in text]
    return unit, texts, name


def wait_for_selection(page, quote: str) -> None:
    expect(page.locator("#selection-preview")).to_contain_text(quote[:100])


def checked_record(label: Label):
    result = check_record(label_record(label=label), codebook_registry())
    assert result.ok, result.message
    assert result.record_digest == label.record_digest
    return result


def test_two_annotators_label_claims_by_mouse_and_keyboard(
    browser, page, context, events, demo, study
):
    unit, texts, source = the_unit(study)
    claim_span = expected_span("answer", texts["answer"], VERIFIABLE[0])
    quote_span = expected_span(source, texts[source], VERIFIABLE[2])
    opinion_span = expected_span("answer", texts["answer"], OPINION)

    # --- annotator 1, by mouse: a verifiable claim with its quote, and an opinion --------
    login_fast(context, demo.users["annotator1"], demo.url)
    first = assign(unit, demo.users["annotator1"])
    open_form(page, first)
    editor = page.locator('fieldset[data-field="claims"]')
    expect(editor.locator("#claim-keys")).to_contain_text("a add claim")
    expect(page.locator(f"{snapshot_selector(source)}")).to_have_text(texts[source])
    # The field's claim verdicts, its own one too, are the claim's controls.
    assert select_text(page, snapshot_selector("answer"), claim_span["start"], claim_span["end"])
    wait_for_selection(page, VERIFIABLE[0])
    page.click("#add-claim")
    claim = page.locator('.claim[data-claim-id="c1"]')
    expect(claim.locator("fieldset.claim-judgment")).to_have_count(3)
    expect(claim.locator('fieldset.claim-judgment[data-field="current"] legend')).to_have_text(
        "current"
    )
    expect(page.locator("mark.span-highlight.j-claim", has_text=VERIFIABLE[0])).to_have_count(1)
    claim.locator("select.claim-source").select_option(source)
    select_text(page, snapshot_selector(source), quote_span["start"], quote_span["end"])
    wait_for_selection(page, VERIFIABLE[2])
    claim.locator("button.claim-quote").click()
    expect(claim.locator(".claim-quote-text")).to_contain_text(
        f"source {quote_span['start']}–{quote_span['end']}"
    )
    expect(
        page.locator(f"{snapshot_selector(source)} mark.span-highlight.j-quote")
    ).not_to_have_count(0)
    for code, value in (("supported", "true"), ("accurate", "true"), ("current", "false")):
        claim.locator(f'input[name="claim-c1-{code}"][value="{value}"]').check()
    claim.locator("textarea.claim-reason").fill("The source gives the hours.")
    assert drag_select(
        page, snapshot_selector("answer"), opinion_span["start"], opinion_span["end"]
    )
    wait_for_selection(page, OPINION)
    page.click("#add-claim")
    opinion = page.locator('.claim[data-claim-id="c2"]')
    opinion.locator("select.claim-kind").select_option("not_truth_apt")
    expect(opinion.locator('input[name="claim-c2-current"][value="null"]')).to_be_disabled()
    expect(page.locator("#claims-summary-value")).to_have_text("true")
    page.check('input[name="field-register"][value="neutral"]')
    page.check('input[name="field-trustworthy"][value="true"]')
    page.click("#submit-label")
    expect(page.locator("body")).to_contain_text("Label submitted")

    label_a = Label.objects.get(unit=unit, annotator=demo.users["annotator1"])
    assert label_a.annotation["values"] == {
        "claims": [
            {
                "id": "c1",
                "span": claim_span,
                "source": source,
                "quote_span": quote_span,
                "supported": True,
                "accurate": True,
                "current": False,
                "kind": "verifiable",
                "reason": "The source gives the hours.",
            },
            {
                "id": "c2",
                "span": opinion_span,
                "source": None,
                "quote_span": None,
                "supported": None,
                "accurate": None,
                "current": None,
                "kind": "not_truth_apt",
                "reason": None,
            },
        ],
        "register": "neutral",
        "trustworthy": True,
    }
    assert checked_record(label_a).supported is True  # the derived claims_summary

    # --- annotator 2, another browser, by keyboard; "current" is left out: the page says
    # so, and the server refuses it on the claims field ---------------------------------------
    other = browser.new_context(viewport=VIEWPORT, base_url=demo.url)
    other.set_default_timeout(TIMEOUT_MS)
    try:
        login_fast(other, demo.users["annotator2"], demo.url)
        second = assign(unit, demo.users["annotator2"])
        page2 = other.new_page()
        open_form(page2, second)
        select_text(page2, snapshot_selector("answer"), claim_span["start"], claim_span["end"])
        wait_for_selection(page2, VERIFIABLE[0])
        page2.evaluate("() => document.activeElement.blur()")
        page2.keyboard.press("a")
        claim = page2.locator('.claim[data-claim-id="c1"]')
        expect(claim).to_have_class(re.compile(r"\bis-current\b"))
        # q takes the quote, and the claim's source from it.
        select_text(page2, snapshot_selector(source), quote_span["start"], quote_span["end"])
        wait_for_selection(page2, VERIFIABLE[2])
        page2.evaluate("() => document.activeElement.blur()")
        page2.keyboard.press("q")
        expect(claim.locator("select.claim-source")).to_have_value(source)
        page2.keyboard.press("s")
        page2.keyboard.press("t")
        expect(claim.locator('input[name="claim-c1-supported"][value="true"]')).to_be_checked()
        page2.keyboard.press("c")
        page2.keyboard.press("f")
        expect(claim.locator('input[name="claim-c1-accurate"][value="false"]')).to_be_checked()
        # r goes to the register field, where p chooses "promotional" (not the previous
        # claim); n outside it goes to the next claim again.
        page2.keyboard.press("r")
        page2.keyboard.press("p")
        expect(page2.locator('input[name="field-register"][value="promotional"]')).to_be_checked()
        page2.keyboard.press("Escape")
        page2.evaluate("() => document.activeElement.blur()")
        page2.keyboard.press("n")
        expect(claim).to_have_class(re.compile(r"\bis-current\b"))
        expect(claim).to_be_focused()
        # v goes to the answer-level verdict; u sets it to U.
        page2.keyboard.press("v")
        expect(page2.locator('fieldset[data-field="trustworthy"]')).to_have_class(
            re.compile(r"\bis-active\b")
        )
        page2.keyboard.press("u")
        expect(page2.locator('input[name="field-trustworthy"][value="U"]')).to_be_checked()
        page2.keyboard.press("Control+Enter")
        expect(page2.locator("#form-errors")).to_contain_text(
            "Claim c1: choose current (true, false or unknown)."
        )
        page2.click('[data-action="submit-anyway"]')
        problems = page2.locator("#field-claims-problems")
        expect(problems).to_contain_text("Claim c1, current: is missing")
        expect(page2.locator('fieldset[data-field="claims"]')).to_have_class(
            re.compile(r"\bhas-problem\b")
        )
        assert not Label.objects.filter(annotator=demo.users["annotator2"]).exists()
        # The refused work is back in the form: choose the missing verdict and submit.
        claim = page2.locator('.claim[data-claim-id="c1"]')
        expect(claim.locator('input[name="claim-c1-accurate"][value="false"]')).to_be_checked()
        claim.locator('input[name="claim-c1-current"][value="null"]').check()
        page2.click("#submit-label")
        expect(page2.locator("body")).to_contain_text("Label submitted")
    finally:
        other.close()

    label_b = Label.objects.get(unit=unit, annotator=demo.users["annotator2"])
    assert label_b.annotation["values"] == {
        "claims": [
            {
                "id": "c1",
                "span": claim_span,
                "source": source,
                "quote_span": quote_span,
                "supported": True,
                "accurate": False,
                "current": None,
                "kind": "verifiable",
                "reason": None,
            }
        ],
        "register": "promotional",
        "trustworthy": None,
    }
    assert checked_record(label_b).supported is True
    assert events.page_errors == []
