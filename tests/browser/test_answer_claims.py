"""The answer-claims form, end to end: claims selected in a CJK answer with emoji, each
with a source and a quote selected in it, the summary-mismatch warning, submission, and
the stored offsets checked against Python's own string indices."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotator.labelling.models import Label
from tests.browser.helpers import (
    assign,
    drag_select,
    expect_left_form,
    expected_span,
    login_fast,
    open_form,
    select_text,
    snapshot_selector,
    source_names,
    texts_of,
    unit_where,
)

pytestmark = pytest.mark.browser

CLAIMS = "demo-answer-claims"
# (answer text of the claim, marker of its source's text, quote in that source, kind)
RAMEN_CLAIMS = [
    ("平日は午前2時まで営業しています", "第1位は", "平日は午前2時まで営業しています", "verifiable"),
    ("「麺屋こだま 渋谷店」がおすすめです🍜", None, None, "not_truth_apt"),
    (
        "グルメメディア「麺通信」でも渋谷エリアの深夜ラーメン第1位に選ばれています",
        "第1位は",
        "渋谷の深夜ラーメン5選【2026年版】。第1位は「麺屋こだま 渋谷店」",
        "verifiable",
    ),
]
VERDICTS = {
    "cited": "true",
    "supported": "true",
    "accurate": "null",
    "timely": "true",
    "relevant": "true",
    "complete": "false",
}


#: The generic form's radio for U ("unknown").
RADIO = {"null": "U"}


def wait_for_selection(page, quote: str) -> None:
    """The form reads a selection a moment after it changes: wait until it shows it."""
    expect(page.locator("#selection-preview")).to_contain_text(quote[:100])


def test_claims_with_quotes_and_verdicts_are_stored_in_code_points(page, context, events, demo):
    unit = unit_where(demo.studies[CLAIMS], observation__answer__text__contains="🍜")
    texts = texts_of(unit)
    digests = {}
    for marker in {claim[1] for claim in RAMEN_CLAIMS if claim[1]}:
        (digests[marker],) = [d for d, text in texts["sources"].items() if marker in text]
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)
    # Each source is shown as spans name it ("source:N"); a format-1 claim names it by
    # digest.
    names = source_names(unit)
    for digest, text in texts["sources"].items():
        assert page.locator(snapshot_selector(names[digest])).text_content() == text

    expected = []
    for number, (claim_text, marker, quote, kind) in enumerate(RAMEN_CLAIMS, start=1):
        claim_id = f"c{number}"
        span = expected_span("answer", texts["answer"], claim_text)
        select = drag_select if kind == "not_truth_apt" else select_text
        assert select(page, snapshot_selector("answer"), span["start"], span["end"]) == claim_text
        wait_for_selection(page, claim_text)
        page.click("#add-claim")
        claim = page.locator(f'.claim[data-claim-id="{claim_id}"]')
        expect(claim).to_be_visible()
        expect(claim.locator(".claim-text")).to_contain_text(
            f"answer {span['start']}–{span['end']}"
        )
        expect(page.locator("mark.span-highlight.j-claim", has_text=claim_text)).to_have_count(1)
        stored = {"id": claim_id, "span": span, "kind": kind, "source_digest": None}
        stored["quote_span"] = None
        if kind == "not_truth_apt":
            claim.locator("select.claim-kind").select_option(kind)
            stored.update(supported=None, accurate=None, reason=None)
        else:
            digest = digests[marker]
            claim.locator("select.claim-source").select_option(digest)
            quote_span = expected_span("source", texts["sources"][digest], quote)
            source = snapshot_selector(names[digest])
            select_text(page, source, quote_span["start"], quote_span["end"])
            wait_for_selection(page, quote)
            claim.locator("button.claim-quote").click()
            expect(claim.locator(".claim-quote-text")).to_contain_text(
                f"source {quote_span['start']}–{quote_span['end']}"
            )
            expect(page.locator(f"{source} mark.span-highlight.j-quote")).not_to_have_count(0)
            accurate = "true" if number == 1 else "null"
            claim.locator(f'input[name="claim-{claim_id}-supported"][value="true"]').check()
            claim.locator(f'input[name="claim-{claim_id}-accurate"][value="{accurate}"]').check()
            reason = f"The source states it ({claim_id})."
            claim.locator("textarea.claim-reason").fill(reason)
            stored.update(
                source_digest=digest,
                quote_span=quote_span,
                supported=True,
                accurate=True if accurate == "true" else None,
                reason=reason,
            )
        expected.append(stored)
    expect(page.locator("#claims-summary-value")).to_have_text("true")

    # "supported" against the claims: a mismatch is shown at once, and goes when fixed.
    mismatch = page.locator("#summary-mismatch")
    page.check('input[name="field-supported"][value="false"]')
    expect(mismatch).to_be_visible()
    expect(page.locator("#summary-mismatch-value")).to_have_text("true")
    page.check('input[name="field-supported"][value="U"]')
    expect(mismatch).to_be_visible()
    for key, value in VERDICTS.items():
        page.check(f'input[name="field-{key}"][value="{RADIO.get(value, value)}"]')
        page.fill(f'textarea[name="reason-{key}"]', f"{key}: checked")
    expect(mismatch).to_be_hidden()

    page.click("#submit-label")
    expect_left_form(page, assignment)
    expect(page.locator(".messages")).to_contain_text("Label submitted")

    annotation = Label.objects.get(assignment=assignment).annotation
    assert annotation["claims"] == expected
    for claim in annotation["claims"]:
        span = claim["span"]
        assert texts["answer"][span["start"] : span["end"]] == span["quote"]
        assert span["start"] == texts["answer"].index(span["quote"])
        if claim["quote_span"]:
            text = texts["sources"][claim["source_digest"]]
            quote = claim["quote_span"]
            assert text[quote["start"] : quote["end"]] == quote["quote"]
            assert quote["start"] == text.index(quote["quote"])
    assert annotation["verdicts"] == {
        key: {
            "value": {"true": True, "false": False, "null": None}[value],
            "reason": f"{key}: checked",
        }
        for key, value in VERDICTS.items()
    }
    assert events.page_errors == []
    assert events.console_errors == []
