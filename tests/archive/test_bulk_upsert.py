"""audit.archive.bulk.upsert_rows: content-addressed archive rows are stored once per key,
never rewritten, JSON columns included, and a concurrent writer storing the same key
wins without an error."""

from __future__ import annotations

import threading

import pytest
from django.db import connections, transaction

from audit.archive import bulk
from audit.archive.mapping import PIPELINE_COLUMNS, QUERY_COLUMNS
from audit.archive.models import Pipeline, Query

pytestmark = pytest.mark.django_db


def query(key: str, text: str = "Which router?") -> tuple:
    return (
        key,
        f"q-{key[:6]}",
        text,
        "factual",
        "1",
        "2026-01-01",
        "R",
        "routers",
        None,
        "net",
        "en",
    )


def test_new_rows_are_written_and_stored_ones_found(db):
    first = bulk.upsert_rows(Query, QUERY_COLUMNS, [query("a" * 64), query("b" * 64)], key="key")
    with transaction.atomic():
        again = bulk.upsert_rows(
            Query, QUERY_COLUMNS, [query("b" * 64, "other text"), query("c" * 64)], key="key"
        )
    assert again["b" * 64] == first["b" * 64]
    assert Query.objects.get(pk=again["b" * 64]).text == "Which router?"  # never rewritten
    assert Query.objects.get(pk=again["c" * 64]).key == "c" * 64
    assert Query.objects.count() == 3


def test_json_columns_are_stored_as_given(db):
    with transaction.atomic():
        ids = bulk.upsert_rows(
            Pipeline,
            PIPELINE_COLUMNS,
            [("p" * 64, "bot", "1", {"temperature": 0.5, "tools": ["search"], "note": "é\t\n"})],
            key="key",
        )
    assert Pipeline.objects.get(pk=ids["p" * 64]).config == {
        "temperature": 0.5,
        "tools": ["search"],
        "note": "é\t\n",
    }


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_key_stored_meanwhile_by_another_writer_is_theirs():
    """The other transaction inserts a key this one is about to write and commits while
    this one's INSERT waits on it: theirs is kept and its id returned."""
    holding, finish, failures, theirs = threading.Event(), threading.Event(), [], {}

    def other() -> None:
        try:
            with transaction.atomic():
                theirs.update(
                    bulk.upsert_rows(Query, QUERY_COLUMNS, [query("k" * 64, "theirs")], key="key")
                )
                holding.set()
                assert finish.wait(30)
        except BaseException as exc:  # reported by the test's thread
            failures.append(exc)
            holding.set()
        finally:
            connections.close_all()

    thread = threading.Thread(target=other)
    thread.start()
    try:
        assert holding.wait(30)
        assert not failures, failures
        threading.Timer(0.5, finish.set).start()  # commits while the INSERT below waits
        with transaction.atomic():
            ours = bulk.upsert_rows(
                Query, QUERY_COLUMNS, [query("k" * 64, "ours"), query("m" * 64)], key="key"
            )
    finally:
        finish.set()
        thread.join(30)
    assert not failures, failures
    assert ours["k" * 64] == theirs["k" * 64]
    assert Query.objects.get(key="k" * 64).text == "theirs"
    assert Query.objects.get(pk=ours["m" * 64]).key == "m" * 64
