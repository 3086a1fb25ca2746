"""The validation gate: the conformance run it starts from, its inputs, its recomputation.
(Appends to the claim ledger and its verification: audit.ledger.chain.)"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from audit.archive.models import Study, Unit, UnitState
from audit.conformance import SUITE_VERSION, run_suite
from audit.contract import CHECKER_VERSION
from audit.contract.canonical import canonical_digest
from audit.ledger.gate import (
    LISTED,
    GateInputs,
    GateReport,
    ReliabilityInputs,
    alphas_of_report,
    evaluate_gate,
)
from audit.ledger.models import ConformanceRun, LedgerEntry, OutcomeSummary, StudyGate
from audit.ledger.selectors import outcomes_counted_inline, outcomes_mark, summary_data
from audit.partitions.freeze import reliability_thresholds, thresholds_with_defaults
from audit.partitions.models import StudyFreeze
from audit.summaries import summary_refresh
from metrics.selectors import labels_digest, report_latest_done


@dataclass(frozen=True)
class ConformanceOutcome:
    run: ConformanceRun
    created: bool


def conformance_record(*, force: bool = False) -> ConformanceOutcome:
    """Run the conformance suite against this checker version, unless it already ran."""
    if not force:
        run = ConformanceRun.objects.filter(checker_version=CHECKER_VERSION).first()
        if run is not None:
            return ConformanceOutcome(run, False)
    result = run_suite()
    run = ConformanceRun.objects.create(
        checker_version=CHECKER_VERSION,
        suite_version=SUITE_VERSION,
        passed=result.ok,
        summary=result.summary,
        summary_sha256=canonical_digest(result.summary),
        mismatches=list(result.mismatches),
    )
    return ConformanceOutcome(run, True)


def gate_reliability(*, study: Study, freeze: StudyFreeze | None) -> ReliabilityInputs:
    """The latest reliability report's alphas, whether it is on the current independent
    labels, and the thresholds: the frozen ones once frozen, else the study's own (with
    the defaults where unset)."""
    thresholds = freeze.thresholds if freeze else thresholds_with_defaults(study.thresholds or {})
    tentative, firm = reliability_thresholds(thresholds)
    report = report_latest_done(study=study)
    if report is None:
        return ReliabilityInputs(False, False, (), tentative, firm)
    return ReliabilityInputs(
        computed=True,
        current=report.labels_digest == labels_digest(study=study),
        alphas=alphas_of_report(report.report or {}, study.codebook.digest),
        tentative=tentative,
        firm=firm,
    )


def gate_inputs(*, study: Study) -> GateInputs:
    """Everything the gate needs, in a fixed number of queries (the labels' digest reads
    the study's current independent labels)."""
    run = ConformanceRun.objects.filter(checker_version=CHECKER_VERSION).first()
    records = LedgerEntry.objects.filter(study=study).aggregate(
        total=Count("id"), refused=Count("id", filter=Q(ok=False))
    )
    units = Unit.objects.filter(study=study).aggregate(
        total=Count("id"),
        fully_labelled=Count("id", filter=Q(submitted_count__gte=study.overlap)),
        disputed=Count("id", filter=Q(state=UnitState.DISPUTED)),
        adjudicated=Count("id", filter=Q(state=UnitState.ADJUDICATED)),
    )
    short: tuple[str, ...] = ()
    if study.overlap >= 2 and units["fully_labelled"] < units["total"]:
        short = tuple(
            Unit.objects.filter(study=study, submitted_count__lt=study.overlap)
            .order_by("id")
            .values_list("digest", flat=True)[:LISTED]
        )
    # Partitions cannot change once frozen (trigger), and freezing refuses leakage.
    freeze = StudyFreeze.objects.filter(study=study).first()
    return GateInputs(
        checker_version=CHECKER_VERSION,
        conformance_passed=run.passed if run else None,
        records_total=records["total"],
        records_refused=records["refused"],
        units_total=units["total"],
        units_fully_labelled=units["fully_labelled"],
        overlap=study.overlap,
        reliability=gate_reliability(study=study, freeze=freeze),
        units_disputed=units["disputed"],
        units_adjudicated=units["adjudicated"],
        frozen=freeze is not None,
        units_short=short,
    )


def gate_stored(*, study: Study) -> StudyGate:
    """The study's stored gate (one query); computed and stored now if it never was."""
    gate = StudyGate.objects.filter(study=study).first()
    if gate is None or not gate.report:
        gate_recompute(study=study)
        gate = StudyGate.objects.get(study=study)
    return gate


def _gate_run_start(study: Study) -> int:
    """Take the study's next gate run number."""
    with transaction.atomic():
        # By id: an instance would get this unfinished row cached as its ``gate``.
        gate, _ = StudyGate.objects.select_for_update().get_or_create(
            study_id=study.pk, defaults={"reached": None, "report": {}}
        )
        gate.runs += 1
        gate.save(update_fields=["runs"])
    return gate.runs


def gate_recompute(*, study: Study) -> GateReport:
    """Recompute and store a study's gate (runs the conformance suite first if this
    checker version has never been through it). Idempotent; a run whose inputs are older
    than a stored run's does not overwrite it."""
    conformance_record()
    run = _gate_run_start(study)
    report = evaluate_gate(gate_inputs(study=study))
    StudyGate.objects.filter(study=study, computed_run__lt=run).update(
        reached=report.reached,
        report=report.as_dict(),
        computed_run=run,
        computed_at=timezone.now(),
    )
    return report


def outcomes_summary_refresh(*, study: Study) -> str:
    """Count a large study's outcomes and store them with the mark read before counting
    (a label or entry that arrives meanwhile leaves the summary marked behind, so it is
    counted again). A study small enough to count in a request stores nothing."""
    return summary_refresh(
        model=OutcomeSummary,
        study=study,
        inline=outcomes_counted_inline(study=study),
        mark=lambda: outcomes_mark(study=study),
        data=lambda: summary_data(study),
    )
