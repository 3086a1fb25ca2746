"""REST API of predictions: import a prediction file, read a set's scores. One class per
operation; the import and the scoring are metrics.services'."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import study_get_for_researcher
from annotator.filters import StrictQueryParams
from audit.contract import codes
from metrics.models import PredictionSet
from metrics.predictions import STUDY_NOT_FROZEN
from metrics.selectors import prediction_set_get
from metrics.services import predictions_import


class PredictionSetOutput(serializers.ModelSerializer):
    study = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    scores = serializers.JSONField(
        help_text="{predicted, scored, awaiting_final, domains, field, scores}: scores is "
        "null when no predicted unit has a final label, else the confusion (U included), "
        "accuracy, kappa, per-class precision and recall and, for a gate, accepted_error "
        "(alpha) and false_block (beta), each {value, low, high, numerator, denominator}."
    )
    positive = serializers.JSONField(allow_null=True)

    class Meta:
        model = PredictionSet
        fields = [
            "id",
            "study",
            "kind",
            "name",
            "version",
            "field",
            "positive",
            "file_name",
            "file_sha256",
            "file_bytes",
            "predictions",
            "scores",
            "gold_digest",
            "scored_at",
            "created_at",
        ]


_PROBLEMS = inline_serializer(
    "PredictionRefusal",
    fields={
        "reason": serializers.CharField(),
        "message": serializers.CharField(),
        "error_count": serializers.IntegerField(),
        "errors": serializers.ListField(
            child=inline_serializer(
                "PredictionLineError",
                fields={
                    "line": serializers.IntegerField(),
                    "reason": serializers.CharField(),
                    "message": serializers.CharField(),
                },
            )
        ),
    },
)


class PredictionImportApi(StrictQueryParams, APIView):
    """Import a prediction file (researchers of the study only). Atomic: any bad line
    imports nothing and answers 400 listing the bad lines; the same file again answers 200
    with the earlier set; a study that is not frozen answers 409."""

    parser_classes = [MultiPartParser]

    class Input(serializers.Serializer):
        file = serializers.FileField()

        class Meta:
            ref_name = "PredictionInput"

    @extend_schema(
        request={"multipart/form-data": Input},
        responses={
            201: PredictionSetOutput,
            200: PredictionSetOutput,
            400: OpenApiResponse(_PROBLEMS, description="Bad lines: nothing imported."),
            409: OpenApiResponse(_PROBLEMS, description="study_not_frozen: nothing imported."),
            413: OpenApiResponse(_PROBLEMS, description="file_too_large: over the limit."),
        },
        operation_id="study_predictions_create",
    )
    def post(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        payload = self.Input(data=request.data)
        payload.is_valid(raise_exception=True)
        upload = payload.validated_data["file"]
        upload.seek(0)
        outcome = predictions_import(
            study=study, data=upload.file, file_name=upload.name, user=request.user
        )
        if outcome.prediction_set is not None:
            code = status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK
            return Response(PredictionSetOutput(outcome.prediction_set).data, status=code)
        errors = [p.as_dict() for p in outcome.problems]
        first = errors[0]
        body = {
            "reason": first["reason"],
            "message": first["message"],
            "error_count": outcome.error_count,
            "errors": errors,
        }
        whole = {
            codes.FILE_TOO_LARGE: status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            STUDY_NOT_FROZEN: status.HTTP_409_CONFLICT,
        }
        code = whole.get(first["reason"], status.HTTP_400_BAD_REQUEST)
        return Response(body, status=code)


class PredictionSetDetailApi(StrictQueryParams, APIView):
    @extend_schema(responses=PredictionSetOutput, operation_id="study_predictions_retrieve")
    def get(self, request: Request, slug: str, prediction_set_id: int) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        prediction_set = prediction_set_get(study=study, pk=prediction_set_id)
        if prediction_set is None:
            raise NotFound(f"no prediction set {prediction_set_id} in study {slug}")
        return Response(PredictionSetOutput(prediction_set).data)
