"""The embedded default of `make demo`: DEBUG on, SQLite unless DATABASE_URL says otherwise."""

from config.settings.base import *  # noqa: F403

DEBUG = True
