"""Settings shared by every environment, read from the environment.

DATABASE_URL       default: an SQLite file next to manage.py (the embedded default); on
                   PostgreSQL the app's own login, not the tables' owner
MIGRATE_DATABASE_URL  not read here: the owner's URL, which `make migrate` puts in
                   DATABASE_URL for `migrate` and `db_app_role` (docs/guide-admin.md)
CELERY_BROKER_URL  unset: Celery runs tasks eagerly in the web process
CACHE_URL          redis://… shared by every web process (rate limits); unset: local memory,
                   for the embedded default only (production.py refuses it)
SECRET_KEY         required when DEBUG is off (see production.py)
ALLOWED_HOSTS      comma-separated
LOGIN_FAILURE_LIMIT     failed logins per username and address before a lockout (5)
LOGIN_LOCKOUT_MINUTES   how long a lockout lasts (15)
TRUSTED_PROXY_COUNT     reverse proxies in front of the app that append to X-Forwarded-For (0)
SESSION_COOKIE_AGE      seconds a login lasts (8 hours)
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


DEBUG = env_bool("DEBUG", default=False)
# Development-only key; production.py refuses to start with it.
INSECURE_DEFAULT_SECRET_KEY = "django-insecure-claimgate-development-only"
SECRET_KEY = os.environ.get("SECRET_KEY") or INSECURE_DEFAULT_SECRET_KEY
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "csp",
    "axes",
    "audit",
    "annotator",
    "metrics",
]

# The order matters: SecurityMiddleware stays first (production.py puts WhiteNoise right
# after it); the policy header is set on every response that passes below it, refusals are
# logged once the user is known, and Axes (last) turns a lockout into its response.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "config.limits.RequestSizeLimitMiddleware",
    "config.csp.CSPMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "annotator.security.RefusalLogMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",
]

# Content-Security-Policy, enforced in every environment. Pages carry no inline script,
# no inline style and no event handler attribute (tests/security scans the templates), so
# nothing needs 'unsafe-inline', a nonce or a hash.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
        "base-uri": ["'none'"],
        "object-src": ["'none'"],
    }
}

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{BASE_DIR / 'claimgate.sqlite3'}",
        conn_max_age=int(os.environ.get("CONN_MAX_AGE", "60")),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # One writer at a time: wait for the lock instead of failing at once.
    DATABASES["default"].setdefault("OPTIONS", {})["timeout"] = 20
    DATABASES["default"]["CONN_MAX_AGE"] = 0
elif not env_bool("DB_JIT", default=False):
    # No JIT compilation: PostgreSQL compiles a statement whose estimated cost passes
    # jit_above_cost, counting branches that never run, on every execution; the queue's
    # started-unit read at 10⁵ units spent 93 ms compiling to run for 0.6 ms
    # (docs/benchmarks.md, "The started-unit walk under a backlog"). Sent as a startup
    # option; DB_JIT=1 leaves PostgreSQL's setting (for a pooler that refuses options).
    database_options = DATABASES["default"].setdefault("OPTIONS", {})
    database_options["options"] = f"{database_options.get('options', '')} -c jit=off".strip()

# The labelling loop's fixed statements are prepared on the server once per connection
# (audit.compiled.prepared_cursor); off for a pooler that cannot keep prepared statements
# (PgBouncer in transaction mode before 1.21).
PREPARED_STATEMENTS = env_bool("DB_PREPARED_STATEMENTS", default=True)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Axes first: it refuses a locked-out login before any password is checked.
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# A draft or submit whose cookies are all gone says "session expired" and keeps the work.
CSRF_FAILURE_VIEW = "annotator.labelling.views.csrf_failure"
LOGIN_URL = "login"
SESSION_COOKIE_AGE = int(os.environ.get("SESSION_COOKIE_AGE", str(8 * 60 * 60)))

# Login lockout (django-axes): a username tried from one address is locked after
# LOGIN_FAILURE_LIMIT failures for LOGIN_LOCKOUT_MINUTES. Keyed on the pair, so that
# nobody can lock a colleague out from elsewhere, and one address cannot try one
# password on many names without each name counting separately. A success resets the count.
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", "5"))
AXES_COOLOFF_TIME = timedelta(minutes=int(os.environ.get("LOGIN_LOCKOUT_MINUTES", "15")))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "annotator.security.lockout_response"
AXES_CLIENT_IP_CALLABLE = "annotator.security.client_ip"
TRUSTED_PROXY_COUNT = int(os.environ.get("TRUSTED_PROXY_COUNT", "0"))
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "staticfiles"

# Request bodies (config.limits checks Content-Length before reading): a multipart upload
# may hold one import file (IMPORT_MAX_FILE_BYTES), any other body 4 MiB (the format's line
# limit; an annotation or a draft is far smaller). An upload over 2.5 MiB is spooled to a
# temporary file, which the import reads line by line: memory follows the limit and the
# good observations kept, never the upload.
DATA_UPLOAD_MAX_MEMORY_SIZE = 4 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = int(2.5 * 1024 * 1024)
# Where release bundles are written (one folder per study and release name).
RELEASES_ROOT = Path(os.environ.get("RELEASES_ROOT") or BASE_DIR / "var" / "releases")
IMPORT_MAX_FILE_BYTES = int(os.environ.get("IMPORT_MAX_FILE_BYTES", str(64 * 1024 * 1024)))

# The cache holds the submit rate limit (annotator.throttling), so every web process must
# share it: Redis in a deployment. Local memory counts per process: the embedded demo only.
CACHE_URL = os.environ.get("CACHE_URL", "")
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "claimgate"),
        }
        if CACHE_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}

REST_FRAMEWORK = {
    # Token first: its WWW-Authenticate makes an anonymous request 401 (not 403) everywhere.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "config.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Every refusal {reason, message}; invalid body fields in DRF's shape (config.api).
    "EXCEPTION_HANDLER": "config.api.api_exception_handler",
    # Bodies are JSON (the schema says so), parsed with the hostile-text check (NUL, lone
    # surrogates, nesting too deep: config.parsers); the two upload operations read
    # multipart.
    "DEFAULT_PARSER_CLASSES": ["config.parsers.CheckedJSONParser"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_THROTTLE_RATES": {
        # Label submissions per user; generous for people, a brake for runaway scripts.
        "submit": os.environ.get("SUBMIT_RATE", "120/minute"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Claimgate API",
    "DESCRIPTION": "Import observations, annotate blinded, adjudicate, export releases.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    # Request bodies get their own components (a file field is binary there, a URL in
    # answers); every operation lists the refusals it can give (config.api).
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.api.schema_errors",
    ],
    # Swagger UI served from our own static files: no CDN, no inline script.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}

# Celery: with no broker configured, tasks run eagerly in the web process (make demo).
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL") or None
CELERY_TASK_ALWAYS_EAGER = CELERY_BROKER_URL is None
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "claimgate"
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
    # How long a message taken by a worker that died stays invisible before another
    # worker gets it (acks_late): long enough for the slowest job, short enough to heal.
    "visibility_timeout": int(os.environ.get("CELERY_VISIBILITY_TIMEOUT", "600")),
    # Every worker looks for such messages this often (seconds), on every look.
    "unacked_restore_interval": int(os.environ.get("CELERY_RESTORE_INTERVAL", "10")),
    "unacked_restore_throttle": 1,
}
CELERY_TASK_PUBLISH_RETRY = False
# Every module that registers jobs (the worker and beat import these; in eager mode
# audit.queueing imports them on first use). Job names are listed in audit.queueing.
CELERY_IMPORTS = (
    "annotator.adjudication.jobs",
    "annotator.labelling.jobs",
    "annotator.quality.jobs",
    "audit.ledger.jobs",
    "audit.releases.jobs",
    "metrics.jobs",
)
CELERY_BEAT_SCHEDULE = {
    "outcomes-sweep": {"task": "claimgate.outcomes_sweep", "schedule": 60.0},
}
# Bootstrap resamples behind every reliability interval (metrics.services).
RELIABILITY_BOOTSTRAP = int(os.environ.get("RELIABILITY_BOOTSTRAP", "1000"))
# Seconds between new outcomes and the report, gate and outcome-count refreshes they
# ask for (coalesced per study: at most one run per this many seconds while people label).
REFRESH_DELAY_SECONDS = float(os.environ.get("REFRESH_DELAY_SECONDS", "10"))
# Seconds between a submission and the outcomes job it queues (coalesced per study): the
# job then takes every label submitted meanwhile in one batch, whose cost per label falls
# with its size (docs/benchmarks.md, "fourth round").
OUTCOMES_DELAY_SECONDS = float(os.environ.get("OUTCOMES_DELAY_SECONDS", "0.5"))
# Failure drills only (tests): seconds a job waits before working, to kill a worker in it.
CLAIMGATE_JOB_DELAY_SECONDS = float(os.environ.get("CLAIMGATE_JOB_DELAY_SECONDS", "0"))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
    # django-axes says "BEGIN version …" at every start: noise before the demo's logins.
    "loggers": {"django.db.backends": {"level": "WARNING"}, "axes": {"level": "WARNING"}},
}
