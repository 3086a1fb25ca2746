"""Import throughput at 10^5 tuples: the command and the API upload, full validation.

    DATABASE_URL=postgres://... python bench/import_records.py [--tuples 100000] [--write]
    DATABASE_URL=postgres://... python bench/import_records.py --split

Runs in a throw-away test database named after DATABASE_URL's (``<name>_bench_import``,
created and dropped here), so it never touches the database DATABASE_URL names and two
checkouts (old code and new) can be measured side by side. Times the same import three
ways, each into a study of its own with observations of its own (so each writes every
archive row): the service on the file's bytes (parse + validation, then the writes), the
``import_records`` command on a file on disk, and the API upload (multipart POST through
Django's test client, in process); then the command's file again (every tuple already
present). Reports the seconds, the tuples per second against the goal (issue 18: >=
20,000 at 10^5), the CPU seconds of this process, of the planning process it starts
(audit.archive.planning, for a file of 4 MiB or more on PostgreSQL) and of its
PostgreSQL backend (the machine is shared: the load average goes with each figure),
and how much the command grew this process (peak resident set).
``--split`` times the service alone, with the backend's CPU seconds of each kind of bulk
write (where the database's time goes).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.test")

TARGET_TUPLES_PER_S = 20_000


def build_file(tuples: int, sources_per_answer: int = 2, first: int = 0) -> bytes:
    from tests.archive.builders import HEADER, observation

    lines = [json.dumps(HEADER)]
    for n in range(first, first + tuples // sources_per_answer):
        lines.append(json.dumps(observation(n, sources=sources_per_answer), ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8")


def _write_file(path: Path, tuples: int, first: int, sources_per_answer: int = 2) -> None:
    """:func:`build_file` written line by line, never held whole."""
    from tests.archive.builders import HEADER, observation

    with path.open("w", encoding="utf-8") as out:
        out.write(json.dumps(HEADER) + "\n")
        for n in range(first, first + tuples // sources_per_answer):
            out.write(json.dumps(observation(n, sources=sources_per_answer), ensure_ascii=False))
            out.write("\n")


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _backend_cpu(pid: int) -> float:
    """CPU seconds (user + system) of the PostgreSQL backend ``pid`` (same host)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def _children_cpu() -> float:
    """CPU seconds of this process's children that have ended (the import's planning
    process: audit.archive.planning, waited for when its import ends)."""
    times = os.times()
    return times.children_user + times.children_system


class Timed:
    """Wall and CPU seconds (this process; the planning processes it started; its
    database backend) of a block."""

    def __init__(self, backend: int | None) -> None:
        self.backend = backend

    def __enter__(self) -> Timed:
        self.load = _load()
        self.started = time.perf_counter()
        self.cpu = time.process_time()
        self.planning = _children_cpu()
        self.db = _backend_cpu(self.backend) if self.backend else 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.started
        self.cpu = time.process_time() - self.cpu
        self.planning = _children_cpu() - self.planning
        self.db = (_backend_cpu(self.backend) - self.db) if self.backend else float("nan")

    def line(self, what: str, tuples: int) -> str:
        rate = tuples / self.seconds
        return (
            f"- {what}: {self.seconds:.2f} s → **{rate:,.0f} tuples/s** "
            f"({rate / TARGET_TUPLES_PER_S:.2f}× the {TARGET_TUPLES_PER_S:,} goal); CPU "
            f"{self.cpu:.1f} s Python + {self.planning:.1f} s planning process + "
            f"{self.db:.1f} s PostgreSQL; load average {self.load}"
        )


def _split(tuples: int) -> str:
    """The service on the bytes, each bulk write of audit.archive.bulk timed by the CPU
    seconds its statements cost the backend (and this thread): where the database's time
    goes. The wrappers time the writes only; the rest of the backend's CPU (the batch, the
    commit, the probes) is the difference to the total."""
    from collections import defaultdict

    from django.conf import settings
    from django.db import connection

    from audit.archive import bulk
    from audit.archive.models import Study
    from audit.archive.services import codebook_install_file, observations_import
    from audit.management.commands.load_demo import demo_files

    codebook, _ = codebook_install_file(path=demo_files("tuple")[0])
    settings.IMPORT_MAX_FILE_BYTES = 10**10
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        backend = cursor.fetchone()[0]
    spent: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    depth = [0]  # a write made inside another timed one counts as that one's

    def timed(name: str) -> None:
        write = getattr(bulk, name)

        def wrapper(model, *args, **kwargs):  # type: ignore[no-untyped-def]
            if depth[0]:
                return write(model, *args, **kwargs)
            depth[0] += 1
            db, cpu = _backend_cpu(backend), time.thread_time()
            try:
                return write(model, *args, **kwargs)
            finally:
                depth[0] -= 1
                row = spent[f"{name} {model.__name__}"]
                row[0] += _backend_cpu(backend) - db
                row[1] += time.thread_time() - cpu

        setattr(bulk, name, wrapper)

    for name in ("upsert_rows", "_allocate_ids", "_copy_into"):
        timed(name)
    data = build_file(tuples)
    study = Study.objects.create(slug="split", title="split", codebook=codebook)
    with Timed(backend) as service:
        batch = observations_import(study=study, data=data, file_name="split.jsonl")
    assert batch.tuples_created == tuples, (batch.status, batch.errors[:3])
    lines = [
        service.line("service on the file's bytes", tuples),
        "",
        "| bulk write | backend CPU s | writing thread CPU s |",
        "|---|---|---|",
    ]
    for what, (db, cpu) in sorted(spent.items(), key=lambda item: -item[1][0]):
        lines.append(f"| `{what}` | {db:.2f} | {cpu:.2f} |")
    rest = service.db - sum(db for db, _ in spent.values())
    lines.append(f"| the rest (batch, probes, commit) | {rest:.2f} | |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=int, default=100_000)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    parser.add_argument(
        "--split",
        action="store_true",
        help="only the service on the bytes, with the PostgreSQL backend's CPU seconds of "
        "each kind of bulk write (PostgreSQL only)",
    )
    args = parser.parse_args(argv)
    tuples = args.tuples
    observations = tuples // 2

    from bench._db import throwaway_database

    # Named after DATABASE_URL's database, so that two checkouts measured side by side
    # (old code and new) never share one.
    base = os.environ.get("DATABASE_URL", "").rsplit("/", 1)[-1].split("?")[0] or "claimgate"
    if args.split:
        with throwaway_database(f"{base}_bench_import"):
            print(_split(tuples))
        return 0
    with throwaway_database(f"{base}_bench_import"):
        from django.conf import settings
        from django.contrib.auth import get_user_model
        from django.core.management import call_command
        from django.db import connection
        from rest_framework.test import APIClient

        from annotator.memberships.models import Membership, Role
        from audit.archive.models import Study
        from audit.archive.selectors import codebook_registry
        from audit.archive.services import codebook_install_file, observations_import
        from audit.contract import parse_observation_file
        from audit.management.commands.load_demo import demo_files

        codebook, _ = codebook_install_file(path=demo_files("tuple")[0])
        vendor = connection.vendor
        backend = None
        if vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                backend = cursor.fetchone()[0]
        settings.IMPORT_MAX_FILE_BYTES = 10**10
        lines = []

        folder = tempfile.TemporaryDirectory()
        path = Path(folder.name) / "observations.jsonl"

        # 1. the command, on a file on disk (read line by line, never whole), first: the
        # process's peak memory has not yet held a file
        _write_file(path, tuples, first=observations)
        command_study = Study.objects.create(slug="cmd", title="cmd", codebook=codebook)
        before = _peak_kib()
        with Timed(backend) as command:
            call_command("import_records", str(path), study="cmd", stdout=io.StringIO())
        grown_mb = (_peak_kib() - before) / 1024
        assert command_study.tuples.count() == tuples
        with Timed(backend) as again:
            call_command("import_records", str(path), study="cmd", stdout=io.StringIO())
        assert command_study.tuples.count() == tuples
        size_mb = path.stat().st_size / 1e6

        # 2. the service on the bytes, and the parse + validation alone
        data = build_file(tuples, first=0)
        with Timed(None) as parse:
            parsed = parse_observation_file(data, codebook_registry())
        assert not parsed.errors, parsed.errors[:3]
        del parsed
        study = Study.objects.create(slug="bench", title="bench", codebook=codebook)
        with Timed(backend) as service:
            batch = observations_import(study=study, data=data, file_name="bench.jsonl")
        assert batch.tuples_created == tuples, (batch.status, batch.errors[:3])
        del data

        with folder:
            # 3. the API upload
            _write_file(path, tuples, first=2 * observations)
            api_study = Study.objects.create(slug="api", title="api", codebook=codebook)
            # The researcher alone: an import queues the drawing of its annotators' queue
            # orders, which in this process (no broker: eager) would run inside the timing.
            researcher = get_user_model().objects.create(username="res")
            Membership.objects.create(study=api_study, user=researcher, role=Role.RESEARCHER)
            client = APIClient()
            client.force_authenticate(researcher)
            with path.open("rb") as upload, Timed(backend) as api:
                response = client.post(
                    "/api/studies/api/imports/", {"file": upload}, format="multipart"
                )
            assert response.status_code == 201, response.content[:500]
            assert api_study.tuples.count() == tuples

    lines = [
        f"- file: {tuples:,} tuples ({observations:,} observations × 2 sources), "
        f"{size_mb:.1f} MB; database: {vendor}",
        f"- parse + full validation alone: {parse.seconds:.2f} s "
        f"({tuples / parse.seconds:,.0f} tuples/s)",
        command.line("`import_records` command, file on disk", tuples),
        service.line("service on the file's bytes (validation + writes + commit)", tuples),
        api.line("API upload (multipart POST, in process)", tuples),
        f"- the command's file again (nothing new): {again.seconds:.2f} s",
        f"- the command's peak memory growth: {grown_mb:.0f} MB for a {size_mb:.0f} MB file",
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
