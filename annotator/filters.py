"""Query parameters of the API: filter sets, and one rule for every list endpoint —
a query parameter the endpoint does not know is an error (400), never silently ignored,
so that a script with a typo (``?submited=false``) learns it instead of getting
everything."""

from __future__ import annotations

from typing import Any

import django_filters
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.settings import api_settings

from annotator.labelling.models import Assignment
from audit.archive.models import Study

UNKNOWN_QUERY_PARAMETER = "unknown_query_parameter"
INVALID_QUERY_PARAMETER = "invalid_query_parameter"


class UnknownQueryParameters(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = UNKNOWN_QUERY_PARAMETER

    def __init__(self, unknown: list[str], allowed: list[str]) -> None:
        allowed_text = ", ".join(allowed) if allowed else "none"
        super().__init__(
            {
                "reason": UNKNOWN_QUERY_PARAMETER,
                "message": (
                    f"unknown query parameter(s): {', '.join(unknown)}; "
                    f"this endpoint accepts: {allowed_text}"
                ),
                "parameters": unknown,
            }
        )


class InvalidQueryParameter(APIException):
    status_code = status.HTTP_400_BAD_REQUEST
    default_code = INVALID_QUERY_PARAMETER

    def __init__(self, name: str, rule: str, values: list[str]) -> None:
        super().__init__(
            {
                "reason": INVALID_QUERY_PARAMETER,
                "message": f"{name} must be {rule}, not {', '.join(values)!r}",
                "parameters": [name],
            }
        )


class ListPagination(LimitOffsetPagination):
    """``?limit=&offset=``; pages of 100 unless asked, never more than 1000. A value that is
    not a whole number in range is refused (400), not silently replaced by the default."""

    default_limit = 100
    max_limit = 1000

    def _number(self, request: Request, name: str, minimum: int) -> int | None:
        values = request.query_params.getlist(name)
        if not values:
            return None
        if len(values) == 1 and values[0].isascii() and values[0].isdigit():
            number = int(values[0])
            if number >= minimum:
                return number
        raise InvalidQueryParameter(name, f"one whole number from {minimum}", values)

    def get_limit(self, request: Request) -> int:
        limit = self._number(request, self.limit_query_param, 1)
        return self.default_limit if limit is None else min(limit, self.max_limit)

    def get_offset(self, request: Request) -> int:
        offset = self._number(request, self.offset_query_param, 0)
        return offset or 0

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            minimum = 1 if parameter["name"] == self.limit_query_param else 0
            parameter["schema"] = {"type": "integer", "minimum": minimum}
        return parameters


class StrictQueryParams:
    """Mixin for an ``APIView``: refuse unknown query parameters, filter with
    ``filterset_class`` and paginate with ``pagination_class``.

    The accepted parameters are the filter set's declared filters, the paginator's own
    parameters, DRF's format override and ``extra_query_params``. The check runs in
    ``initial()``, after authentication and permissions, so an anonymous caller still gets
    401 and learns nothing about the endpoint's parameters.
    """

    filterset_class: type[django_filters.FilterSet] | None = None
    pagination_class: Any = None
    extra_query_params: tuple[str, ...] = ()

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)  # type: ignore[misc]
        allowed = self.allowed_query_params()
        unknown = sorted(set(request.query_params) - allowed)
        if unknown:
            raise UnknownQueryParameters(unknown, sorted(allowed))
        for name in sorted(request.query_params):
            values = request.query_params.getlist(name)
            if len(values) > 1:  # no parameter of this API is a list
                raise InvalidQueryParameter(name, "given once", values)

    def allowed_query_params(self) -> set[str]:
        allowed = set(self.extra_query_params)
        if api_settings.URL_FORMAT_OVERRIDE:
            allowed.add(api_settings.URL_FORMAT_OVERRIDE)
        if self.filterset_class is not None:
            allowed.update(self.filterset_class.base_filters)
        if self.pagination_class is not None:
            paginator = self.pagination_class()
            allowed.update(p["name"] for p in paginator.get_schema_operation_parameters(self))
        return allowed

    def filter_queryset(self, queryset: QuerySet) -> QuerySet:
        if self.filterset_class is None:
            return queryset
        request = self.request  # type: ignore[attr-defined]
        filterset = self.filterset_class(request.query_params, queryset=queryset, request=request)
        if not filterset.is_valid():
            name, messages = next(iter(filterset.errors.items()))
            raise InvalidQueryParameter(
                name, "; ".join(str(m) for m in messages), request.query_params.getlist(name)
            )
        return filterset.qs


def filter_parameters(filterset_class: type[django_filters.FilterSet]) -> list[OpenApiParameter]:
    """The filter set's filters as OpenAPI query parameters (for ``extend_schema``)."""
    types = {django_filters.NumberFilter: float, django_filters.BooleanFilter: bool}
    return [
        OpenApiParameter(
            name,
            types.get(type(item), str),
            OpenApiParameter.QUERY,
            description=str(item.label or ""),
            enum=[key for key, _ in item.extra.get("choices", [])] or None,
        )
        for name, item in filterset_class.base_filters.items()
    ]


BOOLEAN_CHOICES = [("true", "true"), ("false", "false")]


class AssignmentFilter(django_filters.FilterSet):
    # A choice, not a BooleanFilter: django-filter's boolean widget turns ``?submitted=yes``
    # into "no filter", and an unrecognized value must be a 400 like an unknown name.
    submitted = django_filters.ChoiceFilter(
        choices=BOOLEAN_CHOICES,
        method="filter_submitted",
        label="true: only submitted assignments; false: only those still open",
    )

    class Meta:
        model = Assignment
        fields: list[str] = []

    def filter_submitted(self, queryset: QuerySet, name: str, value: str) -> QuerySet:
        return queryset.filter(submitted_at__isnull=value == "false")


def assignments_of_annotator(*, study: Study, annotator: AbstractBaseUser) -> QuerySet[Assignment]:
    """The annotator's own assignments in the study, newest first, with what a list row
    shows (the query text); filtered by :class:`AssignmentFilter` in the API."""
    return (
        Assignment.objects.filter(study=study, annotator=annotator)
        .select_related("study", "unit__observation__query")
        .order_by("-id")
    )
