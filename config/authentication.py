"""Token authentication whose one read is compiled once per process (audit.compiled).

DRF's TokenAuthentication compiles ``Token.objects.select_related("user").get(key=...)``
on every request; in the labelling loop that compile cost more CPU than the read
(docs/benchmarks.md, "fourth round"). Same read, same refusals, same header.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import authentication, exceptions
from rest_framework.authtoken.models import Token

from audit.compiled import CompiledRead

_TOKEN = CompiledRead(
    lambda key: Token.objects.select_related("user").filter(key=key).order_by("pk")[:1],
    key=str,
)


class TokenAuthentication(authentication.TokenAuthentication):
    """``Authorization: Token <key>``, as DRF's, with the read compiled once."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Token]:
        found = _TOKEN.instances(key=key)
        if not found:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token = found[0]
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)
