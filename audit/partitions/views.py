"""The researcher's partitions page: counts, rule (preview, then apply), file upload,
leakage report, thresholds, the freeze (typed confirmation) and new study versions.

Thin: access from ``annotator.access`` (outsiders 404, members without the researcher
role 403), reads and writes from ``audit.partitions.services``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotator.access import study_get_for_researcher
from audit.archive.models import Study
from audit.partitions.forms import (
    KIND_VALUES,
    FreezeForm,
    PartitionFileForm,
    RuleForm,
    StudyVersionForm,
    ThresholdsForm,
)
from audit.partitions.freeze import thresholds_with_defaults
from audit.partitions.leakage import Leak, leakage_summary
from audit.partitions.proposal import leak_reason
from audit.partitions.rules import FIELD_LABELS, FIELD_PLURALS, GROUP_FIELDS
from audit.partitions.selectors import PARTITION_LABELS
from audit.partitions.services import (
    PAGE_LEAKS,
    PAGE_UNITS,
    STUDY_FROZEN,
    FileOutcome,
    PartitionError,
    RulePreview,
    latest_records,
    partition_file_apply,
    partition_overview,
    partition_rule_apply,
    partition_rule_preview,
    study_freeze,
    study_thresholds_set,
    study_version_create,
)

#: How many leaking groups, and units per side of one, the page lists (the API lists all).
LEAKS_SHOWN = PAGE_LEAKS
UNITS_SHOWN = PAGE_UNITS
STEP_PREVIEW = "preview"
STEP_APPLY = "apply"


@dataclass(frozen=True)
class LeakRow:
    field_label: str
    value: str
    calibration: list[tuple[str, str | None]]  # (unit digest, latest record digest)
    calibration_more: int
    test: list[str]
    test_more: int


def leak_rows(study: Study, leaks: list[Leak]) -> list[LeakRow]:
    """Leaking groups for the page. Calibration units link to their latest record;
    test units do not: their labels stay unopened until the freeze."""
    shown = leaks[:LEAKS_SHOWN]
    records = latest_records(
        study=study, digests=(d for leak in shown for d in leak.calibration[:UNITS_SHOWN])
    )
    return [
        LeakRow(
            field_label=leak.field_label,
            value=leak.value,
            calibration=[(d, records.get(d)) for d in leak.calibration[:UNITS_SHOWN]],
            calibration_more=max(leak.calibration_count - UNITS_SHOWN, 0),
            test=list(leak.test[:UNITS_SHOWN]),
            test_more=max(leak.test_count - UNITS_SHOWN, 0),
        )
        for leak in shown
    ]


def _page(
    request: HttpRequest,
    study: Study,
    *,
    status: int = 200,
    rule_form: RuleForm | None = None,
    preview: RulePreview | None = None,
    file_form: PartitionFileForm | None = None,
    file_outcome: FileOutcome | None = None,
    thresholds_form: ThresholdsForm | None = None,
    freeze_form: FreezeForm | None = None,
    version_form: StudyVersionForm | None = None,
) -> HttpResponse:
    overview = partition_overview(study=study, leaks_shown=LEAKS_SHOWN, units_shown=UNITS_SHOWN)
    frozen = overview.freeze is not None
    proposal = None if frozen else overview.proposal
    if rule_form is None:
        # The form starts from the leak-free proposal: its defaults never leak.
        initial = (
            {
                "field": proposal.field,
                "kind": KIND_VALUES,
                "values": "\n".join(proposal.test_values),
            }
            if proposal is not None and proposal.possible
            else {}
        )
        rule_form = RuleForm(initial=initial)
    thresholds_text = json.dumps(
        thresholds_with_defaults(study.thresholds or {}), indent=2, sort_keys=True
    )
    context: dict[str, Any] = {
        "study": study,
        "overview": overview,
        "frozen": frozen,
        "proposal": proposal,
        "counts_rows": [
            (
                label,
                overview.counts[key],
                [overview.groups[key][name] for name in GROUP_FIELDS],
            )
            for key, label in PARTITION_LABELS.items()
        ],
        "group_fields": [FIELD_PLURALS[name].capitalize() for name in GROUP_FIELDS],
        "leak_rows": leak_rows(study, overview.leaks),
        "leaks_more": max(len(overview.leaks) - LEAKS_SHOWN, 0),
        "leak_summary": leakage_summary(overview.leaks),
        "values_present": [
            (FIELD_LABELS[name].capitalize(), overview.values[name]) for name in GROUP_FIELDS
        ],
        "rule_form": rule_form,
        "preview": preview,
        "preview_leak_reason": leak_reason(preview.rule.field, preview.leaks)
        if preview and preview.leaks
        else "",
        "preview_leak_rows": leak_rows(study, preview.leaks) if preview else [],
        "preview_leak_summary": leakage_summary(preview.leaks) if preview else "",
        "file_form": file_form or PartitionFileForm(),
        "file_outcome": file_outcome,
        "thresholds_text": thresholds_text,
        "thresholds_form": thresholds_form
        or ThresholdsForm(initial={"thresholds": thresholds_text}),
        "freeze_form": freeze_form or FreezeForm(study=study),
        "freeze_problems": overview.contents.problems() if overview.contents else [],
        "version_form": version_form or StudyVersionForm(study=study),
        "previous_version": study.previous_version,
        "next_versions": list(study.next_versions.order_by("created_at", "id")),
    }
    if overview.freeze is not None:
        context["frozen_thresholds_text"] = json.dumps(
            overview.freeze.thresholds, indent=2, sort_keys=True
        )
    return render(request, "audit/partitions.html", context, status=status)


def _refusal_status(exc: PartitionError) -> int:
    return 409 if exc.code in {STUDY_FROZEN, "already_frozen"} else 400


@login_required
@require_GET
def study_partitions(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    return _page(request, study)


@login_required
@require_POST
def study_partitions_rule(request: HttpRequest, slug: str) -> HttpResponse:
    """Step one previews the rule (counts and leakage after it); step two applies it."""
    study = study_get_for_researcher(user=request.user, slug=slug)
    form = RuleForm(request.POST)
    if not form.is_valid():
        return _page(request, study, rule_form=form, status=400)
    try:
        if request.POST.get("step") != STEP_APPLY:
            preview = partition_rule_preview(study=study, rule=form.rule)
            return _page(request, study, rule_form=form, preview=preview)
        applied = partition_rule_apply(study=study, rule=form.rule, refuse_leakage=True)
    except PartitionError as exc:
        form.add_error(None, exc.message[:1].upper() + exc.message[1:] + ".")
        return _page(request, study, rule_form=form, status=_refusal_status(exc))
    counts = applied.counts
    messages.success(
        request,
        f"Applied: {applied.rule.describe()}. {counts['calibration']} units in calibration, "
        f"{counts['test']} in test ({applied.changed} changed).",
    )
    if applied.leaks:
        messages.error(
            request,
            f"Leakage remains: {leakage_summary(applied.leaks)} in both partitions. "
            "The study cannot be frozen until it is gone.",
        )
    return redirect("study-partitions", slug=study.slug)


@login_required
@require_POST
def study_partitions_file(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    form = PartitionFileForm(request.POST, request.FILES)
    if not form.is_valid():
        return _page(request, study, file_form=form, status=400)
    upload = form.cleaned_data["file"]
    try:
        outcome = partition_file_apply(study=study, data=upload.read(), file_name=upload.name)
    except PartitionError as exc:
        form.add_error(None, exc.message[:1].upper() + exc.message[1:] + ".")
        return _page(request, study, file_form=form, status=_refusal_status(exc))
    if not outcome.applied:
        return _page(request, study, file_form=form, file_outcome=outcome, status=400)
    messages.success(
        request,
        f"Applied {upload.name}: {outcome.units} units assigned. Now "
        f"{outcome.counts['calibration']} in calibration, {outcome.counts['test']} in test, "
        f"{outcome.counts['unassigned']} unassigned.",
    )
    if outcome.leaks:
        messages.error(
            request,
            f"Leakage: {leakage_summary(outcome.leaks)} in both partitions. "
            "The study cannot be frozen until it is gone.",
        )
    return redirect("study-partitions", slug=study.slug)


@login_required
@require_POST
def study_thresholds(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    form = ThresholdsForm(request.POST)
    if not form.is_valid():
        return _page(request, study, thresholds_form=form, status=400)
    try:
        study_thresholds_set(study=study, thresholds=form.cleaned_data["thresholds"])
    except PartitionError as exc:
        form.add_error("thresholds", exc.message[:1].upper() + exc.message[1:] + ".")
        return _page(request, study, thresholds_form=form, status=_refusal_status(exc))
    messages.success(request, f"Thresholds saved: {len(study.thresholds)} named values.")
    return redirect("study-partitions", slug=study.slug)


@login_required
@require_POST
def study_freeze_view(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    form = FreezeForm(request.POST, study=study)
    if not form.is_valid():
        return _page(request, study, freeze_form=form, status=400)
    try:
        study_freeze(study=study, user=request.user)
    except PartitionError as exc:
        form.add_error(None, exc.message)
        return _page(request, study, freeze_form=form, status=_refusal_status(exc))
    messages.success(
        request,
        f"Study {study.slug} is frozen. Test-partition numbers are now open on the outcomes page.",
    )
    return redirect("study-partitions", slug=study.slug)


@login_required
@require_POST
def study_version_new(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    form = StudyVersionForm(request.POST, study=study)
    if not form.is_valid():
        return _page(request, study, version_form=form, status=400)
    try:
        new = study_version_create(
            study=study,
            slug=form.cleaned_data["slug"],
            title=form.cleaned_data["title"],
            user=request.user,
            codebook=form.cleaned_data["codebook"],
        )
    except PartitionError as exc:
        form.add_error(None, exc.message[:1].upper() + exc.message[1:] + ".")
        return _page(request, study, version_form=form, status=400)
    messages.success(
        request,
        f"Study {new.slug} is a new version of {study.slug}: same observations, members "
        "and partitions, no labels, not frozen.",
    )
    return redirect("study-partitions", slug=new.slug)
