"""The comparison page (seed 002's Table II) with the keyboard alone: the demo's protocol
setting, its numbers at once, the two pipelines swapped from the keyboard."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.test_first_hour import as_user

pytestmark = pytest.mark.browser

PAGE = "/studies/demo-protocol-pairs/comparison/"


def test_the_comparison_page_works_from_the_keyboard(browser, readme_demo):
    context, page = as_user(browser, readme_demo, "researcher")
    page.goto("/studies/demo-protocol-pairs/")
    page.locator("#comparison-link").focus()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(re.escape(PAGE) + "$"))
    expect(page.locator("#row-pass_r")).to_contain_text("pp")
    expect(page.locator("#row-net_gain")).to_contain_text("Good / Same / Bad")
    expect(page.locator("#table-ii svg")).to_have_count(0)  # the chart is its own figure
    expect(page.locator("figure svg")).to_be_visible()
    first_delta = page.locator("#row-pass_r td.num").inner_text()
    assert first_delta.startswith("+")

    # Swap the two pipelines with the keyboard: the rubric difference changes sign.
    evaluated, baseline = page.locator("#evaluated"), page.locator("#baseline")
    # Pipelines are listed by name: the evaluated ranker first, the baseline second.
    expect(evaluated).to_have_js_property("selectedIndex", 0)
    expect(baseline).to_have_js_property("selectedIndex", 1)
    evaluated.focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Tab")
    expect(baseline).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(evaluated).to_have_js_property("selectedIndex", 1)
    expect(baseline).to_have_js_property("selectedIndex", 0)
    page.keyboard.press("Tab")
    expect(page.locator("#pick button[type=submit]")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"evaluated=\d+&baseline=\d+"))
    expect(page.locator("#row-pass_r td.num")).to_contain_text("-")
    # The swapped roles were never judged side by side: no pairs, said so.
    expect(page.locator("#row-net_gain")).to_contain_text("no pair of these two pipelines")
    assert page.errors == []
    context.close()
