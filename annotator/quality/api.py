"""REST API for quality control (researchers of the study only): one class per operation,
nested Input/Output serializers, every write through annotator.quality.services."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import study_get_for_researcher
from annotator.errors import AnnotationError
from annotator.filters import StrictQueryParams
from annotator.quality.reports import gold_items_of, gold_summary, quality_shown
from annotator.quality.scoring import Point, Proportion
from annotator.quality.selectors import plan_of
from annotator.quality.services import (
    MAX_KEY_FILE,
    GoldMarked,
    QualityError,
    annotator_pause,
    annotator_resume,
    gold_mark_from_file,
    gold_mark_from_finals,
    quality_plan_set,
)
from audit.queueing import STUDY_QUALITY_REFRESH, queue_job_once
from config.api import StrictBooleanField, StrictCharField, StrictFloatField

#: Gold units listed by GET /gold/ (the count is always complete).
GOLD_LISTED = 1000

_FORBIDDEN = OpenApiResponse(description="You are not a researcher of this study.")
_NOT_FOUND = OpenApiResponse(description="No such study (or you are not a member).")


class ErrorOutput(serializers.Serializer):
    reason = serializers.CharField(help_text="Machine-readable reason code.")
    message = serializers.CharField(help_text="A sentence for people.")
    problems = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="Every bad line ({line, message}) or unit ({unit, message}).",
    )

    class Meta:
        ref_name = "QualityError"


def _error(exc: AnnotationError, code: int) -> Response:
    body: dict[str, Any] = {"reason": exc.code, "message": exc.message}
    if isinstance(exc, QualityError):
        body["problems"] = exc.problems
    return Response(body, status=code)


class MarkedOutput(serializers.Serializer):
    created = serializers.IntegerField(help_text="Units marked gold now.")
    unchanged = serializers.IntegerField(help_text="Units that were gold with that key.")
    units = serializers.ListField(child=serializers.CharField(), help_text="Their digests.")

    class Meta:
        ref_name = "GoldMarked"


def _marked(marked: GoldMarked) -> dict[str, Any]:
    return {"created": marked.created, "unchanged": marked.unchanged, "units": marked.units}


class GoldApi(StrictQueryParams, APIView):
    """The study's gold units and their keys; mark more from their final records."""

    class Input(serializers.Serializer):
        units = serializers.ListField(
            child=StrictCharField(max_length=128),
            min_length=1,
            max_length=10_000,
            help_text="Digests of units that have a final record (adjudicated, or the "
            "consensus of an agreed unit): that record becomes the key.",
        )
        qualification = StrictBooleanField(
            required=False, default=False, help_text="Add them to the qualification set."
        )

        class Meta:
            ref_name = "GoldFromFinalsInput"

    class ItemOutput(serializers.Serializer):
        unit = serializers.CharField(source="unit__digest")
        key = serializers.DictField(help_text="Field: category (U for unresolved).")
        source = serializers.CharField(help_text="adjudicated or key_file")
        qualification = serializers.BooleanField()
        marked_at = serializers.DateTimeField()

        class Meta:
            ref_name = "GoldItem"

    class Output(serializers.Serializer):
        units = serializers.IntegerField(help_text="Gold units of the study.")
        qualification_units = serializers.IntegerField()
        labels = serializers.IntegerField(help_text="Gold labels submitted (every revision).")
        items = serializers.ListField(
            child=serializers.DictField(), help_text=f"The first {GOLD_LISTED}, oldest first."
        )

        class Meta:
            ref_name = "GoldUnits"

    @extend_schema(
        responses={200: Output, 403: _FORBIDDEN, 404: _NOT_FOUND}, operation_id="study_gold_list"
    )
    def get(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        summary = gold_summary(study=study)
        items = self.ItemOutput(gold_items_of(study=study, limit=GOLD_LISTED), many=True).data
        body = {
            "units": summary.units,
            "qualification_units": summary.qualification_units,
            "labels": summary.labels,
            "items": items,
        }
        return Response(self.Output(body).data)

    @extend_schema(
        request=Input,
        responses={
            200: MarkedOutput,
            400: OpenApiResponse(ErrorOutput, description="Refused: every unit named."),
            403: _FORBIDDEN,
            404: _NOT_FOUND,
        },
        operation_id="study_gold_mark",
    )
    def post(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        payload = self.Input(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            marked = gold_mark_from_finals(
                study=study,
                unit_digests=payload.validated_data["units"],
                qualification=payload.validated_data["qualification"],
                by=request.user,
            )
        except QualityError as exc:
            return _error(exc, status.HTTP_400_BAD_REQUEST)
        return Response(MarkedOutput(_marked(marked)).data)


class GoldFileApi(StrictQueryParams, APIView):
    """Mark gold units from a key file (JSON Lines: ``{"unit": "<digest>", "key": {…},
    "qualification": false}``). Atomic: with any bad line nothing is marked and the
    answer (400) lists every bad line."""

    parser_classes = [MultiPartParser]

    class Input(serializers.Serializer):
        file = serializers.FileField()

        class Meta:
            ref_name = "GoldFileInput"

    @extend_schema(
        request={"multipart/form-data": Input},
        responses={
            200: MarkedOutput,
            400: OpenApiResponse(ErrorOutput, description="Bad lines: nothing marked."),
            403: _FORBIDDEN,
            404: _NOT_FOUND,
        },
        operation_id="study_gold_file",
    )
    def post(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        payload = self.Input(data=request.data)
        payload.is_valid(raise_exception=True)
        upload = payload.validated_data["file"]
        if upload.size > MAX_KEY_FILE:
            exc = QualityError(
                f"a key file holds at most {MAX_KEY_FILE} bytes (this one has {upload.size})",
                code="file_too_large",
            )
            return _error(exc, status.HTTP_400_BAD_REQUEST)
        try:
            marked = gold_mark_from_file(study=study, data=upload.read(), by=request.user)
        except QualityError as exc:
            return _error(exc, status.HTTP_400_BAD_REQUEST)
        return Response(MarkedOutput(_marked(marked)).data)


def _proportion(proportion: Proportion) -> dict[str, Any]:
    interval = proportion.interval
    return {
        "k": proportion.k,
        "n": proportion.n,
        "rate": proportion.rate,
        "low": interval[0] if interval else None,
        "high": interval[1] if interval else None,
    }


def _series(points: list[Point]) -> list[dict[str, Any]]:
    return [{"period": point.label, **_proportion(point.proportion)} for point in points]


class QualityApi(StrictQueryParams, APIView):
    """Per annotator accuracy on gold and agreement with the others, overall and by ISO
    week and by 50 items, each with its 95% Wilson score interval; and the plan (gold
    rate, qualification set), which PUT replaces."""

    class Plan(serializers.Serializer):
        gold_rate = StrictFloatField(min_value=0, max_value=0.5)
        qualification_size = StrictFloatField(
            min_value=0, max_value=100_000, help_text="n, a whole number; 0: no qualification."
        )
        qualification_threshold = StrictFloatField(min_value=0, max_value=1)

        class Meta:
            ref_name = "QualityPlan"

        def validate_qualification_size(self, value: float) -> int:
            if value != int(value):
                raise serializers.ValidationError("a whole number of items")
            return int(value)

    class Output(serializers.Serializer):
        study = serializers.SlugField()
        plan = serializers.DictField()
        interval = serializers.CharField(help_text="How every interval is computed.")
        agreement_counted_at = serializers.DateTimeField(
            allow_null=True,
            help_text="A large study's agreement is counted by a worker: when it last was "
            "(null: counted for this answer).",
        )
        agreement_stale = serializers.BooleanField(
            help_text="Newer labels than the counted ones exist; a recount is queued."
        )
        agreement_counting = serializers.BooleanField(
            help_text="Never counted yet (agreement shown as 0 of 0); a count is queued."
        )
        annotators = serializers.ListField(child=serializers.DictField())

        class Meta:
            ref_name = "AnnotatorQuality"

    def _body(self, study: Any) -> dict[str, Any]:
        plan = plan_of(study=study)
        shown = quality_shown(
            study=study, qualification=(plan.qualification_size, plan.qualification_threshold)
        )
        if shown.stale or shown.counting:
            queue_job_once(STUDY_QUALITY_REFRESH, study.pk)
        people = shown.people
        return {
            "study": study.slug,
            "agreement_counted_at": shown.counted_at,
            "agreement_stale": shown.stale,
            "agreement_counting": shown.counting,
            "plan": {
                "gold_rate": plan.gold_rate,
                "qualification_size": plan.qualification_size,
                "qualification_threshold": plan.qualification_threshold,
            },
            "interval": "95% Wilson score interval",
            "annotators": [
                {
                    "pseudonym": person.pseudonym,
                    "username": person.username,
                    "user_id": person.user_id,
                    "paused": person.paused_at is not None,
                    "gold": _proportion(person.gold),
                    "gold_by_week": _series(person.gold_by_week),
                    "gold_by_50_items": _series(person.gold_by_block),
                    "agreement": _proportion(person.agreement),
                    "agreement_by_week": _series(person.agreement_by_week),
                    "agreement_by_50_items": _series(person.agreement_by_block),
                    "qualification": None
                    if person.qualification is None
                    else {
                        "required": person.qualification.required,
                        "scored": person.qualification.scored,
                        "right": person.qualification.right,
                        "passed": person.qualification.passed,
                        "failed": person.qualification.failed,
                    },
                }
                for person in people
            ],
        }

    @extend_schema(
        responses={200: Output, 403: _FORBIDDEN, 404: _NOT_FOUND},
        operation_id="study_quality_retrieve",
    )
    def get(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        return Response(self.Output(self._body(study)).data)

    @extend_schema(
        request=Plan,
        responses={
            200: Output,
            400: OpenApiResponse(ErrorOutput, description="Refused: the message says why."),
            403: _FORBIDDEN,
            404: _NOT_FOUND,
        },
        operation_id="study_quality_plan_update",
    )
    def put(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        payload = self.Plan(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            quality_plan_set(study=study, **payload.validated_data)
        except AnnotationError as exc:
            return _error(exc, status.HTTP_400_BAD_REQUEST)
        return Response(self.Output(self._body(study)).data)


class AnnotatorPauseApi(StrictQueryParams, APIView):
    """Pause (``{"paused": true}``) or resume an annotator of the study. Pausing gives
    their open assignments back to the pool and keeps their drafts."""

    class Input(serializers.Serializer):
        paused = StrictBooleanField()

        class Meta:
            ref_name = "AnnotatorPauseInput"

    class Output(serializers.Serializer):
        user_id = serializers.IntegerField()
        paused = serializers.BooleanField()
        released = serializers.IntegerField(help_text="Open assignments given back now.")

        class Meta:
            ref_name = "AnnotatorPause"

    @extend_schema(
        request=Input,
        responses={
            200: Output,
            403: _FORBIDDEN,
            404: OpenApiResponse(
                description="No such study, or no annotator of it with this user id "
                "(reason not_an_annotator)."
            ),
        },
        operation_id="study_annotator_pause",
    )
    def post(self, request: Request, slug: str, user_id: int) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        payload = self.Input(data=request.data)
        payload.is_valid(raise_exception=True)
        person = get_user_model().objects.filter(pk=user_id).first()
        if person is None:
            exc = AnnotationError(f"no account {user_id}", code="not_an_annotator")
            return _error(exc, status.HTTP_404_NOT_FOUND)
        paused = payload.validated_data["paused"]
        released = 0
        try:
            if paused:
                released = annotator_pause(study=study, annotator=person)
            else:
                annotator_resume(study=study, annotator=person)
        except AnnotationError as exc:
            return _error(exc, status.HTTP_404_NOT_FOUND)
        return Response(
            self.Output({"user_id": user_id, "paused": paused, "released": released}).data
        )
