"""Every page and endpoint of the site at 10⁵ tuples: p50, p95 and queries per URL and role.

    DATABASE_URL=postgres://... python bench/pages.py [--tuples 100000] [--labelled 20000]
        [--repeat 20] [--reuse] [--only TEXT] [--write]

Builds a study of the demo's tuple codebook of ``--tuples`` tuples (imported through the import
service) in its own database (``claimgate_bench_pages_<tuples>``, never DATABASE_URL's), with the
people of a research group: six annotators, two adjudicators, a researcher and an admin.
The first ``--labelled`` units (by id, written in bulk, not through the queue) carry two
independent labels each, about 10% disputed and three quarters of those adjudicated, the
others agreed with their consensus record; every label has its assignment and its ledger
entry, all written in bulk but exactly as the services write them (records built and
sealed by ``audit.records``, checked by the record contract, outcomes hash-chained as
``audit.ledger`` chains them). Units are partitioned by a share rule (the partition
service), the gate is recomputed, the reliability report computed and a release built,
then each annotator takes the next unit from the queue (``assignment_next``) and saves a
draft. Tables are vacuumed and analyzed, as autovacuum would leave them.

Then every URL pattern of the site — enumerated from the resolver, as the blinding walk
(tests/test_blinding.py) enumerates them, so a new page is never silently left out — is
requested with GET as each role (annotator, adjudicator, researcher, admin), with
Django's test client in this process (``force_login``): one warm-up request whose SQL
statements are counted (``connection.execute_wrapper``), then ``--repeat`` timed requests (a
streamed body is read to its end). A route whose parameter cannot be filled fails the run.

``--reuse`` keeps the database after the run and, when it already holds the study, uses
it as it is (after applying any new migration) instead of building it again.
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

TARGET_MS = 300.0
TEST_DB = "claimgate_bench_pages"  # + _<tuples>
SLUG = "pages"
RELEASE = "v1"
ROLES = ("annotator", "adjudicator", "researcher", "admin")
ANNOTATORS = 6
DOMAINS = 24
FAMILIES = 400
TEMPLATES = 12
DISPUTED_SHARE = 0.10
ADJUDICATED_SHARE = 0.75
REVISED_SHARE = 0.02

# Routes measured with a query string (what the page itself links to).
QUERY_STRINGS = {
    "studies/<slug:study_slug>/releases/<slug:slug>/download/": "?file=SHA256SUMS",
    "api/studies/<slug:study_slug>/releases/<slug:slug>/file/": "?name=SHA256SUMS",
}
# Why a route stays over the target, where it is known (printed beside the figures).
NOTES = {
    "healthz": "waits for workers' replies to a Celery ping (1 s timeout) whatever the "
    "study's size; no worker ran during the walk (503)",
}
# Routes not requested, each with its reason. Every other route is requested with GET.
SKIPPED = {
    "static/": "static files: served by whitenoise/the web server, no study data",
    "media/": "no uploads are served",
    "accounts/logout/": "would end the session in the middle of the walk (POST only)",
    "admin/logout/": "would end the session in the middle of the walk",
}


# --- the study ---------------------------------------------------------------------------


def build_file(tuples: int) -> bytes:
    """``tuples`` tuples (two sources per answer) spread over domains, target families
    and query templates, so that partitions, groups and filters have something to do."""
    import json

    from tests.archive.builders import HEADER, observation, reseal

    lines = [json.dumps(HEADER)]
    for n in range(tuples // 2):
        item = observation(n, sources=2)
        query = item["query"]
        query["id"] = f"q-{n:06d}"
        query["domain"] = f"domain-{n % DOMAINS:02d}"
        query["target"] = {"name": f"Target {n % FAMILIES}", "family": f"family-{n % FAMILIES}"}
        query["template_id"] = f"template-{n % TEMPLATES}"
        lines.append(json.dumps(reseal(item), ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


@dataclass
class People:
    annotators: list[Any]
    adjudicators: list[Any]
    researcher: Any
    admin: Any

    def user(self, role: str) -> Any:
        return {
            "annotator": self.annotators[0],
            "adjudicator": self.adjudicators[0],
            "researcher": self.researcher,
            "admin": self.admin,
        }[role]


def _people(study: Any) -> People:
    from django.contrib.auth import get_user_model

    from annotator.memberships.models import Role
    from annotator.memberships.services import membership_add

    model = get_user_model()

    def user(name: str, **extra: Any) -> Any:
        person = model.objects.create(username=name, **extra)
        person.set_password("bench")
        person.save()
        return person

    people = People(
        annotators=[user(f"annotator{n}") for n in range(1, ANNOTATORS + 1)],
        adjudicators=[user("adjudicator1"), user("adjudicator2")],
        researcher=user("researcher"),
        admin=user("admin", is_staff=True, is_superuser=True),
    )
    for person in people.annotators:
        membership_add(study=study, user=person, role=Role.ANNOTATOR)
    for person in people.adjudicators:
        membership_add(study=study, user=person, role=Role.ADJUDICATOR)
    membership_add(study=study, user=people.researcher, role=Role.RESEARCHER)
    return people


def _values(rng: random.Random) -> tuple[int | None, ...]:
    return tuple(None if rng.random() < 0.04 else rng.randint(0, 1) for _ in "IAMD")


def _annotation(
    study: Any, content: Any, values: tuple, pseudonym: str, kind: str, rng: random.Random
) -> dict[str, Any]:
    """What ``label_submit`` stores for a form's input (same function, same shape)."""
    from annotator.labelling.services import _annotation_from_input
    from audit.management.commands.load_demo import demo_annotation

    predicates = dict(zip("IAMD", values, strict=True))
    data = demo_annotation(content, 0, "affiliate_marketing", predicates=predicates)
    data["evidence"] = {key: round(rng.random(), 2) for key in ("d_Q", "d_R", "d_P", "d_S")}
    return _annotation_from_input(study=study, data=data, pseudonym=pseudonym, kind=kind)


class _Ledger:
    """Outcomes appended in bulk, chained exactly as ``audit.ledger.ledger_append``
    chains them (same fields, same entry hash), the head row updated at the end."""

    def __init__(self, study: Any) -> None:
        from audit.contract.ledger import GENESIS
        from audit.ledger.models import LedgerHead

        head, _ = LedgerHead.objects.get_or_create(pk=1, defaults={"seq": 0, "entry_hash": GENESIS})
        self.study = study
        self.seq = head.seq
        self.prev = head.entry_hash
        self.rows: list[tuple] = []
        self.priorities: dict[str, float | None] = {}

    def append(self, *, unit_id: int, unit_digest: str, result: Any, kind: str) -> None:
        from django.utils import timezone

        from audit.archive.mapping import format_instant
        from audit.contract import CHECKER_VERSION
        from audit.contract.ledger import entry_hash

        assert result.ok, (result.reason, result.message)
        self.seq += 1
        fields = {
            "seq": self.seq,
            "study": self.study.slug,
            "unit_digest": unit_digest,
            "record_digest": result.record_digest,
            "kind": kind,
            "codebook": f"{self.study.codebook.name} {self.study.codebook.version}",
            "checker_version": CHECKER_VERSION,
            "stage": None,
            "ok": result.ok,
            "reason": result.reason,
            "endpoint": result.endpoint,
            "short_circuit": result.short_circuit,
            "priority": result.priority,
            "action": result.action,
            "recorded_at": format_instant(timezone.now()),
            "prev_hash": self.prev,
        }
        fields["entry_hash"] = self.prev = entry_hash(fields)
        self.priorities[result.record_digest] = result.priority
        self.rows.append(
            (
                fields["seq"],
                self.study.pk,
                self.study.slug,
                unit_id,
                unit_digest,
                fields["record_digest"],
                kind,
                fields["codebook"],
                fields["checker_version"],
                None,
                True,
                None,
                fields["endpoint"],
                fields["short_circuit"],
                fields["priority"],
                fields["action"],
                fields["recorded_at"],
                fields["prev_hash"],
                fields["entry_hash"],
            )
        )

    def flush(self) -> None:
        from audit.archive import bulk
        from audit.ledger.models import LedgerEntry, LedgerHead

        columns = (
            "seq",
            "study_id",
            "study_slug",
            "unit_id",
            "unit_digest",
            "record_digest",
            "kind",
            "codebook",
            "checker_version",
            "stage",
            "ok",
            "reason",
            "endpoint",
            "short_circuit",
            "priority",
            "action",
            "recorded_at",
            "prev_hash",
            "entry_hash",
        )
        bulk.insert_rows(LedgerEntry, columns, self.rows, returning=None)
        self.rows = []
        LedgerHead.objects.filter(pk=1).update(seq=self.seq, entry_hash=self.prev)


LABEL_COLUMNS = (
    "study_id",
    "unit_id",
    "annotator_id",
    "assignment_id",
    "kind",
    "revision",
    "annotation",
    "parents",
    "record_digest",
    "codebook_digest",
    "client_submission_id",
    "assisted_model",
    "created_at",
)


def _insert_labels(study: Any, rows: list[tuple]) -> None:
    from annotator.labelling.models import Label
    from audit.archive import bulk

    dicts = [dict(zip(LABEL_COLUMNS, row, strict=True)) for row in rows]
    bulk.insert(Label, dicts, returning="record_digest", study_id=study.pk)


def _label_units(study: Any, people: People, labelled: int, rng: random.Random) -> dict[str, int]:
    """Two independent labels on each of the first ``labelled`` units, with what the
    submit, outcome, consensus and adjudication services write after them."""
    from types import SimpleNamespace

    from django.db import connection
    from django.utils import timezone

    from annotator.adjudication.services import consensus_annotation, labels_agree
    from annotator.labelling.models import Assignment, LabelKind
    from annotator.memberships.services import pseudonym_of
    from audit.archive.models import Unit, UnitState
    from audit.archive.records import UNIT_VALUES, record_build, unit_contents_of
    from audit.archive.selectors import codebook_registry
    from audit.contract import check_record
    from audit.releases.services import CHUNK, _batches

    registry = codebook_registry()
    ledger = _Ledger(study)
    pseudonyms = {p.pk: pseudonym_of(study=study, user=p) for p in people.annotators}
    pseudonyms.update({p.pk: pseudonym_of(study=study, user=p) for p in people.adjudicators})
    digest = study.codebook.digest
    now = timezone.now()
    units = (
        Unit.objects.filter(study=study)
        .order_by("id")
        .values(*UNIT_VALUES)[:labelled]
        .iterator(chunk_size=CHUNK)
    )
    counts = {"independent": 0, "consensus": 0, "adjudicated": 0, "disputed": 0}
    unit_updates: list[tuple[int, str, float | None]] = []
    adjudications: list[tuple[int, str, Any, list[Any]]] = []
    serial = 0
    # Each annotator's own item numbers, 1, 2, 3 … across every chunk.
    numbers = {p.pk: itertools.count(1) for p in people.annotators}
    for chunk in _batches(units, CHUNK):
        contents = unit_contents_of(study=study, units=chunk)
        digests = {row["id"]: row["digest"] for row in chunk}
        pairs = {}
        for unit_id in contents:
            first = serial % ANNOTATORS
            pairs[unit_id] = (
                people.annotators[first],
                people.annotators[
                    (first + 1 + serial // ANNOTATORS % (ANNOTATORS - 1)) % ANNOTATORS
                ],
            )
            serial += 1
        Assignment.objects.bulk_create(
            [
                Assignment(
                    study=study,
                    unit_id=unit_id,
                    annotator=person,
                    number=next(numbers[person.pk]),
                    submitted_at=now,
                )
                for unit_id, pair in pairs.items()
                for person in pair
            ]
        )
        assignment_ids = dict(
            (((unit_id, annotator_id), pk))
            for unit_id, annotator_id, pk in Assignment.objects.filter(
                unit_id__in=list(pairs)
            ).values_list("unit_id", "annotator_id", "id")
        )
        rows: list[tuple] = []
        for unit_id, content in contents.items():
            base = _values(rng)
            disputed = rng.random() < DISPUTED_SHARE
            heads = []
            for position, person in enumerate(pairs[unit_id]):
                values = base
                if disputed and position == 1:
                    values = (*base[:3], 1 - (base[3] or 0))
                annotation = _annotation(
                    study, content, values, pseudonyms[person.pk], LabelKind.INDEPENDENT, rng
                )
                revisions = 2 if rng.random() < REVISED_SHARE else 1
                parents: list[str] = []
                for revision in range(1, revisions + 1):
                    if revision > 1:
                        annotation = {**annotation, "rationale": "second look"}
                    record = record_build(
                        study=study, content=content, annotation=annotation, parents=parents
                    )
                    result = check_record(record, registry)
                    ledger.append(
                        unit_id=unit_id,
                        unit_digest=digests[unit_id],
                        result=result,
                        kind=LabelKind.INDEPENDENT,
                    )
                    rows.append(
                        (
                            study.pk,
                            unit_id,
                            person.pk,
                            assignment_ids[(unit_id, person.pk)],
                            LabelKind.INDEPENDENT.value,
                            revision,
                            record["annotation"],
                            record["parents"],
                            record["record_digest"],
                            digest,
                            uuid.uuid4(),
                            None,
                            now,
                        )
                    )
                    counts["independent"] += 1
                    parents = [record["record_digest"]]
                heads.append(SimpleNamespace(annotation=record["annotation"], digest=parents[0]))
            parent_digests = sorted(h.digest for h in heads)
            priorities = [ledger.priorities[d] for d in parent_digests]
            known = [p for p in priorities if p is not None]
            priority = statistics.fmean(known) if known else None
            if labels_agree([h.annotation for h in heads], study.codebook.unit):
                state = UnitState.AGREED
                annotation = consensus_annotation(study=study, heads=heads)
                record = record_build(
                    study=study, content=content, annotation=annotation, parents=parent_digests
                )
                result = check_record(record, registry)
                ledger.append(
                    unit_id=unit_id,
                    unit_digest=digests[unit_id],
                    result=result,
                    kind=LabelKind.CONSENSUS,
                )
                rows.append(
                    (
                        study.pk,
                        unit_id,
                        None,
                        None,
                        LabelKind.CONSENSUS.value,
                        1,
                        record["annotation"],
                        parent_digests,
                        record["record_digest"],
                        digest,
                        None,
                        None,
                        now,
                    )
                )
                counts["consensus"] += 1
            else:
                state = UnitState.DISPUTED
                counts["disputed"] += 1
                if rng.random() < ADJUDICATED_SHARE:
                    adjudications.append((unit_id, digests[unit_id], content, heads))
            unit_updates.append((unit_id, state, priority))
        _insert_labels(study, rows)
        ledger.flush()

    # Adjudications come after the labelling (as they would), by both adjudicators.
    rows = []
    for n, (unit_id, unit_digest, content, heads) in enumerate(adjudications):
        adjudicator = people.adjudicators[n % 2]
        final = {
            **{k: v for k, v in heads[0].annotation.items() if k not in ("kind", "annotator")},
            "kind": LabelKind.ADJUDICATED.value,
            "annotator": pseudonyms[adjudicator.pk],
            "rationale": "The source's commission notice decides D.",
        }
        parents = sorted(h.digest for h in heads)
        record = record_build(study=study, content=content, annotation=final, parents=parents)
        result = check_record(record, registry)
        ledger.append(
            unit_id=unit_id, unit_digest=unit_digest, result=result, kind=LabelKind.ADJUDICATED
        )
        rows.append(
            (
                study.pk,
                unit_id,
                adjudicator.pk,
                None,
                LabelKind.ADJUDICATED.value,
                1,
                record["annotation"],
                parents,
                record["record_digest"],
                digest,
                uuid.uuid4(),
                None,
                now,
            )
        )
        counts["adjudicated"] += 1
    adjudicated = {unit_id for unit_id, *_ in adjudications}
    _insert_labels(study, rows)
    ledger.flush()
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE audit_unit u SET state = v.state, priority = v.priority, "
            "assigned_count = 2, submitted_count = 2 "
            "FROM unnest(%s::bigint[], %s::text[], %s::float8[]) AS v(id, state, priority) "
            "WHERE u.id = v.id",
            [
                [u for u, _, _ in unit_updates],
                [UnitState.ADJUDICATED if u in adjudicated else s for u, s, _ in unit_updates],
                [p for _, _, p in unit_updates],
            ],
        )
    return counts


def build(args: argparse.Namespace) -> dict[str, Any]:
    """The study, its people, labels, partitions, gate, report and release."""
    from django.conf import settings
    from django.db import connection

    from annotator.labelling.services import assignment_next, draft_save
    from audit.archive.models import Study
    from audit.archive.services import codebook_install_file, observations_import
    from audit.ledger.services import gate_recompute
    from audit.management.commands.load_demo import demo_files
    from audit.partitions.rules import ShareRule
    from audit.partitions.services import partition_rule_apply
    from audit.releases.services import release_build
    from metrics.services import report_compute

    rng = random.Random(16)
    timings: dict[str, float] = {}
    started = time.perf_counter()
    codebooks = {
        path.stem: codebook_install_file(path=path)[0]
        for path in sorted((ROOT / "fixtures" / "codebooks").glob("*.json"))
    }
    # Two small demo studies beside the big one: lists show more than one row.
    for unit in ("tuple", "answer"):
        codebook_file, path = demo_files(unit)
        small = Study.objects.create(
            slug=f"demo-{path.stem}", title=path.stem, codebook=codebooks[codebook_file.stem]
        )
        observations_import(study=small, data=path.read_bytes(), file_name=path.name)
    study = Study.objects.create(
        slug=SLUG,
        title="Pages at 10^5 tuples",
        codebook=codebooks[demo_files("tuple")[0].stem],
    )
    data = build_file(args.tuples)
    settings.IMPORT_MAX_FILE_BYTES = max(settings.IMPORT_MAX_FILE_BYTES, len(data))
    batch = observations_import(study=study, data=data, file_name="observations.jsonl")
    assert batch.tuples_created == args.tuples, (batch.status, batch.errors[:3])
    del data
    timings["import"] = time.perf_counter() - started
    study = Study.objects.select_related("codebook").get(pk=study.pk)
    people = _people(study)

    started = time.perf_counter()
    counts = _label_units(study, people, args.labelled, rng)
    timings["labels"] = time.perf_counter() - started
    _vacuum(connection)

    started = time.perf_counter()
    partition_rule_apply(study=study, rule=ShareRule(field="domain", share=0.25, seed="bench"))
    gate_recompute(study=study)
    report = report_compute(study=study)
    assert report.status == "done", report.error
    timings["partitions, gate, report"] = time.perf_counter() - started
    started = time.perf_counter()
    release = release_build(study=study, name=RELEASE, user=people.researcher)
    assert release.status == "ready", release.error
    timings["release"] = time.perf_counter() - started
    started = time.perf_counter()
    for person in people.annotators:
        assignment = assignment_next(study=study, annotator=person)
        draft_save(assignment=assignment, payload={"note": "half done"}, base_version=None)
    timings["queue (6 annotators, assignment_next)"] = time.perf_counter() - started
    _admin_rows(people)
    _vacuum(connection)
    return {"counts": counts, "timings": timings}


def _admin_rows(people: People) -> None:
    """A row for each admin changelist that would otherwise be empty: a group, the
    researcher's API token, login records."""
    from axes.models import AccessAttempt, AccessFailureLog, AccessLog
    from django.contrib.auth.models import Group
    from rest_framework.authtoken.models import Token

    Group.objects.create(name="researchers").user_set.add(people.researcher)
    Token.objects.create(user=people.researcher)
    seen = {
        "user_agent": "bench",
        "ip_address": "127.0.0.1",
        "username": people.annotators[0].username,
        "http_accept": "text/html",
        "path_info": "/accounts/login/",
    }
    AccessLog.objects.create(**seen)
    AccessFailureLog.objects.create(**seen)
    AccessAttempt.objects.create(**seen, get_data="", post_data="", failures_since_start=1)


def _vacuum(connection: Any) -> None:
    """As autovacuum leaves tables written minutes earlier: hint bits and statistics."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for table in (
            "annotator_label",
            "annotator_assignment",
            "audit_unit",
            "audit_tuple",
            "audit_observation",
            "audit_ledgerentry",
            "audit_sourcesnapshot",
            "audit_answersnapshot",
            "audit_query",
        ):
            cursor.execute(f"VACUUM ANALYZE {table}")


# --- the walk ----------------------------------------------------------------------------


@dataclass
class Values:
    """A value for every path parameter, per role (the objects that role works on)."""

    by_role: dict[str, dict[str, str]]
    admin_objects: dict[str, str]  # "app/model" -> an object id in the middle of the table
    skipped: dict[str, str] = field(default_factory=dict)


def values(study: Any, people: People) -> Values:
    from django.contrib import admin
    from django.contrib.contenttypes.models import ContentType

    from annotator.labelling.models import Assignment, Label, LabelKind
    from audit.archive.models import ImportBatch, Unit, UnitState

    by_role = {}
    disputed = Unit.objects.filter(study=study, state=UnitState.DISPUTED).order_by("id").last()
    adjudicated = (
        Label.objects.filter(study=study, kind=LabelKind.ADJUDICATED).order_by("id").last()
    )
    batch = ImportBatch.objects.filter(study=study).order_by("id").last()
    for role in ROLES:
        user = people.user(role)
        assignment = (
            Assignment.objects.filter(study=study, annotator=user).order_by("-id").first()
            or Assignment.objects.filter(study=study, annotator=people.annotators[0])
            .order_by("-id")
            .first()
        )
        by_role[role] = {
            "slug": study.slug,
            "study_slug": study.slug,
            "release": RELEASE,
            "batch_id": str(batch.pk),
            "assignment_id": str(assignment.pk),
            "pk": str(assignment.pk),
            "prediction_set_id": "1",  # a study without predictions answers 404 quickly
            "unit_id": str(disputed.pk),
            "digest": adjudicated.record_digest,
            "id": str(user.pk),
            "user_id": str(people.annotators[0].pk),  # the quality page's pause button
            "content_type_id": str(ContentType.objects.get_for_model(study).pk),
            "object_id": str(study.pk),
            "app_label": "audit",
            "url": "no-such-page/",  # the admin's catch-all
        }
    admin_objects = {}
    for model in admin.site._registry:
        label = f"{model._meta.app_label}/{model._meta.model_name}"
        rows = model._default_manager.order_by("pk")
        count = rows.count()
        # The instance's pk, not the column's: a proxy may name its objects otherwise
        # (the API token admin opens a token by its user's id).
        admin_objects[label] = str(rows[count // 2].pk) if count else ""
    admin_objects["audit/study"] = str(study.pk)  # the big one, not a demo study
    return Values(by_role=by_role, admin_objects=admin_objects)


def routes() -> list[str]:
    from tests.test_blinding import all_routes

    return [route.route for route in all_routes()]


def skip_reason(route: str) -> str | None:
    for prefix, reason in SKIPPED.items():
        if route == prefix or (prefix.endswith("/") and route.startswith(prefix)):
            return reason
    return None


def fill(route: str, role: str, given: Values) -> str:
    """The path to request for ``route`` as ``role``; LookupError for an unknown parameter."""
    import re

    table = given.by_role[role]
    pieces = re.split(r"<(?:\w+:)?(\w+)>", route)
    out = pieces[0]
    for index in range(1, len(pieces), 2):
        name = pieces[index]
        before = pieces[index - 1]
        if name == "slug" and before.endswith("/releases/"):
            value = table["release"]
        elif (
            name == "object_id" and route.startswith("admin/") and not route.startswith("admin/r/")
        ):
            app, model = route.split("/")[1:3]
            value = given.admin_objects.get(f"{app}/{model}", "")
            if not value:
                raise LookupError(f"{route}: no {app}.{model} row to open")
        elif name in table:
            value = table[name]
        else:
            raise LookupError(f"{route}: no value for path parameter <{name}>")
        out += value + pieces[index + 1]
    return "/" + out + QUERY_STRINGS.get(route, "")


@dataclass
class Figure:
    route: str
    role: str
    path: str
    status: int
    queries: int
    times_ms: list[float]

    @property
    def p50(self) -> float:
        return statistics.median(self.times_ms)

    @property
    def p95(self) -> float:
        ordered = sorted(self.times_ms)
        return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def _request(client: Any, path: str) -> int:
    response = client.get(path)
    if getattr(response, "streaming", False):
        for _ in response.streaming_content:
            pass
        response.close()
    return response.status_code


def walk(people: People, given: Values, repeat: int, only: str | None) -> Iterator[Figure]:
    import logging

    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections, connection
    from django.test import Client

    # One connection for the whole walk, as a server's persistent connections (CONN_MAX_AGE)
    # keep it; refusals (403, 404) are logged by the site and would drown the figures.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    logging.disable(logging.CRITICAL)
    clients = {}
    for role in ROLES:
        clients[role] = Client(raise_request_exception=False)
        clients[role].force_login(people.user(role))
    for route in routes():
        if skip_reason(route) or (only and only not in route):
            continue
        for role in ROLES:
            path = fill(route, role, given)
            client = clients[role]
            queries: list[str] = []

            def count(execute: Any, sql: str, *rest: Any, queries: list[str] = queries) -> Any:
                queries.append(sql)
                return execute(sql, *rest)

            with connection.execute_wrapper(count):
                status = _request(client, path)
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                _request(client, path)
                times.append((time.perf_counter() - started) * 1000)
            yield Figure(route, role, path, status, len(queries), times)


QUEUE_ROUTE = "api/studies/<slug:slug>/assignments/next/"


def queue_probe(study: Any, people: People, repeat: int) -> Figure:
    """The queue's slow path, which no GET reaches: POST …/assignments/next/ as an
    annotator with nothing open (a new unit is handed out), rolled back after each request."""
    from django.db import connection, transaction
    from django.test import Client
    from django.utils import timezone

    from annotator.labelling.models import Assignment

    annotator = people.annotators[0]
    client = Client()
    client.force_login(annotator)
    path = f"/api/studies/{study.slug}/assignments/next/"
    times: list[float] = []
    queries: list[str] = []
    status = 0
    for n in range(repeat + 1):
        with transaction.atomic():
            Assignment.objects.filter(
                study=study, annotator=annotator, submitted_at__isnull=True
            ).update(submitted_at=timezone.now())
            started = time.perf_counter()
            if n == 0:

                def count(execute: Any, sql: str, *rest: Any) -> Any:
                    queries.append(sql)
                    return execute(sql, *rest)

                with connection.execute_wrapper(count):
                    status = client.post(path).status_code
            else:
                client.post(path)
                times.append((time.perf_counter() - started) * 1000)
            transaction.set_rollback(True)
    return Figure(QUEUE_ROUTE + " (POST, new unit)", "annotator", path, status, len(queries), times)


def _shown(route: str) -> str:
    return route or "/"  # the home page's pattern is the empty string


def _table(figures: list[Figure]) -> list[str]:
    lines = [
        "| URL pattern | role | status | p50 ms | p95 ms | queries |",
        "|---|---|---|---:|---:|---:|",
    ]
    for f in figures:
        lines.append(
            f"| `{_shown(f.route)}` | {f.role} | {f.status} | {f.p50:,.0f} | {f.p95:,.0f} "
            f"| {f.queries} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=int, default=100_000)
    parser.add_argument("--labelled", type=int, default=20_000, help="units with 2 labels")
    parser.add_argument("--repeat", type=int, default=20, help="timed requests per URL and role")
    parser.add_argument("--reuse", action="store_true", help="keep the database and reuse it")
    parser.add_argument("--only", help="only routes containing this text")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)

    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test.utils import setup_test_environment

    from audit.archive.models import Study
    from audit.releases.models import Release

    setup_test_environment()
    settings.ALLOWED_HOSTS = ["testserver"]
    name = f"{TEST_DB}_{args.tuples}"
    settings.RELEASES_ROOT = Path(tempfile.gettempdir()) / f"{name}-releases"
    connection.settings_dict.setdefault("TEST", {})["NAME"] = name
    old_name = connection.creation.create_test_db(
        verbosity=0, autoclobber=True, serialize=False, keepdb=args.reuse
    )
    built: dict[str, Any] | None = None
    try:
        study = Study.objects.filter(slug=SLUG).select_related("codebook").first()
        ready = study is not None and Release.objects.filter(study=study, status="ready").exists()
        if not ready:
            if study is not None:  # a half-built study from an interrupted run
                connection.close()
                connection.creation.destroy_test_db(old_name, verbosity=0, keepdb=False)
                old_name = connection.creation.create_test_db(
                    verbosity=0, autoclobber=True, serialize=False
                )
            import shutil

            shutil.rmtree(settings.RELEASES_ROOT, ignore_errors=True)
            built = build(args)
            study = Study.objects.select_related("codebook").get(slug=SLUG)
            print("built:", built, flush=True)
        users = get_user_model().objects
        people = People(
            annotators=list(users.filter(username__startswith="annotator").order_by("username")),
            adjudicators=list(
                users.filter(username__startswith="adjudicator").order_by("username")
            ),
            researcher=users.get(username="researcher"),
            admin=users.get(username="admin"),
        )
        # What the workers would have done before anyone opens a page: a large study's
        # outcome and agreement counts, and a report that stores its labels mark (a
        # database built by an earlier version of this script has none of them).
        from annotator.quality.services import quality_summary_refresh
        from audit.ledger.services import outcomes_summary_refresh
        from metrics.models import StudyReport
        from metrics.services import report_compute

        outcomes_summary_refresh(study=study)
        quality_summary_refresh(study=study)
        if not StudyReport.objects.filter(study=study, status="done").exclude(labels_mark=""):
            report_compute(study=study)
        tuples = study.tuples.count()
        given = values(study, people)
        with connection.cursor() as cursor:
            cursor.execute("SELECT version()")
            server = cursor.fetchone()[0].split(" on ")[0]
        figures = []
        for figure in walk(people, given, args.repeat, args.only):
            figures.append(figure)
            print(
                f"{figure.p95:9.1f} ms p95 {figure.p50:9.1f} ms p50 {figure.queries:4d} q "
                f"{figure.status} {figure.role:11s} {figure.path}",
                flush=True,
            )
        if not args.only or args.only in QUEUE_ROUTE:
            figure = queue_probe(study, people, args.repeat)
            figures.append(figure)
            print(
                f"{figure.p95:9.1f} ms p95 {figure.p50:9.1f} ms p50 {figure.queries:4d} q "
                f"{figure.status} POST {figure.path}",
                flush=True,
            )
        load = os.getloadavg()
    finally:
        connection.close()
        if not args.reuse:
            connection.creation.destroy_test_db(old_name, verbosity=0)

    figures.sort(key=lambda f: f.p95, reverse=True)
    over = [f for f in figures if f.p95 >= TARGET_MS]
    routes_measured = len({f.route for f in figures})
    skipped = {route: reason for route in routes() if (reason := skip_reason(route))}
    summary = [
        f"- {tuples:,} tuples in study `{SLUG}` ({server}); {args.labelled:,} units "
        "with 2 independent labels each (about 10% disputed, three quarters of those "
        "adjudicated, the rest agreed with a consensus record), every label with its "
        "ledger entry; partitions, gate, reliability report and a release; 6 annotators "
        "with an open assignment and a draft",
        f"- {routes_measured} URL patterns × {len(ROLES)} roles, {len(figures)} measurements "
        "(one of them the queue's POST that hands out a new unit, which no GET reaches), "
        f"each {args.repeat} times after a warm-up (in-process test client, "
        "`force_login`; SQL statements counted on the warm-up with `connection.execute_wrapper`); "
        f"load average during the walk {load[0]:.2f} / {load[1]:.2f} / {load[2]:.2f}",
        f"- over {TARGET_MS:.0f} ms p95: **{len(over)}** "
        f"({', '.join(sorted({f'`{_shown(f.route)}`' for f in over})) or 'none'}); "
        f"slowest p95 {figures[0].p95:,.0f} ms; most queries "
        f"{max(f.queries for f in figures)}",
        *(
            f"- `{route}`: {note}"
            for route, note in NOTES.items()
            if any(f.route == route for f in over)
        ),
        "- not requested: "
        + "; ".join(f"`{route}` ({reason})" for route, reason in sorted(skipped.items())),
    ]
    if built:
        summary.append(
            "- setup (not timed): "
            + ", ".join(f"{name} {seconds:.0f} s" for name, seconds in built["timings"].items())
        )
    print("\n".join(summary))
    print("\n".join(_table(figures[:40])))
    if args.write:
        from bench._report import machine, write_section

        write_section(
            "Pages at 10⁵ tuples",
            "Command: `DATABASE_URL=postgres://… python bench/pages.py --write`"
            f" ({machine()}).\n\n"
            + "\n".join(summary)
            + "\n\nThe 25 slowest (URL, role) pairs by p95:\n\n"
            + "\n".join(_table(figures[:25])),
        )
    return 1 if over else 0


if __name__ == "__main__":
    raise SystemExit(main())
