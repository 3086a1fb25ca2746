"""Prediction import and scoring: a judge's file for every unit of a frozen study.

    DATABASE_URL=postgres://... python bench/predictions.py [--tuples 100000]

Runs in a throw-away test database (created and dropped here). Measures the whole import
(read, check every line, bulk insert, score against the final labels) of one prediction
per unit, and the pure scoring (``metrics.estimates.judge_scores``: confusion with U,
kappa, per-class precision and recall, alpha and beta, 1,000 resamples clustered by domain)
on as many units with gold values.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=int, default=100_000)
    args = parser.parse_args(argv)

    from bench._db import throwaway_database
    from bench.import_records import build_file

    with throwaway_database("claimgate_bench_predictions"):
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.db import connection

        from audit.archive.models import Study, Unit
        from audit.archive.services import codebook_install_file, observations_import
        from audit.management.commands.load_demo import demo_files
        from audit.partitions.services import study_freeze
        from metrics.estimates import judge_scores
        from metrics.services import predictions_import

        codebook, _ = codebook_install_file(path=demo_files("tuple")[0])
        study = Study.objects.create(slug="bench", title="bench", codebook=codebook)
        data = build_file(args.tuples)
        settings.IMPORT_MAX_FILE_BYTES = max(settings.IMPORT_MAX_FILE_BYTES, len(data) * 2)
        observations_import(study=study, data=data, file_name="bench.jsonl")
        Unit.objects.filter(study=study).update(partition="calibration")
        user = get_user_model().objects.create(username="bench")
        study_freeze(study=study, user=user)

        rng = random.Random(15)
        digests = list(Unit.objects.filter(study=study).values_list("digest", flat=True))
        header = {
            "claimgate": "predictions",
            "format_version": 1,
            "codebook": {"name": codebook.name, "version": codebook.version},
            "field": "R_O",
            "predictor": {"kind": "judge", "name": "bench", "version": "1"},
            "positive": 0,
        }
        lines = [json.dumps(header)]
        lines += [json.dumps({"unit": d, "value": rng.choice((0, 1, None))}) for d in digests]
        file = ("\n".join(lines) + "\n").encode()
        started = time.perf_counter()
        outcome = predictions_import(study=study, data=file, file_name="judge.jsonl")
        import_s = time.perf_counter() - started
        assert outcome.created, outcome.problems[:3]
        vendor = connection.vendor

    n = len(digests)
    gold = [rng.choice((0, 1, None)) for _ in range(n)]
    predicted = [g if rng.random() < 0.8 else rng.choice((0, 1, None)) for g in gold]
    domains = [f"domain-{i % 40}" for i in range(n)]
    started = time.perf_counter()
    judge_scores(predicted, gold, domains, seed=0, n_boot=1000, positive=0)
    score_s = time.perf_counter() - started
    print(f"- {n:,} units, database {vendor}")
    rate = n / import_s
    print(
        f"- prediction import (read, check, insert, score): {import_s:.2f} s ({rate:,.0f} lines/s)"
    )
    print(f"- judge_scores on {n:,} units with gold, 40 domains, 1,000 resamples: {score_s:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
