"""The researcher's quality page: gold units and the plan, per annotator accuracy on gold
and agreement with the others (overall and drift, plotted), pause and resume.

Access from ``annotator.access`` (outsiders 404, members without the researcher role
403); reads from ``annotator.quality.reports``; writes from ``annotator.quality.services``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from annotator.access import study_get_for_researcher
from annotator.errors import AnnotationError
from annotator.quality.charts import drift_chart
from annotator.quality.forms import GoldFromFinalsForm, KeyFileForm, PlanForm
from annotator.quality.reports import gold_items_of, gold_summary, quality_shown
from annotator.quality.selectors import plan_of
from annotator.quality.services import (
    MAX_KEY_FILE,
    QualityError,
    annotator_pause,
    annotator_resume,
    gold_mark_from_file,
    gold_mark_from_finals,
    quality_plan_set,
)
from audit.archive.models import Study
from audit.queueing import STUDY_QUALITY_REFRESH, queue_job_once

ACTION_PLAN = "plan"
ACTION_FINALS = "gold-from-finals"
ACTION_FILE = "gold-from-file"


def _page(request: HttpRequest, study: Study, status: int = 200, **forms: Any) -> HttpResponse:
    plan = plan_of(study=study)
    shown = quality_shown(
        study=study, qualification=(plan.qualification_size, plan.qualification_threshold)
    )
    if shown.stale or shown.counting:
        queue_job_once(STUDY_QUALITY_REFRESH, study.pk)
    people = shown.people
    rows = [
        {
            "person": person,
            "by_week": drift_chart(
                f"{person.pseudonym} by week", person.gold_by_week, person.agreement_by_week
            ),
            "by_block": drift_chart(
                f"{person.pseudonym} by 50 items", person.gold_by_block, person.agreement_by_block
            ),
        }
        for person in people
    ]
    context = {
        "study": study,
        "plan": plan,
        "shown": shown,
        "summary": gold_summary(study=study),
        "gold_items": gold_items_of(study=study),
        "rows": rows,
        "problems": forms.pop("problems", None),
        "plan_form": forms.get("plan_form")
        or PlanForm(
            initial={
                "gold_rate": plan.gold_rate,
                "qualification_size": plan.qualification_size,
                "qualification_threshold": plan.qualification_threshold,
            }
        ),
        "finals_form": forms.get("finals_form") or GoldFromFinalsForm(),
        "file_form": forms.get("file_form") or KeyFileForm(),
    }
    return render(request, "annotator/quality.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def study_quality(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    if request.method == "GET":
        return _page(request, study)
    action = request.POST.get("action")
    if action == ACTION_PLAN:
        return _plan(request, study)
    if action == ACTION_FINALS:
        return _from_finals(request, study)
    if action == ACTION_FILE:
        return _from_file(request, study)
    messages.error(request, "Nothing was changed: the form sent no known action.")
    return _page(request, study, status=400)


def _plan(request: HttpRequest, study: Study) -> HttpResponse:
    form = PlanForm(request.POST)
    if not form.is_valid():
        return _page(request, study, status=400, plan_form=form)
    try:
        quality_plan_set(study=study, **form.cleaned_data)
    except AnnotationError as exc:
        form.add_error(None, exc.message)
        return _page(request, study, status=400, plan_form=form)
    messages.success(request, "The quality plan is saved; it applies to the next item handed out.")
    return redirect("study-quality", slug=study.slug)


def _from_finals(request: HttpRequest, study: Study) -> HttpResponse:
    form = GoldFromFinalsForm(request.POST)
    if not form.is_valid():
        return _page(request, study, status=400, finals_form=form)
    try:
        marked = gold_mark_from_finals(
            study=study,
            unit_digests=form.cleaned_data["units"],
            qualification=form.cleaned_data["qualification"],
            by=request.user,
        )
    except QualityError as exc:
        form.add_error(None, exc.message)
        return _page(request, study, status=400, finals_form=form, problems=exc.problems)
    messages.success(
        request, f"{marked.created} unit(s) marked gold ({marked.unchanged} already were)."
    )
    return redirect("study-quality", slug=study.slug)


def _from_file(request: HttpRequest, study: Study) -> HttpResponse:
    form = KeyFileForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, study, status=400, file_form=form)
    upload = form.cleaned_data["file"]
    if upload.size > MAX_KEY_FILE:
        form.add_error("file", f"A key file holds at most {MAX_KEY_FILE} bytes.")
        return _page(request, study, status=400, file_form=form)
    try:
        marked = gold_mark_from_file(study=study, data=upload.read(), by=request.user)
    except QualityError as exc:
        form.add_error(None, exc.message)
        return _page(request, study, status=400, file_form=form, problems=exc.problems)
    messages.success(
        request, f"{marked.created} unit(s) marked gold ({marked.unchanged} already were)."
    )
    return redirect("study-quality", slug=study.slug)


@login_required
@require_POST
def annotator_pause_toggle(request: HttpRequest, slug: str, user_id: int) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    person = get_user_model().objects.filter(pk=user_id).first()
    if person is None:
        messages.error(request, f"There is no account {user_id}.")
        return redirect("study-quality", slug=study.slug)
    try:
        if request.POST.get("action") == "resume":
            annotator_resume(study=study, annotator=person)
            messages.success(request, f"{person.get_username()} is resumed.")
        else:
            released = annotator_pause(study=study, annotator=person)
            messages.success(
                request,
                f"{person.get_username()} is paused: {released} open item(s) went back to "
                "the pool, their drafts kept.",
            )
    except AnnotationError as exc:
        messages.error(request, exc.message)
    return redirect("study-quality", slug=study.slug)
