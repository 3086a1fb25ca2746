"""django-csp's middleware with the policy's text built once per settings value.

django-csp builds both headers (the policy and the report-only one) from the settings on
every response: two passes over every directive, a copy of each value, for a text that is
the same for every response that no view decorates and that uses no nonce (this app has
neither: the policy is fixed in settings). That work was the largest of the middleware's
in the labelling loop's profile (docs/benchmarks.md, "Follow-up: the web process"). Here
the two texts are built by django-csp's own ``build_policy`` and kept while the settings'
two policy objects are the same objects (``override_settings`` gives new ones); a
response a view decorated (``_csp_config``, ``_csp_update``, ``_csp_replace``) or a
request whose nonce was read goes through django-csp's own path, unchanged.
"""

from __future__ import annotations

import http.client
from typing import Any

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject
from csp.middleware import CSPMiddleware as _CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.http import HttpRequest, HttpResponseBase

_DECORATED = (
    "_csp_config",
    "_csp_update",
    "_csp_replace",
    "_csp_config_ro",
    "_csp_update_ro",
    "_csp_replace_ro",
)
_DEBUG_CODES = (http.client.INTERNAL_SERVER_ERROR, http.client.NOT_FOUND)


class CSPMiddleware(_CSPMiddleware):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._built_for: tuple[Any, Any] | None = None
        self._built: tuple[str, str] = ("", "")

    def policies(self) -> tuple[str, str]:
        """The policy and the report-only policy, as ``build_policy`` gives them."""
        current = (
            getattr(settings, "CONTENT_SECURITY_POLICY", None),
            getattr(settings, "CONTENT_SECURITY_POLICY_REPORT_ONLY", None),
        )
        built_for = self._built_for
        if built_for is None or built_for[0] is not current[0] or built_for[1] is not current[1]:
            self._built = (build_policy(), build_policy(report_only=True))
            self._built_for = current
        return self._built

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if getattr(request, "_csp_nonce", None) is not None or any(
            getattr(response, name, None) is not None for name in _DECORATED
        ):
            return super().process_response(request, response)
        if response.status_code in _DEBUG_CODES and settings.DEBUG:
            return response
        csp, csp_ro = self.policies()
        for text, header, exempt, setting in (
            (csp, HEADER, "_csp_exempt", "CONTENT_SECURITY_POLICY"),
            (csp_ro, HEADER_REPORT_ONLY, "_csp_exempt_ro", "CONTENT_SECURITY_POLICY_REPORT_ONLY"),
        ):
            if not text or header in response or getattr(response, exempt, False) is not False:
                continue
            prefixes = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES") or ()
            if not request.path_info.startswith(tuple(prefixes)):
                response[header] = text
        if getattr(request, "_csp_nonce", None) is None:
            request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)  # type: ignore[attr-defined]
        return response
