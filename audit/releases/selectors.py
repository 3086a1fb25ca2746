"""The release build's read on PostgreSQL: one plain SQL query through a server-side
cursor, exactly the columns a release writes, date-times formatted by the server.

The ORM path (``Unit.objects.values(*UNIT_VALUES)`` and a label and a ledger query per
chunk) reads the same values, but through a converter per JSON column and per date-time,
a dict per row and 200 queries at 10⁵ units: about a third of a release's time. Here the
study's tuple units are one streamed join, in the release's order (by digest), each unit
with its labels and their ledger entries beside it; JSON columns come as their stored
text (parsed by orjson here and by the caller) and date-times as the text
:func:`audit.archive.mapping.format_instant` writes (``YYYY-MM-DDTHH:MM:SS[.ffffff]Z``),
a label's also as microseconds since the epoch to order by.
``tests/releases/test_reads.py`` holds this read equal to the ORM's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import psycopg
from django.db import connection

from annotator.labelling.models import Label, LabelKind
from audit.archive.models import (
    AnswerSnapshot,
    Observation,
    Partition,
    Pipeline,
    Query,
    SourceSnapshot,
    Tuple,
    Unit,
)
from audit.archive.records import UnitContent
from audit.contract.canonical import parse_json_fast
from audit.ledger.models import LedgerEntry
from audit.releases import formats as rf
from audit.releases.models import UnitRecordText


def raw_reads_available() -> bool:
    """Whether the raw reads apply (PostgreSQL: the SQL below is its dialect)."""
    return connection.vendor == "postgresql"


def _instant(column: str) -> str:
    """SQL for the text ``format_instant`` gives a ``timestamptz`` column: UTC, ``T``,
    microseconds only when there are any, ``Z``."""
    utc = f"({column} AT TIME ZONE 'UTC')"
    return (
        f"to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || CASE WHEN date_trunc('second', "
        f"{column}) = {column} THEN '' ELSE to_char({utc}, '.US') END || 'Z'"
    )


#: The ledger entry's columns a release writes, in the outcome table's order.
OUTCOME_COLUMNS = rf.OUTCOMES.names
#: Columns of a row before its label's: the unit's (see :func:`_tuple_unit`).
_UNIT_WIDTH = 40


def _unit_columns() -> tuple[str, str]:
    """The archive's columns of a tuple unit, in :func:`_tuple_unit`'s order, and the
    joins they come from."""
    tuple_, observation = Tuple._meta.db_table, Observation._meta.db_table
    query, pipeline = Query._meta.db_table, Pipeline._meta.db_table
    answer, source = AnswerSnapshot._meta.db_table, SourceSnapshot._meta.db_table
    columns = f"""u.id, u.digest, u.partition, u.state,
               t.sampling_stratum, t.inclusion_probability,
               q.query_id, q.text, q.question_type, q.question_version, q.reference_time,
               q.target_name, q.target_family, q.template_id, q.domain, q.locale,
               p.name, p.version, p.config::text,
               a.service, a.mode, a.model, a.web_search, a.region, a.language, a.login,
               a.personalization, {_instant("a.collected_at")}, a.status, a.failure, a.text,
               a.citations::text, a.raw_path, a.digest,
               s.original_url, s.canonical_url, s.rank, {_instant("s.collected_at")}, s.text,
               s.digest"""
    joins = f"""JOIN {tuple_} t ON t.id = u.tuple_id
        JOIN {observation} o ON o.id = u.observation_id
        JOIN {query} q ON q.id = o.query_id
        JOIN {pipeline} p ON p.id = o.pipeline_id
        JOIN {answer} a ON a.id = o.answer_id
        JOIN {source} s ON s.id = t.source_id"""
    return columns, joins


#: Columns of a row before its label's when the unit's record texts are read
#: (:func:`_sql` with ``stored``): the unit's id, digest, partition, state and its
#: :class:`audit.releases.models.UnitRecordText` (``NULL`` where it has none yet).
_STORED_WIDTH = 7


def _sql(exclude_test: bool, stored: bool = False) -> str:
    """The release's query. ``stored``: each unit's stored record texts instead of its
    archive rows (one look-up instead of six joined tables). Every column of type ``text``
    of the stored read is a text a record line is assembled from (the unit's texts, the
    label's annotation); the label's other texts are ``varchar`` (see
    :func:`tuple_chunks_raw`: its ``text`` columns are read as bytes)."""
    unit = Unit._meta.db_table
    label, entry = Label._meta.db_table, LedgerEntry._meta.db_table
    outcome = ", ".join(f"e.{name}" for name in OUTCOME_COLUMNS)
    # As Django's exclude(partition=TEST) on a nullable column: NULL stays in.
    test = " AND u.partition IS DISTINCT FROM %(test)s" if exclude_test else ""
    if stored:
        texts = UnitRecordText._meta.db_table
        columns = "u.id, u.digest, u.partition, u.state, r.answer, r.head, r.tail"
        joins = f"LEFT JOIN {texts} r ON r.unit_id = u.id"
        # The label's canonical annotation text where it has one (no jsonb written out
        # as text by the server for it), else its jsonb's text. Not a gold label's: no
        # record line of the release checks it.
        canonical = f"l.annotation_canonical IS NOT NULL AND l.kind <> '{LabelKind.GOLD}'"
        annotation = (
            f"CASE WHEN {canonical} THEN l.annotation_canonical ELSE l.annotation::text END, "
            f"{canonical}"
        )
    else:
        columns, joins = _unit_columns()
        annotation = "l.annotation::text, false"
    # Names from the models, values as parameters.
    return f"""
        SELECT {columns},
               l.id, l.unit_id, l.kind, l.revision, l.record_digest, l.assisted_model,
               ({_instant("l.created_at")})::varchar,
               (extract(epoch FROM l.created_at) * 1000000)::bigint,
               {annotation}, l.parents::text::varchar, e.seq IS NOT NULL, {outcome}
        FROM {unit} u
        {joins}
        LEFT JOIN {label} l ON l.unit_id = u.id AND l.id <= %(cutoff)s
        LEFT JOIN {entry} e ON e.record_digest = l.record_digest AND e.seq <= %(ledger)s
        WHERE u.study_id = %(study)s{test}
        ORDER BY u.digest
    """  # noqa: S608


#: psycopg's loader of ``bytea`` in binary format (its compiled one where installed): the
#: value's bytes as they come. Text in binary format is its UTF-8 bytes, so this loader
#: registered for ``text`` gives a text column's bytes.
_TEXT_AS_BYTES = psycopg.adapters.get_loader(
    psycopg.postgres.types["bytea"].oid, psycopg.pq.Format.BINARY
)

#: Rows fetched from the server per round trip.
FETCH_ROWS = 500


def tuple_chunks_raw(
    *,
    study_id: int,
    codebook_unit: str,
    exclude_test: bool,
    chunk: int,
    label_cutoff: int,
    ledger_cutoff: int,
    stored: bool = False,
) -> Iterator[tuple[list[dict[str, Any]], dict[int, Any], list[dict[str, Any]]]]:
    """The tuple units of a study by digest, about ``chunk`` at a time: each chunk as its
    units' release fields (``id``, ``digest``, ``partition``, ``state``), their
    :class:`UnitContent` by unit id (the values :func:`audit.archive.records.unit_contents_of`
    builds from the ORM rows) and their labels (:func:`label_of_row`). A unit of another
    kind (no tuple) is not read here.

    ``stored``: instead of its content, each unit's stored record texts as
    :class:`UnitTexts` (``None`` for a unit that has none yet), read from one table
    instead of the archive's six; each label's ``annotation_text`` is then bytes (UTF-8),
    read as the server sends it (binary format, ``text`` columns not decoded).

    One query through a server-side cursor, which needs a transaction: inside one (a
    caller's, a test's) on this connection; otherwise on a connection of its own, read-only
    and repeatable-read (one snapshot for the whole release), so that the caller's own
    writes (its progress) stay visible to others as they happen. The next rows are fetched
    by a thread while the caller writes these (the server's work runs beside the build's,
    on the other core)."""
    params = {
        "study": study_id,
        "test": Partition.TEST,
        "cutoff": label_cutoff,
        "ledger": ledger_cutoff,
    }
    own = None
    if connection.in_atomic_block:
        connection.ensure_connection()
        raw = connection.connection
    else:
        # The settings' connection parameters, without the wrapper's own connection state.
        own = raw = psycopg.connect(**connection.get_connection_params())
        raw.read_only = True
        raw.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    try:
        with (
            raw.cursor(name=f"release_{study_id}", binary=stored) as cursor,
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="release-read") as pool,
        ):
            if stored:
                # The texts lines are assembled from (the query's ``text`` columns) as the
                # UTF-8 bytes the server sends: no decoding to str and encoding again.
                cursor.adapters.register_loader("text", _TEXT_AS_BYTES)
            if own is not None:
                # Index look-ups in the index's order, streamed: a parallel plan would
                # gather and merge the same rows at a cost (measured: twice the time), and
                # compiling its expressions costs more than it saves.
                raw.execute("SET LOCAL max_parallel_workers_per_gather = 0")
                raw.execute("SET LOCAL jit = off")
            yield from _grouped(
                _fetched(cursor, pool, _sql(exclude_test, stored), params),
                codebook_unit,
                chunk,
                stored,
            )
    finally:
        if own is not None:
            own.close()


def _fetched(
    cursor: Any, pool: ThreadPoolExecutor, sql: str, params: dict[str, Any]
) -> Iterator[list[tuple[Any, ...]]]:
    """The query's rows, ``FETCH_ROWS`` at a time, each batch fetched ahead by ``pool``."""
    cursor.execute(sql, params)
    future = pool.submit(cursor.fetchmany, FETCH_ROWS)
    while True:
        rows = future.result()
        if not rows:
            return
        future = pool.submit(cursor.fetchmany, FETCH_ROWS)
        yield rows


def _grouped(
    batches: Iterator[list[tuple[Any, ...]]], codebook_unit: str, chunk: int, stored: bool = False
) -> Iterator[tuple[list[dict[str, Any]], dict[int, Any], list[dict[str, Any]]]]:
    """Rows (a unit's columns, then one of its labels', all ``NULL`` for a unit without
    one; a unit's rows are consecutive) as chunks of whole units."""
    units: list[dict[str, Any]] = []
    contents: dict[int, Any] = {}
    labels: list[dict[str, Any]] = []
    configs: dict[str, Any] = {}
    width = _STORED_WIDTH if stored else _UNIT_WIDTH
    last = None
    for rows in batches:
        for row in rows:
            unit_id = row[0]
            if unit_id != last:
                if len(units) >= chunk:
                    yield units, contents, labels
                    units, contents, labels = [], {}, []
                if stored:
                    unit = {"id": unit_id, "digest": row[1], "partition": row[2], "state": row[3]}
                    contents[unit_id] = (
                        None if row[4] is None else UnitTexts(row[4], row[5], row[6])
                    )
                else:
                    unit, contents[unit_id] = _tuple_unit(row, codebook_unit, configs)
                units.append(unit)
                last = unit_id
            if row[width] is not None:
                labels.append(label_of_row(row[width:]))
    if units:
        yield units, contents, labels


class UnitTexts(NamedTuple):
    """A unit's stored record texts (:class:`audit.releases.models.UnitRecordText`) as
    UTF-8 bytes: what a record line is assembled from."""

    answer: bytes
    head: bytes
    tail: bytes


def _parse_fast(text: str) -> Any:
    # orjson reads an integer beyond 64 bits as a float: the record's digest check finds it.
    return parse_json_fast(text)[0]


#: Distinct pipeline configurations kept parsed during one read (a study has a few).
_CONFIGS_KEPT = 64


def _tuple_unit(
    row: tuple[Any, ...],
    codebook_unit: str,
    configs: dict[str, Any],
    parse: Callable[[str], Any] = _parse_fast,
) -> tuple[dict[str, Any], UnitContent]:
    """A row's unit fields and content. ``configs``: pipeline configurations already
    parsed, by their text (every unit of a pipeline holds the same; records never change a
    value they are given, so units may share it). ``parse``: the JSON columns' parser."""
    (
        unit_id,
        digest,
        partition,
        state,
        stratum,
        probability,
        query_id,
        query_text,
        question_type,
        question_version,
        reference_time,
        target_name,
        target_family,
        template_id,
        domain,
        locale,
        pipeline_name,
        pipeline_version,
        config,
        service,
        mode,
        model,
        web_search,
        region,
        language,
        login,
        personalization,
        answer_collected,
        status,
        failure,
        answer_text,
        citations,
        raw_path,
        answer_digest,
        original_url,
        canonical_url,
        rank,
        source_collected,
        source_text,
        source_digest,
    ) = row[:_UNIT_WIDTH]
    parsed_config = configs.get(config)
    if parsed_config is None:
        if len(configs) >= _CONFIGS_KEPT:
            configs.clear()
        parsed_config = configs[config] = parse(config)
    content = UnitContent(
        unit_id=unit_id,
        codebook_unit=codebook_unit,
        digest=digest,
        query={
            "id": query_id,
            "text": query_text,
            "question_type": question_type,
            "question_version": question_version,
            "reference_time": reference_time,
            "target": {"name": target_name, "family": target_family},
            "template_id": template_id,
            "domain": domain,
            "locale": locale,
        },
        pipeline={
            "name": pipeline_name,
            "version": pipeline_version,
            "config": parsed_config,
        },
        answer={
            "service": service,
            "mode": mode,
            "model": model,
            "web_search": web_search,
            "conditions": {
                "region": region,
                "language": language,
                "login": login,
                "personalization": personalization,
            },
            "collected_at": answer_collected,
            "status": status,
            "failure": failure,
            "text": answer_text,
            "citations": parse(citations),
            "raw_path": raw_path,
            "digest": answer_digest,
        },
        sources=[
            {
                "original_url": original_url,
                "canonical_url": canonical_url,
                "rank": rank,
                "collected_at": source_collected,
                "text": source_text,
                "digest": source_digest,
            }
        ],
        sampling=None
        if stratum is None and probability is None
        else {"stratum": stratum, "inclusion_probability": probability},
    )
    return {"id": unit_id, "digest": digest, "partition": partition, "state": state}, content


def label_of_row(row: tuple[Any, ...]) -> dict[str, Any]:
    """A label's columns as the release reads them: ``created_at`` as formatted text,
    ``created_key`` to order by, the JSON columns as their stored text (``canonical``:
    the annotation's is its stored canonical text, the bytes its record embeds, else its
    jsonb's text) and ``outcome``, its ledger entry up to the ledger cutoff as the outcome
    table's row, or ``None``."""
    return {
        "id": row[0],
        "unit_id": row[1],
        "kind": row[2],
        "revision": row[3],
        "record_digest": row[4],
        "assisted_model": row[5],
        "created_at": row[6],
        "created_key": row[7],
        "annotation_text": row[8],
        "canonical": row[9],
        "parents_text": row[10],
        "outcome": dict(zip(OUTCOME_COLUMNS, row[12:], strict=True)) if row[11] else None,
    }


def tuple_units_by_id(*, unit_ids: list[int], codebook_unit: str) -> list[UnitContent]:
    """The :class:`UnitContent` of these tuple units (one query, by primary key): what
    :func:`audit.releases.services.unit_record_texts_store` stores. The JSON columns are
    parsed by the standard library, as the ORM's JSON field parses them (orjson would read
    an integer beyond 64 bits as a float, and these texts are stored, not checked once)."""
    columns, joins = _unit_columns()
    sql = f"""
        SELECT {columns}
        FROM {Unit._meta.db_table} u
        {joins}
        WHERE u.id = ANY(%(ids)s)
        ORDER BY u.id
    """  # noqa: S608
    with connection.cursor() as cursor:
        cursor.execute(sql, {"ids": unit_ids})
        rows = cursor.fetchall()
    configs: dict[str, Any] = {}
    return [_tuple_unit(row, codebook_unit, configs, json.loads)[1] for row in rows]
