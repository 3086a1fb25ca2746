"""Study pages. Thin: access from annotator.access, writes from audit.archive.services."""

from __future__ import annotations

import math

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotator.access import (
    may_see_gate,
    may_set_up_studies,
    roles_in_study,
    setup_get_for_researcher,
    studies_visible_to,
    study_get_for_member,
    study_get_for_researcher,
)
from annotator.errors import AnnotationError
from annotator.memberships.models import Role
from annotator.memberships.services import study_create
from audit.archive.forms import CodebookUploadForm, ImportForm, StudyCreateForm
from audit.archive.models import Codebook, ImportStatus, Study
from audit.archive.selectors import (
    codebooks_with_use,
    studies_with_counts,
    study_frozen,
    study_import_batches,
)
from audit.archive.services import (
    CODEBOOK_MAX_BYTES,
    CodebookProblem,
    CodebookRefused,
    codebook_install_bytes,
    observations_import,
)
from audit.ledger.selectors import study_gate_panel
from audit.ledger.services import gate_stored
from audit.queueing import queue_orders_draw
from metrics.protocol_selectors import protocol_of


@login_required
def home(request: HttpRequest) -> HttpResponse:
    studies = studies_with_counts(studies=studies_visible_to(user=request.user))
    context = {"studies": studies, "may_set_up": may_set_up_studies(user=request.user)}
    return render(request, "audit/home.html", context)


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
        context["protocol_study"] = protocol_of(study.codebook) is not None
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
    if batch.status == ImportStatus.IMPORTED:
        queue_orders_draw(study.pk)  # its annotators' orders take the new units
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


def _codebooks_page(
    request: HttpRequest,
    *,
    form: CodebookUploadForm | None = None,
    problems: tuple[CodebookProblem, ...] = (),
    file_name: str = "",
    status: int = 200,
) -> HttpResponse:
    context = {
        "codebooks": codebooks_with_use(),
        "form": form or CodebookUploadForm(),
        "problems": problems,
        "file_name": file_name,
    }
    return render(request, "audit/codebooks.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def codebooks(request: HttpRequest) -> HttpResponse:
    """The installed codebook versions and the upload that installs one."""
    setup_get_for_researcher(user=request.user)
    if request.method == "GET":
        return _codebooks_page(request)
    form = CodebookUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return _codebooks_page(request, form=form, status=400)
    upload = form.cleaned_data["file"]
    upload.seek(0)
    # One byte past the limit is enough for the service to say the file is too large.
    data = upload.read(CODEBOOK_MAX_BYTES + 1)
    try:
        row, created = codebook_install_bytes(data=data, file_name=upload.name)
    except CodebookRefused as exc:
        return _codebooks_page(
            request, form=form, problems=exc.problems, file_name=upload.name, status=400
        )
    if created:
        messages.success(request, f"Installed codebook {row.name} {row.version}.")
    else:
        messages.info(
            request, f"Codebook {row.name} {row.version} was already installed with this content."
        )
    return redirect(f"{reverse('codebooks')}#codebook-{row.pk}")


@login_required
@require_http_methods(["GET", "POST"])
def study_new(request: HttpRequest) -> HttpResponse:
    """Create a study with an installed codebook; its creator becomes its researcher."""
    setup_get_for_researcher(user=request.user)
    if request.method == "GET":
        initial = {}
        chosen = request.GET.get("codebook", "")
        if chosen.isdigit() and Codebook.objects.filter(pk=int(chosen)).exists():
            initial["codebook"] = int(chosen)
        form = StudyCreateForm(initial=initial)
        return render(request, "audit/study_new.html", {"form": form})
    form = StudyCreateForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            study = study_create(
                slug=data["slug"],
                title=data["title"],
                description=data["description"],
                codebook=data["codebook"],
                overlap=data["overlap"],
                user=request.user,
            )
        except AnnotationError as exc:
            field = {"slug_taken": "slug", "invalid_overlap": "overlap"}.get(exc.code)
            form.add_error(field, exc.message)
        else:
            messages.success(
                request,
                f"Created study {study.slug}. Import its observations below, then add people.",
            )
            return redirect("study-detail", slug=study.slug)
    return render(request, "audit/study_new.html", {"form": form}, status=400)
