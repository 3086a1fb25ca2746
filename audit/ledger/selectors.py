"""The researcher's outcomes: endpoint outcomes of a study's records, fetched once and
counted purely (DESIGN.md, "The four predicates and the endpoint").

``outcomes_fetch`` counts in the database, in three grouped queries (units by partition
and state; final records and independent heads by partition, source role or verdicts,
and ledger outcome), whatever the size of the study; the functions below it work on those
plain counts only. The review list is a query a page slices and a download streams.
Outcomes are the ones the claim ledger recorded: a record whose outcome job has not run
yet is counted as "not computed", never recomputed here behind the ledger's back.

The *final* record of a unit is its adjudicated label if it has one, else its consensus
label while the unit is agreed (a consensus left behind by a later revision that broke the
agreement is not final). Units without a final record await agreement or adjudication.
Numbers of a sealed partition (``partition_sealed``) are never computed into a table.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import (
    Case,
    Count,
    F,
    IntegerField,
    Max,
    Q,
    QuerySet,
    Value,
    When,
    Window,
)
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import RowNumber

from annotator.labelling.models import Label, LabelKind
from annotator.labelling.selectors import label_record
from audit.archive.models import Study, Unit, UnitState
from audit.archive.selectors import codebook_registry
from audit.contract import check_record, policy_action
from audit.contract.endpoint import ABSTAIN, CONTEXTUALIZE, PASS, REVIEW
from audit.contract.engine import SOURCE_ROLE, Engine, engine_of
from audit.ledger.gate import STAGE_LABELS, STAGES, claim_boundary
from audit.ledger.models import LedgerEntry, OutcomeSummary, StudyGate
from audit.partitions.selectors import (
    PARTITION_KEYS,
    PARTITION_LABELS,
    UNASSIGNED,
    partition_sealed,
    partitions_mark,
)

POLICIES = ("complete_case", "short_circuit")
POLICY_LABELS = {
    "complete_case": "Complete-case R_O (primary)",
    "short_circuit": "Short-circuit (sensitivity)",
}
ACTIONS = (PASS, CONTEXTUALIZE, REVIEW, ABSTAIN)
REVIEW_ACTIONS = (CONTEXTUALIZE, REVIEW)
NO_ROLE = ""
SEALED_NOTE = "sealed until the study is frozen"


# --- fetched values ----------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What the ledger recorded for a record (the parts the tables count)."""

    ok: bool
    endpoint: int | None
    short_circuit: int | None
    action: str | None


@dataclass(frozen=True)
class OutcomeView:
    """What a study's outcome tables count, from its codebook's engine: a codebook with the
    endpoint (a derived ``R_O`` and a source role) is counted by source role and ledger
    outcome; any other by its verdict fields' values. Paths are where the values are in a
    stored annotation (audit.contract.engine)."""

    endpoint: bool
    role_path: tuple[str, ...] = ()
    verdicts: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (code, path) in form order


def outcome_view(study: Study) -> OutcomeView:
    return outcome_view_of(engine_of(study.codebook.definition or {}))


def outcome_view_of(engine: Engine) -> OutcomeView:
    if SOURCE_ROLE in engine.paths and any(d.rule == "R_O" for d in engine.derived):
        return OutcomeView(endpoint=True, role_path=engine.paths[SOURCE_ROLE])
    verdicts = tuple(
        (f.code, engine.paths[f.code]) for f in engine.value_fields if f.type == "verdict"
    )
    return OutcomeView(endpoint=False, verdicts=verdicts)


def _annotation_at(path: Sequence[str]) -> Any:
    """The value at ``path`` of a label's annotation, as a SQL expression."""
    expression: Any = "annotation"
    for step in path:
        expression = KeyTransform(step, expression)
    return expression


@dataclass(frozen=True)
class GroupRow:
    """``records`` records of one partition that share a source role (a codebook with the
    endpoint) or verdict values (any other) and a ledger outcome (``None``: not computed
    yet)."""

    partition: str  # a key of PARTITION_KEYS
    source_role: str  # NO_ROLE when the annotation has none (a codebook without the endpoint)
    outcome: Outcome | None
    records: int
    verdicts: tuple[bool | None, ...] = ()  # in the codebook's verdict order (OutcomeView)


@dataclass(frozen=True)
class OutcomeData:
    codebook_unit: str
    answerability_policy: str | None
    source_roles: tuple[tuple[str, str], ...]  # (key, label) in the codebook's order
    units: dict[str, int]  # partition -> units
    awaiting: dict[str, dict[str, int]]  # partition -> unit state -> units without a final
    final: tuple[GroupRow, ...]
    independent: tuple[GroupRow, ...]
    #: What the tables count (:func:`outcome_view`); by default format 1's for the unit kind.
    view: OutcomeView | None = None

    def __post_init__(self) -> None:
        if self.view is None:
            default = outcome_view_of(engine_of(None, unit=self.codebook_unit))
            object.__setattr__(self, "view", default)


def _role_of(value: Any) -> str:
    return value if isinstance(value, str) else NO_ROLE


def _verdict_of(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _first_of(labels: QuerySet[Label], partition_by: list[Any], order_by: list[Any]) -> Any:
    """The ids of the first label of each ``partition_by`` group in ``order_by`` order:
    one window over the labels (a scan and a sort, linear whatever plan is chosen)."""
    ranked = labels.annotate(
        rank=Window(RowNumber(), partition_by=partition_by, order_by=order_by)
    ).filter(rank=1)
    return ranked.values("id")


def final_labels(*, study: Study) -> QuerySet[Label]:
    """Each unit's final record: its latest adjudicated label, else the latest consensus
    label of a unit that is still agreed (a consensus left behind by a later revision that
    broke the agreement is not final). One window over the unit's adjudicated and
    consensus labels, adjudicated first, latest first."""
    adjudicated_first = Case(
        When(kind=LabelKind.ADJUDICATED, then=Value(1)),
        default=Value(0),
        output_field=IntegerField(),
    )
    first = _first_of(
        Label.objects.filter(study=study, kind__in=(LabelKind.ADJUDICATED, LabelKind.CONSENSUS)),
        partition_by=[F("unit_id")],
        order_by=[adjudicated_first.desc(), F("revision").desc(), F("id").desc()],
    )
    return Label.objects.filter(id__in=first).filter(
        Q(kind=LabelKind.ADJUDICATED) | Q(unit__state=UnitState.AGREED)
    )


def independent_head_labels(*, study: Study) -> QuerySet[Label]:
    """Each annotator's latest independent revision on each unit."""
    first = _first_of(
        Label.objects.filter(study=study, kind=LabelKind.INDEPENDENT),
        partition_by=[F("unit_id"), F("annotator_id")],
        order_by=[F("revision").desc(), F("id").desc()],
    )
    return Label.objects.filter(id__in=first)


def _groups(labels: QuerySet[Label], *, view: OutcomeView) -> list[tuple[GroupRow, str]]:
    """``labels`` counted in SQL by partition, unit state, source role or verdicts, and
    ledger outcome (one grouped query: a study's size changes the counts, never the rows
    fetched); each group with its units' state."""
    if view.endpoint:
        keys = {"role": _annotation_at(view.role_path)}
    else:
        keys = {f"v_{i}": _annotation_at(path) for i, (_, path) in enumerate(view.verdicts)}
    rows = (
        labels.annotate(part=F("unit__partition"), **keys)
        .values(
            "part",
            "unit__state",
            *keys,
            "ledger_entry__ok",
            "ledger_entry__endpoint",
            "ledger_entry__short_circuit",
            "ledger_entry__action",
        )
        .annotate(n=Count("id"), entries=Count("ledger_entry__id"))
        .order_by()
    )
    groups = []
    for row in rows:
        outcome = None
        if row["entries"]:
            outcome = Outcome(
                ok=row["ledger_entry__ok"],
                endpoint=row["ledger_entry__endpoint"],
                short_circuit=row["ledger_entry__short_circuit"],
                action=row["ledger_entry__action"],
            )
        group = GroupRow(
            partition=row["part"] or UNASSIGNED,
            source_role=_role_of(row.get("role")),
            outcome=outcome,
            records=row["n"],
            verdicts=tuple(_verdict_of(row[key]) for key in keys if key != "role"),
        )
        groups.append((group, row["unit__state"]))
    return groups


def _merged(groups: Iterable[GroupRow]) -> tuple[GroupRow, ...]:
    """Groups that differ only by their units' state, as one."""
    records: Counter[tuple[str, str, Outcome | None, tuple[bool | None, ...]]] = Counter()
    for g in groups:
        records[(g.partition, g.source_role, g.outcome, g.verdicts)] += g.records
    return tuple(
        GroupRow(partition, role, outcome, count, verdicts)
        for (partition, role, outcome, verdicts), count in records.items()
    )


def outcomes_fetch(*, study: Study) -> OutcomeData:
    """Three grouped queries (units by partition and state, final records and independent
    heads by partition, role and outcome), whatever the size of the study."""
    definition = study.codebook.definition or {}
    view = outcome_view(study)
    units: Counter[str] = Counter()
    by_state: Counter[tuple[str, str]] = Counter()
    for row in (
        Unit.objects.filter(study=study).values("partition", "state").annotate(n=Count("id"))
    ).order_by():
        partition = row["partition"] or UNASSIGNED
        units[partition] += row["n"]
        by_state[(partition, row["state"])] += row["n"]
    final = _groups(final_labels(study=study), view=view)
    for group, state in final:  # a unit has at most one final record
        by_state[(group.partition, state)] -= group.records
    awaiting: dict[str, dict[str, int]] = {}
    for (partition, state), count in sorted(by_state.items()):
        if count:
            awaiting.setdefault(partition, {})[state] = count
    roles = tuple(
        (role["key"], role.get("label") or role["key"])
        for role in definition.get("source_roles") or ()
        if isinstance(role, dict) and isinstance(role.get("key"), str)
    )
    return OutcomeData(
        codebook_unit=study.codebook.unit,
        view=view,
        answerability_policy=definition.get("answerability_policy"),
        source_roles=roles,
        units=dict(units),
        awaiting=awaiting,
        final=_merged(group for group, _ in final),
        independent=_merged(
            group for group, _ in _groups(independent_head_labels(study=study), view=view)
        ),
    )


# --- pure computation --------------------------------------------------------------------


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


def _counts(values: Iterable[tuple[int | None, str | None, int]]) -> Counts:
    by_value: Counter[int | None] = Counter()
    actions: Counter[str] = Counter()
    for value, action, records in values:
        by_value[value] += records
        if action is not None:
            actions[action] += records
    return Counts(
        one=by_value[1],
        zero=by_value[0],
        unresolved=by_value[None],
        actions={name: actions[name] for name in ACTIONS},
    )


def _role_row(role: str, label: str, groups: Sequence[GroupRow], data: OutcomeData) -> RoleRow:
    checked = [(g.outcome, g.records) for g in groups if g.outcome is not None and g.outcome.ok]
    policy = data.answerability_policy
    return RoleRow(
        role=role,
        label=label,
        records=sum(g.records for g in groups),
        not_computed=sum(g.records for g in groups if g.outcome is None),
        refused=sum(g.records for g in groups if g.outcome is not None and not g.outcome.ok),
        policies={
            "complete_case": _counts((o.endpoint, o.action, n) for o, n in checked),
            "short_circuit": _counts(
                (o.short_circuit, policy_action(o.short_circuit, policy), n) for o, n in checked
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
    groups: Iterable[GroupRow],
    *,
    sealed: Callable[[str], bool],
    finals: bool,
) -> list[PartitionTable]:
    """One table per partition that has units: by source role and policy (a codebook with
    the endpoint) or by verdict (any other). A sealed partition gets no numbers at all."""
    by_partition: dict[str, list[GroupRow]] = {key: [] for key in PARTITION_KEYS}
    for group in groups:
        by_partition[group.partition].append(group)
    tables = []
    for key in PARTITION_KEYS:
        if not data.units.get(key):
            continue
        if sealed(key):
            tables.append(PartitionTable(partition=key, label=PARTITION_LABELS[key], sealed=True))
            continue
        rows = by_partition[key]
        awaiting = dict(data.awaiting.get(key, {})) if finals else {}
        common = {
            "partition": key,
            "label": PARTITION_LABELS[key],
            "sealed": False,
            "units": data.units[key],
            "records": sum(group.records for group in rows),
            "awaiting": sum(awaiting.values()) if finals else None,
            "awaiting_by_state": awaiting,
        }
        if not data.view.endpoint:
            tables.append(PartitionTable(**common, verdicts=_verdict_rows(rows, data.view)))
            continue
        grouped: dict[str, list[GroupRow]] = {}
        for group in rows:
            grouped.setdefault(group.source_role, []).append(group)
        roles = tuple(
            _role_row(role, label, grouped[role], data)
            for role, label in _role_order(data, grouped)
        )
        total = _role_row("", "All source roles", rows, data)
        tables.append(PartitionTable(**common, roles=roles, total=total))
    return tables


def _verdict_rows(groups: Sequence[GroupRow], view: OutcomeView) -> tuple[VerdictRow, ...]:
    rows = []
    for index, (name, _) in enumerate(view.verdicts):
        values: Counter[bool | None] = Counter()
        for group in groups:
            if group.verdicts:
                values[group.verdicts[index]] += group.records
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


def review_rows(*, study: Study, sealed: Callable[[str], bool]) -> QuerySet[Label]:
    """Final records whose ledger outcome proposes CONTEXTUALIZE or REVIEW, outside
    sealed partitions, highest review priority first (units without a priority last):
    a query, so that a page takes its first rows and a download streams them all
    (``review_row`` makes each one a ``ReviewRow``)."""
    hidden = [key for key in PARTITION_KEYS if sealed(key)]
    rows = final_labels(study=study).filter(
        ledger_entry__ok=True, ledger_entry__action__in=REVIEW_ACTIONS
    )
    if UNASSIGNED in hidden:
        rows = rows.exclude(unit__partition__isnull=True)
    hidden_keys = [key for key in hidden if key != UNASSIGNED]
    if hidden_keys:
        rows = rows.exclude(unit__partition__in=hidden_keys)
    return (
        rows.annotate(role=KeyTransform("source_role", "annotation"))
        .order_by(F("unit__priority").desc(nulls_last=True), "unit_id")
        .values_list(
            "unit_id",
            "unit__digest",
            "unit__partition",
            "unit__state",
            "unit__priority",
            "ledger_entry__action",
            "ledger_entry__endpoint",
            "ledger_entry__short_circuit",
            "role",
            "kind",
            "record_digest",
            "ledger_entry__seq",
        )
    )


def review_row(values: Sequence[Any]) -> ReviewRow:
    """One row of ``review_rows`` as a ``ReviewRow``."""
    unit_id, digest, partition, state, priority, action, endpoint, short, role, *rest = values
    kind, record_digest, seq = rest
    return ReviewRow(
        unit_id=unit_id,
        unit_digest=digest,
        partition=partition or UNASSIGNED,
        state=state,
        priority=priority,
        action=action,
        endpoint=endpoint,
        short_circuit=short,
        source_role=_role_of(role),
        kind=kind,
        record_digest=record_digest,
        seq=seq,
    )


#: The outcomes page lists this many CONTEXTUALIZE/REVIEW units; the CSV has them all.
REVIEW_LIST_LIMIT = 200


@dataclass(frozen=True)
class StudyOutcomes:
    is_tuple: bool
    final: list[PartitionTable]
    independent: list[PartitionTable]
    sealed_partitions: list[str]
    review: list[ReviewRow] = field(default_factory=list)  # the first REVIEW_LIST_LIMIT
    review_total: int = 0
    #: Counted by a worker (a large study): when, and whether newer labels, ledger
    #: entries, units or partitions have come since. None: counted in this request.
    counted_at: Any = None
    stale: bool = False
    counting: bool = False  # a large study whose counts no worker has stored yet

    @property
    def review_more(self) -> int:
        return max(0, self.review_total - len(self.review))


def _review_first(study: Study, sealed: Callable[[str], bool]) -> tuple[list[ReviewRow], int]:
    rows = review_rows(study=study, sealed=sealed)
    first = [review_row(values) for values in rows[: REVIEW_LIST_LIMIT + 1]]
    if len(first) <= REVIEW_LIST_LIMIT:
        return first, len(first)
    return first[:REVIEW_LIST_LIMIT], rows.count()


def _tables(
    study: Study,
    data: OutcomeData,
    review: list[ReviewRow],
    review_total: int,
    **state: Any,
) -> StudyOutcomes:
    def sealed(partition: str) -> bool:
        return partition_sealed(study, partition)

    return StudyOutcomes(
        is_tuple=data.view.endpoint,
        final=outcome_tables(data, data.final, sealed=sealed, finals=True),
        independent=outcome_tables(data, data.independent, sealed=sealed, finals=False),
        sealed_partitions=[key for key in PARTITION_KEYS if data.units.get(key) and sealed(key)],
        review=[row for row in review if not sealed(row.partition)],
        review_total=review_total,
        **state,
    )


def study_outcomes(*, study: Study) -> StudyOutcomes:
    """The study's outcome tables and the first units to review, counted now (about
    five queries, each a grouped or limited one)."""
    data = outcomes_fetch(study=study)
    review: list[ReviewRow] = []
    total = 0
    if data.view.endpoint:
        review, total = _review_first(study, lambda key: partition_sealed(study, key))
    return _tables(study, data, review, total)


def outcomes_mark(*, study: Study) -> str:
    """Changes whenever the outcome counts may: a new label (labels are append-only; a
    unit changes state only with a label's job, which ends by queueing a recount), a new
    ledger entry, new units, a change of partitions or the freeze. Three short queries."""
    last_label = (
        Label.objects.filter(study=study).order_by("-id").values_list("id", flat=True).first()
    )
    last_seq = (
        LedgerEntry.objects.filter(study=study)
        .order_by("-seq")
        .values_list("seq", flat=True)
        .first()
    )
    units = Unit.objects.filter(study=study).aggregate(n=Count("id"), last=Max("id"))
    return (
        f"{last_label or 0}:{last_seq or 0}:{units['n']}:{units['last'] or 0}:"
        f"{partitions_mark(study)}"
    )


def outcomes_counted_inline(*, study: Study) -> bool:
    """Whether the study is small enough to count its outcomes in a request."""
    limit = getattr(settings, "OUTCOMES_INLINE_LABELS", 20_000)
    return not Label.objects.filter(study=study).values("id")[limit : limit + 1].exists()


def summary_data(study: Study) -> dict[str, Any]:
    """What a worker stores for a large study (``OutcomeSummary.data``): every count the
    tables need (sealed partitions included: the tables hide them when shown) and the
    first units to review outside sealed partitions, as JSON. The freeze moves the mark
    on, so a summary counted before it is recounted."""
    data = outcomes_fetch(study=study)
    review: list[ReviewRow] = []
    total = 0
    if data.view.endpoint:
        review, total = _review_first(study, lambda key: partition_sealed(study, key))

    def group(g: GroupRow) -> list[Any]:
        outcome = None
        if g.outcome is not None:
            o = g.outcome
            outcome = [o.ok, o.endpoint, o.short_circuit, o.action]
        return [g.partition, g.source_role, outcome, g.records, list(g.verdicts)]

    return {
        "codebook_unit": data.codebook_unit,
        "answerability_policy": data.answerability_policy,
        "source_roles": [list(pair) for pair in data.source_roles],
        "units": data.units,
        "awaiting": data.awaiting,
        "final": [group(g) for g in data.final],
        "independent": [group(g) for g in data.independent],
        "review": [list(dataclasses.astuple(row)) for row in review],
        "review_total": total,
    }


def _from_summary(study: Study, stored: dict[str, Any], **state: Any) -> StudyOutcomes:
    def group(row: list[Any]) -> GroupRow:
        partition, role, outcome, records, verdicts = row
        return GroupRow(
            partition=partition,
            source_role=role,
            outcome=Outcome(*outcome) if outcome is not None else None,
            records=records,
            verdicts=tuple(verdicts),
        )

    data = OutcomeData(
        codebook_unit=stored["codebook_unit"],
        view=outcome_view(study),
        answerability_policy=stored["answerability_policy"],
        source_roles=tuple(tuple(pair) for pair in stored["source_roles"]),
        units=stored["units"],
        awaiting=stored["awaiting"],
        final=tuple(group(row) for row in stored["final"]),
        independent=tuple(group(row) for row in stored["independent"]),
    )
    review = [ReviewRow(*row) for row in stored["review"]]
    return _tables(study, data, review, stored["review_total"], **state)


def study_outcomes_shown(*, study: Study) -> StudyOutcomes:
    """What the outcomes page and its downloads show: counted now for a study of up to
    ``OUTCOMES_INLINE_LABELS`` labels; for a larger one, the counts a worker stored, with
    when, and whether they are behind (the caller queues a recount when they are)."""
    if outcomes_counted_inline(study=study):
        return study_outcomes(study=study)
    summary = OutcomeSummary.objects.filter(study=study).first()
    if summary is None:
        return StudyOutcomes(outcome_view(study).endpoint, [], [], [], counting=True)
    stale = summary.mark != outcomes_mark(study=study)
    return _from_summary(study, summary.data, counted_at=summary.computed_at, stale=stale)


# --- CSV ---------------------------------------------------------------------------------


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


def review_csv_rows(rows: Iterable[ReviewRow]) -> Iterator[list[Any]]:
    """Header and rows of the review list, one at a time (a download streams them)."""
    yield list(REVIEW_COLUMNS)
    for row in rows:
        yield (
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


# --- the validation gate on the study page -----------------------------------------------


@dataclass(frozen=True)
class GatePanel:
    reached: str | None
    reached_label: str
    reached_number: int  # 1..6, 0 before conformance
    stages: list[dict[str, Any]]
    boundary: dict[str, list[str]]
    computed_at: Any


def study_gate_panel(*, gate: StudyGate) -> GatePanel:
    """The study page's panel of a stored gate report (``gate_stored`` gives it)."""
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
