"""Another transaction, held open in a thread of its own while the test's runs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connection, connections, transaction


@contextmanager
def committed_meanwhile(work: Callable[[], Any], *, after: float = 0.5) -> Iterator[None]:
    """Run ``work`` in a transaction of another connection, hold it open, and commit it
    ``after`` seconds into the block: what the block does then waits for it (a lock) and
    goes on after its commit. A failure of ``work`` fails the test."""
    started, finish, failures = threading.Event(), threading.Event(), []

    def hold() -> None:
        try:
            with transaction.atomic():
                work()
                started.set()
                assert finish.wait(30)
        except BaseException as exc:  # reported by the test's thread
            failures.append(exc)
            started.set()
        finally:
            connections.close_all()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert started.wait(30)
        assert not failures, failures
        threading.Timer(after, finish.set).start()
        with connection.cursor() as cursor:
            cursor.execute("SET lock_timeout = '20s'")  # a wait fails the test, not hangs it
        yield
    finally:
        finish.set()
        thread.join(30)
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")
    assert not failures, failures
