"""Logging in through the login form."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import login

pytestmark = pytest.mark.browser


def test_login_with_the_demo_password_reaches_the_studies(page, events, demo):
    login(page, "annotator1", "annotator1-demo")

    expect(page).to_have_url(re.compile(r"/$"))
    expect(page.locator("header .who")).to_have_text("annotator1")
    expect(page.get_by_role("link", name=demo.studies["demo-source-risk"].title)).to_be_visible()
    assert events.page_errors == []


def test_wrong_password_shows_an_error_and_keeps_the_username(page, demo):
    login(page, "annotator1", "not-the-password")

    expect(page).to_have_url(re.compile(r"/accounts/login/$"))
    expect(page.get_by_role("alert")).to_contain_text("didn't match")
    expect(page.locator("#id_username")).to_have_value("annotator1")
    expect(page.locator("#id_password")).to_have_value("")
    expect(page.locator("header .who")).to_have_count(0)


def test_a_page_behind_login_comes_back_after_logging_in(page, demo):
    page.goto("/studies/demo-source-risk/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next="))

    page.fill("#id_username", "annotator2")
    page.fill("#id_password", "annotator2-demo")
    page.click("button[type=submit]")

    expect(page).to_have_url(re.compile(r"/studies/demo-source-risk/$"))
    expect(page.locator("header .who")).to_have_text("annotator2")
