"""REST API for partitions and the freeze (researchers of the study only): one class per
operation, nested Input/Output serializers, every write through audit.partitions.services."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import study_get_for_researcher
from annotator.filters import StrictQueryParams
from audit.partitions.leakage import Leak
from audit.partitions.models import StudyFreeze
from audit.partitions.rules import GROUP_FIELDS, ShareRule, ValuesRule
from audit.partitions.services import (
    STUDY_FROZEN,
    PartitionError,
    partition_file_apply,
    partition_overview,
    partition_rule_apply,
    partition_rule_preview,
    study_freeze,
)

#: The partitions endpoint's leak list: leaks per page, and unit digests per side.
LEAKS_PER_PAGE = 100
LEAK_UNITS_DEFAULT = 20
LEAK_UNITS_MAX = 1000


class ErrorOutput(serializers.Serializer):
    reason = serializers.CharField(help_text="Machine-readable reason code.")
    message = serializers.CharField(help_text="A sentence for people.")

    class Meta:
        ref_name = "PartitionError"


class CountsOutput(serializers.Serializer):
    calibration = serializers.IntegerField()
    test = serializers.IntegerField()
    unassigned = serializers.IntegerField()

    class Meta:
        ref_name = "PartitionCounts"


class LeakOutput(serializers.Serializer):
    field = serializers.ChoiceField(choices=GROUP_FIELDS)
    value = serializers.CharField()
    calibration = serializers.ListField(
        child=serializers.CharField(), help_text="Digests of the group's calibration units."
    )
    test = serializers.ListField(
        child=serializers.CharField(), help_text="Digests of the group's test units."
    )
    calibration_units = serializers.IntegerField(
        help_text="The group's calibration units (``calibration`` may list only the first)."
    )
    test_units = serializers.IntegerField(
        help_text="The group's test units (``test`` may list only the first)."
    )

    class Meta:
        ref_name = "PartitionLeak"


class PipelineOutput(serializers.Serializer):
    name = serializers.CharField()
    version = serializers.CharField()
    key = serializers.CharField()

    class Meta:
        ref_name = "FrozenPipeline"


class FrozenCountsOutput(serializers.Serializer):
    calibration = serializers.IntegerField()
    test = serializers.IntegerField()

    class Meta:
        ref_name = "FrozenPartitionCounts"


class FreezeOutput(serializers.Serializer):
    codebook_digest = serializers.CharField()
    pipelines = PipelineOutput(many=True)
    pipelines_digest = serializers.CharField()
    thresholds = serializers.DictField(help_text="The study's thresholds: named numbers.")
    thresholds_digest = serializers.CharField()
    partition_digest = serializers.CharField(
        help_text="Canonical digest of the sorted [unit digest, partition] list."
    )
    partition_counts = FrozenCountsOutput()
    frozen_at = serializers.DateTimeField()
    frozen_by = serializers.CharField(source="frozen_by.get_username")

    class Meta:
        ref_name = "StudyFreeze"


def _leaks(leaks: list[Leak]) -> list[dict[str, Any]]:
    return [leak.as_dict() for leak in leaks]


def _error(exc: PartitionError, code: int) -> Response:
    return Response({"reason": exc.code, "message": exc.message}, status=code)


_FORBIDDEN = OpenApiResponse(description="You are not a researcher of this study.")
_NOT_FOUND = OpenApiResponse(description="No such study, or you are not a member of it.")
_FROZEN = OpenApiResponse(ErrorOutput, description="The study is frozen: nothing changes.")


class PartitionsQuery(serializers.Serializer):
    units = serializers.IntegerField(
        required=False,
        default=LEAK_UNITS_DEFAULT,
        min_value=0,
        max_value=LEAK_UNITS_MAX,
        help_text="Unit digests listed per side of each leak, the first in digest order "
        f"(default {LEAK_UNITS_DEFAULT}, at most {LEAK_UNITS_MAX}); the counts are always whole.",
    )
    page = serializers.IntegerField(
        required=False,
        default=1,
        min_value=1,
        help_text=f"Page of the leak list, {LEAKS_PER_PAGE} leaks a page.",
    )


class PartitionsApi(StrictQueryParams, APIView):
    """Counts per partition, the leakage report (a page of leaks, each with its unit
    counts and its first unit digests) and the freeze record (if any)."""

    extra_query_params = ("units", "page")

    class Output(serializers.Serializer):
        study = serializers.SlugField()
        frozen = serializers.BooleanField()
        units = serializers.IntegerField()
        counts = CountsOutput()
        leaks = serializers.IntegerField(help_text="Leaking groups in all.")
        page = serializers.IntegerField()
        pages = serializers.IntegerField()
        leakage = LeakOutput(many=True)
        freeze = FreezeOutput(allow_null=True)

        class Meta:
            ref_name = "Partitions"

    @extend_schema(
        parameters=[PartitionsQuery],
        responses={200: Output, 400: ErrorOutput, 403: _FORBIDDEN, 404: _NOT_FOUND},
        operation_id="study_partitions_retrieve",
    )
    def get(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        query = PartitionsQuery(data=request.query_params)
        if not query.is_valid():
            field_name, problems = next(iter(query.errors.items()))
            return Response(
                {"reason": "invalid_query", "message": f"{field_name}: {problems[0]}"},
                status=status.HTTP_400_BAD_REQUEST,
            )
        page, units = query.validated_data["page"], query.validated_data["units"]
        overview = partition_overview(
            study=study,
            leaks_from=(page - 1) * LEAKS_PER_PAGE,
            leaks_shown=LEAKS_PER_PAGE,
            units_shown=units,
            with_contents=False,
        )
        total = len(overview.leaks)
        shown = overview.leaks[(page - 1) * LEAKS_PER_PAGE : page * LEAKS_PER_PAGE]
        data = {
            "study": study.slug,
            "frozen": overview.freeze is not None,
            "units": overview.total,
            "counts": overview.counts,
            "leaks": total,
            "page": page,
            "pages": max(1, -(-total // LEAKS_PER_PAGE)),
            "leakage": _leaks(shown),
            "freeze": overview.freeze,
        }
        return Response(self.Output(data).data)


class PartitionRuleApi(APIView):
    """Assign every unit by a rule over one grouping field: the listed values go to test
    (``test_values``), or a seeded share of the field's values does (``share``); every
    other unit goes to calibration. ``dry_run`` previews without writing."""

    class Input(serializers.Serializer):
        field = serializers.ChoiceField(choices=GROUP_FIELDS)
        test_values = serializers.ListField(
            child=serializers.CharField(max_length=200), required=False, allow_empty=False
        )
        share = serializers.FloatField(
            required=False, min_value=0, max_value=1, help_text="Share of the values (groups)."
        )
        seed = serializers.CharField(required=False, default="", allow_blank=True, max_length=100)
        dry_run = serializers.BooleanField(required=False, default=False)

        class Meta:
            ref_name = "PartitionRuleInput"

        def validate(self, data: dict[str, Any]) -> dict[str, Any]:
            if ("test_values" in data) == ("share" in data):
                raise serializers.ValidationError("give either test_values or share, not both")
            return data

    class Output(serializers.Serializer):
        applied = serializers.BooleanField()
        rule = serializers.CharField(help_text="The rule in words.")
        test_values = serializers.ListField(child=serializers.CharField())
        changed = serializers.IntegerField(help_text="Units whose partition the rule changes.")
        counts = CountsOutput()
        leakage = LeakOutput(many=True)

        class Meta:
            ref_name = "PartitionRuleOutcome"

    @extend_schema(
        request=Input,
        responses={
            200: Output,
            400: OpenApiResponse(ErrorOutput, description="Invalid rule, or an unknown value."),
            403: _FORBIDDEN,
            404: _NOT_FOUND,
            409: _FROZEN,
        },
        operation_id="study_partitions_rule",
    )
    def post(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        payload = self.Input(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        if "test_values" in data:
            rule = ValuesRule(field=data["field"], test_values=frozenset(data["test_values"]))
        else:
            rule = ShareRule(field=data["field"], share=data["share"], seed=data["seed"])
        try:
            if data["dry_run"]:
                outcome = partition_rule_preview(study=study, rule=rule)
            else:
                outcome = partition_rule_apply(study=study, rule=rule)
        except PartitionError as exc:
            frozen = exc.code == STUDY_FROZEN
            code = status.HTTP_409_CONFLICT if frozen else status.HTTP_400_BAD_REQUEST
            return _error(exc, code)
        body = {
            "applied": not data["dry_run"],
            "rule": rule.describe(),
            "test_values": outcome.test_values,
            "changed": outcome.changed,
            "counts": outcome.counts,
            "leakage": _leaks(outcome.leaks),
        }
        return Response(self.Output(body).data)


class PartitionFileApi(APIView):
    """Assign units from a file (CSV ``digest,partition`` or JSON Lines). Atomic: with any
    bad line nothing is applied, and the answer (400) lists every bad line."""

    parser_classes = [MultiPartParser]

    class Input(serializers.Serializer):
        file = serializers.FileField()

        class Meta:
            ref_name = "PartitionFileInput"

    class Output(serializers.Serializer):
        applied = serializers.BooleanField()
        lines = serializers.IntegerField(help_text="Good lines read.")
        units = serializers.IntegerField(help_text="Units the file assigned.")
        counts = CountsOutput()
        leakage = LeakOutput(many=True)
        errors = serializers.ListField(
            child=serializers.DictField(), help_text="[{line, reason, message}]"
        )

        class Meta:
            ref_name = "PartitionFileOutcome"

    @extend_schema(
        request={"multipart/form-data": Input},
        responses={
            200: Output,
            400: OpenApiResponse(Output, description="Bad lines: nothing applied."),
            403: _FORBIDDEN,
            404: _NOT_FOUND,
            409: _FROZEN,
        },
        operation_id="study_partitions_file",
    )
    def post(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        payload = self.Input(data=request.data)
        payload.is_valid(raise_exception=True)
        upload = payload.validated_data["file"]
        try:
            outcome = partition_file_apply(study=study, data=upload.read(), file_name=upload.name)
        except PartitionError as exc:
            return _error(exc, status.HTTP_409_CONFLICT)
        body = {
            "applied": outcome.applied,
            "lines": outcome.lines,
            "units": outcome.units,
            "counts": outcome.counts,
            "leakage": _leaks(outcome.leaks),
            "errors": [problem.as_dict() for problem in outcome.problems],
        }
        code = status.HTTP_200_OK if outcome.applied else status.HTTP_400_BAD_REQUEST
        return Response(self.Output(body).data, status=code)


class StudyFreezeApi(APIView):
    """Freeze the study's codebook, pipelines, thresholds and partitions, irreversibly.
    Refused (409) while a unit has no partition, while a group leaks, or a second time."""

    @extend_schema(
        request=None,
        responses={
            201: FreezeOutput,
            403: _FORBIDDEN,
            404: _NOT_FOUND,
            409: OpenApiResponse(ErrorOutput, description="Refused: the reason says why."),
        },
        operation_id="study_freeze",
    )
    def post(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        try:
            freeze: StudyFreeze = study_freeze(study=study, user=request.user)
        except PartitionError as exc:
            return _error(exc, status.HTTP_409_CONFLICT)
        return Response(FreezeOutput(freeze).data, status=status.HTTP_201_CREATED)
