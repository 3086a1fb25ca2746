"""The researcher's people page: who holds which role in a study, adding someone, and k.

Access from ``annotator.access`` (outsiders 404, members without the researcher role 403),
writes from ``annotator.memberships.services``. Researchers see everything, usernames
included.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from annotator.access import study_get_for_researcher
from annotator.errors import AnnotationError
from annotator.memberships.forms import MemberAddForm, OverlapForm
from annotator.memberships.models import Membership
from annotator.memberships.services import membership_add, study_overlap_set
from audit.archive.models import Study

ACTION_MEMBER_ADD = "member-add"
ACTION_OVERLAP_SET = "overlap-set"


def _memberships(*, study: Study) -> QuerySet[Membership]:
    return (
        Membership.objects.filter(study=study)
        .select_related("user")
        .order_by("user__username", "role")
    )


def _page(
    request: HttpRequest,
    study: Study,
    *,
    member_form: MemberAddForm | None = None,
    overlap_form: OverlapForm | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "study": study,
        "memberships": _memberships(study=study),
        "member_form": member_form or MemberAddForm(),
        "overlap_form": overlap_form or OverlapForm(initial={"overlap": study.overlap}),
    }
    return render(request, "audit/study_people.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def study_people(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_researcher(user=request.user, slug=slug)
    if request.method == "GET":
        return _page(request, study)
    action = request.POST.get("action")
    if action == ACTION_MEMBER_ADD:
        return _member_add(request, study)
    if action == ACTION_OVERLAP_SET:
        return _overlap_set(request, study)
    messages.error(request, "Nothing was changed: the form sent no known action.")
    return _page(request, study, status=400)


def _member_add(request: HttpRequest, study: Study) -> HttpResponse:
    form = MemberAddForm(request.POST)
    if not form.is_valid():
        return _page(request, study, member_form=form, status=400)
    user = form.cleaned_data["username"]
    try:
        membership = membership_add(study=study, user=user, role=form.cleaned_data["role"])
    except AnnotationError as exc:
        form.add_error("role", exc.message)
        return _page(request, study, member_form=form, status=400)
    messages.success(
        request,
        f"{user.get_username()} has the role {membership.get_role_display().lower()} "
        "in this study.",
    )
    return redirect("study-people", slug=study.slug)


def _overlap_set(request: HttpRequest, study: Study) -> HttpResponse:
    form = OverlapForm(request.POST)
    if not form.is_valid():
        return _page(request, study, overlap_form=form, status=400)
    try:
        study_overlap_set(study=study, overlap=form.cleaned_data["overlap"])
    except AnnotationError as exc:
        form.add_error("overlap", exc.message[:1].upper() + exc.message[1:] + ".")
        return _page(request, study, overlap_form=form, status=400)
    messages.success(request, f"Overlap k is now {study.overlap}.")
    return redirect("study-people", slug=study.slug)
