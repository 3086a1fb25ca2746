"""The login page: Django's, plus how many failed attempts are left before the lockout
(django-axes pauses logging in for a username from an address after AXES_FAILURE_LIMIT
failures in a row) and how long that pause lasts, so that nobody meets it by surprise."""

from __future__ import annotations

from typing import Any

from axes.handlers.proxy import AxesProxyHandler
from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import HttpResponse


class LoginView(auth_views.LoginView):
    def form_invalid(self, form: Any) -> HttpResponse:
        username = self.request.POST.get("username", "")
        failures = AxesProxyHandler.get_failures(self.request, {"username": username})
        left = max(settings.AXES_FAILURE_LIMIT - failures, 0)
        minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
        return self.render_to_response(
            self.get_context_data(form=form, attempts_left=left, lockout_minutes=minutes)
        )
