"""The import's planning: parse an observation file, put each line in its normal form with
its unit digest, and build the archive rows a chunk of lines needs — everything of an
import that touches no database. Pure: no Django, so that it can also run in a process
of its own (``python -m audit.archive.planning``, :func:`main`) beside the process that
writes to the database (audit.archive.services, ``_PlanningProcess``).

The process reads its start message (the codebooks' definitions, the codebook the study
uses, the chunk size) and then the file's bytes, in blocks, from standard input; it
answers on standard output with one :class:`ArchiveRows` per chunk that may be written,
then :class:`Planned` (what the parse and the planning found). Anything it prints goes to
standard error.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from types import SimpleNamespace
from typing import Any

from audit.archive import mapping
from audit.archive.copytext import copy_lines
from audit.contract import codebook_from_dict, codes, parse_observation_file
from audit.contract.digests import (
    answer_identity_text,
    document_order,
    pipeline_identity_text,
    query_documents_digest,
    query_identity_text,
    text_digest,
    unit_digest_from_parts,
)
from audit.contract.errors import LineProblem
from audit.contract.observations import MAX_ERRORS, ObservationFile, gc_paused
from audit.processes import served_pipes

#: How many line errors an import batch keeps for display; the count is always exact.
STORED_ERRORS_LIMIT = MAX_ERRORS


@dataclass
class PlannedUnit:
    """One observation line on its way into the archive, in its normal form.

    ``answer_key`` and ``pipeline_text`` are filled when the planner has them (the
    archive key of ``answer``; the canonical identity text of the pipeline, whose digest is
    the pipeline's archive key); otherwise the writer computes them."""

    position: int
    digest: str
    observation: dict[str, Any]
    answer: dict[str, Any]
    sources: list[dict[str, Any]]
    answer_key: str = ""
    pipeline_text: str = ""


class Planner:
    """Normalize each line and compute its unit digest (over the answer as the archive
    will store it); refuse a file that holds the same observation twice (``problems``,
    the first ones, and ``count``, all of them), across the chunks of a file.

    The unit digest is assembled from the identity texts of its parts (same bytes as
    :func:`audit.contract.digests.unit_digest`); the answer's text is also the input of
    its archive key, so the answer is serialized once."""

    def __init__(self) -> None:
        self.problems: list[LineProblem] = []
        self.count = 0
        self.first_line: dict[str, int] = {}

    def plan(self, observations: Sequence[dict], lines: Sequence[int]) -> list[PlannedUnit]:
        units = []
        problems = self.problems
        first_line = self.first_line
        answer_normal = mapping.answer_normal
        source_normal = mapping.source_normal
        for position, observation in zip(lines, observations, strict=True):
            answer = answer_normal(observation["answer"])
            sources = [source_normal(s) for s in observation.get("sources", ())]
            answer_text = answer_identity_text(answer)
            pipeline_text = pipeline_identity_text(observation["pipeline"])
            digest = unit_digest_from_parts(
                answer_text=answer_text,
                query_text=query_identity_text(observation["query"]),
                source_digests=[source["digest"] for source in sources],
                pipeline_text=pipeline_text,
            )
            if digest in first_line:
                self.count += 1
                if len(problems) < STORED_ERRORS_LIMIT:
                    problems.append(
                        LineProblem(
                            position,
                            codes.DUPLICATE_OBSERVATION,
                            f"this observation repeats line {first_line[digest]} (same query, "
                            "answer snapshot, sources and pipeline)",
                        )
                    )
                continue
            first_line[digest] = position
            units.append(
                PlannedUnit(
                    position,
                    digest,
                    observation,
                    answer,
                    sources,
                    text_digest(answer_text),
                    pipeline_text,
                )
            )
        return units


@dataclass
class WrittenUnit:
    """What the writer needs of a planned unit, and no more (it crosses a pipe per chunk):
    its line and unit digest, whether its answer is complete, per source its tuple's
    digest, sampling stratum and inclusion probability, and its ``query_documents`` unit
    digest (None unless that codebook's unit: a complete answer with documents)."""

    position: int
    digest: str
    complete: bool
    tuples: list[tuple[str, Any, Any]]
    documents: str | None = None


def written_unit(unit: PlannedUnit, kind: str) -> WrittenUnit:
    """:class:`WrittenUnit` of ``unit``, in a study whose codebook's unit is ``kind``."""
    observation = unit.observation
    tuples = []
    for source in observation.get("sources", ()):
        sampling = source.get("sampling") or {}
        tuples.append(
            (source["tuple_digest"], sampling.get("stratum"), sampling.get("inclusion_probability"))
        )
    complete = unit.answer["status"] == "complete"
    documents = None
    if kind == "query_documents" and complete and unit.sources:
        documents = query_documents_digest(
            query=observation["query"],
            answer=unit.answer,
            document_digests=[
                unit.sources[index]["digest"] for index in document_order(unit.sources)
            ],
            pipeline=observation["pipeline"],
        )
    return WrittenUnit(unit.position, unit.digest, complete, tuples, documents)


@dataclass
class ArchiveRows:
    """A chunk's units and their archive rows, built without the database
    (:func:`archive_rows`): each query, pipeline, answer and source row once per key,
    and per unit its keys (``planned``: unit, query, pipeline and answer keys, source keys
    in the unit's order)."""

    units: list[WrittenUnit]
    queries: list[tuple]
    pipelines: list[tuple]
    answers: list[tuple]
    sources: list[tuple]
    planned: list[tuple[WrittenUnit, str, str, str, list[str]]]
    #: Set by :func:`rendered`: each of the four archive tables' rows as COPY text lines
    #: (by table: "queries", "pipelines", "answers", "sources"), their rows above then
    #: holding their key alone.
    texts: dict[str, list[bytes]] | None = None

    def of(self, digests: set[str]) -> ArchiveRows:
        """The rows of the units whose digest is in ``digests`` only (the others were
        stored by an earlier file)."""
        planned = [entry for entry in self.planned if entry[0].digest in digests]
        keys = set()
        for _, query, pipeline, answer, sources in planned:
            keys.update((query, pipeline, answer, *sources))
        tables = {}
        texts: dict[str, list[bytes]] | None = None if self.texts is None else {}
        for table in _TABLES:
            rows = getattr(self, table)
            kept = [at for at, row in enumerate(rows) if row[0] in keys]
            tables[table] = [rows[at] for at in kept]
            if texts is not None:
                texts[table] = [self.texts[table][at] for at in kept]
        return ArchiveRows([entry[0] for entry in planned], **tables, planned=planned, texts=texts)


#: The archive tables of :class:`ArchiveRows`, with their columns.
_TABLES = {
    "queries": mapping.QUERY_COLUMNS,
    "pipelines": mapping.PIPELINE_COLUMNS,
    "answers": mapping.ANSWER_COLUMNS,
    "sources": mapping.SOURCE_COLUMNS,
}


def rendered(rows: ArchiveRows) -> ArchiveRows:
    """``rows`` with its four archive tables' rows as COPY text (:attr:`ArchiveRows.texts`),
    each row then reduced to its key (the writer needs no other value of them): made by
    the planning process, so that the writing process only sends the bytes."""
    texts = {}
    for table, columns in _TABLES.items():
        table_rows = getattr(rows, table)
        texts[table] = copy_lines(table_rows, columns, mapping.JSON_COLUMNS)
        setattr(rows, table, [(row[0],) for row in table_rows])
    rows.texts = texts
    return rows


def archive_rows(units: Sequence[PlannedUnit], kind: str) -> ArchiveRows:
    """One pass over ``units`` (of a study whose codebook's unit is ``kind``): each archive
    row once per key (a file may repeat a query, a pipeline or a source), and each unit's
    keys in file order."""
    queries: dict[str, tuple] = {}
    pipelines: dict[str, tuple] = {}
    answers: dict[str, tuple] = {}
    sources: dict[str, tuple] = {}
    pipeline_keys: dict[str, str] = {}
    planned = []
    for unit in units:
        observation = unit.observation
        query = mapping.query_row(mapping.query_normal(observation["query"]))
        queries.setdefault(query[0], query)
        pipeline_normal = mapping.pipeline_normal(observation["pipeline"])
        if unit.pipeline_text:
            key = pipeline_keys.get(unit.pipeline_text)
            if key is None:
                key = pipeline_keys[unit.pipeline_text] = text_digest(unit.pipeline_text)
            pipeline = mapping.pipeline_row(pipeline_normal, key=key)
        else:
            pipeline = mapping.pipeline_row(pipeline_normal)
        pipelines.setdefault(pipeline[0], pipeline)
        answer = mapping.answer_row(unit.answer, key=unit.answer_key or None)
        answers.setdefault(answer[0], answer)
        source_keys = []
        for normal in unit.sources:
            source = mapping.source_row(normal)
            sources.setdefault(source[0], source)
            source_keys.append(source[0])
        planned.append((written_unit(unit, kind), query[0], pipeline[0], answer[0], source_keys))
    return ArchiveRows(
        [entry[0] for entry in planned],
        list(queries.values()),
        list(pipelines.values()),
        list(answers.values()),
        list(sources.values()),
        planned,
    )


def streamable(parsed: ObservationFile, wanted: tuple[str, str]) -> bool:
    """Whether the lines parsed so far may be written before the parse ends: a header
    for the study's codebook, no bad line yet, and not an ``answer_pair`` file."""
    header = parsed.header
    return (
        header is not None
        and header.codebook_key == wanted
        and parsed.codebook is not None
        and parsed.codebook.unit != "answer_pair"
        and not parsed.error_count
    )


class Parser:
    """:func:`parse_observation_file` into ``parsed`` in a thread of its own (the parse
    touches no database); an exception in it is raised again by :meth:`join`.

    The parser reads on while fewer than ``AHEAD`` chunks of good lines wait to be taken
    (``taken``, set by the planning), so memory holds a few chunks whatever the file's
    size; :meth:`unpace` lets it read the rest at once (a file parsed whole)."""

    AHEAD = 2

    def __init__(self, reader: Any, parsed: ObservationFile, registry: Any, chunk: int) -> None:
        self.done = threading.Event()
        self.failure: BaseException | None = None
        self.taken = 0
        self.paced = True
        limit = self.AHEAD * chunk
        lines = parsed.lines

        def read(size: int = -1) -> bytes:
            while self.paced and len(lines) - self.taken >= limit:
                time.sleep(0.005)
            return reader.read(size)

        paced = SimpleNamespace(read=read)

        def run() -> None:
            try:
                parse_observation_file(paced, registry, into=parsed)  # type: ignore[arg-type]
            except BaseException as exc:  # handed to the planning thread
                self.failure = exc
            finally:
                self.done.set()

        self.thread = threading.Thread(target=run, name="claimgate-import-parse", daemon=True)
        self.thread.start()

    def unpace(self) -> None:
        self.paced = False

    def stop(self) -> None:
        """Let the parse read to the end, and wait for it."""
        self.unpace()
        self.thread.join()

    def join(self) -> None:
        """:meth:`stop`, then raise what the parse raised, if anything."""
        self.stop()
        if self.failure is not None:
            raise self.failure


@dataclass
class Planned:
    """What the parse and the planning of a file found, once both ended: the parsed file
    (its good lines only when it is to be written whole: ``answer_pair``, or refused
    before a line was planned), the planner's repeated observations, and how many good
    lines were planned in chunks (``taken``)."""

    parsed: ObservationFile
    problems: list[LineProblem] = field(default_factory=list)
    count: int = 0
    taken: int = 0


def plan_chunks(
    parser: Parser, parsed: ObservationFile, wanted: tuple[str, str], chunk: int, planner: Planner
) -> Iterator[ArchiveRows]:
    """Take the parsed lines in chunks of ``chunk`` as the parse goes, plan them and yield
    the archive rows of each chunk that may be written (:func:`streamable`), in file
    order. After a bad line or a repeated observation it plans on without yielding, to
    count every repeat; a file that may not be written in chunks is let parse to its end.
    ``parser.taken`` is how many good lines were planned (and freed from ``parsed``)."""
    taken = 0
    while True:
        finished = parser.done.is_set()
        ready = len(parsed.lines)  # lines are appended after their observations
        if ready - taken < chunk and not (finished and ready > taken):
            if finished:
                return
            parser.done.wait(0.005)
            continue
        if not streamable(parsed, wanted):
            parser.unpace()
            parser.done.wait()  # the whole-file path decides
            return
        end = ready if finished else taken + chunk
        observations = parsed.observations[taken:end]
        lines = parsed.lines[taken:end]
        parsed.observations[taken:end] = [None] * (end - taken)  # freed as planned
        taken = parser.taken = end
        units = planner.plan(observations, lines)
        del observations
        if planner.count or parsed.error_count:
            continue  # nothing more is written: only counted
        yield archive_rows(units, parsed.codebook.unit)  # streamable: a codebook


# --- the planning process ------------------------------------------------------------


class _Blocks:
    """A binary reader over the file's blocks as they arrive on ``connection`` (an empty
    block ends the file)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.buffer = b""
        self.ended = False

    def read(self, size: int = -1) -> bytes:
        while not self.ended and (size < 0 or len(self.buffer) < size):
            block = self.connection.recv_bytes()
            if not block:
                self.ended = True
            else:
                self.buffer = self.buffer + block if self.buffer else block
        if size < 0 or size >= len(self.buffer):
            data, self.buffer = self.buffer, b""
        else:
            data, self.buffer = self.buffer[:size], self.buffer[size:]
        return data


def serve(connection: Connection, answers: Connection) -> None:
    """Plan the file arriving on ``connection``; answer each writable chunk's
    :class:`ArchiveRows`, then ``("end", Planned)``, on ``answers``."""
    start = connection.recv()
    registry = {key: codebook_from_dict(definition) for key, definition in start["codebooks"]}
    wanted, chunk = tuple(start["wanted"]), start["chunk"]
    parsed = ObservationFile()
    planner = Planner()
    with gc_paused():
        parser = Parser(_Blocks(connection), parsed, registry, chunk)
        try:
            for rows in plan_chunks(parser, parsed, wanted, chunk, planner):
                answers.send(("rows", rendered(rows)))
        finally:
            parser.stop()
        parser.join()
    if parser.taken:  # the lines planned in chunks are not needed again
        parsed.observations, parsed.lines = [], []
    parsed.codebook = None  # parsed for the checks (it does not pickle); the header names it
    answers.send(("end", Planned(parsed, planner.problems, planner.count, parser.taken)))


def main() -> None:
    """The planning process: its start message and the file from standard input, its
    answers on standard output (which nothing else writes to)."""
    connection, answers = served_pipes()
    try:
        serve(connection, answers)
    except BaseException:
        with contextlib.suppress(OSError):  # the writing process may have gone already
            answers.send(("failed", traceback.format_exc()))
        sys.exit(1)


if __name__ == "__main__":
    # Run through the module's own name, so that what it pickles (ArchiveRows, Planned)
    # is found under that name by the process that reads it, not under ``__main__``.
    from audit.archive import planning

    planning.main()
