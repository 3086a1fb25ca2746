"""Writes to the archive. Every interface (command, API, study page) calls these."""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from audit.archive import bulk, mapping
from audit.archive.models import (
    AnswerSnapshot,
    Codebook,
    CodebookUnit,
    ImportBatch,
    ImportStatus,
    Observation,
    Pipeline,
    Query,
    SourceSnapshot,
    Study,
    Tuple,
    Unit,
)
from audit.archive.planning import (
    STORED_ERRORS_LIMIT,
    ArchiveRows,
    LineProblem,
    Parser,
    Planned,
    PlannedUnit,
    Planner,
    WrittenUnit,
    archive_rows,
    plan_chunks,
)
from audit.archive.selectors import codebook_definitions, codebook_registry
from audit.contract import codebook_from_dict, codes
from audit.contract.canonical import canonical_digest
from audit.contract.codebook import codebook_problems
from audit.contract.digests import (
    answer_pair_digest,
)
from audit.contract.errors import ContractError
from audit.contract.observations import ErrorGroups, ObservationFile, gc_paused
from audit.contract.streams import HashingReader, as_stream, stream_size
from audit.contract.texts import MAX_DEPTH, text_problem
from audit.processes import ended, module_process

logger = logging.getLogger("claimgate.archive")

#: The largest codebook file an upload or the command reads (a codebook is a few KiB).
CODEBOOK_MAX_BYTES = 1024 * 1024
#: Reasons of installing a codebook file besides the file's own (audit.contract.codes).
CODEBOOK_IN_USE = "codebook_in_use"  # other content under the name and version a study uses
UNREADABLE_FILE = "unreadable_file"  # the file could not be read (missing, a directory, ...)


@dataclass(frozen=True)
class CodebookProblem:
    """One thing wrong with a codebook file: a reason code, where (a JSON path such as
    ``fields[2].grades``, or ``line 4, column 7`` for a file that is not JSON; empty for
    the file as a whole) and a sentence for people."""

    code: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def as_dict(self) -> dict[str, str]:
        return {"reason": self.code, "path": self.path, "message": self.message}


class CodebookRefused(Exception):
    """A codebook file that cannot be installed, with every problem found in it."""

    def __init__(self, problems: Sequence[CodebookProblem], *, file_name: str = "") -> None:
        self.problems = tuple(problems)
        self.file_name = file_name
        where = f"{file_name}: " if file_name else ""
        count = len(self.problems)
        listed = "; ".join(str(problem) for problem in self.problems)
        super().__init__(
            f"{where}{count} problem{'s' if count != 1 else ''}, nothing installed: {listed}"
        )


class CodebookConflict(CodebookRefused):
    """A codebook version that a study uses exists with different content."""

    def __init__(self, message: str, *, file_name: str = "") -> None:
        super().__init__([CodebookProblem(CODEBOOK_IN_USE, "", message)], file_name=file_name)
        self.message = message


def _duplicate_keys_refused(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads`` keeps the last of two equal keys in an object; a codebook with two
    ``fields`` would silently lose one, so such a file is refused."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key!r} appears twice in one object")
        found[key] = value
    return found


def codebook_definition_from_bytes(*, data: bytes) -> Any:
    """A codebook file's JSON value, or :class:`CodebookRefused` saying why it is not JSON
    (with the line and column)."""
    if len(data) > CODEBOOK_MAX_BYTES:
        raise CodebookRefused(
            [
                CodebookProblem(
                    codes.FILE_TOO_LARGE,
                    "",
                    f"the file is {len(data):,} bytes; a codebook file may have at most "
                    f"{CODEBOOK_MAX_BYTES:,}",
                )
            ]
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodebookRefused(
            [
                CodebookProblem(
                    codes.INVALID_UTF8, f"byte {exc.start}", f"the file is not UTF-8: {exc.reason}"
                )
            ]
        ) from None
    try:
        value = json.loads(
            text.removeprefix("\ufeff"),
            object_pairs_hook=_duplicate_keys_refused,
            parse_constant=_constant_refused,
        )
    except RecursionError:
        message = f"the file nests arrays or objects more than {MAX_DEPTH} levels deep"
        raise CodebookRefused([CodebookProblem(codes.TOO_DEEP, "", message)]) from None
    except json.JSONDecodeError as exc:
        raise CodebookRefused(
            [
                CodebookProblem(
                    codes.MALFORMED_JSON,
                    f"line {exc.lineno}, column {exc.colno}",
                    f"the file is not JSON: {exc.msg}",
                )
            ]
        ) from None
    except ValueError as exc:
        raise CodebookRefused([CodebookProblem(codes.MALFORMED_JSON, "", str(exc))]) from None
    else:
        # NUL (which PostgreSQL's jsonb cannot hold), unpaired surrogates, deep nesting.
        problem = text_problem(value)
    if problem is not None:
        raise CodebookRefused([CodebookProblem(problem.code, "", problem.message)])
    return value


def _constant_refused(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _problems_of(definition: Any) -> list[CodebookProblem]:
    """Every problem of a codebook file's JSON value. Format 2 names all of them; format 1
    (the first two codebooks) stops at the first, as its checker always has."""
    version = definition.get("format_version") if isinstance(definition, dict) else None
    if type(version) is int and version == 2:
        return [CodebookProblem(p.code, p.path, p.message) for p in codebook_problems(definition)]
    try:
        parsed = codebook_from_dict(definition)
    except ContractError as exc:
        return [CodebookProblem(exc.code, "", exc.message)]
    problems = []
    for key in ("name", "version"):
        limit = Codebook._meta.get_field(key).max_length
        if len(getattr(parsed, key)) > limit:
            problems.append(
                CodebookProblem(codes.INVALID_FIELD, key, f"is longer than {limit} characters")
            )
    return problems


def codebook_check(*, definition: Any) -> Any:
    """The parsed codebook, or :class:`CodebookRefused` listing every problem."""
    problems = _problems_of(definition)
    if problems:
        raise CodebookRefused(problems)
    return codebook_from_dict(definition)


def codebook_install(*, definition: Any, file_name: str = "") -> tuple[Codebook, bool]:
    """Store a codebook version. Installing the same content again changes nothing
    (``created`` False); different content under the name and version of a codebook that
    a study uses is refused (:class:`CodebookConflict`), as the database would refuse it;
    an unused version may still be corrected, and is replaced."""
    try:
        parsed = codebook_check(definition=definition)
    except CodebookRefused as exc:
        raise CodebookRefused(exc.problems, file_name=file_name) from None
    digest = canonical_digest(definition)
    fields = {
        "unit": definition["unit"],
        "title": (definition.get("title") or f"{parsed.name} {parsed.version}")[:200],
        "definition": definition,
        "digest": digest,
    }
    try:
        with transaction.atomic():
            return _codebook_store(parsed, fields, file_name)
    except IntegrityError:
        # Another install of this name and version committed between the read and the
        # insert: decide again against what it stored.
        with transaction.atomic():
            return _codebook_store(parsed, fields, file_name)


def _codebook_store(parsed: Any, fields: dict[str, Any], file_name: str) -> tuple[Codebook, bool]:
    existing = (
        Codebook.objects.select_for_update()
        .filter(name=parsed.name, version=parsed.version)
        .first()
    )
    if existing is None:
        return Codebook.objects.create(name=parsed.name, version=parsed.version, **fields), True
    if existing.digest == fields["digest"]:
        return existing, False
    used = list(existing.studies.order_by("slug").values_list("slug", flat=True)[:2])
    if used:
        raise CodebookConflict(
            f"codebook {parsed.name} {parsed.version} is already installed with different "
            f"content and the study {used[0]!r}{' and others' if len(used) > 1 else ''} "
            "uses it: a codebook in use never changes; give the changed file a new version",
            file_name=file_name,
        )
    Codebook.objects.filter(pk=existing.pk).update(**fields)
    existing.refresh_from_db()
    return existing, True


def codebook_install_bytes(*, data: bytes, file_name: str = "") -> tuple[Codebook, bool]:
    """Install a codebook file's bytes (an upload): refused whole with every problem."""
    try:
        definition = codebook_definition_from_bytes(data=data)
    except CodebookRefused as exc:
        raise CodebookRefused(exc.problems, file_name=file_name) from None
    return codebook_install(definition=definition, file_name=file_name)


def codebook_install_file(*, path: Path) -> tuple[Codebook, bool]:
    return codebook_install_bytes(data=path.read_bytes(), file_name=path.name)


def codebooks_install_files(*, paths: Sequence[Path]) -> list[tuple[Codebook, bool]]:
    """Install several files atomically: every file is checked, and if any is refused
    nothing is installed and :class:`CodebookRefused` lists the problems of every bad file."""
    problems: list[CodebookProblem] = []
    installed: list[tuple[Codebook, bool]] = []
    with transaction.atomic():
        for path in paths:
            try:
                with transaction.atomic():
                    installed.append(codebook_install_file(path=path))
            except OSError as exc:
                problems.append(
                    CodebookProblem(UNREADABLE_FILE, str(path), exc.strerror or str(exc))
                )
            except CodebookRefused as exc:
                problems.extend(
                    CodebookProblem(
                        p.code, f"{path.name}: {p.path}" if p.path else path.name, p.message
                    )
                    for p in exc.problems
                )
        if problems:
            transaction.set_rollback(True)
            raise CodebookRefused(problems)
    return installed


def import_size_problem(size: int | None) -> LineProblem | None:
    """The whole-file refusal of a file of ``size`` bytes past the import limit, if any
    (checked before a byte of it is read)."""
    limit = settings.IMPORT_MAX_FILE_BYTES
    if size is None or size <= limit:
        return None
    return LineProblem(
        0,
        codes.FILE_TOO_LARGE,
        f"the file is {size:,} bytes; the limit for one import is {limit:,} bytes: "
        "split it into several files",
    )


def import_batch_start(*, study: Study, file_name: str, size: int | None, user: Any) -> ImportBatch:
    """An unsaved batch for a file; its digest and size are filled as the file is read."""
    return ImportBatch(
        study=study,
        file_name=file_name[:255],
        file_sha256="",
        file_bytes=size or 0,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


def observations_import(
    *, study: Study, data: bytes | BinaryIO, file_name: str, user: Any = None
) -> ImportBatch:
    """Import an observation file (bytes, or a binary file object read from its current
    position) into ``study``, atomically.

    Every line is checked first; if any is bad, nothing is written to the archive and the
    returned batch (status ``rejected``) lists the first bad lines and counts them all.
    Otherwise all observations and tuples are written in one transaction; those already in
    the study (same digests) are counted, not duplicated, so importing a file twice changes
    nothing. A file over ``IMPORT_MAX_FILE_BYTES`` is refused before it is read; the file
    is read line by line, so memory follows the limit and the good observations, never
    the upload (see audit.contract.observations).
    """
    stream = as_stream(data)
    size = stream_size(stream)
    batch = import_batch_start(study=study, file_name=file_name, size=size, user=user)
    if Study.objects.filter(pk=study.pk, freeze__isnull=False).exists():  # partitions' freeze
        return _reject(
            batch,
            [
                LineProblem(
                    0,
                    codes.STUDY_FROZEN,
                    f"study {study.slug} is frozen: its partitions were fixed before test "
                    "labels were opened, so nothing new may enter it; create a new study "
                    "version (the partitions page) and import there",
                )
            ],
            lines=0,
        )
    too_large = import_size_problem(size)
    if too_large is not None:
        return _reject(batch, [too_large], lines=0)

    with gc_paused():  # see gc_paused: nothing the import builds is in a cycle
        return _observations_import(study, batch, HashingReader(stream), size)


#: Observations the import plans and writes at a time while the parse goes on: memory
#: holds a few chunks of parsed lines, whatever the file's size. At 10^5 tuples the
#: command's peak grew by 71 MB with chunks of 1,000, 109 MB with 2,000 (and was no
#: slower: a chunk's statements cost milliseconds).
CHUNK_OBSERVATIONS = 1_000
#: Files of at least this many bytes are parsed and planned by a process of their own on
#: PostgreSQL (:class:`_PlanningProcess`), beside this one's writes; smaller ones, files of
#: unknown size and the embedded default (SQLite) in a thread here (:class:`_PlanningHere`).
#: Starting the process costs about 0.1 s.
PLANNING_PROCESS_BYTES = 4 * 1024 * 1024


def _observations_import(
    study: Study, batch: ImportBatch, reader: HashingReader, size: int | None
) -> ImportBatch:
    """Plan and write the file's good lines in chunks, in one transaction, while the parse
    goes on: the planning (parse, checks, normal forms, digests, the archive rows) runs
    beside this thread's writes, so the database works on a chunk while the next is
    planned. The first bad line (or a header for another codebook, or an observation
    repeated) stops the writing; the parse still reads the whole file and the planning
    goes on, so that every bad line and every repeated observation is counted, and the
    transaction is rolled back: nothing of the file stays. ``answer_pair`` files pair
    lines across the whole file, so they are written after the parse."""
    wanted = (study.codebook.name, study.codebook.version)
    planning = _planning(reader, wanted, size)
    totals = [0, 0, 0]  # observations, tuples created; tuples already present
    writing = rejected = False
    stored = (True, True)
    try:
        with transaction.atomic():
            for rows in planning.chunks():
                if not writing:
                    writing = True
                    batch.status = ImportStatus.IMPORTED
                    batch.save()
                    stored = _stored(study)
                created, tuples, existing, _ = _store(study, batch, rows, stored=stored)
                totals[0] += created
                totals[1] += tuples
                totals[2] += existing
            planned = planning.join()  # the parse has ended; raises what it raised
            reader.drain()
            batch.file_sha256 = reader.hexdigest()
            batch.file_bytes = reader.bytes_read
            if writing and (planned.parsed.error_count or planned.count):
                transaction.set_rollback(True)
                rejected = True
            elif writing:
                batch.lines = planned.parsed.lines_read
                batch.observations_created, batch.tuples_created, batch.tuples_existing = totals
                if totals[0] == 0 and totals[1] == 0:
                    batch.status = ImportStatus.UNCHANGED
                batch.save()
    finally:
        planning.stop()
    if rejected:  # its row went with the rollback
        batch.pk = None
        batch.status = ImportStatus.IMPORTED
    if not writing or rejected:
        if planned.taken:  # lines planned (and rolled back, or refused): decide on them
            return _refused(study, batch, planned, wanted)
        return _import_parsed(study, batch, planned.parsed, wanted)
    return batch


def _planning(
    reader: HashingReader, wanted: tuple[str, str], size: int | None
) -> _PlanningHere | _PlanningProcess:
    """The planning of a file: in a process of its own for a large file on PostgreSQL
    (where one can be started), else here."""
    if connection.vendor == "postgresql" and size is not None and size >= PLANNING_PROCESS_BYTES:
        try:
            return _PlanningProcess(reader, wanted)
        except OSError as exc:
            logger.warning("import planned in the writing process: %s", exc)
    return _PlanningHere(reader, wanted)


class _PlanningHere:
    """The parse in a thread (:class:`~audit.archive.planning.Parser`), the planning of
    each chunk in the writing thread, between its writes."""

    def __init__(self, reader: HashingReader, wanted: tuple[str, str]) -> None:
        self.wanted = wanted
        self.parsed = ObservationFile()
        self.planner = Planner()
        registry = codebook_registry()  # read here: the parse's thread makes no query
        self.parser = Parser(reader, self.parsed, registry, CHUNK_OBSERVATIONS)

    def chunks(self) -> Iterator[ArchiveRows]:
        return plan_chunks(self.parser, self.parsed, self.wanted, CHUNK_OBSERVATIONS, self.planner)

    def join(self) -> Planned:
        self.parser.join()
        planner = self.planner
        return Planned(self.parsed, planner.problems, planner.count, self.parser.taken)

    def stop(self) -> None:
        """Let the parse read to the end, and wait for it."""
        self.parser.stop()


class PlanningProcessError(RuntimeError):
    """The import's planning process stopped before it answered."""


class _PlanningProcess:
    """The parse and the planning in a process of their own (``python -m
    audit.archive.planning``), so that their Python runs on another core than this
    thread's writes, with no interpreter lock between them (a thread here gained nothing:
    docs/benchmarks.md, "Import: fourth round").

    A thread sends it the file in blocks as it is read (``reader`` hashes them); the
    process answers the archive rows of each chunk that may be written, then what it
    found. A pipe holds about one chunk: the file is read as fast as chunks are written,
    so memory stays flat on both sides."""

    BLOCK = 256 * 1024

    def __init__(self, reader: HashingReader, wanted: tuple[str, str]) -> None:
        codebooks = codebook_definitions()  # the process parses them (it makes no query)
        self.process, self.connection, self.answers = module_process("audit.archive.planning")
        self.reader = reader
        self.failure: BaseException | None = None
        self.stopping = threading.Event()
        self.planned: Planned | None = None
        try:
            self.connection.send(
                {"codebooks": codebooks, "wanted": wanted, "chunk": CHUNK_OBSERVATIONS}
            )
        except OSError:
            self.stop()
            raise
        self.feeder = threading.Thread(target=self._feed, name="claimgate-import-feed", daemon=True)
        self.feeder.start()

    def _feed(self) -> None:
        """Send the file's blocks, then an empty one; a process that stopped reading (its
        parse ended early, or it failed) leaves the rest to ``reader.drain``."""
        try:
            while not self.stopping.is_set():
                block = self.reader.read(self.BLOCK)
                self.connection.send_bytes(block)
                if not block:
                    return
        except (BrokenPipeError, ConnectionResetError):
            return
        except BaseException as exc:  # reading the upload failed: raised by join
            self.failure = exc
            self.stopping.set()
            with contextlib.suppress(OSError):
                self.connection.close()

    def _answer(self) -> tuple[str, Any]:
        try:
            return self.answers.recv()
        except (EOFError, OSError) as exc:
            if self.failure is not None:
                raise self.failure from exc
            raise PlanningProcessError(f"the import's planning process stopped: {exc}") from exc

    def chunks(self) -> Iterator[ArchiveRows]:
        while True:
            kind, value = self._answer()
            if kind == "rows":
                yield value
                continue
            if kind == "failed":
                if self.failure is not None:
                    raise self.failure
                raise PlanningProcessError(f"the import's planning failed:\n{value}")
            self.planned = value
            return

    def join(self) -> Planned:
        if self.planned is None:  # the caller stopped taking chunks: read to the end
            for _ in self.chunks():
                pass
        self.feeder.join()
        if self.failure is not None:
            raise self.failure
        assert self.planned is not None
        return self.planned

    def stop(self) -> None:
        """Close the pipes and end the process (done, or the writing failed)."""
        self.stopping.set()
        for end in (self.connection, self.answers):
            with contextlib.suppress(OSError):
                end.close()
        if getattr(self, "feeder", None) is not None:
            self.feeder.join()
        ended(self.process, timeout=5)


def _file_problems(
    study: Study, parsed: ObservationFile, wanted: tuple[str, str]
) -> tuple[list[LineProblem], int, list[dict[str, Any]] | None]:
    """The parser's line errors (counted and grouped over the whole file), else a header
    naming another codebook than the study's."""
    problems = [LineProblem(e.line, e.reason, e.message) for e in parsed.errors]
    count = parsed.error_count
    groups = parsed.error_groups.as_list() if parsed.error_count else None
    header = parsed.header
    if not problems and header is not None and header.codebook_key != wanted:
        got = header.codebook_key
        problems.append(
            LineProblem(
                1,
                codes.CODEBOOK_MISMATCH,
                f"the file is for codebook {got[0]} {got[1]}, but study {study.slug} "
                f"uses {wanted[0]} {wanted[1]}",
            )
        )
        count += 1
    return problems, count, groups


def _refused(
    study: Study, batch: ImportBatch, planned: Planned, wanted: tuple[str, str]
) -> ImportBatch:
    """The refusal of a file some of whose lines were planned before a problem showed."""
    parsed = planned.parsed
    problems, count, groups = _file_problems(study, parsed, wanted)
    if not problems:
        problems, count, groups = planned.problems, planned.count, None
    return _reject(batch, problems, lines=parsed.lines_read, count=count, groups=groups)


def _import_parsed(
    study: Study, batch: ImportBatch, parsed: ObservationFile, wanted: tuple[str, str]
) -> ImportBatch:
    """Check and write a file parsed whole (an ``answer_pair`` file, or one refused
    before a line of it was planned)."""
    problems, count, groups = _file_problems(study, parsed, wanted)
    # Every line read, bad ones included: the numbers the errors name are within it.
    line_count = parsed.lines_read
    units: list[PlannedUnit] = []
    if not problems and parsed.header is not None:
        planner = Planner()
        units = planner.plan(parsed.observations, parsed.lines)
        problems, count, groups = planner.problems, planner.count, None
    if problems:
        return _reject(batch, problems, lines=line_count, count=count, groups=groups)
    with transaction.atomic():
        batch.status = ImportStatus.IMPORTED
        batch.lines = line_count
        batch.save()
        created_observations, created_tuples, existing_tuples, created_pairs = _store(
            study, batch, archive_rows(units, study.codebook.unit), parsed.pairs
        )
        batch.observations_created = created_observations
        batch.tuples_created = created_tuples
        batch.tuples_existing = existing_tuples
        if created_observations == 0 and created_tuples == 0 and created_pairs == 0:
            batch.status = ImportStatus.UNCHANGED
        batch.save()
    return batch


def _reject(
    batch: ImportBatch,
    problems: Sequence[LineProblem],
    *,
    lines: int,
    count: int | None = None,
    groups: list[dict[str, Any]] | None = None,
) -> ImportBatch:
    """Store the refusal: the first problems (STORED_ERRORS_LIMIT), how many there were
    (``count``, when more were counted than kept) and the problems grouped by reason
    (``groups``, counted over every problem by the parser; else from ``problems``)."""
    batch.status = ImportStatus.REJECTED
    batch.lines = lines
    batch.error_count = len(problems) if count is None else count
    batch.errors = [p.as_dict() for p in problems[:STORED_ERRORS_LIMIT]]
    if groups is None:
        grouping = ErrorGroups()
        for problem in problems:
            grouping.add(problem.line, problem.reason, problem.message)
        groups = grouping.as_list()
        if len(groups) == 1:  # one reason (the planner's duplicates): all of them counted
            groups[0]["count"] = batch.error_count
    batch.error_groups = groups
    batch.save()
    return batch


_OBSERVATION_COLUMNS = (
    "study_id",
    "unit_digest",
    "query_id",
    "pipeline_id",
    "answer_id",
    "batch_id",
    "position",
)
_TUPLE_COLUMNS = (
    "study_id",
    "observation_id",
    "digest",
    "query_id",
    "pipeline_id",
    "answer_id",
    "source_id",
    "position",
    "sampling_stratum",
    "inclusion_probability",
)
#: A unit of a tuple codebook is one new tuple: its columns from the tuple's.
_TUPLE_UNIT = (
    Unit,
    {
        "study_id": "study_id",
        "observation_id": "observation_id",
        "tuple_id": "id",
        "digest": "digest",
    },
)


def _store(
    study: Study,
    batch: ImportBatch,
    rows: ArchiveRows,
    pairs: Sequence[tuple[int, int]] = (),
    stored: tuple[bool, bool] | None = None,
) -> tuple[int, int, int, int]:
    """Write the new archive rows, observations, tuples and units of ``rows``
    (:func:`~audit.archive.planning.archive_rows` of a file's units, or of a chunk's);
    return the counts of new observations, new tuples, tuples already present and new
    answer pairs.

    ``pairs``: ``(evaluated, baseline)`` positions in ``rows.units`` (an ``answer_pair``
    file); a pair's unit is created even when both of its observations were imported
    before. ``stored``: whether the study held observations and tuples before this file
    (:func:`_stored`); a chunk of a file need not look up what earlier chunks wrote, as
    the file holds no observation or tuple twice."""
    units = rows.units
    # The first file of a study finds nothing: two cheap probes spare the look-ups.
    any_units, any_tuples = _stored(study) if stored is None else stored
    existing_units = (
        bulk.ids_by(Observation, "unit_digest", [u.digest for u in units], study_id=study.pk)
        if any_units
        else {}
    )
    existing_tuples = (
        bulk.ids_by(Tuple, "digest", [t[0] for u in units for t in u.tuples], study_id=study.pk)
        if any_tuples
        else {}
    )
    new_units = [unit for unit in units if unit.digest not in existing_units]
    if not new_units:
        created_pairs = _create_pair_units(study, units, pairs, existing_units)
        return 0, 0, len(existing_tuples), created_pairs

    new_rows = rows if len(new_units) == len(units) else rows.of({u.digest for u in new_units})
    planned = new_rows.planned
    texts = new_rows.texts or {}  # COPY text made by the planning process
    query_ids = bulk.upsert_rows(
        Query, mapping.QUERY_COLUMNS, new_rows.queries, key="key", texts=texts.get("queries")
    )
    pipeline_ids = bulk.upsert_rows(
        Pipeline,
        mapping.PIPELINE_COLUMNS,
        new_rows.pipelines,
        key="key",
        texts=texts.get("pipelines"),
    )
    answer_ids = bulk.upsert_rows(
        AnswerSnapshot,
        mapping.ANSWER_COLUMNS,
        new_rows.answers,
        key="key",
        texts=texts.get("answers"),
    )
    source_ids = bulk.upsert_rows(
        SourceSnapshot,
        mapping.SOURCE_COLUMNS,
        new_rows.sources,
        key="key",
        texts=texts.get("sources"),
    )
    del new_rows

    study_id = study.pk
    observation_ids = bulk.insert_rows(
        Observation,
        _OBSERVATION_COLUMNS,
        [
            (
                study_id,
                unit.digest,
                query_ids[query],
                pipeline_ids[pipeline],
                answer_ids[answer],
                batch.pk,
                unit.position,
            )
            for unit, query, pipeline, answer, _ in planned
        ],
        returning="unit_digest",
        study_id=study_id,
    )

    tuple_rows = []
    seen = set(existing_tuples)
    for unit, query, pipeline, answer, source_keys in planned:
        observation_id = observation_ids[unit.digest]
        query_id = query_ids[query]
        pipeline_id = pipeline_ids[pipeline]
        answer_id = answer_ids[answer]
        for index, ((digest, stratum, probability), key) in enumerate(
            zip(unit.tuples, source_keys, strict=True)
        ):
            # The same tuple under another answer unit of this study is the same tuple.
            if digest in seen:
                continue
            seen.add(digest)
            tuple_rows.append(
                (
                    study_id,
                    observation_id,
                    digest,
                    query_id,
                    pipeline_id,
                    answer_id,
                    source_ids[key],
                    index,
                    stratum,
                    probability,
                )
            )
    _create_units(study, new_units, observation_ids, tuple_rows)
    created_pairs = _create_pair_units(study, units, pairs, {**existing_units, **observation_ids})
    return len(new_units), len(tuple_rows), len(existing_tuples), created_pairs


def _stored(study: Study) -> tuple[bool, bool]:
    """Whether the study holds observations, and tuples."""
    return (
        Observation.objects.filter(study=study).exists(),
        Tuple.objects.filter(study=study).exists(),
    )


def _create_units(
    study: Study,
    new_units: Sequence[WrittenUnit],
    observation_ids: dict[str, int],
    tuple_rows: Sequence[tuple],
) -> None:
    """Store the new tuples and the units of annotation the study's codebook asks for:
    every new tuple (a tuple codebook: inserted together with the tuples, without their
    ids travelling back), every new complete answer (an answer codebook; a failed
    attempt has nothing to judge and no verdicts), or every new answer with at least one
    document (``query_documents``: a query that retrieved nothing has no document to
    grade; it stays an observation, counted apart). ``answer_pair`` units are made from
    pairs of observations (:func:`_create_pair_units`)."""
    kind = study.codebook.unit
    if kind == CodebookUnit.TUPLE:
        bulk.insert_rows(Tuple, _TUPLE_COLUMNS, tuple_rows, returning=None, derived=_TUPLE_UNIT)
        return
    bulk.insert_rows(Tuple, _TUPLE_COLUMNS, tuple_rows, returning=None)
    if kind == CodebookUnit.ANSWER_PAIR:
        return
    if kind == CodebookUnit.QUERY_DOCUMENTS:
        planned = {
            unit.documents: observation_ids[unit.digest]
            for unit in new_units
            if unit.documents is not None
        }
        # The same documents of the same observation may already be a unit (a file
        # naming them in another source order gives another observation).
        existing = bulk.ids_by(Unit, "digest", list(planned), study_id=study.pk)
        rows = [
            (study.pk, observation_id, digest)
            for digest, observation_id in planned.items()
            if digest not in existing
        ]
    else:
        rows = [
            (study.pk, observation_ids[unit.digest], unit.digest)
            for unit in new_units
            if unit.complete
        ]
    bulk.insert_rows(
        Unit, ("study_id", "observation_id", "digest"), rows, returning=None, study_id=study.pk
    )


def _create_pair_units(
    study: Study,
    units: Sequence[WrittenUnit],
    pairs: Sequence[tuple[int, int]],
    observation_ids: dict[str, int],
) -> int:
    """One ``answer_pair`` unit per pair not yet in the study: the evaluated observation
    and its baseline's (``observation_ids`` by observation unit digest); returns how many
    were created."""
    if not pairs:
        return 0
    planned = {}
    for evaluated, baseline in pairs:
        first = units[evaluated].digest
        second = units[baseline].digest
        digest = answer_pair_digest(evaluated=first, baseline=second)
        planned[digest] = (observation_ids[first], observation_ids[second])
    existing = bulk.ids_by(Unit, "digest", list(planned), study_id=study.pk)
    rows = [
        (study.pk, evaluated, baseline, digest)
        for digest, (evaluated, baseline) in planned.items()
        if digest not in existing
    ]
    bulk.insert_rows(
        Unit,
        ("study_id", "observation_id", "baseline_id", "digest"),
        rows,
        returning=None,
        study_id=study.pk,
    )
    return len(rows)
