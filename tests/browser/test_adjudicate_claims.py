"""Claims in adjudication (issue 14 item 5), in Chromium: two annotators whose claims
differ in one verdict produce a disputed unit; the adjudication page shows their claims
aligned side by side, and the adjudicator resolves it by writing a new claim with a quote
span selected in a source. The final record's claims are the adjudicator's, not whichever
annotator submitted first."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import expect

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.models import Label, LabelKind
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import label_submit
from audit.archive.models import UnitState
from tests.annotation.annotations import answer_claims
from tests.browser.helpers import (
    assign,
    expected_span,
    login_fast,
    select_text,
    snapshot_selector,
    texts_of,
    unit_where,
)

pytestmark = pytest.mark.browser

CLAIMS = "demo-answer-claims"


def trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    """``[start, end)`` without the white space at its ends (a selection is trimmed so)."""
    while text[start].isspace():
        start += 1
    while text[end - 1].isspace():
        end -= 1
    return start, end


@pytest.fixture
def disputed_claims(demo):
    """The same claim (answer [0, 20)) from two annotators, supported by one and not by
    the other (each with an answer-level "supported" that agrees with their claims)."""
    unit = unit_where(
        demo.studies[CLAIMS], state=UnitState.OPEN, observation__answer__status="complete"
    )
    content = unit_content(unit=unit)
    assert content.sources, "the unit needs a source to quote"
    for username, supported in (("annotator1", True), ("annotator2", False)):
        annotation = answer_claims(content)
        annotation["claims"][0]["supported"] = supported
        annotation["verdicts"]["supported"]["value"] = supported
        label = label_submit(
            assignment=assign(unit, demo.users[username]),
            annotation=annotation,
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        ).label
        label_submitted.run(label.pk)
    unit.refresh_from_db()
    assert unit.state == UnitState.DISPUTED
    return unit


def test_the_adjudicator_resolves_differing_claims_by_writing_a_new_one(
    page, context, events, demo, disputed_claims
):
    unit = disputed_claims
    texts = texts_of(unit)
    login_fast(context, demo.users["adjudicator"], demo.url)
    page.goto(f"/adjudicate/{unit.pk}/")

    # The two claims are aligned on one row, which differs by its verdicts.
    rows = page.locator("#claims-table tr.claim-row")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_class(re.compile(r"\bdiffers\b"))
    expect(rows.first).to_contain_text("verdicts differ")
    expect(rows.first.locator("[data-keep-claim]")).to_have_count(2)
    expect(page.locator("#final-claims")).to_contain_text("No final claims yet")

    # "Write a claim" without a selection says what to do.
    page.click("#write-claim")
    expect(page.locator("#claim-selection")).to_contain_text("Select the claim in the answer")

    # Write a new claim: select it in the answer, then its quote in the first source.
    answer = texts["answer"]
    start, end = trimmed(answer, 25, 70)
    claim_text = answer[start:end]
    assert select_text(page, snapshot_selector("answer"), start, end) == claim_text
    expect(page.locator("#claim-selection")).to_contain_text(claim_text[:30])
    page.click("#write-claim")
    card = page.locator("[data-final-claim]")
    expect(card).to_have_count(1)
    expect(card).to_contain_text("written by you")
    digest, source_text = next(iter(texts["sources"].items()))  # the first source: "source:0"
    start, end = trimmed(source_text, 10, 50)
    quote = source_text[start:end]
    assert select_text(page, snapshot_selector("source:0"), start, end) == quote
    expect(page.locator("#claim-selection")).to_contain_text(quote[:20])
    card.locator('[data-claim-action="quote"]').click()
    expect(card.locator(".claim-quote-text")).to_contain_text(f"[{start}, {end})")
    card.locator('select[data-claim-field="supported"]').select_option("true")
    card.locator('select[data-claim-field="accurate"]').select_option("true")

    # The "supported" verdict differs: the adjudicator writes their own, with a reason.
    page.locator('input[name="pick-supported"][value="own"]').check()
    page.locator('select[data-own="supported"]').select_option("true")
    page.fill('textarea[data-own-reason="supported"]', "The new claim is supported.")
    expect(page.locator("#claims-summary-value")).to_contain_text("true (1 claim)")
    expect(page.locator("#summary-mismatch")).to_be_hidden()

    # A claim without a reason is refused before anything is sent.
    page.fill("#rationale", "Both annotators split the answer too coarsely; the claim is this.")
    page.click("#submit-adjudication")
    expect(page.locator("#form-errors")).to_contain_text("Final claim 1: give a reason")
    assert not Label.objects.filter(unit=unit, kind=LabelKind.ADJUDICATED).exists()

    card.locator('textarea[data-claim-field="reason"]').fill("The source states it.")
    page.click("#submit-adjudication")
    expect(page).to_have_url(re.compile(r"/adjudicate/$"))

    final = Label.objects.get(unit=unit, kind=LabelKind.ADJUDICATED)
    assert final.annotation["claims"] == [
        {
            "id": "c1",
            "span": expected_span("answer", answer, claim_text),
            "source_digest": digest,
            "quote_span": expected_span("source", source_text, quote),
            "supported": True,
            "accurate": True,
            "kind": "verifiable",
            "reason": "The source states it.",
        }
    ]
    assert final.annotation["verdicts"]["supported"] == {
        "value": True,
        "reason": "The new claim is supported.",
    }
    unit.refresh_from_db()
    assert unit.state == UnitState.ADJUDICATED
    assert events.page_errors == []
