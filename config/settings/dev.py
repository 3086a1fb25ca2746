"""The embedded default of `make demo`: SQLite unless DATABASE_URL says otherwise, Celery
eager, demo users allowed.

DEBUG stays off, as a newcomer should see the pages a deployment shows: styled 403 and 404
pages (never Django's debug page, which lists every URL and repeats why access was
refused). Static files are served by WhiteNoise straight from ``static/``.
"""

from config.settings.base import *  # noqa: F403

DEBUG = False
# load_demo creates users with published passwords only where this is set.
CLAIMGATE_DEMO = True
MIDDLEWARE = [MIDDLEWARE[0], "whitenoise.middleware.WhiteNoiseMiddleware", *MIDDLEWARE[1:]]  # noqa: F405
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = True
# Eager jobs run inside the request or command: Celery's line per finished job would bury
# `make demo`'s users and passwords under dozens of lines (failures still print).
LOGGING["loggers"]["celery.app.trace"] = {"level": "WARNING"}  # noqa: F405
