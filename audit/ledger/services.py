"""The validation gate: the conformance run it starts from, its inputs, its recomputation.
(Appends to the claim ledger and its verification: audit.ledger.chain.)"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q

from audit.archive.models import Study, Unit, UnitState
from audit.conformance import SUITE_VERSION, run_suite
from audit.contract import CHECKER_VERSION
from audit.contract.canonical import canonical_digest
from audit.ledger.gate import GateInputs, GateReport, evaluate_gate
from audit.ledger.models import ConformanceRun, LedgerEntry, OutcomeSummary, StudyGate
from audit.ledger.selectors import outcomes_counted_inline, outcomes_mark, summary_data
from audit.partitions.models import StudyFreeze
from metrics.selectors import report_is_current


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


def gate_inputs(*, study: Study) -> GateInputs:
    """Everything the gate needs, in four queries."""
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
    return GateInputs(
        checker_version=CHECKER_VERSION,
        conformance_passed=run.passed if run else None,
        records_total=records["total"],
        records_refused=records["refused"],
        units_total=units["total"],
        units_fully_labelled=units["fully_labelled"],
        overlap=study.overlap,
        reliability_reported=report_is_current(study=study),
        units_disputed=units["disputed"],
        units_adjudicated=units["adjudicated"],
        # Partitions cannot change once frozen (trigger), and freezing refuses leakage.
        frozen=StudyFreeze.objects.filter(study=study).exists(),
    )


def gate_stored(*, study: Study) -> StudyGate:
    """The study's stored gate (one query); computed and stored now if there is none."""
    gate = StudyGate.objects.filter(study=study).first()
    if gate is None:
        gate_recompute(study=study)
        gate = StudyGate.objects.get(study=study)
    return gate


def gate_recompute(*, study: Study) -> GateReport:
    """Recompute and store a study's gate (runs the conformance suite first if this
    checker version has never been through it)."""
    conformance_record()
    report = evaluate_gate(gate_inputs(study=study))
    StudyGate.objects.update_or_create(
        study=study, defaults={"reached": report.reached, "report": report.as_dict()}
    )
    return report


def outcomes_summary_refresh(*, study: Study) -> str:
    """Count a large study's outcomes and store them with the mark read before counting
    (a label or entry that arrives meanwhile leaves the summary marked behind, so it is
    counted again). A study small enough to count in a request stores nothing."""
    if outcomes_counted_inline(study=study):
        OutcomeSummary.objects.filter(study=study).delete()
        return "inline"
    mark = outcomes_mark(study=study)
    stored = OutcomeSummary.objects.filter(study=study).values_list("mark", flat=True).first()
    if stored == mark:
        return "current"
    OutcomeSummary.objects.update_or_create(
        study=study, defaults={"mark": mark, "data": summary_data(study)}
    )
    return "counted"
