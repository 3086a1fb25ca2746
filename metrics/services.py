"""Writes of reliability reports: request (the debounce), claim (one run per study at a
time), compute (fetch → pure computation → store, with committed progress).

How concurrent refreshes behave:

* ``report_request`` adds a ``queued`` row unless the study already has one (a partial
  unique constraint makes this race-safe): requests while one is queued do nothing more.
* ``report_claim`` turns the queued row into ``running`` inside a transaction that locks it
  (``SELECT … FOR UPDATE``), and only when the study has no live ``running`` row: two
  workers can never both claim, and a run never starts beside another one of its study.
* ``report_refresh`` requests, then claims and computes until nothing is queued, so a run
  that finishes picks up the request that arrived while it ran (nothing is lost, and N
  requests during a run cost one more run, not N).

A ``running`` row started more than ``REPORT_STALE_SECONDS`` ago belongs to a worker that
died (a report takes seconds): the next claim marks it failed and takes over.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, BinaryIO

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from audit.archive.models import Study
from audit.contract import codes
from audit.contract.canonical import canonical_digest_unchecked
from audit.contract.errors import ContractError, LineProblem
from audit.contract.observations import MAX_LINE_BYTES, MAX_LINES, decode_line
from audit.contract.streams import HashingReader, as_stream, read_lines, stream_size
from audit.partitions.models import StudyFreeze
from audit.queueing import STUDY_COMPARISON_REFRESH
from metrics.models import (
    ComparisonSetting,
    ComparisonSummary,
    Prediction,
    PredictionSet,
    PredictorKind,
    ReportStatus,
    StudyReport,
    VeriScoreCohort,
)
from metrics.predictions import (
    DUPLICATE_UNIT,
    NO_PREDICTIONS,
    PREDICTIONS_NOT_GOLD,
    STUDY_NOT_FROZEN,
    UNKNOWN_UNIT,
    PredictionLineError,
    header_parse,
    line_parse,
    prediction_fields,
    prediction_scores,
)
from metrics.protocol_selectors import (
    MEMBER_COLUMNS,
    Setting,
    comparison_data,
    comparison_followers,
    comparison_inline,
    comparison_mark,
    protocol_setting,
)
from metrics.report_build import report_build
from metrics.selectors import (
    gate_stage,
    labels_mark,
    prediction_gold_fetch,
    prediction_values_fetch,
    report_inputs_fetch,
    study_unit_ids_by_digest,
)

logger = logging.getLogger("claimgate.metrics")

REPORT_STALE_SECONDS = 15 * 60
#: Runs one refresh may chain before it leaves the rest to the next job.
MAX_RUNS_PER_REFRESH = 5


def bootstrap_resamples() -> int:
    return int(getattr(settings, "RELIABILITY_BOOTSTRAP", 1000))


def report_request(*, study: Study) -> tuple[StudyReport, bool]:
    """The study's queued report, created now unless one is already queued."""
    existing = StudyReport.objects.filter(study=study, status=ReportStatus.QUEUED).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            return StudyReport.objects.create(study=study, status=ReportStatus.QUEUED), True
    except IntegrityError:  # another request queued one in between
        return StudyReport.objects.get(study=study, status=ReportStatus.QUEUED), False


def report_claim(*, study: Study) -> StudyReport | None:
    """Take the study's queued report for a run; None when nothing is queued or another
    run of the study is alive."""
    now = timezone.now()
    with transaction.atomic():
        queued = (
            StudyReport.objects.select_for_update()
            .filter(study=study, status=ReportStatus.QUEUED)
            .first()
        )
        if queued is None:
            return None
        running = StudyReport.objects.select_for_update().filter(
            study=study, status=ReportStatus.RUNNING
        )
        stale_before = now - timedelta(seconds=REPORT_STALE_SECONDS)
        for other in running:
            if (other.started_at or other.created_at) >= stale_before:
                return None  # a live run: it will pick this request up when it ends
            StudyReport.objects.filter(pk=other.pk).update(
                status=ReportStatus.FAILED, error="abandoned (no progress)", finished_at=now
            )
        StudyReport.objects.filter(pk=queued.pk).update(
            status=ReportStatus.RUNNING, started_at=now, progress=0
        )
    queued.refresh_from_db()
    return queued


def _progress(report: StudyReport, percent: int) -> None:
    # Autocommit (no transaction is open here), so the page's poll sees it at once.
    report.progress = min(100, max(0, percent))
    StudyReport.objects.filter(pk=report.pk).update(progress=report.progress)


def report_compute(*, study: Study, report: StudyReport | None = None) -> StudyReport:
    """Compute the study's report now into ``report`` (a claimed, running row; a new one
    when None) and store it as done, or as failed with the error."""
    if report is None:
        report = StudyReport.objects.create(
            study=study, status=ReportStatus.RUNNING, started_at=timezone.now()
        )
    study = Study.objects.select_related("codebook").get(pk=study.pk)
    try:
        mark = labels_mark(study=study)  # before the labels: see labels_mark
        inputs = report_inputs_fetch(study=study)
        _progress(report, 10)
        last = [10]

        def progress(done: int, total: int) -> None:
            percent = 10 + int(85 * done / total)
            if percent >= last[0] + 5:
                last[0] = percent
                _progress(report, percent)

        value = report_build(inputs, n_boot=bootstrap_resamples(), progress=progress)
    except Exception as exc:  # stored for the page; the job still fails loudly
        logger.exception("report %s of study %s failed", report.pk, study.slug)
        StudyReport.objects.filter(pk=report.pk).update(
            status=ReportStatus.FAILED,
            error=f"{type(exc).__name__}: {exc}",
            finished_at=timezone.now(),
        )
        raise
    if "claim_metrics" in value:
        _veriscore_cohort_freeze(study, report, value)
    StudyReport.objects.filter(pk=report.pk).update(
        status=ReportStatus.DONE,
        progress=100,
        codebook_name=study.codebook.name,
        codebook_version=study.codebook.version,
        labels_digest=inputs.labels_digest,
        labels_mark=mark,
        stage=gate_stage(study=study),
        report=value,
        finished_at=timezone.now(),
    )
    report.refresh_from_db()
    return report


def _veriscore_cohort_freeze(study: Study, report: StudyReport, value: dict[str, Any]) -> None:
    """Score the report against the study's frozen VeriScore cohort, freezing it now if
    this is the first report after the freeze with every included answer assessed; else
    say why the report's K is provisional (in ``value``, in place)."""
    metrics = value["claim_metrics"]
    frozen = VeriScoreCohort.objects.filter(study=study).first()
    study_frozen = StudyFreeze.objects.filter(study=study).exists()
    complete = not metrics.get("awaiting_final") and not value.get("sealed_partitions")
    if frozen is None and study_frozen and complete:
        cohort = metrics.get("veriscore_cohort") or {}
        answers = sum(int(entry.get("answers") or 0) for entry in cohort.values())
        with transaction.atomic():
            frozen, _ = VeriScoreCohort.objects.get_or_create(
                study=study,
                defaults={"cohort": cohort, "answers": answers, "report": report},
            )
    if frozen is not None:
        metrics["veriscore_cohort"] = frozen.cohort
        metrics["veriscore_cohort_state"] = {
            "frozen": True,
            "frozen_at": frozen.frozen_at.isoformat(),
            "answers": frozen.answers,
        }
        return
    if not study_frozen:
        why = "the study is not frozen yet"
    else:
        why = f"{metrics.get('awaiting_final') or 0} included answers await a final record"
    metrics["veriscore_cohort_state"] = {"frozen": False, "why": why}


def report_refresh(*, study: Study) -> StudyReport | None:
    """Request a report and run every queued one this worker may claim; the last report
    computed here, or None when another run has it (or it was already done)."""
    report_request(study=study)
    last = None
    for _ in range(MAX_RUNS_PER_REFRESH):
        claimed = report_claim(study=study)
        if claimed is None:
            break
        last = report_compute(study=study, report=claimed)
    return last


# --- predictions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PredictionImport:
    """The outcome of one prediction file: the set (new, or the same file's earlier one),
    or the problems that refused it (nothing imported). ``error_count`` is exact;
    ``problems`` keeps the first ``STORED_ERRORS_LIMIT``."""

    prediction_set: PredictionSet | None
    created: bool
    problems: tuple[LineProblem, ...] = ()
    error_count: int = 0
    lines: int = 0


class PredictionsRefused(Exception):
    """A prediction set asked for what it may not be (gold); ``code`` is a reason code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def prediction_set_refuse_as_gold(*, prediction_set: PredictionSet) -> None:
    """Refuse ``prediction_set`` as a gold standard, always (call it wherever gold items or
    a gold key are chosen). A judge is never its own gold (DESIGN.md), and a system's
    output is what gold measures, not gold; the reason names which it is."""
    who = "an automated judge's" if prediction_set.kind == PredictorKind.JUDGE else "a system's"
    raise PredictionsRefused(
        PREDICTIONS_NOT_GOLD,
        f"prediction set {prediction_set.pk} holds {who} values ({prediction_set.name} "
        f"{prediction_set.version}); predictions are scored against gold and never serve as "
        "gold",
    )


#: Bad lines kept for the page and the API (the count is always exact).
STORED_ERRORS_LIMIT = 1_000


def _size_problem(size: int | None) -> LineProblem | None:
    limit = settings.IMPORT_MAX_FILE_BYTES
    if size is None or size <= limit:
        return None
    return LineProblem(
        0,
        codes.FILE_TOO_LARGE,
        f"the file is {size:,} bytes; the limit for one import is {limit:,} bytes: split it",
    )


def _refused(problems: list[LineProblem], count: int, lines: int) -> PredictionImport:
    return PredictionImport(None, False, tuple(problems), count, lines)


def predictions_import(
    *, study: Study, data: bytes | BinaryIO, file_name: str, user: Any = None
) -> PredictionImport:
    """Check a prediction file whole and import it atomically, then score it.

    Refused (nothing stored) when the study is not frozen, the file is over the import
    limit, or any line is bad: every bad line is listed with its reason code. The same
    file (same SHA-256) imported again returns the earlier set unchanged."""
    stream = as_stream(data)
    too_large = _size_problem(stream_size(stream))
    if too_large is not None:
        return _refused([too_large], 1, 0)
    if not StudyFreeze.objects.filter(study=study).exists():
        problem = LineProblem(
            0,
            STUDY_NOT_FROZEN,
            f"study {study.slug} is not frozen; predictions are scored against the final "
            "labels of a frozen study (freeze it on its partitions page first)",
        )
        return _refused([problem], 1, 0)
    codebook = study.codebook
    fields = prediction_fields(codebook.unit, codebook.definition or {})
    reader = HashingReader(stream)
    problems: list[LineProblem] = []
    count = 0

    def refuse(line: int, code: str, message: str) -> None:
        nonlocal count
        count += 1
        if len(problems) < STORED_ERRORS_LIMIT:
            problems.append(LineProblem(line, code, message))

    header = None
    units: dict[str, int] = {}
    values: dict[int, Any] = {}
    lines = 0
    for number, raw in read_lines(reader, max_line_bytes=MAX_LINE_BYTES):
        lines = number
        if number - 1 > MAX_LINES:
            refuse(number, codes.TOO_MANY_LINES, f"a file holds at most {MAX_LINES:,} lines")
            break
        try:
            value = decode_line(raw)
            if number == 1:
                header = header_parse(
                    value, codebook=(codebook.name, codebook.version), fields=fields
                )
                units = study_unit_ids_by_digest(study=study)
                continue
            if header is None:
                break
            digest, predicted = line_parse(value, fields[header.field])
        except (ContractError, PredictionLineError) as exc:
            refuse(number, exc.code, exc.message)
            if number == 1:
                break
            continue
        unit = units.get(digest)
        if unit is None:
            refuse(number, UNKNOWN_UNIT, f"unit {digest} is not a unit of study {study.slug}")
        elif unit in values:
            refuse(number, DUPLICATE_UNIT, f"unit {digest} is predicted twice in this file")
        else:
            values[unit] = predicted
    reader.drain()
    if lines == 0:
        refuse(0, codes.EMPTY_FILE, "the file is empty; line 1 must be the header")
    elif header is not None and not values and not count:
        refuse(0, NO_PREDICTIONS, "the file has a header and no prediction line")
    if count:
        return _refused(problems, count, lines)
    assert header is not None
    existing = PredictionSet.objects.filter(study=study, file_sha256=reader.hexdigest()).first()
    if existing is not None:
        return PredictionImport(existing, False, lines=lines)
    with transaction.atomic():
        prediction_set = PredictionSet.objects.create(
            study=study,
            kind=header.kind,
            name=header.name,
            version=header.version,
            field=header.field,
            positive=header.positive,
            file_name=file_name[:255],
            file_sha256=reader.hexdigest(),
            file_bytes=reader.bytes_read,
            predictions=len(values),
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        _predictions_insert(prediction_set, values)
        prediction_set_score(prediction_set=prediction_set, predictions=values)
    return PredictionImport(prediction_set, True, lines=lines)


#: Prediction rows per INSERT on PostgreSQL.
INSERT_CHUNK = 50_000


def _predictions_insert(prediction_set: PredictionSet, values: dict[int, Any]) -> None:
    """Insert a set's values: on PostgreSQL one ``INSERT … SELECT FROM unnest`` per
    chunk (no model instance per row: 10^5 lines in a fraction of a second), elsewhere
    ``bulk_create``. ``None`` (U) is stored as SQL NULL, which the JSON field reads back as
    ``None``."""
    if connection.vendor != "postgresql":
        Prediction.objects.bulk_create(
            [
                Prediction(prediction_set=prediction_set, unit_id=unit, value=value)
                for unit, value in values.items()
            ],
            batch_size=5_000,
        )
        return
    table = connection.ops.quote_name(Prediction._meta.db_table)
    sql = (
        f"INSERT INTO {table} (prediction_set_id, unit_id, value) "  # noqa: S608 (names, not data)
        "SELECT %s, u, v::jsonb FROM unnest(%s::bigint[], %s::text[]) AS t(u, v)"
    )
    units = list(values)
    texts = [None if v is None else json.dumps(v) for v in values.values()]
    with connection.cursor() as cursor:
        for start in range(0, len(units), INSERT_CHUNK):
            end = start + INSERT_CHUNK
            cursor.execute(sql, [prediction_set.pk, units[start:end], texts[start:end]])


def prediction_set_score(
    *, prediction_set: PredictionSet, predictions: dict[int, Any] | None = None
) -> PredictionSet:
    """Score the set against the study's current final labels and store the scores (a
    bootstrap of ``RELIABILITY_BOOTSTRAP`` resamples clustered by domain, seed 0)."""
    if predictions is None:
        predictions = prediction_values_fetch(prediction_set=prediction_set)
    gold = prediction_gold_fetch(study=prediction_set.study, field=prediction_set.field)
    result = prediction_scores(
        predictions, gold, positive=prediction_set.positive, n_boot=bootstrap_resamples()
    )
    scored = sorted(unit for unit in predictions if unit in gold and gold[unit].final)
    digest = canonical_digest_unchecked([[unit, gold[unit].value] for unit in scored])
    result["field"] = prediction_set.field
    prediction_set.scores = result
    prediction_set.gold_digest = digest
    prediction_set.scored_at = timezone.now()
    PredictionSet.objects.filter(pk=prediction_set.pk).update(
        scores=result, gold_digest=digest, scored_at=prediction_set.scored_at
    )
    return prediction_set


# --- stored comparisons (Table II) ------------------------------------------------------------


def comparison_setting_store(*, setting: Setting) -> None:
    """Keep a setting that was read afresh (``setting.read``) as the study's stored one
    (metrics.models.ComparisonSetting, one row per study, written over), so that the next
    page reads it in two queries; nothing for one read as stored. Safe against a
    concurrent request storing the same study's (an upsert)."""
    if setting.read is None:
        return
    mark, data = setting.read
    columns = {f"{MEMBER_COLUMNS[p]}_id": pk for p, pk in data["studies"].items()}
    row = ComparisonSetting(
        study=setting.study, mark=mark, data=data, units=setting.units, **columns
    )
    ComparisonSetting.objects.bulk_create(
        [row],
        update_conflicts=True,
        unique_fields=["study"],
        update_fields=["mark", "data", "units", "read_at", *MEMBER_COLUMNS.values()],
    )


def comparison_request(*, study: Study, evaluated: int, baseline: int) -> None:
    """Ask for the comparison of ``evaluated`` against ``baseline`` (pipelines of the
    study's setting, checked by the caller): a row without data that the next
    :func:`comparisons_refresh` computes. Nothing when the pair already has a row."""
    ComparisonSummary.objects.get_or_create(
        study=study, evaluated_id=evaluated, baseline_id=baseline
    )


def comparison_follow_ups(study_id: int) -> list[tuple[str, int]]:
    """The comparison recounts that new outcomes of ``study_id``'s labels ask for, by job
    name (the follow job, queued by the label jobs, queues them): one per study whose
    stored large setting reads the study's labels."""
    return [(STUDY_COMPARISON_REFRESH, pk) for pk in comparison_followers(study_id)]


def comparisons_refresh(*, study: Study) -> dict[str, int]:
    """Compute and store every comparison of the study that is behind: each pair asked for
    (:func:`comparison_request`) and each pair of its setting's pairwise study. The mark is
    read before computing, so a label that arrives meanwhile leaves the row behind and it
    is computed again. A setting small enough for the page to compute inline stores
    nothing (its rows are removed); a study that is no protocol study has none."""
    setting = protocol_setting(study)
    rows = ComparisonSummary.objects.filter(study=study)
    if setting is not None:
        comparison_setting_store(setting=setting)
    if setting is None or comparison_inline(setting):
        rows.delete()
        return {"computed": 0, "current": 0}
    for evaluated, baseline, _ in setting.pairs:
        comparison_request(study=study, evaluated=evaluated, baseline=baseline)
    mark = comparison_mark(setting)
    pipelines = {p.pk for p in setting.pipelines}
    done = {"computed": 0, "current": 0}
    for row in rows.order_by("id"):
        if row.evaluated_id not in pipelines or row.baseline_id not in pipelines:
            row.delete()  # the pipeline left the setting: nothing to compare any more
            continue
        if row.data is not None and row.mark == mark:
            done["current"] += 1
            continue
        data = comparison_data(setting, row.evaluated_id, row.baseline_id)
        ComparisonSummary.objects.filter(pk=row.pk).update(
            mark=mark, data=data, computed_at=timezone.now()
        )
        done["computed"] += 1
    return done
