"""The started-unit walk under a backlog, at 10^5 tuples: the time of one look-up of the
next started unit for an annotator, when one annotator has labelled ahead alone and S of
their units wait for a second label.

    DATABASE_URL=postgres://... python bench/backlog_walk.py [--tuples 100000]
        [--backlogs 300,1430,5000,20000] [--lookups 200] [--reuse] [--write]

Builds the labelling benchmark's study (bench/labelling.py: the demo's tuple codebook,
overlap 2, eight annotators) in a database of its own (``<database>_bench_backlog_<tuples>``,
named after DATABASE_URL's), draws every annotator's order, and for each S marks S units
nobody holds as held by annotator 1 alone (their count and holder hint, as a slot sets
them), analyzed. Then, alternating, for annotators 2-8 in turn:

- *walk*: ``_started_unit`` as the queue calls it: the count, and over the threshold
  (``STARTED_BACKLOG``) the walk of the caller's order from their started cursor, which
  moves on to each unit found (as when they take it);
- *reference*: the read of every started unit, the first in the caller's order taken
  (``_StartedWalks.everywhere``: the queue's only way before the backlog walk, and still
  its way under the threshold).

Each look-up runs in a transaction of its own (a read: its lock released at the end,
nothing taken).
Reported: median and p95 milliseconds per look-up and the ratio reference / walk.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

_DATABASE = urlsplit(os.environ.get("DATABASE_URL", "")).path.strip("/") or "claimgate"
DB_PREFIX = f"{_DATABASE}_bench_backlog"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _hold(study, lone, count: int) -> None:
    """``count`` units nobody holds, drawn at random, held by ``lone`` alone; the others
    given back."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE audit_unit SET assigned_count = 0, holder = NULL "
            "WHERE study_id = %s AND holder = %s",
            [study.pk, lone.pk],
        )
        cursor.execute(
            "UPDATE audit_unit SET assigned_count = 1, holder = %s WHERE id IN ("
            "SELECT id FROM audit_unit WHERE study_id = %s AND assigned_count = 0 "
            "ORDER BY md5(id::text) LIMIT %s)",
            [lone.pk, study.pk, count],
        )
        cursor.execute("VACUUM ANALYZE audit_unit")


def measure(study, orders, lookups: int) -> dict[str, list[float]]:
    from django.db import connection, transaction

    from annotator.labelling.services import _started_unit, _StartedWalks

    times: dict[str, list[float]] = {"walk": [], "reference": []}
    walks = _StartedWalks(study)
    for n in range(lookups):
        order = orders[n % len(orders)]
        for way in ("walk", "reference") if n % 2 else ("reference", "walk"):
            started = time.perf_counter()
            with transaction.atomic():
                if way == "walk":
                    found = _started_unit(study=study, annotator=order.annotator, order=order)
                else:
                    with connection.cursor() as cursor:
                        cursor.execute(
                            walks.everywhere(),
                            {"me": order.annotator_id, "study": study.pk, "order": order.pk},
                        )
                        cursor.fetchone()
            times[way].append((time.perf_counter() - started) * 1000)
            if way == "walk" and found is not None and found.key is not None:
                order.started_cursor = found.key  # as when they take it
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tuples", type=int, default=100_000)
    parser.add_argument("--backlogs", default="300,1430,5000,20000")
    parser.add_argument("--lookups", type=int, default=200)
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("DATABASE_URL must name a PostgreSQL server")

    from bench import labelling

    database = f"{DB_PREFIX}_{args.tuples}"
    labelling.open_database(database, reuse=args.reuse)
    from annotator.labelling.models import QueueOrder
    from annotator.labelling.services import STARTED_BACKLOG, _queue_order
    from audit.archive.models import Study

    if not Study.objects.filter(slug=labelling.SLUG).exists():
        setup = labelling.build(args.tuples)
        print(f"built the study in {setup['total']:.0f} s", file=sys.stderr)
    study = Study.objects.select_related("codebook").get(slug=labelling.SLUG)
    from django.contrib.auth import get_user_model

    people = list(get_user_model().objects.filter(username__startswith="annotator").order_by("pk"))
    for person in people:
        _queue_order(study=study, annotator=person)
    lone, others = people[0], people[1:]
    lines = [
        "| backlog S | walk median / p95 ms | reference median / p95 ms | reference / walk "
        "(median) |",
        "|---:|---|---|---:|",
    ]
    try:
        for backlog in [int(n) for n in args.backlogs.split(",")]:
            _hold(study, lone, backlog)
            orders = list(
                QueueOrder.objects.filter(study=study, annotator__in=others).select_related(
                    "annotator"
                )
            )
            for order in orders:
                order.started_cursor = -1
            times = measure(study, orders, args.lookups)
            walk, reference = times["walk"], times["reference"]
            lines.append(
                f"| {backlog:,} | {statistics.median(walk):.2f} / {_percentile(walk, 0.95):.2f} "
                f"| {statistics.median(reference):.2f} / {_percentile(reference, 0.95):.2f} "
                f"| {statistics.median(reference) / statistics.median(walk):.1f}× |"
            )
            print(lines[-1], flush=True)
    finally:
        from django.db import connection

        connection.close()
        if not args.reuse:
            labelling.drop_database(database)
    load = os.getloadavg()
    summary = (
        f"{args.tuples:,} tuples (units), overlap 2, threshold {STARTED_BACKLOG}; "
        f"{args.lookups} look-ups of each way per backlog, alternating, annotators 2-8 in "
        f"turn; load average at the end {load[0]:.2f}"
    )
    print("\n".join([summary, *lines]))
    if args.write:
        from bench._report import machine, write_section

        write_section(
            "The started-unit walk under a backlog",
            "Command: `DATABASE_URL=postgres://… python bench/backlog_walk.py "
            f"--tuples {args.tuples} --backlogs {args.backlogs} --lookups {args.lookups} "
            f"--write` ({machine()}).\n\n{summary}\n\n" + "\n".join(lines),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
