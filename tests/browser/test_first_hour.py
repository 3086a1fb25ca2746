"""The README's flow in Chromium, twice on the same database, as a newcomer walks it.

`make demo` loads the demo (labelled but for one unit) and serves it with Celery eager;
then annotator1 and, differently, annotator2 label the item their queue hands out, the
adjudicator resolves it, and the researcher reads the gate, outcomes and reliability,
applies the partitions page's proposed split, freezes the study and downloads a release.
`make demo` again keeps all of it: the second walk finds nothing left to label or
adjudicate, the study frozen, and makes a second release. No manual step in between.
"""

from __future__ import annotations

import io
import re
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import TIMEOUT_MS
from tests.browser.helpers import login

pytestmark = pytest.mark.browser

RISK = "demo-source-risk"
SMALL = {"width": 1280, "height": 720}
#: What each annotator answers: all unresolved, told apart by the source role and d_Q.
ANSWERS = {"annotator1": ("unknown", "0"), "annotator2": ("sponsored", "0.5")}

Shoot = Callable[[Any, str], None]


def role_label(key: str) -> str:
    """A source role as the pages name it: its label in the demo's codebook."""
    from audit.archive.models import Study

    definition = Study.objects.get(slug=RISK).codebook.definition
    return next(role["label"] for role in definition["source_roles"] if role["key"] == key)


def no_shots(page: Any, name: str) -> None:
    """The test's walk takes no screenshots (tests/browser/screenshots.py does)."""


def make_demo_again() -> None:
    from django.core.management import call_command

    out = io.StringIO()
    call_command("load_demo", "--allow-without-debug", stdout=out)
    assert f"study {RISK}: frozen, left as it is" in out.getvalue()


def as_user(browser: Any, url: str, username: str) -> tuple[Any, Any]:
    context = browser.new_context(viewport=SMALL, base_url=url)
    context.set_default_timeout(TIMEOUT_MS * 2)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.errors = errors
    login(page, username, f"{username}-demo")
    expect(page).to_have_url(re.compile(r"/$"))
    return context, page


def annotate(browser: Any, url: str, username: str, first: bool, shoot: Shoot) -> None:
    context, page = as_user(browser, url, username)
    page.goto(f"/studies/{RISK}/annotate/")
    page.click("#next-item")
    if not first:
        expect(page).to_have_url(re.compile(rf"/studies/{RISK}/annotate/$"))
        expect(page.locator(".messages")).to_contain_text("Nothing is left")
        shoot(page, f"first-hour-{username}-nothing-left.png")
        context.close()
        return
    expect(page).to_have_url(re.compile(r"/assignments/\d+/$"))
    expect(page.locator(".crumbs")).to_contain_text(re.compile(r"Item \d+$"))
    role, d_q = ANSWERS[username]
    for key in ("I", "A", "M", "D"):
        page.check(f'input[name="field-{key}"][value="U"]')
    page.check('input[name="field-passage_support"][value="U"]')
    expect(page.locator("#form-errors")).to_contain_text("5 things to fix")  # live
    page.check(f'input[name="field-source_role"][value="{role}"]')
    for key in ("d_Q", "d_R", "d_P", "d_S"):
        page.fill(f'input[name="field-{key}"]', d_q if key == "d_Q" else "0")
    expect(page.locator("#form-errors")).to_contain_text("Ready to submit")
    shoot(page, f"first-hour-{username}-form.png")
    page.click("#submit-label")
    # Nothing else is left in the demo's queue: the list, saying so.
    expect(page).to_have_url(re.compile(rf"/studies/{RISK}/annotate/$"))
    expect(page.locator(".messages")).to_contain_text("Label submitted")
    expect(page.locator(".messages")).to_contain_text("Nothing is left")
    shoot(page, f"first-hour-{username}-list.png")
    # Back shows the stored revision, read-only, with the way to revise it.
    page.go_back()
    expect(page.locator("h1")).to_contain_text("already submitted")
    expect(page.locator(".submitted-rows")).to_contain_text(role_label(role))
    shoot(page, f"first-hour-{username}-submitted.png")
    page.click("#revise")
    expect(page.locator("#submit-label")).to_have_text("Submit revision")
    page.click("#submit-label")  # unchanged: nothing new is stored
    expect(page.locator(".messages")).to_contain_text("Nothing changed since your revision 1")
    assert page.errors == []
    context.close()


def panes_never_overlap(page: Any) -> None:
    """At 1280–1439 px the texts stack above the comparison: scrolled anywhere, no pane
    covers another (they once were sticky, one sliding over the next)."""
    panes = page.locator(".adj-texts > .pane")
    for width in (1280, 1360, 1439):
        page.set_viewport_size({"width": width, "height": 720})
        for top in (0, 250, 500, 900, 1400):
            page.evaluate(f"() => window.scrollTo(0, {top})")
            boxes = [panes.nth(n).bounding_box() for n in range(panes.count())]
            for first, box in enumerate(boxes):
                for other in boxes[first + 1 :]:
                    apart = (
                        box["y"] + box["height"] <= other["y"] + 1
                        or other["y"] + other["height"] <= box["y"] + 1
                        or box["x"] + box["width"] <= other["x"] + 1
                        or other["x"] + other["width"] <= box["x"] + 1
                    )
                    assert apart, (width, top, box, other)


def adjudicate(browser: Any, url: str, first: bool, shoot: Shoot) -> None:
    context, page = as_user(browser, url, "adjudicator")
    page.goto(f"/studies/{RISK}/adjudicate/")
    if not first:
        expect(page.locator("#queue-empty")).to_be_visible()
        context.close()
        return
    page.locator("tr.queue-row a").first.click()
    expect(page).to_have_url(re.compile(r"/adjudicate/\d+/$"))
    panes_never_overlap(page)
    page.set_viewport_size(SMALL)
    page.evaluate("() => window.scrollTo(0, 450)")
    shoot(page, "first-hour-adjudicate-texts.png")
    differing = page.locator("tr.field-row.differs td[data-column='0'] input[type=radio]")
    assert differing.count() >= 1
    for index in range(differing.count()):
        differing.nth(index).check()
    page.click("#submit-adjudication")
    expect(page.locator("#form-errors")).to_contain_text("Rationale")
    page.fill("#rationale", "Annotator 1's reading: nothing on the page shows sponsorship.")
    expect(page.locator("#form-errors")).to_contain_text("Ready to submit")
    page.mouse.wheel(0, 600)
    # The wheel scrolls smoothly: the shot waits until the page stands still.
    page.wait_for_function(
        "() => new Promise(r => { const y = scrollY; setTimeout(() => r(scrollY === y), 150); })"
    )
    shoot(page, "first-hour-adjudicate.png")
    page.click("#submit-adjudication")
    expect(page).to_have_url(re.compile(rf"/studies/{RISK}/adjudicate/$"))
    expect(page.locator(".messages")).to_contain_text("adjudicated")
    assert page.errors == []
    context.close()


def research(browser: Any, url: str, release: str, first: bool, shoot: Shoot) -> None:
    context, page = as_user(browser, url, "researcher")
    for path in (f"/studies/{RISK}/outcomes/", f"/studies/{RISK}/reliability/"):
        assert page.goto(path).status == 200, path
    if first:
        page.locator("figure.heat").last.scroll_into_view_if_needed()
        shoot(page, "first-hour-reliability-heat-maps.png")
    page.goto(f"/studies/{RISK}/partitions/")
    if first:
        expect(page.locator("#proposal")).to_contain_text("Proposed leak-free split")
        page.locator("#proposal").scroll_into_view_if_needed()
        shoot(page, "first-hour-partitions.png")
        page.click("#preview-proposal")
        expect(page.locator("#preview")).to_contain_text("No leakage after this rule")
        page.click("#apply-rule")
        expect(page.locator(".messages")).to_contain_text("Applied")
        page.fill("#freeze input[name=confirm]", RISK)
        page.click("#freeze button[type=submit]")
        expect(page.locator(".messages")).to_contain_text(f"Study {RISK} is frozen")
    else:
        expect(page.locator("#frozen")).to_be_visible()
        expect(page.locator("#proposal")).to_have_count(0)
    page.goto(f"/studies/{RISK}/")
    expect(page.locator(".gate-reached")).to_contain_text("Frozen")
    expect(page.locator("#import-frozen")).to_be_visible()
    shoot(page, f"first-hour-study-{'first' if first else 'again'}.png")
    page.goto(f"/studies/{RISK}/releases/")
    page.fill("input[name=name]", release)
    page.click("button.primary")
    download_link = page.locator(f"#release-{release} a", has_text="Download all")
    expect(download_link).to_be_visible(timeout=60_000)
    with page.expect_download() as download:
        download_link.click()
    assert download.value.suggested_filename.endswith(".zip")
    assert page.errors == []
    context.close()


def walk_readme(browser: Any, url: str, *, first: bool, shoot: Shoot = no_shots) -> None:
    for username in ("annotator1", "annotator2"):
        annotate(browser, url, username, first, shoot)
    adjudicate(browser, url, first, shoot)
    # Release directories outlive a test database: a name of this run's own.
    release = f"{'first' if first else 'second'}-{uuid.uuid4().hex[:8]}"
    research(browser, url, release, first, shoot)


def test_the_readme_flow_twice_on_the_same_database(browser, readme_demo):
    walk_readme(browser, readme_demo, first=True)
    make_demo_again()
    walk_readme(browser, readme_demo, first=False)
