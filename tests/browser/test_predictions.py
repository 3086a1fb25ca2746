"""Predictions in the browser: a researcher imports a judge's prediction file on the
study's Predictions page (keyboard only) and reads the gate's accepted-error rate α and
false-block rate β, with their counts and intervals, on the prediction set's page."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TIMEOUT_MS
from tests.browser.helpers import login_fast
from tests.metrics.predictions_setup import gold_study, prediction_file

pytestmark = pytest.mark.browser

# Gold R_O of the labelled units: 1, 0, U, 1, 0, U. The judge passes (0) the second gold-1
# unit (an accepted error: 1 of 2) and blocks (1) the second gold-0 unit (a false block:
# 1 of 2).
JUDGE = (1, 0, None, 0, 1, None)


@pytest.fixture
def gold(warm_live_server, transactional_db):
    return gold_study("browser-pred", units=6)


@pytest.fixture
def researcher_page(browser, gold, warm_live_server):
    context = browser.new_context(
        viewport={"width": 1280, "height": 720}, base_url=warm_live_server
    )
    context.set_default_timeout(TIMEOUT_MS)
    login_fast(context, gold.people["res"], warm_live_server)
    try:
        yield context.new_page()
    finally:
        context.close()


def test_a_researcher_imports_a_prediction_file_and_reads_alpha_and_beta(
    researcher_page, gold, tmp_path
):
    page = researcher_page
    pairs = [(unit.digest, value) for unit, value in zip(gold.labelled, JUDGE, strict=True)]
    path = tmp_path / "judge-x.jsonl"
    path.write_bytes(prediction_file(pairs, positive=0))

    page.goto(f"/studies/{gold.study.slug}/")
    page.get_by_role("link", name="Predictions").click()
    expect(page.get_by_role("heading", level=1)).to_have_text(
        "Predictions against the final labels"
    )
    page.get_by_label("Prediction file (JSON Lines)").set_input_files(str(path))
    page.get_by_role("button", name="Check and import").focus()
    page.keyboard.press("Enter")

    expect(page.get_by_role("heading", level=1)).to_contain_text("judge-x 2026-05")
    alpha = page.locator("#alpha dd")
    beta = page.locator("#beta dd")
    expect(alpha).to_contain_text("1/2")
    expect(alpha).to_contain_text("= 0.500")
    expect(beta).to_contain_text("1/2")
    expect(beta).to_contain_text("= 0.500")
    expect(alpha.locator(".interval")).to_have_text(re.compile(r"\[\d\.\d{3}, \d\.\d{3}\]"))
    expect(page.locator("#accuracy dd")).to_contain_text("4/6")
    expect(page.locator("table.confusion")).to_contain_text("U")
