"""Server-side SVG of an annotator's drift: a rate per period (ISO week or block of 50
items) for accuracy on gold and agreement with the others, each point with its 95%
Wilson interval. Plain values in, formatted coordinates out (no locale can put a decimal
comma into an attribute); the template draws them with attributes and classes only (the
CSP refuses style attributes). The dots, a hundred or more per chart on a large study,
are written here as one escaped SVG fragment (``Line.dots_svg``): a template loop over
them cost most of the page's time. No Django import."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from annotator.quality.scoring import Point

WIDTH = 560
HEIGHT = 200
LEFT = 44
RIGHT = 16
TOP = 28
BOTTOM = 40
#: (key, colour, name): accuracy on gold blue, agreement with the others orange.
SERIES = (
    ("gold", "#2f6db5", "Accuracy on gold"),
    ("agreement", "#c2571a", "Agreement with the others"),
)


def _n(value: float) -> str:
    return f"{value:.1f}"


@dataclass(frozen=True)
class Dot:
    cx: str
    cy: str
    y_low: str
    y_high: str
    text: str  # for the dot's <title>: period, k/n, rate and interval


@dataclass(frozen=True)
class Line:
    key: str
    colour: str
    name: str
    points: str  # the polyline's points attribute
    dots: tuple[Dot, ...]
    dots_svg: str = ""  # every dot's interval bar and circle with its <title>, escaped


def dots_svg(dots: Sequence[Dot], colour: str) -> str:
    """The dots as SVG markup: each an interval bar and a circle titled with its text.
    Every value is escaped (the coordinates are formatted numbers; the text is not)."""
    stroke = html.escape(colour)
    return "".join(
        f'<line x1="{dot.cx}" x2="{dot.cx}" y1="{dot.y_low}" y2="{dot.y_high}" '
        f'stroke="{stroke}" stroke-width="1"/>'
        f'<circle cx="{dot.cx}" cy="{dot.cy}" r="4" fill="{stroke}">'
        f"<title>{html.escape(dot.text)}</title></circle>"
        for dot in dots
    )


@dataclass(frozen=True)
class Tick:
    x: str
    label: str


@dataclass(frozen=True)
class DriftChart:
    title: str
    description: str
    width: int
    height: int
    plot_left: str
    plot_right: str
    axis_y: str
    grid: tuple[tuple[str, str], ...]  # (y, label) at 0, 0.5, 1
    ticks: tuple[Tick, ...]
    lines: tuple[Line, ...]
    legend: tuple[tuple[str, str, str, str], ...]  # (colour, name, x, text_x)


def _y(rate: float) -> float:
    return TOP + (HEIGHT - TOP - BOTTOM) * (1 - rate)


def _order(label: str) -> tuple[int, str]:
    """Weeks ("2026-W48") sort as text; blocks ("51–100") by their first item."""
    if "-W" in label:
        return (0, label)
    return (int(label.split("–")[0]), "")


def drift_chart(title: str, gold: Sequence[Point], agreement: Sequence[Point]) -> DriftChart | None:
    """Both series over the union of their periods, in order; None when neither has a
    point. A period a series has no item in is a gap, not a zero."""
    labels = sorted({*(p.label for p in gold), *(p.label for p in agreement)}, key=_order)
    if not labels:
        return None
    span = WIDTH - LEFT - RIGHT
    step = span / max(1, len(labels) - 1) if len(labels) > 1 else 0.0

    def x_of(index: int) -> float:
        return LEFT + (step * index if len(labels) > 1 else span / 2)

    position = {label: index for index, label in enumerate(labels)}
    lines = []
    described = []
    for (key, colour, name), points in zip(SERIES, (gold, agreement), strict=True):
        dots = []
        for point in points:
            rate = point.proportion.rate
            if rate is None:
                continue
            low, high = point.proportion.interval or (rate, rate)
            x = x_of(position[point.label])
            dots.append(
                Dot(
                    cx=_n(x),
                    cy=_n(_y(rate)),
                    y_low=_n(_y(low)),
                    y_high=_n(_y(high)),
                    text=f"{name}, {point.label}: {point.proportion.k}/{point.proportion.n} = "
                    f"{rate:.2f} [{low:.2f}, {high:.2f}]",
                )
            )
        if dots:
            described.append(f"{name}: " + "; ".join(dot.text.split(", ", 1)[1] for dot in dots))
        lines.append(
            Line(
                key=key,
                colour=colour,
                name=name,
                points=" ".join(f"{dot.cx},{dot.cy}" for dot in dots),
                dots=tuple(dots),
                dots_svg=dots_svg(dots, colour),
            )
        )
    every = max(1, len(labels) // 8)  # at most about eight period labels on the axis
    ticks = tuple(
        Tick(x=_n(x_of(index)), label=label)
        for index, label in enumerate(labels)
        if index % every == 0 or index == len(labels) - 1
    )
    return DriftChart(
        title=title,
        description=". ".join(described) or "No scored item yet.",
        width=WIDTH,
        height=HEIGHT,
        plot_left=_n(LEFT),
        plot_right=_n(WIDTH - RIGHT),
        axis_y=_n(_y(0)),
        grid=tuple((_n(_y(rate)), f"{rate:.1f}") for rate in (0.0, 0.5, 1.0)),
        ticks=ticks,
        lines=tuple(lines),
        legend=tuple(
            (colour, name, _n(LEFT + index * 200), _n(LEFT + index * 200 + 10))
            for index, (_, colour, name) in enumerate(SERIES)
        ),
    )
