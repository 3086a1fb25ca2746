"""REST API for the archive: one class per operation, nested Input/Output serializers."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotator.access import setup_get_for_researcher, studies_visible_to, study_get_for_researcher
from annotator.errors import AnnotationError
from annotator.filters import StrictQueryParams
from annotator.memberships.services import SLUG_TAKEN, study_create
from audit.archive.models import Codebook, ImportBatch, ImportStatus
from audit.archive.selectors import codebooks_with_use, studies_with_counts
from audit.archive.services import (
    CODEBOOK_MAX_BYTES,
    CodebookConflict,
    CodebookRefused,
    codebook_install_bytes,
    observations_import,
)
from audit.contract import codes
from audit.queueing import queue_orders_draw

#: The reason of a codebook file refused for what is in it (its problems are listed).
CODEBOOK_INVALID = "codebook_invalid"


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

    class Input(serializers.Serializer):
        slug = serializers.SlugField(max_length=80)
        title = serializers.CharField(max_length=200)
        description = serializers.CharField(required=False, allow_blank=True, default="")
        codebook = serializers.CharField(help_text="The codebook's name.")
        codebook_version = serializers.CharField()
        overlap = serializers.IntegerField(min_value=1, max_value=20, default=2)

        class Meta:
            ref_name = "StudyInput"

        def validate(self, attrs: dict) -> dict:
            row = Codebook.objects.filter(
                name=attrs["codebook"], version=attrs["codebook_version"]
            ).first()
            if row is None:
                raise serializers.ValidationError(
                    {
                        "codebook_version": [
                            f"no codebook {attrs['codebook']} {attrs['codebook_version']} "
                            "is installed (POST /api/codebooks/ installs one)"
                        ]
                    }
                )
            attrs["codebook_row"] = row
            return attrs

    class Created(Output):
        overlap = serializers.IntegerField(help_text="Distinct annotators per unit (k).")

        class Meta:
            ref_name = "StudyCreated"

    @extend_schema(responses=Output(many=True), operation_id="studies_list")
    def get(self, request: Request) -> Response:
        studies = studies_with_counts(studies=studies_visible_to(user=request.user))
        return Response(self.Output(studies, many=True).data)

    @extend_schema(
        request=Input,
        responses={
            201: Created,
            403: OpenApiResponse(
                ErrorOutput, description="You may not create studies (researchers only)."
            ),
            409: OpenApiResponse(ErrorOutput, description="slug_taken: a study has this slug."),
        },
        operation_id="study_create",
    )
    def post(self, request: Request) -> Response:
        """Create a study labelled with an installed codebook version; you become its
        researcher. Then import observations and add people."""
        setup_get_for_researcher(user=request.user)
        payload = self.Input(data=request.data)
        payload.is_valid(raise_exception=True)
        data = payload.validated_data
        try:
            study = study_create(
                slug=data["slug"],
                title=data["title"],
                description=data["description"],
                codebook=data["codebook_row"],
                overlap=data["overlap"],
                user=request.user,
            )
        except AnnotationError as exc:
            code = (
                status.HTTP_409_CONFLICT if exc.code == SLUG_TAKEN else status.HTTP_400_BAD_REQUEST
            )
            return Response({"reason": exc.code, "message": exc.message}, status=code)
        created = studies_with_counts(studies=type(study).objects.filter(pk=study.pk)).get()
        return Response(self.Created(created).data, status=status.HTTP_201_CREATED)


class CodebookOutput(serializers.ModelSerializer):
    unit = serializers.CharField(help_text="What is labelled: tuple, answer, answer_pair, …")
    format_version = serializers.IntegerField(
        source="definition.format_version", help_text="1 or 2 (docs/formats.md)."
    )
    study_count = serializers.IntegerField(help_text="Studies that use this version.")
    definition = serializers.JSONField(help_text="The codebook file's JSON value.")

    class Meta:
        model = Codebook
        fields = [
            "name",
            "version",
            "unit",
            "title",
            "format_version",
            "digest",
            "study_count",
            "created_at",
            "definition",
        ]
        ref_name = "InstalledCodebook"


class CodebookRefusal(serializers.Serializer):
    reason = serializers.CharField(
        help_text="codebook_invalid, codebook_in_use, or the file's own reason "
        "(malformed_json, invalid_utf8)."
    )
    message = serializers.CharField()
    problems = serializers.ListField(
        child=inline_serializer(
            "CodebookProblem",
            fields={
                "reason": serializers.CharField(),
                "path": serializers.CharField(
                    help_text="Where: a JSON path (fields[2].grades), a line and column, "
                    "or empty for the whole file."
                ),
                "message": serializers.CharField(),
            },
        )
    )


class CodebookListApi(StrictQueryParams, APIView):
    """Installed codebook versions; installing one from its file (researchers only)."""

    parser_classes = [MultiPartParser]

    class Input(serializers.Serializer):
        file = serializers.FileField(help_text="The codebook file (UTF-8 JSON).")

        class Meta:
            ref_name = "CodebookInput"

    @extend_schema(
        responses={
            200: CodebookOutput(many=True),
            403: OpenApiResponse(ErrorOutput, description="Researchers only."),
        },
        operation_id="codebooks_list",
    )
    def get(self, request: Request) -> Response:
        setup_get_for_researcher(user=request.user)
        return Response(CodebookOutput(codebooks_with_use(), many=True).data)

    @extend_schema(
        request={"multipart/form-data": Input},
        responses={
            201: OpenApiResponse(CodebookOutput, description="Installed."),
            200: OpenApiResponse(CodebookOutput, description="Already installed, unchanged."),
            400: OpenApiResponse(
                CodebookRefusal, description="Not installed: every problem, each naming where."
            ),
            403: OpenApiResponse(ErrorOutput, description="Researchers only."),
            409: OpenApiResponse(
                CodebookRefusal,
                description="codebook_in_use: other content under a version a study uses.",
            ),
            413: OpenApiResponse(ErrorOutput, description="file_too_large: over 1 MiB."),
        },
        operation_id="codebook_install",
    )
    def post(self, request: Request) -> Response:
        """Install a codebook file, all or nothing: a file with any problem installs nothing
        and answers 400 listing every problem. The same content again answers 200."""
        setup_get_for_researcher(user=request.user)
        payload = self.Input(data=request.data)
        payload.is_valid(raise_exception=True)
        upload = payload.validated_data["file"]
        upload.seek(0)
        try:
            row, created = codebook_install_bytes(
                data=upload.read(CODEBOOK_MAX_BYTES + 1), file_name=upload.name
            )
        except CodebookRefused as exc:
            return _codebook_refusal(exc)
        row = codebooks_with_use().get(pk=row.pk)
        code = status.HTTP_201_CREATED if created else status.HTTP_200_OK
        return Response(CodebookOutput(row).data, status=code)


def _codebook_refusal(exc: CodebookRefused) -> Response:
    problems = [problem.as_dict() for problem in exc.problems]
    first = exc.problems[0]
    if first.code == codes.FILE_TOO_LARGE:
        body = {"reason": first.code, "message": first.message}
        return Response(body, status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)
    if isinstance(exc, CodebookConflict):
        body = {"reason": first.code, "message": first.message, "problems": problems}
        return Response(body, status=status.HTTP_409_CONFLICT)
    reason = first.code if first.code in (codes.MALFORMED_JSON, codes.INVALID_UTF8) else None
    count = len(problems)
    body = {
        "reason": reason or CODEBOOK_INVALID,
        "message": f"{count} problem{'s' if count != 1 else ''} in {exc.file_name or 'the file'}"
        ": nothing installed",
        "problems": problems,
    }
    return Response(body, status=status.HTTP_400_BAD_REQUEST)


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
        if batch.status == ImportStatus.IMPORTED:
            queue_orders_draw(study.pk)  # its annotators' orders take the new units
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
