"""The archive rows' COPY text made by the planning process (audit.archive.copytext) stores
what the same rows written on the connection store, value for value, whatever their
text holds (tabs, newlines, backslashes, carriage returns, any script, nulls, JSON)."""

from __future__ import annotations

import pytest
from django.db import connection

from audit.archive import mapping
from audit.archive.copytext import copy_lines
from audit.archive.models import AnswerSnapshot, Pipeline, Query, SourceSnapshot
from audit.archive.planning import Planner, archive_rows, rendered
from audit.archive.selectors import codebook_registry
from audit.contract import parse_observation_file
from audit.contract.canonical import canonical_text_unchecked
from tests.archive.builders import jsonl, observation, reseal

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

TABLES = {
    "queries": (Query, mapping.QUERY_COLUMNS),
    "pipelines": (Pipeline, mapping.PIPELINE_COLUMNS),
    "answers": (AnswerSnapshot, mapping.ANSWER_COLUMNS),
    "sources": (SourceSnapshot, mapping.SOURCE_COLUMNS),
}
AWKWARD = "tab\there, new\nline, cr\r, back\\slash \\N, quote \" ' 東京 💶 \u2028 end\\"


def awkward(n: int) -> dict:
    line = observation(n, sources=3)
    line["query"]["text"] = f"{AWKWARD} ({n})"
    for source in line["sources"]:
        source["text"] = f"{AWKWARD} {source['text']}"
    line["answer"]["text"] = f"{AWKWARD} {line['answer']['text']}"
    line["answer"]["citations"][0]["url"] += "?q=" + AWKWARD
    line["pipeline"]["config"] = {"note": AWKWARD, "share": 0.25, "on": True, "none": None}
    return reseal(line)


def planned_rows(study, lines: list[dict]):
    parsed = parse_observation_file(jsonl(*lines), codebook_registry())
    assert not parsed.errors, parsed.errors[:3]
    units = Planner().plan(parsed.observations, parsed.lines)
    return archive_rows(units, study.codebook.unit)


def as_written(name: str, value: object) -> object:
    """A value as audit.archive.bulk writes it on the connection (JSON as its text)."""
    return canonical_text_unchecked(value) if name in mapping.JSON_COLUMNS else value


def test_json_columns_are_the_models_json_fields():
    for model, columns in TABLES.values():
        fields = model._meta.concrete_fields
        json_fields = {f.name for f in fields if f.get_internal_type() == "JSONField"}
        assert json_fields == {name for name in columns if name in mapping.JSON_COLUMNS}


def test_copy_text_stores_what_the_connection_stores(study):
    rows = planned_rows(study, [awkward(n) for n in range(1, 4)])
    assert rows.queries[0][2].startswith(AWKWARD)  # the awkward text reached the rows
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table, (model, columns) in TABLES.items():
            names = ", ".join(quote(model._meta.get_field(c).column) for c in columns)
            for copy_of in ("by_text", "by_row"):  # shaped as the import's staging table
                cursor.execute(
                    f"CREATE TEMPORARY TABLE {copy_of} AS SELECT {names} "  # noqa: S608
                    f"FROM {quote(model._meta.db_table)} WITH NO DATA"
                )
            table_rows = getattr(rows, table)
            with cursor.cursor.copy(f"COPY by_text ({names}) FROM STDIN") as copy:
                copy.write(b"".join(copy_lines(table_rows, columns, mapping.JSON_COLUMNS)))
            with cursor.cursor.copy(f"COPY by_row ({names}) FROM STDIN") as copy:
                for row in table_rows:
                    copy.write_row([as_written(*item) for item in zip(columns, row, strict=True)])
            cursor.execute(
                f"SELECT (SELECT count(*) FROM by_row), (SELECT count(*) FROM ("  # noqa: S608
                f"(SELECT {names} FROM by_text EXCEPT ALL SELECT {names} FROM by_row) UNION ALL "
                f"(SELECT {names} FROM by_row EXCEPT ALL SELECT {names} FROM by_text)) d)"
            )
            assert cursor.fetchone() == (len(table_rows), 0), table
            cursor.execute("DROP TABLE by_text, by_row")


def test_rendered_rows_keep_their_keys_and_filter_with_their_texts(study):
    rows = rendered(planned_rows(study, [awkward(n) for n in range(1, 4)]))
    assert rows.texts is not None
    for table in TABLES:
        assert all(len(row) == 1 for row in getattr(rows, table))
        assert len(rows.texts[table]) == len(getattr(rows, table))
    first = rows.units[0].digest
    only = rows.of({first})
    assert [unit.digest for unit in only.units] == [first]
    assert len(only.sources) == len(only.texts["sources"]) == 3
    for table in TABLES:
        kept = dict(zip(getattr(rows, table), rows.texts[table], strict=True))
        assert all(
            kept[row] == text
            for row, text in zip(getattr(only, table), only.texts[table], strict=True)
        )
