"""One error contract for the whole API (docs/api.md, "Conventions"), and a schema that
says it.

- Every refusal is ``{"reason": "<code>", "message": "<sentence>"}`` (plus, where useful,
  more fields) — DRF's own refusals too (401, 403, 404, 405, 415, 429, a body that is not
  JSON), which would otherwise answer ``{"detail": …}``. The one exception is a request
  body whose fields are invalid: 400 in DRF's shape, naming every bad field
  (``{"client_submission_id": ["Must be a valid UUID."]}``).
- A path under /api/ that matches no route answers that same JSON 404, not an HTML page.
- :func:`schema_errors` adds to every operation of the OpenAPI schema what it can answer
  besides its own responses: 401 (with ``WWW-Authenticate``), 403, 404 on paths with
  parameters, 400, 413 and 415 where there is a body, each with its body's schema.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from rest_framework import exceptions, serializers
from rest_framework.response import Response
from rest_framework.views import exception_handler

NOT_FOUND = "not_found"
API_PREFIX = "/api/"


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, with every ``{"detail": …}`` body turned into ``{reason, message}``."""
    response = exception_handler(exc, context)
    if response is None or isinstance(exc, exceptions.ValidationError):
        return response
    data = response.data
    if isinstance(data, dict) and set(data) == {"detail"}:
        detail = data["detail"]
        code = getattr(detail, "code", None) or NOT_FOUND
        response.data = {"reason": str(code), "message": str(detail)}
    return response


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """handler404: JSON under /api/ (as every API answer), Django's page elsewhere."""
    if request.path.startswith(API_PREFIX):
        return JsonResponse(
            {"reason": NOT_FOUND, "message": f"no API route {request.path}"}, status=404
        )
    return defaults.page_not_found(request, exception)


# --- the schema --------------------------------------------------------------------------

ERROR = {
    "type": "object",
    "description": "A refusal: scripts branch on reason, people read message.",
    "properties": {
        "reason": {"type": "string", "description": "Machine-readable reason code."},
        "message": {"type": "string", "description": "A sentence for people."},
    },
    "required": ["reason", "message"],
}
FIELD_ERRORS = {
    "type": "object",
    "description": "Invalid request fields, DRF's shape: each bad field (or "
    "non_field_errors) with its messages, nested as the body is.",
    "minProperties": 1,
    "additionalProperties": {
        "anyOf": [{"type": "array", "items": {}}, {"type": "object"}],
    },
}
_ERROR_REF = {"$ref": "#/components/schemas/Error"}
_FIELD_ERRORS_REF = {"$ref": "#/components/schemas/FieldErrors"}

_DEFAULTS = {
    "400": "Refused: an unknown or invalid query parameter, or an invalid body.",
    "401": "No credentials, or a bad token.",
    "403": "Signed in, but without the role this needs in the study.",
    "404": "No such object, or none of yours.",
    "413": "The body is larger than this operation takes (checked before it is read).",
    "415": "The body's Content-Type is not one this operation reads.",
}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"application/json": {"schema": schema}}


def _add(responses: dict[str, Any], code: str, schemas: list[dict[str, Any]], **extra: Any) -> None:
    """Make ``responses[code]`` accept every schema of ``schemas`` besides its own."""
    response = responses.setdefault(code, {"description": _DEFAULTS[code]})
    own = response.get("content", {}).get("application/json", {}).get("schema")
    options = [own] if own else []
    options += [schema for schema in schemas if schema not in options]
    response["content"] = _json(options[0] if len(options) == 1 else {"anyOf": options})
    response.update(extra)


def schema_errors(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook: the error responses every operation can give."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = ERROR
    schemas["FieldErrors"] = FIELD_ERRORS
    for path, methods in result.get("paths", {}).items():
        for operation in methods.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            has_body = "requestBody" in operation
            _add(responses, "400", [_ERROR_REF, _FIELD_ERRORS_REF] if has_body else [_ERROR_REF])
            _add(
                responses,
                "401",
                [_ERROR_REF],
                headers={
                    "WWW-Authenticate": {
                        "schema": {"type": "string"},
                        "required": True,
                        "description": "Token: send Authorization: Token <key>.",
                    }
                },
            )
            _add(responses, "403", [_ERROR_REF])
            if "{" in path:
                _add(responses, "404", [_ERROR_REF])
            if has_body:
                _add(responses, "413", [_ERROR_REF])
                _add(responses, "415", [_ERROR_REF])
            for code, response in responses.items():
                if code.startswith("4") and "content" not in response:
                    response["content"] = _json(_ERROR_REF)
    return result


class StrictBooleanField(serializers.BooleanField):
    """A JSON boolean and nothing else: DRF's BooleanField also takes 0, 1, "yes", "on",
    which the schema (``type: boolean``) does not allow."""

    def to_internal_value(self, data: Any) -> bool:
        if isinstance(data, bool):
            return data
        self.fail("invalid", input=data)
        raise AssertionError  # fail() raises


class _StrictText:
    """Text fields that take a JSON string and nothing else (DRF turns 0 into "0")."""

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("invalid")  # type: ignore[attr-defined]
        return super().to_internal_value(data)  # type: ignore[misc]


class StrictCharField(_StrictText, serializers.CharField):
    pass


class StrictSlugField(_StrictText, serializers.SlugField):
    pass


class StrictFloatField(serializers.FloatField):
    """A JSON number and nothing else (DRF also takes "0.5" and true)."""

    def to_internal_value(self, data: Any) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        return super().to_internal_value(data)
