"""Releases: frozen, immutable, verifiable label sets of a study (DESIGN.md, "Releases").

``release_create`` names a release (refusing a name that exists), ``release_build_run``
writes its bundle under ``RELEASES_ROOT/<slug>/<name>/`` and marks it ready with its files
and manifest (once), ``release_build`` does both at once. The bundle is written in one
streamed pass over the study's units (ordered by digest, in chunks with their archive
rows, labels and ledger entries: for tuple units on PostgreSQL one streamed SQL query,
:mod:`audit.releases.selectors`; otherwise through the ORM, each chunk's labels and ledger
entries in one query each), so memory stays constant whatever the size; formats and file
names come from :mod:`audit.releases.formats`.

Determinism: every byte comes from the database (labels, ledger, gate, freeze) or from
fixed settings; the release's own creation time lives only in its row. Labels appended
while a release is being built are left out (the build reads up to the last label id it
saw when it started), so a release is one consistent state.
"""

from __future__ import annotations

import gc
import json
import logging
import math
import os
import shutil
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

import orjson
from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Exists, Max, OuterRef, QuerySet, TextField
from django.db.models.functions import Cast
from django.utils import timezone

from annotator.labelling.models import Label, LabelKind, SightVia
from annotator.labelling.services import labels_seen_record
from annotator.quality.models import GoldItem
from annotator.quality.scoring import matches, values_of
from audit.archive import mapping
from audit.archive.models import CodebookUnit, Partition, Study, Unit, UnitState
from audit.archive.records import UNIT_VALUES, UnitContent, record_body, unit_contents_of
from audit.contract import CHECKER_VERSION
from audit.contract.canonical import (
    canonical_json_fast,
    canonical_json_unchecked,
    canonical_text_unchecked,
    parse_json_fast,
    sha256_hex,
)
from audit.contract.engine import Engine, engine_of
from audit.ledger.chain import ledger_head
from audit.ledger.gate import claim_boundary
from audit.ledger.models import LedgerEntry, StudyGate
from audit.partitions.models import StudyFreeze
from audit.partitions.selectors import partition_sealed
from audit.queueing import RELEASE_BUILD, queue_job
from audit.releases import formats as rf
from audit.releases import record_texts
from audit.releases.bundle_tables import HashedFile, Tables, open_tables, write_manifest
from audit.releases.models import Release, ReleaseStatus, UnitRecordText
from audit.releases.selectors import (
    UnitTexts,
    raw_reads_available,
    tuple_chunks_raw,
    tuple_units_by_id,
)
from metrics.protocol_selectors import comparisons_for_release
from metrics.selectors import latest_report, prediction_sets_for_release

logger = logging.getLogger("claimgate.releases")

#: Units per chunk (with their archive rows). A chunk's rows, labels and parsed
#: annotations are what the build holds at once: at 10⁵, 500 gives a build's process a
#: peak of ~101 MB (1,000: ~116 MB), which with the table process's ~98 MB keeps the two
#: under 200 MB; the ORM read pays one more label and ledger query per 500 units.
CHUNK = 500
#: A build writes its progress (one UPDATE, committed) at most this often, in seconds, and
#: its last state at the end: every percent was ~100 commits per build, ~5% of its time
#: at 10⁵ on a loaded server.
PROGRESS_SECONDS = 0.5
RELEASE_EXISTS = "release_exists"
INVALID_NAME = "invalid_name"
DIGEST_MISMATCH = "record_digest_mismatch"


class ReleaseRefused(Exception):
    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def release_dir(*, study: Study, name: str) -> Path:
    try:
        return rf.bundle_dir(Path(settings.RELEASES_ROOT), study.slug, name)
    except rf.BundlePathError as exc:
        raise ReleaseRefused(str(exc), code=INVALID_NAME) from exc


def release_create(*, study: Study, name: str, user: Any = None) -> Release:
    """A new release row (status ``building``). A release is immutable: a name the study
    already used — or a folder that already exists — is refused."""
    directory = release_dir(study=study, name=name)
    if Release.objects.filter(study=study, name=name).exists() or directory.exists():
        raise ReleaseRefused(
            f"release {name!r} of study {study.slug} exists; a release is immutable, "
            "choose a new name",
            code=RELEASE_EXISTS,
        )
    try:
        with transaction.atomic():
            return Release.objects.create(
                study=study,
                name=name,
                created_by=user if getattr(user, "is_authenticated", False) else None,
            )
    except IntegrityError as exc:  # created meanwhile by someone else
        raise ReleaseRefused(
            f"release {name!r} of study {study.slug} exists", code=RELEASE_EXISTS
        ) from exc


def release_request(
    *, study: Study, name: str, user: Any = None, withhold_texts: bool = False
) -> Release:
    """Create the release and queue its build (after commit); pages and the API call this."""
    release = release_create(study=study, name=name, user=user)
    queue_job(RELEASE_BUILD, release.pk, withhold_texts)
    return release


def release_build(
    *, study: Study, name: str, user: Any = None, withhold_texts: bool = False
) -> Release:
    """Create and build a release now (commands, tests)."""
    release = release_create(study=study, name=name, user=user)
    return release_build_run(release=release, withhold_texts=withhold_texts)


def release_build_run(*, release: Release, withhold_texts: bool = False) -> Release:
    """Write the bundle of a ``building`` release and mark it ready (or failed). Running it
    again on a ready or failed release changes nothing; a build interrupted by a database
    error leaves the row ``building`` and is retried from scratch."""
    release = Release.objects.select_related("study__codebook").get(pk=release.pk)
    if release.status != ReleaseStatus.BUILDING:
        return release
    study = release.study
    directory = release_dir(study=study, name=release.name)
    partial = directory.parent / f".partial-{release.name}-{uuid.uuid4().hex}"

    def progress(percent: int) -> None:
        Release.objects.filter(pk=release.pk, status=ReleaseStatus.BUILDING).update(
            progress=percent
        )

    try:
        bundle = bundle_write(
            study=study,
            name=release.name,
            directory=partial,
            withhold_texts=withhold_texts,
            on_progress=progress,
        )
        if directory.exists():  # a duplicate delivery of this job finished first
            shutil.rmtree(partial)
            files = {
                name: {"sha256": rf.file_sha256(directory / name), "bytes": info["bytes"]}
                for name, info in bundle.files.items()
            }
        else:
            os.rename(partial, directory)
            rf.fsync_dir(directory.parent)
            files = bundle.files
    except DatabaseError:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    except Exception as exc:
        shutil.rmtree(partial, ignore_errors=True)
        logger.exception("release %s/%s failed", study.slug, release.name)
        Release.objects.filter(pk=release.pk, status=ReleaseStatus.BUILDING).update(
            status=ReleaseStatus.FAILED, error=str(exc)[:2000], finished_at=timezone.now()
        )
        release.refresh_from_db()
        return release
    Release.objects.filter(pk=release.pk, status=ReleaseStatus.BUILDING).update(
        status=ReleaseStatus.READY,
        progress=100,
        stage=bundle.stage,
        files=files,
        manifest_sha256=files[rf.MANIFEST]["sha256"],
        finished_at=timezone.now(),
    )
    release.refresh_from_db()
    return release


# --- the bundle --------------------------------------------------------------------------


@dataclass
class Bundle:
    files: dict[str, dict[str, Any]]
    stage: str | None
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Tally:
    units: int = 0
    kinds: Counter = field(default_factory=Counter)
    current_independent: int = 0
    final_units: int = 0
    assisted: int = 0
    unassisted: int = 0
    annotators: Counter = field(default_factory=Counter)
    outcomes: int = 0
    without_outcome: int = 0
    #: The earliest and latest label instants as (key to order by, text as written).
    first: tuple[Any, str] | None = None
    last: tuple[Any, str] | None = None

    def saw(self, label: dict[str, Any]) -> None:
        seen = (label["created_key"], label["created_at"])
        if self.first is None or seen[0] < self.first[0]:
            self.first = seen
        if self.last is None or seen[0] > self.last[0]:
            self.last = seen


class _Collector:
    """The cycle collector during a build's chunks. Every object alive before the build
    (Django, the codebook) is out of its reach (``gc.freeze``), and its automatic
    runs are off: the millions of short-lived, acyclic values of a build (freed by their
    reference counts) would trigger thousands of collections, ~15% of a build's time
    (measured at 10⁵). Instead the young generations are collected every
    ``COLLECT_EVERY`` chunks (a collection scans the live chunk, ~10 ms: once per chunk
    it would cost as much as the automatic runs; a build makes no cycles that these runs
    found, yet a rare path, an exception's traceback, may), and the collector is restored
    after."""

    #: Chunks between two collections of the young generations.
    COLLECT_EVERY = 32

    def __init__(self) -> None:
        self.enabled = gc.isenabled()
        self.restored = False
        self.chunks = 0
        gc.freeze()
        gc.disable()

    def chunk_done(self) -> None:
        self.chunks += 1
        if self.chunks % self.COLLECT_EVERY == 0:
            gc.collect(1)

    def restore(self) -> None:
        if not self.restored:
            self.restored = True
            if self.enabled:
                gc.enable()
            gc.unfreeze()


def _batches(iterable: Any, size: int) -> Iterator[list[Any]]:
    iterator = iter(iterable)
    while batch := list(islice(iterator, size)):
        yield batch


_LABEL_FIELDS = (
    "id",
    "unit_id",
    "kind",
    "revision",
    "record_digest",
    "assisted_model",
    "created_at",
)
#: The JSON columns of a label, read as their stored text and parsed here (orjson where it
#: may be, see :func:`_parsed`) rather than by the JSON field's ``json.loads``.
_LABEL_TEXTS = {
    "annotation_text": Cast("annotation", TextField()),
    "parents_text": Cast("parents", TextField()),
}
_OUTCOME_FIELDS = rf.OUTCOMES.names


def _ordered(
    labels: list[dict[str, Any]], unit: dict[str, Any]
) -> list[tuple[dict[str, Any], bool]]:
    """A unit's labels in release order — independent by annotator pseudonym and revision,
    then consensus, then adjudicated — each with whether it is current: an independent
    label no later revision replaced, or the unit's final label."""
    if len(labels) == 1:  # most units of a study without overlap: nothing to order
        label = labels[0]
        kind = label["kind"]
        # A label never names itself as parent (its digest covers its parents).
        if kind == LabelKind.INDEPENDENT or kind == LabelKind.ADJUDICATED:
            return [(label, True)]
        return [(label, unit["state"] == UnitState.AGREED)]
    independent = sorted(
        (label for label in labels if label["kind"] == LabelKind.INDEPENDENT),
        key=lambda label: (
            str(label["annotation"].get("annotator")),
            label["revision"],
            label["record_digest"],
        ),
    )
    replaced = {parent for label in independent for parent in label["parents"]}
    final_order = {LabelKind.CONSENSUS: 0, LabelKind.ADJUDICATED: 1}
    finals = sorted(
        (label for label in labels if label["kind"] != LabelKind.INDEPENDENT),
        key=lambda label: (final_order[label["kind"]], label["revision"], label["record_digest"]),
    )
    adjudicated = [label for label in finals if label["kind"] == LabelKind.ADJUDICATED]
    consensus = [label for label in finals if label["kind"] == LabelKind.CONSENSUS]
    final = None
    if adjudicated:
        final = adjudicated[-1]
    elif consensus and unit["state"] == UnitState.AGREED:
        final = consensus[-1]
    return [(label, label["record_digest"] not in replaced) for label in independent] + [
        (label, label is final) for label in finals
    ]


def _assisted_model(label: dict[str, Any]) -> str | None:
    assisted = label["annotation"].get("assisted")
    if isinstance(assisted, dict) and isinstance(assisted.get("model"), str):
        return assisted["model"]
    return label["assisted_model"]


def _engine_codebook(study: Study) -> Engine:
    """The study's codebook as the engine sees it (audit.contract.engine), whatever its
    format: what the label tables' columns and cells come from."""
    return engine_of(study.codebook.definition, unit=study.codebook.unit)


def _label_row(
    label: dict[str, Any],
    annotation: dict[str, Any],
    unit: dict[str, Any],
    current: bool,
    kind: str,
    engine: Engine | None = None,
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "record_digest": label["record_digest"],
        "kind": label["kind"],
        "revision": label["revision"],
        "current": current,
        "parents": label["parents"],
        "unit_digest": unit["digest"],
        "partition": unit["partition"],
        "annotator": annotation.get("annotator"),
        "assisted_model": _assisted_model(label),
        "created_at": label["created_at"],
        "rationale": annotation.get("rationale"),
    }
    row.update(rf.label_cells(engine or engine_of(None, unit=kind), annotation))
    return row


def bundle_write(
    *,
    study: Study,
    name: str,
    directory: Path,
    withhold_texts: bool = False,
    on_progress: Callable[[int], None] | None = None,
    reference: bool = False,
) -> Bundle:
    """Write the whole bundle of ``study`` into ``directory`` (which must not exist).

    ``reference``: parse and serialize every value with the standard library only (the
    slow path the compiled one must match byte for byte; tests and ``bench/export.py``
    build a bundle both ways and compare)."""
    study = Study.objects.select_related("codebook").get(pk=study.pk)
    rf.check_slug(study.slug, "study slug")
    rf.check_slug(name, "release name")
    directory = Path(directory)
    directory.mkdir(parents=True)
    codebook = study.codebook
    unit_kind = codebook.unit
    engine = _engine_codebook(study)

    label_cutoff = Label.objects.filter(study=study).aggregate(top=Max("id"))["top"] or 0
    ledger_cutoff = LedgerEntry.objects.filter(study=study).aggregate(top=Max("seq"))["top"] or 0
    # The whole chain's head, carried out of the database by every release: a copy kept
    # elsewhere that `verify_ledger --expect` checks the chain against.
    head = ledger_head()
    gate = StudyGate.objects.filter(study=study).first()
    reached = gate.reached if gate else None
    freeze = StudyFreeze.objects.filter(study=study).first()
    sealed = partition_sealed(study, Partition.TEST)

    units_qs = Unit.objects.filter(study=study)
    withheld_units = withheld_labels = 0
    if sealed:
        withheld_units = units_qs.filter(partition=Partition.TEST).count()
        withheld_labels = Label.objects.filter(
            study=study, unit__partition=Partition.TEST, id__lte=label_cutoff
        ).count()
        units_qs = units_qs.exclude(partition=Partition.TEST)
    total_units = units_qs.count()

    rf.write_json(rf.bundle_file(directory, rf.CODEBOOK), codebook.definition)

    # Records assembled from each unit's stored texts (stored as the build meets a unit
    # without them): the compiled path's tuple units on PostgreSQL, whose texts are
    # written whole (a release that withholds texts rewrites each record: it rebuilds them).
    stored = (
        not reference
        and not withhold_texts
        and unit_kind == CodebookUnit.TUPLE
        and raw_reads_available()
    )
    constant = _constant_text(study) if stored else b""

    tally = _Tally()
    withheld = rf.Withheld()
    # The tables by a process of their own beside this one (the reference build: here).
    tables = open_tables(
        directory,
        {
            "labels_independent": rf.label_table("labels_independent", unit_kind, engine),
            "labels_final": rf.label_table("labels_final", unit_kind, engine),
            "labels_gold": rf.label_table("labels_gold", unit_kind, engine),
            "outcomes": rf.OUTCOMES,
        },
        parallel=not reference,
    )
    records = HashedFile(rf.bundle_file(directory, rf.RECORDS))
    known_sums: dict[str, str] = {}
    collector = _Collector()
    written = False
    try:
        rf.write_jsonl(
            records,
            [
                {
                    "claimgate": "records",
                    "format_version": rf.FORMAT_VERSION,
                    "codebook": {
                        "name": codebook.name,
                        "version": codebook.version,
                        "digest": codebook.digest,
                    },
                    "texts_withheld": withhold_texts,
                }
            ],
        )
        reported, reported_at = -1, -math.inf
        for units, contents, labels in _chunks(
            study=study,
            units_qs=units_qs,
            exclude_test=sealed,
            label_cutoff=label_cutoff,
            ledger_cutoff=ledger_cutoff,
            reference=reference,
            stored=stored,
        ):
            _write_chunk(
                study=study,
                units=units,
                contents=contents,
                labels=labels,
                engine=engine,
                withhold_texts=withhold_texts,
                records=records,
                tables=tables,
                tally=tally,
                withheld=withheld,
                reference=reference,
                constant=constant,
            )
            percent = min(99, tally.units * 100 // max(total_units, 1))
            if on_progress is not None and percent != reported:
                now = time.monotonic()
                if now - reported_at >= PROGRESS_SECONDS:
                    on_progress(percent)
                    reported, reported_at = percent, now
            collector.chunk_done()
        collector.restore()
        known_sums[rf.RECORDS] = records.close()
        tables.close()
        known_sums.update(tables.sums())
        written = True
    finally:
        if not written:
            collector.restore()
            records.close()
            tables.abort()

    boundary = claim_boundary(reached)
    stage_doc = {
        "study": study.slug,
        "stage": reached,
        "claim_boundary": boundary,
        "gate": gate.report if gate else None,
        "checker_version": CHECKER_VERSION,
        "ledger_head": head.as_dict(),
        "frozen": freeze is not None,
        "freeze": None
        if freeze is None
        else {
            "frozen_at": mapping.format_instant(freeze.frozen_at),
            "codebook_digest": freeze.codebook_digest,
            "pipelines_digest": freeze.pipelines_digest,
            "thresholds_digest": freeze.thresholds_digest,
            "partition_digest": freeze.partition_digest,
            "partition_counts": freeze.partition_counts,
        },
        "test_partition": {
            "sealed": sealed,
            "withheld_units": withheld_units,
            "withheld_labels": withheld_labels,
        },
    }
    rf.write_json(rf.bundle_file(directory, rf.STAGE), stage_doc)
    reliability_note = _reliability(study, directory)
    predictions_note, predictions_lines = _predictions(study, directory)
    comparisons = comparisons_for_release(study)
    if comparisons is not None:
        rf.write_json(rf.bundle_file(directory, rf.COMPARISON), comparisons)

    files_rows = [
        (rf.CODEBOOK, None, f"the codebook {codebook.name} {codebook.version}, as stored"),
        (rf.STAGE, None, "validation stage, claim boundary, freeze and test partition"),
    ]
    if (directory / rf.RELIABILITY).exists():
        files_rows.append((rf.RELIABILITY, None, "the latest reliability report"))
    if (directory / rf.PREDICTIONS).exists():
        files_rows.append(
            (rf.PREDICTIONS, len(predictions_lines), "prediction sets scored against gold")
        )
    if comparisons is not None:
        files_rows.append(
            (
                rf.COMPARISON,
                len(comparisons["comparisons"]),
                "seed 002's Table II per evaluated/baseline pair of the study's setting",
            )
        )
    files_rows.append(
        (rf.RECORDS, sum(tally.kinds.values()), "every label as a full record (+ header)")
    )
    described = {
        "labels_independent": "independent labels, every revision, with lineage",
        "labels_final": "consensus and adjudicated labels (`current`: the unit's final label)",
        "labels_gold": "labels made on gold units, scored against their key (never in "
        "reliability, outcomes or the other label tables, nor in records.jsonl)",
        "outcomes": "claim-ledger outcome of each record: endpoint, priority, action",
    }
    for table_name, table in tables.items():
        for ext in rf.TABLE_FORMATS:
            files_rows.append((f"{table_name}.{ext}", table.rows, described[table_name]))

    counts = [
        ("units in this release", tally.units),
        ("units withheld (test partition, sealed)", withheld_units),
        ("labels withheld (test partition, sealed)", withheld_labels),
        ("independent labels (every revision)", tally.kinds[LabelKind.INDEPENDENT]),
        ("independent labels, current revisions", tally.current_independent),
        ("consensus labels", tally.kinds[LabelKind.CONSENSUS]),
        ("adjudicated labels", tally.kinds[LabelKind.ADJUDICATED]),
        ("gold labels (their own table)", tally.kinds[LabelKind.GOLD]),
        ("units with a final label", tally.final_units),
        ("records with a claim-ledger outcome", tally.outcomes),
        ("records without an outcome yet", tally.without_outcome),
    ]
    facts = {
        "release": name,
        "study": study.slug,
        "title": study.title,
        "frozen": freeze is not None,
        "frozen_at": mapping.format_instant(freeze.frozen_at) if freeze else None,
        "withheld_units": withheld_units,
        "withheld_labels": withheld_labels,
        "stage": reached,
        "codebook": f"{codebook.name} {codebook.version}",
        "codebook_digest": codebook.digest,
        "checker_version": CHECKER_VERSION,
        "ledger_head": str(head),
        "label_dates": (tally.first[1], tally.last[1]) if tally.first and tally.last else None,
        "counts": counts,
        "annotators": sorted(tally.annotators.items()),
        "assisted": tally.assisted,
        "unassisted": tally.unassisted,
        "texts_withheld": withhold_texts,
        "withheld_texts": withheld.as_dict(),
        "boundary": boundary,
        "reliability_note": reliability_note,
        "estimates_lines": _estimates_lines(study),
        "predictions_note": predictions_note,
        "predictions_lines": predictions_lines,
        "files": files_rows,
        "pyarrow": tables.pyarrow_version(),
    }
    rf.bundle_file(directory, rf.README).write_text(
        rf.render_datasheet(facts), encoding="utf-8", newline="\n"
    )
    files = write_manifest(directory, known_sums)
    rf.fsync_dir(directory)
    return Bundle(files=files, stage=reached, facts=facts)


def _chunks(
    *,
    study: Study,
    units_qs: QuerySet[Unit],
    exclude_test: bool,
    label_cutoff: int,
    ledger_cutoff: int,
    reference: bool,
    stored: bool = False,
) -> Iterator[tuple[list[dict[str, Any]], dict[int, Any], list[dict[str, Any]]]]:
    """The study's units in release order (by digest), ``CHUNK`` at a time, each chunk
    with its units' contents and labels (each label with its ``outcome``: its ledger
    entry's row, or ``None``). Tuple units on PostgreSQL are read by plain SQL
    (:mod:`audit.releases.selectors`); other kinds, other databases and the reference
    build through the ORM (the two reads are tested equal). ``stored``: each unit's
    stored texts (:class:`UnitTexts`, ``None`` where it has none) instead of its
    content."""
    if not reference and study.codebook.unit == CodebookUnit.TUPLE and raw_reads_available():
        yield from tuple_chunks_raw(
            study_id=study.pk,
            codebook_unit=study.codebook.unit,
            exclude_test=exclude_test,
            chunk=CHUNK,
            label_cutoff=label_cutoff,
            ledger_cutoff=ledger_cutoff,
            stored=stored,
        )
        return
    rows = units_qs.order_by("digest").values(*UNIT_VALUES).iterator(chunk_size=CHUNK)
    for units in _batches(rows, CHUNK):
        yield (
            units,
            unit_contents_of(study=study, units=units),
            _labels_orm(units=units, label_cutoff=label_cutoff, ledger_cutoff=ledger_cutoff),
        )


def _labels_orm(
    *, units: list[dict[str, Any]], label_cutoff: int, ledger_cutoff: int
) -> list[dict[str, Any]]:
    """The labels :func:`audit.releases.selectors.labels_of_rows` gives, through the ORM
    (two queries)."""
    labels = list(
        Label.objects.filter(unit_id__in=[unit["id"] for unit in units], id__lte=label_cutoff)
        .annotate(**_LABEL_TEXTS)
        .values(*_LABEL_FIELDS, *_LABEL_TEXTS)
    )
    digests = [label["record_digest"] for label in labels if label["kind"] != LabelKind.GOLD]
    outcomes = {
        entry["record_digest"]: entry
        for entry in LedgerEntry.objects.filter(
            record_digest__in=digests, seq__lte=ledger_cutoff
        ).values(*_OUTCOME_FIELDS)
    }
    for label in labels:
        label["created_key"] = label["created_at"]
        label["created_at"] = mapping.format_instant(label["created_at"])
        label["canonical"] = False  # the jsonb's text, never the stored canonical text
        label["outcome"] = outcomes.get(label["record_digest"])
    return labels


def _write_chunk(
    *,
    study: Study,
    units: list[dict[str, Any]],
    contents: dict[int, Any],
    labels: list[dict[str, Any]],
    engine: Engine,
    withhold_texts: bool,
    records: Any,
    tables: Tables,
    tally: _Tally,
    withheld: rf.Withheld,
    reference: bool = False,
    constant: bytes = b"",
) -> None:
    """``contents``: each unit's :class:`UnitContent`, or its stored :class:`UnitTexts`
    (``None``: it has none) with ``constant``, the study's members of every record."""
    by_unit: dict[int, list[dict[str, Any]]] = {}
    gold: dict[int, list[dict[str, Any]]] = {}
    for label in labels:
        is_gold = label["kind"] == LabelKind.GOLD
        # Gold labels are in no record line, so nothing checks their parse: the standard one.
        _parsed(label, reference or is_gold)
        into = gold if is_gold else by_unit
        into.setdefault(label["unit_id"], []).append(label)
    keys = (
        dict(GoldItem.objects.filter(unit_id__in=list(gold)).values_list("unit_id", "key"))
        if gold
        else {}
    )
    unit_kind = study.codebook.unit
    if constant:
        missing = [unit_id for unit_id, texts in contents.items() if texts is None]
        if missing:  # a study's first release, or units imported since the last one
            contents.update(unit_record_texts_store(study=study, unit_ids=missing))
    lines: list[bytes] = []  # the chunk's record lines, written at once
    for unit in units:
        tally.units += 1
        has_final = False
        unit_labels = by_unit.get(unit["id"], [])
        unit_parts: dict[int, tuple[bytes, bytes]] | None = {} if len(unit_labels) > 1 else None
        vouched = None
        if unit_parts is not None and any(label["canonical"] for label in unit_labels):
            # Ordering reads the annotations: each label's line first, so that a parsed
            # stored text no line vouched for is replaced by its jsonb's value before.
            vouched = {
                label["id"]: _line_of(study, contents, unit["id"], label, unit_parts, constant)
                for label in unit_labels
            }
        for label, current in _ordered(unit_labels, unit):
            if vouched is None:
                record, line = _line_of(study, contents, unit["id"], label, unit_parts, constant)
            else:
                record, line = vouched[label["id"]]
            kind = label["kind"]
            tally.kinds[kind] += 1
            tally.saw(label)
            fast = label["fast"]
            if withhold_texts and record is not None:  # never assembled from stored texts
                record = rf.withhold_record(record, withheld)
                encode = canonical_json_fast if fast else canonical_json_unchecked
                line = encode(record) + b"\n"
            annotation = label["annotation"] if record is None else record["annotation"]
            row = _label_row(label, annotation, unit, current, unit_kind, engine)
            if kind == LabelKind.INDEPENDENT:
                tables["labels_independent"].write(row, fast=fast)
                tally.annotators[str(annotation.get("annotator"))] += 1
                tally.current_independent += current
                if _assisted_model(label) is None:
                    tally.unassisted += 1
                else:
                    tally.assisted += 1
            else:
                tables["labels_final"].write(row, fast=fast)
                has_final = has_final or current
            lines.append(line)
            outcome = label["outcome"]
            if outcome is None:
                tally.without_outcome += 1
            else:
                tables["outcomes"].write(outcome)
                tally.outcomes += 1
        tally.final_units += has_final
        _write_gold(
            gold.get(unit["id"], []), keys.get(unit["id"]), unit, unit_kind, engine, tables, tally
        )
    records.write(b"".join(lines))


def _line_of(
    study: Study,
    contents: dict[int, Any],
    unit_id: int,
    label: dict[str, Any],
    unit_parts: dict[int, tuple[bytes, bytes]] | None,
    constant: bytes,
) -> tuple[dict[str, Any] | None, bytes]:
    """A label's record line (and its record, where it was rebuilt from the unit's
    content), checked against its record digest. ``contents[unit_id]``: the unit's stored
    :class:`UnitTexts` or its :class:`UnitContent`, replaced by the content read through
    the ORM when the stored texts give no line."""
    content = contents[unit_id]
    record: dict[str, Any] | None = None
    line = None
    if not isinstance(content, UnitContent):
        if content is not None and label["fast"]:
            line = _stored_line(content, label, constant)
        if line is None:
            # No stored texts, a label the standard parser read, or a line that
            # does not hash to the label's digest: the record is rebuilt from the
            # unit's content as read by the ORM, checked as always.
            content = contents[unit_id] = _content_orm(study, unit_id)
    if line is None:
        if label["canonical"]:
            # Its stored canonical text gave no line: the annotation as its jsonb holds it.
            _annotation_reread(label)
        try:
            record, line = _record_line(study, content, label, unit_parts)
        except ReleaseRefused as refused:
            # Read by plain SQL, a JSON column parsed by orjson (an integer beyond
            # 64 bits becomes a float): the ORM's content decides, else the refusal
            # stands.
            orm = _content_orm(study, unit_id)
            if refused.code != DIGEST_MISMATCH or orm == content:
                raise
            content = contents[unit_id] = orm
            if unit_parts is not None:
                unit_parts.clear()
            record, line = _record_line(study, content, label, unit_parts)
    return record, line


def _annotation_reread(label: dict[str, Any]) -> None:
    """A label read with its stored canonical text that no record line vouched for: its
    annotation read again from its ``annotation`` column (the value itself, as a label
    without the text is read) and parsed again."""
    label["annotation_text"] = (
        Label.objects.filter(pk=label["id"])
        .annotate(text=Cast("annotation", TextField()))
        .values_list("text", flat=True)
        .get()
    )
    label["canonical"] = False
    _parsed(label, reference=False)


def _stored_line(texts: UnitTexts, label: dict[str, Any], constant: bytes) -> bytes | None:
    """A label's record line assembled from its unit's stored texts (see
    :mod:`audit.releases.record_texts`), or ``None`` when no assembly hashes to the label's
    record digest. The annotation is its canonical text stored with the label (``canonical``)
    where it has one; else, or when that line does not hash to the digest, the annotation
    and parents (parsed by orjson) are written by orjson, without the small-float check:
    bytes that hash to the stored digest are the canonical bytes the label was sealed
    with; else once more by the checked encoder."""
    parents = label["parents"]
    parts = {"answer": texts.answer, "constant": constant, "head": texts.head, "tail": texts.tail}
    parents_text = _sealed_guess(parents) if parents else b"[]"
    line = None
    if label["canonical"]:  # the annotation's canonical text, stored with the label
        line = record_texts.record_line(
            annotation=_utf8(label["annotation_text"]),
            parents=parents_text,
            record_digest=label["record_digest"],
            **parts,
        )
    if line is None:
        line = record_texts.record_line(
            annotation=_sealed_guess(label["annotation"]),
            parents=parents_text,
            record_digest=label["record_digest"],
            **parts,
        )
    if line is None:
        line = record_texts.record_line(
            annotation=canonical_json_fast(label["annotation"]),
            parents=canonical_json_fast(parents),
            record_digest=label["record_digest"],
            **parts,
        )
    return line


def _utf8(text: str | bytes) -> bytes:
    """A text read as str (the ORM) or as its UTF-8 bytes (the stored read)."""
    return text if isinstance(text, bytes) else text.encode("utf-8")


def _constant_text(study: Study) -> bytes:
    """The members of every tuple record of ``study`` that come from neither the unit nor
    the label (its codebook's name and version, the format), as records are built."""
    empty = UnitContent(
        unit_id=0,
        codebook_unit=CodebookUnit.TUPLE,
        digest="",
        query={},
        pipeline={},
        answer={},
        sources=[{}],
        sampling=None,
    )
    body = record_body(study=study, content=empty, annotation={}, parents=[])
    return record_texts.constant_text(body)


def unit_record_texts_store(*, study: Study, unit_ids: list[int]) -> dict[int, UnitTexts]:
    """Store the record texts (:class:`UnitRecordText`) of these tuple units of ``study``
    (PostgreSQL: the texts serve its plain-SQL read), one statement; the texts by unit id.

    Each text is the canonical serialization (:func:`canonical_json_fast`) of the unit's
    members of :func:`audit.archive.records.record_body`, from the archive's values read
    exactly as the ORM reads them. A unit's archive rows never change, so its texts are
    made once: a concurrent build's row for the same unit is left as it is (the same
    bytes), and a record is only ever written when its bytes hash to its digest."""
    texts = {}
    for content in tuple_units_by_id(unit_ids=unit_ids, codebook_unit=study.codebook.unit):
        body = record_body(study=study, content=content, annotation={}, parents=[])
        texts[content.unit_id] = UnitTexts(*record_texts.unit_texts(body))
    if texts:
        _unit_record_texts_insert(texts=texts)
    return texts


def _unit_record_texts_insert(*, texts: dict[int, UnitTexts]) -> None:
    """Insert units' record texts, one statement; a unit that has them already keeps its
    own (the same bytes: they come from immutable rows). Scalar parameters, not the ORM's
    ``bulk_create``: on PostgreSQL that sends arrays, whose text psycopg escapes element
    by element in Python (~0.3 ms per unit of these sizes, measured)."""
    table = UnitRecordText._meta.db_table
    values = ", ".join(["(%s, %s, %s, %s)"] * len(texts))
    params: list[Any] = []
    for unit_id, unit_texts in texts.items():
        params += (unit_id, *(text.decode("utf-8") for text in unit_texts))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {table} (unit_id, answer, head, tail) VALUES {values} "  # noqa: S608
            "ON CONFLICT (unit_id) DO NOTHING",
            params,
        )


def _content_orm(study: Study, unit_id: int) -> UnitContent:
    """One unit's content read through the ORM (the reference read)."""
    unit = Unit.objects.filter(pk=unit_id).values(*UNIT_VALUES).get()
    return unit_contents_of(study=study, units=[unit])[unit_id]


def _write_gold(
    labels: list[dict[str, Any]],
    key: dict[str, str] | None,
    unit: dict[str, Any],
    unit_kind: str,
    engine: Engine,
    tables: Tables,
    tally: _Tally,
) -> None:
    """A unit's gold labels into their own table only: each with the unit's key and
    whether it matches (``current``: no later revision of that annotator replaced it)."""
    replaced = {parent for label in labels for parent in label["parents"]}
    ordered = sorted(
        labels,
        key=lambda label: (str(label["annotation"].get("annotator")), label["revision"]),
    )
    for label in ordered:
        annotation = label["annotation"]
        current = label["record_digest"] not in replaced
        row = _label_row(label, annotation, unit, current, unit_kind, engine)
        row["gold_key"] = key
        row["gold_right"] = None if key is None else matches(key, values_of(annotation, engine))
        tables["labels_gold"].write(row)
        tally.kinds[LabelKind.GOLD] += 1
        tally.saw(label)


def _parsed(label: dict[str, Any], reference: bool) -> None:
    """Parse a fetched label's ``annotation`` and ``parents`` from their stored text.
    ``label["fast"]``: both were parsed by orjson, so the compiled encoder may write them
    (its output is then checked against the record digest, see :func:`_record_line`)."""
    text = label["annotation_text"]
    if reference:
        label["annotation"], fast = json.loads(text), False
        label["parents"] = json.loads(label["parents_text"])
    else:
        label["annotation"], fast = parse_json_fast(text)
        parents = label["parents_text"]
        # Most labels have none: no parse for the empty list.
        label["parents"], fast_parents = ([], True) if parents == "[]" else parse_json_fast(parents)
        fast = fast and fast_parents
    label["fast"] = fast


def _unit_parts(study: Study, content: UnitContent) -> tuple[bytes, bytes]:
    """The unit's part of every record of its labels, serialized once: the canonical text
    of the record's members that sort between ``annotation`` and ``parents`` (answer,
    baseline, claimgate, codebook, documents, format_version) and of those after
    ``parents`` (pipeline, query, sampling, source(s), the unit's digest), each without its
    braces. A record's canonical text is then ``{"annotation":A,<middle>,"parents":P,<tail>}``
    (members in sorted key order, compact separators)."""
    body = record_body(study=study, content=content, annotation={}, parents=[])
    middle = {key: value for key, value in body.items() if "annotation" < key < "parents"}
    tail = {key: value for key, value in body.items() if key > "parents"}
    return canonical_json_fast(middle)[1:-1], canonical_json_fast(tail)[1:-1]


def _sealed_guess(record: dict[str, Any]) -> bytes:
    """orjson's sorted-key bytes of ``record`` without the small-float check of
    :func:`canonical_json_fast` (``b""`` where orjson refuses the value): the canonical
    bytes when they hash to the record's stored digest, which the caller checks."""
    try:
        return orjson.dumps(record, default=_unserializable, option=_SORTED)
    except TypeError:  # orjson.JSONEncodeError: the checked encoder decides
        return b""


def _unserializable(value: Any) -> Any:
    raise TypeError(type(value).__name__)


_SORTED = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _record_line(
    study: Study,
    content: UnitContent,
    label: dict[str, Any],
    unit_parts: dict[int, tuple[bytes, bytes]] | None = None,
) -> tuple[dict[str, Any], bytes]:
    """The label's full record, rebuilt by audit.archive.records.record_build with the sealing
    left to this function: the record body is serialized once, canonically; its SHA-256
    must be the stored record digest (else the archive changed under the label and the
    build stops), and the line is that text with ``record_digest`` set in its sorted
    place — right before the top-level ``"sampling"`` key, the last one of that name (no
    source object has such a key).

    A label parsed by orjson is serialized by orjson first: when those bytes hash to the
    stored digest they are the canonical bytes the label was sealed with. When they do not
    (a value orjson parses or writes otherwise, which the fallbacks of
    :func:`canonical_json_fast` should leave none of), the label is parsed and serialized
    again by the standard library, which decides.

    ``unit_parts``: the :func:`_unit_parts` of units already serialized, by unit id (a
    unit's labels then share them: only the annotation and the parents are serialized per
    label); ``None`` for a unit's only label, whose record is serialized whole."""
    if label["fast"]:
        record = record_body(
            study=study, content=content, annotation=label["annotation"], parents=label["parents"]
        )
        if unit_parts is None:  # the unit's only label: its record in one go
            # Sealed bytes need no check of their own: orjson's bytes that hash to the
            # stored digest are the canonical bytes the label was sealed with (else the
            # checked encoder, below).
            data = _sealed_guess(record)
        else:
            parts = unit_parts.get(content.unit_id)
            if parts is None:
                parts = unit_parts[content.unit_id] = _unit_parts(study, content)
            data = b"".join(
                (
                    b'{"annotation":',
                    canonical_json_fast(label["annotation"]),
                    b",",
                    parts[0],
                    b',"parents":',
                    canonical_json_fast(label["parents"]),
                    b",",
                    parts[1],
                    b"}",
                )
            )
        digest = sha256_hex(data)
        if digest != label["record_digest"] and unit_parts is None:
            data = canonical_json_fast(record)
            digest = sha256_hex(data)
        if digest == label["record_digest"]:
            at = data.rfind(b',"sampling":')
            record["record_digest"] = digest
            line = b"".join(
                (data[:at], b',"record_digest":"', digest.encode("ascii"), b'"', data[at:], b"\n")
            )
            return record, line
        label["annotation"] = json.loads(label["annotation_text"])
        label["parents"] = json.loads(label["parents_text"])
        label["fast"] = False
    record = record_body(
        study=study, content=content, annotation=label["annotation"], parents=label["parents"]
    )
    text = canonical_text_unchecked(record)
    digest = sha256_hex(text.encode("utf-8"))
    if digest != label["record_digest"]:
        raise ReleaseRefused(
            f"the stored label {label['record_digest']} does not rebuild to the same record "
            f"(got {digest}): the archive changed under it",
            code=DIGEST_MISMATCH,
        )
    at = text.rfind(',"sampling":')
    line = text[:at] + ',"record_digest":"' + digest + '"' + text[at:] + "\n"
    record["record_digest"] = digest
    return record, line.encode("utf-8")


def _reliability(study: Study, directory: Path) -> str:
    """Bundle the study's latest reliability report, if one was computed."""
    report = latest_report(study)
    if report is None:
        return "No reliability report has been computed for this study yet."
    plain = json.loads(json.dumps(report, default=str))
    rf.write_json(rf.bundle_file(directory, rf.RELIABILITY), plain)
    return (
        f"`{rf.RELIABILITY}` holds the latest reliability report of the study, computed on "
        "the original independent labels."
    )


def _interval_text(estimate: dict[str, Any] | None, counts: str = "") -> str:
    if not estimate or estimate.get("value") is None:
        return f"undefined{f' ({counts})' if counts else ''}"
    low, high = estimate.get("low"), estimate.get("high")
    interval = "" if low is None or high is None else f" [{low:.3f}, {high:.3f}]"
    return f"{estimate['value']:.3f}{interval}{f' ({counts})' if counts else ''}"


def _counts(estimate: dict[str, Any] | None) -> str:
    if not estimate or estimate.get("denominator") is None:
        return ""
    return f"{estimate['numerator']}/{estimate['denominator']}"


def _estimates_lines(study: Study) -> list[str]:
    """The report's rates on the final labels, one line each (none without a report)."""
    report = latest_report(study)
    rates = (((report or {}).get("report") or {}).get("estimates") or {}).get("rates") or []
    lines = []
    for rate in rates:
        counts = f"{rate['numerator']}/{rate['n']}"
        text = f"{rate['label']}: sample share {_interval_text(rate['unweighted'], counts)}"
        if rate.get("weighted"):
            text += f"; prevalence (Hájek) {_interval_text(rate['weighted'])}"
        else:
            text += (
                f"; not a prevalence ({rate['missing_probabilities']} units without an "
                "inclusion probability)"
            )
        lines.append(text)
    return lines


def _predictions(study: Study, directory: Path) -> tuple[str, list[str]]:
    """Bundle the study's prediction sets with their scores (``predictions.json``) and
    describe each in a line; the predicted values stay out of every label table."""
    sets = prediction_sets_for_release(study=study)
    if not sets:
        return "No prediction file was scored against this study's final labels.", []
    for entry in sets:
        entry["scored_at"] = (
            mapping.format_instant(entry["scored_at"]) if entry["scored_at"] else None
        )
    rf.write_json(
        rf.bundle_file(directory, rf.PREDICTIONS),
        {"format": 1, "study": study.slug, "prediction_sets": sets},
    )
    lines = []
    for entry in sets:
        result = entry["scores"] or {}
        scores = result.get("scores") or {}
        text = (
            f"{entry['kind']} {entry['name']} {entry['version']}, field {entry['field']}: "
            f"{result.get('scored', 0)} units scored, {result.get('awaiting_final', 0)} awaiting "
            "a final label"
        )
        if scores:
            text += (
                f"; accuracy {_interval_text(scores['accuracy'], _counts(scores['accuracy']))}"
                f"; kappa {_interval_text(scores['kappa'])}"
            )
            for key, name in (("accepted_error", "alpha"), ("false_block", "beta")):
                if scores.get(key):
                    text += f"; {name} {_interval_text(scores[key], _counts(scores[key]))}"
        lines.append(text)
    note = (
        f"`{rf.PREDICTIONS}` holds every prediction set scored against the final labels, with "
        "its scores (95% intervals clustered by query domain). Predictions are never labels: "
        "they are in no label table of this release and never served as gold."
    )
    return note, lines


# --- reads for pages and the API ---------------------------------------------------------


def release_units(*, release: Release) -> QuerySet[Unit]:
    """The units whose labels ``release`` holds, or a superset: every unit of the study
    with a label made before the release was finished, without the test partition when it
    was sealed then (no freeze, or one made after the release was finished)."""
    finished = release.finished_at or timezone.now()
    units = Unit.objects.filter(study_id=release.study_id).filter(
        Exists(Label.objects.filter(unit=OuterRef("pk"), created_at__lte=finished))
    )
    freeze = StudyFreeze.objects.filter(study_id=release.study_id).first()
    if freeze is None or freeze.frozen_at > finished:
        units = units.exclude(partition=Partition.TEST)
    return units


def _release_read(*, release: Release, reader: AbstractBaseUser | None, labels: bool) -> None:
    """A person about to receive the release's labels has seen them (blinding): recorded
    before a byte is sent."""
    if labels and reader is not None:
        labels_seen_record(user=reader, units=release_units(release=release), via=SightVia.RELEASE)


def release_file_path(*, release: Release, file_name: str, reader: AbstractBaseUser | None) -> Path:
    """A ready release's file, by a name its row lists (never a name from the request
    alone); ``LookupError`` for anything else. ``reader`` is the person it is sent to
    (None for the app's own reads): a file with labels counts as showing them."""
    if release.status != ReleaseStatus.READY or file_name not in release.files:
        raise LookupError(file_name)
    path = rf.bundle_file(release_dir(study=release.study, name=release.name), file_name)
    _release_read(release=release, reader=reader, labels=file_name in rf.LABEL_FILES)
    return path


def release_manifest_text(*, release: Release) -> str:
    try:
        path = release_file_path(release=release, file_name=rf.MANIFEST, reader=None)
        return path.read_text("utf-8")
    except (LookupError, OSError):
        return ""


def release_zip_path(*, release: Release, reader: AbstractBaseUser | None) -> Path:
    """The bundle as a deterministic zip next to its folder (``<name>.zip``: a release
    name has no dot, so it never names a folder), written once on first request. It holds
    the labels: sending it to ``reader`` counts as showing them."""
    if release.status != ReleaseStatus.READY:
        raise LookupError(release.name)
    directory = release_dir(study=release.study, name=release.name)
    target = directory.parent / f"{release.name}.zip"
    if not target.exists():
        partial = directory.parent / f".partial-{release.name}-{uuid.uuid4().hex}.zip"
        try:
            with partial.open("xb") as stream:
                rf.write_zip(
                    stream, directory, sorted(release.files), f"{release.study.slug}-{release.name}"
                )
            os.replace(partial, target)
        finally:
            partial.unlink(missing_ok=True)
    _release_read(release=release, reader=reader, labels=True)
    return target


def release_withheld_units(*, study: Study) -> int:
    """Units a release built now would leave out (the sealed test partition)."""
    if not partition_sealed(study, Partition.TEST):
        return 0
    return Unit.objects.filter(study=study, partition=Partition.TEST).count()
