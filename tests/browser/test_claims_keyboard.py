"""The claims form by keyboard (issue 17 item 10), in Chromium: the shortcuts are shown on
the form and ? lists every one; "a" without a selection says what to do, with one it adds
the claim; s / c choose a claim's verdict and t / f / u set it; n / p move between claims;
Ctrl+Enter submits."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from annotator.labelling.models import Label
from audit.archive.models import UnitState
from tests.browser.helpers import (
    assign,
    login_fast,
    open_form,
    select_text,
    snapshot_selector,
    texts_of,
    unit_where,
)

pytestmark = pytest.mark.browser

CLAIMS = "demo-answer-claims"


def test_the_claims_form_works_from_the_keyboard(page, context, events, demo):
    unit = unit_where(
        demo.studies[CLAIMS], state=UnitState.OPEN, observation__answer__status="complete"
    )
    texts = texts_of(unit)
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)
    expect(page.locator("#claim-keys")).to_contain_text("a add claim")

    # ? lists every shortcut; Escape closes the list.
    page.locator("body").press("?")
    dialog = page.locator("#shortcuts-dialog")
    expect(dialog).to_be_visible()
    for key in ("a", "q", "n", "p", "s", "c", "t", "f", "u", "v", "Ctrl", "Enter", "?", "Esc"):
        expect(
            dialog.locator("kbd", has_text=re.compile(rf"^{re.escape(key)}$"))
        ).not_to_have_count(0)
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # "a" with nothing selected says what to do.
    page.locator("body").press("a")
    expect(page.locator("#selection-preview")).to_contain_text("Select the claim in the answer")
    expect(page.locator(".claim")).to_have_count(0)

    # Two claims added with "a".
    answer = texts["answer"]
    words = [(m.start(), m.end()) for m in re.finditer(r"\S+(?: \S+){2}", answer)][:2]
    for start, end in words:
        assert select_text(page, snapshot_selector("answer"), start, end) == answer[start:end]
        expect(page.locator("#selection-preview")).to_contain_text(answer[start:end][:20])
        page.evaluate("() => document.activeElement.blur()")  # as a click in the text does
        page.keyboard.press("a")
    expect(page.locator(".claim")).to_have_count(2)

    # p goes to the first claim; s then f sets its "supported", c then u its "accurate".
    page.evaluate("() => document.activeElement.blur()")  # the new claim's source list
    page.keyboard.press("p")
    first = page.locator(".claim").nth(0)
    expect(first).to_have_class(re.compile(r"\bis-current\b"))
    page.keyboard.press("s")
    page.keyboard.press("f")
    expect(first.locator('input[name="claim-c1-supported"][value="false"]')).to_be_checked()
    page.keyboard.press("c")
    page.keyboard.press("u")
    expect(first.locator('input[name="claim-c1-accurate"][value="null"]')).to_be_checked()
    # n goes to the second one, whose "supported" becomes true.
    page.keyboard.press("n")
    second = page.locator(".claim").nth(1)
    expect(second).to_have_class(re.compile(r"\bis-current\b"))
    page.keyboard.press("s")
    page.keyboard.press("t")
    expect(second.locator('input[name="claim-c2-supported"][value="true"]')).to_be_checked()

    # v goes through the answer-level verdicts; t / f / u set them.
    page.keyboard.press("v")
    page.keyboard.press("t")
    expect(page.locator('input[name="field-cited"][value="true"]')).to_be_checked()

    # Ctrl+Enter submits, even from a text field: the checks run and say what is missing.
    page.locator('textarea[name="reason-cited"]').fill("It cites the venue's page.")
    page.locator('textarea[name="reason-cited"]').press("Control+Enter")
    expect(page.locator("#form-errors")).to_contain_text("give a value or U")
    assert not Label.objects.filter(assignment=assignment).exists()
    assert events.page_errors == []
