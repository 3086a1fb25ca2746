"""REST API for releases (researchers of the study only): list, create (202: the build is
queued; poll the status URL), status, and download of one file of a ready release."""

from __future__ import annotations

from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.views import APIView

from annotator.access import study_get_for_researcher
from annotator.filters import StrictQueryParams
from audit.releases import formats as rf
from audit.releases.models import Release
from audit.releases.services import (
    RELEASE_EXISTS,
    ReleaseRefused,
    release_file_path,
    release_request,
)
from config.api import StrictBooleanField, StrictSlugField


class ReleaseFileOutput(serializers.Serializer):
    sha256 = serializers.CharField()
    bytes = serializers.IntegerField()


class ReleaseOutput(serializers.Serializer):
    name = serializers.SlugField()
    status = serializers.ChoiceField(choices=["building", "ready", "failed"])
    progress = serializers.IntegerField(help_text="Percent done.")
    stage = serializers.CharField(allow_null=True, help_text="Validation stage stamped on it.")
    files = serializers.DictField(child=ReleaseFileOutput(), help_text="Set once, when ready.")
    manifest_sha256 = serializers.CharField(help_text="SHA-256 of its SHA256SUMS file.")
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    finished_at = serializers.DateTimeField(allow_null=True)
    status_url = serializers.SerializerMethodField()

    class Meta:
        ref_name = "Release"

    def get_status_url(self, release: Release) -> str:
        return reverse(
            "api-release",
            args=[release.study.slug, release.name],
            request=self.context.get("request"),
        )


class RefusalOutput(serializers.Serializer):
    reason = serializers.CharField()
    message = serializers.CharField()

    class Meta:
        ref_name = "ReleaseRefusal"


class ReleasesApi(StrictQueryParams, APIView):
    class Input(serializers.Serializer):
        name = StrictSlugField(max_length=80)
        withhold_texts = StrictBooleanField(default=False)

        class Meta:
            ref_name = "ReleaseCreate"

    @extend_schema(responses=ReleaseOutput(many=True), operation_id="study_releases_list")
    def get(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        releases = Release.objects.filter(study=study).select_related("study")
        return Response(ReleaseOutput(releases, many=True, context={"request": request}).data)

    @extend_schema(
        request=Input,
        responses={
            202: ReleaseOutput,
            400: OpenApiResponse(RefusalOutput, description="invalid_name: not a usable name."),
            409: OpenApiResponse(RefusalOutput, description="release_exists: taken."),
        },
        operation_id="study_releases_create",
    )
    def post(self, request: Request, slug: str) -> Response:
        study = study_get_for_researcher(user=request.user, slug=slug)
        payload = self.Input(data=request.data)
        payload.is_valid(raise_exception=True)
        try:
            release = release_request(
                study=study,
                name=payload.validated_data["name"],
                user=request.user,
                withhold_texts=payload.validated_data["withhold_texts"],
            )
        except ReleaseRefused as exc:
            # A taken name conflicts with what exists (a release is immutable); any other
            # refusal is about the request itself.
            code = (
                status.HTTP_409_CONFLICT
                if exc.code == RELEASE_EXISTS
                else status.HTTP_400_BAD_REQUEST
            )
            return Response({"reason": exc.code, "message": exc.message}, status=code)
        release.refresh_from_db()
        data = ReleaseOutput(release, context={"request": request}).data
        return Response(
            data, status=status.HTTP_202_ACCEPTED, headers={"Location": data["status_url"]}
        )


_PLAIN = "text/plain; charset=utf-8"  # SHA256SUMS


def _release(request: Request, study_slug: str, slug: str) -> Release:
    study = study_get_for_researcher(user=request.user, slug=study_slug)
    return get_object_or_404(Release.objects.select_related("study"), study=study, name=slug)


class ReleaseStatusApi(StrictQueryParams, APIView):
    @extend_schema(responses=ReleaseOutput, operation_id="study_release_retrieve")
    def get(self, request: Request, study_slug: str, slug: str) -> Response:
        release = _release(request, study_slug, slug)
        return Response(ReleaseOutput(release, context={"request": request}).data)


class ReleaseFileApi(StrictQueryParams, APIView):
    extra_query_params = ("name",)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "name",
                OpenApiTypes.STR,
                OpenApiParameter.QUERY,
                required=True,
                description="A file name listed in the release's files (e.g. SHA256SUMS).",
            )
        ],
        responses={
            **{
                (200, content_type): OpenApiResponse(
                    OpenApiTypes.BINARY, description="The file's bytes, as listed in SHA256SUMS."
                )
                for content_type in sorted({*rf.CONTENT_TYPES.values(), _PLAIN})
            },
        },
        operation_id="study_release_file_retrieve",
    )
    def get(self, request: Request, study_slug: str, slug: str) -> FileResponse:
        release = _release(request, study_slug, slug)
        name = request.query_params.get("name", "")
        try:
            path = release_file_path(release=release, file_name=name, reader=request.user)
        except LookupError:
            raise Http404("no such file in this release") from None
        return FileResponse(
            path.open("rb"),
            as_attachment=True,
            filename=f"{release.study.slug}-{release.name}-{name}",
            content_type=rf.CONTENT_TYPES.get(path.suffix, _PLAIN),
        )
