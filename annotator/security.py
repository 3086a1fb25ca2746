"""Request-level security: refused requests are logged, a login lockout is answered without
saying whether the account exists, and the client address is read as the proxies say.

The access rules themselves live in ``annotator.access`` (which logs *why* it refused);
this module logs *that* a request was refused, whichever layer refused it: a view's
``PermissionDenied``, DRF's authentication and permission checks, the CSRF check.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponseBase, JsonResponse
from django.shortcuts import render

logger = logging.getLogger("claimgate.security")

REFUSED_STATUSES = frozenset({401, 403})
LOCKOUT_MESSAGE = (
    "Too many failed login attempts. Logging in is paused for a while; try again later."
)


class RefusalLogMiddleware:
    """Log each 401 and 403 with the user id, method and path. Never the body, the query
    string or any header: those may carry credentials or annotation content."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponseBase]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = self.get_response(request)
        if response.status_code in REFUSED_STATUSES:
            # DRF copies the user it authenticated (session or token) onto the request.
            user = getattr(request, "user", None)
            user_id = user.pk if user is not None and user.is_authenticated else None
            logger.warning(
                "request refused: status=%s user=%s method=%s path=%r",
                response.status_code,
                user_id,
                request.method,
                request.path,
            )
        return response


def lockout_response(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict | None = None,
) -> HttpResponse:
    """The answer to a locked-out login (AXES_LOCKOUT_CALLABLE). It names neither the
    username nor whether it exists: an unknown name locks exactly like a real one."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    status = settings.AXES_HTTP_RESPONSE_CODE
    if _wants_json(request):
        response: HttpResponse = JsonResponse(
            {"detail": LOCKOUT_MESSAGE, "code": "login_locked_out"}, status=status
        )
    else:
        response = render(
            request,
            "axes/lockout.html",
            {"message": LOCKOUT_MESSAGE, "minutes": minutes},
            status=status,
        )
    response["Retry-After"] = str(int(settings.AXES_COOLOFF_TIME.total_seconds()))
    return response


def _wants_json(request: HttpRequest) -> bool:
    if request.headers.get("x-requested-with") == "XMLHttpRequest":
        return True
    accept = request.headers.get("accept", "")
    return "application/json" in accept and "text/html" not in accept


def client_ip(request: HttpRequest) -> str | None:
    """The client's address for the lockout (AXES_CLIENT_IP_CALLABLE).

    Behind ``TRUSTED_PROXY_COUNT`` reverse proxies, each appending to X-Forwarded-For, the
    client is the entry the outermost trusted proxy added; anything to its left was sent
    by the client and is not believed. With no proxy (the default) it is REMOTE_ADDR.
    """
    count = settings.TRUSTED_PROXY_COUNT
    if count > 0:
        forwarded = [
            part.strip()
            for part in request.headers.get("x-forwarded-for", "").split(",")
            if part.strip()
        ]
        if len(forwarded) >= count:
            return forwarded[-count]
    return request.META.get("REMOTE_ADDR")
