"""Writes for annotation: one function per mutation, called by pages, API and commands."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, F, Max, OuterRef, QuerySet, Subquery
from django.utils import timezone

from annotator.errors import AnnotationError
from annotator.labelling.models import (
    Assignment,
    Draft,
    Label,
    LabelKind,
    LabelSight,
    QueueOrder,
    QueuePosition,
    QueueSeed,
)
from annotator.labelling.order import order_key_sql, order_parameters
from annotator.labelling.selectors import label_head, unit_content
from annotator.memberships.services import pseudonym_of
from audit.archive.models import CodebookUnit, Study, Unit, UnitState
from audit.archive.records import record_build
from audit.archive.selectors import codebook_registry
from audit.contract import check_record
from audit.contract.codebook import codebook_from_dict, reasons_missing
from audit.contract.errors import ContractError
from audit.contract.texts import text_problem
from audit.queueing import LABEL_SUBMITTED, queue_job

# Re-exported: the record of a label is built by audit.archive.records, and every refusal
# here is an AnnotationError (annotator.errors).
__all__ = ["AnnotationError", "record_build"]

# --- errors -------------------------------------------------------------------------


class LabelRefused(AnnotationError):
    """The record contract refused the submitted annotation (reason code of the checker)."""


class SubmissionIdReused(AnnotationError):
    """A ``client_submission_id`` already used for a label on another assignment."""

    code = "submission_id_reused"


class StaleRevision(AnnotationError):
    """The submission edits a revision that is no longer the latest one."""

    code = "stale_revision"

    def __init__(self, message: str, *, head: Label | None) -> None:
        super().__init__(message)
        self.head = head


class DraftConflict(AnnotationError):
    """The draft was saved elsewhere (another tab) since this client loaded it."""

    code = "draft_conflict"

    def __init__(self, message: str, *, draft: Draft) -> None:
        super().__init__(message)
        self.draft = draft


class AssignmentClosed(AnnotationError):
    code = "assignment_closed"


class LabelsSeen(AnnotationError):
    """The annotator has been shown other labels of this unit: no label of theirs on it
    can be blind any more."""

    code = "labels_seen"


def text_refusal(value: Any, where: str, error: type[AnnotationError] = AnnotationError) -> None:
    """Refuse a NUL, an unpaired surrogate or nesting too deep anywhere in ``value`` (a
    text or a parsed JSON value) with ``invalid_text`` or ``too_deep``, naming where: the
    one check that pages, the API and commands share before anything is stored or hashed."""
    problem = text_problem(value, where)
    if problem is not None:
        raise error(problem.message, code=problem.code)


def reasons_refusal(*, study: Study, annotation: dict[str, Any]) -> None:
    """Refuse (``reason_missing``) a blank reason where the study's codebook requires one
    (audit.contract.codebook.reasons_missing): a rule of submitting, for annotators and
    adjudicators alike; records already stored or imported stay as they are."""
    problem = reasons_missing(annotation, codebook_from_dict(study.codebook.definition))
    if problem is not None:
        raise LabelRefused(problem, code="reason_missing")


# --- who has seen which labels ----------------------------------------------------------

#: Sightings written per INSERT when the units come as a list of ids.
SIGHT_BATCH = 5_000


def labels_seen_record(
    *, user: AbstractBaseUser, units: QuerySet[Unit] | Iterable[int], via: str
) -> None:
    """Record, before they are shown, that ``user`` is being shown the labels of
    ``units`` (a queryset of units, or unit ids), and release the slots ``user`` still
    holds unfinished on any of them: from now on nobody hands them such a unit to label
    and their submissions on it are refused (:class:`LabelsSeen`).

    A queryset is inserted by the database itself (INSERT … SELECT): a release of 10⁵
    units costs one statement and no Python loop. Sightings already recorded stay as they
    are (the first one is kept).
    """
    now = timezone.now()
    with transaction.atomic():
        if isinstance(units, QuerySet):
            _sights_insert_select(user=user, units=units, via=via, now=now)
        else:
            ids = list(dict.fromkeys(int(pk) for pk in units))
            for start in range(0, len(ids), SIGHT_BATCH):
                LabelSight.objects.bulk_create(
                    [
                        LabelSight(user=user, unit_id=pk, via=via, seen_at=now)
                        for pk in ids[start : start + SIGHT_BATCH]
                    ],
                    ignore_conflicts=True,
                )
        _slots_release_seen(user=user)


def _sights_insert_select(
    *, user: AbstractBaseUser, units: QuerySet[Unit], via: str, now: Any
) -> None:
    # One named column, whatever the queryset's joins and subqueries call its id.
    select, params = units.order_by().values(sighted_unit=F("pk")).query.sql_with_params()
    table = connection.ops.quote_name(LabelSight._meta.db_table)
    # Every SELECT feeding an upsert needs a WHERE on SQLite (its parser would read ON as a
    # join); query parameters are marked %s on both backends. Only the table name and
    # the compiled SELECT are interpolated; every value is a parameter.
    sql = (
        f"INSERT INTO {table} (user_id, unit_id, via, seen_at) "  # noqa: S608
        f"SELECT %s, picked.sighted_unit, %s, %s FROM ({select}) picked WHERE 1 = 1 "
        "ON CONFLICT (user_id, unit_id) DO NOTHING"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [user.pk, via, now, *params])


def _slots_release_seen(*, user: AbstractBaseUser) -> None:
    """Give up ``user``'s unfinished assignments on units whose labels they have seen:
    the slot goes back to the queue for someone still blind to it. (A submitted one stays:
    it was made blind; revisions on it are refused by :func:`label_submit`.)"""
    stale = list(
        Assignment.objects.select_for_update()
        .filter(annotator=user, submitted_at__isnull=True)
        .filter(Exists(LabelSight.objects.filter(user=user, unit=OuterRef("unit_id"))))
        .values_list("pk", "unit_id")
    )
    for pk, unit_id in stale:
        Draft.objects.filter(assignment_id=pk).delete()
        Assignment.objects.filter(pk=pk).delete()
        Unit.objects.filter(pk=unit_id).update(assigned_count=F("assigned_count") - 1)


def labels_seen_by(*, user_id: int, unit_id: int) -> bool:
    return LabelSight.objects.filter(user_id=user_id, unit_id=unit_id).exists()


# --- the queue -------------------------------------------------------------------------


def _queue_order(*, study: Study, annotator: AbstractBaseUser) -> QueueOrder:
    """The annotator's recorded order in the study, drawn (with its keys) the first time."""
    order = QueueOrder.objects.filter(study=study, annotator=annotator).first()
    if order is not None:
        return order
    try:
        with transaction.atomic():
            seed, _ = QueueSeed.objects.get_or_create(study=study)
            order = QueueOrder.objects.create(study=study, annotator=annotator, seed=seed.seed)
            queue_positions_add(order=order)
    except IntegrityError:  # drawn at the same moment by another request of theirs
        order = QueueOrder.objects.get(study=study, annotator=annotator)
    return order


def queue_positions_add(*, order: QueueOrder) -> int:
    """Give the study's units that ``order`` does not hold yet their keys: one INSERT …
    SELECT computed by the database (annotator.labelling.order), whatever the number of
    units. A new order takes every unit; later, the units imported since (ids above the
    order's largest, found on its unique (order, unit) index: ids only grow). Returns how
    many were added."""
    parameters = order_parameters(seed=order.seed, annotator_id=order.annotator_id)
    units = connection.ops.quote_name(Unit._meta.db_table)
    positions = connection.ops.quote_name(QueuePosition._meta.db_table)
    # The modulo operator doubled: the driver reads a single % as a placeholder.
    key = order_key_sql(parameters, "u.id").replace("%", "%%")
    after = QueuePosition.objects.filter(order=order).aggregate(last=Max("unit_id"))["last"] or 0
    # Only the table names and integers computed by order_key_sql are interpolated; the
    # ids are query parameters. No anti-join on the table being written: a plan probing
    # it per unit would read the pages this very statement appends (quadratic); the
    # unique index turns a unit already there (a concurrent request) into nothing.
    sql = (
        f"INSERT INTO {positions} (order_id, unit_id, key) "  # noqa: S608
        f"SELECT %s, u.id, {key} FROM {units} u WHERE u.study_id = %s AND u.id > %s "
        "ON CONFLICT (order_id, unit_id) DO NOTHING"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [order.pk, order.study_id, after])
        return max(cursor.rowcount, 0)


def _blind_and_not_mine(annotator: AbstractBaseUser, unit_ref: str) -> tuple[Exists, Exists]:
    """The two anti-joins of every candidate: units whose labels ``annotator`` was shown,
    and units they already hold (each probes a unique (user, unit) index)."""
    return (
        Exists(LabelSight.objects.filter(user=annotator, unit=OuterRef(unit_ref))),
        Exists(Assignment.objects.filter(annotator=annotator, unit=OuterRef(unit_ref))),
    )


def _started_unit(*, study: Study, annotator: AbstractBaseUser, order: QueueOrder) -> Unit | None:
    """A unit that others hold and that still has a free slot, first in this annotator's
    order: read from the ``unit_queue`` index over the counts 1 … k-1 (the units being
    labelled now, few), each probing its key in the annotator's order. Locked FOR NO KEY
    UPDATE SKIP LOCKED on PostgreSQL."""
    if study.overlap < 2:
        return None
    seen, mine = _blind_and_not_mine(annotator, "pk")
    key = QueuePosition.objects.filter(order=order, unit=OuterRef("pk")).values("key")[:1]
    return (
        Unit.objects.select_for_update(skip_locked=True, no_key=True, of=("self",))
        .filter(study=study, assigned_count__gte=1, assigned_count__lt=study.overlap)
        .exclude(seen)
        .exclude(mine)
        .annotate(order_key=Subquery(key))
        .order_by(F("order_key").asc(nulls_last=True), "pk")
        .first()
    )


def _fresh_position(
    *, study: Study, annotator: AbstractBaseUser, order: QueueOrder, after: int | None
) -> QueuePosition | None:
    """The first position of ``order`` (after the key ``after``, if given) whose unit
    nobody holds yet and whose labels this annotator was never shown: a walk of the
    (order, key) index. Its unit row is locked FOR NO KEY UPDATE SKIP LOCKED (PostgreSQL)."""
    # A unit nobody holds is not this annotator's either: only the blinding anti-join.
    seen = _blind_and_not_mine(annotator, "unit_id")[0]
    positions = QueuePosition.objects.filter(order=order, unit__assigned_count=0).exclude(seen)
    if after is not None:
        positions = positions.filter(key__gt=after)
    return (
        positions.select_related("unit")
        .select_for_update(skip_locked=True, no_key=True, of=("unit",))
        .order_by("key", "unit_id")
        .first()
    )


def assignment_next(*, study: Study, annotator: AbstractBaseUser) -> Assignment | None:
    """The annotator's next unit: an unfinished assignment first, otherwise a unit with a
    free slot that this annotator has never had, in the annotator's own seeded order.
    ``None`` when nothing is left.

    Order (annotator.labelling.order): every annotator walks their own permutation of the
    study's units (:class:`QueueOrder`), reproducible from the study's :class:`QueueSeed`
    and their id. Units that others already hold and that still have a free slot come
    first (so that units reach k labels, and disagreements show, early rather than at the
    end of the study), among them the first in this annotator's order; then the next unit
    nobody holds, in this annotator's order. Working alone, or behind the others, an
    annotator therefore sees the units in an order of their own; two annotators labelling
    the same units at the same pace meet on them.

    Cost: the units being labelled (counts 1 … k-1) are read from the ``unit_queue`` index;
    the fresh units by a walk of the (order, key) index that resumes after the last fresh
    unit handed out (the order's ``cursor``), so it never re-reads the study. When nothing
    is left ahead it starts over from the first key (a slot given back behind the cursor
    is found there), and when nothing is left at all, units imported after the order was
    drawn are added to it and walked.

    On PostgreSQL each candidate unit is locked with FOR NO KEY UPDATE SKIP LOCKED, so
    that two annotators asking at the same moment never take the last slot of one unit
    together; the loser simply gets the next unit. (SQLite serializes writers anyway.) Not
    FOR UPDATE: the key-share locks that every row referencing a unit takes (another
    annotator's order being drawn, an assignment being created) would make SKIP LOCKED
    skip every unit of the study while they last.

    Blinding: a unit whose labels this person has been shown (:class:`LabelSight`, on an
    adjudication page, a record page, the outcomes review list or a release download) is
    never handed to them, whatever their roles now and whatever the overlap is raised to:
    each walk carries a NOT EXISTS anti-join on the (user, unit) index.
    """
    unfinished = (
        Assignment.objects.filter(study=study, annotator=annotator, submitted_at__isnull=True)
        .exclude(Exists(LabelSight.objects.filter(user=annotator, unit=OuterRef("unit_id"))))
        .order_by("id")
        .first()
    )
    if unfinished is not None:
        return unfinished
    order = _queue_order(study=study, annotator=annotator)
    with transaction.atomic():
        unit = _started_unit(study=study, annotator=annotator, order=order)
        if unit is not None:
            return _assignment_take(study=study, annotator=annotator, unit_id=unit.pk)
        walk = {"study": study, "annotator": annotator, "order": order}
        position = _fresh_position(**walk, after=order.cursor)
        if position is None and order.cursor >= 0:
            position = _fresh_position(**walk, after=None)
        if position is None and queue_positions_add(order=order):
            position = _fresh_position(**walk, after=None)
        if position is None:
            return None
        QueueOrder.objects.filter(pk=order.pk).update(cursor=position.key)
        return _assignment_take(study=study, annotator=annotator, unit_id=position.unit_id)


def _assignment_take(*, study: Study, annotator: AbstractBaseUser, unit_id: int) -> Assignment:
    assignment = Assignment.objects.create(study=study, unit_id=unit_id, annotator=annotator)
    Unit.objects.filter(pk=unit_id).update(assigned_count=F("assigned_count") + 1)
    return assignment


# --- drafts ---------------------------------------------------------------------------


def draft_save(
    *, assignment: Assignment, payload: dict[str, Any], base_version: int | None
) -> Draft:
    """Autosave. ``base_version`` is the draft version the client last saw (``None``: save
    regardless); a mismatch means another tab saved since, and nothing is overwritten."""
    if not isinstance(payload, dict):
        raise AnnotationError("a draft must be a JSON object", code="invalid_draft")
    text_refusal(payload, "draft")
    with transaction.atomic():
        draft, _ = Draft.objects.select_for_update().get_or_create(assignment=assignment)
        if base_version is not None and base_version != draft.version:
            raise DraftConflict(
                f"this draft was saved elsewhere (version {draft.version}, you had "
                f"{base_version}); reload to continue from the newest version",
                draft=draft,
            )
        draft.payload = payload
        draft.version += 1
        draft.save(update_fields=["payload", "version", "updated_at"])
    return draft


# --- submissions ---------------------------------------------------------------------


@dataclass(frozen=True)
class Submission:
    label: Label
    replayed: bool  # True when this client submission id had already been accepted


def _annotation_from_input(
    *, study: Study, data: dict[str, Any], pseudonym: str, kind: str
) -> dict[str, Any]:
    """The stored annotation: what the client sent, plus what only the server may set
    (kind, pseudonym) and the codebook's weights beside each evidence value."""
    if not isinstance(data, dict):
        raise LabelRefused("the annotation must be a JSON object", code="invalid_field")
    annotation = dict(data)
    for key in ("kind", "annotator"):
        annotation.pop(key, None)
    annotation = {"kind": str(kind), "annotator": pseudonym, **annotation}
    annotation.setdefault("assisted", None)
    annotation.setdefault("rationale", None)
    if study.codebook.unit == CodebookUnit.TUPLE:
        weights = {
            item["key"]: item["weight"]
            for item in study.codebook.definition.get("evidence_dimensions", [])
        }
        evidence = annotation.get("evidence")
        if isinstance(evidence, dict):
            annotation["evidence"] = {
                key: value
                if isinstance(value, dict)
                else {"value": value, "weight": weights.get(key, 0.0)}
                for key, value in evidence.items()
            }
    return annotation


def _replayed(label: Label, assignment: Assignment) -> Submission:
    """The label a repeated submission id created — only on the assignment it was made on:
    answering with another unit's label would hand one unit's work to another."""
    if label.assignment_id != assignment.pk:
        raise SubmissionIdReused(
            "this client_submission_id was already used for a submission on another "
            "assignment; send a new id for every submission"
        )
    return Submission(label=label, replayed=True)


def label_submit(
    *,
    assignment: Assignment,
    annotation: dict[str, Any],
    client_submission_id: uuid.UUID | str,
    parent_digest: str | None,
) -> Submission:
    """Submit an annotation on an assignment.

    Idempotent: the same ``client_submission_id`` returns the label it created. The
    submission names the revision it edits (``parent_digest``; ``None`` for the first);
    if that is not the annotator's latest revision, :class:`StaleRevision` is raised and
    nothing is written. The record is checked by the record contract (the same checker
    as ``python -m audit.check``) before it is stored; labels are never updated.
    """
    try:
        submission_id = uuid.UUID(str(client_submission_id))
    except ValueError as exc:
        raise AnnotationError(
            "client_submission_id must be a UUID", code="invalid_submission_id"
        ) from exc
    text_refusal(annotation, "annotation", LabelRefused)
    replay = Label.objects.filter(
        annotator_id=assignment.annotator_id, client_submission_id=submission_id
    ).first()
    if replay is not None:
        return _replayed(replay, assignment)

    study = Study.objects.select_related("codebook").get(pk=assignment.study_id)
    with transaction.atomic():
        # Serializes submissions on this assignment (PostgreSQL row lock).
        Assignment.objects.select_for_update().filter(pk=assignment.pk).first()
        if labels_seen_by(user_id=assignment.annotator_id, unit_id=assignment.unit_id):
            raise LabelsSeen(
                "you have been shown other people's labels of this unit (adjudication, "
                "record, outcomes or a release), so a label of yours on it would not be "
                "blind; it is left to annotators who have not seen them"
            )
        head = label_head(assignment=assignment)
        head_digest = head.record_digest if head else None
        if parent_digest != head_digest:
            raise StaleRevision(
                "this submission edits a revision that is no longer the latest: "
                f"latest is {head_digest or 'none (nothing submitted yet)'}, "
                f"the submission names {parent_digest or 'none'}",
                head=head,
            )
        try:
            record = record_build(
                study=study,
                content=unit_content(unit=assignment.unit),
                annotation=_annotation_from_input(
                    study=study,
                    data=annotation,
                    pseudonym=pseudonym_of(study=study, user=assignment.annotator),
                    kind=LabelKind.INDEPENDENT.value,
                ),
                parents=[head_digest] if head_digest else [],
            )
        except ContractError as exc:  # sealing refuses what cannot be hashed or stored
            raise LabelRefused(exc.message, code=exc.code) from None
        result = check_record(record, codebook_registry())
        if not result.ok:
            raise LabelRefused(result.message or "refused", code=result.reason)
        reasons_refusal(study=study, annotation=record["annotation"])
        assisted = record["annotation"].get("assisted")
        try:
            with transaction.atomic():
                label = Label.objects.create(
                    study=study,
                    unit_id=assignment.unit_id,
                    annotator_id=assignment.annotator_id,
                    assignment=assignment,
                    kind=LabelKind.INDEPENDENT,
                    revision=(head.revision + 1) if head else 1,
                    annotation=record["annotation"],
                    parents=record["parents"],
                    record_digest=record["record_digest"],
                    codebook_digest=study.codebook.digest,
                    client_submission_id=submission_id,
                    assisted_model=assisted.get("model") if isinstance(assisted, dict) else None,
                )
        except IntegrityError:
            replay = Label.objects.filter(
                annotator_id=assignment.annotator_id, client_submission_id=submission_id
            ).first()
            if replay is not None:
                return _replayed(replay, assignment)
            raise StaleRevision(
                "another submission of this revision was accepted first", head=head
            ) from None
        if head is None:
            Assignment.objects.filter(pk=assignment.pk).update(submitted_at=timezone.now())
            Unit.objects.filter(pk=assignment.unit_id).update(
                submitted_count=F("submitted_count") + 1
            )
            Unit.objects.filter(pk=assignment.unit_id, state=UnitState.OPEN).update(
                state=UnitState.PARTIALLY_LABELLED
            )
        Draft.objects.filter(assignment=assignment).delete()
        queue_job(LABEL_SUBMITTED, label.pk)
    return Submission(label=label, replayed=False)
