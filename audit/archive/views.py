"""Study pages. Thin: access from annotator.access, writes from audit.archive.services."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from annotator.access import (
    may_see_gate,
    roles_in_study,
    studies_visible_to,
    study_get_for_member,
    study_get_for_researcher,
)
from annotator.memberships.models import Role
from audit.archive.forms import ImportForm
from audit.archive.selectors import studies_with_counts, study_import_batches
from audit.archive.services import observations_import
from audit.ledger.selectors import study_gate_panel
from audit.ledger.services import gate_stored


@login_required
def home(request: HttpRequest) -> HttpResponse:
    studies = studies_with_counts(studies=studies_visible_to(user=request.user))
    return render(request, "audit/home.html", {"studies": studies})


@login_required
def study_detail(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_member(user=request.user, slug=slug)
    roles = roles_in_study(user=request.user, study=study)
    is_researcher = request.user.is_superuser or Role.RESEARCHER in roles
    context = {
        "study": studies_with_counts(studies=type(study).objects.filter(pk=study.pk)).get(),
        "roles": sorted(roles),
        "is_researcher": is_researcher,
    }
    if is_researcher:
        context["form"] = ImportForm()
        context["batches"] = study_import_batches(study=study)
    if may_see_gate(user=request.user, roles=roles):
        context["gate"] = study_gate_panel(gate=gate_stored(study=study))
    return render(request, "audit/study_detail.html", context)


@login_required
@require_http_methods(["POST"])
def study_import(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        context = {
            "study": studies_with_counts(studies=type(study).objects.filter(pk=study.pk)).get(),
            "is_researcher": True,
            "form": form,
            "batches": study_import_batches(study=study),
        }
        return render(request, "audit/study_detail.html", context, status=400)
    upload = form.cleaned_data["file"]
    upload.seek(0)
    batch = observations_import(
        study=study, data=upload.file, file_name=upload.name, user=request.user
    )
    return redirect("import-detail", slug=study.slug, batch_id=batch.pk)


@login_required
def import_detail(request: HttpRequest, slug: str, batch_id: int) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    batch = get_object_or_404(study.imports, pk=batch_id)
    return render(request, "audit/import_detail.html", {"study": study, "batch": batch})
