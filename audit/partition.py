"""Calibration and held-out test partitions (seed 000, V-A): pure, no Django.

A study's units go to ``calibration`` or ``test`` by a rule over one grouping field of
their query — target family, domain or query template — or by a file that names each
unit. The seed asks that target families, related domains and query templates do not
leak from calibration into the held-out partition, so the leakage check looks at all
three fields whichever one the rule used: a split by domain can still share a template.

Everything here works on plain values that ``audit.partition_services`` fetched; digests
go through ``audit.contract.canonical`` so that a freeze recomputes byte for byte.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from audit.contract.canonical import canonical_digest, canonical_digest_unchecked, canonical_json

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


# --- the leakage check -------------------------------------------------------------------


@dataclass(frozen=True)
class Leak:
    """One value of a grouping field found in both partitions, with the units on each
    side (digests, sorted). A page's leak may hold only the first digests of each side
    (``calibration_units`` and ``test_units`` then count them all)."""

    field: str
    value: str
    calibration: tuple[str, ...]
    test: tuple[str, ...]
    calibration_units: int | None = None  # None: len(calibration)
    test_units: int | None = None  # None: len(test)

    @property
    def field_label(self) -> str:
        return FIELD_LABELS[self.field]

    @property
    def calibration_count(self) -> int:
        return len(self.calibration) if self.calibration_units is None else self.calibration_units

    @property
    def test_count(self) -> int:
        return len(self.test) if self.test_units is None else self.test_units

    def as_dict(self) -> dict[str, Any]:
        return {
            "field": self.field,
            "value": self.value,
            "calibration": list(self.calibration),
            "test": list(self.test),
        }


def leakage(units: Iterable[UnitGroups]) -> list[Leak]:
    """Every target family, domain and query template that has units in calibration and
    in test, in field order then by value. Unassigned units and a missing template
    (no value) never leak."""
    sides: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(
        lambda: {CALIBRATION: [], TEST: []}
    )
    for unit in units:
        if unit.partition not in PARTITIONS:
            continue
        for name in GROUP_FIELDS:
            value = unit.value(name)
            if value is not None:
                sides[(name, value)][unit.partition].append(unit.digest)
    leaks = [
        Leak(name, value, tuple(sorted(both[CALIBRATION])), tuple(sorted(both[TEST])))
        for (name, value), both in sides.items()
        if both[CALIBRATION] and both[TEST]
    ]
    return sorted(leaks, key=lambda leak: (GROUP_FIELDS.index(leak.field), leak.value))


def leakage_summary(leaks: Sequence[Leak]) -> str:
    """The leaking groups counted by field: "2 domains, 1 query template"."""
    counts = Counter(leak.field for leak in leaks)
    return ", ".join(
        f"{counts[name]} {FIELD_PLURALS[name] if counts[name] != 1 else FIELD_LABELS[name]}"
        for name in GROUP_FIELDS
        if counts[name]
    )


# --- counts and digests ------------------------------------------------------------------


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


def partition_digest(pairs: Iterable[tuple[str, str]]) -> str:
    """Canonical digest of the sorted ``[unit digest, partition]`` list. (A list of lists
    of strings has no object keys to check: the unchecked serialization, same bytes.)"""
    return canonical_digest_unchecked(
        sorted([str(digest), str(partition)] for digest, partition in pairs)
    )


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


def leak_counts(groups: Iterable[GroupCount]) -> list[tuple[str, str, int, int]]:
    """``(field, value, calibration units, test units)`` of every leaking group, in the
    order of :func:`leakage` (field order, then value)."""
    sides: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for group in groups:
        if group.partition not in PARTITIONS:
            continue
        side = PARTITIONS.index(group.partition)
        for name in GROUP_FIELDS:
            value = group.value(name)
            if value is not None:
                sides[(name, value)][side] += group.units
    leaks = [
        (name, value, calibration, test)
        for (name, value), (calibration, test) in sides.items()
        if calibration and test
    ]
    return sorted(leaks, key=lambda leak: (GROUP_FIELDS.index(leak[0]), leak[1]))


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
    return problems


# --- what a freeze records ---------------------------------------------------------------


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


# --- partition files ---------------------------------------------------------------------


@dataclass(frozen=True)
class LineProblem:
    line: int
    reason: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason, "message": self.message}


@dataclass(frozen=True)
class FileLine:
    line: int
    digest: str
    partition: str


def _is_jsonl(text: str, file_name: str) -> bool:
    name = file_name.lower()
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return True
    if name.endswith((".csv", ".txt")):
        return False
    return text.lstrip().startswith("{")


def _line_values(raw: str, number: int, jsonl: bool) -> tuple[str, str] | LineProblem:
    if jsonl:
        try:
            value = json.loads(raw)
        except ValueError as exc:
            return LineProblem(number, MALFORMED_LINE, f"not a JSON value ({exc.msg})")
        if not isinstance(value, dict):
            return LineProblem(number, MALFORMED_LINE, "each line is a JSON object")
        missing = [key for key in ("digest", "partition") if key not in value]
        if missing:
            return LineProblem(number, MALFORMED_LINE, f"the line has no {' or '.join(missing)}")
        digest, partition = value["digest"], value["partition"]
        if not isinstance(digest, str) or not isinstance(partition, str):
            return LineProblem(number, MALFORMED_LINE, "digest and partition are strings")
        return digest, partition
    cells = next(csv.reader([raw]))
    if len(cells) != 2:
        return LineProblem(
            number,
            MALFORMED_LINE,
            f"a line has two cells, digest and partition: found {len(cells)}",
        )
    return cells[0], cells[1]


def parse_partition_file(
    data: bytes, *, file_name: str = ""
) -> tuple[list[FileLine], list[LineProblem]]:
    """Read a partition file: CSV (``digest,partition``, header optional) or JSON Lines
    (``{"digest": …, "partition": …}``). Blank lines are skipped; line numbers are the
    file's. A digest is a unit digest or a tuple digest (64 lowercase hex)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], [LineProblem(0, INVALID_UTF8, f"the file is not UTF-8 (byte {exc.start})")]
    jsonl = _is_jsonl(text, file_name)
    lines: list[FileLine] = []
    problems: list[LineProblem] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        values = _line_values(raw, number, jsonl)
        if isinstance(values, LineProblem):
            problems.append(values)
            continue
        digest, partition = (item.strip() for item in values)
        if not jsonl and not lines and not problems and digest.lower() == "digest":
            continue  # the CSV header
        if not DIGEST.fullmatch(digest):
            problems.append(
                LineProblem(number, BAD_DIGEST, f"{digest[:80]!r} is not a 64-hex digest")
            )
            continue
        if partition not in PARTITIONS:
            problems.append(
                LineProblem(
                    number,
                    BAD_PARTITION,
                    f"{partition[:40]!r} is not a partition: write calibration or test",
                )
            )
            continue
        lines.append(FileLine(number, digest, partition))
    if not lines and not problems:
        problems.append(LineProblem(0, EMPTY_FILE, "the file names no unit"))
    return lines, problems


def file_assignment(
    lines: Sequence[FileLine], unit_of: Mapping[str, str]
) -> tuple[dict[str, str], list[LineProblem]]:
    """``{unit digest: partition}`` from the parsed lines, given ``unit_of`` (every unit
    and tuple digest the file names that the study knows → its unit's digest). Unknown
    digests and lines that give one unit two partitions are problems; the caller applies
    nothing unless there are none."""
    assignment: dict[str, str] = {}
    first_line: dict[str, int] = {}
    problems = []
    for line in lines:
        unit = unit_of.get(line.digest)
        if unit is None:
            problems.append(
                LineProblem(
                    line.line,
                    UNKNOWN_DIGEST,
                    f"no unit or tuple of this study has the digest {line.digest}",
                )
            )
            continue
        if unit in assignment and assignment[unit] != line.partition:
            problems.append(
                LineProblem(
                    line.line,
                    CONFLICTING_LINE,
                    f"line {first_line[unit]} put this unit in {assignment[unit]}, this line "
                    f"in {line.partition}",
                )
            )
            continue
        assignment[unit] = line.partition
        first_line.setdefault(unit, line.line)
    return assignment, problems
