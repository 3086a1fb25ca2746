"""Release export: time and peak memory of a release at 10⁵ and 10⁶ labels.

    DATABASE_URL=postgres://... python bench/export.py [--sizes 100000 1000000] [--write]

Runs in a throw-away test database (``<DATABASE_URL's name>_bench_export``, created and dropped
here), so it never touches the database DATABASE_URL names. For each size it imports that
many tuples, stores one independent label per tuple (bulk, records built and sealed as the
application does), vacuums and analyzes the tables (as autovacuum would), then builds the
release in a **fresh child process**, whose wall time and peak resident memory
(``VmHWM``) are what is reported — the setup's own memory does not count — with the CPU
time and peak memory of the process that writes the tables beside it. Target (DESIGN.md):
10⁵ labelled tuples in ≤ 5 s and ≤ 200 MB (both processes).
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
TEST_DB = "bench_export"


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


def child(
    slug: str, name: str, root: str, profile: str | None = None, reference: bool = False
) -> int:
    """Build one release and print its figures as JSON (runs in its own process); with
    ``profile``, under cProfile, its statistics written to that file; with ``reference``,
    the bundle only, by the standard library's JSON alone (``bundle_write(reference=True)``,
    the path the compiled one must match byte for byte)."""
    import django

    django.setup()
    from django.conf import settings

    from audit.archive.models import Study
    from audit.releases.services import bundle_write, release_build

    settings.RELEASES_ROOT = Path(root)
    study = Study.objects.get(slug=slug)
    baseline = _maxrss_mb()
    profiler = None
    if profile:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    started = time.perf_counter()
    cpu_started = time.process_time()
    if reference:
        directory = Path(root) / "reference" / name
        files = bundle_write(study=study, name=name, directory=directory, reference=True).files
    else:
        release = release_build(study=study, name=name)
        assert release.status == "ready", release.error
        files = release.files
    seconds = time.perf_counter() - started
    cpu_seconds = time.process_time() - cpu_started
    from audit.releases import bundle_tables

    tables = dict(bundle_tables.last_figures)
    if profiler is not None:
        profiler.disable()
        profiler.dump_stats(profile)
    print(
        json.dumps(
            {
                "seconds": seconds,
                "cpu_seconds": cpu_seconds,
                "peak_mb": _maxrss_mb(),
                "baseline_mb": baseline,
                # The process that wrote the tables beside the build (none: in the build's).
                "tables_cpu_seconds": tables.get("cpu_seconds", 0.0),
                "tables_peak_mb": tables.get("peak_mb", 0.0),
                "files": files,
            }
        )
    )
    return 0


def _labels(study, pseudonym: str) -> int:
    """One valid independent label per unit, inserted in bulk."""
    from annotator.labelling.models import Label
    from audit.archive import bulk
    from audit.archive.models import Unit
    from audit.archive.records import UNIT_VALUES, record_build, unit_contents_of
    from audit.releases.services import CHUNK, _batches

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
        for unit_id, content in unit_contents_of(study=study, units=chunk).items():
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


def _child_run(args: argparse.Namespace, url: str, root: Path, slug: str, name: str, *extra: str):
    from django.db import connection

    connection.close()  # the child gets the database to itself
    command = [sys.executable, __file__, "--child", slug, name, str(root), *extra]
    if args.profile:
        command += ["--profile", f"{args.profile}.{name}"]
    out = subprocess.run(
        command,
        env=dict(os.environ, DATABASE_URL=url),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _build(
    args: argparse.Namespace,
    url: str,
    scratch: Path,
    slug: str,
    size: int,
    labels: int,
    setup_s: float,
) -> dict:
    """Build the release of ``slug`` in a child process (and by the reference path, with
    ``--reference``, comparing every file's SHA-256); the figures of the build."""
    name = f"v{int(time.time() * 1000)}"
    figures = _child_run(args, url, scratch / "releases", slug, name)
    load = os.getloadavg()
    figures.update(size=size, labels=labels, setup_s=setup_s, load=load)
    if args.reference:
        old = _child_run(args, url, scratch / "releases", slug, name, "--reference")
        sums = {k: v["sha256"] for k, v in figures["files"].items() if k != "SHA256SUMS"}
        old_sums = {k: v["sha256"] for k, v in old["files"].items() if k != "SHA256SUMS"}
        # README.md names the release; both builds use the same name, so it compares too.
        figures["reference"] = {
            "seconds": old["seconds"],
            "cpu_seconds": old["cpu_seconds"],
            "peak_mb": old["peak_mb"],
            "identical": sums == old_sums,
            "differing": sorted(
                k for k in sums.keys() | old_sums.keys() if sums.get(k) != old_sums.get(k)
            ),
        }
        figures["reference_load"] = os.getloadavg()
    print(json.dumps({k: v for k, v in figures.items() if k != "files"}), flush=True)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="build under cProfile and write its statistics to FILE.<size> (slower)",
    )
    parser.add_argument(
        "--child", nargs=3, metavar=("SLUG", "NAME", "ROOT"), help=argparse.SUPPRESS
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also build each release by the reference path (standard library JSON only) "
        "and compare the two bundles' SHA256SUMS",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the benchmark database and reuse it (and its studies) on the next run",
    )
    args = parser.parse_args(argv)
    if args.child:
        return child(*args.child, profile=args.profile, reference=args.reference)

    import django

    django.setup()
    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_test_environment

    from audit.archive.models import Study
    from audit.archive.services import codebook_install_file, observations_import
    from audit.management.commands.load_demo import demo_files
    from bench.import_records import build_file

    setup_test_environment()
    vendor = connection.vendor
    test_settings = connection.settings_dict.setdefault("TEST", {})
    scratch = Path(tempfile.mkdtemp(prefix="claimgate-bench-export-"))
    # Named after DATABASE_URL's database, so that runs against different databases of
    # one server (other people's, other branches') never share it.
    test_db = f"{connection.settings_dict['NAME']}_{TEST_DB}"
    test_settings["NAME"] = test_db if vendor == "postgresql" else str(scratch / "bench.sqlite3")
    kept = False
    if args.keep and vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [test_db])
            kept = cursor.fetchone() is not None
    if kept:
        old_name = connection.settings_dict["NAME"]
        connection.close()
        connection.settings_dict["NAME"] = test_db
    else:
        old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    results = []
    try:
        db = connection.settings_dict
        if vendor == "postgresql":
            url = f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
        else:
            url = f"sqlite:///{db['NAME']}"
        codebook, _ = codebook_install_file(path=demo_files("tuple")[0])
        for size in args.sizes:
            slug = f"bench-{size}"
            study = Study.objects.filter(slug=slug).first()
            if study is not None:  # --keep: built by an earlier run
                results.append(_build(args, url, scratch, slug, size, size, 0.0))
                continue
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
            results.append(_build(args, url, scratch, slug, size, labels, setup_s))
    finally:
        if args.keep and vendor == "postgresql":
            connection.close()
            connection.settings_dict["NAME"] = old_name
        else:
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
            f"- {r['labels']:,} labelled tuples: **{r['seconds']:.1f} s** ({rate:,.0f} labels/s; "
            f"{r['cpu_seconds']:.1f} s of CPU in the building process), "
            f"peak RSS **{r['peak_mb']:.0f} MB** (of which {r['baseline_mb']:.0f} MB is the "
            f"process before the build: Django), bundle {megabytes:,.0f} MB in "
            f"{len(r['files'])} files"
        )
        if r.get("tables_peak_mb"):
            line += (
                f"; the process writing the tables beside it: {r['tables_cpu_seconds']:.1f} s "
                f"of CPU, peak RSS {r['tables_peak_mb']:.0f} MB (both processes: "
                f"**{r['peak_mb'] + r['tables_peak_mb']:.0f} MB**)"
            )
        if r["labels"] == 100_000:
            peak = r["peak_mb"] + r.get("tables_peak_mb", 0.0)
            line += (
                f" — target ≤ {TARGET_S:.0f} s and ≤ {TARGET_MB} MB: "
                f"{'met' if r['seconds'] <= TARGET_S else 'NOT met'} (time), "
                f"{'met' if peak <= TARGET_MB else 'NOT met'} (memory)"
            )
        line += f"; load average {' / '.join(f'{x:.2f}' for x in r['load'])}"
        if "reference" in r:
            ref = r["reference"]
            line += (
                f"; the reference path (standard library JSON only) on the same data: "
                f"{ref['seconds']:.1f} s ({ref['cpu_seconds']:.1f} s CPU), "
                f"{ref['peak_mb']:.0f} MB, bundle "
                + (
                    "**identical** (every file's SHA-256)"
                    if ref["identical"]
                    else f"**DIFFERENT** in {', '.join(ref['differing'])}"
                )
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
