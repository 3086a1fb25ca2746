"""The researcher's quality page in Chromium: reached from the study page by keyboard,
an annotator's accuracy on gold with its interval and drift chart, and pausing them with
the keyboard alone."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotator.memberships.models import Membership, Role
from annotator.quality.services import gold_mark_from_file, quality_plan_set
from tests.browser.helpers import login
from tests.quality.conftest import RIGHT, WRONG, answer, key_file

pytestmark = pytest.mark.browser

#: Where to leave a 1280x720 screenshot of the page (and the whole page beside it), when set.
SHOT = os.environ.get("CLAIMGATE_QUALITY_SCREENSHOT")


def test_a_researcher_reads_accuracy_on_gold_and_pauses_a_drifting_annotator(page, events, demo):
    study = demo.studies["demo-source-risk"]
    annotator = demo.users["annotator1"]
    units = list(study.units.order_by("id"))
    gold_mark_from_file(study=study, data=key_file(units[:10], qualification=True))
    quality_plan_set(study=study, gold_rate=0.0, qualification_size=10, qualification_threshold=0.8)
    for index in range(10):
        answer(study, annotator, RIGHT if index < 8 else WRONG)

    page.set_viewport_size({"width": 1280, "height": 720})
    login(page, "researcher", "researcher-demo")
    page.goto(f"/studies/{study.slug}/")
    link = page.get_by_role("link", name="Annotator quality")
    link.focus()
    page.keyboard.press("Enter")

    expect(page).to_have_url(re.compile(rf"/studies/{study.slug}/quality/$"))
    row = page.locator(f"#annotator-{annotator.pk}")
    expect(row.locator(".gold-accuracy")).to_contain_text("0.80 [0.49, 0.94] · 8/10")
    expect(row).to_contain_text("passed")
    expect(page.get_by_role("img", name=re.compile("by 50 items")).first).to_be_visible()
    if SHOT:
        page.screenshot(path=str(Path(SHOT)), full_page=False)
        page.screenshot(path=str(Path(SHOT).with_suffix(".full.png")), full_page=True)

    button = row.get_by_role("button", name="Pause annotator1")
    button.focus()
    page.keyboard.press("Enter")

    expect(page.get_by_role("button", name="Resume annotator1")).to_be_visible()
    expect(page.locator(f"#annotator-{annotator.pk}")).to_contain_text("paused")
    assert Membership.objects.get(study=study, user=annotator, role=Role.ANNOTATOR).paused_at
    assert events.page_errors == []
    assert events.console_errors == []
