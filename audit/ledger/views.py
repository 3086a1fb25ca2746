"""The researcher's outcomes page, its CSV downloads, the record page and the gate's
Recompute button. Thin: access from annotator.access, reads from audit.ledger.selectors,
the recomputation is a job queued by name (audit.queueing)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotator.access import study_get_for_researcher
from annotator.labelling.models import SightVia
from annotator.labelling.services import labels_seen_record
from audit.archive.models import Unit
from audit.ledger.downloads import csv_response, csv_stream_response
from audit.ledger.selectors import (
    ACTIONS,
    POLICY_LABELS,
    SEALED_NOTE,
    PartitionTable,
    outcome_csv_rows,
    record_detail,
    review_csv_rows,
    review_row,
    review_rows,
    study_outcomes_shown,
)
from audit.partitions.selectors import partition_sealed
from audit.queueing import (
    STUDY_OUTCOMES_REFRESH,
    queue_gate_refresh,
    queue_job_once,
)

CSV_TABLES = ("final", "independent", "review")


# --- the stacked-bar plot, drawn on the server as SVG ------------------------------------
# Coordinates are formatted here, not by the template, so that no locale can turn a
# decimal point into a comma inside an SVG attribute.

#: Segment key -> (fill, text fill): CONTEXTUALIZE orange, PASS blue, REVIEW grey; for
#: verdicts, false is the orange one.
SEGMENT_COLOURS = {
    "one": ("#c2571a", "#ffffff"),
    "zero": ("#2f6db5", "#ffffff"),
    "unresolved": ("#aab2bd", "#1c2430"),
    "true": ("#2f6db5", "#ffffff"),
    "false": ("#c2571a", "#ffffff"),
}
CHART_WIDTH = 760
LABEL_WIDTH = 240
TOTAL_WIDTH = 56
ROW = 30
BAR = 20
TOP = 36


def _n(value: float) -> str:
    return f"{value:.1f}"


@dataclass(frozen=True)
class Segment:
    key: str
    label: str
    count: int
    x: str
    width: str
    fill: str
    text_x: str
    text_fill: str
    show_count: bool


@dataclass(frozen=True)
class Bar:
    label: str
    total: int
    y: str
    text_y: str
    total_x: str
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class LegendItem:
    label: str
    fill: str
    x: str
    text_x: str


@dataclass(frozen=True)
class Chart:
    title: str
    description: str
    bars: tuple[Bar, ...]
    legend: tuple[LegendItem, ...]
    width: int
    height: int
    bar_height: int
    label_x: str


def stacked_bars(
    title: str, rows: Sequence[tuple[str, Sequence[tuple[str, str, int]]]]
) -> Chart | None:
    """Horizontal stacked bars, one per row of ``(label, [(key, label, count), ...])``,
    on one absolute scale so that bar lengths compare across rows."""
    if not rows:
        return None
    biggest = max(sum(count for _, _, count in parts) for _, parts in rows) or 1
    span = CHART_WIDTH - LABEL_WIDTH - TOTAL_WIDTH
    bars = []
    for index, (label, parts) in enumerate(rows):
        y = TOP + index * ROW
        x = float(LABEL_WIDTH)
        segments = []
        for key, part_label, count in parts:
            width = span * count / biggest
            fill, text_fill = SEGMENT_COLOURS[key]
            segments.append(
                Segment(
                    key=key,
                    label=part_label,
                    count=count,
                    x=_n(x),
                    width=_n(width),
                    fill=fill,
                    text_x=_n(x + width / 2),
                    text_fill=text_fill,
                    show_count=count > 0 and width >= 8 * len(str(count)) + 6,
                )
            )
            x += width
        bars.append(
            Bar(
                label=label,
                total=sum(count for _, _, count in parts),
                y=_n(y),
                text_y=_n(y + BAR / 2 + 4),
                total_x=_n(x + 6),
                segments=tuple(segments),
            )
        )
    legend = []
    legend_x = float(LABEL_WIDTH)
    for key, part_label, _ in rows[0][1]:
        legend.append(
            LegendItem(
                label=part_label,
                fill=SEGMENT_COLOURS[key][0],
                x=_n(legend_x),
                text_x=_n(legend_x + 17),
            )
        )
        legend_x += 17 + 7 * len(part_label) + 22  # about 7 units a character at size 12
    description = "; ".join(
        f"{label}: " + ", ".join(f"{count} {part_label}" for _, part_label, count in parts)
        for label, parts in rows
    )
    return Chart(
        title=title,
        description=description,
        bars=tuple(bars),
        legend=tuple(legend),
        width=CHART_WIDTH,
        height=TOP + len(rows) * ROW,
        bar_height=BAR,
        label_x=_n(LABEL_WIDTH - 8),
    )


def partition_chart(table: PartitionTable, *, is_tuple: bool) -> Chart | None:
    if table.sealed:
        return None
    if is_tuple:
        rows = [
            (
                role.label,
                (
                    ("one", "R_O = 1 (CONTEXTUALIZE)", role.complete_case.one),
                    ("zero", "R_O = 0 (PASS)", role.complete_case.zero),
                    ("unresolved", "R_O = U (REVIEW)", role.complete_case.unresolved),
                ),
            )
            for role in table.roles
        ]
        title = f"{table.label}: complete-case R_O of the final records by source role"
    else:
        rows = [
            (
                row.verdict,
                (
                    ("true", "true", row.true),
                    ("false", "false", row.false),
                    ("unresolved", "unknown (null)", row.unknown),
                ),
            )
            for row in table.verdicts
        ]
        title = f"{table.label}: answer-level verdicts of the final records"
    if not any(count for _, parts in rows for _, _, count in parts):
        return None
    return stacked_bars(title, rows)


# --- pages -------------------------------------------------------------------------------


@login_required
@require_GET
def study_outcomes_page(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    outcomes = study_outcomes_shown(study=study)
    if outcomes.stale or outcomes.counting:
        queue_job_once(STUDY_OUTCOMES_REFRESH, study.pk)
    labels_seen_record(
        user=request.user, units=[row.unit_id for row in outcomes.review], via=SightVia.OUTCOMES
    )
    sections = [
        {
            "key": "final",
            "title": "Final records",
            "tables": [
                (table, partition_chart(table, is_tuple=outcomes.is_tuple))
                for table in outcomes.final
            ],
        },
        {
            "key": "independent",
            "title": "Independent records (each annotator's latest revision)",
            "tables": [(table, None) for table in outcomes.independent],
        },
    ]
    context = {
        "study": study,
        "outcomes": outcomes,
        "sections": sections,
        "review": outcomes.review,
        "review_more": outcomes.review_more,
        "policy_labels": POLICY_LABELS,
        "actions": ACTIONS,
        "sealed_note": SEALED_NOTE,
    }
    return render(request, "audit/outcomes.html", context)


@login_required
@require_GET
def study_outcomes_csv(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    table = request.GET.get("table", "final")
    if table not in CSV_TABLES:
        raise Http404(f"no outcomes table {table!r}")
    file_name = f"{study.slug}-outcomes-{table}.csv"
    if table == "review":  # one row per unit: streamed from the database as it is read
        rows = review_rows(study=study, sealed=lambda key: partition_sealed(study, key))
        labels_seen_record(  # every unit the file lists, in one INSERT … SELECT
            user=request.user,
            units=Unit.objects.filter(pk__in=rows.order_by().values("unit_id")),
            via=SightVia.OUTCOMES,
        )
        values = rows.iterator(chunk_size=2000)
        return csv_stream_response(review_csv_rows(map(review_row, values)), file_name)
    outcomes = study_outcomes_shown(study=study)
    if outcomes.stale or outcomes.counting:
        queue_job_once(STUDY_OUTCOMES_REFRESH, study.pk)
    if outcomes.counting:
        response = HttpResponse(
            "The outcomes of this study are being counted by a worker; try again shortly.\n",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
        response["Retry-After"] = "10"
        return response
    if outcomes.counted_at is not None:  # a large study: say when it was counted
        file_name = file_name.replace(".csv", f"-as-of-{outcomes.counted_at:%Y%m%dT%H%M%SZ}.csv")
    tables = outcomes.final if table == "final" else outcomes.independent
    return csv_response(outcome_csv_rows(tables, is_tuple=outcomes.is_tuple), file_name)


@login_required
@require_GET
def study_record(request: HttpRequest, slug: str, digest: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    detail = record_detail(study=study, digest=digest)
    if detail is None:
        raise Http404(f"no record {digest!r} in study {slug!r}")
    labels_seen_record(user=request.user, units=[detail.label.unit_id], via=SightVia.RECORD)
    context = {
        "study": study,
        "detail": detail,
        "record_json": json.dumps(detail.record, indent=2, ensure_ascii=False, sort_keys=True),
        "digest_matches": detail.record.get("record_digest") == detail.label.record_digest,
    }
    return render(request, "audit/record.html", context)


@login_required
@require_POST
def study_gate_recompute(request: HttpRequest, slug: str) -> HttpResponse:
    """Ask for a refresh now. Never needed for the gate to be true: it refreshes itself
    after every event that can change it (audit.queueing.queue_gate_refresh)."""
    study = study_get_for_researcher(user=request.user, slug=slug)
    queue_gate_refresh(study.pk)  # nothing more when one is already queued
    messages.success(
        request,
        "The validation gate is being recomputed by a worker; the panel shows the result "
        "once it has run.",
    )
    return redirect(reverse("study-detail", args=[study.slug]) + "#gate")
