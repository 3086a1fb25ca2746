"""Import a records file (a release's ``records.jsonl``) into a study: the round trip.

Line 1 is the header ``{"claimgate": "records", "format_version": 1, "codebook": {...}}``,
every later line one record (docs/formats.md). Atomic, like the observation import: every
record is checked with the record checker first and nothing is written unless all pass.
Then the archive rows, tuples and units are recreated from the records' snapshots with the
observation import's own bulk writer, and each record becomes a Label of its kind
(independent, consensus or adjudicated) with its original record digest and parents, so it
re-checks to the same digest.

Imported labels have **no user**: ``Label.annotator`` is NULL, and the annotator is known
only by the pseudonym inside the annotation, which is kept as it was. The queue hands an
imported unit out only if it has fewer distinct annotators than the study's k.

For a tuple codebook a record carries one source of its answer, so the observation that
groups an answer's tuples is rebuilt from the sources the file holds (ordered by rank):
the tuple digests — what every record refers to — are exact, the observation's own unit
digest may differ from the original one when the release did not include every source.
A record digest is unique in an instance: a file whose records already belong to another
study of this instance is refused (``record_exists``); importing a file twice into the
same study changes nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from django.db import transaction
from django.utils import timezone

from annotator.adjudication.services import labels_agree
from annotator.labelling.models import Label, LabelKind
from audit.archive import bulk, mapping
from audit.archive.models import CodebookUnit, ImportBatch, ImportStatus, Study, Unit, UnitState
from audit.archive.planning import PlannedUnit, archive_rows
from audit.archive.selectors import codebook_registry
from audit.archive.services import (
    STORED_ERRORS_LIMIT,
    LineProblem,
    _reject,
    _store,
    import_batch_start,
    import_size_problem,
)
from audit.contract import check_record, codes
from audit.contract.digests import tuple_digest, unit_digest
from audit.contract.errors import ContractError
from audit.contract.observations import MAX_LINE_BYTES, decode_line
from audit.contract.streams import HashingReader, as_stream, read_lines, stream_size
from audit.ledger.chain import ledger_append
from audit.queueing import STUDY_REPORT_REFRESH, queue_gate_refresh, queue_job_once

RECORD_EXISTS = "record_exists"
TEXTS_WITHHELD = "texts_withheld"
INVALID_HEADER = "invalid_header"


@dataclass
class RecordsImport:
    batch: ImportBatch
    labels_created: int = 0
    labels_existing: int = 0
    problems: list[LineProblem] = field(default_factory=list)


def _header_problem(header: Any, study: Study) -> LineProblem | None:
    if not isinstance(header, dict) or header.get("claimgate") != "records":
        return LineProblem(1, INVALID_HEADER, "line 1 is not a records header")
    if header.get("format_version") != 1:
        return LineProblem(1, INVALID_HEADER, "only records format_version 1 is known")
    if header.get("texts_withheld"):
        return LineProblem(
            1,
            TEXTS_WITHHELD,
            "this release withheld its snapshot texts: records without texts cannot be "
            "imported (their digests cannot be re-checked)",
        )
    ref = header.get("codebook")
    if not isinstance(ref, dict):
        return LineProblem(1, INVALID_HEADER, "the header names no codebook")
    got = (ref.get("name"), ref.get("version"))
    wanted = (study.codebook.name, study.codebook.version)
    if got != wanted or ref.get("digest", study.codebook.digest) != study.codebook.digest:
        return LineProblem(
            1,
            codes.CODEBOOK_MISMATCH,
            f"the file is for codebook {got[0]} {got[1]}, but study {study.slug} uses "
            f"{wanted[0]} {wanted[1]} (or the same version with other content)",
        )
    return None


def records_import(
    *, study: Study, data: bytes | BinaryIO, file_name: str, user: Any = None
) -> RecordsImport:
    """Import a records file (bytes, or a binary file object read from its current
    position). Refused before reading when it is over ``IMPORT_MAX_FILE_BYTES``; read line
    by line (a line over the limit is skipped, not held), keeping the first
    ``STORED_ERRORS_LIMIT`` problems and counting the rest."""
    stream = as_stream(data)
    size = stream_size(stream)
    batch = import_batch_start(study=study, file_name=file_name, size=size, user=user)
    too_large = import_size_problem(size)
    if too_large is not None:
        return RecordsImport(_reject(batch, [too_large], lines=0), problems=[too_large])
    if study.codebook.unit not in (CodebookUnit.TUPLE, CodebookUnit.ANSWER):
        # Their units span two observations (a pair) or reorder sources (documents by
        # rank); rebuilding them from records is not written yet, and must not be guessed.
        unsupported = LineProblem(
            0,
            codes.UNKNOWN_FORMAT,
            f"records of {study.codebook.unit} units cannot be imported into a study yet: "
            "import the observation file instead",
        )
        return RecordsImport(_reject(batch, [unsupported], lines=0), problems=[unsupported])
    reader = HashingReader(stream)
    problems: list[LineProblem] = []
    count = 0

    def refuse(problem: LineProblem) -> None:
        nonlocal count
        count += 1
        if len(problems) < STORED_ERRORS_LIMIT:
            problems.append(problem)

    records: list[tuple[int, dict[str, Any], Any]] = []
    registry = codebook_registry()
    lines = 0
    for number, line in read_lines(reader, max_line_bytes=MAX_LINE_BYTES):
        lines = number
        try:
            value = decode_line(line)
        except ContractError as exc:
            refuse(LineProblem(number, exc.code, exc.message))
            continue
        if number == 1:
            problem = _header_problem(value, study)
            if problem is not None:
                refuse(problem)
                break
            continue
        result = check_record(value, registry)
        if not result.ok:
            refuse(LineProblem(number, result.reason or "refused", result.message or ""))
            continue
        if (value["codebook"]["name"], value["codebook"]["version"]) != (
            study.codebook.name,
            study.codebook.version,
        ):
            refuse(LineProblem(number, codes.CODEBOOK_MISMATCH, "record of another codebook"))
            continue
        records.append((number, value, result))
    reader.drain()
    batch.file_sha256 = reader.hexdigest()
    batch.file_bytes = reader.bytes_read
    if not problems and not records:
        refuse(LineProblem(1, codes.EMPTY_FILE, "the file holds no record"))
    existing: dict[str, int] = {}
    if not problems:
        digests = [record["record_digest"] for _, record, _ in records]
        found = bulk.ids_by(Label, "record_digest", digests)
        in_study = bulk.ids_by(Label, "record_digest", list(found), study_id=study.pk)
        for number, record, _ in records:
            digest = record["record_digest"]
            if digest in found and digest not in in_study:
                refuse(
                    LineProblem(
                        number,
                        RECORD_EXISTS,
                        f"record {digest} already belongs to another study of this instance "
                        "(a record digest is unique in an instance)",
                    )
                )
        existing = in_study
    if problems:
        rejected = _reject(batch, problems, lines=lines, count=count)
        return RecordsImport(rejected, problems=problems)
    with transaction.atomic():
        batch.status = ImportStatus.IMPORTED
        batch.lines = lines
        batch.save()
        units = _plan(study, records)
        created_obs, created_tuples, existing_tuples, _ = _store(
            study, batch, archive_rows(units, study.codebook.unit)
        )
        fresh = [item for item in records if item[1]["record_digest"] not in existing]
        created = _labels_store(study, fresh)
        batch.observations_created = created_obs
        batch.tuples_created = created_tuples
        batch.tuples_existing = existing_tuples
        if not created and not created_obs and not created_tuples:
            batch.status = ImportStatus.UNCHANGED
        batch.save()
    if created:
        queue_job_once(STUDY_REPORT_REFRESH, study.pk)
        queue_gate_refresh(study.pk)
    return RecordsImport(batch, labels_created=created, labels_existing=len(existing))


def _source_of(record: dict[str, Any], source: dict[str, Any]) -> dict[str, Any]:
    out = dict(source)
    out["tuple_digest"] = _tuple_digest(record, source)
    return out


def _tuple_digest(record: dict[str, Any], source: dict[str, Any]) -> str:
    return tuple_digest(
        query=record["query"],
        source_digest=source["digest"],
        answer_digest=record["answer"]["digest"],
        pipeline=record["pipeline"],
    )


def _plan(study: Study, records: list[tuple[int, dict[str, Any], Any]]) -> list[PlannedUnit]:
    """One planned observation per answer unit, in the form the observation import
    stores (audit.archive.services._store)."""
    groups: dict[str, dict[str, Any]] = {}
    for number, record, _ in records:
        answer = mapping.answer_normal(record["answer"])
        if study.codebook.unit == CodebookUnit.TUPLE:
            key = "\x00".join(
                (
                    mapping.archive_key(mapping.query_normal(record["query"])),
                    mapping.archive_key(mapping.pipeline_normal(record["pipeline"])),
                    mapping.archive_key(answer),
                )
            )
            source = {**record["source"], "sampling": record.get("sampling")}
            sources = [{**source, "tuple_digest": record["tuple_digest"]}]
        else:
            key = record["unit_digest"]
            sources = [_source_of(record, s) for s in record["sources"]]
        group = groups.setdefault(
            key, {"position": number, "record": record, "answer": answer, "sources": {}}
        )
        for source in sources:
            group["sources"].setdefault(source["tuple_digest"], source)
    units = []
    for key, group in groups.items():
        record = group["record"]
        sources = list(group["sources"].values())
        if study.codebook.unit == CodebookUnit.TUPLE:
            sources.sort(key=lambda s: (s.get("rank") is None, s.get("rank") or 0, s["digest"]))
            digest = unit_digest(
                query=record["query"],
                answer=group["answer"],
                source_digests=[s["digest"] for s in sources],
                pipeline=record["pipeline"],
            )
        else:
            digest = key
        observation = {
            "query": record["query"],
            "pipeline": record["pipeline"],
            "answer": record["answer"],
            "sources": sources,
        }
        units.append(
            PlannedUnit(
                group["position"],
                digest,
                observation,
                group["answer"],
                [mapping.source_normal(s) for s in sources],
            )
        )
    return units


def _labels_store(study: Study, records: list[tuple[int, dict[str, Any], Any]]) -> int:
    """Labels of the records, their units' counts and states, and their ledger outcomes."""
    if not records:
        return 0
    tuple_unit = study.codebook.unit == CodebookUnit.TUPLE
    unit_digests = [
        record["tuple_digest"] if tuple_unit else record["unit_digest"] for _, record, _ in records
    ]
    unit_ids = bulk.ids_by(Unit, "digest", unit_digests, study_id=study.pk)
    revisions: dict[str, int] = {}
    final_revision: dict[tuple[int, str], int] = defaultdict(int)
    rows = []
    now = timezone.now()
    for (_, record, _), digest in zip(records, unit_digests, strict=True):
        annotation = record["annotation"]
        kind = annotation["kind"]
        unit_id = unit_ids[digest]
        if kind == LabelKind.INDEPENDENT:
            parents = record["parents"]
            revision = revisions.get(parents[0], 0) + 1 if parents else 1
            revisions[record["record_digest"]] = revision
        else:
            final_revision[(unit_id, kind)] += 1
            revision = final_revision[(unit_id, kind)]
        assisted = annotation.get("assisted")
        rows.append(
            {
                "study_id": study.pk,
                "unit_id": unit_id,
                "annotator_id": None,
                "assignment_id": None,
                "kind": kind,
                "revision": revision,
                "annotation": annotation,
                "parents": record["parents"],
                "record_digest": record["record_digest"],
                "codebook_digest": study.codebook.digest,
                "client_submission_id": None,
                "assisted_model": assisted.get("model") if isinstance(assisted, dict) else None,
                "created_at": now,
            }
        )
    bulk.insert(Label, rows, returning="record_digest", study_id=study.pk)
    _units_update(study, rows, labels_agree)
    for (_, record, result), row in zip(records, rows, strict=True):
        ledger_append(
            study=study,
            unit=Unit(pk=row["unit_id"]),
            unit_digest=record["tuple_digest"] if tuple_unit else record["unit_digest"],
            result=result,
            kind=row["kind"],
        )
    return len(rows)


def _units_update(study: Study, rows: list[dict[str, Any]], labels_agree: Any) -> None:
    """Each imported unit's counts and adjudication state, from its labels: adjudicated,
    agreed (a consensus record), disputed (k annotators who disagree) or partially
    labelled. A few UPDATEs, one per distinct (state, count)."""
    heads: dict[int, dict[str, dict[str, Any]]] = defaultdict(dict)
    finals: dict[int, set[str]] = defaultdict(set)
    for row in rows:
        if row["kind"] == "independent":
            heads[row["unit_id"]][str(row["annotation"].get("annotator"))] = row["annotation"]
        else:
            finals[row["unit_id"]].add(row["kind"])
    groups: dict[tuple[str, int], list[int]] = defaultdict(list)
    for unit_id in set(heads) | set(finals):
        annotations = list(heads[unit_id].values())
        if "adjudicated" in finals[unit_id]:
            state = UnitState.ADJUDICATED
        elif "consensus" in finals[unit_id]:
            state = UnitState.AGREED
        elif len(annotations) >= study.overlap and not labels_agree(
            annotations, study.codebook.unit, study.codebook.definition
        ):
            state = UnitState.DISPUTED
        else:
            state = UnitState.PARTIALLY_LABELLED
        groups[(state, len(annotations))].append(unit_id)
    for (state, count), ids in groups.items():
        for start in range(0, len(ids), bulk.BATCH):
            Unit.objects.filter(pk__in=ids[start : start + bulk.BATCH]).update(
                state=state, submitted_count=count, assigned_count=count
            )
