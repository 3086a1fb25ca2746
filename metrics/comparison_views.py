"""The comparison report (seed 002's Table II) of a protocol study's setting: a page where
a researcher picks an evaluated pipeline and its baseline, and its CSV. Thin: access
through annotator.access, reads from metrics.protocol_selectors (which calls the pure
metrics.comparison).

A small setting is computed in the request; a larger one (``COMPARISON_INLINE_UNITS``) is
shown as a worker stored it (metrics.models.ComparisonSummary), with when; when there is
none yet or it is behind, the page asks for one (``claimgate.study_comparison_refresh``,
coalesced like every per-study refresh; new outcomes of a member study's labels queue it
too) and polls until it is there. The setting itself is read as stored
(metrics.models.ComparisonSetting), so a request reads a fixed few rows."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotator.access import study_get_for_researcher
from audit.ledger.downloads import csv_response
from audit.queueing import STUDY_COMPARISON_REFRESH, queue_job_once
from metrics.comparison import csv_rows, delta_chart
from metrics.protocol_selectors import (
    PROTOCOL_LABELS,
    PROTOCOLS,
    ComparisonShown,
    Setting,
    comparison_shown,
    protocol_setting,
)
from metrics.services import comparison_request, comparison_setting_store

REASONS = {
    "no_study": "no study of this protocol in the setting",
    "no_values": "no final label decides this rate for one of the two pipelines yet",
    "no_judgments": "no pair of these two pipelines has a final label yet",
}


def _setting_of(request: HttpRequest, slug: str) -> Setting:
    study = study_get_for_researcher(user=request.user, slug=slug)
    setting = protocol_setting(study)
    if setting is None:
        raise Http404(f"study {slug!r} has no protocol codebook of seed 002: nothing to compare")
    comparison_setting_store(setting=setting)  # read afresh (after an import): kept
    return setting


def _pick(request: HttpRequest, setting: Setting) -> tuple[int | None, int | None, list[str]]:
    """The evaluated and baseline pipeline ids asked for (else the setting's first pair),
    and what is wrong with them."""
    ids = {p.pk for p in setting.pipelines}
    errors = []
    picked: list[int | None] = []
    for name in ("evaluated", "baseline"):
        raw = request.GET.get(name)
        if raw is None:
            default = setting.pairs[0][0 if name == "evaluated" else 1] if setting.pairs else None
            picked.append(default)
            continue
        try:
            value = int(raw)
        except ValueError:
            value = None
        if value not in ids:
            errors.append(f"{name}: {raw!r} is not a pipeline of this setting")
            value = None
        picked.append(value)
    evaluated, baseline = picked
    if evaluated is not None and evaluated == baseline:
        errors.append("baseline: choose a pipeline other than the evaluated one")
    return evaluated, baseline, errors


def _signed(value: float | None, unit: str) -> str:
    return "—" if value is None else f"{value:+.1f} {unit}"


def _interval(low: float | None, high: float | None) -> str:
    return "" if low is None or high is None else f"[{low:+.1f}, {high:+.1f}]"


def _side_text(side: dict[str, Any] | None, metric: str) -> str:
    if side is None or side["value"] is None:
        return "undefined"
    numerator = f"{side['numerator']:.2f}" if metric == "acc_qd" else str(side["numerator"])
    return f"{100 * side['value']:.1f}% ({numerator}/{side['denominator']})"


def _side_note(side: dict[str, Any] | None, metric: str) -> str:
    if side is None:
        return ""
    notes = []
    if metric == "pass_r" and side.get("unknown"):
        notes.append(f"{side['unknown']} unknown")
    if side.get("no_documents"):
        notes.append(f"{side['no_documents']} without documents")
    if metric != "pass_r" and metric != "acc_qd" and side.get("unknown"):
        notes.append(f"{side['unknown']} with e(q) open")
    if metric == "acc_qd" and side.get("unknown_documents"):
        notes.append(f"{side['unknown_documents']} U documents")
    return ", ".join(notes)


def _rows_view(comparison: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for row in comparison["rows"]:
        reason = REASONS.get(row.get("reason") or "", row.get("reason"))
        if row["metric"] == "net_gain":
            normal, boot = row.get("normal") or {}, row.get("bootstrap") or {}
            out.append(
                {
                    **row,
                    "reason_text": reason,
                    "value_text": _signed(row.get("value"), "%"),
                    "normal_text": _interval(normal.get("low"), normal.get("high")),
                    "bootstrap_text": _interval(boot.get("low"), boot.get("high")),
                }
            )
            continue
        out.append(
            {
                **row,
                "reason_text": reason,
                "evaluated_text": _side_text(row["evaluated"], row["metric"]),
                "baseline_text": _side_text(row["baseline"], row["metric"]),
                "evaluated_note": _side_note(row["evaluated"], row["metric"]),
                "baseline_note": _side_note(row["baseline"], row["metric"]),
                "delta_text": _signed(row["delta"], "pp"),
                "interval_text": _interval(row["low"], row["high"]),
            }
        )
    return out


def _left_shares_view(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The share of left picks of each annotator of the setting's pairwise study: a
    position-bias check (about half for an annotator with no bias toward a side)."""
    return [
        {**row, "share": "—" if row["share"] is None else f"{row['share']:.0%}"} for row in rows
    ]


def _shown(setting: Setting, evaluated: int, baseline: int) -> ComparisonShown:
    """The comparison to show; asks a worker for a new one when there is none or it is
    behind (a burst of requests queues one job)."""
    shown = comparison_shown(setting, evaluated, baseline)
    if shown.computing or shown.stale:
        comparison_request(study=setting.study, evaluated=evaluated, baseline=baseline)
        queue_job_once(STUDY_COMPARISON_REFRESH, setting.study.pk)
    return shown


@login_required
@require_GET
def study_comparison(request: HttpRequest, slug: str) -> HttpResponse:
    setting = _setting_of(request, slug)
    evaluated, baseline, errors = _pick(request, setting)
    shown = ComparisonShown(None)
    if not errors and evaluated is not None and baseline is not None:
        shown = _shown(setting, evaluated, baseline)
    comparison = shown.data["comparison"] if shown.data else None
    context = {
        "study": setting.study,
        "setting": setting,
        "setting_rows": [
            {"protocol": p, "label": PROTOCOL_LABELS[p], "study": setting.studies[p]}
            for p in PROTOCOLS
        ],
        "evaluated": evaluated,
        "baseline": baseline,
        "errors": errors,
        "comparison": comparison,
        "shown": shown,
        "rows": _rows_view(comparison) if comparison else [],
        "chart": delta_chart(comparison) if comparison else None,
        "left_shares": _left_shares_view(shown.data["left_shares"]) if shown.data else [],
    }
    return render(request, "metrics/comparison.html", context, status=400 if errors else 200)


@login_required
@require_GET
def study_comparison_csv(request: HttpRequest, slug: str) -> HttpResponse:
    setting = _setting_of(request, slug)
    evaluated, baseline, errors = _pick(request, setting)
    if errors or evaluated is None or baseline is None:
        message = "; ".join(errors) or "choose an evaluated pipeline and its baseline"
        return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")
    shown = _shown(setting, evaluated, baseline)
    if shown.data is None:
        response = HttpResponse(
            "This comparison is being computed by a worker; try again shortly.\n",
            status=503,
            content_type="text/plain; charset=utf-8",
        )
        response["Retry-After"] = "10"
        return response
    comparison = shown.data["comparison"]
    stamp = [
        f"# evaluated {comparison['evaluated']['name']}",
        f"baseline {comparison['baseline']['name']}",
        *(f"{k} {v or 'none'}" for k, v in comparison["studies"].items()),
        f"intervals 95% bootstrap over queries ({comparison['n_boot']} resamples"
        f" seed {comparison['seed']})",
    ]
    name = f"{setting.study.slug}-comparison-{evaluated}-{baseline}.csv"
    if shown.computed_at is not None:  # a stored one: say when it was computed
        name = name.replace(".csv", f"-as-of-{shown.computed_at:%Y%m%dT%H%M%SZ}.csv")
    return csv_response([stamp, *csv_rows(comparison)], name)
