"""``python -m audit.conformance --out DIR``: run the suite, write its files, and exit 0
only if every number equals the specification's."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from audit.conformance.outputs import render_files, write_files
from audit.conformance.suite import SuiteResult, run_suite


def _passed(counts: dict[str, int]) -> int:
    return next(value for key, value in counts.items() if key != "total")


def describe(result: SuiteResult) -> str:
    """A short human summary of a run."""
    summary = result.summary
    states = summary["states"]
    oracle = summary["oracle_agreement"]
    mutations = summary["mutations"]
    transitions = summary["transitions"]
    lines = [
        f"conformance suite {result.manifest['suite_version']}, "
        f"checker {result.manifest['checker_version']}",
        f"states: {states['total']} ({states['positive']} positive, "
        f"{states['negative']} negative, {states['unresolved']} unresolved); "
        f"oracle agreement {oracle['matched']}/{oracle['total']}",
        "transitions: "
        + ", ".join(
            f"{family} {_passed(counts)}/{counts['total']}"
            for family, counts in transitions.items()
        ),
        f"mutations: {mutations['rejected']}/{mutations['total']} rejected, "
        f"{mutations['reason_matched']}/{mutations['total']} with the expected reason "
        f"({mutations['types']} types)",
    ]
    if result.ok:
        lines.append("PASS: every number equals the specification")
    else:
        lines.append(f"FAIL: {len(result.mismatches)} number(s) differ from the specification")
        lines.extend(f"  {line}" for line in result.mismatches)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m audit.conformance",
        description="Run the Claimgate conformance suite and write its outputs.",
    )
    parser.add_argument("--out", required=True, help="directory for the output files")
    args = parser.parse_args(argv)
    result = run_suite()
    write_files(render_files(result), args.out)
    print(describe(result))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
