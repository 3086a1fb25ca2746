"""Pure scoring of annotators against gold keys and against each other (no Django).

A label is reduced to the categories of the codebook's compared fields — the same items
reliability compares: its unit-level fields with a value, as audit.contract.engine gives
them for every codebook (the first two included). A value is a category string: "0", "1",
"true", "false", a code, or "U" for unresolved (null).

``codebook`` is the codebook's :class:`~audit.contract.engine.Engine`, or a unit kind
(``"tuple"``, ``"answer"``) for a caller that knows only that: a format-1 codebook of that
kind.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from audit.contract.engine import Engine, engine_of, field_value

U = "U"
#: Items per block of the "by 50 items" drift series.
BLOCK = 50
#: z of a two-sided 95% interval.
Z95 = 1.959963984540054


def category(value: Any) -> str:
    """A judgment as a category string; null (unresolved) is U."""
    if value is None:
        return U
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _engine(codebook: Engine | str) -> Engine:
    return codebook if isinstance(codebook, Engine) else engine_of(None, unit=codebook)


def fields_for(codebook: Engine | str) -> tuple[str, ...]:
    return tuple(f.code for f in _engine(codebook).value_fields)


def values_of(annotation: Mapping[str, Any], codebook: Engine | str) -> dict[str, str]:
    """The compared fields of an annotation, as categories (a missing value is U)."""
    engine = _engine(codebook)
    return {f.code: category(field_value(engine, annotation, f.code)) for f in engine.value_fields}


def key_problem(key: Any, codebook: Engine | str) -> str | None:
    """Why ``key`` (field -> value, as a key file or a final record gives it) cannot be
    a gold key for this codebook, or None."""
    if not isinstance(key, Mapping) or not key:
        return "the key must be a non-empty JSON object of field: value"
    allowed = fields_for(codebook)
    unknown = sorted(str(name) for name in key if name not in allowed)
    if unknown:
        return f"unknown field {', '.join(unknown)} (fields: {', '.join(allowed)})"
    for name, value in key.items():
        if isinstance(value, float):
            return f"field {name}: a value must be a whole number, not a fraction"
        if value is not None and not isinstance(value, bool | int | str):
            return f"field {name}: a value must be a number, true/false, a code or null"
    return None


def key_of(values: Mapping[str, Any]) -> dict[str, str]:
    """A stored key: every given field as a category."""
    return {name: category(value) for name, value in sorted(values.items())}


def matches(key: Mapping[str, str], values: Mapping[str, str]) -> bool:
    """Right when every keyed field has its key's category."""
    return all(values.get(name, U) == wanted for name, wanted in key.items())


@dataclass(frozen=True)
class Proportion:
    """k of n, its rate and a 95% Wilson score interval (None when n = 0)."""

    k: int
    n: int

    @property
    def rate(self) -> float | None:
        return self.k / self.n if self.n else None

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson(self.k, self.n)


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float] | None:
    """The Wilson score interval of k successes in n trials (None when n = 0): defined at
    0 and n, inside [0, 1], the interval the quality page shows for every accuracy and
    agreement rate."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"k must be within 0..n, got k={k}, n={n}")
    p = k / n
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    # At 0 and n the bounds are exactly 0 and 1 (the formula lands there up to rounding).
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return (low, high)


@dataclass(frozen=True)
class Outcome:
    """One scored item of one annotator: right or wrong, and when it was submitted."""

    at: datetime
    right: bool


@dataclass(frozen=True)
class Point:
    """One point of a drift series: a period (week or block of items) and its rate."""

    label: str
    proportion: Proportion


def by_week(outcomes: Iterable[Outcome]) -> list[Point]:
    """Rates per ISO week of submission ("2026-W48"), in time order."""
    weeks: dict[tuple[int, int], list[int]] = {}
    for outcome in outcomes:
        year, week, _ = outcome.at.isocalendar()
        counts = weeks.setdefault((year, week), [0, 0])
        counts[0] += outcome.right
        counts[1] += 1
    return [
        Point(f"{year}-W{week:02d}", Proportion(k, n))
        for (year, week), (k, n) in sorted(weeks.items())
    ]


def by_block(outcomes: Sequence[Outcome], size: int = BLOCK) -> list[Point]:
    """Rates per block of ``size`` items in submission order ("1–50", "51–100", …); the
    last block may be shorter."""
    ordered = sorted(outcomes, key=lambda outcome: outcome.at)
    points = []
    for start in range(0, len(ordered), size):
        block = ordered[start : start + size]
        points.append(
            Point(
                f"{start + 1}–{start + len(block)}",
                Proportion(sum(outcome.right for outcome in block), len(block)),
            )
        )
    return points


def gold_due(*, served: int, gold_served: int, rate: float) -> bool:
    """Whether the next item should be a gold unit, so that after every item the share
    of gold among ``served`` items stays at most ``rate`` and reaches it as soon as it
    can: the (n+1)-th item is gold when fewer than floor(rate × (n+1)) were."""
    if rate <= 0:
        return False
    return gold_served < math.floor(rate * (served + 1) + 1e-9)


@dataclass(frozen=True)
class Qualification:
    """Where an annotator stands with the study's qualification set."""

    required: int  # n; 0 when the study has none
    threshold: float
    assigned: int
    right: int
    scored: int

    @property
    def needed(self) -> bool:
        return self.required > 0

    @property
    def pending(self) -> bool:
        return self.needed and self.scored < self.required

    @property
    def passed(self) -> bool:
        return not self.needed or (
            self.scored >= self.required and self.right >= self.threshold * self.required - 1e-9
        )

    @property
    def failed(self) -> bool:
        return self.needed and not self.pending and not self.passed


@dataclass(frozen=True)
class Tally:
    """Counts of one annotator's comparisons that fall in one ISO week and one block of
    ``BLOCK`` items (their items numbered 0, 1, … in submission order), as the database
    aggregates them: ``right`` of ``n``, the block's last item number seen."""

    week: date
    block: int
    right: int
    n: int
    last_item: int


def week_label(day: date) -> str:
    year, week, _ = day.isocalendar()
    return f"{year}-W{week:02d}"


def series_of(
    tallies: Sequence[Tally], size: int = BLOCK
) -> tuple[Proportion, list[Point], list[Point]]:
    """Overall, by ISO week and by blocks of ``size`` items, from the tallies."""
    weeks: dict[str, list[int]] = {}
    blocks: dict[int, list[int]] = {}
    for tally in tallies:
        counts = weeks.setdefault(week_label(tally.week), [0, 0])
        counts[0] += tally.right
        counts[1] += tally.n
        counts = blocks.setdefault(tally.block, [0, 0, 0])
        counts[0] += tally.right
        counts[1] += tally.n
        counts[2] = max(counts[2], tally.last_item)
    overall = Proportion(sum(t.right for t in tallies), sum(t.n for t in tallies))
    by_weeks = [Point(label, Proportion(k, n)) for label, (k, n) in sorted(weeks.items())]
    by_blocks = [
        Point(f"{block * size + 1}–{last + 1}", Proportion(k, n))
        for block, (k, n, last) in sorted(blocks.items())
    ]
    return overall, by_weeks, by_blocks
