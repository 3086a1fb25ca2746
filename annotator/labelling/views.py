"""Pages for annotators: the blinded forms.

Thin: access from ``annotator.access``, reads from ``annotator.labelling.selectors``, writes from
``annotator.labelling.services``. The pages show an annotator their own work only — never another
annotator's labels or identity, the overlap k, a unit's priority or state, or a score.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from functools import partial, wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import Resolver404, resolve, reverse
from django.utils import timezone
from django.views import csrf
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from annotator.access import assignment_get_for_annotator, study_get_for_annotator
from annotator.labelling.fields_page import (
    as_form_state,
    codebook_fields_for_page,
    document_cards,
    fields_rows,
    panes_template,
    problems_by_field,
    with_problems,
)
from annotator.labelling.forms import (
    DraftForm,
    SubmitForm,
    error_sentence,
)
from annotator.labelling.models import Assignment
from annotator.labelling.pair_page import annotation_seen, pair_sides_shown
from annotator.labelling.selectors import (
    annotator_progress,
    assignments_of,
    draft_of,
    label_head,
    pair_sides_of,
    unit_content,
)
from annotator.labelling.services import (
    AnnotationError,
    DraftConflict,
    LabelRefused,
    RevisionUnchanged,
    StaleRevision,
    SubmissionIdReused,
    annotation_from_form,
    assignment_next,
    draft_discard,
    draft_save,
    label_submit,
    pair_texts,
)
from annotator.labelling.throttling import submit_wait
from audit.archive.models import CodebookUnit
from audit.contract.engine import engine_of

#: How many of an annotator's items the start page lists at once (newest first).
START_PAGE_SIZE = 50
#: Where a submission leads (the annotator's setting, kept in their session): the next item
#: of their queue (the default), or back to their list of items.
AFTER_SUBMIT_NEXT = "next"
AFTER_SUBMIT_LIST = "list"
AFTER_SUBMIT_KEY = "annotate_after_submit"
#: The one form of every codebook (format 1 too, on the engine), whatever its unit kind;
#: the unit's texts come from the panes of its kind.
FORM_TEMPLATE = "annotator/form_fields.html"


def session_required(template: str) -> Callable:
    """For POSTs that carry work: an expired session gets 401 and a page (or fragment)
    saying so, never a redirect to the login page that would drop the request body."""

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if not request.user.is_authenticated:
                form_url = reverse("assignment-form", kwargs={"pk": kwargs["pk"]})
                context = {"state": "expired", "form_url": form_url}
                return render(request, template, context, status=401)
            return view(request, *args, **kwargs)

        return wrapped

    return decorate


# --- the study's start page ---------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def annotate_start(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_get_for_annotator(user=request.user, slug=slug)
    if request.method == "POST":
        try:
            assignment = assignment_next(study=study, annotator=request.user)
        except AnnotationError as exc:  # paused, or the qualification set stands in the way
            messages.error(request, exc.message)
            return redirect("annotate-start", slug=study.slug)
        if assignment is not None:
            return redirect("assignment-form", pk=assignment.pk)
        messages.info(request, "Nothing is left for you to annotate in this study. Thank you!")
        return redirect("annotate-start", slug=study.slug)
    progress = annotator_progress(study=study, annotator=request.user)
    # One page of the annotator's items, newest first: after thousands of labels the
    # whole list would be thousands of rows on every visit.
    pages = max(1, math.ceil(progress.assigned / START_PAGE_SIZE))
    page = request.GET.get("page", "1")
    page = min(int(page), pages) if page.isdigit() and int(page) > 0 else 1
    context = {
        "study": study,
        "forget_storage": request.session.pop("forget_storage", None),
        "progress": progress,
        "assignments": assignments_of(
            study=study,
            annotator=request.user,
            offset=(page - 1) * START_PAGE_SIZE,
            limit=START_PAGE_SIZE,
        ),
        "page": page,
        "pages": pages,
        "previous_page": page - 1 if page > 1 else None,
        "next_page": page + 1 if page < pages else None,
    }
    return render(request, "annotator/start.html", context)


# --- the form -------------------------------------------------------------------------


def _storage_key(assignment: Assignment) -> str:
    """The localStorage key under which the form keeps its unsent copy."""
    return f"claimgate:assignment:{assignment.pk}"


def _form_context(
    assignment: Assignment,
    *,
    submitted: dict[str, Any] | None = None,
    error: tuple[str, str] | None = None,
    stale: bool = False,
    problems: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Everything the form page needs, from the codebook's engine fields. ``submitted`` is
    what the user just sent, the form's state (shown again after a refusal, so that
    nothing is lost); ``problems`` are the record contract's, each shown next to the field
    it names."""
    study = assignment.study
    definition = study.codebook.definition
    engine = engine_of(definition)
    form_url = reverse("assignment-form", kwargs={"pk": assignment.pk})
    content = unit_content(unit=assignment.unit)
    codebook = codebook_fields_for_page(definition, engine)
    as_state = partial(as_form_state, engine)
    draft = draft_of(assignment=assignment)
    head = label_head(assignment=assignment)
    # An answer pair's label is shown in the annotator's own left/right (pair_page).
    head_annotation = as_state(annotation_seen(definition, head.annotation)) if head else None

    if submitted is not None:
        origin, initial = "submitted", as_state(submitted)
    elif draft is not None and draft.payload:
        origin, initial = "draft", as_state(draft.payload)
    elif head_annotation is not None:
        origin, initial = "head", head_annotation
    else:
        origin, initial = "empty", None

    texts: dict[str, Any] = {"query": content.query["text"], "answer": content.answer["text"]}
    sources = [
        {
            "index": index,
            "digest": source["digest"],
            "label": f"Source {index + 1}",
            "url": source["canonical_url"] or source["original_url"],
        }
        for index, source in enumerate(content.sources)
    ]
    pair = None
    if content.codebook_unit == CodebookUnit.ANSWER_PAIR:
        # Two answers named by their place only, in this annotator's recorded order.
        sides = pair_sides_of(assignment) or {}
        pair, texts, sources = pair_sides_shown(content, sides), pair_texts(content, sides), []
    else:
        # Every snapshot a span may cite, named as spans name it (a tuple's "source", an
        # answer's "source:N", a query's "document:N" in rank order); the unit kind's
        # panes show them.
        texts.update(content.texts)
    is_documents = content.codebook_unit == CodebookUnit.QUERY_DOCUMENTS
    page_data = {
        "assignment": assignment.pk,
        "unit": content.codebook_unit,
        "texts": texts,
        "failed": content.answer["status"] == "failed",
        "codebook": codebook,
        "initial": {"origin": origin, "state": initial},
        "head_state": head_annotation,
        "draft_version": draft.version if draft else 0,
        "parent_digest": head.record_digest if head else "",
        "storage_key": _storage_key(assignment),
        "form": "fields",
    }
    if is_documents:
        page_data["documents"] = len(content.documents)
    context: dict[str, Any] = {
        "study": study,
        "assignment": assignment,
        "content": content,
        "query": content.query,
        "answer": content.answer if pair is None else None,
        "sources": list(zip(sources, content.sources if pair is None else [], strict=True)),
        "pair": pair,
        "source": content.source if "source" in texts else None,
        "codebook": codebook,
        "draft": draft,
        "draft_version": draft.version if draft else 0,
        "head": head,
        "head_annotation": head_annotation,
        "client_submission_id": uuid.uuid4(),
        "page_data": page_data,
        "error": error,
        "login_url": f"{reverse('login')}?{urlencode({'next': form_url})}",
        "after_submit": AFTER_SUBMIT_NEXT,
    }
    per_document = [f["code"] for f in codebook["fields"] if f["placement"] == "document"]
    by_field, general = problems_by_field(problems or [], submitted, per_document)
    context["fields"] = with_problems(
        [f for f in codebook["fields"] if f["placement"] != "document"], by_field
    )
    context["general_problems"] = general
    if is_documents:
        if problems and error is not None:
            # The contract's sentence lists every path; the page shows each problem
            # next to its field and document instead.
            count = len(problems)
            context["error"] = (
                error[0],
                f"Nothing was stored: {count} problem{'s' if count != 1 else ''}, each "
                "named next to the document and field it concerns.",
            )
        context["documents"] = document_cards(codebook["fields"], content.documents, by_field)
        context["document_choices"] = [
            {"index": index, "number": index + 1} for index in range(len(content.documents))
        ]
    context["evidence_fields"] = [
        field
        for field in codebook["fields"]
        if field["evidence"] != "none" or field["type"] == "spans"
    ]
    context["panes_template"] = panes_template(content.codebook_unit)
    if stale:
        mine = fields_rows(as_state(submitted), codebook["fields"])
        latest = fields_rows(head_annotation, codebook["fields"])
        # Rows are marked where the versions differ, so that the eye finds the change.
        context["stale"] = {
            "mine": [(label, value, (label, value) not in latest) for label, value in mine],
            "latest": [(label, value, (label, value) not in mine) for label, value in latest],
            "latest_revision": head.revision if head else None,
            "latest_at": head.created_at if head else None,
        }
    return context


@never_cache  # Back after a submission asks again: the stored revision, never a stale form
@login_required
@require_http_methods(["GET"])
def assignment_form(request: HttpRequest, pk: int) -> HttpResponse:
    """The form; a submitted item with no draft opens read-only (its stored revision and a
    "revise" action), unless ``?revise=1`` asks for the form."""
    assignment = assignment_get_for_annotator(user=request.user, assignment_id=pk)
    context = _form_context(assignment)
    context["after_submit"] = request.session.get(AFTER_SUBMIT_KEY, AFTER_SUBMIT_NEXT)
    context["forget_storage"] = request.session.pop("forget_storage", None)
    if context["head"] is not None and context["draft"] is None and "revise" not in request.GET:
        context["rows"] = fields_rows(context["head_annotation"], context["codebook"]["fields"])
        return render(request, "annotator/submitted.html", context)
    return render(request, FORM_TEMPLATE, context)


def _stored(assignment: Assignment, state: Any) -> Any:
    """What the form sent (a draft or a submission: the form's state) as the codebook
    stores it."""
    return annotation_from_form(engine=engine_of(assignment.study.codebook.definition), state=state)


@session_required("annotator/_draft_status.html")
@require_POST
def assignment_draft(request: HttpRequest, pk: int) -> HttpResponse:
    assignment = assignment_get_for_annotator(user=request.user, assignment_id=pk)
    form = DraftForm(request.POST)
    if not form.is_valid():
        code, sentence = error_sentence(form)
        context = {"state": "invalid", "code": code, "message": sentence}
        return render(request, "annotator/_draft_status.html", context, status=400)
    try:
        draft = draft_save(
            assignment=assignment,
            payload=_stored(assignment, form.cleaned_data["payload"]),
            base_version=form.cleaned_data["version"],
        )
    except DraftConflict as exc:
        context = {"state": "conflict", "draft": exc.draft, "message": exc.message}
        return render(request, "annotator/_draft_status.html", context, status=409)
    except AnnotationError as exc:
        context = {"state": "invalid", "code": exc.code, "message": exc.message}
        return render(request, "annotator/_draft_status.html", context, status=400)
    context = {"state": "saved", "draft": draft, "saved_at": timezone.localtime(draft.updated_at)}
    response = render(request, "annotator/_draft_status.html", context)
    response["X-Draft-Version"] = str(draft.version)
    return response


@session_required("annotator/session_expired.html")
@require_POST
def assignment_submit(request: HttpRequest, pk: int) -> HttpResponse:
    assignment = assignment_get_for_annotator(user=request.user, assignment_id=pk)
    template = FORM_TEMPLATE
    form = SubmitForm(request.POST)
    wait = submit_wait(request.user.pk)
    if wait is not None:
        seconds = max(1, math.ceil(wait))
        sentence = (
            f"Too many submissions in a short time; nothing was stored. Your work is still "
            f"here: submit again in {seconds} second{'s' if seconds != 1 else ''}."
        )
        context = _form_context(
            assignment,
            submitted=form.raw_annotation,
            error=("throttled", sentence),
        )
        response = render(request, template, context, status=429)
        response["Retry-After"] = str(seconds)
        return response
    if not form.is_valid():
        context = _form_context(
            assignment,
            submitted=form.raw_annotation,
            error=error_sentence(form),
        )
        return render(request, template, context, status=400)
    state = form.cleaned_data["annotation"]
    after = request.POST.get("after_submit")
    if after in (AFTER_SUBMIT_NEXT, AFTER_SUBMIT_LIST):
        request.session[AFTER_SUBMIT_KEY] = after
    try:
        submission = label_submit(
            assignment=assignment,
            annotation=_stored(assignment, state),
            client_submission_id=form.cleaned_data["client_submission_id"],
            parent_digest=form.cleaned_data["parent_digest"],
        )
    except StaleRevision as exc:
        context = _form_context(
            assignment,
            submitted=state,
            error=(exc.code, _STALE_SENTENCE),
            stale=True,
        )
        return render(request, template, context, status=409)
    except SubmissionIdReused as exc:
        context = _form_context(assignment, submitted=state, error=(exc.code, exc.message))
        return render(request, template, context, status=409)
    except RevisionUnchanged as exc:
        # Nothing to store: the stored revision stands, and the draft that repeated it goes.
        draft_discard(assignment=assignment)
        request.session["forget_storage"] = _storage_key(assignment)
        messages.info(
            request,
            f"Nothing changed since your revision {exc.head.revision}, so no new revision "
            "was stored.",
        )
        return redirect("assignment-form", pk=assignment.pk)
    except (LabelRefused, AnnotationError) as exc:
        context = _form_context(
            assignment,
            submitted=state,
            error=(exc.code, exc.message),
            problems=getattr(exc, "problems", None),
        )
        return render(request, template, context, status=400)
    label = submission.label
    # The browser's unsent copy of this form is no longer needed (see static/js/forget.js).
    request.session["forget_storage"] = _storage_key(assignment)
    if submission.replayed:
        messages.info(request, f"This submission was already stored (revision {label.revision}).")
    elif label.revision == 1:
        messages.success(request, "Label submitted. Thank you!")
    else:
        messages.success(request, f"Revision {label.revision} submitted. Thank you!")
    return _after_submit(request, assignment)


def _after_submit(request: HttpRequest, assignment: Assignment) -> HttpResponse:
    """The next item of the queue, or the list when that is the annotator's setting or
    nothing is left."""
    study = assignment.study
    if request.session.get(AFTER_SUBMIT_KEY, AFTER_SUBMIT_NEXT) == AFTER_SUBMIT_NEXT:
        following = assignment_next(study=study, annotator=request.user)
        if following is not None:
            return redirect("assignment-form", pk=following.pk)
        messages.info(request, "Nothing is left for you to annotate in this study. Thank you!")
    return redirect("annotate-start", slug=study.slug)


_STALE_SENTENCE = (
    "This label was changed elsewhere (another tab or device) after you opened it, so your "
    "submission was not stored. Both versions are shown below: nothing is lost. Submitting "
    "again stores yours as the newest revision."
)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """For ``CSRF_FAILURE_VIEW``: a submission whose cookies are all gone (the CSRF cookie
    with the session) is an expired session too, so it gets the page that says the work is
    kept in this browser, with status 403. Every other CSRF failure gets Django's page."""
    try:
        match = resolve(request.path_info)
    except Resolver404:
        match = None
    if match is not None and match.url_name in {"assignment-submit", "assignment-draft"}:
        form_url = reverse("assignment-form", kwargs={"pk": match.kwargs["pk"]})
        template = (
            "annotator/session_expired.html"
            if match.url_name == "assignment-submit"
            else "annotator/_draft_status.html"
        )
        return render(request, template, {"state": "expired", "form_url": form_url}, status=403)
    return csrf.csrf_failure(request, reason=reason)
