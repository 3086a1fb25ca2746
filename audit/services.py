"""Writes to the archive. Every interface (command, API, study page) calls these."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from audit import archive, bulk
from audit.contract import codes
from audit.contract.canonical import canonical_digest
from audit.contract.digests import unit_digest
from audit.models import (
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
    StudyFreeze,
    Tuple,
    Unit,
)
from audit.selectors import codebook_registry

#: How many line errors an import batch keeps for display; the count is always exact.
STORED_ERRORS_LIMIT = 10_000


class CodebookConflict(Exception):
    """A codebook with this name and version exists with different content."""


def codebook_install(*, definition: dict[str, Any]) -> tuple[Codebook, bool]:
    """Store a codebook version; installing the same file twice changes nothing."""
    from audit.contract import codebook_from_dict  # validates weights, keys, unit

    parsed = codebook_from_dict(definition)
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


def observations_import(
    *, study: Study, data: bytes, file_name: str, user: Any = None
) -> ImportBatch:
    """Import an observation file into ``study``, atomically.

    Every line is checked first; if any is bad, nothing is written to the archive and the
    returned batch (status ``rejected``) lists every bad line. Otherwise all observations
    and tuples are written in one transaction; those already in the study (same digests)
    are counted, not duplicated, so importing a file twice changes nothing.
    """
    from audit.contract import parse_observation_file

    batch = ImportBatch(
        study=study,
        file_name=file_name[:255],
        file_sha256=hashlib.sha256(data).hexdigest(),
        file_bytes=len(data),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    if StudyFreeze.objects.filter(study=study).exists():
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
    limit = settings.IMPORT_MAX_FILE_BYTES
    if len(data) > limit:
        return _reject(
            batch,
            [
                LineProblem(
                    0,
                    codes.LINE_TOO_LONG,
                    f"the file is {len(data):,} bytes; the limit for one import is "
                    f"{limit:,} bytes: split it into several files",
                )
            ],
            lines=0,
        )

    parsed = parse_observation_file(data, codebook_registry())
    problems = [LineProblem(e.line, e.reason, e.message) for e in parsed.errors]
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
    line_count = len(parsed.observations) + 1
    units: list[_Unit] = []
    if not problems:
        units, problems = _plan_units(parsed.observations, parsed.lines)
    if problems:
        return _reject(batch, problems, lines=line_count)
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


def _reject(batch: ImportBatch, problems: Sequence[LineProblem], *, lines: int) -> ImportBatch:
    batch.status = ImportStatus.REJECTED
    batch.lines = lines
    batch.error_count = len(problems)
    batch.errors = [p.as_dict() for p in problems[:STORED_ERRORS_LIMIT]]
    batch.save()
    return batch


@dataclass
class _Unit:
    """One observation line on its way into the archive, in its normal form."""

    position: int
    digest: str
    observation: dict[str, Any]
    answer: dict[str, Any]
    sources: list[dict[str, Any]]


def _plan_units(
    observations: Sequence[dict], lines: Sequence[int]
) -> tuple[list[_Unit], list[LineProblem]]:
    """Normalize each line and compute its unit digest (over the answer as the archive
    will store it); refuse a file that holds the same observation twice."""
    units = []
    problems = []
    first_line: dict[str, int] = {}
    for position, observation in zip(lines, observations, strict=True):
        answer = archive.answer_normal(observation["answer"])
        sources = [archive.source_normal(s) for s in observation.get("sources", ())]
        digest = unit_digest(
            query=observation["query"],
            answer=answer,
            source_digests=[source["digest"] for source in sources],
            pipeline=observation["pipeline"],
        )
        if digest in first_line:
            problems.append(
                LineProblem(
                    position,
                    codes.DUPLICATE_OBSERVATION,
                    f"this observation repeats line {first_line[digest]} (same query, answer "
                    "snapshot, sources and pipeline)",
                )
            )
            continue
        first_line[digest] = position
        units.append(_Unit(position, digest, observation, answer, sources))
    return units, problems


def _store(study: Study, batch: ImportBatch, units: Sequence[_Unit]) -> tuple[int, int, int]:
    existing_units = bulk.ids_by(
        Observation, "unit_digest", [u.digest for u in units], study_id=study.pk
    )
    tuple_digests = [s["tuple_digest"] for u in units for s in u.observation.get("sources", ())]
    existing_tuples = bulk.ids_by(Tuple, "digest", tuple_digests, study_id=study.pk)
    new_units = [unit for unit in units if unit.digest not in existing_units]
    if not new_units:
        return 0, 0, len(existing_tuples)

    queries = [
        archive.query_columns(archive.query_normal(u.observation["query"])) for u in new_units
    ]
    pipelines = [
        archive.pipeline_columns(archive.pipeline_normal(u.observation["pipeline"]))
        for u in new_units
    ]
    answers = [archive.answer_columns(u.answer) for u in new_units]
    sources = [[archive.source_columns(s) for s in u.sources] for u in new_units]
    query_ids = bulk.upsert(Query, _unique(queries), key="key")
    pipeline_ids = bulk.upsert(Pipeline, _unique(pipelines), key="key")
    answer_ids = bulk.upsert(AnswerSnapshot, _unique(answers), key="key")
    source_ids = bulk.upsert(SourceSnapshot, _unique(r for rs in sources for r in rs), key="key")

    observation_ids = bulk.insert(
        Observation,
        [
            {
                "study_id": study.pk,
                "unit_digest": unit.digest,
                "query_id": query_ids[query["key"]],
                "pipeline_id": pipeline_ids[pipeline["key"]],
                "answer_id": answer_ids[answer["key"]],
                "batch_id": batch.pk,
                "position": unit.position,
            }
            for unit, query, pipeline, answer in zip(
                new_units, queries, pipelines, answers, strict=True
            )
        ],
        returning="unit_digest",
        study_id=study.pk,
    )

    tuple_rows = []
    seen = set(existing_tuples)
    for unit, query, pipeline, answer, source_rows in zip(
        new_units, queries, pipelines, answers, sources, strict=True
    ):
        for index, (source, row) in enumerate(
            zip(unit.observation.get("sources", ()), source_rows, strict=True)
        ):
            # The same tuple under another answer unit of this study is the same tuple.
            if source["tuple_digest"] in seen:
                continue
            seen.add(source["tuple_digest"])
            sampling = source.get("sampling") or {}
            tuple_rows.append(
                {
                    "study_id": study.pk,
                    "observation_id": observation_ids[unit.digest],
                    "digest": source["tuple_digest"],
                    "query_id": query_ids[query["key"]],
                    "pipeline_id": pipeline_ids[pipeline["key"]],
                    "answer_id": answer_ids[answer["key"]],
                    "source_id": source_ids[row["key"]],
                    "position": index,
                    "sampling_stratum": sampling.get("stratum"),
                    "inclusion_probability": sampling.get("inclusion_probability"),
                }
            )
    tuple_ids = bulk.insert(Tuple, tuple_rows, returning="digest", study_id=study.pk)
    _create_units(study, new_units, observation_ids, tuple_rows, tuple_ids)
    return len(new_units), len(tuple_rows), len(existing_tuples)


def _create_units(
    study: Study,
    new_units: Sequence[_Unit],
    observation_ids: dict[str, int],
    tuple_rows: Sequence[dict[str, Any]],
    tuple_ids: dict[str, int],
) -> None:
    """The units of annotation the study's codebook asks for: every new tuple
    (``source-risk``), or every new complete answer (``answer-claims``; a failed attempt
    has nothing to judge and no verdicts)."""
    if study.codebook.unit == CodebookUnit.TUPLE:
        rows = [
            {
                "study_id": study.pk,
                "observation_id": row["observation_id"],
                "tuple_id": tuple_ids[row["digest"]],
                "digest": row["digest"],
            }
            for row in tuple_rows
        ]
    else:
        rows = [
            {
                "study_id": study.pk,
                "observation_id": observation_ids[unit.digest],
                "digest": unit.digest,
            }
            for unit in new_units
            if unit.answer["status"] == AnswerStatus.COMPLETE
        ]
    bulk.insert(Unit, rows, returning="digest", study_id=study.pk)


def _unique(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per archive key (a file may repeat a query, a pipeline or a source)."""
    return list({row["key"]: row for row in rows}.values())
