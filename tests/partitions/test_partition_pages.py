"""The partitions page and the API through HTTP: who may see them, the two-step rule,
file errors, thresholds, the typed-slug freeze, the frozen record and new versions."""

from __future__ import annotations

import dataclasses
import json

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from audit.archive.models import Study, Unit
from audit.partitions.leakage import leakage
from audit.partitions.models import StudyFreeze
from audit.partitions.rules import group_counts, partition_counts, values_present
from audit.partitions.selectors import partitions_mark
from audit.partitions.services import (
    freeze_preview,
    partition_overview,
    partition_rule_apply,
    partition_units,
)
from tests.partitions.conftest import LEAKY, SPLIT

pytestmark = pytest.mark.django_db

PAGES = (
    ("get", "study-partitions"),
    ("post", "study-partitions-rule"),
    ("post", "study-partitions-file"),
    ("post", "study-thresholds"),
    ("post", "study-freeze"),
    ("post", "study-version-new"),
)
API = (
    ("get", "api-study-partitions"),
    ("post", "api-study-partitions-rule"),
    ("post", "api-study-partitions-file"),
    ("post", "api-study-freeze"),
)


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def url(name, study):
    return reverse(name, args=[study.slug])


def split_form(step="preview", values="culture-and-museums\nlocal-services, retail-books"):
    return {"step": step, "field": "domain", "kind": "values", "values": values, "seed": "1"}


@pytest.mark.parametrize(("method", "name"), PAGES + API)
def test_annotators_get_403_and_outsiders_404_and_nothing_changes(study, people, method, name):
    outsider = get_user_model().objects.create_user("outsider", password="pw")
    body = {"confirm": study.slug, **split_form(step="apply")}

    for user, expected in ((people["ann_a"], 403), (people["adj"], 403), (outsider, 404)):
        data = body if method == "post" else None
        response = getattr(client_for(user), method)(url(name, study), data)
        assert response.status_code == expected, (user.username, name)
    assert Client().get(url(name, study)).status_code in {302, 401}  # pages: login; API: 401

    assert not Unit.objects.filter(study=study, partition__isnull=False).exists()
    assert not StudyFreeze.objects.exists()
    assert Study.objects.count() == 1


def test_the_study_page_links_the_partitions_page_for_researchers_only(study, people):
    link = reverse("study-partitions", args=[study.slug])
    detail = reverse("study-detail", args=[study.slug])

    assert link in client_for(people["res"]).get(detail).content.decode()
    assert link not in client_for(people["ann_a"]).get(detail).content.decode()


def test_the_page_shows_counts_and_an_empty_leakage_report(study, people):
    response = client_for(people["res"]).get(url("study-partitions", study))

    html = response.content.decode()
    assert response.status_code == 200
    assert response.context["overview"].counts == {"calibration": 0, "test": 0, "unassigned": 35}
    assert "No leakage" in html
    assert "Cannot freeze yet" in html
    assert "35 of 35 units have no partition" in html


def test_the_page_takes_a_fixed_number_of_queries(study, people, django_assert_max_num_queries):
    client = client_for(people["res"])
    partition_rule_apply(study=study, rule=LEAKY)
    client.get(url("study-partitions", study))

    with django_assert_max_num_queries(14):
        assert client.get(url("study-partitions", study)).status_code == 200


def test_a_rule_is_previewed_then_applied(study, people):
    client = client_for(people["res"])

    preview = client.post(url("study-partitions-rule", study), split_form())

    assert preview.status_code == 200
    assert preview.context["preview"].counts == {"calibration": 23, "test": 12, "unassigned": 0}
    assert "No leakage after this rule" in preview.content.decode()
    assert not Unit.objects.filter(study=study, partition__isnull=False).exists()

    applied = client.post(url("study-partitions-rule", study), split_form(step="apply"))

    assert applied.status_code == 302
    assert Unit.objects.filter(study=study, partition="test").count() == 12
    assert Unit.objects.filter(study=study, partition="calibration").count() == 23


def test_a_leaky_rule_shows_the_leaking_groups_with_unit_digests(study, people):
    client = client_for(people["res"])

    preview = client.post(url("study-partitions-rule", study), split_form(values="local-services"))

    html = preview.content.decode()
    leaks = preview.context["preview"].leaks
    assert [leak.value for leak in leaks] == ["best-venue-near", "opening-hours-on-date"]
    for leak in leaks:
        for digest in leak.calibration + leak.test:
            assert digest in html
    assert "Leakage after this rule" in html
    # One sentence says why, naming the groups; no Apply is offered for it.
    assert (
        "It leaks because it splits by domain, while 2 query templates ('best-venue-near', "
        "'opening-hours-on-date') have units on both sides" in html.replace("&#x27;", "'")
    )
    assert 'id="apply-rule"' not in html

    # Sent anyway, the page's apply refuses it and changes nothing.
    refused = client.post(
        url("study-partitions-rule", study), split_form(step="apply", values="local-services")
    )
    assert refused.status_code == 400
    assert "nothing was changed" in refused.content.decode()
    assert not Unit.objects.filter(study=study, partition__isnull=False).exists()

    # Applied elsewhere (the API allows it, reporting the leaks), the page lists them.
    partition_rule_apply(study=study, rule=LEAKY)
    page = client.get(url("study-partitions", study)).content.decode()
    assert "2 groups in both partitions" in page
    assert "Cannot freeze yet" in page


def test_the_page_proposes_a_leak_free_split_and_starts_the_form_from_it(study, people):
    client = client_for(people["res"])

    page = client.get(url("study-partitions", study))

    proposal = page.context["proposal"]
    assert proposal.possible
    assert proposal.test_units + proposal.calibration_units == 35
    assert 0 < proposal.test_units <= 35 * 0.2
    html = page.content.decode()
    assert "Proposed leak-free split" in html
    assert page.context["rule_form"].initial["values"] == "\n".join(proposal.test_values)
    # Its preview has no leakage and offers Apply; applying it leaves nothing to fix.
    values = ",".join(proposal.test_values)
    preview = client.post(url("study-partitions-rule", study), split_form(values=values))
    assert preview.context["preview"].leaks == []
    assert 'id="apply-rule"' in preview.content.decode()
    applied = client.post(url("study-partitions-rule", study), split_form("apply", values))
    assert applied.status_code == 302
    assert partition_overview(study=study).leaks == []
    assert Unit.objects.filter(study=study, partition="test").count() == proposal.test_units


def test_a_rule_naming_an_unknown_value_is_refused(study, people):
    response = client_for(people["res"]).post(
        url("study-partitions-rule", study), split_form(step="apply", values="travle")
    )

    assert response.status_code == 400
    assert "No unit of this study has the domain" in response.content.decode()
    assert not Unit.objects.filter(study=study, partition__isnull=False).exists()


def test_a_seeded_share_rule_through_the_form(study, people):
    form = {"field": "target_family", "kind": "share", "share": "25", "seed": "x"}
    client = client_for(people["res"])

    preview = client.post(url("study-partitions-rule", study), {"step": "preview", **form})

    assert preview.status_code == 200
    assert len(preview.context["preview"].test_values) == 3  # 25% of 11 target families
    # Target families share domains here: the split leaks, so the page will not apply it.
    assert preview.context["preview"].leaks
    applied = client.post(url("study-partitions-rule", study), {"step": "apply", **form})
    assert applied.status_code == 400
    assert not Unit.objects.filter(study=study, partition__isnull=False).exists()


def test_a_file_with_bad_lines_is_listed_and_not_applied(study, people):
    digest = Unit.objects.filter(study=study).values_list("digest", flat=True).first()
    data = f"digest,partition\n{digest},test\n{'0' * 64},test\n{digest},maybe\n".encode()
    upload = SimpleUploadedFile("split.csv", data, content_type="text/csv")

    response = client_for(people["res"]).post(url("study-partitions-file", study), {"file": upload})

    html = response.content.decode()
    assert response.status_code == 400
    assert "Nothing was applied" in html
    assert "bad_partition" in html
    assert not Unit.objects.filter(study=study, partition__isnull=False).exists()


def test_thresholds_are_edited_until_the_freeze(study, people):
    client = client_for(people["res"])

    bad = client.post(url("study-thresholds", study), {"thresholds": '{"cut": "high"'})
    worse = client.post(url("study-thresholds", study), {"thresholds": '{"cut": "high"}'})
    good = client.post(url("study-thresholds", study), {"thresholds": '{"cut": 0.7}'})

    assert bad.status_code == 400
    assert "Not valid JSON" in bad.content.decode()
    assert worse.status_code == 400
    assert "is not a number" in worse.content.decode()
    assert good.status_code == 302
    study.refresh_from_db()
    assert study.thresholds == {"cut": 0.7}


def test_the_freeze_needs_the_typed_slug_then_shows_the_frozen_record(study, people):
    client = client_for(people["res"])
    partition_rule_apply(study=study, rule=SPLIT)
    page = client.get(url("study-partitions", study)).content.decode()
    assert "Freeze this study" in page
    assert page.count(study.codebook.digest) == 1

    wrong = client.post(url("study-freeze", study), {"confirm": "Part"})
    assert wrong.status_code == 400
    assert not StudyFreeze.objects.exists()

    done = client.post(url("study-freeze", study), {"confirm": study.slug})
    assert done.status_code == 302
    freeze = StudyFreeze.objects.get(study=study)

    page = client.get(url("study-partitions", study)).content.decode()
    assert "Frozen record" in page
    for digest in (
        freeze.codebook_digest,
        freeze.pipelines_digest,
        freeze.thresholds_digest,
        freeze.partition_digest,
    ):
        assert digest in page
    assert "Assign by rule" not in page
    assert "New study version" in page

    again = client.post(url("study-freeze", study), {"confirm": study.slug})
    assert again.status_code == 409
    refused = client.post(url("study-partitions-rule", study), split_form(step="apply"))
    assert refused.status_code == 409
    assert "is frozen" in refused.content.decode()


def test_a_new_version_from_the_page(study, people):
    client = client_for(people["res"])
    partition_rule_apply(study=study, rule=SPLIT)
    client.post(url("study-freeze", study), {"confirm": study.slug})

    response = client.post(
        url("study-version-new", study),
        {"slug": "part-v2", "title": "Version 2", "codebook": study.codebook_id},
    )

    assert response.status_code == 302
    assert response["Location"] == reverse("study-partitions", args=["part-v2"])
    new = Study.objects.get(slug="part-v2")
    page = client.get(response["Location"]).content.decode()
    assert "Assign by rule" in page
    assert reverse("study-partitions", args=[study.slug]) in page  # the previous version
    taken = client.post(
        url("study-version-new", study),
        {"slug": "part-v2", "title": "Again", "codebook": study.codebook_id},
    )
    assert taken.status_code == 400
    assert new.previous_version == study


# --- API -----------------------------------------------------------------------------------


def test_api_partitions_and_leakage(study, people):
    client = client_for(people["res"])
    partition_rule_apply(study=study, rule=LEAKY)

    body = client.get(url("api-study-partitions", study)).json()

    assert body["frozen"] is False
    assert body["freeze"] is None
    assert body["counts"] == {"calibration": 29, "test": 6, "unassigned": 0}
    assert [(leak["field"], leak["value"]) for leak in body["leakage"]] == [
        ("template_id", "best-venue-near"),
        ("template_id", "opening-hours-on-date"),
    ]
    assert all(len(d) == 64 for leak in body["leakage"] for d in leak["calibration"] + leak["test"])


def test_api_rule_dry_run_then_apply_then_freeze(study, people):
    client = client_for(people["res"])
    rule = {"field": "domain", "test_values": sorted(SPLIT.test_values)}

    dry = client.post(
        url("api-study-partitions-rule", study),
        {**rule, "dry_run": True},
        content_type="application/json",
    )
    assert dry.status_code == 200
    assert dry.json()["applied"] is False
    assert not Unit.objects.filter(study=study, partition__isnull=False).exists()

    applied = client.post(
        url("api-study-partitions-rule", study), rule, content_type="application/json"
    )
    assert applied.status_code == 200
    assert applied.json()["counts"] == {"calibration": 23, "test": 12, "unassigned": 0}
    assert applied.json()["leakage"] == []

    frozen = client.post(url("api-study-freeze", study))
    assert frozen.status_code == 201
    assert frozen.json()["partition_counts"] == {"calibration": 23, "test": 12}
    assert frozen.json()["frozen_by"] == "res"

    again = client.post(url("api-study-freeze", study))
    assert (again.status_code, again.json()["reason"]) == (409, "already_frozen")
    changed = client.post(
        url("api-study-partitions-rule", study), rule, content_type="application/json"
    )
    assert (changed.status_code, changed.json()["reason"]) == (409, "study_frozen")
    body = client.get(url("api-study-partitions", study)).json()
    assert body["frozen"] is True
    assert body["freeze"]["partition_digest"] == StudyFreeze.objects.get().partition_digest


def test_api_refusals(study, people):
    client = client_for(people["res"])

    both = client.post(
        url("api-study-partitions-rule", study),
        {"field": "domain", "test_values": ["retail-books"], "share": 0.2},
        content_type="application/json",
    )
    unknown = client.post(
        url("api-study-partitions-rule", study),
        {"field": "domain", "test_values": ["travle"]},
        content_type="application/json",
    )
    unassigned = client.post(url("api-study-freeze", study))

    assert both.status_code == 400
    assert (unknown.status_code, unknown.json()["reason"]) == (400, "unknown_value")
    assert (unassigned.status_code, unassigned.json()["reason"]) == (409, "unassigned_units")
    partition_rule_apply(study=study, rule=LEAKY)
    leaky = client.post(url("api-study-freeze", study))
    assert (leaky.status_code, leaky.json()["reason"]) == (409, "leakage")


def test_api_file_upload(study, people):
    client = client_for(people["res"])
    digests = list(Unit.objects.filter(study=study).order_by("id").values_list("digest", flat=True))
    lines = [json.dumps({"digest": d, "partition": "calibration"}) for d in digests[:3]]
    bad = "\n".join([*lines, json.dumps({"digest": "1" * 64, "partition": "test"})])

    refused = client.post(
        url("api-study-partitions-file", study),
        {"file": SimpleUploadedFile("split.jsonl", bad.encode())},
    )
    accepted = client.post(
        url("api-study-partitions-file", study),
        {"file": SimpleUploadedFile("split.jsonl", "\n".join(lines).encode())},
    )

    assert refused.status_code == 400
    assert refused.json()["errors"] == [
        {
            "line": 4,
            "reason": "unknown_digest",
            "message": f"no unit or tuple of this study has the digest {'1' * 64}",
        }
    ]
    assert accepted.status_code == 200
    assert accepted.json()["units"] == 3
    assert Unit.objects.filter(study=study, partition="calibration").count() == 3


@pytest.mark.parametrize("rule", [None, LEAKY, SPLIT], ids=["unassigned", "leaky", "split"])
def test_the_grouped_overview_says_what_the_units_say(study, rule):
    """The overview counts from grouped rows and reads digests only for the leaks it
    shows. It must say what the pure functions say over every unit, and the freeze
    preview must be the same bytes."""
    if rule is not None:
        partition_rule_apply(study=study, rule=rule)
    # One unit without a partition beside the others.
    Unit.objects.filter(pk=Unit.objects.filter(study=study).order_by("id").first().pk).update(
        partition=None
    )
    units = partition_units(study=study)
    full = partition_overview(study=study)
    page = partition_overview(study=study, leaks_shown=1, units_shown=1)

    for overview in (full, page):
        assert overview.counts == partition_counts(unit.partition for unit in units)
        assert overview.groups == group_counts(units)
        assert overview.values == values_present(units)
        assert overview.total == len(units)
    assert full.leaks == leakage(units)
    assert [leak.as_dict() for leak in full.leaks] == [leak.as_dict() for leak in leakage(units)]
    assert [(leak.field, leak.value) for leak in page.leaks] == [
        (leak.field, leak.value) for leak in full.leaks
    ]
    for number, (mine, theirs) in enumerate(zip(page.leaks, full.leaks, strict=True)):
        assert (mine.calibration_count, mine.test_count) == (
            len(theirs.calibration),
            len(theirs.test),
        )
        shown = 1 if number == 0 else 0
        assert mine.calibration == theirs.calibration[:shown]
        assert mine.test == theirs.test[:shown]
    preview = freeze_preview(study=study)
    assert full.contents == preview
    assert page.contents == dataclasses.replace(preview, leaks=page.contents.leaks)
    assert page.contents.problems() == preview.problems()
    assert partition_overview(study=study, with_contents=False).contents is None


def test_api_leaks_list_their_first_units_and_whole_counts_a_page_at_a_time(study, people):
    client = client_for(people["res"])
    partition_rule_apply(study=study, rule=LEAKY)
    full = client.get(url("api-study-partitions", study), {"units": 1000}).json()
    short = client.get(url("api-study-partitions", study), {"units": 1}).json()

    assert (full["leaks"], full["page"], full["pages"]) == (2, 1, 1)
    for whole, first in zip(full["leakage"], short["leakage"], strict=True):
        assert (first["calibration_units"], first["test_units"]) == (
            len(whole["calibration"]),
            len(whole["test"]),
        )
        assert first["calibration"] == whole["calibration"][:1]
        assert first["test"] == whole["test"][:1]
    beyond = client.get(url("api-study-partitions", study), {"page": 2}).json()
    assert (beyond["leaks"], beyond["page"], beyond["leakage"]) == (2, 2, [])
    for bad in ({"units": 1001}, {"units": -1}, {"page": 0}, {"page": "x"}):
        refused = client.get(url("api-study-partitions", study), bad)
        assert refused.status_code == 400
        assert refused.json()["reason"] == "invalid_query"
        assert next(iter(bad)) in refused.json()["message"]


def test_the_stored_summary_follows_every_change_of_partitions(study, people):
    """The page's counts come from a stored summary; a rule, a file or an import moves
    its key on, so the next read counts again."""
    before = partition_overview(study=study)
    mark = partitions_mark(Study.objects.get(pk=study.pk))
    assert before.counts["unassigned"] == before.total

    partition_rule_apply(study=study, rule=SPLIT)
    after_rule = partition_overview(study=study)
    assert after_rule.counts == partition_counts(u.partition for u in partition_units(study=study))
    assert after_rule.counts["unassigned"] == 0
    assert partitions_mark(Study.objects.get(pk=study.pk)) != mark

    first = Unit.objects.filter(study=study).order_by("id").first()
    data = f"{first.digest},calibration\n".encode()
    response = client_for(people["res"]).post(
        url("api-study-partitions-file", study),
        {"file": SimpleUploadedFile("p.csv", data, content_type="text/csv")},
    )
    assert response.status_code == 200, response.content
    assert partition_overview(study=study).counts == partition_counts(
        u.partition for u in partition_units(study=study)
    )
