"""Reliability cost: our Krippendorff's alpha against the krippendorff package.

    python bench/reliability.py [--runs 7] [--write]

One process, no database. Data: 2 coders, 4 nominal categories, 20% of the cells missing,
as a float array with NaN (the package's own input form), seeded. Each figure is the median
of ``--runs`` timed calls after one warm-up call, the two implementations alternating call
by call on the same array, end to end (encoding included). Then 1,000 bootstrap resamples
of alpha at 10^5 units, and the whole ``summarize`` (four coefficients, unit and cluster
intervals) as context. ``--write`` puts the figures into the "Reliability" section of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from metrics.reliability import bootstrap_ci, krippendorff_alpha, summarize  # noqa: E402

COMMAND = "python bench/reliability.py --write"
SIZES = (10**4, 10**5, 10**6)
BOOT_UNITS = 10**5
N_BOOT = 1000
TARGET_RATIO = 10.0  # at 10^6 units
TARGET_BOOT_S = 1.0


def make_data(units: int, seed: int = 0, coders: int = 2, k: int = 4) -> np.ndarray:
    """Coders agree on about 70% of units; 20% of cells missing."""
    rng = np.random.default_rng(seed)
    first = rng.integers(0, k, units)
    rest = [np.where(rng.random(units) < 0.7, first, rng.integers(0, k, units))]
    data = np.vstack([first, *rest * (coders - 1)]).astype(np.float64)
    data[rng.random(data.shape) < 0.2] = np.nan
    return data


def median_seconds(call: Callable[[], object], runs: int) -> tuple[float, object]:
    result = call()  # warm-up (first-touch page faults, caches)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def paired_medians(
    ours: Callable[[], float], theirs: Callable[[], float], runs: int
) -> tuple[float, float, float, float]:
    """Medians of alternating calls, so both see the same load on a shared machine."""
    ours_value, their_value = ours(), theirs()  # warm-up
    ours_t, theirs_t = [], []
    for _ in range(runs):
        start = time.perf_counter()
        ours_value = ours()
        middle = time.perf_counter()
        their_value = theirs()
        ours_t.append(middle - start)
        theirs_t.append(time.perf_counter() - middle)
    return statistics.median(ours_t), statistics.median(theirs_t), ours_value, their_value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed calls per figure")
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args(argv)

    import krippendorff  # test/bench dependency only (dev extras)

    load_before = os.getloadavg()[0]
    rows = []
    for units in SIZES:
        data = make_data(units)
        ours, theirs, ours_value, their_value = paired_medians(
            lambda d=data: krippendorff_alpha(d),
            lambda d=data: krippendorff.alpha(reliability_data=d, level_of_measurement="nominal"),
            args.runs,
        )
        diff = abs(ours_value - their_value)
        rows.append((units, ours, theirs, diff))
        print(
            f"{units:>9,} units: ours {ours * 1e3:9.2f} ms, krippendorff {theirs * 1e3:9.2f} ms,"
            f" ratio {theirs / ours:6.1f}x, |difference| {diff:.1e}"
        )

    data = make_data(BOOT_UNITS, seed=1)
    clusters = np.arange(BOOT_UNITS) % 500
    boot, interval = median_seconds(
        lambda: bootstrap_ci(data, krippendorff_alpha, n_boot=N_BOOT, seed=0), args.runs
    )
    summary_s, _ = median_seconds(
        lambda: summarize(data, clusters=clusters, n_boot=N_BOOT, seed=0), args.runs
    )
    one_call = next(theirs for units, _, theirs, _ in rows if units == BOOT_UNITS)
    print(
        f"bootstrap: {N_BOOT:,} resamples of alpha at {BOOT_UNITS:,} units: {boot * 1e3:.1f} ms"
        f" (interval {interval[0]:.4f} .. {interval[1]:.4f})"
    )
    print(
        f"summarize (4 coefficients, unit + cluster intervals, {N_BOOT:,} resamples each) "
        f"at {BOOT_UNITS:,} units in 500 clusters: {summary_s * 1e3:.1f} ms"
    )
    lists = data.tolist()
    lists = [[None if v != v else int(v) for v in row] for row in lists]
    list_s, _ = median_seconds(lambda: krippendorff_alpha(lists), max(3, args.runs // 2))
    print(f"alpha from Python lists (None missing) at {BOOT_UNITS:,} units: {list_s * 1e3:.1f} ms")

    if args.write:
        from bench._report import machine, write_section

        big = rows[-1]
        ratio = big[2] / big[1]
        table = "\n".join(
            f"| {units:,} | {ours * 1e3:.2f} ms | {theirs * 1e3:.2f} ms | {theirs / ours:.1f}x "
            f"| {diff:.1e} |"
            for units, ours, theirs, diff in rows
        )
        verdict_ratio = "met" if ratio >= TARGET_RATIO else "missed"
        verdict_boot = "met" if boot < TARGET_BOOT_S else "missed"
        body = f"""
Command: `{COMMAND}` (one process, no database; the `krippendorff` package comes with the
dev extras). Machine: {machine()}; 1-minute load average {load_before:.1f} at the start
(the machine is shared, so absolute times vary between runs; the two implementations
alternate call by call, so the ratios compare like with like).

Krippendorff's alpha, nominal, 2 coders, 4 categories, 20% of cells missing, as a float
array with NaN; both implementations on the same array, end to end (encoding included);
median of {args.runs} alternating calls after a warm-up call.

| units | `metrics.reliability` | `krippendorff` package | ratio | abs. difference |
|---|---|---|---|---|
{table}

Target at 10^6 units: at least {TARGET_RATIO:.0f}x the package: {ratio:.1f}x, {verdict_ratio}.

- {N_BOOT:,} bootstrap resamples of alpha at {BOOT_UNITS:,} units: **{boot * 1e3:.1f} ms**
  (target under {TARGET_BOOT_S:.0f} s: {verdict_boot}). With the package, {N_BOOT:,} resamples
  would take about {N_BOOT * one_call:.0f} s ({N_BOOT:,} x one call; extrapolated, not run).
- `summarize` at {BOOT_UNITS:,} units in 500 clusters (alpha, Fleiss' kappa, Gwet's AC1,
  raw agreement, pairwise Cohen; {N_BOOT:,} unit and {N_BOOT:,} cluster resamples):
  {summary_s * 1e3:.1f} ms.
- The same alpha from Python lists with `None` for missing (encoding in Python):
  {list_s * 1e3:.1f} ms at {BOOT_UNITS:,} units.

Why it is fast: units are collapsed to their distinct columns of codes with counts (one
`bincount` of the columns packed into integers), so the coincidence sums run over a
handful of patterns; a bootstrap resample is a multinomial draw of pattern counts, not a
copy of the data.
"""
        write_section("Reliability", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
