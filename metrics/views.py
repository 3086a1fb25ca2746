"""The reliability report page, its status fragment (polled by htmx while a report runs),
the Recompute button and the CSV downloads. Thin: access through annotator.access, reads
from metrics.selectors, the computation is a job queued by name (audit.queueing)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotator.access import (
    may_see_gate,
    roles_in_study,
    study_get_for_member,
    study_get_for_researcher,
)
from annotator.memberships.models import Role
from audit.archive.models import Study
from audit.ledger.downloads import csv_response
from audit.ledger.gate import STAGE_LABELS
from audit.partitions.selectors import PARTITION_LABELS
from audit.queueing import STUDY_REPORT_REFRESH, queue_job_once
from metrics.charts import forest, heat_map
from metrics.claims import VERDICTS as CLAIM_VERDICTS
from metrics.display import rate_view
from metrics.models import StudyReport
from metrics.reliability import (
    REASON_NO_PAIRABLE_VALUES,
    REASON_SINGLE_CATEGORY,
    REASON_TOO_FEW_SHARED_UNITS,
)
from metrics.report_build import TREATMENTS, claim_cohort, claim_tables
from metrics.selectors import (
    gate_stage,
    report_current,
    report_latest_done,
    report_out_of_date,
)

#: Query parameter -> claim-row field: the claim-metric group filters.
FILTERS = {
    "question": "question_id",
    "version": "question_version",
    "service": "service",
    "mode": "mode",
    "model": "model",
}
UNDISCLOSED = "(undisclosed)"
CSV_TABLES = (
    "coefficients",
    "cohen",
    "confusion",
    "unresolved",
    "claim_alignment",
    "claim_verdicts",
    "claim_support",
)
COEFFICIENTS = (
    ("alpha", "Krippendorff's alpha"),
    ("fleiss_kappa", "Fleiss' kappa"),
    ("gwet_ac1", "Gwet's AC1"),
    ("raw_agreement", "Raw agreement"),
)


def study_get_for_report(*, user: AbstractBaseUser | AnonymousUser, slug: str) -> Study:
    """Researchers and adjudicators read reliability; annotators never do (it shows other
    annotators' work and how many label each unit). Outsiders: 404."""
    study = study_get_for_member(user=user, slug=slug)
    if not may_see_gate(user=user, roles=roles_in_study(user=user, study=study)):
        raise PermissionDenied(f"reliability of study {slug!r} is not for annotators")
    return study


def _filters(request: HttpRequest, allowed: set[str]) -> dict[str, str] | None:
    """The claim-metric filters of the query string; None if it names anything else."""
    unknown = set(request.GET) - allowed
    if unknown:
        return None
    return {key: request.GET[key] for key in FILTERS if request.GET.get(key, "") != ""}


def _filtered(rows: list[dict[str, Any]], filters: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        if all((row.get(FILTERS[key]) or UNDISCLOSED) == value for key, value in filters.items()):
            out.append(row)
    return out


def _options(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "key": key,
            "values": sorted({str(row.get(field) or UNDISCLOSED) for row in rows}),
        }
        for key, field in FILTERS.items()
    ]


def _headline(report: dict[str, Any]) -> tuple[dict | None, dict | None]:
    """The study codebook's version and its unassisted group (else the first group)."""
    for version in report.get("versions") or []:
        groups = version.get("groups") or []
        if groups:
            return version, groups[0]
    return None, None


#: Why a coefficient is undefined, in words (metrics.reliability's reason codes).
REASON_WORDS = {
    REASON_NO_PAIRABLE_VALUES: "undefined: too few pairable values — no unit has labels from "
    "two annotators to compare yet",
    REASON_SINGLE_CATEGORY: "undefined: every pairable value is the same, so agreement "
    "expected by chance is total and the coefficient is 0/0 (more varied units are needed)",
    REASON_TOO_FEW_SHARED_UNITS: "undefined: these two annotators share fewer than two units",
}


def _pairs(coders: list[str], summary: dict[str, Any]) -> list[dict[str, Any]]:
    kappa = summary.get("cohen_kappa") or {}
    matrix = kappa.get("matrix") or []
    shared = kappa.get("shared") or []
    reasons = kappa.get("reasons") or []
    rows = []
    for i, first in enumerate(coders):
        for j in range(i + 1, len(coders)):
            if i < len(matrix) and j < len(matrix[i]):
                reason = reasons[i][j] if i < len(reasons) and j < len(reasons[i]) else None
                rows.append(
                    {
                        "a": first,
                        "b": coders[j],
                        "kappa": matrix[i][j],
                        "shared": shared[i][j] if i < len(shared) else None,
                        "reason": reason,
                        "reason_text": REASON_WORDS.get(reason, reason) if reason else None,
                    }
                )
    return rows


def _group_view(group: dict[str, Any]) -> dict[str, Any]:
    coders = group.get("coders") or []
    items = group.get("items") or []
    claims = group.get("claims") or {}
    return {
        **group,
        "item_views": _item_views(items),
        "claim_item_views": _item_views(claims.get("items") or []),
        "forest": forest(f"{group['title']}: Krippendorff's alpha per item", items),
        "heat_maps": [
            (item, heat_map(f"{item['label']}: confusion", item.get("confusion") or {}))
            for item in items
        ],
        "kappas": [
            {
                "label": item["label"],
                "pairs": _pairs(coders, item.get("u_category") or {}),
            }
            for item in items
        ],
        "unresolved_rows": [
            {
                "coder": coder,
                "cells": [
                    next((r for r in item.get("unresolved") or [] if r["coder"] == coder), None)
                    for item in items
                ],
            }
            for coder in coders
        ],
        "claim_forest": forest(
            f"{group['title']}: alpha on matched claims", claims.get("items") or []
        )
        if claims
        else None,
    }


def _with_reason_words(summary: dict[str, Any]) -> dict[str, Any]:
    reason = (summary.get("alpha") or {}).get("reason")
    return {**summary, "alpha_reason_text": REASON_WORDS.get(reason, reason) if reason else None}


def _item_views(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **item,
            "treatment_list": [_with_reason_words(item.get(key) or {}) for key, _ in TREATMENTS],
        }
        for item in items
    ]


def _verdict_table(tables: dict[str, Any]) -> list[dict[str, Any]]:
    if tables.get("error"):
        return []
    entries = [("All attempts", tables["evaluate"])]
    for entry in tables["grouped"]:
        parts = [
            "undisclosed model" if key == "model" and value is None else f"{value}"
            for key, value in entry["group"].items()
        ]
        entries.append((" · ".join(parts), entry))
    return [
        {
            "label": label,
            "attempts": entry["attempts"],
            "failed": entry["failed"],
            "cells": [entry[name] for name in CLAIM_VERDICTS],
        }
        for label, entry in entries
    ]


def _resamples(data: dict[str, Any]) -> int:
    """The report's bootstrap size, for the intervals the page adds to the claim tables."""
    return int((data.get("bootstrap") or {}).get("n_boot") or 1000)


def _cohort(metrics: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """VeriScore's K per domain as the report froze it (a report stored before it kept one:
    from all of its rows), never from the filtered rows."""
    stored = metrics.get("veriscore_cohort")
    return stored if stored is not None else claim_cohort(rows)


def _status_context(study: Study, current: StudyReport | None) -> dict[str, Any]:
    return {"study": study, "current": current}


def _stamp(study: Study, report: StudyReport | None) -> dict[str, Any]:
    stage_now = gate_stage(study=study)
    return {
        "stage_now": stage_now,
        "stage_now_label": STAGE_LABELS.get(stage_now, "none") if stage_now else "none",
        "stage_then_label": (
            STAGE_LABELS.get(report.stage, "none") if report and report.stage else "none"
        ),
        "out_of_date": report_out_of_date(study=study, report=report),
    }


@login_required
@require_GET
def study_reliability(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_report(user=request.user, slug=slug)
    filters = _filters(request, set(FILTERS))
    if filters is None:
        return HttpResponseBadRequest("unknown query parameter; filters: " + ", ".join(FILTERS))
    report = report_latest_done(study=study)
    current = report_current(study=study)
    data = report.report if report else {}
    version, headline = _headline(data)
    groups = [
        {"version": v["codebook"], "group": _group_view(g)}
        for v in data.get("versions") or []
        for g in v.get("groups") or []
    ]
    claim_view = None
    metrics = data.get("claim_metrics")
    if metrics is not None:
        rows = list(metrics.get("rows") or [])
        chosen = _filtered(rows, filters)
        cohort = _cohort(metrics, rows)
        stored = metrics.get("tables") if not filters else None
        claim_view = {
            **(stored or claim_tables(chosen, cohort=cohort, n_boot=_resamples(data))),
            "cohort": cohort,
            "cohort_state": metrics.get("veriscore_cohort_state") or {},
            "options": _options(rows),
            "filters": filters,
            "rows": len(chosen),
            "awaiting_final": metrics.get("awaiting_final"),
        }
    context = {
        "study": study,
        "report": report,
        "data": data,
        "headline_version": version,
        "headline": headline,
        "groups": groups,
        "claims": claim_view,
        "treatments": TREATMENTS,
        "coefficients": COEFFICIENTS,
        "sealed": [PARTITION_LABELS.get(p, p) for p in data.get("sealed_partitions") or []],
        "included": [PARTITION_LABELS.get(p, p) for p in data.get("partitions") or []],
        "is_researcher": request.user.is_superuser
        or Role.RESEARCHER in roles_in_study(user=request.user, study=study),
        "query": request.GET.urlencode(),
        "verdict_names": CLAIM_VERDICTS,
        "verdict_rows": _verdict_table(claim_view) if claim_view else [],
        "estimates": [rate_view(rate) for rate in (data.get("estimates") or {}).get("rates") or []],
        **_status_context(study, current),
        **_stamp(study, report),
    }
    return render(request, "metrics/reliability.html", context)


@login_required
@require_GET
def study_reliability_status(request: HttpRequest, slug: str) -> HttpResponse:
    """The progress fragment. While a report runs the page polls it every second; once the
    run it watched ends (``?watch=<id>``), it asks htmx to reload the page."""
    study = study_get_for_report(user=request.user, slug=slug)
    current = report_current(study=study)
    response = render(request, "metrics/_status.html", _status_context(study, current))
    watched = request.GET.get("watch", "")
    if current is None and watched.isdigit():
        response["HX-Refresh"] = "true"
    return response


@login_required
@require_POST
def study_reliability_recompute(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    queue_job_once(STUDY_REPORT_REFRESH, study.pk)
    messages.success(request, "The reliability report is being recomputed by a worker.")
    return redirect(reverse("study-reliability", args=[study.slug]))


# --- CSV -----------------------------------------------------------------------------------


def _groups(data: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for version in data.get("versions") or []:
        name = f"{version['codebook']['name']} {version['codebook']['version']}"
        for group in version.get("groups") or []:
            yield name, group


def _coefficient_rows(data: dict[str, Any]) -> list[list[Any]]:
    out: list[list[Any]] = [
        [
            "codebook",
            "labels",
            "level",
            "item",
            "u_treatment",
            "coefficient",
            "value",
            "low",
            "high",
            "cluster_low",
            "cluster_high",
            "reason",
            "n_units",
            "n_pairable",
        ]
    ]
    for codebook, group in _groups(data):
        lists = [("item", group.get("items") or [])]
        lists.append(("matched_claim", (group.get("claims") or {}).get("items") or []))
        for level, items in lists:
            for item in items:
                for treatment, _ in TREATMENTS:
                    summary = item.get(treatment) or {}
                    for key, _ in COEFFICIENTS:
                        entry = summary.get(key) or {}
                        out.append(
                            [
                                codebook,
                                group["key"],
                                level,
                                item["key"],
                                treatment,
                                key,
                                entry.get("value"),
                                entry.get("low"),
                                entry.get("high"),
                                entry.get("cluster_low"),
                                entry.get("cluster_high"),
                                entry.get("reason"),
                                summary.get("n_units"),
                                summary.get("n_pairable"),
                            ]
                        )
    return out


def _cohen_rows(data: dict[str, Any]) -> list[list[Any]]:
    out: list[list[Any]] = [
        ["codebook", "labels", "item", "u_treatment", "coder_a", "coder_b", "kappa", "shared"]
    ]
    for codebook, group in _groups(data):
        for item in group.get("items") or []:
            for treatment, _ in TREATMENTS:
                for pair in _pairs(group.get("coders") or [], item.get(treatment) or {}):
                    out.append(
                        [
                            codebook,
                            group["key"],
                            item["key"],
                            treatment,
                            pair["a"],
                            pair["b"],
                            pair["kappa"],
                            pair["shared"],
                        ]
                    )
    return out


def _confusion_rows(data: dict[str, Any]) -> list[list[Any]]:
    out: list[list[Any]] = [["codebook", "labels", "item", "first_value", "second_value", "count"]]
    for codebook, group in _groups(data):
        for item in group.get("items") or []:
            confusion = item.get("confusion") or {}
            categories = confusion.get("categories") or []
            for i, row in enumerate(confusion.get("matrix") or []):
                for j, count in enumerate(row):
                    out.append(
                        [codebook, group["key"], item["key"], categories[i], categories[j], count]
                    )
    return out


def _unresolved_rows(data: dict[str, Any]) -> list[list[Any]]:
    out: list[list[Any]] = [["codebook", "labels", "item", "coder", "coded", "unresolved", "share"]]
    for codebook, group in _groups(data):
        for item in group.get("items") or []:
            for row in item.get("unresolved") or []:
                out.append(
                    [
                        codebook,
                        group["key"],
                        item["key"],
                        row["coder"],
                        row.get("coded"),
                        row.get("unresolved"),
                        row.get("share"),
                    ]
                )
    return out


def _alignment_rows(data: dict[str, Any]) -> list[list[Any]]:
    out: list[list[Any]] = [["codebook", "labels", "coder", "claims", "unmatched", "matched_pairs"]]
    for codebook, group in _groups(data):
        claims = group.get("claims") or {}
        for row in claims.get("per_coder") or []:
            out.append(
                [
                    codebook,
                    group["key"],
                    row["coder"],
                    row["claims"],
                    row["unmatched"],
                    claims.get("matched_pairs"),
                ]
            )
    return out


def _verdict_rows(tables: dict[str, Any]) -> list[list[Any]]:
    out: list[list[Any]] = [
        [
            "group",
            "attempts",
            "completed",
            "failed",
            "verdict",
            "numerator",
            "denominator",
            "rate",
            "low",
            "high",
            "unknown",
        ]
    ]
    if tables.get("error"):
        return out
    entries = [("(all)", tables["evaluate"])]
    for entry in tables["grouped"]:
        label = " · ".join(f"{k}={'' if v is None else v}" for k, v in entry["group"].items())
        entries.append((label, entry))
    for label, entry in entries:
        for verdict in CLAIM_VERDICTS:
            counts = entry[verdict]
            out.append(
                [
                    label,
                    entry["attempts"],
                    entry["completed"],
                    entry["failed"],
                    verdict,
                    counts["numerator"],
                    counts["denominator"],
                    counts["rate"],
                    counts.get("low"),
                    counts.get("high"),
                    counts["unknown"],
                ]
            )
    return out


def _support_rows(tables: dict[str, Any]) -> list[list[Any]]:
    out: list[list[Any]] = [
        [
            "question_id",
            "question_version",
            "service",
            "mode",
            "model",
            "supported",
            "verifiable",
            "support_precision",
            "unsupported",
            "unknown",
            "empty_answer",
            "veriscore",
            "domain",
            "K",
        ]
    ]
    if tables.get("error"):
        return out
    for support, score in zip(
        tables["support_precision"]["per_response"],
        tables["veriscore"]["per_response"],
        strict=True,
    ):
        out.append(
            [
                support["question_id"],
                support["question_version"],
                support["service"],
                support["mode"],
                support["model"] or UNDISCLOSED,
                support["numerator"],
                support["denominator"],
                support["rate"],
                support["unsupported"],
                support["unknown"],
                support["empty_answer"],
                score["score"],
                score["domain"] or "",
                score["K"],
            ]
        )
    return out


@login_required
@require_GET
def study_reliability_csv(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_report(user=request.user, slug=slug)
    filters = _filters(request, {*FILTERS, "table"})
    if filters is None:
        return HttpResponseBadRequest("unknown query parameter")
    table = request.GET.get("table", "coefficients")
    if table not in CSV_TABLES:
        raise Http404(f"no reliability table {table!r}")
    report = report_latest_done(study=study)
    if report is None:
        raise Http404("no reliability report yet")
    data = report.report
    builders = {
        "coefficients": _coefficient_rows,
        "cohen": _cohen_rows,
        "confusion": _confusion_rows,
        "unresolved": _unresolved_rows,
        "claim_alignment": _alignment_rows,
    }
    if table in builders:
        rows = builders[table](data)
    else:
        metrics = data.get("claim_metrics") or {}
        rows = list(metrics.get("rows") or [])
        tables = (metrics.get("tables") if not filters else None) or claim_tables(
            _filtered(rows, filters), cohort=_cohort(metrics, rows), n_boot=_resamples(data)
        )
        rows = _verdict_rows(tables) if table == "claim_verdicts" else _support_rows(tables)
    stamp = [
        f"# codebook {report.codebook_name} {report.codebook_version}",
        f"computed {report.finished_at:%Y-%m-%dT%H:%M:%SZ}" if report.finished_at else "",
        f"stage {report.stage or 'none'}",
        f"labels_digest {report.labels_digest}",
    ]
    return csv_response([stamp, *rows], f"{study.slug}-reliability-{table}.csv")
