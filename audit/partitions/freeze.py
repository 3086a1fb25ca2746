"""What a freeze records (codebook, pipelines, thresholds, partitions, each with its
digest) and what stands in its way. Pure, no Django."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from audit.contract.canonical import canonical_digest, canonical_digest_unchecked
from audit.partitions.leakage import Leak, leakage, leakage_summary
from audit.partitions.rules import (
    LEAKAGE,
    MAX_THRESHOLDS,
    NO_UNITS,
    PARTITIONS,
    THRESHOLD_NAME,
    UNASSIGNED_UNITS,
    UnitGroups,
    partition_counts,
)


def partition_digest(pairs: Iterable[tuple[str, str]]) -> str:
    """Canonical digest of the sorted ``[unit digest, partition]`` list. (A list of lists
    of strings has no object keys to check: the unchecked serialization, same bytes.)"""
    return canonical_digest_unchecked(
        sorted([str(digest), str(partition)] for digest, partition in pairs)
    )


def pipelines_normal(pipelines: Iterable[Mapping[str, str]]) -> list[dict[str, str]]:
    """``[{name, version, key}]`` sorted, one entry per pipeline."""
    rows = {
        (p["name"], p["version"], p["key"]): {
            "name": p["name"],
            "version": p["version"],
            "key": p["key"],
        }
        for p in pipelines
    }
    return [rows[key] for key in sorted(rows)]


#: The two reliability thresholds the gate compares every field's Krippendorff's alpha
#: with (DESIGN.md, "Claim ledger and validation gate"): named operating thresholds of the
#: study like any other, set before the freeze and frozen with it. Krippendorff's usual
#: values are the defaults: tentative conclusions from 0.667, firm ones from 0.8.
RELIABILITY_TENTATIVE = "reliability_tentative"
RELIABILITY_FIRM = "reliability_firm"
RELIABILITY_DEFAULTS = {RELIABILITY_TENTATIVE: 0.667, RELIABILITY_FIRM: 0.8}


def reliability_thresholds(thresholds: Mapping[str, Any]) -> tuple[float, float]:
    """(tentative, firm) of a study's thresholds, the defaults where one is not set."""
    return (
        float(thresholds.get(RELIABILITY_TENTATIVE, RELIABILITY_DEFAULTS[RELIABILITY_TENTATIVE])),
        float(thresholds.get(RELIABILITY_FIRM, RELIABILITY_DEFAULTS[RELIABILITY_FIRM])),
    )


def thresholds_with_defaults(thresholds: Mapping[str, Any]) -> dict[str, Any]:
    """The thresholds with the reliability ones filled in where not set: what a freeze
    records, so that the frozen numbers never depend on this code's defaults."""
    return {**RELIABILITY_DEFAULTS, **thresholds}


def thresholds_problems(value: Any) -> list[str]:
    """Why ``value`` is not a set of operating thresholds: a JSON object of named, finite
    numbers (booleans are not numbers here). Empty: it is one."""
    if not isinstance(value, dict):
        return ['thresholds are a JSON object of named numbers, e.g. {"priority_review": 0.6}']
    problems = []
    if len(value) > MAX_THRESHOLDS:
        problems.append(f"at most {MAX_THRESHOLDS} thresholds")
    for name, number in value.items():
        if not isinstance(name, str) or not THRESHOLD_NAME.fullmatch(name):
            problems.append(
                f"{name!r} is not a threshold name: a letter, then letters, digits, _ . or -"
                " (at most 100 characters)"
            )
            continue
        if isinstance(number, bool) or not isinstance(number, int | float):
            problems.append(f"{name}: {json.dumps(number)} is not a number")
        elif not math.isfinite(number):
            problems.append(f"{name}: the value must be finite")
        elif name in RELIABILITY_DEFAULTS and not 0 <= number <= 1:
            problems.append(f"{name}: a reliability threshold is an alpha between 0 and 1")
    if not problems:
        tentative, firm = reliability_thresholds(value)
        if tentative > firm:
            problems.append(
                f"{RELIABILITY_TENTATIVE} ({tentative}) must not exceed {RELIABILITY_FIRM} ({firm})"
            )
    return problems


@dataclass(frozen=True)
class FreezeContents:
    """Everything a freeze records, with its digests, and what stands in its way."""

    codebook_digest: str
    pipelines: list[dict[str, str]]
    pipelines_digest: str
    thresholds: dict[str, Any]
    thresholds_digest: str
    partition_digest: str
    partition_counts: dict[str, int]  # {calibration, test}
    unassigned: int
    leaks: list[Leak] = field(default_factory=list)

    def problems(self) -> list[tuple[str, str]]:
        """(reason code, sentence) for every reason the study cannot be frozen now."""
        problems = []
        total = sum(self.partition_counts.values()) + self.unassigned
        if total == 0:
            problems.append((NO_UNITS, "the study has no units to freeze"))
        if self.unassigned:
            problems.append(
                (
                    UNASSIGNED_UNITS,
                    f"{self.unassigned} of {total} units have no partition: assign every "
                    "unit to calibration or test first",
                )
            )
        if self.leaks:
            problems.append(
                (
                    LEAKAGE,
                    f"{len(self.leaks)} groups appear in both partitions "
                    f"({leakage_summary(self.leaks)}): move their units to one side first",
                )
            )
        return problems


def freeze_contents(
    *,
    codebook_digest: str,
    pipelines: Iterable[Mapping[str, str]],
    thresholds: Mapping[str, Any],
    units: Sequence[UnitGroups],
) -> FreezeContents:
    assigned = [(u.digest, u.partition) for u in units if u.partition in PARTITIONS]
    counts = partition_counts(partition for _, partition in assigned)
    return freeze_contents_of(
        codebook_digest=codebook_digest,
        pipelines=pipelines,
        thresholds=thresholds,
        partition_digest=partition_digest(assigned),
        partition_counts={key: counts[key] for key in PARTITIONS},
        unassigned=len(units) - len(assigned),
        leaks=leakage(units),
    )


def freeze_contents_of(
    *,
    codebook_digest: str,
    pipelines: Iterable[Mapping[str, str]],
    thresholds: Mapping[str, Any],
    partition_digest: str,
    partition_counts: Mapping[str, int],
    unassigned: int,
    leaks: Sequence[Leak],
) -> FreezeContents:
    """:func:`freeze_contents` from the partition digest and counts, the number of
    unassigned units and the leaks, however they were found."""
    pipelines = pipelines_normal(pipelines)
    thresholds = dict(thresholds)
    return FreezeContents(
        codebook_digest=codebook_digest,
        pipelines=pipelines,
        pipelines_digest=canonical_digest(pipelines),
        thresholds=thresholds,
        thresholds_digest=canonical_digest(thresholds),
        partition_digest=partition_digest,
        partition_counts={key: partition_counts[key] for key in PARTITIONS},
        unassigned=unassigned,
        leaks=list(leaks),
    )
