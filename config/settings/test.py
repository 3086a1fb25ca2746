"""Settings for the test suite: the database and broker come from the environment."""

import os

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
# Refreshes follow outcomes at once, so that tests wait for nothing (the delay itself is
# tested in tests/ledger/test_outcome_batches.py).
REFRESH_DELAY_SECONDS = float(os.environ.get("REFRESH_DELAY_SECONDS", "0"))
OUTCOMES_DELAY_SECONDS = float(os.environ.get("OUTCOMES_DELAY_SECONDS", "0"))
