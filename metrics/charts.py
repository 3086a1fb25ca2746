"""Server-side SVG plots of the reliability page: plain values in, coordinates out.

Coordinates are formatted here (``_n``, as audit.ledger.views does), so that no locale
can put a decimal comma into an SVG attribute; templates draw them with presentation
attributes and CSS classes only (the CSP refuses style attributes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Treatment key -> (fill, label): U as a category (headline) dark blue, U missing orange.
TREATMENT_MARKS = {
    "u_category": ("#2f6db5", "U as its own category (headline)"),
    "u_missing": ("#c2571a", "U excluded as missing (sensitivity)"),
}
FOREST_WIDTH = 760
FOREST_LABEL = 230
FOREST_RIGHT = 30
FOREST_ROW = 34
FOREST_TOP = 40
FOREST_BOTTOM = 34
LOW, HIGH = -1.0, 1.0


def _n(value: float) -> str:
    return f"{value:.1f}"


@dataclass(frozen=True)
class Mark:
    key: str
    fill: str
    label: str
    cx: str
    cy: str
    x1: str
    x2: str
    value: str
    interval: str
    undefined: bool


@dataclass(frozen=True)
class ForestRow:
    label: str
    text_y: str
    marks: tuple[Mark, ...]


@dataclass(frozen=True)
class Tick:
    x: str
    label: str
    zero: bool


@dataclass(frozen=True)
class Forest:
    title: str
    description: str
    width: int
    height: int
    label_x: str
    axis_y: str
    plot_top: str
    rows: tuple[ForestRow, ...]
    ticks: tuple[Tick, ...]
    legend: tuple[tuple[str, str, str, str], ...]  # (fill, label, x, text_x)


def _fmt(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"


def forest(title: str, items: Sequence[dict[str, Any]]) -> Forest | None:
    """An interval chart of Krippendorff's alpha per item, both U treatments side by side
    (one dot and its 95% bootstrap interval over units for each)."""
    if not items:
        return None
    span = FOREST_WIDTH - FOREST_LABEL - FOREST_RIGHT

    def x_of(value: float) -> float:
        clamped = min(HIGH, max(LOW, value))
        return FOREST_LABEL + span * (clamped - LOW) / (HIGH - LOW)

    rows = []
    described = []
    for index, item in enumerate(items):
        y = FOREST_TOP + index * FOREST_ROW + FOREST_ROW / 2
        marks = []
        for offset, key in ((-6, "u_category"), (6, "u_missing")):
            alpha = (item.get(key) or {}).get("alpha") or {}
            value, low, high = alpha.get("value"), alpha.get("low"), alpha.get("high")
            fill, label = TREATMENT_MARKS[key]
            undefined = value is None
            marks.append(
                Mark(
                    key=key,
                    fill=fill,
                    label=label,
                    cx=_n(x_of(value) if value is not None else FOREST_LABEL),
                    cy=_n(y + offset),
                    x1=_n(x_of(low) if low is not None else x_of(value or 0)),
                    x2=_n(x_of(high) if high is not None else x_of(value or 0)),
                    value=_fmt(value),
                    interval="" if low is None else f"[{low:.3f}, {high:.3f}]",
                    undefined=undefined,
                )
            )
            described.append(f"{item['label']}, {label}: alpha {_fmt(value)}")
        rows.append(ForestRow(label=item["label"], text_y=_n(y + 4), marks=tuple(marks)))
    height = FOREST_TOP + len(items) * FOREST_ROW + FOREST_BOTTOM
    axis_y = FOREST_TOP + len(items) * FOREST_ROW
    ticks = tuple(
        Tick(x=_n(x_of(v)), label=f"{v:g}", zero=v == 0) for v in (-1, -0.5, 0, 0.5, 0.667, 0.8, 1)
    )
    legend = []
    x = float(FOREST_LABEL)
    for fill, label in TREATMENT_MARKS.values():
        legend.append((fill, label, _n(x), _n(x + 16)))
        x += 16 + 6.6 * len(label) + 24
    return Forest(
        title=title,
        description="; ".join(described),
        width=FOREST_WIDTH,
        height=height,
        label_x=_n(FOREST_LABEL - 10),
        axis_y=_n(axis_y),
        plot_top=_n(FOREST_TOP - 4),
        rows=tuple(rows),
        ticks=ticks,
        legend=tuple(legend),
    )


@dataclass(frozen=True)
class Cell:
    x: str
    y: str
    text_x: str
    text_y: str
    count: int
    fill: str
    text_fill: str
    title: str


@dataclass(frozen=True)
class HeatMap:
    title: str
    description: str
    width: int
    height: int
    size: int
    cells: tuple[Cell, ...]
    row_labels: tuple[tuple[str, str, str], ...]  # (label, x, y)
    column_labels: tuple[tuple[str, str, str], ...]
    axis_x: tuple[str, str, str]  # (label, x, y)
    axis_y: tuple[str, str, str]
    #: Column labels wider than a cell are drawn slanted (starting above their column),
    #: so that neighbours never overlap.
    slanted: bool = False


#: Light to dark blue; a cell's shade is its count relative to the largest cell.
SHADES = ("#f2f5f9", "#d6e3f3", "#a9c5e8", "#6f9fd6", "#2f6db5", "#1d4a80")


def heat_map(title: str, confusion: dict[str, Any]) -> HeatMap | None:
    """A confusion heat map: rows the first annotator of each pair, columns the second;
    the diagonal is agreement. Each cell shows its count."""
    grid = confusion.get("matrix") or []
    categories = [str(c) for c in confusion.get("categories") or []]
    if not grid or not categories:
        return None
    size = 44 if len(categories) <= 4 else 34
    left = 30 + 8 * max(len(c) for c in categories)
    top = 30 + 7 * max(len(c) for c in categories)
    biggest = max(max(row) for row in grid) or 1
    cells = []
    described = []
    for i, row in enumerate(grid):
        for j, count in enumerate(row):
            shade = 0 if count == 0 else 1 + int((len(SHADES) - 2) * count / biggest)
            x, y = left + j * size, top + i * size
            cells.append(
                Cell(
                    x=_n(x),
                    y=_n(y),
                    text_x=_n(x + size / 2),
                    text_y=_n(y + size / 2 + 4),
                    count=int(count),
                    fill=SHADES[shade],
                    text_fill="#ffffff" if shade >= 4 else "#1c2430",
                    title=f"{categories[i]} × {categories[j]}: {count}",
                )
            )
            described.append(f"{categories[i]}/{categories[j]} {count}")
    n = len(categories)
    # About 6.5 px per character at font-size 11: wider than a cell, the labels slant.
    slanted = any(len(c) * 6.5 > size - 4 for c in categories)
    return HeatMap(
        title=title,
        description=", ".join(described),
        # A slanted label reaches right of its column by about cos(55°) of its length.
        width=max(left + n * size + 10, left + 130)
        + (int(3.8 * max(len(c) for c in categories)) if slanted else 0),
        height=top + n * size + 10,
        size=size,
        cells=tuple(cells),
        row_labels=tuple(
            (c, _n(left - 6), _n(top + i * size + size / 2 + 4)) for i, c in enumerate(categories)
        ),
        column_labels=tuple(
            (c, _n(left + j * size + size / 2), _n(top - 8)) for j, c in enumerate(categories)
        ),
        axis_x=("second annotator →", _n(left), _n(12)),
        axis_y=("first ↓", _n(4), _n(top - 8)),
        slanted=slanted,
    )
