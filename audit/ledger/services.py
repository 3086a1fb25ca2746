"""The claim ledger and the validation gate: appends, verification, recomputation."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from audit.archive.mapping import format_instant
from audit.archive.models import Study, Unit, UnitState
from audit.conformance import SUITE_VERSION, run_suite
from audit.contract import CHECKER_VERSION, CheckResult
from audit.contract.canonical import canonical_digest
from audit.contract.ledger import ENTRY_FIELDS, GENESIS, ChainProblem, entry_hash, verify_chain
from audit.ledger.gate import GateInputs, GateReport, evaluate_gate
from audit.ledger.models import ConformanceRun, LedgerEntry, LedgerHead, StudyGate
from audit.partitions.models import StudyFreeze
from metrics.selectors import report_is_current


def ledger_append(
    *, study: Study, unit: Unit | None, unit_digest: str, result: CheckResult, kind: str
) -> tuple[LedgerEntry, bool]:
    """Append the outcome of one checked record; a record already in the ledger is not
    appended again (returns it with ``False``), so a retried job changes nothing."""
    existing = LedgerEntry.objects.filter(record_digest=result.record_digest).first()
    if existing is not None:
        return existing, False
    gate = StudyGate.objects.filter(study=study).values_list("reached", flat=True).first()
    with transaction.atomic():
        head, _ = LedgerHead.objects.select_for_update().get_or_create(
            pk=1, defaults={"seq": 0, "entry_hash": GENESIS}
        )
        # Another worker may have appended this record while we waited for the lock.
        existing = LedgerEntry.objects.filter(record_digest=result.record_digest).first()
        if existing is not None:
            return existing, False
        fields: dict[str, Any] = {
            "seq": head.seq + 1,
            "study": study.slug,
            "unit_digest": unit_digest,
            "record_digest": result.record_digest,
            "kind": kind,
            "codebook": f"{study.codebook.name} {study.codebook.version}",
            "checker_version": CHECKER_VERSION,
            "stage": gate,
            "ok": result.ok,
            "reason": result.reason,
            "endpoint": result.endpoint,
            "short_circuit": result.short_circuit,
            "priority": result.priority,
            "action": result.action,
            "recorded_at": format_instant(timezone.now()),
            "prev_hash": head.entry_hash,
        }
        fields["entry_hash"] = entry_hash(fields)
        entry = LedgerEntry.objects.create(
            study=study,
            study_slug=fields.pop("study"),
            unit=unit,
            **fields,
        )
        head.seq = entry.seq
        head.entry_hash = entry.entry_hash
        head.save(update_fields=["seq", "entry_hash"])
    return entry, True


def _entries() -> Iterator[dict[str, Any]]:
    names = [name for name in ENTRY_FIELDS if name != "study"]
    rows = LedgerEntry.objects.order_by("seq").values(
        *names, "study_slug", "prev_hash", "entry_hash"
    )
    for row in rows.iterator(chunk_size=5_000):
        row["study"] = row.pop("study_slug")
        yield row


def ledger_verify() -> tuple[int, ChainProblem | None]:
    """Re-walk the whole chain from the database (streamed): entries checked, and the
    first one removed, reordered or edited behind the application's back. The head row
    catches a truncated tail."""
    checked, problem = verify_chain(_entries())
    if problem is not None:
        return checked, problem
    head = LedgerHead.objects.filter(pk=1).first()
    if head is not None and head.seq != checked:
        return checked, ChainProblem(
            checked + 1,
            "removed",
            f"the ledger ends at entry {checked} but {head.seq} were appended",
        )
    return checked, None


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
