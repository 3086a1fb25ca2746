"""REST API for annotation: one class per operation, nested Input/Output serializers.

Access goes through ``annotator.access`` (someone else's assignment is 404, a study one
is not an annotator of is 403); every write calls ``annotator.labelling.services``. What an
annotator must never see — other annotators, how many label a unit, its priority or
state, the evidence weights that make the priority — is simply not in any serializer here.

Preconditions (docs/api.md):
- a draft's ETag is ``"draft-<version>"``; a PUT on an existing draft needs a matching
  ``If-Match`` (428 without one, 412 with a stale one);
- a label's ETag is its quoted record digest; a submission names the revision it edits
  in ``If-Match`` (no header: the first submission); a stale one answers 409 with the
  latest revision, as the design says; a malformed ``If-Match`` answers 400.
"""

from __future__ import annotations

import re
import uuid
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
)
from rest_framework import serializers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from annotator.access import (
    assignment_get_for_annotator,
    assignment_seat_for_annotator,
    study_get_for_annotator,
    study_seat_and_queue_for_annotator,
)
from annotator.filters import (
    AssignmentFilter,
    ListPagination,
    StrictQueryParams,
    assignments_of_annotator,
    filter_parameters,
)
from annotator.labelling.models import Assignment, Draft, Label
from annotator.labelling.pair_page import annotation_seen, pair_sides_shown
from annotator.labelling.selectors import (
    draft_of,
    label_head,
    labels_of_assignment,
    pair_sides_of,
)
from annotator.labelling.services import (
    AnnotationError,
    DraftConflict,
    RevisionUnchanged,
    StaleRevision,
    SubmissionIdReused,
    assignment_handed,
    draft_save,
    handed_unit_content,
    label_submit,
)
from annotator.labelling.throttling import SubmitThrottle
from audit.archive.models import CodebookUnit
from audit.archive.records import UnitContent
from config.api import StrictCharField
from config.authentication import TokenAuthentication

INVALID_IF_MATCH = "invalid_if_match"
IF_MATCH_REQUIRED = "if_match_required"
ASSISTED_MODEL_MAX = 200  # Label.assisted_model

# --- entity tags -------------------------------------------------------------------

_ETAG = re.compile(r'^(?:W/)?(?:"([^",\s]+)"|([^",\s]+))$')
_DRAFT_TAG = re.compile(r"^draft-(\d{1,9})$")
_DIGEST_TAG = re.compile(r"^[0-9a-fA-F]{64}$")


def draft_etag(version: int) -> str:
    return f'"draft-{version}"'


def label_etag(label: Label) -> str:
    return f'"{label.record_digest}"'


def _if_match_tags(request: Request) -> list[str] | None:
    """The opaque tags of If-Match (weak prefix and quotes removed), ``["*"]`` for a
    wildcard, ``None`` when the header is absent. Raises on an unreadable header."""
    raw = request.META.get("HTTP_IF_MATCH")  # request.headers would copy every header
    if raw is None:
        return None
    raw = raw.strip()
    if raw == "*":
        return ["*"]
    tags = []
    for part in raw.split(","):
        match = _ETAG.match(part.strip())
        if match is None:
            raise _Refusal(
                INVALID_IF_MATCH,
                f"If-Match is not a list of entity tags: {raw!r}",
                status.HTTP_400_BAD_REQUEST,
            )
        tags.append(match.group(1) or match.group(2))
    return tags


class _Refusal(Exception):
    """An HTTP answer decided while reading the request; turned into a Response below."""

    def __init__(self, reason: str, message: str, code: int, **extra: Any) -> None:
        super().__init__(message)
        self.body = {"reason": reason, "message": message, **extra}
        self.code = code
        self.headers: dict[str, str] = {}


# --- what an annotator may read ----------------------------------------------------------
# The evidence weights make the review priority, which annotators never see (DESIGN.md);
# they stay on the server, as on the annotation pages. Evidence is shown as the values
# the annotator gave, the same shape a submission sends.


def codebook_for_annotator(definition: dict[str, Any]) -> dict[str, Any]:
    shown = dict(definition)
    if isinstance(shown.get("evidence_dimensions"), list):
        shown["evidence_dimensions"] = [
            {key: value for key, value in item.items() if key != "weight"}
            if isinstance(item, dict)
            else item
            for item in shown["evidence_dimensions"]
        ]
    return shown


def annotation_for_annotator(
    annotation: dict[str, Any], definition: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A stored annotation as its annotator reads it: evidence without weights, and an
    answer pair's in their own left/right (``definition``: the study's codebook)."""
    if "sides" in annotation and definition is not None:
        annotation = annotation_seen(definition, annotation)
    shown = dict(annotation)
    if isinstance(shown.get("evidence"), dict):
        shown["evidence"] = {
            key: item.get("value") if isinstance(item, dict) else item
            for key, item in shown["evidence"].items()
        }
    return shown


def _error(exc: AnnotationError, code: int, **extra: Any) -> Response:
    problems = getattr(exc, "problems", None)
    if problems:  # a format-2 annotation: every problem, each naming its field
        extra = {"problems": problems, **extra}
    return Response({"reason": exc.code, "message": exc.message, **extra}, status=code)


# --- serializers shared by several operations ------------------------------------------


class ProblemOutput(serializers.Serializer):
    code = serializers.CharField(help_text="Machine-readable reason code.")
    path = serializers.CharField(help_text="Where: e.g. annotation.values.<field code>.")
    message = serializers.CharField(help_text="A sentence for people.")

    class Meta:
        ref_name = "AnnotationProblem"


class ErrorOutput(serializers.Serializer):
    reason = serializers.CharField(help_text="Machine-readable reason code.")
    message = serializers.CharField(help_text="A sentence for people.")
    problems = ProblemOutput(
        many=True,
        required=False,
        help_text="A refused annotation of a format-2 codebook: every problem, each "
        "naming its field (absent otherwise).",
    )

    class Meta:
        ref_name = "AnnotationError"


class DraftOutput(serializers.Serializer):
    payload = serializers.DictField()
    version = serializers.IntegerField()
    etag = serializers.SerializerMethodField(help_text='The If-Match value: "draft-<version>".')
    updated_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Draft"

    def get_etag(self, draft: Draft) -> str:
        return draft_etag(draft.version)


class AssistedOutput(serializers.Serializer):
    model = serializers.CharField(help_text="Identity of the model or judge that pre-filled it.")

    class Meta:
        ref_name = "Assisted"


class LabelOutput(serializers.Serializer):
    revision = serializers.IntegerField()
    record_digest = serializers.CharField()
    etag = serializers.SerializerMethodField(help_text="The If-Match value of a revision.")
    parents = serializers.ListField(child=serializers.CharField())
    annotation = serializers.SerializerMethodField(
        help_text="As stored, except evidence: the values you gave, without weights."
    )
    assisted = serializers.SerializerMethodField()
    client_submission_id = serializers.UUIDField()
    created_at = serializers.DateTimeField()

    class Meta:
        ref_name = "Label"

    def get_etag(self, label: Label) -> str:
        return label_etag(label)

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_annotation(self, label: Label) -> dict[str, Any]:
        definition = self.context.get("codebook_definition")
        if definition is None and "sides" in label.annotation:
            # An answer pair's label is never shown in its stored roles.
            definition = label.study.codebook.definition
        return annotation_for_annotator(label.annotation, definition)

    @extend_schema_field(AssistedOutput(allow_null=True))
    def get_assisted(self, label: Label) -> dict[str, Any] | None:
        assisted = label.annotation.get("assisted")
        return assisted if isinstance(assisted, dict) else None


class UnitOutput(serializers.Serializer):
    """The unit as docs/formats.md writes it: ``source`` for a tuple unit, ``sources``
    (citation order) for an answer unit. No sampling, no pipeline: nothing that hints at
    a stratum or a risk band."""

    kind = serializers.ChoiceField(choices=CodebookUnit.choices, source="codebook_unit")
    digest = serializers.CharField(help_text="tuple_digest (tuple units) or unit_digest.")
    query = serializers.DictField()
    answer = serializers.DictField()
    source = serializers.DictField(required=False, help_text="Tuple units only.")
    sources = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="Answer units only."
    )
    left = serializers.DictField(
        required=False,
        help_text="Answer pairs only (instead of answer and sources): the answer shown on "
        "your left, {text, citations}, in the order drawn for you.",
    )
    right = serializers.DictField(
        required=False, help_text="Answer pairs only: the answer shown on your right."
    )

    class Meta:
        ref_name = "Unit"

    def to_representation(self, content: Any) -> dict[str, Any]:
        return unit_shown(content, self.context.get("pair_sides"))


def unit_shown(content: UnitContent, pair_sides: dict[str, str] | None) -> dict[str, Any]:
    """:class:`UnitOutput`'s answer for a unit's content (``pair_sides``: the
    assignment's order of an answer pair's two answers)."""
    if content.codebook_unit == CodebookUnit.ANSWER_PAIR:
        # Places only, in the annotator's recorded order: no role, pipeline or service.
        return {
            "kind": content.codebook_unit,
            "digest": content.digest,
            "query": content.query,
            **pair_sides_shown(content, pair_sides),
        }
    data = {
        "kind": content.codebook_unit,
        "digest": content.digest,
        "query": content.query,
        "answer": content.answer,
    }
    if content.codebook_unit == CodebookUnit.TUPLE:
        data["source"] = content.source
    else:
        data["sources"] = content.sources
    return data


class CodebookOutput(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField()
    definition = serializers.DictField(
        help_text="The codebook file (docs/formats.md) without the evidence weights."
    )

    class Meta:
        ref_name = "Codebook"


class AssignmentRowOutput(serializers.Serializer):
    id = serializers.IntegerField()
    study = serializers.CharField(source="study.slug")
    query = serializers.CharField(source="unit.observation.query.text")
    assigned_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    submitted = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()

    class Meta:
        ref_name = "AssignmentRow"

    def get_submitted(self, assignment: Assignment) -> bool:
        return assignment.submitted_at is not None

    def get_url(self, assignment: Assignment) -> str:
        return reverse("api-assignment", args=[assignment.pk], request=self.context.get("request"))


class AssignmentDetailOutput(serializers.Serializer):
    id = serializers.IntegerField()
    study = serializers.CharField()
    assigned_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    unit = UnitOutput()
    codebook = CodebookOutput()
    draft = DraftOutput(allow_null=True, help_text="Your draft, or null.")
    head = LabelOutput(allow_null=True, help_text="Your latest submitted revision, or null.")

    class Meta:
        ref_name = "AssignmentDetail"


# The two hot answers (next and submit) are built as plain values by the functions below,
# equal to what the serializers above give (tests/annotation/test_loop_queries.py compares
# them on real objects): a serializer instance deep-copies its declared fields and walks
# them per answer, which cost more CPU than the answer's own work. The serializers stay the
# schema's (and every other operation's) description of the same shapes.

_DATETIME = serializers.DateTimeField()  # its to_representation: ISO 8601, current zone


def _when(value: Any) -> str | None:
    return None if value is None else _DATETIME.to_representation(value)


def _plain_dict(value: dict[str, Any]) -> dict[str, Any]:
    """What DictField gives for a dict of any values: the same dict, keys as text."""
    return {str(key): item for key, item in value.items()}


def label_shown(label: Label, definition: dict[str, Any] | None) -> dict[str, Any]:
    """:class:`LabelOutput`'s answer for ``label`` (``definition``: the study's codebook,
    as its context ``codebook_definition``)."""
    if definition is None and "sides" in label.annotation:
        definition = label.study.codebook.definition
    assisted = label.annotation.get("assisted")
    submission_id = label.client_submission_id
    return {
        "revision": int(label.revision),
        "record_digest": str(label.record_digest),
        "etag": label_etag(label),
        "parents": [str(parent) for parent in label.parents],
        "annotation": annotation_for_annotator(label.annotation, definition),
        "assisted": assisted if isinstance(assisted, dict) else None,
        "client_submission_id": None if submission_id is None else str(submission_id),
        "created_at": _when(label.created_at),
    }


def draft_shown(draft: Draft) -> dict[str, Any]:
    """:class:`DraftOutput`'s answer for ``draft``."""
    return {
        "payload": _plain_dict(draft.payload),
        "version": int(draft.version),
        "etag": draft_etag(draft.version),
        "updated_at": _when(draft.updated_at),
    }


def assignment_detail(
    assignment: Assignment, *, new: bool = False, content: UnitContent | None = None
) -> dict[str, Any]:
    """Everything the caller needs to annotate (:class:`AssignmentDetailOutput`'s answer):
    a fixed number of queries (one, the unit's content, for an assignment handed out just
    now: it has no draft and no label yet; none when ``content`` is given)."""
    study = assignment.study
    codebook = study.codebook
    if content is None:
        content = handed_unit_content(study=study, unit_id=assignment.unit_id)
    draft = None if new else draft_of(assignment=assignment)
    head = None if new else label_head(assignment=assignment)
    return {
        "id": int(assignment.pk),
        "study": str(study.slug),
        "assigned_at": _when(assignment.assigned_at),
        "submitted_at": _when(assignment.submitted_at),
        "unit": unit_shown(content, pair_sides_of(assignment)),
        "codebook": {
            "name": str(codebook.name),
            "version": str(codebook.version),
            "definition": _plain_dict(codebook_for_annotator(codebook.definition)),
        },
        "draft": None if draft is None else draft_shown(draft),
        "head": None if head is None else label_shown(head, codebook.definition),
    }


def submission_fields(data: Any) -> tuple[dict[str, Any], uuid.UUID] | None:
    """What :class:`LabelsApi.Input` validates a submission to (its annotation and
    client_submission_id), for the plain shape: a JSON object with an object
    ``annotation``, a UUID text ``client_submission_id`` and no ``assisted`` (an assisted
    model name within its length if the annotation names one). None for anything else,
    which then goes through the serializer for its refusal. A serializer instance
    deep-copies its fields per request, which cost more CPU than the check
    (tests/annotation/test_loop_queries.py compares the two)."""
    if type(data) is not dict or "assisted" in data:
        return None
    annotation = data.get("annotation")
    submission_id = data.get("client_submission_id")
    if type(annotation) is not dict or not isinstance(submission_id, str):
        return None
    try:
        parsed = uuid.UUID(hex=submission_id)
    except ValueError:
        return None
    nested = annotation.get("assisted")
    model = nested.get("model") if isinstance(nested, dict) else None
    if isinstance(model, str) and len(model) > ASSISTED_MODEL_MAX:
        return None
    return {str(key): value for key, value in annotation.items()}, parsed


# --- the API classes ------------------------------------------------------------------


class AnnotatorApi(StrictQueryParams, APIView):
    """Token first, so that an anonymous script gets 401 with ``WWW-Authenticate``."""

    authentication_classes = [TokenAuthentication, SessionAuthentication]

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, _Refusal):
            return Response(exc.body, status=exc.code, headers=exc.headers)
        return super().handle_exception(exc)


#: Accept values for which DRF's negotiation picks the first renderer (JSON) as
#: "application/json": no header, any type, or JSON itself.
_JSON_ACCEPTS = frozenset({None, "*/*", "application/json"})


class JsonFirst:
    """Mixin for the loop's two views: the renderer DRF's negotiation would pick, without
    negotiating, when the request leaves no choice (no ``format`` and an Accept in
    ``_JSON_ACCEPTS``); any other request negotiates as before. Negotiation parsed the
    Accept header and built every renderer per request (docs/benchmarks.md, "Follow-up:
    the web process")."""

    def perform_content_negotiation(self, request: Request, force: bool = False) -> Any:
        if (
            request.META.get("HTTP_ACCEPT") in _JSON_ACCEPTS
            and "format" not in request.query_params
            and self.renderer_classes[0] is JSONRenderer  # type: ignore[attr-defined]
        ):
            return JSONRenderer(), "application/json"
        return super().perform_content_negotiation(request, force)  # type: ignore[misc]


_NOT_FOUND = OpenApiResponse(description="No such assignment, or it is not yours.")
_FORBIDDEN = OpenApiResponse(description="You are not an annotator of this study.")
_BAD_QUERY = OpenApiResponse(description="Unknown query parameter or invalid filter value.")


class AssignmentListApi(AnnotatorApi):
    filterset_class = AssignmentFilter
    pagination_class = ListPagination

    @extend_schema(
        operation_id="assignments_list",
        parameters=filter_parameters(AssignmentFilter),
        responses={200: AssignmentRowOutput(many=True), 400: _BAD_QUERY, 403: _FORBIDDEN},
    )
    def get(self, request: Request, slug: str) -> Response:
        """Your own assignments in the study, newest first."""
        study = study_get_for_annotator(user=request.user, slug=slug)
        assignments = self.filter_queryset(
            assignments_of_annotator(study=study, annotator=request.user)
        )
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(assignments, request, view=self)
        data = AssignmentRowOutput(page, many=True, context={"request": request}).data
        return paginator.get_paginated_response(data)


class AssignmentNextApi(JsonFirst, AnnotatorApi):
    @extend_schema(
        operation_id="assignments_next",
        request=None,
        responses={
            201: AssignmentDetailOutput,
            200: AssignmentDetailOutput,
            204: OpenApiResponse(description="Nothing is left for you in this study."),
            403: OpenApiResponse(
                description="You are not an annotator of this study; or no unit is handed "
                "to you now: reason annotator_paused (a researcher paused you), "
                "qualification_failed or qualification_unavailable."
            ),
        },
    )
    def post(self, request: Request, slug: str) -> Response:
        """Your next unit: 201 when a new one is handed out, 200 when your unfinished
        assignment comes back (it does until it is submitted), 204 when nothing is left."""
        # The membership read of the access check says whether they are paused too, and
        # what the queue needs to know of them (one statement instead of four).
        study, seat, glance = study_seat_and_queue_for_annotator(user=request.user, slug=slug)
        try:
            handed = assignment_handed(
                study=study,
                annotator=request.user,
                paused=seat.paused,
                glance=glance,
                with_content=True,
            )
        except AnnotationError as exc:  # paused, or the qualification set stands in the way
            return _error(exc, status.HTTP_403_FORBIDDEN)
        assignment = handed.assignment
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        # The queue hands out the caller's own units of this study only (access checked
        # above): the study as read there serves the answer, not read again.
        assignment.study = study
        if not handed.new:
            return Response(assignment_detail(assignment))
        location = reverse("api-assignment", args=[assignment.pk], request=request)
        return Response(
            assignment_detail(assignment, new=True, content=handed.content),
            status=status.HTTP_201_CREATED,
            headers={"Location": location},
        )


class AssignmentDetailApi(AnnotatorApi):
    @extend_schema(
        operation_id="assignments_retrieve",
        responses={200: AssignmentDetailOutput, 404: _NOT_FOUND},
    )
    def get(self, request: Request, assignment_id: int) -> Response:
        """The unit to annotate, the codebook, your draft and your latest revision."""
        assignment = assignment_get_for_annotator(user=request.user, assignment_id=assignment_id)
        return Response(assignment_detail(assignment))


#: What _if_match_tags reads: * or a comma-separated list of entity tags (W/ allowed).
_TAG = r'(W/)?("[^",\s]+"|[^",\s]+)'
IF_MATCH_PATTERN = rf"^\s*(\*|{_TAG}(\s*,\s*{_TAG})*)\s*$"

_IF_MATCH_DRAFT = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    pattern=IF_MATCH_PATTERN,
    description='The draft version you last saw, as its ETag: "draft-<version>" (W/ allowed), '
    "or * for any existing draft. Required once the draft exists; "
    'without a draft, leave it out (or send "draft-0").',
)
_IF_MATCH_LABEL = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    pattern=r'^\s*(W/)?("[0-9a-fA-F]{64}"|[0-9a-fA-F]{64})\s*$',
    description="The record digest of the revision this submission edits, quoted. "
    "Leave it out for the first submission.",
)


class DraftSaveApi(AnnotatorApi):
    class Input(serializers.Serializer):
        payload = serializers.DictField(help_text="Any JSON object: the form's state.")

        class Meta:
            ref_name = "DraftInput"

    class PreconditionOutput(ErrorOutput):
        version = serializers.IntegerField(help_text="The current draft version.")
        etag = serializers.CharField()

        class Meta:
            ref_name = "DraftPrecondition"

    @extend_schema(
        operation_id="assignment_draft_save",
        request=Input,
        parameters=[_IF_MATCH_DRAFT],
        responses={
            200: DraftOutput,
            201: DraftOutput,
            400: OpenApiResponse(description="The body names the invalid field."),
            404: _NOT_FOUND,
            412: PreconditionOutput,
            428: PreconditionOutput,
        },
    )
    def put(self, request: Request, assignment_id: int) -> Response:
        """Autosave your draft. 201 creates it, 200 replaces it; the ETag header is the
        new version's."""
        assignment = assignment_get_for_annotator(user=request.user, assignment_id=assignment_id)
        payload = self.Input(data=request.data)
        payload.is_valid(raise_exception=True)
        tags = _if_match_tags(request)
        base_version = self._base_version(assignment, tags)
        try:
            draft = draft_save(
                assignment=assignment,
                payload=payload.validated_data["payload"],
                base_version=base_version,
            )
        except DraftConflict as exc:
            if tags is None:
                raise self._precondition(
                    IF_MATCH_REQUIRED,
                    "this draft exists: send If-Match with the version you last saw "
                    f"({draft_etag(exc.draft.version)} is the current one)",
                    exc.draft.version,
                    status.HTTP_428_PRECONDITION_REQUIRED,
                ) from None
            raise self._precondition(
                exc.code, exc.message, exc.draft.version, status.HTTP_412_PRECONDITION_FAILED
            ) from None
        except AnnotationError as exc:
            return _error(exc, status.HTTP_400_BAD_REQUEST)
        code = status.HTTP_201_CREATED if draft.version == 1 else status.HTTP_200_OK
        return Response(
            draft_shown(draft), status=code, headers={"ETag": draft_etag(draft.version)}
        )

    def _base_version(self, assignment: Assignment, tags: list[str] | None) -> int | None:
        if tags is None:
            return 0  # "there is no draft yet": a conflict here means If-Match was required
        current = draft_of(assignment=assignment)
        current_version = current.version if current else 0
        if tags == ["*"]:
            if current is None:
                raise self._precondition(
                    DraftConflict.code,
                    "If-Match: * needs an existing draft, and there is none",
                    0,
                    status.HTTP_412_PRECONDITION_FAILED,
                )
            return None
        versions = [int(m.group(1)) for tag in tags if (m := _DRAFT_TAG.match(tag))]
        if current_version in versions:
            return current_version
        raise self._precondition(
            DraftConflict.code,
            f"If-Match names {', '.join(tags)}, but the draft is at "
            f"{draft_etag(current_version)}; reload to continue from the newest version",
            current_version,
            status.HTTP_412_PRECONDITION_FAILED,
        )

    def _precondition(self, reason: str, message: str, version: int, code: int) -> _Refusal:
        refusal = _Refusal(reason, message, code, version=version, etag=draft_etag(version))
        refusal.headers["ETag"] = draft_etag(version)
        return refusal


class LabelsApi(JsonFirst, AnnotatorApi):
    """Your revisions of one unit (GET) and submissions (POST). Only POST is throttled."""

    class AssistedInput(serializers.Serializer):
        model = StrictCharField(max_length=ASSISTED_MODEL_MAX)

        class Meta:
            ref_name = "AssistedInput"

    class Input(serializers.Serializer):
        annotation = serializers.DictField(
            help_text="The annotation as docs/formats.md writes it; kind and annotator "
            "are set by the server."
        )
        client_submission_id = serializers.UUIDField(
            help_text="Your id for this submission: sending it again returns the same label."
        )
        assisted = serializers.DictField(
            required=False,
            allow_null=True,
            help_text='Same as annotation.assisted: {"model": "<identity>"} for a label '
            "pre-filled by a model or judge.",
        )

        class Meta:
            ref_name = "LabelInput"

        def validate_assisted(self, value: dict[str, Any] | None) -> dict[str, Any] | None:
            if value is None:
                return None
            nested = LabelsApi.AssistedInput(data=value)
            nested.is_valid(raise_exception=True)
            if set(value) != {"model"}:
                raise serializers.ValidationError('exactly one key, "model", is expected')
            return dict(nested.validated_data)

        def validate(self, data: dict[str, Any]) -> dict[str, Any]:
            annotation = dict(data["annotation"])
            assisted = data.get("assisted")
            if assisted is not None:
                if annotation.get("assisted") not in (None, assisted):
                    raise serializers.ValidationError(
                        {"assisted": ["differs from annotation.assisted; send one of them"]}
                    )
                annotation["assisted"] = assisted
            nested = annotation.get("assisted")
            model = nested.get("model") if isinstance(nested, dict) else None
            if isinstance(model, str) and len(model) > ASSISTED_MODEL_MAX:
                raise serializers.ValidationError(
                    {"annotation": [f"assisted.model: at most {ASSISTED_MODEL_MAX} characters"]}
                )
            data["annotation"] = annotation
            return data

    class StaleOutput(ErrorOutput):
        latest = LabelOutput(allow_null=True, help_text="Your latest revision.")

        class Meta:
            ref_name = "StaleRevision"

    def get_throttles(self) -> list[Any]:
        if self.request.method == "POST":
            return [SubmitThrottle()]
        return super().get_throttles()

    @extend_schema(
        operation_id="assignment_labels_list",
        responses={200: LabelOutput(many=True), 404: _NOT_FOUND},
    )
    def get(self, request: Request, assignment_id: int) -> Response:
        """Your submitted revisions of this assignment's unit, oldest first."""
        assignment = assignment_get_for_annotator(user=request.user, assignment_id=assignment_id)
        seen = {"codebook_definition": assignment.study.codebook.definition}
        labels = labels_of_assignment(assignment=assignment)
        return Response(LabelOutput(labels, many=True, context=seen).data)

    @extend_schema(
        operation_id="assignment_labels_submit",
        request=Input,
        parameters=[_IF_MATCH_LABEL],
        responses={
            201: LabelOutput,
            200: OpenApiResponse(LabelOutput, description="Replay: the label already made."),
            400: OpenApiResponse(
                ErrorOutput,
                description="The record contract refused the annotation (reason = the "
                "checker's code), or the body or If-Match is invalid (the field is named).",
            ),
            404: _NOT_FOUND,
            409: StaleOutput,
            429: OpenApiResponse(OpenApiTypes.OBJECT, description="Throttled: see Retry-After."),
        },
    )
    def post(self, request: Request, assignment_id: int) -> Response:
        """Submit a revision. Idempotent per client_submission_id; checked by the record
        contract; a submission editing an outdated revision, or identical to the latest one
        (reason unchanged_revision), answers 409 with the latest and stores nothing."""
        # The membership read of the access check gives the pseudonym records name them by.
        assignment, seat = assignment_seat_for_annotator(
            user=request.user, assignment_id=assignment_id
        )
        fields = submission_fields(request.data)
        if fields is None:  # anything but the plain shape: the serializer names the fault
            payload = self.Input(data=request.data)
            payload.is_valid(raise_exception=True)
            fields = (
                payload.validated_data["annotation"],
                payload.validated_data["client_submission_id"],
            )
        parent = self._parent_digest(_if_match_tags(request))
        definition = assignment.study.codebook.definition
        try:
            submission = label_submit(
                assignment=assignment,
                annotation=fields[0],
                client_submission_id=fields[1],
                parent_digest=parent,
                pseudonym=seat.pseudonym,
            )
        except (StaleRevision, RevisionUnchanged) as exc:
            latest = label_shown(exc.head, definition) if exc.head is not None else None
            headers = {"ETag": label_etag(exc.head)} if exc.head is not None else {}
            return Response(
                {"reason": exc.code, "message": exc.message, "latest": latest},
                status=status.HTTP_409_CONFLICT,
                headers=headers,
            )
        except SubmissionIdReused as exc:
            return Response(
                {"reason": exc.code, "message": exc.message, "latest": None},
                status=status.HTTP_409_CONFLICT,
            )
        except AnnotationError as exc:
            return _error(exc, status.HTTP_400_BAD_REQUEST)
        code = status.HTTP_200_OK if submission.replayed else status.HTTP_201_CREATED
        return Response(
            label_shown(submission.label, definition),
            status=code,
            headers={"ETag": label_etag(submission.label)},
        )

    def _parent_digest(self, tags: list[str] | None) -> str | None:
        if tags is None:
            return None
        if len(tags) == 1 and _DIGEST_TAG.match(tags[0]):
            return tags[0].lower()
        raise _Refusal(
            INVALID_IF_MATCH,
            "If-Match must be the one record digest of the revision this submission edits "
            "(leave it out for the first submission)",
            status.HTTP_400_BAD_REQUEST,
        )
