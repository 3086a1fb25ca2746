"""The claim ledger's chain: appending a checked record's outcome (once), walking the whole
chain again to verify it, comparing it with a head kept elsewhere, and matching every
label to its entry (the hash chain itself is audit.contract.ledger)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from django.db import transaction
from django.db.models import Exists, Max, OuterRef
from django.utils import timezone

from annotator.labelling.models import Label
from audit.archive.mapping import format_instant
from audit.archive.models import Study, Unit
from audit.archive.records import UNIT_VALUES, record_body, unit_contents_of
from audit.contract import CHECKER_VERSION, CheckResult
from audit.contract.digests import record_digest
from audit.contract.ledger import (
    ENTRY_FIELDS,
    GENESIS,
    ChainProblem,
    Head,
    entry_hash,
    head_problem,
    verify_chain,
)
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


@dataclass(frozen=True)
class Outcome:
    """One checked record to append: what :func:`ledger_append_many` needs of it."""

    unit_id: int | None
    unit_digest: str
    result: CheckResult
    kind: str


def ledger_append_many(*, study: Study, outcomes: list[Outcome]) -> int:
    """Append the outcomes of many checked records of one study in one transaction (one
    lock of the head, one INSERT), chained exactly as :func:`ledger_append` chains one:
    same fields, same order as given. Records already in the ledger (or given twice) are
    skipped, so a retried batch changes nothing. Returns how many were appended."""
    if not outcomes:
        return 0
    gate = StudyGate.objects.filter(study=study).values_list("reached", flat=True).first()
    codebook = f"{study.codebook.name} {study.codebook.version}"
    with transaction.atomic():
        head, _ = LedgerHead.objects.select_for_update().get_or_create(
            pk=1, defaults={"seq": 0, "entry_hash": GENESIS}
        )
        # Read under the lock: another worker may have appended some of them meanwhile.
        skip = set(
            LedgerEntry.objects.filter(
                record_digest__in=[o.result.record_digest for o in outcomes]
            ).values_list("record_digest", flat=True)
        )
        recorded_at = format_instant(timezone.now())
        seq, prev = head.seq, head.entry_hash
        rows = []
        for outcome in outcomes:
            result = outcome.result
            if result.record_digest in skip:
                continue
            skip.add(result.record_digest)
            seq += 1
            fields: dict[str, Any] = {
                "seq": seq,
                "study": study.slug,
                "unit_digest": outcome.unit_digest,
                "record_digest": result.record_digest,
                "kind": outcome.kind,
                "codebook": codebook,
                "checker_version": CHECKER_VERSION,
                "stage": gate,
                "ok": result.ok,
                "reason": result.reason,
                "endpoint": result.endpoint,
                "short_circuit": result.short_circuit,
                "priority": result.priority,
                "action": result.action,
                "recorded_at": recorded_at,
                "prev_hash": prev,
            }
            fields["entry_hash"] = prev = entry_hash(fields)
            del fields["study"]
            rows.append(
                LedgerEntry(study=study, study_slug=study.slug, unit_id=outcome.unit_id, **fields)
            )
        if not rows:
            return 0
        LedgerEntry.objects.bulk_create(rows)
        head.seq, head.entry_hash = seq, prev
        head.save(update_fields=["seq", "entry_hash"])
    return len(rows)


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


def ledger_head() -> Head:
    """The chain's head as the head row holds it (entry 0 and the genesis hash before the
    first append)."""
    row = LedgerHead.objects.filter(pk=1).values("seq", "entry_hash").first()
    return Head(row["seq"], row["entry_hash"]) if row else Head(0, GENESIS)


def ledger_head_check(*, expected: Head) -> str | None:
    """Whether the stored chain still passes through ``expected``, a head kept outside
    the database (a release's, or a copy an operator keeps): ``None``, or what differs.
    A chain truncated and restarted, rewound, or rewritten up to that entry differs."""
    last = LedgerEntry.objects.aggregate(top=Max("seq"))["top"] or 0
    stored = (
        LedgerEntry.objects.filter(seq=expected.seq).values_list("entry_hash", flat=True).first()
    )
    return head_problem(expected, last_seq=last, hash_at_seq=stored)


#: Label problems kept for the report; the rest are counted.
LABEL_PROBLEMS_KEPT = 100
#: Units whose labels are rebuilt per round trip (as releases read them).
_CHUNK = 1_000
_LABEL_VALUES = ("id", "unit_id", "kind", "annotation", "parents", "record_digest")
EDITED = "edited"
MISSING = "missing"
MISMATCHED = "mismatched"


@dataclass
class LabelsReport:
    """What :func:`ledger_labels_verify` found: labels rebuilt, labels whose outcome is not
    in the ledger yet (their job has not run), and the problems (the first
    LABEL_PROBLEMS_KEPT as ``(kind, message)``, all of them counted)."""

    labels: int = 0
    entries: int = 0
    awaiting: int = 0
    problems: list[tuple[str, str]] = field(default_factory=list)
    problem_count: int = 0

    def add(self, kind: str, message: str) -> None:
        self.problem_count += 1
        if len(self.problems) < LABEL_PROBLEMS_KEPT:
            self.problems.append((kind, message))


def _chunks(iterator: Iterator[Any], size: int) -> Iterator[list[Any]]:
    while batch := list(islice(iterator, size)):
        yield batch


def _label_name(label: dict[str, Any], study: Study, unit_digest: str) -> str:
    return f"label {label['id']} ({label['kind']}, study {study.slug}, unit {unit_digest[:12]}…)"


def ledger_labels_verify() -> LabelsReport:
    """Rebuild every label's record from the label and the archive rows it refers to,
    check its digest against the stored one, and match it to its ledger entry; then name
    every ledger entry whose record no label holds. Finds what was done with the triggers
    off: a label edited in place (its record no longer rebuilds to its digest), edited and
    given a new digest, or deleted (its entry's record is held by no label). Streamed:
    units and their labels and entries are read a chunk at a time."""
    report = LabelsReport()
    awaiting: dict[tuple[int, str], list[int]] = defaultdict(list)
    studies = Study.objects.select_related("codebook").filter(
        Exists(Label.objects.filter(study=OuterRef("pk")))
    )
    for study in studies.order_by("id"):
        units = (
            Unit.objects.filter(study=study)
            .filter(Exists(Label.objects.filter(unit=OuterRef("pk"))))
            .order_by("id")
            .values(*UNIT_VALUES)
            .iterator(chunk_size=_CHUNK)
        )
        for chunk in _chunks(units, _CHUNK):
            _labels_chunk(study, chunk, report, awaiting)
    orphans = (
        LedgerEntry.objects.filter(
            ~Exists(Label.objects.filter(record_digest=OuterRef("record_digest")))
        )
        .order_by("seq")
        .values("seq", "record_digest", "unit_id", "unit_digest", "kind", "study_slug")
    )
    for entry in orphans.iterator(chunk_size=_CHUNK):
        without = awaiting.get((entry["unit_id"], entry["kind"]), [])
        hint = (
            f" (label {', '.join(map(str, without[:5]))} of that unit has no ledger entry: "
            "edited and given a new digest?)"
            if without
            else ""
        )
        report.add(
            MISSING,
            f"ledger entry {entry['seq']} records a {entry['kind']} label of unit "
            f"{entry['unit_digest'][:12]}… in study {entry['study_slug']} (record "
            f"{entry['record_digest']}), but no label holds that record: it was deleted "
            f"or edited{hint}",
        )
    report.entries = LedgerEntry.objects.count()
    return report


def _labels_chunk(
    study: Study,
    chunk: list[dict[str, Any]],
    report: LabelsReport,
    awaiting: dict[tuple[int, str], list[int]],
) -> None:
    contents = unit_contents_of(study=study, units=chunk)
    digests = {unit["id"]: unit["digest"] for unit in chunk}
    labels = list(
        Label.objects.filter(unit_id__in=list(digests)).order_by("id").values(*_LABEL_VALUES)
    )
    entries = {
        entry["record_digest"]: entry
        for entry in LedgerEntry.objects.filter(
            record_digest__in=[label["record_digest"] for label in labels]
        ).values("seq", "record_digest", "unit_id", "kind")
    }
    for label in labels:
        report.labels += 1
        unit_digest = digests[label["unit_id"]]
        body = record_body(
            study=study,
            content=contents[label["unit_id"]],
            annotation=label["annotation"],
            parents=label["parents"],
        )
        try:
            rebuilt = record_digest(body)
        except (TypeError, ValueError) as exc:
            rebuilt = f"nothing (it cannot be serialized: {exc})"
        if rebuilt != label["record_digest"]:
            report.add(
                EDITED,
                f"{_label_name(label, study, unit_digest)} was edited: its record rebuilds to "
                f"{rebuilt}, not to its stored digest {label['record_digest']} (the label or "
                "the archive rows it refers to changed)",
            )
            continue
        entry = entries.get(label["record_digest"])
        if entry is None and label["kind"] == "gold":
            pass  # a gold label is scored against its key and never gets an outcome
        elif entry is None:
            report.awaiting += 1
            awaiting[(label["unit_id"], label["kind"])].append(label["id"])
        elif entry["unit_id"] not in (None, label["unit_id"]) or entry["kind"] != label["kind"]:
            report.add(
                MISMATCHED,
                f"{_label_name(label, study, unit_digest)} does not match its ledger entry "
                f"{entry['seq']}, which records a {entry['kind']} label of another unit or kind",
            )
