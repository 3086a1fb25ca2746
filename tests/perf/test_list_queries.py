"""List pages and list endpoints read a study in a fixed number of queries, and no query
multiplies one table's rows by another's.

Each URL is requested over a study, then again after the study grew (more observations,
tuples, labels and adjudications): the number of queries must be the same, and at most
``MAX_QUERIES``. On PostgreSQL every SELECT the request ran is also replayed under
``EXPLAIN ANALYZE``: the rows its plan nodes produced, summed over the request, must stay
within a small multiple of the rows stored in the app's tables. That is what catches a
multiplying join (two ``Count(distinct=True)`` over two child tables give the product of
their rows in a single query, which a query count never sees).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.urls import reverse

from annotator.adjudication.jobs import label_adjudicated
from annotator.adjudication.services import adjudication_submit
from audit.archive.models import Study
from audit.archive.services import observations_import
from audit.ledger.services import gate_recompute
from tests.annotation.conftest import add_people, make_study
from tests.archive.builders import HEADER, jsonl, observation
from tests.releases.conftest import submit

MAX_QUERIES = 25
# Rows the plans may produce per row stored in the app's tables. A page that reads each
# table a few times stays far below; a join of tuples × observations of one study does not.
ROWS_PER_STORED_ROW = 3

APP_LABELS = ("audit", "annotator", "metrics")


@dataclass
class World:
    study: Study
    people: dict[str, Any]
    admin: Any
    serial: int = 0


def _grow(world: World, observations: int, labelled_units: int) -> None:
    """Import ``observations`` more observations (3 tuples each), label ``labelled_units``
    more units twice (every other one disputed) and adjudicate the disputes."""
    start = world.serial
    world.serial += observations
    lines = [observation(start + n + 1000, sources=3) for n in range(observations)]
    header = dict(HEADER, codebook={"name": "source-risk", "version": "1.0.0"})
    batch = observations_import(
        study=world.study, data=jsonl(*lines, header=header), file_name=f"grow-{start}.jsonl"
    )
    assert batch.status != "rejected", batch.errors[:3]
    a, b, adj = world.people["ann_a"], world.people["ann_b"], world.people["adj"]
    for n in range(labelled_units):
        first = submit(world.study, a)
        disputed = n % 2 == 1
        second = submit(world.study, b, (1, 1, None, 0) if disputed else (1, 1, 1, 0))
        assert second.unit_id == first.unit_id
        if disputed:
            final = adjudication_submit(
                unit=first.unit,
                adjudicator=adj,
                annotation=first.annotation,
                rationale="The review page states the commission.",
                client_submission_id=uuid.uuid4(),
            )
            label_adjudicated.run(final.pk)
    gate_recompute(study=world.study)


@pytest.fixture
def world(db, settings, tmp_path) -> World:
    settings.RELEASES_ROOT = tmp_path / "releases"
    study = make_study("big", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    superuser = get_user_model().objects.create_superuser("root", password="pw")
    world = World(study, people, superuser)
    _grow(world, observations=8, labelled_units=4)
    return world


def _stored_rows() -> int:
    total = 0
    for label in APP_LABELS:
        for model in apps.get_app_config(label).get_models():
            total += model._base_manager.count()
    return total


#: Plan nodes that produce no rows: a bitmap index scan hands its parent a bitmap of
#: the index entries that match, and its "Actual Rows" counts entries, dead ones included
#: (rows written and rolled back by earlier tests stay in an index until VACUUM), so it
#: measures the table's history, not the query's shape. The heap scan above it counts the
#: rows the query reads.
_BITMAPS = frozenset({"Bitmap Index Scan", "BitmapAnd", "BitmapOr"})


def _plan_rows(node: dict[str, Any]) -> float:
    produced = 0.0
    if node.get("Node Type") not in _BITMAPS:
        produced = node.get("Actual Rows", 0) * node.get("Actual Loops", 1)
    return produced + sum(_plan_rows(child) for child in node.get("Plans", []))


@contextmanager
def _recording() -> Iterator[list[tuple[str, Any]]]:
    statements: list[tuple[str, Any]] = []

    def record(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        statements.append((sql, params))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        yield statements


def _rows_produced(statements: list[tuple[str, Any]]) -> float:
    total = 0.0
    with connection.cursor() as cursor:
        # Rows a query's shape produces, not a guess of the planner's: on tables this
        # small it may pick a nested loop that rescans one per outer row, and how it
        # guesses depends on what ran before. A join that multiplies rows multiplies them
        # in a hash or merge join too, so the budget still catches it.
        cursor.execute("SET enable_nestloop = off")
        try:
            for sql, params in statements:
                if not sql.lstrip().upper().startswith("SELECT") or "FOR UPDATE" in sql.upper():
                    continue
                cursor.execute(f"EXPLAIN (ANALYZE, FORMAT JSON) {sql}", params)
                plan = cursor.fetchone()[0]
                plan = json.loads(plan) if isinstance(plan, str) else plan
                total += _plan_rows(plan[0]["Plan"])
        finally:
            cursor.execute("RESET enable_nestloop")
    return total


def _get(client: Client, url: str) -> tuple[int, list[tuple[str, Any]]]:
    with _recording() as statements:
        response = client.get(url)
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)
    assert response.status_code == 200, (url, response.status_code)
    return len(statements), statements


def _client(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


# (role, URL name, whether the URL takes the study's slug)
PAGES = [
    ("ann_a", "home", False),
    ("ann_a", "annotate-start", True),
    ("ann_a", "api-studies", False),
    ("ann_a", "api-assignments", True),
    ("adj", "home", False),
    ("adj", "adjudication-queue", True),
    ("res", "home", False),
    ("res", "api-studies", False),
    ("res", "study-detail", True),
    ("res", "study-people", True),
    ("res", "study-outcomes", True),
    ("res", "study-partitions", True),
    ("res", "study-releases", True),
    ("res", "study-reliability", True),
    ("res", "api-releases", True),
    ("res", "api-study-partitions", True),
    ("res", "study-quality", True),
    ("res", "api-quality", True),
    ("res", "api-gold", True),
]


def _url(world: World, name: str, with_slug: bool) -> str:
    return reverse(name, kwargs={"slug": world.study.slug} if with_slug else None)


def _admin_changelists() -> list[str]:
    return sorted(
        f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"
        for model in admin.site._registry
    )


def _measure(world: World, targets: list[tuple[Any, str]]) -> list[tuple[int, float]]:
    """Queries and (on PostgreSQL) rows produced, per (user, URL). The tables are
    analyzed first, as autovacuum keeps them in a deployment: on tables the planner knows
    nothing of, it may choose a nested loop that rescans a tiny table per row, and the
    count of rows produced then measures that guess rather than the query's shape."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    figures = []
    for user, url in targets:
        count, statements = _get(_client(user), url)
        produced = _rows_produced(statements) if connection.vendor == "postgresql" else 0.0
        figures.append((count, produced))
    return figures


def test_every_list_reads_the_study_in_a_fixed_number_of_queries(world):
    """One study, measured, grown (more observations, tuples, labels, adjudications) and
    measured again: every list page, list endpoint and admin changelist at once."""
    targets = [(world.people[role], _url(world, name, slug)) for role, name, slug in PAGES]
    targets += [(world.admin, reverse(name)) for name in _admin_changelists()]
    before = _measure(world, targets)
    _grow(world, observations=12, labelled_units=6)
    after = _measure(world, targets)
    stored = _stored_rows()

    problems = []
    for (_, url), (count_before, _), (count, produced) in zip(targets, before, after, strict=True):
        if count > MAX_QUERIES:
            problems.append(f"{url}: {count} queries (at most {MAX_QUERIES})")
        if count != count_before:
            problems.append(f"{url}: {count_before} queries, then {count} after the study grew")
        if produced > ROWS_PER_STORED_ROW * stored:
            problems.append(f"{url}: the plans produced {produced:.0f} rows for {stored} stored")
    assert not problems, "\n".join(problems)


QUALITY_PAGES = [("res", "study-quality"), ("res", "api-quality"), ("res", "api-gold")]


def test_a_large_studys_quality_page_reads_stored_counts_in_a_fixed_number_of_queries(
    world, settings
):
    """Above QUALITY_INLINE_LABELS the quality page and API read the agreement a worker
    counted (annotator.quality.services.quality_summary_refresh): the same number of
    queries before and after the study grew, counted or behind."""
    from annotator.quality.reports import quality_shown
    from annotator.quality.services import quality_summary_refresh

    settings.QUALITY_INLINE_LABELS = 1
    targets = [(world.people[role], _url(world, name, True)) for role, name in QUALITY_PAGES]
    assert quality_summary_refresh(study=world.study) == "counted"
    before = _measure(world, targets)
    _grow(world, observations=12, labelled_units=6)
    assert quality_shown(study=world.study).stale
    behind = _measure(world, targets)
    assert quality_summary_refresh(study=world.study) == "counted"
    after = _measure(world, targets)
    stored = _stored_rows()

    for (_, url), first, second, third in zip(targets, before, behind, after, strict=True):
        assert first[0] == second[0] == third[0] <= MAX_QUERIES, (url, first, second, third)
        assert third[1] <= ROWS_PER_STORED_ROW * stored, (url, third[1], stored)


@pytest.mark.postgres
def test_a_count_over_two_joined_child_tables_is_caught(world):
    """The old shape of ``studies_with_counts``: the rows budget must refuse it."""
    from django.db.models import Count

    _grow(world, observations=40, labelled_units=0)
    with _recording() as statements:
        list(
            Study.objects.annotate(
                tuple_count=Count("tuples", distinct=True),
                observation_count=Count("observations", distinct=True),
            )
        )
    assert _rows_produced(statements) > ROWS_PER_STORED_ROW * _stored_rows()


@pytest.mark.postgres
def test_an_unfiltered_changelist_of_a_large_table_counts_from_statistics(world, monkeypatch):
    """Snapshots hold whole pages of text: counting every row of the table for the
    admin's paginator read it all. Above ESTIMATE_ABOVE rows the count is PostgreSQL's
    estimate; a filtered list is still counted exactly."""
    from audit.archive import admin as archive_admin

    monkeypatch.setattr(archive_admin, "ESTIMATE_ABOVE", 3)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE audit_unit")
    client = _client(world.admin)

    _, statements = _get(client, reverse("admin:audit_unit_changelist"))
    whole_counts = [
        sql for sql, _ in statements if "COUNT(" in sql.upper() and "WHERE" not in sql.upper()
    ]
    assert whole_counts == []
    _, statements = _get(client, reverse("admin:audit_unit_changelist") + "?state__exact=open")
    assert any("COUNT(" in sql.upper() for sql, _ in statements)


#: What a request for a large setting's comparison page or CSV runs: the session and its
#: user, the study and the researcher's roles (twice), the stored setting, its studies
#: with their marks, the stored comparison.
COMPARISON_QUERIES = 8


def test_a_large_settings_comparison_reads_stored_rows_in_a_fixed_number_of_queries(
    db, settings, django_assert_num_queries
):
    """Above COMPARISON_INLINE_UNITS the comparison page and its CSV read the setting and
    the comparison a worker stored (metrics.services.comparisons_refresh): the same
    number of queries when current, one more when behind (the pair is asked for again),
    whatever the number of labels; on PostgreSQL no plan reads rows in proportion to the
    setting."""
    from fixtures.demo import protocol
    from metrics import protocol_selectors as ps
    from metrics.jobs import study_comparison_refresh
    from tests.metrics.test_protocol_selectors import (
        label_setting,
        pipeline_id,
        units_of,
        write_final,
    )

    settings.COMPARISON_INLINE_UNITS = 3
    documents = make_study("docs", "query-document-grades-1.0.0", "protocol-documents.jsonl")
    rubric = make_study("rubric", "answer-rubric-1.0.0", "protocol-rubric.jsonl")
    pairs = make_study("pairs", "pairwise-1.0.0", "protocol-pairs.jsonl")
    label_setting(documents, rubric, pairs)
    client = _client(add_people(pairs)["res"])
    evaluated, baseline = pipeline_id(protocol.EVALUATED), pipeline_id(protocol.BASELINE)
    pair = f"?evaluated={evaluated}&baseline={baseline}"
    urls = [
        reverse("study-comparison", args=["pairs"]) + pair,
        reverse("study-comparison-csv", args=["pairs"]) + pair,
    ]
    assert study_comparison_refresh.run(pairs.pk) == {"computed": 1, "current": 0}
    for url in urls:
        client.get(url)  # the setting was stored by the job: nothing left to warm but caches
        with django_assert_num_queries(COMPARISON_QUERIES):
            assert client.get(url).status_code == 200

    for unit in units_of(rubric, protocol.BASELINE)[:6]:  # behind: newer labels
        write_final(unit, {"values": dict.fromkeys(protocol.RUBRIC_FIELDS, 2)})
    for url in urls:
        with django_assert_num_queries(COMPARISON_QUERIES + 1):
            assert client.get(url).status_code == 200
    assert ps.comparison_shown(ps.protocol_setting(pairs), evaluated, baseline).stale

    assert study_comparison_refresh.run(pairs.pk) == {"computed": 1, "current": 0}
    stored = _stored_rows()
    for url in urls:
        with django_assert_num_queries(COMPARISON_QUERIES):
            _, statements = _get(client, url)
        if connection.vendor == "postgresql":
            assert _rows_produced(statements) <= ROWS_PER_STORED_ROW * stored
