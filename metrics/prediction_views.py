"""Prediction pages: the study's prediction sets with the upload form, one page per set
(its scores against the final labels, with intervals and counts), the rescore button and
the CSV. Thin: access through annotator.access, reads from metrics.selectors, writes by
metrics.services."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotator.access import study_get_for_researcher
from audit.archive.models import Study
from audit.ledger.downloads import csv_response
from metrics.display import SMALL_N, estimate_view, value_text
from metrics.forms import PredictionFileForm
from metrics.models import PredictionSet
from metrics.predictions import prediction_fields
from metrics.selectors import prediction_set_get, prediction_sets_of
from metrics.services import prediction_set_score, predictions_import


def _scores_view(prediction_set: PredictionSet) -> dict[str, Any] | None:
    result = prediction_set.scores or {}
    scores = result.get("scores")
    if not scores:
        return None
    categories = [value_text(c) for c in scores["categories"]]
    rows = []
    for label, counts in zip(categories, scores["confusion"], strict=True):
        rows.append({"label": label, "cells": counts, "total": sum(counts)})
    column_totals = [sum(column) for column in zip(*scores["confusion"], strict=True)]
    return {
        **scores,
        "labels": categories,
        "rows": rows,
        "column_totals": column_totals,
        "accuracy_view": estimate_view(scores["accuracy"]),
        "kappa_view": estimate_view(scores["kappa"]),
        "alpha_view": estimate_view(scores.get("accepted_error")),
        "beta_view": estimate_view(scores.get("false_block")),
        "positive_text": None if scores.get("positive") is None else value_text(scores["positive"]),
        "class_views": [
            {
                "label": value_text(c["category"]),
                "gold": c["gold"],
                "predicted": c["predicted"],
                "precision": estimate_view(c["precision"]),
                "recall": estimate_view(c["recall"]),
            }
            for c in scores["classes"]
        ],
    }


def _field_label(study: Study, field: str) -> str:
    fields = prediction_fields(study.codebook.unit, study.codebook.definition or {})
    spec = fields.get(field)
    return spec.label if spec else field


def _list_context(study: Study, form: PredictionFileForm, **extra: Any) -> dict[str, Any]:
    return {
        "study": study,
        "form": form,
        "prediction_sets": prediction_sets_of(study=study),
        "fields": prediction_fields(study.codebook.unit, study.codebook.definition or {}),
        **extra,
    }


@login_required
@require_http_methods(["GET", "POST"])
def study_predictions(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    if request.method == "GET":
        return render(
            request, "metrics/predictions.html", _list_context(study, PredictionFileForm())
        )
    form = PredictionFileForm(request.POST, request.FILES)
    if not form.is_valid():
        return render(request, "metrics/predictions.html", _list_context(study, form), status=400)
    upload = form.cleaned_data["file"]
    upload.seek(0)
    outcome = predictions_import(
        study=study, data=upload.file, file_name=upload.name, user=request.user
    )
    if outcome.prediction_set is None:
        context = _list_context(
            study,
            form,
            refused={
                "file_name": upload.name,
                "problems": outcome.problems,
                "count": outcome.error_count,
            },
        )
        return render(request, "metrics/predictions.html", context, status=400)
    if not outcome.created:
        messages.info(request, "This file was imported before; nothing changed.")
    return redirect(
        "study-prediction", slug=study.slug, prediction_set_id=outcome.prediction_set.pk
    )


def _get_set(
    request: HttpRequest, slug: str, prediction_set_id: int
) -> tuple[Study, PredictionSet]:
    study = study_get_for_researcher(user=request.user, slug=slug)
    prediction_set = prediction_set_get(study=study, pk=prediction_set_id)
    if prediction_set is None:
        raise Http404(f"no prediction set {prediction_set_id} in study {slug}")
    return study, prediction_set


@login_required
@require_GET
def study_prediction(request: HttpRequest, slug: str, prediction_set_id: int) -> HttpResponse:
    study, prediction_set = _get_set(request, slug, prediction_set_id)
    context = {
        "study": study,
        "prediction_set": prediction_set,
        "result": prediction_set.scores or {},
        "scores": _scores_view(prediction_set),
        "field_label": _field_label(study, prediction_set.field),
        "small_n": SMALL_N,
    }
    return render(request, "metrics/prediction.html", context)


@login_required
@require_POST
def study_prediction_rescore(
    request: HttpRequest, slug: str, prediction_set_id: int
) -> HttpResponse:
    _, prediction_set = _get_set(request, slug, prediction_set_id)
    prediction_set_score(prediction_set=prediction_set)
    messages.success(request, "Scored again against the current final labels.")
    return redirect("study-prediction", slug=slug, prediction_set_id=prediction_set_id)


def prediction_csv_rows(prediction_set: PredictionSet) -> list[list[Any]]:
    """The scores as one row per estimate: what, value, interval, counts."""
    out: list[list[Any]] = [
        ["measure", "category", "value", "low", "high", "numerator", "denominator"]
    ]
    scores = (prediction_set.scores or {}).get("scores")
    if not scores:
        return out

    def row(measure: str, category: str, estimate: dict[str, Any] | None) -> None:
        if estimate is None:
            return
        out.append(
            [
                measure,
                category,
                estimate.get("value"),
                estimate.get("low"),
                estimate.get("high"),
                estimate.get("numerator"),
                estimate.get("denominator"),
            ]
        )

    row("accuracy", "", scores["accuracy"])
    row("cohen_kappa", "", scores["kappa"])
    row("accepted_error_alpha", value_text(scores.get("positive")), scores.get("accepted_error"))
    row("false_block_beta", value_text(scores.get("positive")), scores.get("false_block"))
    for entry in scores["classes"]:
        row("precision", value_text(entry["category"]), entry["precision"])
        row("recall", value_text(entry["category"]), entry["recall"])
    labels = [value_text(c) for c in scores["categories"]]
    for gold, counts in zip(labels, scores["confusion"], strict=True):
        for predicted, count in zip(labels, counts, strict=True):
            out.append(["confusion", f"gold={gold} predicted={predicted}", count, "", "", "", ""])
    return out


@login_required
@require_GET
def study_prediction_csv(request: HttpRequest, slug: str, prediction_set_id: int) -> HttpResponse:
    study, prediction_set = _get_set(request, slug, prediction_set_id)
    result = prediction_set.scores or {}
    stamp = [
        f"# {prediction_set.kind} {prediction_set.name} {prediction_set.version}",
        f"field {prediction_set.field}",
        f"scored {prediction_set.scored_at:%Y-%m-%dT%H:%M:%SZ}" if prediction_set.scored_at else "",
        f"scored_units {result.get('scored')}",
        f"awaiting_final {result.get('awaiting_final')}",
        f"gold_digest {prediction_set.gold_digest}",
    ]
    rows = [stamp, *prediction_csv_rows(prediction_set)]
    return csv_response(rows, f"{study.slug}-predictions-{prediction_set.pk}.csv")
