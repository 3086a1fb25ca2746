"""The labelling loop under load, over HTTP: gunicorn and a real Celery worker, N annotators.

    DATABASE_URL=postgres://... CELERY_BROKER_URL=redis://127.0.0.1:6379/N \\
        python bench/labelling.py [--tuples 10000] [--annotators 1,8] [--seconds 30]
        [--web-workers 2] [--worker-concurrency 2] [--reuse] [--write]

Builds a study of the demo's tuple codebook with ``--tuples`` tuples (imported through the
import service, overlap 2) in its own database (``<database>_bench_labelling_<tuples>``,
named after DATABASE_URL's database, never that database itself), with eight annotators and
an API token each. Then starts gunicorn (production settings, ``--web-workers`` processes)
and a Celery worker on that database, with the broker and the shared cache in
CELERY_BROKER_URL's Redis database, and runs one phase per ``--annotators`` value: that many
annotators, each in a thread with its own keep-alive connection, loop for ``--seconds``
seconds as the annotation API's client (and the browser's form) does: ``POST
/api/studies/<slug>/assignments/next/`` (timed as *next*), an annotation built from the
unit's own texts — real evidence spans with quotes equal to the text they cite, code-point
offsets — then ``POST /api/assignments/<id>/labels/`` (timed as *submit*).

Reported per phase: p50/p95/p99 of next and submit, submits per second, errors (any
answer other than 200/201, or a refused connection), duplicate assignments (a unit held by
more than k annotators, or handed twice to one annotator) and, sampled every half second
by a monitor thread during the run and after it, the Celery queue depth (the broker's
list) and the labels still waiting for their outcome (no ledger entry yet) with the age of
the oldest. After the phase: how long the queue and the waiting outcomes took to drain to
zero, and the outcome lag of every label submitted in the phase (its ledger entry's
``recorded_at`` minus the label's ``created_at``: median, p95, max).

``--profile N`` runs no server: N next → submit cycles in this process (the same views,
routing, middleware and token authentication, no job sent) under cProfile, and prints
where the time goes.

``--reuse`` keeps the database after the run and uses it as it is when it already holds
the study (each phase labels more units; the study has 2 × tuples slots).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import secrets
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

#: The bench database: ``<DATABASE_URL's database>_bench_labelling_<tuples>``, so that runs
#: against different databases of one server never share one (CLAIMGATE_BENCH_DB_PREFIX
#: names another prefix).
_DATABASE = urlsplit(os.environ.get("DATABASE_URL", "")).path.strip("/") or "claimgate"
DB_PREFIX = os.environ.get("CLAIMGATE_BENCH_DB_PREFIX") or f"{_DATABASE}_bench_labelling"
SLUG = "labelling"
PEOPLE = 8
QUEUE = "claimgate"  # CELERY_TASK_DEFAULT_QUEUE
SAMPLE_SECONDS = 0.5
DRAIN_LIMIT_SECONDS = 120.0
TARGETS = {"p95_ms": 60.0, "submits_per_s": 100.0, "drain_s": 10.0, "lag_median_s": 2.0}


# --- the study ---------------------------------------------------------------------------


def _database_url(name: str) -> str:
    parts = urlsplit(os.environ["DATABASE_URL"])
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def open_database(name: str, *, reuse: bool) -> None:
    """Point Django at the database ``name`` (created and migrated; kept when reused)."""
    import django

    django.setup()
    from django.db import connection

    connection.settings_dict.setdefault("TEST", {})["NAME"] = name
    connection.creation.create_test_db(verbosity=0, autoclobber=True, keepdb=reuse, serialize=False)


def drop_database(name: str) -> None:
    """Drop the bench database, ending first the sessions the servers' processes may
    still hold on it (a worker stopping slowly), which would refuse the drop."""
    from django.db import connection

    with connection.creation._nodb_cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            [name],
        )
    connection.creation.destroy_test_db(name, verbosity=0, keepdb=False)


def build(tuples: int) -> dict[str, float]:
    """The study (imported through the import service), its annotators and their tokens."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from annotator.memberships.models import Role
    from annotator.memberships.services import membership_add
    from audit.archive.models import Study
    from audit.archive.services import codebook_install_file, observations_import
    from audit.ledger.services import conformance_record
    from audit.management.commands.load_demo import demo_files
    from bench.pages import build_file

    started = time.perf_counter()
    codebook, _ = codebook_install_file(path=demo_files("tuple")[0])
    study = Study.objects.create(
        slug=SLUG, title=f"Labelling at {tuples} tuples", codebook=codebook, overlap=2
    )
    data = build_file(tuples)
    settings.IMPORT_MAX_FILE_BYTES = max(settings.IMPORT_MAX_FILE_BYTES, len(data))
    batch = observations_import(study=study, data=data, file_name="observations.jsonl")
    assert batch.tuples_created == tuples, (batch.status, batch.errors[:3])
    imported = time.perf_counter() - started
    users = get_user_model()
    for n in range(1, PEOPLE + 1):
        person = users.objects.create(username=f"annotator{n}")
        membership_add(study=study, user=person, role=Role.ANNOTATOR)
        Token.objects.create(user=person)
    conformance_record()
    _vacuum()
    return {"import": imported, "total": time.perf_counter() - started}


def _vacuum() -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        for table in (
            "audit_unit",
            "audit_tuple",
            "audit_observation",
            "audit_sourcesnapshot",
            "audit_answersnapshot",
            "audit_query",
            "annotator_assignment",
            "annotator_label",
            "audit_ledgerentry",
        ):
            cursor.execute(f"VACUUM ANALYZE {table}")


def tokens() -> list[str]:
    from rest_framework.authtoken.models import Token

    rows = Token.objects.filter(user__username__startswith="annotator").order_by("user_id")
    return [row.key for row in rows]


# --- the processes -----------------------------------------------------------------------


@dataclass
class Servers:
    port: int
    processes: list[subprocess.Popen] = field(default_factory=list)

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()


def start_servers(args: argparse.Namespace, database: str, logs: Path) -> Servers:
    """gunicorn and one Celery worker on the bench database, as the Procfile starts them."""
    broker = os.environ["CELERY_BROKER_URL"]
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DATABASE_URL": _database_url(database),
        "CELERY_BROKER_URL": broker,
        "CACHE_URL": broker,
        "CACHE_KEY_PREFIX": f"bench-labelling-{os.getpid()}",
        "SECRET_KEY": secrets.token_urlsafe(64),
        "SECURE_SSL_REDIRECT": "0",
        "ALLOWED_HOSTS": "127.0.0.1,localhost",
        # The benchmark measures the server, not the per-person brake on runaway scripts.
        "SUBMIT_RATE": "1000000/minute",
        "LOG_LEVEL": "WARNING",
    }
    python = Path(sys.executable)
    servers = Servers(port=args.port)
    logs.mkdir(parents=True, exist_ok=True)
    web = [
        str(python.parent / "gunicorn"),
        "config.wsgi:application",
        "--bind",
        f"127.0.0.1:{args.port}",
        "--workers",
        str(args.web_workers),
        "--log-level",
        "warning",
    ]
    worker = [
        str(python.parent / "celery"),
        "-A",
        "config",
        "worker",
        "--loglevel",
        "WARNING",
        "--concurrency",
        str(args.worker_concurrency),
        "--queues",
        QUEUE,
        "--hostname",
        f"bench-labelling-{os.getpid()}@%h",
    ]
    for command, name in ((web, "gunicorn"), (worker, "celery")):
        out = (logs / f"{name}.log").open("ab")
        servers.processes.append(
            subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", args.port, timeout=5)
            conn.request("GET", "/healthz")
            response = conn.getresponse()
            body = json.loads(response.read() or b"{}")
            conn.close()
            if body.get("ok"):
                return servers
        except OSError:
            pass
        time.sleep(0.5)
    servers.stop()
    raise SystemExit(f"the servers did not come up in 60 s; see {logs}")


# --- the annotators ----------------------------------------------------------------------


def _span(texts: dict[str, str], snapshot: str, rng: random.Random, length: int) -> dict:
    text = texts[snapshot]
    start = rng.randrange(0, max(1, len(text) - length))
    end = min(len(text), start + length)
    return {"snapshot": snapshot, "start": start, "end": end, "quote": text[start:end]}


def annotation_for(unit: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A tuple annotation as the form builds it: every resolved predicate with a
    span of the text it is about (the source for I, the answer for the others)."""
    texts = {
        "query": unit["query"]["text"],
        "answer": unit["answer"]["text"],
        "source": unit["source"]["text"],
    }
    predicates = {key: (None if rng.random() < 0.04 else rng.randint(0, 1)) for key in "IAMD"}
    spans = {
        key: [_span(texts, "source" if key == "I" else "answer", rng, rng.randint(8, 40))]
        for key, value in predicates.items()
        if value is not None
    }
    spans["passage_support"] = [_span(texts, "source", rng, 30)]
    return {
        "predicates": predicates,
        "passage_support": rng.randint(0, 1),
        "source_role": rng.choice(["target_owned", "affiliate_marketing", "competitor"]),
        "spans": spans,
        "evidence": {key: round(rng.random(), 2) for key in ("d_Q", "d_R", "d_P", "d_S")},
        "rationale": None,
    }


@dataclass
class Tally:
    next_ms: list[float] = field(default_factory=list)
    submit_ms: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    first_submit: float | None = None
    last_submit: float | None = None
    exhausted: bool = False

    def error(self, what: str) -> None:
        self.errors[what] = self.errors.get(what, 0) + 1


def annotate(port: int, token: str, until: float, seed: int, tally: Tally) -> None:
    rng = random.Random(seed)
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def call(method: str, path: str, body: Any = None) -> tuple[int, Any, float]:
        nonlocal conn
        payload = json.dumps(body).encode() if body is not None else None
        started = time.perf_counter()
        try:
            conn.request(method, path, body=payload, headers=headers)
            response = conn.getresponse()
            raw = response.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            raise
        elapsed = (time.perf_counter() - started) * 1000
        return response.status, (json.loads(raw) if raw else None), elapsed

    while time.perf_counter() < until:
        try:
            code, body, elapsed = call("POST", f"/api/studies/{SLUG}/assignments/next/")
            tally.next_ms.append(elapsed)
            if code == 204:
                tally.exhausted = True
                return
            if code not in (200, 201):
                tally.error(f"next {code}")
                continue
            labels = f"/api/assignments/{body['id']}/labels/"
            submission = {
                "annotation": annotation_for(body["unit"], rng),
                "client_submission_id": str(uuid.uuid4()),
            }
            code, answer, elapsed = call("POST", labels, submission)
            tally.submit_ms.append(elapsed)
            if code != 201:
                tally.error(f"submit {code} {(answer or {}).get('reason', '')}".strip())
                continue
            now = time.perf_counter()
            tally.first_submit = tally.first_submit or now
            tally.last_submit = now
        except (OSError, http.client.HTTPException) as exc:
            tally.error(type(exc).__name__)


def orders_drawn(people: int, limit: float = 600.0) -> float:
    """Wait until each of the ``people`` annotators has a queue order holding every unit
    of the study, drawn by the worker from the jobs the setup queued (adding annotators,
    the import), so that no phase times that work: a study's annotators are added before
    they label. Returns the seconds waited."""
    from django.db import connection

    from audit.archive.models import Study
    from audit.queueing import queue_orders_draw

    # A study built here has the job queued already (this coalesces with it); one kept
    # by --reuse from an older tree may have none.
    queue_orders_draw(Study.objects.get(slug=SLUG).pk)
    started = time.perf_counter()
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM annotator_queueorder o WHERE "
                "(SELECT count(*) FROM annotator_queueposition p WHERE p.order_id = o.id) "
                "= (SELECT count(*) FROM audit_unit u WHERE u.study_id = o.study_id)"
            )
            ready = cursor.fetchone()[0]
        waited = time.perf_counter() - started
        if ready >= people:
            return waited
        if waited > limit:
            raise SystemExit(f"only {ready} of {people} queue orders drawn after {limit:.0f} s")
        time.sleep(0.5)


# --- the monitor -------------------------------------------------------------------------


@dataclass
class Sample:
    at: float
    queue: int
    waiting: int
    oldest_s: float


class Monitor:
    """Samples the broker's queue and the labels waiting for an outcome, every half second."""

    def __init__(self, study_id: int, first_label: int) -> None:
        import redis

        self.redis = redis.Redis.from_url(os.environ["CELERY_BROKER_URL"])
        self.study_id = study_id
        self.first_label = first_label
        self.samples: list[Sample] = []
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> Sample:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*), EXTRACT(EPOCH FROM now() - min(l.created_at)) "
                "FROM annotator_label l WHERE l.study_id = %s AND l.id > %s AND NOT EXISTS "
                "(SELECT 1 FROM audit_ledgerentry e WHERE e.record_digest = l.record_digest)",
                [self.study_id, self.first_label],
            )
            waiting, oldest = cursor.fetchone()
        return Sample(
            time.perf_counter(), int(self.redis.llen(QUEUE)), int(waiting), float(oldest or 0)
        )

    def _run(self) -> None:
        while not self.stopped.is_set():
            self.samples.append(self.sample())
            self.stopped.wait(SAMPLE_SECONDS)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


# --- CPU time, whatever else runs on the machine ----------------------------------------

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _stat(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rindex(")") + 2 :].split()  # from the state field on


def _cpu(pid: int) -> float:
    fields = _stat(pid)
    return (int(fields[11]) + int(fields[12])) / _TICK if fields else 0.0


def _tree(root: int) -> list[int]:
    """``root`` and its descendants (gunicorn's and Celery's workers)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = _stat(int(entry.name))
            if fields:
                parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(parents.get(pid, []))
    return found


def cpu_snapshot(servers: Servers, database: str) -> dict[str, dict[int, float]]:
    """CPU seconds used so far by the web processes, the worker's processes and the
    database's backends serving the bench database (connections persist, CONN_MAX_AGE)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
            [database],
        )
        backends = [row[0] for row in cursor.fetchall()]
    web, worker = (process.pid for process in servers.processes)
    return {
        "web": {pid: _cpu(pid) for pid in _tree(web)},
        "database": {pid: _cpu(pid) for pid in backends},
        "worker": {pid: _cpu(pid) for pid in _tree(worker)},
    }


def cpu_used(before: dict[str, dict[int, float]], after: dict[str, dict[int, float]]) -> dict:
    """CPU seconds per group between two snapshots (a process born between them counts
    from zero; one that ended between them is lost, which persistent connections avoid)."""
    return {
        group: sum(seconds - before[group].get(pid, 0.0) for pid, seconds in pids.items())
        for group, pids in after.items()
    }


# --- a phase -----------------------------------------------------------------------------


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass
class Phase:
    annotators: int
    seconds: float
    next_ms: list[float]
    submit_ms: list[float]
    submits: int
    errors: dict[str, int]
    duplicates: int
    during: list[Sample]
    drain_s: float | None
    lags_s: list[float]
    exhausted: bool
    cpu: dict[str, float]  # CPU seconds during the phase and its drain, per group

    @property
    def rate(self) -> float:
        return self.submits / self.seconds if self.seconds else 0.0


def duplicates(study_id: int) -> int:
    """Units held by more than k annotators; (unit, annotator) twice is refused by a
    unique constraint, and counted here too should it ever be dropped."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM (SELECT a.unit_id FROM annotator_assignment a "
            "JOIN audit_unit u ON u.id = a.unit_id WHERE a.study_id = %s "
            "GROUP BY a.unit_id, u.id HAVING count(*) > (SELECT overlap FROM audit_study "
            "WHERE id = %s) OR count(DISTINCT a.annotator_id) < count(*)) d",
            [study_id, study_id],
        )
        return int(cursor.fetchone()[0])


def lags(study_id: int, first_label: int) -> list[float]:
    """Seconds from each label's creation to its ledger entry, labels of this phase."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT l.created_at, e.recorded_at FROM annotator_label l JOIN audit_ledgerentry e "
            "ON e.record_digest = l.record_digest WHERE l.study_id = %s AND l.id > %s "
            "AND l.kind = 'independent'",
            [study_id, first_label],
        )
        rows = cursor.fetchall()
    return [
        (datetime.fromisoformat(recorded.replace("Z", "+00:00")) - created).total_seconds()
        for created, recorded in rows
    ]


def run_phase(
    args: argparse.Namespace, keys: list[str], annotators: int, servers: Servers, database: str
) -> Phase:
    from django.db import connection

    from annotator.labelling.models import Label
    from audit.archive.models import Study

    connection.close()  # a fresh connection sees what the servers committed
    study = Study.objects.get(slug=SLUG)
    first_label = Label.objects.order_by("-id").values_list("id", flat=True).first() or 0
    monitor = Monitor(study.pk, first_label)
    cpu_before = cpu_snapshot(servers, database)
    client_before = time.process_time()
    monitor.start()
    tallies = [Tally() for _ in range(annotators)]
    started = time.perf_counter()
    until = started + args.seconds
    threads = [
        threading.Thread(
            target=annotate, args=(args.port, keys[n], until, 1000 * annotators + n, tallies[n])
        )
        for n in range(annotators)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ended = time.perf_counter()
    drained = None
    while time.perf_counter() - ended < DRAIN_LIMIT_SECONDS:
        last = monitor.samples[-1] if monitor.samples else None
        if last is not None and last.at > ended and last.queue == 0 and last.waiting == 0:
            drained = last.at - ended
            break
        time.sleep(SAMPLE_SECONDS / 2)
    monitor.stop()
    cpu = cpu_used(cpu_before, cpu_snapshot(servers, database))
    cpu["client"] = time.process_time() - client_before  # with the monitor's samples
    errors: dict[str, int] = {}
    for tally in tallies:
        for what, count in tally.errors.items():
            errors[what] = errors.get(what, 0) + count
    return Phase(
        annotators=annotators,
        seconds=ended - started,
        next_ms=[ms for tally in tallies for ms in tally.next_ms],
        submit_ms=[ms for tally in tallies for ms in tally.submit_ms],
        submits=sum(len(tally.submit_ms) for tally in tallies) - _failed_submits(errors),
        errors=errors,
        duplicates=duplicates(study.pk),
        during=[s for s in monitor.samples if s.at <= ended],
        drain_s=drained,
        lags_s=lags(study.pk, first_label),
        exhausted=any(tally.exhausted for tally in tallies),
        cpu=cpu,
    )


def _failed_submits(errors: dict[str, int]) -> int:
    return sum(count for what, count in errors.items() if what.startswith("submit"))


def describe(phase: Phase) -> list[str]:
    during = phase.during or [Sample(0, 0, 0, 0.0)]
    lag = phase.lags_s or [float("nan")]
    drain = f"{phase.drain_s:.1f} s" if phase.drain_s is not None else "not within 120 s"
    return [
        f"| {phase.annotators} | {phase.rate:.1f} | "
        f"{_pct(phase.next_ms, 0.5):.0f} / {_pct(phase.next_ms, 0.95):.0f} / "
        f"{_pct(phase.next_ms, 0.99):.0f} | "
        f"{_pct(phase.submit_ms, 0.5):.0f} / {_pct(phase.submit_ms, 0.95):.0f} / "
        f"{_pct(phase.submit_ms, 0.99):.0f} | "
        f"{sum(phase.errors.values())} | {phase.duplicates} | "
        f"{max(s.queue for s in during)} | {max(s.waiting for s in during)} | "
        f"{statistics.median(lag):.2f} / {_pct(lag, 0.95):.2f} / {max(lag):.2f} | {drain} |"
    ]


def cpu_line(phase: Phase) -> str:
    """CPU milliseconds per next + submit cycle, per group, measured from /proc whatever
    else the machine runs, and the rate the server side's CPU would allow on its cores."""
    cycles = max(1, phase.submits)
    per = {group: 1000 * seconds / cycles for group, seconds in phase.cpu.items()}
    server = per["web"] + per["database"] + per["worker"]
    cores = os.cpu_count() or 1
    return (
        f"| {phase.annotators} | {per['web']:.1f} | {per['database']:.1f} | "
        f"{per['worker']:.1f} | {server:.1f} | {1000 * cores / server:.0f} | "
        f"{per['client']:.1f} |"
    )


CPU_HEADER = [
    "| annotators | web CPU ms | database CPU ms | worker CPU ms | server CPU ms "
    "| submits/s its cores allow | client CPU ms |",
    "|---:|---:|---:|---:|---:|---:|---:|",
]

HEADER = [
    "| annotators | submits/s | next p50 / p95 / p99 ms | submit p50 / p95 / p99 ms "
    "| errors | duplicates | queue depth max | outcomes waiting max "
    "| outcome lag median / p95 / max s | drained after the end |",
    "|---:|---:|---|---|---:|---:|---:|---:|---|---|",
]


def profile(count: int, top: int) -> None:
    """``count`` next → submit cycles in this process under cProfile (no server, no job
    sent: the profile is the requests' own work), through the same API views, URL
    routing, middleware and token authentication as over HTTP; prints the mean time per
    request and where it goes."""
    import cProfile
    import io
    import pstats

    from django.conf import settings
    from django.test import Client

    from audit import queueing

    queueing._send = lambda name, args, countdown=0: None  # type: ignore[assignment]
    settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["submit"] = "1000000/minute"
    client = Client(HTTP_AUTHORIZATION=f"Token {tokens()[-1]}", HTTP_HOST="127.0.0.1")
    rng = random.Random(7)

    def cycle() -> None:
        given = client.post(f"/api/studies/{SLUG}/assignments/next/")
        assert given.status_code in (200, 201), given.status_code
        body = given.json()
        submission = {
            "annotation": annotation_for(body["unit"], rng),
            "client_submission_id": str(uuid.uuid4()),
        }
        done = client.post(
            f"/api/assignments/{body['id']}/labels/",
            data=json.dumps(submission),
            content_type="application/json",
        )
        assert done.status_code == 201, done.content

    for _ in range(20):  # warm-up: imports, caches, connections
        cycle()
    statements: dict[str, list[float]] = {}

    def timed(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            shape = " ".join(sql.split())[:90]
            statements.setdefault(shape, []).append(time.perf_counter() - started)

    from django.db import connection

    with connection.cursor() as cursor:  # the database's process serving this one
        postgresql = connection.vendor == "postgresql"
        cursor.execute("SELECT pg_backend_pid()" if postgresql else "SELECT 0")
        backend = cursor.fetchone()[0]
    wall, cpu, db_cpu = time.perf_counter(), time.process_time(), _cpu(backend)
    with connection.execute_wrapper(timed):
        for _ in range(count):
            cycle()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    db_cpu = _cpu(backend) - db_cpu
    total = sum(sum(times) for times in statements.values())
    print(
        f"unprofiled run of {count}, per next + submit: {1000 * wall / count:.2f} ms wall, "
        f"{1000 * cpu / count:.2f} ms CPU of this process, {1000 * db_cpu / count:.2f} ms "
        f"CPU of its database backend (load average {os.getloadavg()[0]:.2f})"
    )
    print(
        f"SQL: {sum(len(t) for t in statements.values()) / count:.1f} statements and "
        f"{1000 * total / count:.2f} ms per next + submit (unprofiled run of {count}); "
        "the slowest statements, mean ms:"
    )
    for shape, times in sorted(statements.items(), key=lambda item: -sum(item[1]))[:12]:
        print(f"  {1000 * statistics.fmean(times):7.2f}  x{len(times) / count:.0f}  {shape}")
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    for _ in range(count):
        cycle()
    profiler.disable()
    elapsed = time.perf_counter() - started
    # No job was sent, but each submission marked its outcomes job as queued: left for a
    # minute, the marks would keep a load run started meanwhile from queueing any.
    queueing.marks_clear()
    print(f"{count} cycles: {1000 * elapsed / count:.2f} ms per next + submit (profiled)")
    for key in ("tottime", "cumulative"):
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats(key).print_stats(top)
        print(out.getvalue())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tuples", type=int, default=10_000)
    parser.add_argument("--annotators", default="1,8", help="one phase per value: 1,8")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--web-workers", type=int, default=2)
    parser.add_argument("--worker-concurrency", type=int, default=2)
    parser.add_argument("--port", type=int, default=8731)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--write", action="store_true")
    parser.add_argument(
        "--profile",
        type=int,
        default=0,
        metavar="N",
        help="instead of the load: N next → submit cycles in this process under cProfile",
    )
    parser.add_argument("--top", type=int, default=30, help="functions listed by --profile")
    args = parser.parse_args(argv)
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("DATABASE_URL must name a PostgreSQL server")
    if not args.profile and not os.environ.get("CELERY_BROKER_URL", "").startswith("redis"):
        raise SystemExit("CELERY_BROKER_URL must name a Redis database (redis://host:port/N)")
    phases = [int(n) for n in args.annotators.split(",")]
    if max(phases) > PEOPLE:
        raise SystemExit(f"at most {PEOPLE} annotators")

    database = f"{DB_PREFIX}_{args.tuples}"
    open_database(database, reuse=args.reuse)
    from audit.archive.models import Study

    setup = None
    if not Study.objects.filter(slug=SLUG).exists():
        setup = build(args.tuples)
        print(f"built the study in {setup['total']:.0f} s", file=sys.stderr)
    if args.profile:
        try:
            profile(args.profile, args.top)
        finally:
            from django.db import connection

            connection.close()
            if not args.reuse:
                drop_database(database)
        return 0
    keys = tokens()
    servers = start_servers(args, database, ROOT / "build" / "bench-labelling")
    results = []
    try:
        drawn = orders_drawn(len(keys))
        load = os.getloadavg()
        for annotators in phases:
            phase = run_phase(args, keys, annotators, servers, database)
            results.append(phase)
            print("\n".join(HEADER + describe(phase)), flush=True)
            print("\n".join([*CPU_HEADER, cpu_line(phase)]), flush=True)
            if phase.errors:
                print(f"errors: {phase.errors}", flush=True)
    finally:
        servers.stop()
        from django.db import connection

        connection.close()
        if not args.reuse:
            drop_database(database)

    summary = [
        f"- study: {args.tuples:,} tuples (the demo's tuple codebook, overlap 2), PostgreSQL; "
        "gunicorn "
        f"{args.web_workers} workers (production settings), one Celery worker of concurrency "
        f"{args.worker_concurrency}, broker and cache in Redis; the client threads in the "
        f"same machine; load average at the start {load[0]:.2f}",
        f"- each phase {args.seconds:.0f} s of next → submit (API, token auth, real spans)",
    ]
    if setup:
        summary.append(f"- setup (not timed): import {setup['import']:.0f} s")
    summary.append(
        f"- the annotators' queue orders, drawn by the worker from the setup's jobs: all "
        f"{len(keys)} ready {drawn:.1f} s after the servers started (not timed)"
    )
    print("\n".join(summary))
    if args.write:
        from bench._report import machine, write_section

        write_section(
            f"Labelling loop at {args.tuples:,} tuples",
            "Command: `DATABASE_URL=postgres://… CELERY_BROKER_URL=redis://… python "
            f"bench/labelling.py --tuples {args.tuples} --annotators {args.annotators} "
            f"--seconds {args.seconds:.0f} --web-workers {args.web_workers} --write` "
            f"({machine()}).\n\n"
            + "\n".join(summary)
            + "\n\n"
            + "\n".join(HEADER + [line for phase in results for line in describe(phase)])
            + "\n\nCPU time per next + submit cycle (from /proc: gunicorn's processes, "
            "the PostgreSQL backends serving the bench database, Celery's processes; "
            "during the phase and its drain), and the submissions per second that the "
            "server side's CPU would allow on this machine's cores if nothing else ran:\n\n"
            + "\n".join([*CPU_HEADER, *(cpu_line(phase) for phase in results)]),
        )
    failed = any(phase.errors or phase.duplicates for phase in results)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
