"""Partitions, the freeze and study versions: reads and writes (ORM, transactions).

Every interface — the partitions page, the API, code — calls these. The rules, the
leakage check and the freeze's digests are pure (``audit.partitions.rules``); here they are fed
with values fetched in a fixed number of queries, and their result is written with bulk
updates. Writes lock the study row first, so a partition change and a freeze never
interleave. After a freeze the database refuses a partition change and a change of the
study's thresholds or codebook on its own (triggers, migration 0009); the checks here
only turn that refusal into a sentence.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import connection, transaction
from django.db.models import Count, F, Max, Window
from django.db.models.functions import RowNumber

from annotator.labelling.models import Label
from annotator.memberships.models import Membership
from audit.archive import bulk
from audit.archive.models import Codebook, CodebookUnit, Observation, Pipeline, Study, Tuple, Unit
from audit.contract.texts import text_problem
from audit.partitions.files import LineProblem, file_assignment, parse_partition_file
from audit.partitions.freeze import (
    FreezeContents,
    freeze_contents,
    freeze_contents_of,
    partition_digest,
    thresholds_problems,
    thresholds_with_defaults,
)
from audit.partitions.leakage import Leak, leak_counts, leakage
from audit.partitions.models import PartitionState, StudyFreeze
from audit.partitions.proposal import SplitProposal, leak_free_split, leak_reason
from audit.partitions.rules import (
    CALIBRATION,
    GROUP_FIELDS,
    LEAKAGE,
    PARTITIONS,
    TEST,
    UNASSIGNED,
    GroupCount,
    Rule,
    RuleError,
    UnitGroups,
    group_counts,
    partition_counts,
    partition_counts_of,
    rule_assign,
    rule_check,
    rule_test_values,
    values_present_of,
    with_partitions,
)
from audit.queueing import (
    STUDY_REPORT_REFRESH,
    queue_gate_refresh,
    queue_job_once,
    queue_orders_draw,
)

ALREADY_FROZEN = "already_frozen"
STUDY_FROZEN = "study_frozen"
SLUG_TAKEN = "slug_taken"
INVALID_VERSION = "invalid_version"


class PartitionError(Exception):
    """A refused partition, threshold, freeze or version request; ``code`` is for
    machines, ``message`` for people."""

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


# --- reads -------------------------------------------------------------------------------


def partition_units(*, study: Study) -> list[UnitGroups]:
    """Every unit of the study with its partition and grouping fields: one query."""
    rows = (
        Unit.objects.filter(study=study)
        .order_by("id")
        .values_list(
            "digest",
            "partition",
            "observation__query__target_family",
            "observation__query__domain",
            "observation__query__template_id",
        )
    )
    return [
        UnitGroups(digest=d, partition=p, target_family=f, domain=dom, template_id=t)
        for d, p, f, dom, t in rows.iterator(chunk_size=10_000)
    ]


def study_freeze_get(*, study: Study) -> StudyFreeze | None:
    return StudyFreeze.objects.select_related("frozen_by").filter(study=study).first()


@dataclass(frozen=True)
class PartitionOverview:
    counts: dict[str, int]  # calibration, test, unassigned
    groups: dict[str, dict[str, int]]  # partition -> field -> distinct values
    leaks: list[Leak]
    values: dict[str, list[tuple[str, int]]]  # field -> [(value, units)]
    total: int
    freeze: StudyFreeze | None
    contents: FreezeContents | None  # what a freeze would record now; None once frozen
    proposal: SplitProposal | None = None  # a leak-free split (stored with the summary)


#: The stored summary's shape: a summary stored in another shape is counted again.
SUMMARY_FORMAT = 3


def _units_key(study: Study, version: int) -> str:
    """What the stored partition summary depends on: the partition version, and the
    number and last id of the study's units (an import adds units). One query."""
    found = Unit.objects.filter(study=study).aggregate(n=Count("id"), last=Max("id"))
    return f"{SUMMARY_FORMAT}:{version}:{found['n']}:{found['last'] or 0}"


#: The partitions page shows this many leaks, with this many unit digests per side; the
#: stored summary keeps exactly those, so the page reads no unit to show them.
PAGE_LEAKS = 25
PAGE_UNITS = 12


@dataclass(frozen=True)
class _Summary:
    groups: list[GroupCount]
    partition_digest: str
    samples: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]]
    proposal: SplitProposal

    def sample(self, name: str, value: str, units: int) -> tuple[tuple[str, ...], ...]:
        """The first ``units`` digests of each side of a leak, as stored."""
        calibration, test = self.samples.get((name, value), ((), ()))
        return calibration[:units], test[:units]


def _summary(study: Study) -> _Summary:
    """The study's grouped unit counts, partition digest and the page's leak samples,
    from the stored summary while its key matches, else computed (whole-study queries)
    and stored: at most eight queries, two when stored."""
    state = PartitionState.objects.filter(study=study).values("version", "summary_key").first()
    version = state["version"] if state else 0
    key = _units_key(study, version)
    if state and state["summary_key"] == key:
        stored = PartitionState.objects.values_list("summary", flat=True).get(study=study)
        return _Summary(
            groups=[GroupCount(*row) for row in stored["groups"]],
            partition_digest=stored["partition_digest"],
            samples={
                (name, value): (tuple(calibration), tuple(test))
                for name, value, calibration, test in stored["samples"]
            },
            proposal=SplitProposal(
                **{**stored["proposal"], "test_values": tuple(stored["proposal"]["test_values"])}
            ),
        )
    groups = _group_counts(study)
    digest = _partition_digest(study)
    shown = _leaks(study, leak_counts(groups), 0, PAGE_LEAKS, PAGE_UNITS)[:PAGE_LEAKS]
    # The proposal depends on the grouped counts only: computed once with them.
    proposal = leak_free_split(groups)
    summary = {
        "groups": [
            [g.partition, g.target_family, g.domain, g.template_id, g.units] for g in groups
        ],
        "partition_digest": digest,
        "samples": [
            [leak.field, leak.value, list(leak.calibration), list(leak.test)] for leak in shown
        ],
        "proposal": {**dataclasses.asdict(proposal), "test_values": list(proposal.test_values)},
    }
    # One upsert that never moves the version: should a change commit meanwhile, the key
    # stored here names the older version and the next read counts again.
    PartitionState.objects.bulk_create(
        [PartitionState(study=study, version=version, summary_key=key, summary=summary)],
        update_conflicts=True,
        unique_fields=["study"],
        update_fields=["summary_key", "summary"],
    )
    return _Summary(
        groups=groups,
        partition_digest=digest,
        samples={(leak.field, leak.value): (leak.calibration, leak.test) for leak in shown},
        proposal=proposal,
    )


def partition_overview(
    *,
    study: Study,
    leaks_from: int = 0,
    leaks_shown: int | None = None,
    units_shown: int | None = None,
    with_contents: bool = True,
) -> PartitionOverview:
    """Counts per partition, the leakage report, and the freeze or what a freeze would
    record now (the study's codebook already loaded), in about six queries.

    Counts come from one grouped query (a row per combination of grouping values, not
    per unit). Every leak has its unit counts; the first ``leaks_shown`` (None: all) also
    hold the digests of their units, the first ``units_shown`` per side (None: all). The
    freeze preview (``with_contents``) reads the (digest, partition) pairs for its digest.
    """
    summary = _summary(study)
    groups, partition_digest_now = summary.groups, summary.partition_digest
    counts = partition_counts_of(groups)
    sampled = (
        leaks_from == 0
        and leaks_shown is not None
        and leaks_shown <= PAGE_LEAKS
        and units_shown is not None
        and 0 < units_shown <= PAGE_UNITS
    )
    if sampled:  # the page's leaks: stored with the summary
        leaks = [
            Leak(
                name,
                value,
                *summary.sample(name, value, units_shown if number < leaks_shown else 0),
                calibration_units=calibration,
                test_units=test,
            )
            for number, (name, value, calibration, test) in enumerate(leak_counts(groups))
        ]
    else:
        leaks = _leaks(study, leak_counts(groups), leaks_from, leaks_shown, units_shown)
    freeze = study_freeze_get(study=study)
    contents = None
    if freeze is None and with_contents:
        contents = freeze_contents_of(
            codebook_digest=study.codebook.digest,
            pipelines=_pipelines_in_use(study),
            thresholds=thresholds_with_defaults(study.thresholds or {}),
            partition_digest=partition_digest_now,
            partition_counts=counts,
            unassigned=counts[UNASSIGNED],
            leaks=leaks,
        )
    return PartitionOverview(
        counts=counts,
        groups=group_counts(groups),
        leaks=leaks,
        values=values_present_of(groups),
        total=sum(counts.values()),
        freeze=freeze,
        contents=contents,
        proposal=summary.proposal,
    )


def _partition_digest(study: Study) -> str:
    """``partition_digest`` of the study's assigned units. On PostgreSQL the database
    hashes the canonical text itself (the same bytes: code point order, JSON strings),
    so that 10^5 pairs never travel to be sorted and serialized for a page."""
    assigned = Unit.objects.filter(study=study, partition__in=PARTITIONS)
    if connection.vendor != "postgresql":
        return partition_digest(assigned.values_list("digest", "partition"))
    pair = "'[' || to_json(digest)::text || ',' || to_json(partition)::text || ']'"
    order = 'digest COLLATE "C", partition COLLATE "C"'
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT encode(sha256(convert_to("  # noqa: S608 (no input in the text)
            f"'[' || coalesce(string_agg({pair}, ',' ORDER BY {order}), '') || ']', "
            f"'UTF8')), 'hex') FROM {Unit._meta.db_table} "
            "WHERE study_id = %s AND partition = ANY(%s)",
            [study.pk, list(PARTITIONS)],
        )
        return cursor.fetchone()[0]


_GROUP_PATHS = {name: f"observation__query__{name}" for name in GROUP_FIELDS}


def _group_counts(study: Study) -> list[GroupCount]:
    """Units per (partition, target family, domain, template): one grouped query, a row
    per combination present instead of a row per unit."""
    rows = (
        Unit.objects.filter(study=study)
        .order_by()
        .values("partition", *_GROUP_PATHS.values())
        .annotate(units=Count("id"))
        .values_list("partition", *_GROUP_PATHS.values(), "units")
    )
    return [
        GroupCount(partition=p, target_family=f, domain=d, template_id=t, units=n)
        for p, f, d, t, n in rows
    ]


def _leaks(
    study: Study,
    counts: Sequence[tuple[str, str, int, int]],
    first: int,
    leaks: int | None,
    units: int | None,
) -> list[Leak]:
    """Leaks with their unit counts; the first ``leaks`` (None: all) of them also with
    the first ``units`` (None: all) unit digests of each side, sorted (one query per
    grouping field among them)."""
    shown = counts[first:] if leaks is None else counts[first : first + leaks]
    if units is not None and units <= 0:
        shown = []
    digests: dict[tuple[str, str, str], list[str]] = defaultdict(list)
    for name in GROUP_FIELDS:
        values = [value for field_name, value, _, _ in shown if field_name == name]
        if not values:
            continue
        path = _GROUP_PATHS[name]
        rows = Unit.objects.filter(study=study, partition__in=PARTITIONS, **{f"{path}__in": values})
        if units is not None:
            rows = rows.annotate(
                rank=Window(
                    RowNumber(), partition_by=[F(path), F("partition")], order_by=F("digest").asc()
                )
            ).filter(rank__lte=units)
        for value, partition, digest in rows.values_list(path, "partition", "digest"):
            digests[(name, value, partition)].append(digest)
    complete = units is None
    return [
        Leak(
            name,
            value,
            tuple(sorted(digests.get((name, value, CALIBRATION), ()))),
            tuple(sorted(digests.get((name, value, TEST), ()))),
            # A leak that lists all of its units counts them itself.
            calibration_units=None
            if complete and 0 <= number - first < len(shown)
            else calibration,
            test_units=None if complete and 0 <= number - first < len(shown) else test,
        )
        for number, (name, value, calibration, test) in enumerate(counts)
    ]


def latest_records(*, study: Study, digests: Iterable[str]) -> dict[str, str]:
    """Unit digest → record digest of its latest label, for the units given (one query
    per 2,000 digests)."""
    digests = list(dict.fromkeys(digests))
    found: dict[str, str] = {}
    for start in range(0, len(digests), bulk.BATCH):
        rows = (
            Label.objects.filter(study=study, unit__digest__in=digests[start : start + bulk.BATCH])
            .order_by("id")
            .values_list("unit__digest", "record_digest")
        )
        found.update(rows)  # later labels overwrite earlier ones
    return found


@dataclass(frozen=True)
class RulePreview:
    rule: Rule
    test_values: list[str]
    counts: dict[str, int]  # after the rule
    before: dict[str, int]
    changed: int  # units whose partition the rule changes
    leaks: list[Leak]  # after the rule


def _preview(rule: Rule, units: Sequence[UnitGroups]) -> tuple[RulePreview, dict[str, str]]:
    try:
        rule_check(rule, units)
    except RuleError as exc:
        raise PartitionError(exc.message, code=exc.code) from exc
    assignment = rule_assign(rule, units)
    after = with_partitions(units, assignment)
    preview = RulePreview(
        rule=rule,
        test_values=sorted(rule_test_values(rule, units)),
        counts=partition_counts(unit.partition for unit in after),
        before=partition_counts(unit.partition for unit in units),
        changed=sum(1 for unit in units if unit.partition != assignment[unit.digest]),
        leaks=leakage(after),
    )
    return preview, assignment


def partition_rule_preview(*, study: Study, rule: Rule) -> RulePreview:
    """What ``rule`` would do: counts and leakage afterwards, nothing written."""
    preview, _ = _preview(rule, partition_units(study=study))
    return preview


# --- writes ------------------------------------------------------------------------------


def _partitions_changed(study: Study) -> None:
    """What a partition change or a freeze sets off, once committed: the reliability
    report (its labels are those outside the sealed partitions), then the gate."""
    queue_job_once(STUDY_REPORT_REFRESH, study.pk)
    queue_gate_refresh(study.pk)


def _lock_unfrozen(study: Study, what: str) -> Study:
    """Lock the study row for the rest of the transaction; refuse if it is frozen."""
    locked = Study.objects.select_for_update().get(pk=study.pk)
    if StudyFreeze.objects.filter(study_id=study.pk).exists():
        raise PartitionError(
            f"study {study.slug} is frozen: {what} can no longer change; create a new "
            "study version instead",
            code=STUDY_FROZEN,
        )
    return locked


def partition_rule_apply(*, study: Study, rule: Rule, refuse_leakage: bool = False) -> RulePreview:
    """Assign every unit of the study by ``rule`` (two UPDATE statements, whatever the
    study's size). Refused once the study is frozen, and with ``refuse_leakage`` (the
    page) when the rule leaves a group in both partitions, which would block the freeze."""
    with transaction.atomic():
        _lock_unfrozen(study, "partitions")
        preview, _ = _preview(rule, partition_units(study=study))
        if refuse_leakage and preview.leaks:
            raise PartitionError(
                leak_reason(rule.field, preview.leaks)[:-1] + "; nothing was changed",
                code=LEAKAGE,
            )
        lookup = f"observation__query__{rule.field}__in"
        units = Unit.objects.filter(study=study)
        units.filter(**{lookup: preview.test_values}).update(partition="test")
        units.exclude(**{lookup: preview.test_values}).update(partition="calibration")
        _partitions_changed(study)
    return preview


def _set_partition(study: Study, digests: Sequence[str], partition: str) -> None:
    if not digests:
        return
    if connection.vendor == "postgresql":
        # One statement with one array parameter, however many units.
        table = connection.ops.quote_name(Unit._meta.db_table)
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {table} SET partition = %s "  # noqa: S608 - names from the model
                "WHERE study_id = %s AND digest = ANY(%s)",
                [partition, study.pk, list(digests)],
            )
        return
    for start in range(0, len(digests), bulk.BATCH):
        chunk = digests[start : start + bulk.BATCH]
        Unit.objects.filter(study=study, digest__in=chunk).update(partition=partition)


def _unit_of(study: Study, digests: Iterable[str]) -> dict[str, str]:
    """Unit digest and tuple digest → the digest of its unit, for the digests given.
    A tuple of an answer study belongs to its answer's unit."""
    digests = list(dict.fromkeys(digests))
    found = {d: d for d in bulk.ids_by(Unit, "digest", digests, study_id=study.pk)}
    if study.codebook.unit == CodebookUnit.TUPLE:
        return found  # every tuple is its own unit, with the tuple's digest
    rest = [d for d in digests if d not in found]
    for start in range(0, len(rest), bulk.BATCH):
        chunk = rest[start : start + bulk.BATCH]
        rows = (
            Tuple.objects.filter(study=study, digest__in=chunk)
            .filter(observation__units__isnull=False)
            .values_list("digest", "observation__units__digest")
        )
        for tuple_digest, unit_digest in rows:
            found.setdefault(tuple_digest, unit_digest)
    return found


@dataclass(frozen=True)
class FileOutcome:
    applied: bool
    lines: int  # good lines read
    units: int  # units the file assigned
    counts: dict[str, int]  # after (or as they stay, when refused)
    problems: list[LineProblem] = field(default_factory=list)
    leaks: list[Leak] = field(default_factory=list)


def partition_file_apply(*, study: Study, data: bytes, file_name: str = "") -> FileOutcome:
    """Assign the units a partition file names. Atomic: one bad line — malformed, an
    unknown digest, a bad partition value, a conflict — and nothing is applied; every bad
    line is reported with its number. Units the file does not name keep their partition."""
    lines, problems = parse_partition_file(data, file_name=file_name)
    with transaction.atomic():
        _lock_unfrozen(study, "partitions")
        assignment: dict[str, str] = {}
        if not problems:
            unit_of = _unit_of(study, (line.digest for line in lines))
            assignment, problems = file_assignment(lines, unit_of)
        units = partition_units(study=study)
        if problems:
            return FileOutcome(
                applied=False,
                lines=len(lines),
                units=0,
                counts=partition_counts(unit.partition for unit in units),
                problems=sorted(problems, key=lambda p: p.line),
            )
        by_partition: dict[str, list[str]] = defaultdict(list)
        for digest, partition in assignment.items():
            by_partition[partition].append(digest)
        for partition, digests in sorted(by_partition.items()):
            _set_partition(study, digests, partition)
        _partitions_changed(study)
    after = with_partitions(units, assignment)
    return FileOutcome(
        applied=True,
        lines=len(lines),
        units=len(assignment),
        counts=partition_counts(unit.partition for unit in after),
        leaks=leakage(after),
    )


def study_thresholds_set(*, study: Study, thresholds: Any) -> Study:
    """Replace the study's operating thresholds (a JSON object of named numbers).
    Refused once the study is frozen."""
    problem = text_problem(thresholds, "thresholds")
    if problem is not None:
        raise PartitionError(problem.message, code=problem.code)
    problems = thresholds_problems(thresholds)
    if problems:
        raise PartitionError("; ".join(problems), code="invalid_thresholds")
    with transaction.atomic():
        _lock_unfrozen(study, "its thresholds")
        Study.objects.filter(pk=study.pk).update(thresholds=thresholds)
        queue_gate_refresh(study.pk)  # it compares the alphas with the reliability ones
    study.thresholds = thresholds
    return study


# --- the freeze --------------------------------------------------------------------------


def _pipelines_in_use(study: Study) -> list[dict[str, str]]:
    return list(
        Pipeline.objects.filter(
            pk__in=Observation.objects.filter(study=study).values("pipeline_id")
        ).values("name", "version", "key")
    )


def freeze_preview(*, study: Study) -> FreezeContents:
    """What a freeze would record now, and what stands in its way (two queries, with
    the study's codebook already loaded)."""
    return freeze_contents(
        codebook_digest=study.codebook.digest,
        pipelines=_pipelines_in_use(study),
        thresholds=thresholds_with_defaults(study.thresholds or {}),
        units=partition_units(study=study),
    )


def study_freeze(*, study: Study, user: AbstractBaseUser) -> StudyFreeze:
    """Freeze the study's codebook, pipelines, thresholds and partitions, irreversibly.

    Refused while a unit has no partition, while a target family, domain or query
    template has units on both sides, and a second time. Test-partition numbers open
    once this returns (``audit.partitions.selectors.partition_sealed``)."""
    with transaction.atomic():
        locked = Study.objects.select_for_update().get(pk=study.pk)
        if StudyFreeze.objects.filter(study_id=study.pk).exists():
            raise PartitionError(
                f"study {study.slug} is already frozen; a freeze is irreversible — create a "
                "new study version to change anything",
                code=ALREADY_FROZEN,
            )
        contents = freeze_preview(study=locked)
        problems = contents.problems()
        if problems:
            raise PartitionError(
                "Cannot freeze: " + "; ".join(sentence for _, sentence in problems) + ".",
                code=problems[0][0],
            )
        if contents.thresholds != (locked.thresholds or {}):
            # The reliability thresholds' defaults become the study's own, frozen with it.
            Study.objects.filter(pk=study.pk).update(thresholds=contents.thresholds)
            study.thresholds = contents.thresholds
        freeze = StudyFreeze.objects.create(
            study=study,
            codebook_digest=contents.codebook_digest,
            pipelines=contents.pipelines,
            pipelines_digest=contents.pipelines_digest,
            thresholds=contents.thresholds,
            thresholds_digest=contents.thresholds_digest,
            partition_digest=contents.partition_digest,
            partition_counts=contents.partition_counts,
            frozen_by=user,
        )
        _partitions_changed(study)  # the test partition's labels are open from now on
    return freeze


# --- study versions ----------------------------------------------------------------------


def _columns(model: type, names: Sequence[str]) -> str:
    return ", ".join(connection.ops.quote_name(model._meta.get_field(n).column) for n in names)


def _copy_archive_rows(old: Study, new: Study) -> None:
    """Observations, tuples and units of ``old`` into ``new``, by INSERT … SELECT: five
    statements whatever the study's size, no row through Python. The new rows point to
    the same archive rows (queries, pipelines, snapshots) and the same import batches,
    which record where the observations came from; units start open and unlabelled, with
    the partitions they had."""
    q = connection.ops.quote_name
    observation, tuple_, unit = (q(m._meta.db_table) for m in (Observation, Tuple, Unit))
    observation_fields = ("unit_digest", "query", "pipeline", "answer", "batch", "position")
    tuple_fields = (
        "digest",
        "query",
        "pipeline",
        "answer",
        "source",
        "position",
        "sampling_stratum",
        "inclusion_probability",
    )
    unit_fields = (
        "study",
        "observation",
        "tuple",
        "digest",
        "assigned_count",
        "submitted_count",
        "state",
        "priority",
        "partition",
    )
    copied_observation = ", ".join(
        f"o.{q(Observation._meta.get_field(n).column)}" for n in observation_fields
    )
    copied_tuple = ", ".join(f"t.{q(Tuple._meta.get_field(n).column)}" for n in tuple_fields)
    statements = [
        (
            f"INSERT INTO {observation} "  # noqa: S608 - names from the models
            f"(study_id, {_columns(Observation, observation_fields)}) "
            f"SELECT %s, {copied_observation} FROM {observation} o "
            "WHERE o.study_id = %s ORDER BY o.id",
            [new.pk, old.pk],
        ),
        (
            f"INSERT INTO {tuple_} "  # noqa: S608
            f"(study_id, observation_id, {_columns(Tuple, tuple_fields)}) "
            f"SELECT %s, n.id, {copied_tuple} FROM {tuple_} t "
            f"JOIN {observation} o ON o.id = t.observation_id "
            f"JOIN {observation} n ON n.study_id = %s AND n.unit_digest = o.unit_digest "
            "WHERE t.study_id = %s ORDER BY t.id",
            [new.pk, new.pk, old.pk],
        ),
        (
            f"INSERT INTO {unit} ({_columns(Unit, unit_fields)}) "  # noqa: S608
            "SELECT %s, nt.observation_id, nt.id, u.digest, 0, 0, 'open', NULL, u.partition "
            f"FROM {unit} u JOIN {tuple_} t ON t.id = u.tuple_id "
            f"JOIN {tuple_} nt ON nt.study_id = %s AND nt.digest = t.digest "
            "WHERE u.study_id = %s ORDER BY u.id",
            [new.pk, new.pk, old.pk],
        ),
        (
            f"INSERT INTO {unit} ({_columns(Unit, unit_fields)}) "  # noqa: S608
            "SELECT %s, n.id, NULL, u.digest, 0, 0, 'open', NULL, u.partition "
            f"FROM {unit} u JOIN {observation} o ON o.id = u.observation_id "
            f"JOIN {observation} n ON n.study_id = %s AND n.unit_digest = o.unit_digest "
            "WHERE u.study_id = %s AND u.tuple_id IS NULL ORDER BY u.id",
            [new.pk, new.pk, old.pk],
        ),
    ]
    with connection.cursor() as cursor:
        for sql, params in statements:
            cursor.execute(sql, params)


def study_version_create(
    *,
    study: Study,
    slug: str,
    title: str,
    user: AbstractBaseUser | None,
    codebook: Codebook | None = None,
) -> Study:
    """A new version of ``study`` over the same archive: its observations, tuples and
    units copied (no file re-imported), its members with their pseudonyms, its overlap,
    thresholds and partitions — and no label, no gate, no freeze. The codebook stays the
    same unless a newer version of it (same name and unit) is given."""
    codebook = codebook or study.codebook
    slug = (slug or "").strip()
    title = (title or "").strip()
    try:
        validate_slug(slug)
    except ValidationError as exc:
        raise PartitionError(
            f"{slug!r} is not a slug: letters, digits, hyphens, underscores", code=INVALID_VERSION
        ) from exc
    if len(slug) > Study._meta.get_field("slug").max_length:
        raise PartitionError("the slug is too long (at most 80 characters)", code=INVALID_VERSION)
    if not title:
        raise PartitionError("a new study version needs a title", code=INVALID_VERSION)
    if codebook.name != study.codebook.name or codebook.unit != study.codebook.unit:
        raise PartitionError(
            f"a new version keeps the codebook {study.codebook.name} (a newer version of it "
            f"may be chosen), not {codebook.name} {codebook.version}",
            code=INVALID_VERSION,
        )
    with transaction.atomic():
        if Study.objects.filter(slug=slug).exists():
            raise PartitionError(f"a study with the slug {slug!r} exists", code=SLUG_TAKEN)
        new = Study.objects.create(
            slug=slug,
            title=title[:200],
            description=study.description,
            codebook=codebook,
            overlap=study.overlap,
            previous_version=study,
            thresholds=dict(study.thresholds or {}),
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        _copy_archive_rows(study, new)
        Membership.objects.bulk_create(
            [
                Membership(study=new, user_id=user_id, role=role, pseudonym=pseudonym)
                for user_id, role, pseudonym in Membership.objects.filter(study=study)
                .order_by("id")
                .values_list("user_id", "role", "pseudonym")
            ]
        )
        queue_orders_draw(new.pk)  # its annotators' orders, drawn ahead
    return new
