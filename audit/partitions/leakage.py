"""The leakage check: target families, domains and query templates found in both the
calibration and the held-out partition. Pure, no Django."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from audit.partitions.rules import (
    CALIBRATION,
    FIELD_LABELS,
    FIELD_PLURALS,
    GROUP_FIELDS,
    PARTITIONS,
    TEST,
    GroupCount,
    UnitGroups,
)


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
            "calibration_units": self.calibration_count,
            "test_units": self.test_count,
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
