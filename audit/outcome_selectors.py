"""The researcher's outcomes: endpoint outcomes of a study's records, fetched once and
counted purely (DESIGN.md, "The four predicates and the endpoint").

``outcomes_fetch`` reads everything in three queries (units, labels, ledger entries),
whatever the size of the study; the functions below it work on plain values only.
Outcomes are the ones the claim ledger recorded: a record whose outcome job has not run
yet is counted as "not computed", never recomputed here behind the ledger's back.

The *final* record of a unit is its adjudicated label if it has one, else its consensus
label while the unit is agreed (a consensus left behind by a later revision that broke the
agreement is not final). Units without a final record await agreement or adjudication.
Numbers of a sealed partition (``partition_sealed``) are never computed into a table.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models.fields.json import KeyTransform

from annotator.models import Label, LabelKind
from audit.contract import policy_action
from audit.contract.cells import spreadsheet_safe
from audit.contract.endpoint import ABSTAIN, CONTEXTUALIZE, PASS, REVIEW
from audit.gate import STAGES, claim_boundary
from audit.models import CodebookUnit, LedgerEntry, Partition, Study, StudyGate, Unit, UnitState

UNASSIGNED = "unassigned"
#: Partition keys in the order pages show them; units without a partition are "unassigned".
PARTITIONS = (Partition.CALIBRATION.value, Partition.TEST.value, UNASSIGNED)
PARTITION_LABELS = {
    Partition.CALIBRATION.value: "Calibration",
    Partition.TEST.value: "Test (held out)",
    UNASSIGNED: "Unassigned",
}
POLICIES = ("complete_case", "short_circuit")
POLICY_LABELS = {
    "complete_case": "Complete-case R_O (primary)",
    "short_circuit": "Short-circuit (sensitivity)",
}
ACTIONS = (PASS, CONTEXTUALIZE, REVIEW, ABSTAIN)
REVIEW_ACTIONS = (CONTEXTUALIZE, REVIEW)
VERDICTS = ("cited", "supported", "accurate", "timely", "relevant", "complete")
NO_ROLE = ""
SEALED_NOTE = "sealed until the study is frozen"


def partition_sealed(study: Study, partition: str) -> bool:
    """Whether a partition's outcome numbers stay hidden from every page and download:
    the held-out test partition, until the study is frozen (``StudyFreeze``).

    A freeze is irreversible, so the answer is read once per Study instance (Django
    caches the reverse one-to-one, a missing freeze included, and ``study_freeze`` sets
    it): a list page asks per row without a query per row, and a stale instance can only
    err on the sealed side.
    """
    if partition != Partition.TEST:
        return False
    return not hasattr(study, "freeze")


# --- fetched values ----------------------------------------------------------------------


@dataclass(frozen=True)
class UnitRow:
    id: int
    digest: str
    partition: str  # a key of PARTITIONS
    priority: float | None
    state: str


@dataclass(frozen=True)
class RecordRow:
    id: int
    unit_id: int
    kind: str
    annotator_id: int | None
    revision: int
    record_digest: str
    source_role: str  # NO_ROLE when the annotation has none (answer-claims)
    verdicts: tuple[bool | None, ...] = ()  # in VERDICTS order (answer-claims)


@dataclass(frozen=True)
class Outcome:
    """What the ledger recorded for one record."""

    seq: int
    ok: bool
    endpoint: int | None
    short_circuit: int | None
    action: str | None
    priority: float | None


@dataclass(frozen=True)
class OutcomeData:
    codebook_unit: str
    answerability_policy: str | None
    source_roles: tuple[tuple[str, str], ...]  # (key, label) in the codebook's order
    units: tuple[UnitRow, ...]
    records: tuple[RecordRow, ...]
    outcomes: dict[str, Outcome]


def _role_of(value: Any) -> str:
    return value if isinstance(value, str) else NO_ROLE


def _verdict_of(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def outcomes_fetch(*, study: Study) -> OutcomeData:
    """Three queries: the study's units, its labels (only the annotation keys counted
    here, not whole annotations) and its ledger entries."""
    definition = study.codebook.definition or {}
    is_tuple = study.codebook.unit == CodebookUnit.TUPLE
    units = tuple(
        UnitRow(id=pk, digest=digest, partition=partition or UNASSIGNED, priority=prio, state=st)
        for pk, digest, partition, prio, st in Unit.objects.filter(study=study)
        .order_by("id")
        .values_list("id", "digest", "partition", "priority", "state")
    )
    if is_tuple:
        keys = {"role": KeyTransform("source_role", "annotation")}
    else:
        keys = {
            f"v_{name}": KeyTransform(
                "value", KeyTransform(name, KeyTransform("verdicts", "annotation"))
            )
            for name in VERDICTS
        }
    rows = (
        Label.objects.filter(study=study)
        .order_by("id")
        .values("id", "unit_id", "kind", "annotator_id", "revision", "record_digest", **keys)
    )
    records = tuple(
        RecordRow(
            id=row["id"],
            unit_id=row["unit_id"],
            kind=row["kind"],
            annotator_id=row["annotator_id"],
            revision=row["revision"],
            record_digest=row["record_digest"],
            source_role=_role_of(row.get("role")),
            verdicts=() if is_tuple else tuple(_verdict_of(row[f"v_{n}"]) for n in VERDICTS),
        )
        for row in rows
    )
    outcomes = {
        digest: Outcome(seq, ok, endpoint, short_circuit, action, prio)
        for digest, seq, ok, endpoint, short_circuit, action, prio in LedgerEntry.objects.filter(
            study=study
        ).values_list(
            "record_digest", "seq", "ok", "endpoint", "short_circuit", "action", "priority"
        )
    }
    roles = tuple(
        (role["key"], role.get("label") or role["key"])
        for role in definition.get("source_roles") or ()
        if isinstance(role, dict) and isinstance(role.get("key"), str)
    )
    return OutcomeData(
        codebook_unit=study.codebook.unit,
        answerability_policy=definition.get("answerability_policy"),
        source_roles=roles,
        units=units,
        records=records,
        outcomes=outcomes,
    )


# --- pure computation --------------------------------------------------------------------


def final_records(data: OutcomeData) -> dict[int, RecordRow]:
    """Each unit's final record: the latest adjudicated label, else the latest consensus
    label of a unit that is still agreed."""
    state = {unit.id: unit.state for unit in data.units}
    adjudicated: dict[int, RecordRow] = {}
    consensus: dict[int, RecordRow] = {}
    for record in data.records:  # ordered by id: a later revision replaces an earlier one
        if record.kind == LabelKind.ADJUDICATED:
            adjudicated[record.unit_id] = _later(adjudicated.get(record.unit_id), record)
        elif record.kind == LabelKind.CONSENSUS and state.get(record.unit_id) == UnitState.AGREED:
            consensus[record.unit_id] = _later(consensus.get(record.unit_id), record)
    return {**consensus, **adjudicated}


def independent_heads(data: OutcomeData) -> list[RecordRow]:
    """Each annotator's latest independent revision on each unit."""
    heads: dict[tuple[int, int | None], RecordRow] = {}
    for record in data.records:
        if record.kind == LabelKind.INDEPENDENT:
            key = (record.unit_id, record.annotator_id)
            heads[key] = _later(heads.get(key), record)
    return sorted(heads.values(), key=lambda record: record.id)


def _later(current: RecordRow | None, candidate: RecordRow) -> RecordRow:
    if current is None or (candidate.revision, candidate.id) > (current.revision, current.id):
        return candidate
    return current


@dataclass(frozen=True)
class Counts:
    """Records by endpoint value under one policy, with the action each value proposes."""

    one: int = 0
    zero: int = 0
    unresolved: int = 0
    actions: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.one + self.zero + self.unresolved


@dataclass(frozen=True)
class RoleRow:
    role: str
    label: str
    records: int
    not_computed: int  # no ledger entry yet: the outcome job has not run
    refused: int  # the checker refused the record
    policies: dict[str, Counts]

    @property
    def complete_case(self) -> Counts:
        return self.policies["complete_case"]

    @property
    def short_circuit(self) -> Counts:
        return self.policies["short_circuit"]


@dataclass(frozen=True)
class VerdictRow:
    verdict: str
    true: int
    false: int
    unknown: int

    @property
    def total(self) -> int:
        return self.true + self.false + self.unknown


@dataclass(frozen=True)
class PartitionTable:
    partition: str
    label: str
    sealed: bool
    units: int | None = None  # None while sealed
    records: int = 0
    roles: tuple[RoleRow, ...] = ()
    total: RoleRow | None = None
    verdicts: tuple[VerdictRow, ...] = ()
    awaiting: int | None = None  # final tables: units without a final record
    awaiting_by_state: dict[str, int] = field(default_factory=dict)

    @property
    def policy_actions(self) -> list[tuple[str, Counts]]:
        """The partition's records by policy action, under each policy."""
        if self.total is None:
            return []
        return [(POLICY_LABELS[policy], self.total.policies[policy]) for policy in POLICIES]

    @property
    def awaiting_states(self) -> list[tuple[str, int]]:
        return [
            (UnitState(state).label.lower(), count)
            for state, count in sorted(self.awaiting_by_state.items())
        ]


def _counts(values: Iterable[tuple[int | None, str | None]]) -> Counts:
    by_value: Counter[int | None] = Counter()
    actions: Counter[str] = Counter()
    for value, action in values:
        by_value[value] += 1
        if action is not None:
            actions[action] += 1
    return Counts(
        one=by_value[1],
        zero=by_value[0],
        unresolved=by_value[None],
        actions={name: actions[name] for name in ACTIONS},
    )


def _role_row(role: str, label: str, records: Sequence[RecordRow], data: OutcomeData) -> RoleRow:
    outcomes = [data.outcomes.get(record.record_digest) for record in records]
    checked = [o for o in outcomes if o is not None and o.ok]
    policy = data.answerability_policy
    return RoleRow(
        role=role,
        label=label,
        records=len(records),
        not_computed=sum(1 for o in outcomes if o is None),
        refused=sum(1 for o in outcomes if o is not None and not o.ok),
        policies={
            "complete_case": _counts((o.endpoint, o.action) for o in checked),
            "short_circuit": _counts(
                (o.short_circuit, policy_action(o.short_circuit, policy)) for o in checked
            ),
        },
    )


def _role_order(data: OutcomeData, present: Iterable[str]) -> list[tuple[str, str]]:
    known = dict(data.source_roles)
    present = set(present)
    ordered = [(key, label) for key, label in data.source_roles if key in present]
    extra = sorted(role for role in present if role not in known and role != NO_ROLE)
    ordered += [(role, role) for role in extra]
    if NO_ROLE in present:
        ordered.append((NO_ROLE, "(no source role)"))
    return ordered


def outcome_tables(
    data: OutcomeData,
    records: Iterable[RecordRow],
    *,
    sealed: Callable[[str], bool],
    finals: bool,
) -> list[PartitionTable]:
    """One table per partition that has units: by source role and policy (source-risk)
    or by verdict (answer-claims). A sealed partition gets no numbers at all."""
    partition_of = {unit.id: unit.partition for unit in data.units}
    units_in: Counter[str] = Counter(partition_of.values())
    by_partition: dict[str, list[RecordRow]] = {key: [] for key in PARTITIONS}
    with_record: set[int] = set()
    for record in records:
        by_partition[partition_of[record.unit_id]].append(record)
        with_record.add(record.unit_id)
    tables = []
    for key in PARTITIONS:
        if not units_in[key]:
            continue
        if sealed(key):
            tables.append(PartitionTable(partition=key, label=PARTITION_LABELS[key], sealed=True))
            continue
        rows = by_partition[key]
        awaiting: dict[str, int] = {}
        if finals:
            awaiting = dict(
                Counter(
                    unit.state
                    for unit in data.units
                    if unit.partition == key and unit.id not in with_record
                )
            )
        common = {
            "partition": key,
            "label": PARTITION_LABELS[key],
            "sealed": False,
            "units": units_in[key],
            "records": len(rows),
            "awaiting": sum(awaiting.values()) if finals else None,
            "awaiting_by_state": awaiting,
        }
        if data.codebook_unit != CodebookUnit.TUPLE:
            tables.append(PartitionTable(**common, verdicts=_verdict_rows(rows)))
            continue
        grouped: dict[str, list[RecordRow]] = {}
        for record in rows:
            grouped.setdefault(record.source_role, []).append(record)
        roles = tuple(
            _role_row(role, label, grouped[role], data)
            for role, label in _role_order(data, grouped)
        )
        total = _role_row("", "All source roles", rows, data)
        tables.append(PartitionTable(**common, roles=roles, total=total))
    return tables


def _verdict_rows(records: Sequence[RecordRow]) -> tuple[VerdictRow, ...]:
    rows = []
    for index, name in enumerate(VERDICTS):
        values = Counter(record.verdicts[index] for record in records if record.verdicts)
        rows.append(VerdictRow(name, values[True], values[False], values[None]))
    return tuple(rows)


@dataclass(frozen=True)
class ReviewRow:
    unit_id: int
    unit_digest: str
    partition: str
    state: str
    priority: float | None
    action: str
    endpoint: int | None
    short_circuit: int | None
    source_role: str
    kind: str
    record_digest: str
    seq: int


def review_rows(
    data: OutcomeData, finals: dict[int, RecordRow], *, sealed: Callable[[str], bool]
) -> list[ReviewRow]:
    """Units whose final record proposes CONTEXTUALIZE or REVIEW, highest review priority
    first (units without a priority last), outside sealed partitions."""
    rows = []
    for unit in data.units:
        record = finals.get(unit.id)
        if record is None or sealed(unit.partition):
            continue
        outcome = data.outcomes.get(record.record_digest)
        if outcome is None or not outcome.ok or outcome.action not in REVIEW_ACTIONS:
            continue
        rows.append(
            ReviewRow(
                unit_id=unit.id,
                unit_digest=unit.digest,
                partition=unit.partition,
                state=unit.state,
                priority=unit.priority,
                action=outcome.action,
                endpoint=outcome.endpoint,
                short_circuit=outcome.short_circuit,
                source_role=record.source_role,
                kind=record.kind,
                record_digest=record.record_digest,
                seq=outcome.seq,
            )
        )
    rows.sort(key=lambda r: (r.priority is None, -(r.priority or 0.0), r.unit_id))
    return rows


@dataclass(frozen=True)
class StudyOutcomes:
    is_tuple: bool
    final: list[PartitionTable]
    independent: list[PartitionTable]
    review: list[ReviewRow]
    sealed_partitions: list[str]


def study_outcomes(*, study: Study) -> StudyOutcomes:
    """Everything the outcomes page and its downloads show, in three queries."""
    data = outcomes_fetch(study=study)

    def sealed(partition: str) -> bool:
        return partition_sealed(study, partition)

    finals = final_records(data)
    present = {unit.partition for unit in data.units}
    return StudyOutcomes(
        is_tuple=data.codebook_unit == CodebookUnit.TUPLE,
        final=outcome_tables(data, finals.values(), sealed=sealed, finals=True),
        independent=outcome_tables(data, independent_heads(data), sealed=sealed, finals=False),
        review=review_rows(data, finals, sealed=sealed),
        sealed_partitions=[key for key in PARTITIONS if key in present and sealed(key)],
    )


# --- CSV ---------------------------------------------------------------------------------


def csv_cell(value: Any) -> str:
    """A cell as text, with a leading apostrophe where a spreadsheet would see a formula."""
    return spreadsheet_safe("" if value is None else str(value))


def _u(value: int | None) -> str:
    return "U" if value is None else str(value)


OUTCOME_COLUMNS = (
    "partition",
    "source_role",
    "policy",
    "records",
    "endpoint_1",
    "endpoint_0",
    "endpoint_U",
    "not_computed",
    "refused",
    *ACTIONS,
    "units_awaiting_final_record",
)
VERDICT_COLUMNS = ("partition", "verdict", "records", "true", "false", "unknown")
REVIEW_COLUMNS = (
    "unit_digest",
    "partition",
    "state",
    "priority",
    "action",
    "endpoint",
    "short_circuit",
    "source_role",
    "kind",
    "record_digest",
    "ledger_seq",
)


def outcome_csv_rows(tables: Sequence[PartitionTable], *, is_tuple: bool) -> list[list[Any]]:
    """Header and rows of an outcomes table; sealed partitions are left out."""
    if not is_tuple:
        out: list[list[Any]] = [list(VERDICT_COLUMNS)]
        for table in tables:
            if table.sealed:
                continue
            for row in table.verdicts:
                out.append(
                    [table.partition, row.verdict, row.total, row.true, row.false, row.unknown]
                )
        return out
    out = [list(OUTCOME_COLUMNS)]
    for table in tables:
        if table.sealed or table.total is None:
            continue
        for row in (*table.roles, table.total):
            role = row.role if row is not table.total else "(all)"
            for policy in POLICIES:
                counts = row.policies[policy]
                awaiting = (
                    table.awaiting if row is table.total and table.awaiting is not None else ""
                )
                out.append(
                    [
                        table.partition,
                        role or "(no source role)",
                        policy,
                        row.records,
                        counts.one,
                        counts.zero,
                        counts.unresolved,
                        row.not_computed,
                        row.refused,
                        *(counts.actions[name] for name in ACTIONS),
                        awaiting,
                    ]
                )
    return out


def review_csv_rows(rows: Sequence[ReviewRow]) -> list[list[Any]]:
    out: list[list[Any]] = [list(REVIEW_COLUMNS)]
    for row in rows:
        out.append(
            [
                row.unit_digest,
                row.partition,
                row.state,
                "" if row.priority is None else repr(row.priority),
                row.action,
                _u(row.endpoint),
                _u(row.short_circuit),
                row.source_role,
                row.kind,
                row.record_digest,
                row.seq,
            ]
        )
    return out


# --- the validation gate on the study page -----------------------------------------------


STAGE_LABELS = {
    "conformance": "Conformance",
    "structural": "Structural",
    "independent_labels": "Independent labels",
    "reliability_reported": "Reliability reported",
    "adjudicated": "Adjudicated",
    "frozen": "Frozen",
}


@dataclass(frozen=True)
class GatePanel:
    reached: str | None
    reached_label: str
    reached_number: int  # 1..6, 0 before conformance
    stages: list[dict[str, Any]]
    boundary: dict[str, list[str]]
    computed_at: Any


def study_gate_panel(*, study: Study) -> GatePanel:
    """The stored gate report (one query); computed and stored now if there is none."""
    gate = StudyGate.objects.filter(study=study).first()
    if gate is None:
        from audit.ledger import gate_recompute

        gate_recompute(study=study)
        gate = StudyGate.objects.get(study=study)
    report = gate.report or {}
    reached = report.get("reached", gate.reached)
    stages = [
        {
            **stage,
            "number": number,
            "label": STAGE_LABELS.get(stage.get("name"), stage.get("name")),
            "counts_text": " · ".join(
                f"{str(key).replace('_', ' ')} {value}"
                for key, value in (stage.get("counts") or {}).items()
            ),
        }
        for number, stage in enumerate(report.get("stages") or [], start=1)
    ]
    return GatePanel(
        reached=reached,
        reached_label=STAGE_LABELS.get(reached, "none") if reached else "none",
        reached_number=STAGES.index(reached) + 1 if reached in STAGES else 0,
        stages=stages,
        boundary=claim_boundary(reached if reached in STAGES else None),
        computed_at=gate.computed_at,
    )


# --- one record, as the checker sees it --------------------------------------------------


@dataclass(frozen=True)
class RecordDetail:
    label: Label
    record: dict[str, Any]
    result: Any  # audit.contract.CheckResult of the record rebuilt now
    entries: list[LedgerEntry]  # this record's ledger entries (one, or none yet)
    parents: list[tuple[str, bool]]  # (digest, stored in this study)
    unit_records: list[dict[str, Any]]  # every record of the unit, with its ledger outcome
    partition: str
    sealed: bool
    agrees: bool | None  # the checker now and the ledger say the same; None: no entry


def record_detail(*, study: Study, digest: str) -> RecordDetail | None:
    """The stored record with this digest in ``study``, rebuilt as the checker sees it,
    with the checker's result now and what the ledger recorded (about eight queries)."""
    from annotator.adjudication import label_record
    from audit.contract import check_record
    from audit.selectors import codebook_registry

    label = Label.objects.select_related("unit").filter(study=study, record_digest=digest).first()
    if label is None:
        return None
    record = label_record(label=label)
    result = check_record(record, codebook_registry())
    unit_labels = list(
        Label.objects.filter(unit_id=label.unit_id)
        .order_by("id")
        .values("kind", "revision", "record_digest", "created_at")
    )
    known = {row["record_digest"] for row in unit_labels}
    parent_digests = [p for p in label.parents or [] if isinstance(p, str)]
    stored_parents = set(
        Label.objects.filter(study=study, record_digest__in=parent_digests).values_list(
            "record_digest", flat=True
        )
    )
    entries = {
        entry.record_digest: entry
        for entry in LedgerEntry.objects.filter(record_digest__in=known | {digest})
    }
    unit_records = [
        {**row, "entry": entries.get(row["record_digest"]), "this": row["record_digest"] == digest}
        for row in unit_labels
    ]
    entry = entries.get(digest)
    agrees = None
    if entry is not None:
        agrees = (
            entry.ok == result.ok
            and entry.endpoint == result.endpoint
            and entry.short_circuit == result.short_circuit
            and entry.action == result.action
            and entry.priority == result.priority
        )
    partition = label.unit.partition or UNASSIGNED
    return RecordDetail(
        label=label,
        record=record,
        result=result,
        entries=[entry] if entry is not None else [],
        parents=[(p, p in stored_parents) for p in parent_digests],
        unit_records=unit_records,
        partition=partition,
        sealed=partition_sealed(study, partition),
        agrees=agrees,
    )
