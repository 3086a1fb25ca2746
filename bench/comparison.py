"""Seed 002's Table II at scale: the protocol selectors and the comparison on 10⁵ units.

    DATABASE_URL=postgres://... python bench/comparison.py [--queries 50000] [--reuse]

Runs in a throw-away test database (created and dropped here; ``--reuse`` keeps it and,
when it already holds the setting, measures it as it is after applying any new
migration, instead of building it again: the setup at 10⁵ takes minutes). One setting of three
studies on ``--queries`` queries answered by two pipelines (fixtures/demo/protocol.py's
lines, with 3–5 ranked documents each): the rubric and query–document studies hold
2 × queries units, the pairwise study one pair per query. Every unit gets a final
(consensus) label in the stored form, written in bulk (not timed). Measured: each selector
alone and the whole comparison (both pipelines, every protocol, 1,000 resamples), with the
number of queries and the peak of Python memory (tracemalloc) of the comparison; then
what the page does at that size: the job that stores the comparison, and the comparison
page and its CSV requested 20 times (Django's test client, as a researcher of the study),
with their SQL statements counted.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import tracemalloc
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")


def _file(codebook: dict, queries: int) -> bytes:
    from fixtures.demo import protocol

    header = {"claimgate": "observations", "format_version": 1, "codebook": codebook}
    rows = [header, *protocol.lines(codebook, queries)]
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode()


def _label_all(study, system_of, annotation_of) -> int:
    """A consensus label on every unit (stored form), the units agreed; in bulk."""
    from annotator.labelling.models import Label, LabelKind
    from audit.archive.models import Unit, UnitState

    rows = Unit.objects.filter(study=study).values_list(
        "id", "observation__query__query_id", "observation__pipeline__name"
    )
    labels = []
    for pk, query_id, pipeline in rows.iterator(chunk_size=10_000):
        i = int(query_id.split("-")[1]) - 1
        annotation = {
            "kind": "consensus",
            "annotator": "consensus",
            "reasons": {},
            "spans": [],
            "rationale": None,
            "assisted": None,
            **annotation_of(i, system_of(pipeline)),
        }
        labels.append(
            Label(
                study=study,
                unit_id=pk,
                kind=LabelKind.CONSENSUS,
                revision=1,
                annotation=annotation,
                record_digest=uuid.uuid4().hex + uuid.uuid4().hex,
                codebook_digest=study.codebook.digest,
            )
        )
    Label.objects.bulk_create(labels, batch_size=5_000)
    Unit.objects.filter(study=study).update(state=UnitState.AGREED)
    return len(labels)


def _build(queries: int) -> tuple[dict, int]:
    """The setting's three studies, every unit with a final label (not timed)."""
    from django.conf import settings
    from django.db import connection

    from audit.archive.models import Study
    from audit.archive.services import codebook_install_file, observations_import
    from fixtures.demo import protocol

    studies = {}
    for slug, codebook, file_name in (
        ("rubric", protocol.RUBRIC, "answer-rubric-1.0.0.json"),
        ("documents", protocol.DOCUMENTS, "query-document-grades-1.0.0.json"),
        ("pairs", protocol.PAIRWISE, "pairwise-1.0.0.json"),
    ):
        installed, _ = codebook_install_file(path=ROOT / "fixtures" / "codebooks" / file_name)
        study = Study.objects.create(slug=slug, title=slug, codebook=installed)
        data = _file(codebook, queries)
        settings.IMPORT_MAX_FILE_BYTES = max(settings.IMPORT_MAX_FILE_BYTES, 2 * len(data))
        batch = observations_import(study=study, data=data, file_name=f"{slug}.jsonl")
        assert batch.status != "rejected", batch.errors[:3]
        studies[slug] = study

    def system_of(name: str) -> str:
        return "evaluated" if name == protocol.EVALUATED["name"] else "baseline"

    def documents_of(i: int, system: str) -> dict:
        documents, values = protocol.document_values(i, system)
        return {"values": values, "documents": documents}

    units = _label_all(
        studies["rubric"],
        system_of,
        lambda i, system: {"values": protocol.rubric_values(i, system)},
    )
    units += _label_all(studies["documents"], system_of, documents_of)
    units += _label_all(
        studies["pairs"],
        system_of,
        lambda i, system: {"values": {"preference": protocol.preference(i)}},
    )
    from django.contrib.auth import get_user_model

    from annotator.memberships.models import Membership, Role

    researcher = get_user_model().objects.create_user("researcher")
    for study in studies.values():
        Membership.objects.create(study=study, user=researcher, role=Role.RESEARCHER)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("VACUUM ANALYZE")
    return studies, units


def _timed(run, repeat: int) -> tuple[list[float], int]:
    """``run()`` ``repeat`` + 1 times: the milliseconds of the last ``repeat`` (the first
    warms the caches), sorted, and the SQL statements of the last."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    ms = []
    for _ in range(repeat + 1):
        started = time.perf_counter()
        with CaptureQueriesContext(connection) as queries:
            run()
        ms.append(1000 * (time.perf_counter() - started))
    return sorted(ms[1:]), len(queries)


def _p(ms: list[float], q: float) -> float:
    return ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=50_000)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print cProfile's top 25: document_metrics (own time), then the comparison",
    )
    parser.add_argument("--reuse", action="store_true", help="keep the database and reuse it")
    parser.add_argument(
        "--pages-only",
        action="store_true",
        help="skip the selectors and the whole table; time the job and the page reads only",
    )
    parser.add_argument("--repeat", type=int, default=20, help="timed page reads")
    args = parser.parse_args(argv)

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import CaptureQueriesContext, setup_test_environment

    from audit.archive.models import Pipeline, Study
    from fixtures.demo import protocol
    from metrics import protocol_selectors as ps

    setup_test_environment()
    settings.ALLOWED_HOSTS = ["testserver"]
    connection.settings_dict.setdefault("TEST", {})["NAME"] = (
        f"claimgate_bench_comparison_{args.queries}"
    )
    old_name = connection.creation.create_test_db(
        verbosity=0, autoclobber=True, serialize=False, keepdb=args.reuse
    )
    try:
        started = time.perf_counter()
        found = {s.slug: s for s in Study.objects.filter(slug__in=["rubric", "documents", "pairs"])}
        if len(found) == 3 and not Study.objects.filter(pk=found["pairs"].pk, labels=None).exists():
            studies = found
            units = sum(s.units.count() for s in studies.values())
            setup = "reused"
        else:
            if found:  # a half-built setting from an interrupted run
                connection.close()
                connection.creation.destroy_test_db(old_name, verbosity=0, keepdb=False)
                old_name = connection.creation.create_test_db(
                    verbosity=0, autoclobber=True, serialize=False
                )
            studies, units = _build(args.queries)
            setup = f"{time.perf_counter() - started:.1f} s"
        evaluated = Pipeline.objects.get(name=protocol.EVALUATED["name"]).pk
        baseline = Pipeline.objects.get(name=protocol.BASELINE["name"]).pk
        study = Study.objects.select_related("codebook").get(pk=studies["pairs"].pk)

        timings = {}
        whole_s = peak = None
        table = None
        queries: list = []
        if not args.pages_only:
            for name, run in (
                ("pass_rates (rubric, both pipelines)", lambda: ps.pass_rates(studies["rubric"])),
                (
                    "document_metrics (query–document, both pipelines)",
                    lambda: ps.document_metrics(studies["documents"]),
                ),
                (
                    "pairwise_counts + clustered bootstrap",
                    lambda: ps.pairwise_counts(studies["pairs"], evaluated, baseline).net_gain(),
                ),
            ):
                started = time.perf_counter()
                run()
                timings[name] = time.perf_counter() - started

            if args.profile:
                import cProfile
                import pstats

                # document_metrics first: the slowest selector (the query–document pass)
                profiler = cProfile.Profile()
                profiler.enable()
                ps.document_metrics(studies["documents"])
                profiler.disable()
                pstats.Stats(profiler).sort_stats("tottime").print_stats(25)
                profiler = cProfile.Profile()
                profiler.enable()
                ps.comparison_fetch(ps.protocol_setting(study), evaluated, baseline)
                profiler.disable()
                pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
            started = time.perf_counter()
            with CaptureQueriesContext(connection) as captured:
                setting = ps.protocol_setting(study)
                table = ps.comparison_fetch(setting, evaluated, baseline)
            whole_s = time.perf_counter() - started
            queries = list(captured)
            tracemalloc.start()  # a second run for the memory alone (tracemalloc slows Python)
            ps.comparison_fetch(ps.protocol_setting(study), evaluated, baseline)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
        # What the page does at this size: a worker stores the comparison, then each
        # request reads the stored setting, the stored comparison and the setting's mark.
        from metrics.models import ComparisonSummary
        from metrics.services import comparisons_refresh

        ComparisonSummary.objects.filter(study=study).delete()  # a reused one: compute again
        # What an import costs the next page: the setting read afresh over every protocol
        # study (first with the query-set digests not yet cached in this process, then
        # with them cached), and stored.
        from metrics.models import ComparisonSetting
        from metrics.services import comparison_setting_store

        afresh = []
        for _ in range(2):
            ComparisonSetting.objects.filter(study=study).delete()
            started = time.perf_counter()
            with CaptureQueriesContext(connection) as captured:
                comparison_setting_store(setting=ps.protocol_setting(study))
            afresh.append((1000 * (time.perf_counter() - started), len(captured)))
        started = time.perf_counter()
        stored = comparisons_refresh(study=study)
        refresh_s = time.perf_counter() - started
        shown_box = []

        def read() -> None:
            shown_box.append(ps.comparison_shown(ps.protocol_setting(study), evaluated, baseline))

        read_ms, read_queries = _timed(read, args.repeat)
        shown = shown_box[-1]
        assert shown.data is not None, "the comparison is stored"
        assert not shown.stale, "the stored comparison is current"
        if table is None:
            table = shown.data["comparison"]

        from django.contrib.auth import get_user_model
        from django.test import Client
        from django.urls import reverse

        client = Client()
        client.force_login(get_user_model().objects.get(username="researcher"))
        pair = {"evaluated": evaluated, "baseline": baseline}
        figures = {}
        for name, url in (
            ("page", reverse("study-comparison", args=[study.slug])),
            ("CSV", reverse("study-comparison-csv", args=[study.slug])),
        ):

            def get(url=url) -> None:
                response = client.get(url, pair)
                assert response.status_code == 200, response.status_code
                assert b"being computed" not in response.content

            figures[name] = _timed(get, args.repeat)
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.enable()
            ps.comparison_shown(ps.protocol_setting(study), evaluated, baseline)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
        vendor = connection.vendor
        load = os.getloadavg()
    finally:
        connection.close()
        if not args.reuse:
            connection.creation.destroy_test_db(old_name, verbosity=0)

    rows = {row["metric"]: row for row in table["rows"]}
    print(f"- database: {vendor}; {args.queries:,} queries × 2 pipelines; {units:,} units with a")
    print(f"  final label over three studies; setup (import, labels, analyze) {setup}")
    for name, seconds in timings.items():
        print(f"- {name}: {seconds:.2f} s")
    if whole_s is not None:
        print(
            f"- the whole Table II (setting, both pipelines, every protocol, 1,000 resamples "
            f"per interval): **{whole_s:.2f} s**, {len(queries)} queries (chunks of "
            f"{ps.CHUNK:,} units), peak Python memory {peak / 2**20:.0f} MiB"
        )
    print(
        f"- the job (comparisons_refresh, {stored['computed']} pair computed and stored): "
        f"{refresh_s:.2f} s"
    )
    (cold_ms, cold_q), (warm_ms, warm_q) = afresh
    print(
        f"- the setting read afresh and stored (once per import): {cold_ms:.0f} ms "
        f"({cold_q} queries) with the query-set digests to read, {warm_ms:.0f} ms "
        f"({warm_q} queries) with them cached"
    )
    print(
        f"- what the page reads (setting, stored comparison, mark; {read_queries} queries) "
        f"over {args.repeat} reads: p50 {_p(read_ms, 0.5):.0f} ms, p95 {_p(read_ms, 0.95):.0f} ms"
    )
    for name, (ms, count) in figures.items():
        print(
            f"- GET the comparison {name} ({count} queries) over {args.repeat} requests: "
            f"p50 {_p(ms, 0.5):.0f} ms, p95 {_p(ms, 0.95):.0f} ms"
        )
    print(
        f"- check: Δ PassR {rows['pass_r']['delta']:+.2f} pp, NetGain "
        f"{rows['net_gain']['value']:+.2f}% (N = {rows['net_gain']['n']:,})"
    )
    print(f"- load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
