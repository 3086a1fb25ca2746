"""Release export: time and peak memory of a release at 10⁵ and 10⁶ labels.

    DATABASE_URL=postgres://... python bench/export.py [--sizes 100000 1000000] [--write]

Runs in a throw-away test database (``claimgate_bench_export``, created and dropped
here), so it never touches the database DATABASE_URL names. For each size it imports that
many tuples, stores one independent label per tuple (bulk, records built and sealed as the
application does), vacuums and analyzes the tables (as autovacuum would), then builds the
release in a **fresh child process**, whose wall time and peak resident memory
(``ru_maxrss``) are what is reported — the setup's own memory does not count. Target
(DESIGN.md): 10⁵ labelled tuples in ≤ 5 s and ≤ 200 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

TARGET_S = 5.0
TARGET_MB = 200
TEST_DB = "claimgate_bench_export"


def _maxrss_mb() -> float:
    """Peak resident memory of this process. VmHWM, not ru_maxrss: Linux carries the
    parent's high-water mark into ru_maxrss across fork and exec."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def child(slug: str, name: str, root: str) -> int:
    """Build one release and print its figures as JSON (runs in its own process)."""
    import django

    django.setup()
    from django.conf import settings

    from audit.archive.models import Study
    from audit.releases.services import release_build

    settings.RELEASES_ROOT = Path(root)
    study = Study.objects.get(slug=slug)
    baseline = _maxrss_mb()
    started = time.perf_counter()
    release = release_build(study=study, name=name)
    seconds = time.perf_counter() - started
    assert release.status == "ready", release.error
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_mb": _maxrss_mb(),
                "baseline_mb": baseline,
                "files": release.files,
            }
        )
    )
    return 0


def _labels(study, pseudonym: str) -> int:
    """One valid independent label per unit, inserted in bulk."""
    from annotator.labelling.models import Label
    from audit.archive import bulk
    from audit.archive.models import Unit
    from audit.archive.records import record_build
    from audit.releases.services import CHUNK, UNIT_VALUES, _batches, _contents

    weights = {d["key"]: d["weight"] for d in study.codebook.definition["evidence_dimensions"]}
    units = (
        Unit.objects.filter(study=study)
        .order_by("id")
        .values(*UNIT_VALUES)
        .iterator(chunk_size=CHUNK)
    )
    count = 0
    for chunk in _batches(units, CHUNK):
        rows = []
        for unit_id, content in _contents(study, chunk).items():
            source, answer = content.sources[0]["text"], content.answer["text"]
            annotation = {
                "kind": "independent",
                "annotator": pseudonym,
                "predicates": {"I": 1, "A": 1, "M": 1, "D": 0},
                "passage_support": 1,
                "source_role": "affiliate_marketing",
                "spans": {
                    key: [
                        {
                            "snapshot": "source" if key == "I" else "answer",
                            "start": 0,
                            "end": 8,
                            "quote": (source if key == "I" else answer)[:8],
                        }
                    ]
                    for key in ("I", "A", "M", "passage_support")
                }
                | {"D": [{"snapshot": "answer", "start": 0, "end": 8, "quote": answer[:8]}]},
                "evidence": {key: {"value": 0.5, "weight": w} for key, w in weights.items()},
                "rationale": None,
                "assisted": None,
            }
            # Sealed as a submission seals it (record_build), so the release re-checks it.
            record = record_build(study=study, content=content, annotation=annotation, parents=[])
            rows.append(
                {
                    "study_id": study.pk,
                    "unit_id": unit_id,
                    "kind": "independent",
                    "revision": 1,
                    "annotation": record["annotation"],
                    "parents": [],
                    "record_digest": record["record_digest"],
                    "codebook_digest": study.codebook.digest,
                    "created_at": study.created_at,
                }
            )
        bulk.insert(Label, rows, returning="record_digest", study_id=study.pk)
        count += len(rows)
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument(
        "--child", nargs=3, metavar=("SLUG", "NAME", "ROOT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args(argv)
    if args.child:
        return child(*args.child)

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_test_environment

    from audit.archive.models import Study
    from audit.archive.services import codebook_install_file, observations_import
    from bench.import_records import build_file

    setup_test_environment()
    vendor = connection.vendor
    test_settings = connection.settings_dict.setdefault("TEST", {})
    scratch = Path(tempfile.mkdtemp(prefix="claimgate-bench-export-"))
    test_settings["NAME"] = TEST_DB if vendor == "postgresql" else str(scratch / "bench.sqlite3")
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    results = []
    try:
        db = connection.settings_dict
        if vendor == "postgresql":
            url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
        else:
            url = f"sqlite:///{db['NAME']}"
        codebook, _ = codebook_install_file(
            path=ROOT / "fixtures" / "codebooks" / "source-risk-1.0.0.json"
        )
        for size in args.sizes:
            slug = f"bench-{size}"
            study = Study.objects.create(slug=slug, title=slug, codebook=codebook, overlap=1)
            data = build_file(size)
            settings.IMPORT_MAX_FILE_BYTES = max(settings.IMPORT_MAX_FILE_BYTES, len(data))
            started = time.perf_counter()
            batch = observations_import(study=study, data=data, file_name="bench.jsonl")
            assert batch.tuples_created == size, (batch.status, batch.errors[:3])
            del data
            labels = _labels(study, f"a-bench{size}")
            if vendor == "postgresql":
                # As autovacuum leaves tables written minutes earlier: hint bits set and
                # planner statistics. Without them the planner takes each chunk's label query
                # for a scan of the whole table (a release right after a bulk import).
                with connection.cursor() as cursor:
                    for table in ("annotator_label", "audit_unit", "audit_ledgerentry"):
                        cursor.execute(f"VACUUM ANALYZE {table}")
            setup_s = time.perf_counter() - started
            connection.close()  # the child gets the database to itself
            out = subprocess.run(
                [sys.executable, __file__, "--child", slug, "v1", str(scratch / "releases")],
                env=dict(os.environ, DATABASE_URL=url),
                capture_output=True,
                text=True,
                check=True,
            )
            figures = json.loads(out.stdout.strip().splitlines()[-1])
            figures.update(size=size, labels=labels, setup_s=setup_s)
            results.append(figures)
            print(json.dumps({k: v for k, v in figures.items() if k != "files"}), flush=True)
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
        import shutil

        shutil.rmtree(scratch, ignore_errors=True)

    lines = [
        f"- database: {vendor}; one independent label per tuple, tables vacuumed and analyzed; "
        "release built in a fresh process (its own wall time and peak RSS)"
    ]
    for r in results:
        megabytes = sum(f["bytes"] for f in r["files"].values()) / 1e6
        rate = r["labels"] / r["seconds"]
        line = (
            f"- {r['labels']:,} labelled tuples: **{r['seconds']:.1f} s** ({rate:,.0f} labels/s), "
            f"peak RSS **{r['peak_mb']:.0f} MB** (of which {r['baseline_mb']:.0f} MB is the "
            f"process before the build: Django, pyarrow), bundle {megabytes:,.0f} MB in "
            f"{len(r['files'])} files"
        )
        if r["labels"] == 100_000:
            line += (
                f" — target ≤ {TARGET_S:.0f} s and ≤ {TARGET_MB} MB: "
                f"{'met' if r['seconds'] <= TARGET_S else 'NOT met'} (time), "
                f"{'met' if r['peak_mb'] <= TARGET_MB else 'NOT met'} (memory)"
            )
        lines.append(line)
    print("\n".join(lines))
    if args.write:
        from bench._report import machine, write_section

        write_section(
            "Release export",
            "Command: `DATABASE_URL=postgres://… python bench/export.py --write`"
            f" ({machine()}).\n\n" + "\n".join(lines),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
