"""audit.archive.bulk.upsert_rows: content-addressed archive rows are stored once per key,
never rewritten, JSON columns included, and a concurrent writer storing the same key
wins without an error."""

from __future__ import annotations

import pytest
from django.db import transaction

from audit.archive import bulk
from audit.archive.mapping import PIPELINE_COLUMNS, QUERY_COLUMNS
from audit.archive.models import Pipeline, Query
from tests.archive.concurrent import committed_meanwhile

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
    theirs: dict = {}

    def store() -> None:
        theirs.update(
            bulk.upsert_rows(Query, QUERY_COLUMNS, [query("k" * 64, "theirs")], key="key")
        )

    with committed_meanwhile(store), transaction.atomic():
        ours = bulk.upsert_rows(
            Query, QUERY_COLUMNS, [query("k" * 64, "ours"), query("m" * 64)], key="key"
        )
    assert ours["k" * 64] == theirs["k" * 64]
    assert Query.objects.get(key="k" * 64).text == "theirs"
    assert Query.objects.get(pk=ours["m" * 64]).key == "m" * 64
