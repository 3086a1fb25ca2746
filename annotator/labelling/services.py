"""Writes for annotation: one function per mutation, called by pages, API and commands."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, F, OuterRef, QuerySet
from django.utils import timezone

from annotator.errors import AnnotationError
from annotator.labelling.models import Assignment, Draft, Label, LabelKind, LabelSight
from annotator.labelling.selectors import label_head, unit_content
from annotator.memberships.services import pseudonym_of
from audit.archive.models import CodebookUnit, Study, Unit, UnitState
from audit.archive.records import record_build
from audit.archive.selectors import codebook_registry
from audit.contract import check_record
from audit.contract.canonical import canonical_json
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


class RevisionUnchanged(AnnotationError):
    """The submission is identical to the latest revision: nothing new to store (labels are
    append-only, so an identical revision would only add a row that says nothing)."""

    code = "unchanged_revision"

    def __init__(self, message: str, *, head: Label) -> None:
        super().__init__(message)
        self.head = head


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


# --- who has seen which labels ----------------------------------------------------------

#: Sightings written per INSERT when the units come as a list of ids.
SIGHT_BATCH = 5_000


def _seen_by(user: AbstractBaseUser) -> Exists:
    """``~_seen_by(user)`` keeps the units whose labels ``user`` was never shown: an
    anti-join (NOT EXISTS) probing the (user, unit) index once per candidate unit."""
    return Exists(LabelSight.objects.filter(user=user, unit=OuterRef("pk")))


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


def assignment_next(*, study: Study, annotator: AbstractBaseUser) -> Assignment | None:
    """The annotator's next unit: an unfinished assignment first, otherwise a unit that has
    a free slot and that this annotator has never had. ``None`` when nothing is left.

    On PostgreSQL the candidate unit is locked with FOR UPDATE SKIP LOCKED, so that two
    annotators asking at the same moment never take the last slot of one unit together;
    the loser simply gets the next unit. (SQLite serializes writers anyway.)

    The lowest such unit is looked for once per number of slots already taken (0 … k-1),
    each an ordered walk of the ``unit_queue`` index (study, assigned_count, id) that
    starts at the first unit with that count: the study's full units, however many, are
    never read (one ``assigned_count < k`` walk in id order would step over every one of
    them, from the table's start). The candidates found but not taken stay locked only
    until this transaction ends.

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
    with transaction.atomic():
        unit = None
        for taken in range(study.overlap):
            candidates = (
                Unit.objects.select_for_update(skip_locked=True, of=("self",))
                .filter(study=study, assigned_count=taken)
                .exclude(_seen_by(annotator))
            )
            if taken:
                # A unit nobody holds (assigned_count counts its assignments) is nobody's:
                # only the others need the anti-join, which reads this annotator's slots.
                candidates = candidates.exclude(assignments__annotator=annotator)
            candidate = candidates.order_by("id").first()
            if candidate is not None and (unit is None or candidate.pk < unit.pk):
                unit = candidate
        if unit is None:
            return None
        assignment = _assignment_create(study=study, unit=unit, annotator=annotator)
        Unit.objects.filter(pk=unit.pk).update(assigned_count=F("assigned_count") + 1)
    return assignment


def _assignment_create(*, study: Study, unit: Unit, annotator: AbstractBaseUser) -> Assignment:
    """The slot, numbered next in this annotator's own queue of the study. Two of their
    tabs asking at the same moment would take the same number: the unique constraint
    refuses the later one, which then counts again (after the first has committed)."""
    for attempt in range(3):
        last = (
            Assignment.objects.filter(study=study, annotator=annotator)
            .order_by("-number")
            .values_list("number", flat=True)
            .first()
        )
        try:
            with transaction.atomic():
                return Assignment.objects.create(
                    study=study, unit=unit, annotator=annotator, number=(last or 0) + 1
                )
        except IntegrityError:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


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


def draft_discard(*, assignment: Assignment) -> None:
    """Drop the assignment's draft (a submission that changed nothing leaves none behind)."""
    Draft.objects.filter(assignment=assignment).delete()


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
        if head is not None and canonical_json(record["annotation"]) == canonical_json(
            head.annotation
        ):
            raise RevisionUnchanged(
                f"this revision is identical to your revision {head.revision}: nothing "
                "changed, so nothing new was stored",
                head=head,
            )
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
