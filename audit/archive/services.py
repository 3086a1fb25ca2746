"""Writes to the archive. Every interface (command, API, study page) calls these."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, BinaryIO

from django.conf import settings
from django.db import IntegrityError, transaction

from audit.archive import bulk, mapping
from audit.archive.models import (
    AnswerSnapshot,
    AnswerStatus,
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
from audit.archive.selectors import codebook_registry
from audit.contract import codebook_from_dict, codes, parse_observation_file
from audit.contract.canonical import canonical_digest
from audit.contract.codebook import codebook_problems
from audit.contract.digests import (
    answer_identity_text,
    answer_pair_digest,
    document_order,
    pipeline_identity_text,
    query_documents_digest,
    query_identity_text,
    text_digest,
    unit_digest_from_parts,
)
from audit.contract.errors import ContractError
from audit.contract.observations import MAX_ERRORS, ErrorGroups, ObservationFile, gc_paused
from audit.contract.streams import HashingReader, as_stream, stream_size
from audit.contract.texts import MAX_DEPTH, text_problem

#: How many line errors an import batch keeps for display; the count is always exact.
STORED_ERRORS_LIMIT = MAX_ERRORS


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


@dataclass(frozen=True)
class LineProblem:
    line: int
    reason: str
    message: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "reason": self.reason, "message": self.message}


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
        return _observations_import(study, batch, HashingReader(stream))


#: Observations the import plans and writes at a time while the parse goes on: memory
#: holds a few chunks of parsed lines, whatever the file's size. At 10^5 tuples the
#: command's peak grew by 71 MB with chunks of 1,000, 109 MB with 2,000 (and was no
#: slower: a chunk's statements cost milliseconds).
CHUNK_OBSERVATIONS = 1_000


def _observations_import(study: Study, batch: ImportBatch, reader: HashingReader) -> ImportBatch:
    """Parse in a thread while this one plans and writes the good lines in chunks, in
    one transaction: the database works on a chunk while the parser reads the next. The
    first bad line (or a header for another codebook, or an observation repeated) stops
    the writing; the parse still reads the whole file, so that every bad line is
    counted, and the transaction is rolled back: nothing of the file stays. ``answer_pair``
    files pair lines across the whole file, so they are written after the parse."""
    parsed = ObservationFile()
    parser = _Parser(reader, parsed)
    planner = _Planner()
    wanted = (study.codebook.name, study.codebook.version)
    totals = [0, 0, 0]  # observations, tuples created; tuples already present
    writing = rejected = False
    stored = (True, True)
    taken = 0
    try:
        with transaction.atomic():
            while True:
                finished = parser.done.is_set()
                ready = len(parsed.lines)  # lines are appended after their observations
                if ready - taken < CHUNK_OBSERVATIONS and not (finished and ready > taken):
                    if finished:
                        break
                    parser.done.wait(0.005)
                    continue
                if not _streamable(parsed, wanted):
                    parser.unpace()
                    parser.done.wait()  # the whole-file path below decides
                    break
                end = ready if finished else taken + CHUNK_OBSERVATIONS
                observations = parsed.observations[taken:end]
                lines = parsed.lines[taken:end]
                parsed.observations[taken:end] = [None] * (end - taken)  # freed as written
                taken = parser.taken = end
                units = planner.plan(observations, lines)
                del observations
                if planner.count or parsed.error_count:
                    continue  # keep planning: every repeated observation is counted
                if not writing:
                    writing = True
                    batch.status = ImportStatus.IMPORTED
                    batch.save()
                    bulk.check_references_per_statement()
                    stored = _stored(study)
                created, tuples, existing, _ = _store(study, batch, units, stored=stored)
                totals[0] += created
                totals[1] += tuples
                totals[2] += existing
            parser.join()  # the parse has ended; raises what it raised
            reader.drain()
            batch.file_sha256 = reader.hexdigest()
            batch.file_bytes = reader.bytes_read
            if writing and (parsed.error_count or planner.count):
                transaction.set_rollback(True)
                rejected = True
            elif writing:
                bulk.check_references_at_commit()
                batch.lines = parsed.lines_read
                batch.observations_created, batch.tuples_created, batch.tuples_existing = totals
                if totals[0] == 0 and totals[1] == 0:
                    batch.status = ImportStatus.UNCHANGED
                batch.save()
    finally:
        parser.stop()
    if rejected:  # its row went with the rollback
        batch.pk = None
        batch.status = ImportStatus.IMPORTED
    if not writing or rejected:
        if taken:  # lines planned (and rolled back, or refused): decide on what was found
            return _refused(study, batch, parsed, wanted, planner)
        return _import_parsed(study, batch, parsed, wanted)
    return batch


class _Parser:
    """:func:`parse_observation_file` into ``parsed`` in a thread of its own (the parse
    touches no database); an exception in it is raised again by :meth:`join`.

    The parser reads on while fewer than ``AHEAD`` chunks of good lines wait to be taken
    (``taken``, set by the importing thread), so memory holds a few chunks whatever the
    file's size; :meth:`unpace` lets it read the rest at once (a file parsed whole)."""

    AHEAD = 2

    def __init__(self, reader: HashingReader, parsed: ObservationFile) -> None:
        self.done = threading.Event()
        self.failure: BaseException | None = None
        self.taken = 0
        self.paced = True
        registry = codebook_registry()  # read here: the thread makes no query
        limit = self.AHEAD * CHUNK_OBSERVATIONS
        lines = parsed.lines

        def read(size: int = -1) -> bytes:
            while self.paced and len(lines) - self.taken >= limit:
                time.sleep(0.005)
            return reader.read(size)

        paced = SimpleNamespace(read=read)

        def run() -> None:
            try:
                parse_observation_file(paced, registry, into=parsed)  # type: ignore[arg-type]
            except BaseException as exc:  # handed to the importing thread
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


def _streamable(parsed: ObservationFile, wanted: tuple[str, str]) -> bool:
    """Whether the lines parsed so far may be written before the parse ends: a header
    for the study's codebook, no bad line yet, and not an ``answer_pair`` file."""
    header = parsed.header
    return (
        header is not None
        and header.codebook_key == wanted
        and parsed.codebook is not None
        and parsed.codebook.unit != CodebookUnit.ANSWER_PAIR
        and not parsed.error_count
    )


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
    study: Study,
    batch: ImportBatch,
    parsed: ObservationFile,
    wanted: tuple[str, str],
    planner: _Planner,
) -> ImportBatch:
    """The refusal of a file some of whose lines were planned before a problem showed."""
    problems, count, groups = _file_problems(study, parsed, wanted)
    if not problems:
        problems, count, groups = planner.problems, planner.count, None
    return _reject(batch, problems, lines=parsed.lines_read, count=count, groups=groups)


def _import_parsed(
    study: Study, batch: ImportBatch, parsed: ObservationFile, wanted: tuple[str, str]
) -> ImportBatch:
    """Check and write a file parsed whole (an ``answer_pair`` file, or one refused
    before a line of it was planned)."""
    problems, count, groups = _file_problems(study, parsed, wanted)
    # Every line read, bad ones included: the numbers the errors name are within it.
    line_count = parsed.lines_read
    units: list[_Unit] = []
    if not problems and parsed.header is not None:
        planner = _Planner()
        units = planner.plan(parsed.observations, parsed.lines)
        problems, count, groups = planner.problems, planner.count, None
    if problems:
        return _reject(batch, problems, lines=line_count, count=count, groups=groups)
    with transaction.atomic():
        batch.status = ImportStatus.IMPORTED
        batch.lines = line_count
        batch.save()
        created_observations, created_tuples, existing_tuples, created_pairs = _store(
            study, batch, units, parsed.pairs
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


@dataclass
class _Unit:
    """One observation line on its way into the archive, in its normal form.

    ``answer_key`` and ``pipeline_text`` are filled when the planner has them (the
    archive key of ``answer``; the canonical identity text of the pipeline, whose digest is
    the pipeline's archive key); otherwise :func:`_store` computes them."""

    position: int
    digest: str
    observation: dict[str, Any]
    answer: dict[str, Any]
    sources: list[dict[str, Any]]
    answer_key: str = ""
    pipeline_text: str = ""


class _Planner:
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

    def plan(self, observations: Sequence[dict], lines: Sequence[int]) -> list[_Unit]:
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
                _Unit(
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
    units: Sequence[_Unit],
    pairs: Sequence[tuple[int, int]] = (),
    stored: tuple[bool, bool] | None = None,
) -> tuple[int, int, int, int]:
    """Write the new archive rows, observations, tuples and units; return the counts of
    new observations, new tuples, tuples already present and new answer pairs.

    ``pairs``: ``(evaluated, baseline)`` positions in ``units`` (an ``answer_pair`` file);
    a pair's unit is created even when both of its observations were imported before.
    ``stored``: whether the study held observations and tuples before this file
    (:func:`_stored`); a chunk of a file need not look up what earlier chunks wrote, as
    the file holds no observation or tuple twice."""
    # The first file of a study finds nothing: two cheap probes spare the look-ups.
    any_units, any_tuples = _stored(study) if stored is None else stored
    existing_units = (
        bulk.ids_by(Observation, "unit_digest", [u.digest for u in units], study_id=study.pk)
        if any_units
        else {}
    )
    existing_tuples = (
        bulk.ids_by(
            Tuple,
            "digest",
            [s["tuple_digest"] for u in units for s in u.observation.get("sources", ())],
            study_id=study.pk,
        )
        if any_tuples
        else {}
    )
    new_units = [unit for unit in units if unit.digest not in existing_units]
    if not new_units:
        created_pairs = _create_pair_units(study, units, pairs, existing_units)
        return 0, 0, len(existing_tuples), created_pairs

    # One pass over the new units: each archive row once per key (a file may repeat a
    # query, a pipeline or a source), and each unit's keys in file order.
    queries: dict[str, tuple] = {}
    pipelines: dict[str, tuple] = {}
    answers: dict[str, tuple] = {}
    sources: dict[str, tuple] = {}
    pipeline_keys: dict[str, str] = {}
    planned = []
    for unit in new_units:
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
        planned.append((unit, query[0], pipeline[0], answer[0], source_keys))
    query_ids = bulk.upsert_rows(Query, mapping.QUERY_COLUMNS, list(queries.values()), key="key")
    pipeline_ids = bulk.upsert_rows(
        Pipeline, mapping.PIPELINE_COLUMNS, list(pipelines.values()), key="key"
    )
    answer_ids = bulk.upsert_rows(
        AnswerSnapshot, mapping.ANSWER_COLUMNS, list(answers.values()), key="key"
    )
    source_ids = bulk.upsert_rows(
        SourceSnapshot, mapping.SOURCE_COLUMNS, list(sources.values()), key="key"
    )
    del queries, pipelines, answers, sources

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
        for index, (source, key) in enumerate(
            zip(unit.observation.get("sources", ()), source_keys, strict=True)
        ):
            # The same tuple under another answer unit of this study is the same tuple.
            digest = source["tuple_digest"]
            if digest in seen:
                continue
            seen.add(digest)
            sampling = source.get("sampling") or {}
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
                    sampling.get("stratum"),
                    sampling.get("inclusion_probability"),
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
    new_units: Sequence[_Unit],
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
            _documents_digest(unit): observation_ids[unit.digest]
            for unit in new_units
            if unit.answer["status"] == AnswerStatus.COMPLETE and unit.sources
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
            if unit.answer["status"] == AnswerStatus.COMPLETE
        ]
    bulk.insert_rows(
        Unit, ("study_id", "observation_id", "digest"), rows, returning=None, study_id=study.pk
    )


def _documents_digest(unit: _Unit) -> str:
    """The ``query_documents`` unit digest of an observation: its sources in rank order."""
    observation = unit.observation
    return query_documents_digest(
        query=observation["query"],
        answer=unit.answer,
        document_digests=[unit.sources[index]["digest"] for index in document_order(unit.sources)],
        pipeline=observation["pipeline"],
    )


def _create_pair_units(
    study: Study,
    units: Sequence[_Unit],
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
