"""Refuse a request body that is too large before a byte of it is read.

Django bounds ``request.POST`` by DATA_UPLOAD_MAX_MEMORY_SIZE, but DRF's JSON parser reads
the raw stream and an upload is spooled whole before any view sees it; so the size is
checked here, from Content-Length, first: a multipart body (an import or a partition file)
may hold IMPORT_MAX_FILE_BYTES plus its form's envelope, any other body
DATA_UPLOAD_MAX_MEMORY_SIZE. A body sent without Content-Length (chunked) is not read at
all by Django, so Content-Length bounds everything the app reads.

The refusal is 413 with a reason code (JSON under /api/, a sentence on pages). The
unread body is drained (read and dropped in small blocks, up to DRAIN_LIMIT_BYTES) so
that the client, still sending, reads the answer instead of a reset connection.
"""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse

REQUEST_TOO_LARGE = "request_too_large"
FILE_TOO_LARGE = "file_too_large"
#: Room in a multipart body for the part headers, boundaries and small form fields.
MULTIPART_ENVELOPE_BYTES = 64 * 1024
#: Past this, a refused body is not drained: the connection is closed.
DRAIN_LIMIT_BYTES = 1024 * 1024 * 1024
_BLOCK = 64 * 1024


def body_limit(content_type: str) -> tuple[int, str]:
    """The largest body accepted for this Content-Type, and the reason code past it."""
    if content_type.startswith("multipart/form-data"):
        return settings.IMPORT_MAX_FILE_BYTES + MULTIPART_ENVELOPE_BYTES, FILE_TOO_LARGE
    return settings.DATA_UPLOAD_MAX_MEMORY_SIZE, REQUEST_TOO_LARGE


class RequestSizeLimitMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        limit, reason = body_limit(request.META.get("CONTENT_TYPE", ""))
        if length <= limit:
            return self.get_response(request)
        what = "file" if reason == FILE_TOO_LARGE else "request body"
        message = f"the {what} is {length:,} bytes; the limit is {limit:,} bytes" + (
            " (split the file into several imports)" if reason == FILE_TOO_LARGE else ""
        )
        _drain(request, length)
        if request.path.startswith("/api/"):
            response: HttpResponse = JsonResponse(
                {"reason": reason, "message": message}, status=413
            )
        else:
            response = HttpResponse(
                f"{reason}: {message}\n", status=413, content_type="text/plain; charset=utf-8"
            )
        response["Connection"] = "close"
        return response


def _drain(request: HttpRequest, length: int) -> None:
    if length > DRAIN_LIMIT_BYTES:
        return
    stream = request.META.get("wsgi.input")
    if stream is None:
        return
    left = length
    try:
        while left > 0:
            block = stream.read(min(_BLOCK, left))
            if not block:
                return
            left -= len(block)
    except OSError:
        return
