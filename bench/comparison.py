"""Seed 002's Table II at scale: the protocol selectors and the comparison on 10⁵ units.

    DATABASE_URL=postgres://... python bench/comparison.py [--queries 50000]

Runs in a throw-away test database (created and dropped here). One setting of three
studies on ``--queries`` queries answered by two pipelines (fixtures/demo/protocol.py's
lines, with 3–5 ranked documents each): the rubric and query–document studies hold
2 × queries units, the pairwise study one pair per query. Every unit gets a final
(consensus) label in the stored form, written in bulk (not timed). Measured: each selector
alone and the whole comparison (both pipelines, every protocol, 1,000 resamples), with the
number of queries and the peak of Python memory (tracemalloc) of the comparison.
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=50_000)
    parser.add_argument(
        "--profile",
        action="store_true",
        help="print cProfile's top 25: document_metrics (own time), then the comparison",
    )
    args = parser.parse_args(argv)

    from bench._db import throwaway_database

    with throwaway_database("claimgate_bench_comparison"):
        from django.conf import settings
        from django.db import connection
        from django.test.utils import CaptureQueriesContext

        from audit.archive.models import Pipeline, Study
        from audit.archive.services import codebook_install_file, observations_import
        from fixtures.demo import protocol
        from metrics import protocol_selectors as ps

        studies = {}
        started = time.perf_counter()
        for slug, codebook, file_name in (
            ("rubric", protocol.RUBRIC, "answer-rubric-1.0.0.json"),
            ("documents", protocol.DOCUMENTS, "query-document-grades-1.0.0.json"),
            ("pairs", protocol.PAIRWISE, "pairwise-1.0.0.json"),
        ):
            installed, _ = codebook_install_file(path=ROOT / "fixtures" / "codebooks" / file_name)
            study = Study.objects.create(slug=slug, title=slug, codebook=installed)
            data = _file(codebook, args.queries)
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
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("VACUUM ANALYZE")
        setup_s = time.perf_counter() - started
        evaluated = Pipeline.objects.get(name=protocol.EVALUATED["name"]).pk
        baseline = Pipeline.objects.get(name=protocol.BASELINE["name"]).pk

        timings = {}
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

        study = Study.objects.select_related("codebook").get(pk=studies["pairs"].pk)
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
        with CaptureQueriesContext(connection) as queries:
            setting = ps.protocol_setting(study)
            table = ps.comparison_fetch(setting, evaluated, baseline)
        whole_s = time.perf_counter() - started
        tracemalloc.start()  # a second run for the memory alone (tracemalloc slows Python)
        ps.comparison_fetch(ps.protocol_setting(study), evaluated, baseline)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        # What the page does at this size: a worker stores the comparison, then each
        # request reads the setting, the stored comparison and the setting's mark.
        from metrics.services import comparisons_refresh

        started = time.perf_counter()
        stored = comparisons_refresh(study=study)
        refresh_s = time.perf_counter() - started
        page_ms = []
        for _ in range(21):
            started = time.perf_counter()
            with CaptureQueriesContext(connection) as page_queries:
                shown = ps.comparison_shown(ps.protocol_setting(study), evaluated, baseline)
            page_ms.append(1000 * (time.perf_counter() - started))
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            ps.comparison_shown(ps.protocol_setting(study), evaluated, baseline)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
        assert shown.data is not None, "the comparison is stored"
        assert not shown.stale, "the stored comparison is current"
        page_ms = sorted(page_ms[1:])  # the first warms the caches
        vendor = connection.vendor

    rows = {row["metric"]: row for row in table["rows"]}
    print(f"- database: {vendor}; {args.queries:,} queries × 2 pipelines; {units:,} units with a")
    print(f"  final label over three studies; setup (import, labels, analyze) {setup_s:.1f} s")
    for name, seconds in timings.items():
        print(f"- {name}: {seconds:.2f} s")
    print(
        f"- the whole Table II (setting, both pipelines, every protocol, 1,000 resamples per "
        f"interval): **{whole_s:.2f} s**, {len(queries)} queries (chunks of {ps.CHUNK:,} units), "
        f"peak Python memory {peak / 2**20:.0f} MiB"
    )
    print(
        f"- the job (comparisons_refresh, {stored['computed']} pair computed and stored): "
        f"{refresh_s:.2f} s; what the page reads (setting, stored comparison, mark; "
        f"{len(page_queries)} queries) over 20 reads: p50 {page_ms[9]:.0f} ms, "
        f"p95 {page_ms[18]:.0f} ms"
    )
    print(
        f"- check: Δ PassR {rows['pass_r']['delta']:+.2f} pp, NetGain "
        f"{rows['net_gain']['value']:+.2f}% (N = {rows['net_gain']['n']:,})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
