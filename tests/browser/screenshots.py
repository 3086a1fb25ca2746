"""Screenshots for docs/screenshots/: the annotation form of both format-1 codebooks at
1440×900 with a few spans highlighted, and the pages a newcomer meets first at 1280×720
(the smallest screen they must serve whole: nothing may be covered there). Taken only on
request, by ``python tests/browser/take_screenshots.py``: the file's name is not a test
file's, so a test run never collects it and never rewrites the committed images."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import (
    assign,
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

OUT = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
AUDIT = "Locksmith"  # the security-audit answer: English, readable in a screenshot


SMALL = {"width": 1280, "height": 720}


def shoot(page, name: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(OUT / name))


@pytest.fixture
def small(browser, demo):
    """A page at 1280×720."""
    context = browser.new_context(viewport=SMALL, base_url=demo.url)
    context.set_default_timeout(10_000)
    try:
        yield context, context.new_page()
    finally:
        context.close()


def test_screenshot_problems_bar_at_1280(small, demo):
    context, page = small
    unit = unit_where(
        demo.studies["demo-source-risk"],
        tuple__source__canonical_url__contains="brightline-security",
    )
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)
    page.check('input[name="field-I"][value="1"]')
    page.check('input[name="field-A"][value="U"]')
    page.click("#submit-label")
    expect(page.locator("#form-errors details.problems")).to_have_attribute("open", "")
    expect(page.locator('[data-action="submit-anyway"]')).to_be_in_viewport()
    shoot(page, "annotate-problems-1280.png")
    # Collapsed to its one line: the texts keep the screen.
    page.locator("#form-errors summary").click()
    expect(page.locator("#form-errors details.problems")).not_to_have_attribute("open", "")
    page.evaluate("() => window.scrollTo(0, 400)")
    page.wait_for_timeout(300)
    shoot(page, "annotate-problems-collapsed-1280.png")


def test_screenshot_source_risk_form(page, context, demo):
    unit = unit_where(
        demo.studies["demo-source-risk"],
        tuple__source__canonical_url__contains="brightline-security",
    )
    texts = texts_of(unit)
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)
    for judgment, snapshot, needle in (
        ("I", "source", "This assessment was commissioned and funded by Locksmith Inc."),
        ("A", "answer", "Brightline reported no critical issues"),
        ("M", "query", "independent security audit"),
        ("D", "answer", "was commissioned and paid for by Locksmith itself"),
        ("passage_support", "source", "We found no critical or high-severity issues."),
    ):
        span = expected_span(snapshot, texts[snapshot], needle)
        select_text(page, snapshot_selector(snapshot), span["start"], span["end"])
        page.locator(f'#span-toolbar button[data-attach="{judgment}"]').click()
        expect(page.locator(f'li.span-item[data-field="{judgment}"]')).to_have_count(1)
    for key in ("I", "A", "M", "D"):
        page.check(f'input[name="field-{key}"][value="1"]')
    page.check('input[name="field-passage_support"][value="1"]')
    page.check('input[name="field-source_role"][value="sponsored"]')
    # A live selection, so that the toolbar shows too (placed for the page at the top).
    page.evaluate("() => window.scrollTo(0, 0)")
    span = expected_span("source", texts["source"], "Brightline Security retained full editorial")
    select_text(page, snapshot_selector("source"), span["start"], span["end"])
    expect(page.locator("#span-toolbar")).to_be_visible()
    expect(page.locator("#draft-status")).to_contain_text("Saved")
    shoot(page, "annotate-source-risk.png")


def test_screenshot_answer_claims_form(page, context, demo):
    unit = unit_where(demo.studies["demo-answer-claims"], observation__answer__text__contains=AUDIT)
    texts = texts_of(unit)
    (report,) = [d for d, text in texts["sources"].items() if "Security Assessment" in text]
    shown = source_names(unit)[report]
    assignment = assign(unit, demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)
    for number, (claim_text, quote) in enumerate(
        (
            (
                "was commissioned and paid for by Locksmith itself",
                "This assessment was commissioned and funded by Locksmith Inc.",
            ),
            (
                "Brightline reported no critical issues",
                "We found no critical or high-severity issues.",
            ),
        ),
        start=1,
    ):
        span = expected_span("answer", texts["answer"], claim_text)
        select_text(page, snapshot_selector("answer"), span["start"], span["end"])
        expect(page.locator("#selection-preview")).to_contain_text(claim_text)
        page.click("#add-claim")
        claim = page.locator(f'.claim[data-claim-id="c{number}"]')
        claim.locator("select.claim-source").select_option(report)
        quote_span = expected_span("source", texts["sources"][report], quote)
        select_text(page, snapshot_selector(shown), quote_span["start"], quote_span["end"])
        expect(page.locator("#selection-preview")).to_contain_text(quote[:60])
        claim.locator("button.claim-quote").click()
        claim.locator(f'input[name="claim-c{number}-supported"][value="true"]').check()
        claim.locator(f'input[name="claim-c{number}-accurate"][value="true"]').check()
    page.check('input[name="field-supported"][value="false"]')
    expect(page.locator("#summary-mismatch")).to_be_visible()
    expect(page.locator("#draft-status")).to_contain_text("Saved")
    page.evaluate("() => window.scrollTo(0, 0)")
    shoot(page, "annotate-answer-claims.png")


def test_screenshot_codebook_install(page, context, demo, tmp_path):
    """The codebooks page at 1280×720 after a refused upload: every problem where it is."""
    import json

    from django.conf import settings

    value = json.loads(
        (Path(settings.BASE_DIR) / "fixtures" / "codebooks" / "toxicity-1.0.0.json").read_text(
            encoding="utf-8"
        )
    )
    value["version"] = "1.1.0"
    value["layout"] = "tabs"
    value["fields"][0]["grades"][1].pop("anchor")
    value["fields"][1]["choices"] = []
    draft = tmp_path / "toxicity-1.1.0.json"
    draft.write_text(json.dumps(value, indent=2), encoding="utf-8")
    page.set_viewport_size({"width": 1280, "height": 720})
    login_fast(context, demo.users["researcher"], demo.url)
    page.goto("/codebooks/")
    page.get_by_label("Codebook file (JSON)").set_input_files(str(draft))
    page.get_by_role("button", name="Check and install").click()
    expect(page.get_by_role("alert")).to_contain_text("3 problems")
    shoot(page, "codebook-install.png")


def test_screenshot_first_hour_at_1280(browser, readme_demo):
    """Every page the first hour changed, at 1280×720, along the README's flow (twice),
    with a leaking rule's preview and an import refused line by line before it."""
    from tests.browser.test_first_hour import as_user, make_demo_again, walk_readme

    context, page = as_user(browser, readme_demo, "researcher")
    page.goto("/studies/demo-source-risk/partitions/")
    page.fill("textarea[name=values]", "local-services")
    page.click("#preview-rule")
    expect(page.locator("#leak-reason")).to_be_visible()
    page.locator("#preview").scroll_into_view_if_needed()
    shoot(page, "partitions-leaking-1280.png")
    page.goto("/studies/demo-answer-claims/")
    demo_file = OUT.parents[1] / "fixtures" / "demo" / "answer-claims.jsonl"
    header = demo_file.read_bytes().split(b"\n")[0]
    bad = header + b"\n" + b"{broken\n" * 3 + b'{"x": "\xff"}\n' * 250
    upload = {"name": "bad.jsonl", "mimeType": "application/jsonl", "buffer": bad}
    page.set_input_files("input[type=file]", files=[upload])
    page.click("#import button[type=submit]")
    expect(page.locator(".error-groups")).to_be_visible()
    shoot(page, "import-errors-1280.png")
    context.close()

    walk_readme(browser, readme_demo, first=True, shoot=shoot)
    make_demo_again()
    walk_readme(browser, readme_demo, first=False, shoot=shoot)


def test_screenshot_query_documents_at_1280(small, demo):
    """The query–document grades form: documents in rank order, each with its own
    fields beside its text (docs/guide-annotator.md)."""
    from annotator.memberships.models import Role
    from annotator.memberships.services import membership_add
    from tests.engine.documents import make_documents_study

    context, page = small
    study = make_documents_study("qdocs-screenshot", queries=1)
    membership_add(study=study, user=demo.users["annotator1"], role=Role.ANNOTATOR)
    assignment = assign(study.units.get(), demo.users["annotator1"])
    login_fast(context, demo.users["annotator1"], demo.url)
    open_form(page, assignment)
    page.check('input[name="field-support-0"][value="0"]')
    page.check('input[name="field-authority-0"][value="0"]')
    page.check('input[name="field-support-1"][value="2"]')
    page.click("#document-1-title")
    page.keyboard.press("t")
    expect(page.locator('fieldset[data-field="authority-1"]')).to_have_class(
        re.compile("is-active")
    )
    page.evaluate("document.getElementById('query-title').scrollIntoView()")
    shoot(page, "annotate-query-documents.png")


def test_screenshot_pair_form_at_1280(small, demo):
    """Seed 002's pairwise side by side: the query, "Left" and "Right", one choice."""
    from tests.annotation.pairs import opposite_annotators, pairs_study

    context, page = small
    study = pairs_study("pairwise-screenshot", n=1)
    unit = study.units.get()
    annotator = opposite_annotators(study, unit, prefix="shot")[0]
    assignment = assign(unit, annotator)
    login_fast(context, annotator, demo.url)
    open_form(page, assignment)
    page.check('input[name="field-preference"][value="left"]')
    page.fill("#reason-preference", "Left names a quiet router that fits a small office.")
    expect(page.locator('input[name="field-preference"][value="left"]')).to_be_checked()
    shoot(page, "annotate-pair.png")


def test_screenshot_comparison_at_1280(browser, readme_demo):
    """The demo's Table II page (seed 002's protocol setting), at 1280×720."""
    from tests.browser.test_first_hour import as_user

    context, page = as_user(browser, readme_demo, "researcher")
    page.goto("/studies/demo-protocol-pairs/comparison/")
    expect(page.locator("#row-net_gain")).to_be_visible()
    page.locator("#pick").scroll_into_view_if_needed()
    page.evaluate("() => window.scrollTo(0, document.querySelector('#pick').offsetTop - 8)")
    expect(page.locator("#table-ii")).to_be_visible()
    shoot(page, "comparison.png")
    context.close()


def _disputed(demo, slug: str, annotations) -> object:
    """An open unit of ``slug`` labelled by annotator1 and annotator2 with the two given
    annotations (functions of the unit's content), so that it is disputed."""
    import uuid

    from annotator.adjudication.jobs import label_submitted
    from annotator.labelling.selectors import unit_content
    from annotator.labelling.services import label_submit
    from audit.archive.models import UnitState

    filters = {"state": UnitState.OPEN}
    if slug == "demo-answer-claims":
        filters["observation__answer__status"] = "complete"
    unit = unit_where(demo.studies[slug], **filters)
    content = unit_content(unit=unit)
    for username, build in zip(("annotator1", "annotator2"), annotations, strict=True):
        label = label_submit(
            assignment=assign(unit, demo.users[username]),
            annotation=build(content),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        ).label
        label_submitted.run(label.pk)
    unit.refresh_from_db()
    assert unit.state == UnitState.DISPUTED
    return unit


def test_screenshot_adjudication_of_both_first_codebooks(page, context, demo):
    """The one adjudication page on a disputed source-risk tuple (two predicates and the
    role differ) and on a disputed answer (a claim's verdict differs)."""
    from tests.annotation.annotations import answer_claims, source_risk

    def risk(values, role):
        def build(content):
            annotation = source_risk(content, values=values)
            annotation["source_role"] = role
            return annotation

        return build

    def claims(supported):
        def build(content):
            annotation = answer_claims(content)
            annotation["claims"][0]["supported"] = supported
            annotation["verdicts"]["supported"]["value"] = supported
            return annotation

        return build

    tuple_unit = _disputed(
        demo,
        "demo-source-risk",
        (risk((1, 1, 1, 0), "affiliate_marketing"), risk((1, 0, None, 0), "sponsored")),
    )
    answer_unit = _disputed(demo, "demo-answer-claims", (claims(True), claims(False)))
    login_fast(context, demo.users["adjudicator"], demo.url)
    for unit, name, shown in (
        (tuple_unit, "adjudicate-source-risk.png", "tr.field-row.differs"),
        (answer_unit, "adjudicate-answer-claims.png", "#claims-table"),
    ):
        page.goto(f"/adjudicate/{unit.pk}/")
        target = page.locator(shown).first
        expect(target).to_be_visible()
        target.evaluate(
            "(node) => window.scrollTo(0, node.getBoundingClientRect().top + scrollY - 200)"
        )
        shoot(page, name)
