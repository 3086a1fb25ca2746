"""Calibration and held-out test partitions (seed 000, V-A): the rules that split a
study's units, and their counts. Pure, no Django.

A study's units go to ``calibration`` or ``test`` by a rule over one grouping field of
their query — target family, domain or query template — or by a file that names each
unit. The seed asks that target families, related domains and query templates do not
leak from calibration into the held-out partition, so the leakage check looks at all
three fields whichever one the rule used: a split by domain can still share a template.

Everything here and in the other pure modules beside it (``leakage``, ``freeze``,
``files``) works on plain values that ``audit.partitions.services`` fetched; digests go
through ``audit.contract.canonical`` so that a freeze recomputes byte for byte.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from audit.contract.canonical import canonical_json

CALIBRATION = "calibration"
TEST = "test"
PARTITIONS = (CALIBRATION, TEST)
UNASSIGNED = "unassigned"

#: The query fields a rule may split by, and that the leakage check compares.
GROUP_FIELDS = ("target_family", "domain", "template_id")
FIELD_LABELS = {
    "target_family": "target family",
    "domain": "domain",
    "template_id": "query template",
}
FIELD_PLURALS = {
    "target_family": "target families",
    "domain": "domains",
    "template_id": "query templates",
}

# --- reason codes: tests assert on these, people read the sentence ----------------------
INVALID_RULE = "invalid_rule"
UNKNOWN_VALUE = "unknown_value"
EMPTY_FILE = "empty_file"
INVALID_UTF8 = "invalid_utf8"
MALFORMED_LINE = "malformed_line"
BAD_DIGEST = "bad_digest"
BAD_PARTITION = "bad_partition"
UNKNOWN_DIGEST = "unknown_digest"
CONFLICTING_LINE = "conflicting_line"
INVALID_THRESHOLDS = "invalid_thresholds"
LEAKAGE = "leakage"
UNASSIGNED_UNITS = "unassigned_units"
NO_UNITS = "no_units"

DIGEST = re.compile(r"[0-9a-f]{64}")
THRESHOLD_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,99}")
MAX_THRESHOLDS = 100


@dataclass(frozen=True)
class UnitGroups:
    """One unit with its partition (None: unassigned) and its query's grouping fields."""

    digest: str
    partition: str | None
    target_family: str
    domain: str
    template_id: str | None

    def value(self, name: str) -> str | None:
        return getattr(self, name)


# --- rules -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ValuesRule:
    """Units whose ``field`` is one of ``test_values`` go to test, every other unit
    (a unit without a template included) to calibration."""

    field: str
    test_values: frozenset[str]

    def describe(self) -> str:
        values = ", ".join(sorted(self.test_values)) or "nothing"
        return f"{FIELD_LABELS[self.field]} in {{{values}}} → test, everything else → calibration"


@dataclass(frozen=True)
class ShareRule:
    """A seeded share of the distinct values of ``field`` goes to test, with all their
    units; the same seed and the same values always give the same split."""

    field: str
    share: float  # 0..1, of the distinct values (groups), not of the units
    seed: str

    def describe(self) -> str:
        return (
            f"{self.share:.0%} of the {FIELD_PLURALS[self.field]} → test "
            f"(seed {self.seed!r}), everything else → calibration"
        )


Rule = ValuesRule | ShareRule


class RuleError(ValueError):
    def __init__(self, message: str, *, code: str = INVALID_RULE) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def rule_check(rule: Rule, units: Sequence[UnitGroups]) -> None:
    """Raise :class:`RuleError` for a rule that cannot mean what its author wanted: an
    unknown field, a share outside [0, 1], or a value no unit of the study has (a typo
    would otherwise silently send nothing to test)."""
    if rule.field not in GROUP_FIELDS:
        raise RuleError(f"a rule splits by one of {', '.join(GROUP_FIELDS)}, not {rule.field!r}")
    if isinstance(rule, ShareRule):
        if not (isinstance(rule.share, int | float) and 0 <= rule.share <= 1):
            raise RuleError("the share of groups sent to test must be between 0 and 1")
        return
    if not rule.test_values:
        raise RuleError("name at least one value to send to test")
    present = {unit.value(rule.field) for unit in units}
    unknown = sorted(rule.test_values - present)
    if unknown:
        raise RuleError(
            f"no unit of this study has the {FIELD_LABELS[rule.field]} "
            f"{', '.join(repr(value) for value in unknown)}",
            code=UNKNOWN_VALUE,
        )


def _rank(seed: str, name: str, value: str) -> str:
    return hashlib.sha256(canonical_json([seed, name, value])).hexdigest()


def share_test_values(values: Iterable[str], *, share: float, seed: str, name: str) -> frozenset:
    """round(share × n) of the n distinct values, those ranked first by the SHA-256 of
    the canonical JSON ``[seed, field, value]``. Exact in the number of groups, and
    independent of the order units were imported in."""
    distinct = sorted(set(values))
    count = math.floor(share * len(distinct) + 0.5)
    ranked = sorted(distinct, key=lambda value: (_rank(seed, name, value), value))
    return frozenset(ranked[:count])


def rule_test_values(rule: Rule, units: Sequence[UnitGroups]) -> frozenset[str]:
    """The values of ``rule.field`` whose units go to test."""
    if isinstance(rule, ValuesRule):
        return rule.test_values
    present = (unit.value(rule.field) for unit in units)
    return share_test_values(
        (value for value in present if value is not None),
        share=rule.share,
        seed=rule.seed,
        name=rule.field,
    )


def rule_assign(rule: Rule, units: Sequence[UnitGroups]) -> dict[str, str]:
    """``{unit digest: partition}`` for every unit: the rule leaves nothing unassigned."""
    to_test = rule_test_values(rule, units)
    return {
        unit.digest: TEST if unit.value(rule.field) in to_test else CALIBRATION for unit in units
    }


def with_partitions(units: Sequence[UnitGroups], assignment: Mapping[str, str]) -> list[UnitGroups]:
    """The units as they would be with ``assignment`` applied (others unchanged)."""
    return [
        UnitGroups(
            digest=unit.digest,
            partition=assignment.get(unit.digest, unit.partition),
            target_family=unit.target_family,
            domain=unit.domain,
            template_id=unit.template_id,
        )
        for unit in units
    ]


# --- counts ------------------------------------------------------------------------------


def partition_counts(partitions: Iterable[str | None]) -> dict[str, int]:
    """``{calibration, test, unassigned}`` unit counts."""
    counts = Counter(p if p in PARTITIONS else UNASSIGNED for p in partitions)
    return {key: counts.get(key, 0) for key in (*PARTITIONS, UNASSIGNED)}


def group_counts(units: Iterable[UnitGroups | GroupCount]) -> dict[str, dict[str, int]]:
    """How many distinct values of each grouping field each partition holds."""
    seen: dict[str, dict[str, set[str]]] = {
        key: {name: set() for name in GROUP_FIELDS} for key in (*PARTITIONS, UNASSIGNED)
    }
    for unit in units:
        key = unit.partition if unit.partition in PARTITIONS else UNASSIGNED
        for name in GROUP_FIELDS:
            value = unit.value(name)
            if value is not None:
                seen[key][name].add(value)
    return {key: {name: len(values) for name, values in by.items()} for key, by in seen.items()}


def values_present(units: Iterable[UnitGroups]) -> dict[str, list[tuple[str, int]]]:
    """Each grouping field's values with their unit counts, for the rule form."""
    counts: dict[str, Counter[str]] = {name: Counter() for name in GROUP_FIELDS}
    for unit in units:
        for name in GROUP_FIELDS:
            value = unit.value(name)
            if value is not None:
                counts[name][value] += 1
    return {name: sorted(counter.items()) for name, counter in counts.items()}


# --- the same counts from grouped rows (a study's page, without a row per unit) ---------


@dataclass(frozen=True)
class GroupCount:
    """How many units of one partition (None: unassigned) share one combination of
    grouping values: what ``GROUP BY`` gives instead of one ``UnitGroups`` per unit."""

    partition: str | None
    target_family: str
    domain: str
    template_id: str | None
    units: int

    def value(self, name: str) -> str | None:
        return getattr(self, name)


def partition_counts_of(groups: Iterable[GroupCount]) -> dict[str, int]:
    """:func:`partition_counts` from grouped rows."""
    counts: Counter[str] = Counter()
    for group in groups:
        counts[group.partition if group.partition in PARTITIONS else UNASSIGNED] += group.units
    return {key: counts.get(key, 0) for key in (*PARTITIONS, UNASSIGNED)}


def values_present_of(groups: Iterable[GroupCount]) -> dict[str, list[tuple[str, int]]]:
    """:func:`values_present` from grouped rows."""
    counts: dict[str, Counter[str]] = {name: Counter() for name in GROUP_FIELDS}
    for group in groups:
        for name in GROUP_FIELDS:
            value = group.value(name)
            if value is not None:
                counts[name][value] += group.units
    return {name: sorted(counter.items()) for name, counter in counts.items()}
