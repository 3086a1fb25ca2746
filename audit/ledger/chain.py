"""The claim ledger's chain: appending a checked record's outcome (once), and walking the
whole chain again to verify it (the hash chain itself is audit.contract.ledger)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db import transaction
from django.utils import timezone

from audit.archive.mapping import format_instant
from audit.archive.models import Study, Unit
from audit.contract import CHECKER_VERSION, CheckResult
from audit.contract.ledger import ENTRY_FIELDS, GENESIS, ChainProblem, entry_hash, verify_chain
from audit.ledger.models import LedgerEntry, LedgerHead, StudyGate


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
