"""A throw-away database for a benchmark, so that it never touches DATABASE_URL's data
and never collides with a test run on the same server (each benchmark names its own)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def throwaway_database(name: str) -> Iterator[None]:
    """Create the database ``name`` next to DATABASE_URL's (migrated), drop it after."""
    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    setup_test_environment()
    connection.settings_dict.setdefault("TEST", {})["NAME"] = name
    old_name = connection.creation.create_test_db(verbosity=0, autoclobber=True)
    try:
        yield
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)
