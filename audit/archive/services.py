"""Writes to the archive. Every interface (command, API, study page) calls these."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from django.conf import settings
from django.db import transaction

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
from audit.contract.digests import (
    answer_identity_text,
    pipeline_identity_text,
    query_identity_text,
    text_digest,
    unit_digest_from_parts,
)
from audit.contract.observations import MAX_ERRORS, ErrorGroups, gc_paused
from audit.contract.streams import HashingReader, as_stream, stream_size

#: How many line errors an import batch keeps for display; the count is always exact.
STORED_ERRORS_LIMIT = MAX_ERRORS


class CodebookConflict(Exception):
    """A codebook with this name and version exists with different content."""


def codebook_install(*, definition: dict[str, Any]) -> tuple[Codebook, bool]:
    """Store a codebook version; installing the same file twice changes nothing."""
    parsed = codebook_from_dict(definition)  # validates weights, keys, unit
    digest = canonical_digest(definition)
    existing = Codebook.objects.filter(name=parsed.name, version=parsed.version).first()
    if existing is not None:
        if existing.digest != digest:
            raise CodebookConflict(
                f"codebook {parsed.name} {parsed.version} already exists with different "
                "content; a changed codebook needs a new version"
            )
        return existing, False
    row = Codebook.objects.create(
        name=parsed.name,
        version=parsed.version,
        unit=definition["unit"],
        title=definition.get("title") or f"{parsed.name} {parsed.version}",
        definition=definition,
        digest=digest,
    )
    return row, True


def codebook_install_file(*, path: Path) -> tuple[Codebook, bool]:
    return codebook_install(definition=json.loads(path.read_text(encoding="utf-8")))


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


def _observations_import(study: Study, batch: ImportBatch, reader: HashingReader) -> ImportBatch:
    parsed = parse_observation_file(reader, codebook_registry())
    reader.drain()
    batch.file_sha256 = reader.hexdigest()
    batch.file_bytes = reader.bytes_read
    problems = [LineProblem(e.line, e.reason, e.message) for e in parsed.errors]
    count = parsed.error_count
    header = parsed.header
    if not problems and header is not None:
        wanted = (study.codebook.name, study.codebook.version)
        got = header.codebook_key
        if got != wanted:
            problems.append(
                LineProblem(
                    1,
                    codes.CODEBOOK_MISMATCH,
                    f"the file is for codebook {got[0]} {got[1]}, but study {study.slug} "
                    f"uses {wanted[0]} {wanted[1]}",
                )
            )
            count += 1
    # Every line read, bad ones included: the numbers the errors name are within it.
    line_count = parsed.lines_read
    groups = parsed.error_groups.as_list() if parsed.error_count else None
    units: list[_Unit] = []
    if not problems:
        units, problems, count = _plan_units(parsed.observations, parsed.lines)
        groups = None
    if problems:
        return _reject(batch, problems, lines=line_count, count=count, groups=groups)
    with transaction.atomic():
        batch.status = ImportStatus.IMPORTED
        batch.lines = line_count
        batch.save()
        created_observations, created_tuples, existing_tuples = _store(study, batch, units)
        batch.observations_created = created_observations
        batch.tuples_created = created_tuples
        batch.tuples_existing = existing_tuples
        if created_observations == 0 and created_tuples == 0:
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


def _plan_units(
    observations: Sequence[dict], lines: Sequence[int]
) -> tuple[list[_Unit], list[LineProblem], int]:
    """Normalize each line and compute its unit digest (over the answer as the archive
    will store it); refuse a file that holds the same observation twice.

    The unit digest is assembled from the identity texts of its parts (same bytes as
    :func:`audit.contract.digests.unit_digest`); the answer's text is also the input of
    its archive key, so the answer is serialized once."""
    units = []
    problems = []
    count = 0
    first_line: dict[str, int] = {}
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
            count += 1
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
    return units, problems, count


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
#: A unit of the ``source-risk`` codebook is one new tuple: its columns from the tuple's.
_TUPLE_UNIT = (
    Unit,
    {
        "study_id": "study_id",
        "observation_id": "observation_id",
        "tuple_id": "id",
        "digest": "digest",
    },
)


def _store(study: Study, batch: ImportBatch, units: Sequence[_Unit]) -> tuple[int, int, int]:
    # The first file of a study finds nothing: two cheap probes spare the look-ups.
    existing_units = (
        bulk.ids_by(Observation, "unit_digest", [u.digest for u in units], study_id=study.pk)
        if Observation.objects.filter(study=study).exists()
        else {}
    )
    existing_tuples = (
        bulk.ids_by(
            Tuple,
            "digest",
            [s["tuple_digest"] for u in units for s in u.observation.get("sources", ())],
            study_id=study.pk,
        )
        if Tuple.objects.filter(study=study).exists()
        else {}
    )
    new_units = [unit for unit in units if unit.digest not in existing_units]
    if not new_units:
        return 0, 0, len(existing_tuples)

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
    return len(new_units), len(tuple_rows), len(existing_tuples)


def _create_units(
    study: Study,
    new_units: Sequence[_Unit],
    observation_ids: dict[str, int],
    tuple_rows: Sequence[tuple],
) -> None:
    """Store the new tuples and the units of annotation the study's codebook asks for:
    every new tuple (``source-risk``: inserted together with the tuples, without their
    ids travelling back), or every new complete answer (``answer-claims``; a failed
    attempt has nothing to judge and no verdicts)."""
    if study.codebook.unit == CodebookUnit.TUPLE:
        bulk.insert_rows(Tuple, _TUPLE_COLUMNS, tuple_rows, returning=None, derived=_TUPLE_UNIT)
        return
    bulk.insert_rows(Tuple, _TUPLE_COLUMNS, tuple_rows, returning=None)
    rows = [
        (study.pk, observation_ids[unit.digest], unit.digest)
        for unit in new_units
        if unit.answer["status"] == AnswerStatus.COMPLETE
    ]
    bulk.insert_rows(
        Unit, ("study_id", "observation_id", "digest"), rows, returning=None, study_id=study.pk
    )
