"""Release pages: list, create (queues the build), a polled status fragment, downloads.
Thin: access from annotator.access, writes and reads from audit.releases.services."""

from __future__ import annotations

import mimetypes

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotator.access import study_get_for_researcher
from audit.archive.models import Study
from audit.ledger.models import StudyGate
from audit.partitions.selectors import partition_sealed
from audit.releases import formats as rf
from audit.releases.models import Release
from audit.releases.services import (
    ReleaseRefused,
    release_file_path,
    release_manifest_text,
    release_request,
    release_withheld_units,
    release_zip_path,
)


class ReleaseForm(forms.Form):
    name = forms.SlugField(
        max_length=80,
        help_text="Letters, digits, '-' and '_'. A release is immutable: a name is used once.",
    )
    withhold_texts = forms.BooleanField(
        required=False,
        label="Withhold snapshot texts (licensing)",
        help_text="Keeps digests, spans and the SHA-256 of each quote; the datasheet counts "
        "what was withheld.",
    )


def _release_context(study: Study, release: Release) -> dict:
    return {
        "study": study,
        "release": release,
        "files": [name for name in rf.BUNDLE_FILES if name in release.files],
        "manifest": release_manifest_text(release=release),
    }


def _page(request: HttpRequest, study: Study, form: ReleaseForm, status: int = 200):
    gate = StudyGate.objects.filter(study=study).values_list("reached", flat=True).first()
    releases = list(Release.objects.filter(study=study).select_related("study"))
    context = {
        "study": study,
        "form": form,
        "stage": gate,
        "frozen": hasattr(study, "freeze"),
        "sealed": partition_sealed(study, "test"),
        "withheld_units": release_withheld_units(study=study),
        "releases": [_release_context(study, release) for release in releases],
    }
    return render(request, "audit/releases.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def study_releases(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    if request.method == "GET":
        return _page(request, study, ReleaseForm())
    form = ReleaseForm(request.POST)
    if not form.is_valid():
        return _page(request, study, form, status=400)
    try:
        release_request(
            study=study,
            name=form.cleaned_data["name"],
            user=request.user,
            withhold_texts=form.cleaned_data["withhold_texts"],
        )
    except ReleaseRefused as exc:
        form.add_error("name", exc.message)
        return _page(request, study, form, status=400)
    return redirect("study-releases", slug=study.slug)


def _release(request: HttpRequest, study_slug: str, slug: str) -> Release:
    study = study_get_for_researcher(user=request.user, slug=study_slug)
    return get_object_or_404(Release.objects.select_related("study"), study=study, name=slug)


@login_required
@require_GET
def release_status(request: HttpRequest, study_slug: str, slug: str) -> HttpResponse:
    """The status fragment a building release's row polls (htmx, every second)."""
    release = _release(request, study_slug, slug)
    return render(request, "audit/_release_status.html", _release_context(release.study, release))


@login_required
@require_GET
def release_file(request: HttpRequest, study_slug: str, slug: str) -> FileResponse:
    release = _release(request, study_slug, slug)
    name = request.GET.get("file", "")
    try:
        path = release_file_path(release=release, file_name=name, reader=request.user)
    except LookupError:
        raise Http404("no such file in this release") from None
    suffix = path.suffix if path.suffix else ".txt"
    response = FileResponse(
        path.open("rb"),
        as_attachment=True,
        filename=f"{release.study.slug}-{release.name}-{name}",
        content_type=rf.CONTENT_TYPES.get(suffix, "text/plain; charset=utf-8"),
    )
    return response


@login_required
@require_GET
def release_zip(request: HttpRequest, study_slug: str, slug: str) -> FileResponse:
    release = _release(request, study_slug, slug)
    try:
        path = release_zip_path(release=release, reader=request.user)
    except LookupError:
        raise Http404("this release is not ready") from None
    return FileResponse(
        path.open("rb"),
        as_attachment=True,
        filename=f"{release.study.slug}-{release.name}.zip",
        content_type=mimetypes.types_map.get(".zip", "application/zip"),
    )
