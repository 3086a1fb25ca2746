"""Release bundles on disk: pure, no Django (doccano's "dataset → formatter → writer").

A release is a folder of files whose names come from this module (``BUNDLE_FILES``),
never from the data. Tables are written from iterables of plain dicts — streamed, one
row at a time — as JSON Lines, CSV and Parquet, each with a fixed column order and fixed
settings, so that the same rows always give the same bytes:

- JSONL: one canonical JSON object per line (keys sorted, UTF-8, ``\\n`` after each);
- CSV: RFC 4180 (``\\r\\n``), a header row in the table's column order, ``None`` as an
  empty cell, booleans ``true``/``false``, nested values as canonical JSON text; a text
  cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a
  leading apostrophe, so that a spreadsheet never runs it as a formula (numbers are
  written as numbers and never escaped: they cannot hold a formula);
- Parquet: the table's fixed Arrow schema, nested values as canonical JSON text, written
  in row groups of ``PARQUET_ROW_GROUP`` rows as they arrive (memory stays constant),
  with fixed compression, statistics, dictionary and format-version settings and no
  timestamp anywhere in the file's metadata.

``SHA256SUMS`` lists every other file as ``<hex>  <name>`` sorted by name (the format of
``sha256sum``), ``audit.releases.verify`` recomputes it and re-checks each record line, and
``write_zip`` packs a bundle with fixed timestamps, order and compression.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from audit.contract.canonical import (
    canonical_json,
    canonical_json_fast,
    canonical_text_fast,
    canonical_text_unchecked,
    encode_string,
)
from audit.contract.cells import FORMULA_STARTS, spreadsheet_safe
from audit.contract.codebook import Codebook
from audit.contract.engine import CLAIMS, Engine, engine_of
from audit.contract.fields import derive, field_values

FORMAT_VERSION = 1
MANIFEST = "SHA256SUMS"
README = "README.md"
CODEBOOK = "codebook.json"
STAGE = "stage.json"
RELIABILITY = "reliability.json"
PREDICTIONS = "predictions.json"
#: Seed 002's Table II for the pipeline pairs of a protocol study's setting.
COMPARISON = "comparison.json"
RECORDS = "records.jsonl"
TABLE_FORMATS = ("jsonl", "csv", "parquet")
TABLE_NAMES = ("labels_independent", "labels_final", "labels_gold", "outcomes")
#: Every name a bundle may hold. Nothing else is ever written into a bundle folder.
BUNDLE_FILES = (
    README,
    CODEBOOK,
    STAGE,
    RELIABILITY,
    PREDICTIONS,
    COMPARISON,
    RECORDS,
    *(f"{table}.{ext}" for table in TABLE_NAMES for ext in TABLE_FORMATS),
    MANIFEST,
)
_BUNDLE_FILE_SET = frozenset(BUNDLE_FILES)
#: The files that show units' labels (and outcomes computed from them): whoever downloads
#: one, or the zip, has seen the labels of every unit in the release.
LABEL_FILES = frozenset(
    (RECORDS, *(f"{table}.{ext}" for table in TABLE_NAMES for ext in TABLE_FORMATS))
)
#: The media type a bundle file is served with, by suffix.
CONTENT_TYPES = {
    ".jsonl": "application/x-ndjson",
    ".csv": "text/csv; charset=utf-8",
    ".parquet": "application/vnd.apache.parquet",
    ".md": "text/markdown; charset=utf-8",
    ".json": "application/json",
}

PARQUET_ROW_GROUP = 10_000
#: Rows a table holds before writing them to its three files, column by column.
TABLE_BATCH = 500
PARQUET_OPTIONS: dict[str, Any] = {
    "version": "2.6",
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "data_page_version": "1.0",
    "data_page_size": 1024 * 1024,
    "store_schema": True,
    "use_byte_stream_split": False,
}
#: Fixed stamp of every zip member (the earliest a zip can hold): no wall-clock time.
ZIP_DATE_TIME = (1980, 1, 1, 0, 0, 0)

#: A study slug or release name: letters, digits, ``-`` and ``_`` (Django's slug), never
#: empty, never starting with a dot or a dash; nothing that could walk out of a folder.
_SLUG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,79}")


class BundlePathError(ValueError):
    """A slug, release name or file name that could leave the bundle folder."""


def check_slug(value: str, what: str) -> str:
    if not isinstance(value, str) or not _SLUG.fullmatch(value):
        raise BundlePathError(
            f"{what} {value!r} is not a slug (letters, digits, '-' and '_', at most 80)"
        )
    return value


def _inside(root: Path, path: Path) -> Path:
    resolved_root = root.resolve()
    resolved = path.resolve()
    if resolved != resolved_root and resolved_root not in resolved.parents:
        raise BundlePathError(f"{path} is outside {root}")
    return path


def bundle_dir(root: Path, slug: str, name: str) -> Path:
    """``root/<slug>/<name>``, after checking both are slugs and the result stays inside."""
    check_slug(slug, "study slug")
    check_slug(name, "release name")
    return _inside(root, Path(root) / slug / name)


def bundle_file(directory: Path, name: str) -> Path:
    """A file of the bundle: ``name`` must be one of ``BUNDLE_FILES``."""
    if name not in _BUNDLE_FILE_SET:
        raise BundlePathError(f"{name!r} is not a file of a release bundle")
    path = Path(directory) / name
    _inside(directory, path)
    if path.resolve().parent != Path(directory).resolve():
        raise BundlePathError(f"{name!r} does not lie directly in the bundle")
    return path


# --- tables ------------------------------------------------------------------------------

#: Column types: ``string``, ``int``, ``float``, ``bool`` and ``json`` (any JSON value,
#: written as canonical JSON text in CSV and Parquet, as itself in JSONL).
COLUMN_TYPES = ("string", "int", "float", "bool", "json")


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[tuple[str, str], ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)


_LABEL_COMMON = (
    ("record_digest", "string"),
    ("kind", "string"),
    ("revision", "int"),
    ("current", "bool"),
    ("parents", "json"),
    ("unit_digest", "string"),
    ("partition", "string"),
    ("annotator", "string"),
    ("assisted_model", "string"),
    ("created_at", "string"),
)
OUTCOMES = Table(
    "outcomes",
    (
        ("record_digest", "string"),
        ("unit_digest", "string"),
        ("kind", "string"),
        ("codebook", "string"),
        ("checker_version", "string"),
        ("stage", "string"),
        ("ok", "bool"),
        ("reason", "string"),
        ("endpoint", "int"),
        ("short_circuit", "int"),
        ("priority", "float"),
        ("action", "string"),
        ("recorded_at", "string"),
        ("seq", "int"),
        ("prev_hash", "string"),
        ("entry_hash", "string"),
    ),
)


#: The gold table's own columns: the unit's key and whether this label matches it.
_GOLD = (("gold_key", "json"), ("gold_right", "bool"))


def label_table(name: str, unit: str, engine: Engine | None = None) -> Table:
    """The label table of a codebook, from its engine (audit.contract.engine.engine_of;
    ``None``: a format-1 codebook of ``unit``): the common columns, the codebook's columns
    (:func:`engine_columns`), and for the gold table each label's key and score."""
    gold = _GOLD if name == "labels_gold" else ()
    return Table(name, _LABEL_COMMON + engine_columns(engine or engine_of(None, unit=unit)) + gold)


def engine_columns(engine: Engine) -> tuple[tuple[str, str], ...]:
    """A codebook's own label columns, from its engine. Format 2: every field in codebook
    order and each derived value (:func:`field_columns`). Format 1, as its releases always
    had them: each compared field (the predicates and passage support, the source role;
    or the verdicts), each claims field as its count and its claims, then the stored
    parts kept whole (:attr:`Engine.containers`: spans and evidence, or the verdicts with
    their reasons) and the rationale."""
    if engine.format_version == ENGINE_FORMAT:
        return field_columns(engine)
    columns = [
        (column_name(f.code), _FIELD_COLUMN_TYPES.get(f.type, "json")) for f in engine.value_fields
    ]
    for f in engine.claims_fields:
        columns += [(_count_column(f.code), "int"), (column_name(f.code), "json")]
    columns += [(part, "json") for part in engine.containers]
    return (*columns, ("rationale", "string"))


def _count_column(code: str) -> str:
    """The column counting a format-1 claims field's claims (``claim_count`` for
    ``claims``)."""
    return "claim_count" if code == CLAIMS else f"{code}_count"


def label_cells(engine: Engine, annotation: Mapping[str, Any]) -> dict[str, Any]:
    """The cells of :func:`engine_columns` for one stored annotation (the rationale is a
    common cell). Format 2: :func:`field_cells`; format 1: each compared field's value
    (``None`` for U or absent, as audit.contract.engine.field_value reads it), each claims
    field's count and claims, each stored part as stored."""
    if engine.format_version == ENGINE_FORMAT:
        return field_cells(engine, annotation)
    values, claims, containers = _cell_plan(engine)
    cells: dict[str, Any] = {}
    for name, path in values:  # _at, inlined: a release writes a row per label
        value: Any = annotation
        for step in path:
            if type(value) is not dict and not isinstance(value, Mapping):
                value = None
                break
            value = value.get(step)
        cells[name] = value
    for count, name, path in claims:
        listed = _at(annotation, path) or []
        cells[count] = len(listed)
        cells[name] = listed
    for part in containers:
        cells[part] = annotation.get(part)
    return cells


_Plan = tuple[
    tuple[tuple[str, tuple[str, ...]], ...],
    tuple[tuple[str, str, tuple[str, ...]], ...],
    tuple[str, ...],
]
#: The cell plan of recently used format-1 engines, by ``id`` (the entry holds the engine,
#: so its id cannot be reused while it is cached).
_PLANS: dict[int, tuple[Engine, _Plan]] = {}


def _cell_plan(engine: Engine) -> _Plan:
    """Where a format-1 engine's cells are in a stored annotation, worked out once per
    engine (a release writes one row per label)."""
    cached = _PLANS.get(id(engine))
    if cached is not None and cached[0] is engine:
        return cached[1]
    plan: _Plan = (
        tuple((column_name(f.code), engine.paths[f.code]) for f in engine.value_fields),
        tuple(
            (_count_column(f.code), column_name(f.code), engine.paths[f.code])
            for f in engine.claims_fields
        ),
        engine.containers,
    )
    if len(_PLANS) >= 64:
        _PLANS.clear()
    _PLANS[id(engine)] = (engine, plan)
    return plan


def _at(annotation: Any, path: Sequence[str]) -> Any:
    """The value at ``path`` (``None`` when a step is missing or not an object)."""
    value = annotation
    for step in path:
        if type(value) is not dict and not isinstance(value, Mapping):
            return None
        value = value.get(step)
    return value


# --- codebooks of fields (format 2) ---------------------------------------------------------

ENGINE_FORMAT = 2
_FIELD_COLUMN_TYPES = {
    "choice": "string",
    "grade": "int",
    "verdict": "bool",
    "number": "float",
    "date": "string",
    "text": "string",
    "spans": "json",
    "claims": "json",
}
_DERIVED_COLUMN_TYPES = {"min": "bool", "R_O": "int", "claims_summary": "bool"}
#: After the field and derived columns: the reasons and evidence spans by field, as JSON.
_FIELD_TAIL = (("reasons", "json"), ("spans", "json"), ("rationale", "string"))
_RESERVED = frozenset(name for name, _ in _LABEL_COMMON + _FIELD_TAIL)


def column_name(code: str) -> str:
    """A field's or derived value's column: its code, unless a fixed column has that name
    (then ``<code>_value``)."""
    return f"{code}_value" if code in _RESERVED else code


def field_columns(codebook: Codebook | Engine) -> tuple[tuple[str, str], ...]:
    """The columns of a codebook of fields, in codebook order: each field (a
    per-document field is a JSON list, one value per document), then each derived value."""
    columns = [
        (
            column_name(f.code),
            "json" if f.placement == "document" else _FIELD_COLUMN_TYPES.get(f.type, "json"),
        )
        for f in codebook.fields
    ]
    columns += [
        (column_name(d.code), _DERIVED_COLUMN_TYPES.get(d.rule, "json")) for d in codebook.derived
    ]
    return (*columns, *_FIELD_TAIL)


def field_cells(codebook: Codebook | Engine, annotation: Mapping[str, Any]) -> dict[str, Any]:
    """The field, derived, reasons and spans cells of one stored annotation (a stored
    annotation passed the record contract; a failed answer's has no values: every cell is
    empty)."""
    values = annotation.get("values")
    if isinstance(values, Mapping):
        cells = {column_name(k): v for k, v in field_values(codebook, annotation).items()}
        derived = derive(codebook, annotation)
    else:
        cells = {column_name(f.code): None for f in codebook.fields}
        derived = {d.code: None for d in codebook.derived}
    cells.update((column_name(k), v) for k, v in derived.items())
    cells["reasons"] = annotation.get("reasons")
    cells["spans"] = annotation.get("spans")
    return cells


def _cell_text(value: Any, kind: str) -> str:
    if value is None:
        return ""
    if kind == "json":
        text = canonical_json(value).decode("utf-8")
    elif isinstance(value, bool):
        return "true" if value else "false"
    elif isinstance(value, int | float):
        return repr(value)
    else:
        text = str(value)
    return spreadsheet_safe(text)


def csv_cell(value: Any, kind: str = "string") -> str:
    """One CSV cell as written (escaped where a spreadsheet would run a formula)."""
    return _cell_text(value, kind)


def _json_text(value: Any, fast: bool = False) -> str:
    """``canonical_text_unchecked(value)``, with the scalars of a table cell written
    directly (the same text the encoder gives them, without a call into it); with
    ``fast``, lists and objects by the compiled encoder (``canonical_text_fast``: only for
    values parsed by orjson, which hold no NaN)."""
    kind = type(value)
    if kind is str:
        return encode_string(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int:
        return int.__repr__(value)
    if not value and (kind is list or kind is dict):  # most labels' parents
        return "[]" if kind is list else "{}"
    if fast and (kind is list or kind is dict):
        return canonical_text_fast(value)
    return canonical_text_unchecked(value)


class JsonlWriter:
    def __init__(self, stream: IO[bytes], table: Table) -> None:
        self.stream = stream
        self.names = table.names

    def write(self, row: Mapping[str, Any]) -> None:
        self.stream.write(canonical_json({name: row[name] for name in self.names}) + b"\n")

    def close(self) -> None:
        pass


class CsvWriter:
    def __init__(self, stream: IO[bytes], table: Table) -> None:
        self.text = io.TextIOWrapper(stream, encoding="utf-8", newline="", write_through=True)
        self.writer = csv.writer(self.text, lineterminator="\r\n")
        self.columns = table.columns
        self.writer.writerow(table.names)

    def write(self, row: Mapping[str, Any]) -> None:
        self.writer.writerow([_cell_text(row[name], kind) for name, kind in self.columns])

    def write_texts(self, row: Mapping[str, Any], texts: Mapping[str, str]) -> None:
        self.writer.writerow(
            [
                spreadsheet_safe(texts[name])
                if kind == "json" and row[name] is not None
                else _cell_text(row[name], kind)
                for name, kind in self.columns
            ]
        )

    def write_columns(self, columns: Sequence[Sequence[Any]]) -> None:
        """Rows given column by column, in the table's column order; a ``json`` column as
        the canonical texts of its values (``None`` for null)."""
        cells = []
        for (_, kind), values in zip(self.columns, columns, strict=True):
            if kind == "json" or kind == "string":
                # A text cell as _cell_text writes it, without the call where it is safe.
                cells.append(
                    [
                        value
                        if value.__class__ is str
                        and value
                        and value[0] not in FORMULA_STARTS
                        and not value[0].isspace()
                        else _cell_text(value, "string")
                        for value in values
                    ]
                )
            else:
                cells.append([_cell_text(value, kind) for value in values])
        self.writer.writerows(zip(*cells, strict=True))

    def close(self) -> None:
        self.text.flush()
        self.text.detach()


def _arrow_schema(table: Table) -> Any:
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int": pa.int64(),
        "float": pa.float64(),
        "bool": pa.bool_(),
        "json": pa.string(),
    }
    return pa.schema([pa.field(name, types[kind], nullable=True) for name, kind in table.columns])


class ParquetWriter:
    """Buffers ``PARQUET_ROW_GROUP`` rows as columns, then writes them as one row group."""

    def __init__(self, stream: IO[bytes], table: Table) -> None:
        import pyarrow.parquet as pq

        self.table = table
        self.schema = _arrow_schema(table)
        self.writer = pq.ParquetWriter(stream, self.schema, **PARQUET_OPTIONS)
        #: Rows given one at a time, not yet converted (a list per column).
        self.buffer: list[list[Any]] = [[] for _ in table.columns]
        #: The row group's rows so far as Arrow arrays (a list of arrays per column): a
        #: batch's Python values are converted at once, so that a row group of
        #: ``PARQUET_ROW_GROUP`` rows is held as Arrow's compact buffers, not as Python
        #: objects (a table of long texts held ~40 MB of them).
        self.chunks: list[list[Any]] = [[] for _ in table.columns]
        self.count = 0
        self.rows_written = 0

    def write(self, row: Mapping[str, Any]) -> None:
        self.write_texts(row, {})

    def write_texts(self, row: Mapping[str, Any], texts: Mapping[str, str]) -> None:
        for column, (name, kind) in zip(self.buffer, self.table.columns, strict=True):
            value = row[name]
            if kind == "json" and value is not None:
                value = texts.get(name) or canonical_json(value).decode("utf-8")
            column.append(value)
        self.count += 1
        if self.count >= PARQUET_ROW_GROUP:
            self._flush()
        elif len(self.buffer[0]) >= TABLE_BATCH:
            self._convert(self.buffer)
            self.buffer = [[] for _ in self.table.columns]

    def _convert(self, columns: Sequence[Sequence[Any]]) -> None:
        """Append rows (given as a list of values per column) to the row group as arrays."""
        import pyarrow as pa

        if not columns or not len(columns[0]):
            return
        for chunks, values, field in zip(self.chunks, columns, self.schema, strict=True):
            chunks.append(pa.array(values, type=field.type))

    def write_columns(self, columns: Sequence[list[Any]], count: int) -> None:
        """``count`` rows given column by column (a ``json`` column as canonical texts),
        cut into row groups at the same rows as :meth:`write_texts` would."""
        self._convert(self.buffer)
        self.buffer = [[] for _ in self.table.columns]
        start = 0
        while start < count:
            take = min(count - start, PARQUET_ROW_GROUP - self.count)
            if start == 0 and take == count:
                self._convert(columns)
            else:
                self._convert([values[start : start + take] for values in columns])
            self.count += take
            start += take
            if self.count >= PARQUET_ROW_GROUP:
                self._flush()

    def _flush(self) -> None:
        import pyarrow as pa

        if not self.count:
            return
        self._convert(self.buffer)
        batch = pa.record_batch(
            [chunks[0] if len(chunks) == 1 else pa.concat_arrays(chunks) for chunks in self.chunks],
            schema=self.schema,
        )
        self.writer.write_batch(batch, row_group_size=PARQUET_ROW_GROUP)
        self.rows_written += self.count
        self.buffer = [[] for _ in self.table.columns]
        self.chunks = [[] for _ in self.table.columns]
        self.count = 0

    def close(self) -> None:
        self._flush()
        self.writer.close()


_WRITERS = {"jsonl": JsonlWriter, "csv": CsvWriter, "parquet": ParquetWriter}


class TableFiles:
    """One table written as ``<name>.jsonl``, ``<name>.csv`` and ``<name>.parquet`` at once,
    a row at a time (so that one pass over the database feeds every format)."""

    def __init__(self, directory: Path, table: Table) -> None:
        self.table = table
        self.sorted_names = sorted(table.names)
        self._name_set = frozenset(table.names)
        #: ``"name":`` of each column, in the JSONL line's (sorted) key order.
        self._keys = [(name, encode_string(name) + ":") for name in self.sorted_names]
        self._json_names = [name for name, kind in table.columns if kind == "json"]
        self.rows = 0
        self._pending: list[Mapping[str, Any]] = []
        self._fast: list[bool] = []
        self.streams: list[IO[bytes]] = []
        self.writers: list[Any] = []
        for ext in TABLE_FORMATS:
            stream = bundle_file(directory, f"{table.name}.{ext}").open("xb")
            self.streams.append(stream)
            self.writers.append(_WRITERS[ext](stream, table))

    def write(self, row: Mapping[str, Any], fast: bool = False) -> None:
        """Add a row (written by batches of ``TABLE_BATCH``, column by column). Rows hold
        JSON values (parsed JSON, string keys); ``fast``: every value of the row was parsed
        by orjson or read from a typed column, none is NaN or infinite, so the compiled
        encoder may write it (see :func:`_json_text`)."""
        self._pending.append(row)
        self._fast.append(fast)
        if len(self._pending) >= TABLE_BATCH:
            self._flush()

    def _flush(self) -> None:
        """Write the pending rows to the three files. Each nested value is serialized once
        (its canonical text is the CSV and Parquet cell); a JSONL line is the row's
        canonical JSON (keys in sorted order), from the compiled encoder for a fast row,
        else assembled from each value's canonical text."""
        rows, fasts = self._pending, self._fast
        if not rows:
            return
        self._pending, self._fast = [], []
        json_texts = {
            name: [
                None if row[name] is None else _json_text(row[name], fast)
                for row, fast in zip(rows, fasts, strict=True)
            ]
            for name in self._json_names
        }
        names = self.table.names
        name_set = self._name_set
        lines = []
        for row, fast in zip(rows, fasts, strict=True):
            if fast:
                # A row of exactly the table's columns is its own JSONL object (the keys are
                # sorted by the encoder), else the columns are taken out of it.
                whole = row.keys() == name_set
                lines.append(canonical_json_fast(row if whole else {n: row[n] for n in names}))
            else:
                texts = {name: _json_text(row[name]) for name in names}
                line = "{" + ",".join([key + texts[name] for name, key in self._keys]) + "}"
                lines.append(line.encode("utf-8"))
        lines.append(b"")
        self.streams[0].write(b"\n".join(lines))
        columns = [
            json_texts[name] if kind == "json" else [row[name] for row in rows]
            for name, kind in self.table.columns
        ]
        self.writers[1].write_columns(columns)
        self.writers[2].write_columns(columns, len(rows))
        self.rows += len(rows)

    def close(self) -> None:
        self._flush()
        for writer, stream in zip(self.writers, self.streams, strict=True):
            writer.close()
            stream.close()


def write_table(directory: Path, table: Table, rows: Iterable[Mapping[str, Any]]) -> int:
    """Write every row of ``rows`` in the three formats; returns the row count."""
    files = TableFiles(directory, table)
    try:
        for row in rows:
            files.write(row)
    finally:
        files.close()
    return files.rows


def write_jsonl(stream: IO[bytes], rows: Iterable[Any]) -> int:
    """Canonical JSON Lines from any JSON values (records, headers)."""
    count = 0
    for row in rows:
        stream.write(canonical_json(row) + b"\n")
        count += 1
    return count


def write_json(path: Path, value: Any) -> None:
    """One canonical JSON document, newline-terminated."""
    with path.open("xb") as stream:
        stream.write(canonical_json(value) + b"\n")


# --- withheld texts -----------------------------------------------------------------------

WITHHELD_SNAPSHOTS = ("answer", "source", "baseline")
WITHHELD_PREFIXES = ("source:", "document:")


def quote_sha256(quote: str) -> str:
    return hashlib.sha256(quote.encode("utf-8")).hexdigest()


def _withheld_snapshot(name: Any) -> bool:
    """An answer's or a source's text (``source:N`` and ``document:N`` in units of several,
    ``baseline`` the second answer of a pair); the query is never withheld."""
    return isinstance(name, str) and (
        name in WITHHELD_SNAPSHOTS or name.startswith(WITHHELD_PREFIXES)
    )


def withhold_span(span: Any) -> Any:
    """A span of an answer or source without its quote: the offsets stay, the quote is
    replaced by ``null`` and its SHA-256 (``quote_sha256``), so that whoever holds the
    archived text can check it."""
    if not isinstance(span, dict) or not _withheld_snapshot(span.get("snapshot")):
        return span
    quote = span.get("quote")
    if not isinstance(quote, str):
        return span
    return {**span, "quote": None, "quote_sha256": quote_sha256(quote)}


@dataclass
class Withheld:
    """What a release left out, counted as it goes: nothing is dropped silently."""

    answer_texts: int = 0
    source_texts: int = 0
    quotes: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "answer_texts": self.answer_texts,
            "source_texts": self.source_texts,
            "quotes": self.quotes,
        }


def withhold_annotation(annotation: dict[str, Any], counter: Withheld) -> dict[str, Any]:
    """The annotation with every answer/source quote replaced by its SHA-256."""
    out = dict(annotation)
    spans = annotation.get("spans")
    if isinstance(spans, list):  # a codebook of fields: one list, each span naming its field
        out["spans"] = [_count(withhold_span(s), s, counter) for s in spans]
    values = annotation.get("values")
    if isinstance(values, dict):  # spans fields hold spans as their value
        out["values"] = {
            key: [_count(withhold_span(s), s, counter) for s in value]
            if isinstance(value, list) and all(isinstance(s, dict) and "quote" in s for s in value)
            else value
            for key, value in values.items()
        }
    if isinstance(spans, dict):
        out["spans"] = (
            {
                key: [_count(withhold_span(s), s, counter) for s in value]
                for key, value in spans.items()
            }
            if spans
            else spans
        )
    claims = annotation.get("claims")
    if isinstance(claims, list):
        out["claims"] = [
            {
                **claim,
                "span": _count(withhold_span(claim.get("span")), claim.get("span"), counter),
                "quote_span": _count(
                    withhold_span(claim.get("quote_span")), claim.get("quote_span"), counter
                ),
            }
            if isinstance(claim, dict)
            else claim
            for claim in claims
        ]
    return out


def _count(new: Any, old: Any, counter: Withheld) -> Any:
    if new is not old:
        counter.quotes += 1
    return new


def withhold_record(record: dict[str, Any], counter: Withheld) -> dict[str, Any]:
    """A record without its answer and source texts (their ``digest`` stays) and with
    hashed quotes; ``record_digest`` stays the digest of the full record."""
    out = dict(record)
    out["answer"] = {**record["answer"], "text": None}
    counter.answer_texts += 1
    if "source" in record:
        out["source"] = {**record["source"], "text": None}
        counter.source_texts += 1
    if "sources" in record:
        out["sources"] = [{**source, "text": None} for source in record["sources"]]
        counter.source_texts += len(record["sources"])
    out["annotation"] = withhold_annotation(record["annotation"], counter)
    return out


# --- manifest -------------------------------------------------------------------------------


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for chunk in iter(lambda: stream.read(1024 * 1024), b""):
            digest.update(chunk)
    return digest.hexdigest()


def manifest_text(sums: Mapping[str, str]) -> str:
    """``SHA256SUMS``: ``<hex>  <name>`` per file, sorted by name (``sha256sum -c`` reads it)."""
    return "".join(f"{sums[name]}  {name}\n" for name in sorted(sums))


def parse_manifest(text: str) -> tuple[dict[str, str], list[str]]:
    """The manifest's ``{name: hex}`` and the lines it could not read."""
    sums: dict[str, str] = {}
    bad: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = re.fullmatch(r"([0-9a-f]{64}) [ *](.+)", line)
        if match is None or "/" in match[2] or "\\" in match[2] or match[2] in (".", ".."):
            bad.append(f"{MANIFEST} line {number} is not '<sha256>  <file name>': {line!r}")
            continue
        sums[match[2]] = match[1]
    return sums, bad


def write_manifest(directory: Path) -> dict[str, dict[str, Any]]:
    """Write ``SHA256SUMS`` over every file of the bundle; ``{name: {sha256, bytes}}`` of
    every file, the manifest included."""
    names = sorted(p.name for p in Path(directory).iterdir() if p.name != MANIFEST)
    files = {}
    for name in names:
        path = bundle_file(directory, name)
        files[name] = {"sha256": file_sha256(path), "bytes": path.stat().st_size}
    manifest = bundle_file(directory, MANIFEST)
    manifest.write_bytes(
        manifest_text({name: f["sha256"] for name, f in files.items()}).encode("utf-8")
    )
    files[MANIFEST] = {"sha256": file_sha256(manifest), "bytes": manifest.stat().st_size}
    return files


# --- zip -----------------------------------------------------------------------------------


def write_zip(target: IO[bytes], directory: Path, names: Sequence[str], prefix: str) -> None:
    """The bundle as a zip: members in sorted order under ``prefix/``, each stamped
    1980-01-01 00:00, mode 0644, deflated at zlib's default level — the same bytes every
    time (for one zlib version)."""
    check_slug(prefix, "zip folder")
    with zipfile.ZipFile(target, "w") as archive:
        for name in sorted(names):
            path = bundle_file(directory, name)
            info = zipfile.ZipInfo(f"{prefix}/{name}", date_time=ZIP_DATE_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.create_system = 3
            info.external_attr = 0o100644 << 16
            info.file_size = path.stat().st_size
            with path.open("rb") as source, archive.open(info, "w") as sink:
                for chunk in iter(lambda: source.read(1024 * 1024), b""):
                    sink.write(chunk)


# --- datasheet ------------------------------------------------------------------------------


def _line(value: Any) -> str:
    return " ".join(str(value).split())


def render_datasheet(facts: Mapping[str, Any]) -> str:
    """The release's README (Markdown) from plain facts; no clock is read here."""
    f = facts
    out: list[str] = []
    add = out.append
    add(f"# Release {_line(f['release'])} of study {_line(f['study'])}\n")
    add(f"{_line(f['title'])}\n")
    if not f["frozen"]:
        add(
            "> **NOT FROZEN.** This study was not frozen when this release was built: "
            "codebook, pipeline, thresholds and partitions could still change, and the "
            f"**test partition is withheld** (sealed): {f['withheld_units']} units and "
            f"{f['withheld_labels']} labels of it are not in this release. Nothing here "
            "supports a held-out evaluation.\n"
        )
    else:
        add(f"Frozen at {f['frozen_at']}; the test partition is included.\n")
    add("## Stamp\n")
    add(f"- validation stage reached: **{f['stage'] or 'none'}**")
    add(f"- codebook: {_line(f['codebook'])} (SHA-256 `{f['codebook_digest']}`)")
    add(f"- record format version {FORMAT_VERSION}; checker {f['checker_version']}")
    if f.get("ledger_head"):
        add(
            f"- claim ledger head when built: `{f['ledger_head']}` (entry:hash); "
            "`manage.py verify_ledger --expect <this folder>` checks that the claim ledger "
            "still passes through it"
        )
    if f.get("label_dates"):
        first, last = f["label_dates"]
        add(f"- labels submitted between {first} and {last}")
    add("")
    add("## Counts\n")
    add("| what | count |\n|---|---:|")
    for what, count in f["counts"]:
        add(f"| {what} | {count} |")
    add("")
    add("## Annotators (pseudonymous)\n")
    add(
        "Annotators are named by the pseudonym of their membership in the study, never by "
        "user name. Independent labels per annotator:\n"
    )
    if f["annotators"]:
        add("| annotator | independent labels |\n|---|---:|")
        for name, count in f["annotators"]:
            add(f"| {_line(name)} | {count} |")
    else:
        add("None.")
    add("")
    add("## Assisted labels\n")
    add(
        f"{f['assisted']} independent labels were pre-filled by a model or judge "
        f"(column `assisted_model`), {f['unassisted']} were not. Report them separately; "
        "a judge is never its own gold.\n"
    )
    if f["texts_withheld"]:
        w = f["withheld_texts"]
        add("## Withheld texts\n")
        add(
            f"Snapshot texts are withheld (licensing): {w['answer_texts']} answer texts and "
            f"{w['source_texts']} source texts in the records are `null`, their `digest` "
            f"stays; {w['quotes']} quotes of answer or source spans are `null` with their "
            "SHA-256 in `quote_sha256`. Record digests are those of the full records.\n"
        )
    add("## What this release may not be used to claim\n")
    for claim in f["boundary"]["may_not_yet"]:
        add(f"- not yet: {claim}")
    for claim in f["boundary"]["may_never"]:
        add(f"- never with this tool: {claim}")
    if not f["frozen"]:
        add("- any held-out result: the test partition is sealed and not in this release")
    add("")
    if f["boundary"]["may"]:
        add("It supports, at its stage:\n")
        for claim in f["boundary"]["may"]:
            add(f"- {claim}")
        add("")
    add("## Reliability\n")
    add(f"{f['reliability_note']}\n")
    if f.get("estimates_lines"):
        add("## Rates on the final labels\n")
        add(
            "From the reliability report's final records: value, 95% bootstrap interval over "
            "answers, counts. A prevalence (Hájek, weighted by 1/π) only where every unit has "
            "an inclusion probability; otherwise the share of the labelled sample.\n"
        )
        for line in f["estimates_lines"]:
            add(f"- {line}")
        add("")
    add("## Predictions (never labels, never gold)\n")
    add(f"{f.get('predictions_note') or 'No prediction file was scored for this study.'}\n")
    for line in f.get("predictions_lines") or ():
        add(f"- {line}")
    if f.get("predictions_lines"):
        add("")
    add("## Files\n")
    add("| file | rows | content |\n|---|---:|---|")
    for name, rows, what in f["files"]:
        add(f"| `{name}` | {'' if rows is None else rows} | {what} |")
    add("")
    add(
        "Tables come as JSON Lines (canonical JSON per line), CSV (RFC 4180; a text cell "
        "starting with `=`, `+`, `-`, `@`, a tab or a carriage return carries a leading `'`; "
        "nested values as canonical JSON text) and Parquet (the same columns; nested values "
        f"as JSON text), written by pyarrow {f['pyarrow']}. `{RECORDS}` holds a header line, "
        "then one record per line in the record format (docs/formats.md) with its digest "
        "and parents. `SHA256SUMS` covers every other file; check it with "
        "`sha256sum -c SHA256SUMS` or `python manage.py verify_release DIR`.\n"
    )
    return "\n".join(out).rstrip() + "\n"


def fsync_dir(directory: Path) -> None:
    """Make a finished bundle's names durable before the database says it is ready."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
