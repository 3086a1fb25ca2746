"""Study pages. Thin: access from annotator.access, writes from audit.archive.services."""

from __future__ import annotations

import math

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
from audit.archive.models import Study
from audit.archive.selectors import studies_with_counts, study_frozen, study_import_batches
from audit.archive.services import observations_import
from audit.ledger.selectors import study_gate_panel
from audit.ledger.services import gate_stored


@login_required
def home(request: HttpRequest) -> HttpResponse:
    studies = studies_with_counts(studies=studies_visible_to(user=request.user))
    return render(request, "audit/home.html", {"studies": studies})


#: Bad lines listed per page of an import's detail (of the first STORED_ERRORS_LIMIT kept).
ERRORS_PAGE_SIZE = 100


def _study_page(
    request: HttpRequest, study: Study, *, form: ImportForm | None = None, status: int = 200
) -> HttpResponse:
    """The study page, also when an import is refused: its gate and links stay."""
    roles = roles_in_study(user=request.user, study=study)
    is_researcher = request.user.is_superuser or Role.RESEARCHER in roles
    context = {
        "study": studies_with_counts(studies=type(study).objects.filter(pk=study.pk)).get(),
        "roles": sorted(roles),
        "is_researcher": is_researcher,
    }
    if is_researcher:
        context["frozen"] = study_frozen(study=study)
        context["form"] = form or ImportForm()
        context["batches"] = study_import_batches(study=study)
    if may_see_gate(user=request.user, roles=roles):
        context["gate"] = study_gate_panel(gate=gate_stored(study=study))
    return render(request, "audit/study_detail.html", context, status=status)


@login_required
def study_detail(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_member(user=request.user, slug=slug)
    return _study_page(request, study)


@login_required
@require_http_methods(["POST"])
def study_import(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        return _study_page(request, study, form=form, status=400)
    upload = form.cleaned_data["file"]
    upload.seek(0)
    batch = observations_import(
        study=study, data=upload.file, file_name=upload.name, user=request.user
    )
    return redirect("import-detail", slug=study.slug, batch_id=batch.pk)


@login_required
def import_detail(request: HttpRequest, slug: str, batch_id: int) -> HttpResponse:
    """One import: its figures, its bad lines grouped by reason, and the kept bad lines
    page by page."""
    study = study_get_for_researcher(user=request.user, slug=slug)
    batch = get_object_or_404(study.imports, pk=batch_id)
    kept = batch.errors or []
    pages = max(1, math.ceil(len(kept) / ERRORS_PAGE_SIZE))
    raw = request.GET.get("page", "1")
    page = min(int(raw), pages) if raw.isdigit() and int(raw) > 0 else 1
    start = (page - 1) * ERRORS_PAGE_SIZE
    context = {
        "study": study,
        "batch": batch,
        "groups": batch.error_groups or [],
        "errors": kept[start : start + ERRORS_PAGE_SIZE],
        "kept": len(kept),
        "first_shown": start + 1,
        "last_shown": min(start + ERRORS_PAGE_SIZE, len(kept)),
        "page": page,
        "pages": pages,
        "previous_page": page - 1 if page > 1 else None,
        "next_page": page + 1 if page < pages else None,
    }
    return render(request, "audit/import_detail.html", context)
