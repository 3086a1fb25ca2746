"""Run a test suite (by default the browser tests) several times on a busy machine and
report passes and failures per test.

Every core is kept busy for the whole run by a bounded CPU load: ``stress-ng --cpu``
(Debian's stress-ng) with one worker per core, or, without it, one Python busy loop per
core. The load stops at the end (and by itself after a ceiling, should this script be
killed). Each run is a fresh ``pytest`` process using whatever DATABASE_URL and
CELERY_BROKER_URL are set.

    python tests/stress.py --runs 10 tests/browser
    python tests/stress.py --runs 3 tests/browser/test_adjudication.py -k toolbar

The exit status is 0 only when every run passed. The report (also written to
``build/stress/report.txt``) gives each test's passes and failures, each run's outcome and
the load average seen during the runs.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The load ends by itself this long after it started, whatever happens to this script.
LOAD_CEILING_SECONDS = 6 * 3600


def _busy(deadline: float, parent: int) -> None:
    """One core's worth of work until the deadline or until the parent is gone."""
    while time.monotonic() < deadline and os.getppid() == parent:
        for _ in range(100_000):
            pass


class CpuLoad:
    """One busy worker per core until ``stop()``."""

    def __init__(self, cores: int, percent: int) -> None:
        self.cores = cores
        self.percent = percent
        self.process: subprocess.Popen | None = None
        self.loops: list[multiprocessing.Process] = []
        self.tool = ""

    def start(self) -> CpuLoad:
        stress_ng = shutil.which("stress-ng")
        if stress_ng:
            self.tool = f"stress-ng --cpu {self.cores} --cpu-load {self.percent}"
            self.process = subprocess.Popen(
                [
                    stress_ng,
                    "--cpu",
                    str(self.cores),
                    "--cpu-load",
                    str(self.percent),
                    "--timeout",
                    f"{LOAD_CEILING_SECONDS}s",
                    "--quiet",
                ],
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # its workers form one group, stopped together
            )
        else:
            self.tool = f"{self.cores} Python busy loops"
            deadline = time.monotonic() + LOAD_CEILING_SECONDS
            for _ in range(self.cores):
                loop = multiprocessing.Process(target=_busy, args=(deadline, os.getpid()))
                loop.daemon = True
                loop.start()
                self.loops.append(loop)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        for loop in self.loops:
            loop.terminate()
            loop.join()


@dataclass
class LoadSampler:
    """The 1-minute load average, read every few seconds while the runs go."""

    every: float = 5.0
    samples: list[float] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> LoadSampler:
        threading.Thread(target=self._run, daemon=True).start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.samples.append(os.getloadavg()[0])

    def stop(self) -> None:
        self._stop.set()

    def summary(self) -> str:
        if not self.samples:
            return "no sample"
        mean = sum(self.samples) / len(self.samples)
        return (
            f"min {min(self.samples):.2f}, mean {mean:.2f}, max {max(self.samples):.2f} "
            f"({len(self.samples)} samples, every {self.every:.0f} s)"
        )


def outcomes(junit: Path) -> dict[str, str]:
    """Each test's outcome in a JUnit XML report: passed, failed (a failure or an error)
    or skipped."""
    found: dict[str, str] = {}
    if not junit.exists():
        return found
    for case in ElementTree.parse(junit).getroot().iter("testcase"):  # noqa: S314 - our own report
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = "failed"
            elif child.tag == "skipped" and outcome == "passed":
                outcome = "skipped"
        found[name] = outcome
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="how many runs (10)")
    parser.add_argument("--cores", type=int, default=os.cpu_count() or 1, help="busy workers")
    parser.add_argument("--cpu-load", type=int, default=100, help="percent per worker (100)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "stress")
    parser.add_argument(
        "pytest_args", nargs=argparse.REMAINDER, help="what pytest runs (tests/browser)"
    )
    args = parser.parse_args(argv)
    args.pytest_args = [arg for arg in args.pytest_args if arg != "--"] or ["tests/browser"]
    args.out.mkdir(parents=True, exist_ok=True)

    # Stopped from outside (SIGTERM), the load is stopped too (see the finally below).
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    load = CpuLoad(args.cores, args.cpu_load).start()
    sampler = LoadSampler().start()
    per_test: dict[str, Counter] = {}
    runs: list[tuple[int, int, float, Counter]] = []
    started = time.monotonic()
    try:
        for number in range(1, args.runs + 1):
            junit = args.out / f"run-{number}.xml"
            junit.unlink(missing_ok=True)
            began = time.monotonic()
            command = [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                f"--junitxml={junit}",
                *args.pytest_args,
            ]
            with open(args.out / f"run-{number}.log", "wb") as log:
                status = subprocess.run(command, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
            seen = outcomes(junit)
            for name, outcome in seen.items():
                per_test.setdefault(name, Counter())[outcome] += 1
            counts = Counter(seen.values())
            runs.append((number, status.returncode, time.monotonic() - began, counts))
            print(
                f"run {number}/{args.runs}: exit {status.returncode}, "
                + ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
                + f", {time.monotonic() - began:.0f} s, load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
    finally:
        sampler.stop()
        load.stop()

    lines = [
        f"{' '.join(['pytest', *args.pytest_args])}: {len(runs)} runs in "
        f"{time.monotonic() - started:.0f} s under {load.tool} on {os.cpu_count()} cores",
        f"load average (1 min) during the runs: {sampler.summary()}",
        f"runs passed: {sum(1 for run in runs if run[1] == 0)} of {len(runs)}",
        "",
        f"{'passed':>6} {'failed':>6} {'skipped':>7}  test",
    ]
    for name in sorted(per_test):
        counter = per_test[name]
        passed, failed, skipped = counter["passed"], counter["failed"], counter["skipped"]
        lines.append(f"{passed:>6} {failed:>6} {skipped:>7}  {name}")
    lines.append("")
    for number, code, seconds, counts in runs:
        detail = ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
        lines.append(f"run {number}: exit {code}, {detail}, {seconds:.0f} s")
    report = "\n".join(lines) + "\n"
    (args.out / "report.txt").write_text(report)
    print("\n" + report, end="")
    failed = any(code != 0 for _, code, _, _ in runs) or len(runs) < args.runs
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
