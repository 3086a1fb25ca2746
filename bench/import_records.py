"""Import throughput: observations per file, full validation, bulk writes.

    DATABASE_URL=postgres://... python bench/import_records.py [--tuples 100000] [--write]

Runs in a throw-away test database (created and dropped here), so it never touches the
database DATABASE_URL names. Reports parse + validation and storage separately, and the
second import of the same file (every tuple already present). Target (DESIGN.md):
>= 10,000 tuples/s with full validation.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

TARGET_TUPLES_PER_S = 10_000


def build_file(tuples: int, sources_per_answer: int = 2) -> bytes:
    from tests.archive.builders import HEADER, observation

    lines = [json.dumps(HEADER)]
    for n in range(tuples // sources_per_answer):
        lines.append(json.dumps(observation(n, sources=sources_per_answer), ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=int, default=100_000)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)

    from bench._db import throwaway_database

    with throwaway_database("claimgate_bench_import"):
        from django.db import connection

        from audit.archive.models import Study
        from audit.archive.selectors import codebook_registry
        from audit.archive.services import codebook_install_file, observations_import
        from audit.contract import parse_observation_file

        codebook, _ = codebook_install_file(
            path=ROOT / "fixtures" / "codebooks" / "source-risk-1.0.0.json"
        )
        study = Study.objects.create(slug="bench", title="bench", codebook=codebook)
        data = build_file(args.tuples)
        from django.conf import settings

        settings.IMPORT_MAX_FILE_BYTES = max(settings.IMPORT_MAX_FILE_BYTES, len(data))

        started = time.perf_counter()
        parsed = parse_observation_file(data, codebook_registry())
        parse_s = time.perf_counter() - started
        assert not parsed.errors, parsed.errors[:3]

        started = time.perf_counter()
        batch = observations_import(study=study, data=data, file_name="bench.jsonl")
        first_s = time.perf_counter() - started
        assert batch.tuples_created == args.tuples, (batch.status, batch.errors[:3])

        started = time.perf_counter()
        again = observations_import(study=study, data=data, file_name="bench.jsonl")
        second_s = time.perf_counter() - started
        assert again.tuples_created == 0
        vendor = connection.vendor

    rate = args.tuples / first_s
    lines = [
        f"- file: {args.tuples:,} tuples ({args.tuples // 2:,} observations × 2 sources), "
        f"{len(data) / 1e6:.1f} MB; database: {vendor}",
        f"- parse + full validation alone: {parse_s:.2f} s ({args.tuples / parse_s:,.0f} tuples/s)",
        f"- first import (validation + writes): {first_s:.2f} s → **{rate:,.0f} tuples/s** "
        f"(target ≥ {TARGET_TUPLES_PER_S:,}: {rate / TARGET_TUPLES_PER_S:.2f}× the target)",
        f"- the same file again (nothing new): {second_s:.2f} s",
    ]
    print("\n".join(lines))
    if args.write:
        from bench._report import machine, write_section

        write_section(
            "Import",
            "Command: `DATABASE_URL=postgres://… python bench/import_records.py --write`"
            f" ({machine()}).\n\n" + "\n".join(lines),
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
