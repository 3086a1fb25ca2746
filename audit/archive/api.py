"""REST API for the archive: one class per operation, nested Input/Output serializers."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import studies_visible_to, study_get_for_researcher
from annotator.filters import StrictQueryParams
from audit.archive.models import ImportBatch, ImportStatus
from audit.archive.selectors import studies_with_counts
from audit.archive.services import observations_import
from audit.contract import codes


class ErrorOutput(serializers.Serializer):
    reason = serializers.CharField(help_text="Machine-readable reason code.")
    message = serializers.CharField(help_text="A sentence for people.")

    class Meta:
        ref_name = "ImportRefusal"


class ImportBatchOutput(serializers.ModelSerializer):
    study = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    errors = serializers.ListField(
        child=inline_serializer(
            "LineError",
            fields={
                "line": serializers.IntegerField(),
                "reason": serializers.CharField(),
                "message": serializers.CharField(),
            },
        )
    )

    class Meta:
        model = ImportBatch
        fields = [
            "id",
            "study",
            "file_name",
            "file_sha256",
            "file_bytes",
            "status",
            "lines",
            "observations_created",
            "tuples_created",
            "tuples_existing",
            "error_count",
            "errors",
            "created_at",
        ]


class StudyListApi(StrictQueryParams, APIView):
    class Output(serializers.Serializer):
        # No overlap k here: annotators read this list, and must not learn how many
        # others label each unit (the study page shows k to researchers).
        slug = serializers.SlugField()
        title = serializers.CharField()
        codebook = serializers.CharField(source="codebook.name")
        codebook_version = serializers.CharField(source="codebook.version")
        tuple_count = serializers.IntegerField()
        observation_count = serializers.IntegerField()

        class Meta:
            ref_name = "Study"

    @extend_schema(responses=Output(many=True), operation_id="studies_list")
    def get(self, request: Request) -> Response:
        studies = studies_with_counts(studies=studies_visible_to(user=request.user))
        return Response(self.Output(studies, many=True).data)


class StudyImportApi(StrictQueryParams, APIView):
    """Import an observation file (researchers of the study only). Atomic: a file with any
    bad line imports nothing and answers 400 listing the bad lines (the first 1,000; the
    count is exact). A file over the limit answers 413 (file_too_large) before it is read."""

    parser_classes = [MultiPartParser]

    class Input(serializers.Serializer):
        file = serializers.FileField()

        class Meta:
            ref_name = "ImportInput"

    @extend_schema(
        request={"multipart/form-data": Input},
        responses={
            201: ImportBatchOutput,
            200: ImportBatchOutput,
            400: OpenApiResponse(ImportBatchOutput, description="Bad lines: nothing imported."),
            409: OpenApiResponse(ErrorOutput, description="study_frozen: nothing enters it."),
            413: OpenApiResponse(ErrorOutput, description="file_too_large: over the limit."),
        },
        operation_id="study_import_create",
    )
    def post(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        payload = self.Input(data=request.data)
        payload.is_valid(raise_exception=True)
        upload = payload.validated_data["file"]
        upload.seek(0)
        batch = observations_import(
            study=study, data=upload.file, file_name=upload.name, user=request.user
        )
        code = {
            ImportStatus.IMPORTED: status.HTTP_201_CREATED,
            ImportStatus.UNCHANGED: status.HTTP_200_OK,
            ImportStatus.REJECTED: status.HTTP_400_BAD_REQUEST,
        }[batch.status]
        # A whole-file refusal is about the file (413) or the study's state (409), not a line.
        whole = {
            codes.FILE_TOO_LARGE: status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
            codes.STUDY_FROZEN: status.HTTP_409_CONFLICT,
        }
        first = batch.errors[0] if batch.errors else {}
        if first.get("line") == 0 and first.get("reason") in whole:
            body = {"reason": first["reason"], "message": first["message"]}
            return Response(body, status=whole[first["reason"]])
        return Response(ImportBatchOutput(batch).data, status=code)


class StudyImportDetailApi(StrictQueryParams, APIView):
    @extend_schema(responses=ImportBatchOutput, operation_id="study_import_retrieve")
    def get(self, request: Request, slug: str, batch_id: int) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        batch = get_object_or_404(study.imports, pk=batch_id)
        return Response(ImportBatchOutput(batch).data)
