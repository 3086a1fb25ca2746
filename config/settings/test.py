"""Settings for the test suite: the database and broker come from the environment."""

from config.settings.base import *  # noqa: F403

DEBUG = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# Django's test client logs in without a request, which the lockout backend refuses;
# tests/security switches the lockout on (settings fixture) and drives it through HTTP.
AXES_ENABLED = False
