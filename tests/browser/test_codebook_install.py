"""A researcher installs a codebook from its file and creates a study with it, in Chromium,
with the keyboard: a refused file lists every problem where it is, nothing is installed;
the corrected file installs and a study is created with it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from django.conf import settings
from playwright.sync_api import expect

from tests.browser.helpers import login_fast

pytestmark = pytest.mark.browser

TOXICITY = Path(settings.BASE_DIR) / "fixtures" / "codebooks" / "toxicity-1.0.0.json"


def toxicity(version: str, *, broken: bool = False) -> dict:
    value = json.loads(TOXICITY.read_text(encoding="utf-8"))
    value["version"] = version
    if broken:
        value["layout"] = "tabs"
        value["fields"][0]["grades"][1].pop("anchor")
        value["fields"][1]["choices"] = []
    return value


def write(tmp_path: Path, name: str, value: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")
    return path


def test_a_researcher_installs_a_codebook_and_creates_a_study_with_it(
    page, context, events, demo, tmp_path
):
    from audit.archive.models import Codebook, Study

    login_fast(context, demo.users["researcher"], demo.url)
    page.goto("/")
    page.get_by_role("link", name="Codebooks").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Codebooks", level=1)).to_be_visible()

    # A file with three problems: all of them listed with where, nothing installed.
    page.get_by_label("Codebook file (JSON)").set_input_files(
        str(write(tmp_path, "toxicity-draft.json", toxicity("1.1.0", broken=True)))
    )
    page.get_by_role("button", name="Check and install").focus()
    page.keyboard.press("Enter")
    problems = page.get_by_role("alert")
    expect(problems).to_contain_text("toxicity-draft.json was not installed: 3 problems")
    expect(problems.locator("tbody tr")).to_have_count(3)
    expect(problems).to_contain_text("fields[0] (civility).grades[1].anchor")
    assert not Codebook.objects.filter(name="toxicity", version="1.1.0").exists()

    # The corrected file installs, and its row offers a study.
    page.get_by_label("Codebook file (JSON)").set_input_files(
        str(write(tmp_path, "toxicity-1.1.0.json", toxicity("1.1.0")))
    )
    page.get_by_role("button", name="Check and install").focus()
    page.keyboard.press("Enter")
    expect(page.locator(".messages")).to_contain_text("Installed codebook toxicity 1.1.0.")
    expect(page.get_by_role("alert")).to_have_count(0)
    row = Codebook.objects.get(name="toxicity", version="1.1.0")
    page.get_by_role("link", name="Create a study with toxicity 1.1.0").focus()
    page.keyboard.press("Enter")

    expect(page.get_by_label("Codebook version")).to_have_value(str(row.pk))
    page.get_by_label("Slug").fill("toxicity-pilot")
    page.get_by_label("Title").fill("Toxicity pilot")
    page.get_by_label("Title").press("Enter")

    expect(page).to_have_url(re.compile(r"/studies/toxicity-pilot/$"))
    expect(page.get_by_role("heading", name="Toxicity pilot", level=1)).to_be_visible()
    expect(page.locator(".facts")).to_contain_text("toxicity 1.1.0")
    expect(page.get_by_role("button", name="Check and import")).to_be_visible()
    study = Study.objects.get(slug="toxicity-pilot")
    assert study.codebook_id == row.pk
    assert events.page_errors == []
    # The refused file's page answers 400 (as a refused form should); nothing else failed.
    assert events.console_errors == [
        "Failed to load resource: the server responded with a status of 400 (Bad Request)"
    ]
