"""Seed 002's Table II: an evaluated system beside its baseline in one study setting.

Pure tier: no Django. DESIGN.md, "Seed 002's evaluation protocol"; seed 002 §VIII-A
(Table II). A selector (``metrics.protocol_selectors``) streams the final labels of the
setting's studies into the accumulators below, one unit at a time; :func:`compare` turns
them into the table.

Inputs
------
* :class:`Side` — one pipeline's per-query totals, filled by
  :meth:`Side.add_answer` (one answer-rubric unit: its pass, ``True``/``False``/``None``)
  and :meth:`Side.add_documents` (one query_documents unit: its grades a(q, d) after trust
  and its revised grades a′(q, d)). Each metric's value is a ratio of totals over queries,
  kept per query (the sampling unit), so memory grows with the queries, not the labels.
* Pairwise: :class:`Pairwise`, the G/S/B judgment of each answer pair for the evaluated
  system and the query of each pair.

Output
------
:func:`compare` returns plain JSON values (``dict``/``list``/numbers/strings): one row per
metric with the evaluated and baseline values and counts, the difference in percentage
points with a 95% interval, and NetGain in percent with the normal interval and the
bootstrap clustered by query (:func:`metrics.protocol.net_gain`,
:func:`metrics.protocol.net_gain_bootstrap`).

Intervals of the differences: :func:`metrics.estimates.ratio_difference_interval`, a paired
bootstrap over queries — each resample draws the queries once for both systems — because
both systems answered the same queries in one setting. A query only one side has a value
for enters that side alone.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from metrics.estimates import ratio_difference_interval
from metrics.protocol import (
    JUDGMENTS,
    accuracy_qd,
    net_gain,
    net_gain_bootstrap,
    usability,
)

__all__ = [
    "COMPARISON_FORMAT",
    "METRICS",
    "Pairwise",
    "Side",
    "compare",
    "csv_rows",
    "delta_chart",
]

#: Version of the comparison's JSON shape (the release file ``comparison.json``).
COMPARISON_FORMAT = 1

#: The rate rows of Table II: key, label, evaluation object, protocol (the codebook kind).
METRICS = (
    ("acc_qd", "Acc_qd", "Retrieval", "query_documents"),
    ("usable_q", "Usable_q", "Retrieval", "query_documents"),
    ("highq_q", "HighQ_q", "Retrieval", "query_documents"),
    ("pass_r", "PassR_ans", "Answer", "rubric"),
)


@dataclass
class _Query:
    passed: int = 0
    decided: int = 0
    unknown_pass: int = 0
    acc_sum: float = 0.0
    acc_n: int = 0
    usable: int = 0
    high: int = 0
    graded: int = 0


@dataclass
class Side:
    """One pipeline's totals per query (any hashable query id)."""

    queries: dict[Hashable, _Query] = field(default_factory=dict)
    answers: int = 0
    unknown_pass: int = 0
    document_units: int = 0
    no_documents: int = 0
    unknown_queries: int = 0
    unknown_documents: int = 0
    unknown_e: int = 0

    def _query(self, query: Hashable) -> _Query:
        found = self.queries.get(query)
        if found is None:
            found = self.queries[query] = _Query()
        return found

    def add_answer(self, query: Hashable, passed: bool | None) -> None:
        """One rubric answer with a final label: its pass (``None``: unknown)."""
        totals = self._query(query)
        self.answers += 1
        if passed is None:
            totals.unknown_pass += 1
            self.unknown_pass += 1
            return
        totals.decided += 1
        totals.passed += int(passed)

    def add_documents(
        self, query: Hashable, grades: Sequence[int | None], revised: Sequence[int | None]
    ) -> None:
        """One query_documents unit with a final label: a(q, d) after trust per document
        (for Acc_qd) and a′(q, d) (for e(q)); ``None`` for U."""
        totals = self._query(query)
        self.document_units += 1
        accuracy = accuracy_qd([grades])
        self.no_documents += accuracy.no_documents
        self.unknown_queries += accuracy.unknown_queries
        self.unknown_documents += accuracy.unknown_documents
        if accuracy.denominator:
            totals.acc_sum += accuracy.numerator
            totals.acc_n += 1
        usable = usability([revised])
        self.unknown_e += usable.unknown
        e = usable.grades[0]
        if e is not None:
            totals.graded += 1
            totals.usable += int(e >= 1)
            totals.high += int(e == 2)

    def rows(self, key: str) -> dict[Hashable, tuple[float, float]]:
        """(numerator, denominator) per query of the metric ``key`` (see :data:`METRICS`)."""
        pick = {
            "acc_qd": lambda q: (q.acc_sum, q.acc_n),
            "usable_q": lambda q: (q.usable, q.graded),
            "highq_q": lambda q: (q.high, q.graded),
            "pass_r": lambda q: (q.passed, q.decided),
        }[key]
        return {query: pick(totals) for query, totals in self.queries.items()}

    def counts(self, key: str) -> dict[str, Any]:
        rows = self.rows(key).values()
        numerator = sum(n for n, _ in rows)
        denominator = sum(d for _, d in rows)
        out: dict[str, Any] = {
            "numerator": round(numerator, 6) if key == "acc_qd" else int(numerator),
            "denominator": int(denominator),
            "value": numerator / denominator if denominator else None,
        }
        if key == "pass_r":
            out.update(answers=self.answers, unknown=self.unknown_pass)
        elif key == "acc_qd":
            out.update(
                units=self.document_units,
                no_documents=self.no_documents,
                unknown_queries=self.unknown_queries,
                unknown_documents=self.unknown_documents,
            )
        else:
            out.update(
                units=self.document_units, no_documents=self.no_documents, unknown=self.unknown_e
            )
        return out


@dataclass
class Pairwise:
    """Judgments ``G``/``S``/``B`` for the evaluated system, and the query of each pair."""

    judgments: list[str] = field(default_factory=list)
    queries: list[Hashable] = field(default_factory=list)
    awaiting_final: int = 0

    def add(self, query: Hashable, judgment: str) -> None:
        if judgment not in JUDGMENTS:
            raise ValueError(f"judgment is {judgment!r}; expected G, S or B")
        self.judgments.append(judgment)
        self.queries.append(query)


def _pp(value: float | None) -> float | None:
    return None if value is None else 100.0 * value


def _rate_row(
    key: str,
    label: str,
    level: str,
    protocol: str,
    evaluated: Side | None,
    baseline: Side | None,
    *,
    n_boot: int,
    seed: int,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "metric": key,
        "label": label,
        "level": level,
        "protocol": protocol,
        "unit": "pp",
        "evaluated": None,
        "baseline": None,
        "delta": None,
        "low": None,
        "high": None,
        "queries": 0,
        "reason": None,
    }
    if evaluated is None or baseline is None:
        row["reason"] = "no_study"
        return row
    row["evaluated"], row["baseline"] = evaluated.counts(key), baseline.counts(key)
    mine, theirs = evaluated.rows(key), baseline.rows(key)
    queries = sorted({*mine, *theirs}, key=repr)
    row["queries"] = len(queries)
    first = [mine.get(q, (0, 0)) for q in queries]
    second = [theirs.get(q, (0, 0)) for q in queries]
    a, b = row["evaluated"]["value"], row["baseline"]["value"]
    if a is None or b is None:
        row["reason"] = "no_values"
        return row
    row["delta"] = _pp(a - b)
    low, high = ratio_difference_interval(first, second, n_boot=n_boot, seed=seed)
    row["low"], row["high"] = _pp(low), _pp(high)
    return row


def _net_gain_row(pairwise: Pairwise | None, *, n_boot: int, seed: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "metric": "net_gain",
        "label": "NetGain_ans",
        "level": "Answer",
        "protocol": "pairwise",
        "unit": "%",
        "reason": None,
    }
    if pairwise is None:
        return {**row, "reason": "no_study"}
    items = pairwise.judgments
    normal = net_gain(items.count("G"), items.count("S"), items.count("B"))
    boot = net_gain_bootstrap(items, pairwise.queries, seed=seed, n_boot=n_boot)
    return {
        **row,
        "good": normal.good,
        "same": normal.same,
        "bad": normal.bad,
        "n": normal.denominator,
        "value": normal.value,
        "normal": {"low": normal.low, "high": normal.high},
        "bootstrap": {"low": boot.low, "high": boot.high, "clusters": boot.clusters},
        "awaiting_final": pairwise.awaiting_final,
        "reason": normal.reason,
    }


def compare(
    evaluated: dict[str, Side | None],
    baseline: dict[str, Side | None],
    pairwise: Pairwise | None,
    *,
    seed: int = 0,
    n_boot: int = 1000,
) -> dict[str, Any]:
    """Table II for one evaluated system and its baseline.

    ``evaluated`` and ``baseline`` map a protocol (``"rubric"``, ``"query_documents"``) to
    the pipeline's :class:`Side` in that protocol's study, or ``None`` when the setting has
    no such study; ``pairwise`` holds the pairs of the two (``None``: no pairwise study).
    Rows: Δ Acc_qd, Δ Usable_q, Δ HighQ_q, Δ PassR in percentage points (evaluated minus
    baseline; ``low``/``high`` the paired query bootstrap interval), then NetGain in
    percent. A row that cannot be computed has ``reason`` ``no_study`` or ``no_values``.
    """
    rows = [
        _rate_row(
            key,
            label,
            level,
            protocol,
            evaluated.get(protocol),
            baseline.get(protocol),
            n_boot=n_boot,
            seed=seed,
        )
        for key, label, level, protocol in METRICS
    ]
    rows.append(_net_gain_row(pairwise, n_boot=n_boot, seed=seed))
    return {
        "format": COMPARISON_FORMAT,
        "confidence": 0.95,
        "n_boot": n_boot,
        "seed": seed,
        "rows": rows,
    }


def _number(value: float | None, digits: int = 2) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def csv_rows(comparison: dict[str, Any]) -> Iterable[list[Any]]:
    """Table II as CSV rows (header first): one row per metric, values in percent."""
    yield [
        "metric",
        "unit",
        "evaluated",
        "evaluated_numerator",
        "evaluated_denominator",
        "baseline",
        "baseline_numerator",
        "baseline_denominator",
        "delta",
        "low",
        "high",
        "interval",
        "good",
        "same",
        "bad",
        "n",
        "bootstrap_low",
        "bootstrap_high",
        "reason",
    ]
    for row in comparison["rows"]:
        if row["metric"] == "net_gain":
            yield [
                row["label"],
                "%",
                "",
                "",
                "",
                "",
                "",
                "",
                _number(row.get("value")),
                _number((row.get("normal") or {}).get("low")),
                _number((row.get("normal") or {}).get("high")),
                "normal",
                row.get("good", ""),
                row.get("same", ""),
                row.get("bad", ""),
                row.get("n", ""),
                _number((row.get("bootstrap") or {}).get("low")),
                _number((row.get("bootstrap") or {}).get("high")),
                row["reason"] or "",
            ]
            continue
        sides = []
        for side in (row["evaluated"], row["baseline"]):
            if side is None:
                sides += ["", "", ""]
            else:
                sides += [_number(_pp(side["value"])), side["numerator"], side["denominator"]]
        yield [
            row["label"],
            "pp",
            *sides,
            _number(row["delta"]),
            _number(row["low"]),
            _number(row["high"]),
            "paired query bootstrap",
            "",
            "",
            "",
            "",
            "",
            "",
            row["reason"] or "",
        ]


# --- the page's interval chart ---------------------------------------------------------------

CHART_WIDTH = 640
CHART_LABEL = 130
CHART_RIGHT = 20
CHART_ROW = 30
CHART_TOP = 24


def _row_interval(row: dict[str, Any]) -> tuple[float | None, float | None, float | None]:
    if row["metric"] == "net_gain":
        bootstrap = row.get("bootstrap") or {}
        return row.get("value"), bootstrap.get("low"), bootstrap.get("high")
    return row.get("delta"), row.get("low"), row.get("high")


def delta_chart(comparison: dict[str, Any]) -> dict[str, Any]:
    """Coordinates of an SVG interval chart of Table II's row: each difference (pp) and
    NetGain (%) as a dot with its 95% interval (NetGain: the clustered bootstrap) on one
    axis symmetric around 0, in steps of 5. Plain numbers for a template."""
    rows = comparison["rows"]
    extent = 5.0
    for row in rows:
        for value in _row_interval(row):
            if value is not None:
                extent = max(extent, abs(value))
    extent = 5.0 * -(-extent // 5.0)
    span = CHART_WIDTH - CHART_LABEL - CHART_RIGHT

    def x_of(value: float) -> float:
        return round(CHART_LABEL + span * (value + extent) / (2 * extent), 1)

    marks = []
    for i, row in enumerate(rows):
        value, low, high = _row_interval(row)
        y = CHART_TOP + i * CHART_ROW + CHART_ROW / 2
        marks.append(
            {
                "label": row["label"],
                "y": y,
                "text_y": y + 4,
                "x": None if value is None else x_of(value),
                "x_low": None if low is None else x_of(low),
                "x_high": None if high is None else x_of(high),
            }
        )
    ticks = [
        {"x": x_of(t), "label": f"{t:+.0f}" if t else "0"}
        for t in (-extent, -extent / 2, 0.0, extent / 2, extent)
    ]
    height = CHART_TOP + len(rows) * CHART_ROW + 24
    return {
        "width": CHART_WIDTH,
        "height": height,
        "zero": x_of(0.0),
        "axis_y": height - 20,
        "top": CHART_TOP - 6,
        "marks": marks,
        "ticks": ticks,
        "extent": extent,
    }
