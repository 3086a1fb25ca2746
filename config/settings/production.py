"""Production settings: refuses to start without a real secret key."""

import os

from django.core.exceptions import ImproperlyConfigured

from config.settings.base import *  # noqa: F403
from config.settings.base import INSECURE_DEFAULT_SECRET_KEY, env_bool

DEBUG = False
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY or SECRET_KEY == INSECURE_DEFAULT_SECRET_KEY or len(SECRET_KEY) < 50:
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a random value of at least 50 characters in production "
        "(for example: python -c 'import secrets; print(secrets.token_urlsafe(64))')."
    )

if not CACHE_URL.startswith(("redis://", "rediss://", "unix://")):  # noqa: F405
    raise ImproperlyConfigured(
        "CACHE_URL must name a Redis server shared by every web process in production "
        "(for example redis://127.0.0.1:6379/1): the submit rate limit is counted there, and "
        "a per-process cache would multiply it by the number of processes."
    )

# Static files served by the app process itself (no separate web server needed).
MIDDLEWARE = [MIDDLEWARE[0], "whitenoise.middleware.WhiteNoiseMiddleware", *MIDDLEWARE[1:]]  # noqa: F405

SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=True)
SECURE_HSTS_SECONDS = int(os.environ.get("SECURE_HSTS_SECONDS", str(60 * 60 * 24 * 365)))
SECURE_HSTS_INCLUDE_SUBDOMAINS = True
SECURE_HSTS_PRELOAD = True
SESSION_COOKIE_SECURE = True
CSRF_COOKIE_SECURE = True
SESSION_COOKIE_HTTPONLY = True
# Lax: the cookies go along when someone follows a link here, never on another site's POST.
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
