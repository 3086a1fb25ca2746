"""Writes for annotation: one function per mutation, called by pages, API and commands."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import (
    BigIntegerField,
    Case,
    Exists,
    F,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotator.errors import AnnotationError
from annotator.labelling.fields_page import FORM_EXTRAS
from annotator.labelling.models import (
    Assignment,
    Draft,
    Label,
    LabelKind,
    LabelSight,
    OutcomeWaiting,
    QueueOrder,
    QueuePosition,
    QueueSeed,
)
from annotator.labelling.order import (
    answer_pair_left_is_evaluated,
    order_key_sql,
    order_parameters,
)
from annotator.labelling.selectors import (
    QueueGlance,
    UnitContent,
    label_kind_of,
    pair_sides_of,
    unit_content,
)
from annotator.memberships.models import Membership, Role
from annotator.memberships.services import pseudonym_of_user_id
from annotator.quality.models import GoldItem, KeptDraft
from annotator.quality.scoring import gold_due
from annotator.quality.selectors import (
    annotator_paused,
    gold_unit_next,
    plan_of,
    qualification_of,
    served_of,
)
from audit.archive.models import CodebookUnit, Study, Unit, UnitState
from audit.archive.records import UNIT_VALUES, record_build, unit_contents_of
from audit.archive.selectors import codebook_registry_of
from audit.compiled import (
    CompiledInsert,
    CompiledRead,
    fetched_together,
    prepared_cursor,
    rows_together,
)
from audit.contract import check_record
from audit.contract.canonical import canonical_json
from audit.contract.codebook import Codebook, reasons_missing
from audit.contract.engine import Engine, annotation_from_view, engine_of
from audit.contract.errors import ContractError
from audit.contract.fields import check_annotation
from audit.contract.record import record_texts
from audit.contract.sides import client_problems, sides_of, to_stored
from audit.contract.texts import text_problem
from audit.queueing import OUTCOMES_PROCESS, queue_job_once

#: Codebooks of this format declare their fields (docs/formats.md, "Codebook format 2").
FIELDS_FORMAT = 2

# Re-exported: the record of a label is built by audit.archive.records, and every refusal
# here is an AnnotationError (annotator.errors).
__all__ = ["AnnotationError", "record_build"]

# --- errors -------------------------------------------------------------------------


class LabelRefused(AnnotationError):
    """The record contract refused the submitted annotation (reason code of the checker).

    ``problems``: for a codebook of format 2, every problem the contract finds in the
    annotation (``{"code", "path", "message"}``), so that each is shown next to its field;
    empty otherwise."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        problems: list[dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.problems = list(problems or [])


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


class AnnotatorPaused(AnnotationError):
    code = "annotator_paused"


class QualificationRefused(AnnotationError):
    """The study's qualification set stands between this annotator and real units
    (failed, or not ready): the message says which and what to do."""

    code = "qualification_failed"


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
    parsed = codebook_registry_of(codebook=study.codebook)[
        (study.codebook.name, study.codebook.version)
    ]
    problem = reasons_missing(annotation, parsed)
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
        .values_list("pk", "unit_id", "gold")
    )
    for pk, unit_id, gold in stale:
        Draft.objects.filter(assignment_id=pk).delete()
        Assignment.objects.filter(pk=pk).delete()
        if not gold:  # a gold assignment never took a slot
            slot_release(unit_id=unit_id, annotator_id=user.pk)


def slot_take(*, unit_id: int, annotator_id: int) -> None:
    """The unit's side of a counted slot taken (its assignment written in the same
    transaction) through the ORM: one more taken, and the holder hint set to
    ``annotator_id`` where it names nobody (audit.archive.models.Unit.holder). On
    PostgreSQL the labelling loop writes the same as a CTE of the slot's one statement."""
    Unit.objects.filter(pk=unit_id).update(
        assigned_count=F("assigned_count") + 1,
        holder=Coalesce(F("holder"), Value(annotator_id)),
    )


def slot_release(*, unit_id: int, annotator_id: int) -> None:
    """The unit's side of a counted slot given up (its assignment already deleted, in the
    same transaction): one fewer taken, and a holder hint naming ``annotator_id`` moved to
    another holder of a counted slot, or null (audit.archive.models.Unit.holder). Another
    annotator taking a slot at the same moment waits on the unit's row; a hint that
    misses them is null, which the walk reads (only a hint naming a non-holder is
    wrong)."""
    another = (
        Assignment.objects.filter(unit_id=OuterRef("pk"), gold=False)
        .exclude(annotator_id=annotator_id)
        .order_by("annotator_id")
        .values("annotator_id")[:1]
    )
    Unit.objects.filter(pk=unit_id).update(
        assigned_count=F("assigned_count") - 1,
        holder=Case(
            When(holder=annotator_id, then=Subquery(another)),
            default=F("holder"),
            output_field=BigIntegerField(),
        ),
    )


def labels_seen_by(*, user_id: int, unit_id: int) -> bool:
    return LabelSight.objects.filter(user_id=user_id, unit_id=unit_id).exists()


# --- the queue -------------------------------------------------------------------------


def _queue_order(*, study: Study, annotator: AbstractBaseUser) -> QueueOrder:
    """The annotator's recorded order in the study, drawn (with its keys) the first time."""
    found = _ORDER.instances(study_id=study.pk, annotator_id=annotator.pk)
    if found:
        return found[0]
    try:
        with transaction.atomic():
            seed, _ = QueueSeed.objects.get_or_create(study=study)
            order = QueueOrder.objects.create(study=study, annotator=annotator, seed=seed.seed)
            queue_positions_add(order=order)
    except IntegrityError:  # drawn at the same moment by another request of theirs
        order = QueueOrder.objects.get(study=study, annotator=annotator)
    return order


def queue_orders_draw(*, study: Study) -> int:
    """Draw, ahead of their first request, the orders of the study's annotators: each
    annotator without one gets theirs (with every unit's key), and an order that holds
    no position yet (drawn before the study had units) gets the units it lacks. Neither
    changes an order: a key is a function of the seed and the unit, and an order with no
    position walks from its start, so the units handed are the same as if the first
    request had drawn it; it only moves the one statement whose cost grows with the
    study (a second or more at 10⁵ units) off that request. Orders already walked are
    left as they are: the queue adds units imported since when it runs out of units.
    Run by a job (``claimgate.queue_orders_draw``) after annotators are added and after
    an import; each order in its own transaction. Returns how many orders were drawn or
    filled."""
    annotators = {
        membership.user_id: membership.user
        for membership in Membership.objects.filter(study=study, role=Role.ANNOTATOR)
        .select_related("user")
        .order_by("user_id")
    }
    # One read for every order, each marked empty or not (no query per annotator).
    held = {
        order.annotator_id: order
        for order in QueueOrder.objects.filter(study=study).annotate(
            empty=~Exists(QueuePosition.objects.filter(order=OuterRef("pk")))
        )
    }
    drawn = 0
    for user_id, user in annotators.items():
        order = held.get(user_id)
        if order is None:
            _queue_order(study=study, annotator=user)
            drawn += 1
        elif order.empty:
            drawn += bool(queue_positions_add(order=order))
    return drawn


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


# The queue's two walks are the hottest reads of the labelling loop (every new unit runs
# one or both), so they are written in SQL rather than compiled by the ORM on every call
# (about a millisecond of CPU each). Only table names from the models' metadata and the
# lock clause are interpolated; every value is a query parameter. Each keeps the ORM
# version's guarantees: the blinding anti-join on LabelSight's unique (user, unit) index,
# and on PostgreSQL the candidate unit's row locked FOR NO KEY UPDATE SKIP LOCKED.
# They are not prepared (audit.compiled.prepared_cursor): their best plan depends on the
# values (the study's counts, the cursor's key), and PostgreSQL's generic plan of a
# prepared walk scans the whole unit table (1.2 s at 10⁵ units, docs/benchmarks.md,
# "fifth round"); each is planned for its values, as before.


def _tables() -> dict[str, str]:
    quote = connection.ops.quote_name
    return {
        "unit": quote(Unit._meta.db_table),
        "position": quote(QueuePosition._meta.db_table),
        "sight": quote(LabelSight._meta.db_table),
        "assignment": quote(Assignment._meta.db_table),
        "kept": quote(KeptDraft._meta.db_table),
    }


def _lock_unit_row() -> str:
    """The lock of the walks' candidate (the unit row, alias ``u``): none on SQLite,
    which serializes writers anyway."""
    if connection.vendor == "postgresql":
        return " FOR NO KEY UPDATE OF u SKIP LOCKED"
    return ""


#: A move of one of an order's two cursors, made with the slot's write: (the order, the
#: field, ``"cursor"`` for fresh units or ``"started_cursor"`` for the backlog walk, the key).
Cursor = tuple[QueueOrder, str, int]

#: How many units held by others with a free slot make a backlog (see :func:`_started_unit`):
#: counted up to this many on the ``unit_held`` index. Below it every such unit is read;
#: from it on, the caller's own order is walked instead. At 10⁵ units the two walks cost
#: the same near 450 on a quiet machine (docs/benchmarks.md, "The started-unit walk under
#: a backlog").
STARTED_BACKLOG = 512
#: The positions of the caller's order that a backlog walk reads on each side of its
#: cursor, one at a time, before it falls back to reading every started unit.
STARTED_WINDOW = 4_096


class Started(NamedTuple):
    """A started unit for the caller: its id, whether a draft of theirs on it was kept
    when they were paused, and its key in their order when it was found by the backlog
    walk (their ``started_cursor`` moves to it), else ``None``."""

    unit_id: int
    kept: bool
    key: int | None


def _started_unit(
    *, study: Study, annotator: AbstractBaseUser, order: QueueOrder
) -> Started | None:
    """A unit that others hold and that still has a free slot, in this annotator's order,
    found in one of two ways depending on how many such units there are.

    - Few (under ``STARTED_BACKLOG``, counted on the ``unit_held`` index over the counts
      1 … k-1 whose holder hint is not this annotator: the units they hold alone are not
      visited, a hint naming them means they hold the unit): each is read, probing its key
      in the annotator's order on the unique (order, unit) index, and the first in their
      order is taken. One statement, which also counts.
    - A backlog (someone labelled ahead alone, and those units now wait for a second
      label; PostgreSQL): reading them all on every request would cost in proportion to
      the backlog (18 ms at 1,430 units). The first statement then says so instead, and a
      second walks the annotator's own order from their ``started_cursor`` (the key of
      the last started unit the backlog walk gave them), one position at a time on the
      (order, key) index, up to ``STARTED_WINDOW`` positions, then from its start back to
      the cursor: with S such units among N, about N / S positions a request. The order
      is the same permutation, read round from where they left it; a unit that became
      started behind the cursor comes at the next round. Where the window finds none
      (the units counted are ones this annotator may not take: seen, or held with
      another), every started unit is read after all.

    The embedded default (SQLite, a demo's few units) always reads every started unit.
    The candidate unit is locked FOR NO KEY UPDATE SKIP LOCKED on PostgreSQL; the
    blinding and own-slot anti-joins are the same in both ways."""
    if study.overlap < 2:
        return None
    walks = _StartedWalks(study)
    params = {
        "me": annotator.pk,
        "study": study.pk,
        "order": order.pk,
        "cursor": order.started_cursor,
        "backlog": STARTED_BACKLOG,
        "window": STARTED_WINDOW,
    }
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute(walks.counted() if postgres else walks.everywhere(), params)
        row = cursor.fetchone()
        if row is None:
            return None
        if row[0] is not None:
            return Started(row[0], bool(row[1]), None)
    # A backlog: the walk of the caller's order, else every started unit after all. The
    # walk is prepared (its planning cost about 3 ms): unlike the other walks' its plan
    # is the same whatever the values, an index probe a step.
    with prepared_cursor() as cursor:
        cursor.execute(walks.backlog(), params)
        row = cursor.fetchone()
    if row is None:
        with connection.cursor() as cursor:
            cursor.execute(walks.everywhere(), params)
            row = cursor.fetchone()
    return None if row is None else Started(row[0], bool(row[1]), row[2])


class _StartedWalks:
    """The statements of :func:`_started_unit`. Only table names from the models'
    metadata, the lock clause and the study's counts (integers) are interpolated; every
    value is a query parameter (named)."""

    def __init__(self, study: Study) -> None:
        t = self.t = _tables()
        # Each count its own equality (an IN list): then the hint's two ranges (a null
        # hint read as 0, below every user's id) bound the scans of ``unit_held``, as its
        # expression, rather than being tested on every entry of a range of counts. No
        # "count >= 1" beside the list: implied by it (so the partial index applies), it
        # would only halve the planner's estimate of the ``unit_queue`` scan instead.
        self.counts = ", ".join(str(int(count)) for count in range(1, study.overlap))
        self.others = (
            f"u.assigned_count IN ({self.counts}) "
            "AND (COALESCE(u.holder, 0) < %(me)s OR COALESCE(u.holder, 0) > %(me)s)"
        )
        self.free = (
            f"NOT EXISTS(SELECT 1 FROM {t['sight']} s "  # noqa: S608
            "WHERE s.user_id = %(me)s AND s.unit_id = u.id) "
            f"AND NOT EXISTS(SELECT 1 FROM {t['assignment']} a "
            "WHERE a.annotator_id = %(me)s AND a.unit_id = u.id)"
        )
        self.kept = (
            f"EXISTS (SELECT 1 FROM {t['kept']} k "  # noqa: S608
            "WHERE k.annotator_id = %(me)s AND k.unit_id = u.id)"
        )
        self.lock = _lock_unit_row()

    def everywhere(self) -> str:
        """Every started unit read, the first in the caller's order taken."""
        t = self.t
        key = (
            f'(SELECT p."key" FROM {t["position"]} p '  # noqa: S608
            "WHERE p.order_id = %(order)s AND p.unit_id = u.id)"
        )
        return (
            f"SELECT u.id, {self.kept}, {key} FROM {t['unit']} u "  # noqa: S608
            f"WHERE u.study_id = %(study)s AND {self.others} AND {self.free} "
            f"ORDER BY {key} ASC NULLS LAST, u.id ASC LIMIT 1{self.lock}"
        )

    def counted(self) -> str:
        """:meth:`everywhere` where the started units are few; where they are a backlog,
        one row of nulls instead (a one-time filter on the count decides which runs)."""

        def held(side: str) -> str:
            # Up to the threshold of the units held by others whose hint is on one side
            # of the caller's id; in the index's order, so that its scan stops there (a
            # bitmap scan would read every entry first). Each range its own scan: the OR
            # of the two would be a filter on every entry of the counts instead.
            return (
                f"SELECT * FROM (SELECT 1 FROM {self.t['unit']} u "  # noqa: S608
                f"WHERE u.study_id = %(study)s AND u.assigned_count IN ({self.counts}) "
                f"AND COALESCE(u.holder, 0) {side} %(me)s "
                "ORDER BY u.assigned_count, COALESCE(u.holder, 0) LIMIT %(backlog)s) h"
            )

        return (
            "WITH few AS (SELECT COUNT(*) < %(backlog)s AS few FROM (SELECT 1 FROM "  # noqa: S608
            f"({held('<')} UNION ALL {held('>')}) h LIMIT %(backlog)s) c) "
            f"SELECT * FROM ({self.everywhere()}) everywhere WHERE (SELECT few FROM few) "
            "UNION ALL SELECT NULL, NULL, NULL WHERE NOT (SELECT few FROM few) LIMIT 1"
        )

    def backlog(self) -> str:
        """The walk of the caller's order round from their started cursor: ahead of it,
        then from the start of the order up to it (an Append under the LIMIT runs the
        second only when the first finds nothing).

        Each is a recursive query that reads one position at a time on the (order, key)
        index and tests its unit by primary key, stopping at the first the caller may
        take or after ``STARTED_WINDOW`` positions: one index probe a step, whatever the
        planner's statistics say. (A join of the positions to the units, planned on
        statistics older than a new annotator's order, sorted every position after the
        cursor: 60-110 ms at 10⁵ units.)"""
        t = self.t

        def walk(name: str, first: str, bound: str) -> str:
            # One position at a time from ``first``: each step the next key (within
            # ``bound``), its unit tested; on until a hit or the window's end.
            position = (
                f'SELECT w."key" AS k, w.unit_id FROM {t["position"]} w '  # noqa: S608
                "WHERE w.order_id = %(order)s"
            )
            step = 'ORDER BY w."key", w.unit_id LIMIT 1'
            return (
                f"{name}(k, unit_id, hit, n) AS (SELECT b.k, b.unit_id, {taken('b')}, 1 "  # noqa: S608
                f"FROM ({position} {first} {step}) b UNION ALL "
                f"SELECT x.k, x.unit_id, {taken('x')}, c.n + 1 FROM {name} c CROSS JOIN "
                f'LATERAL ({position} AND (w."key", w.unit_id) > (c.k, c.unit_id){bound} '
                f"{step}) x WHERE NOT c.hit AND c.n < %(window)s)"
            )

        def taken(at: str) -> str:
            # Whether the caller may take this position's unit: held by others, free.
            return (
                f"EXISTS (SELECT 1 FROM {t['unit']} u WHERE u.id = {at}.unit_id "  # noqa: S608
                f"AND {self.others} AND {self.free})"
            )

        def arm(name: str) -> str:
            # The unit the walk stopped at, locked, its conditions checked again on the
            # row as locked.
            return (
                f"SELECT * FROM (SELECT u.id, {self.kept}, f.k FROM (SELECT c.k, c.unit_id "  # noqa: S608
                f"FROM {name} c WHERE c.hit LIMIT 1) f INNER JOIN {t['unit']} u "
                f"ON u.id = f.unit_id WHERE {self.others} AND {self.free} "
                f"LIMIT 1{self.lock}) {name}_unit"
            )

        ahead = walk("ahead", 'AND w."key" > %(cursor)s', "")
        behind = walk("behind", 'AND w."key" <= %(cursor)s', ' AND w."key" <= %(cursor)s')
        return f"WITH RECURSIVE {ahead}, {behind} {arm('ahead')} UNION ALL {arm('behind')} LIMIT 1"


def _fresh_position(
    *,
    study: Study,
    annotator: AbstractBaseUser,
    order: QueueOrder,
    after: int | None,
    has_gold: bool = False,
) -> tuple[int, int, bool] | None:
    """The first position of ``order`` (after the key ``after``, if given) whose unit
    nobody holds yet and whose labels this annotator was never shown, as (key, unit id,
    whether a draft of theirs on it was kept when they were paused): a walk of the
    (order, key) index. Its unit row is locked FOR NO KEY UPDATE SKIP LOCKED
    (PostgreSQL)."""
    # A unit nobody holds is not this annotator's either: only the blinding anti-join;
    # but a gold unit handed out for scoring takes no slot, so where the study has gold
    # the units this annotator holds are left out too.
    t = _tables()
    seen = f"SELECT 1 FROM {t['sight']} s WHERE s.user_id = %s AND s.unit_id = p.unit_id"  # noqa: S608
    mine = f"SELECT 1 FROM {t['assignment']} a WHERE a.annotator_id = %s AND a.unit_id = p.unit_id"  # noqa: S608
    where = ["p.order_id = %s", "u.assigned_count = 0", f"NOT EXISTS({seen})"]
    kept = f"SELECT 1 FROM {t['kept']} k WHERE k.annotator_id = %s AND k.unit_id = p.unit_id"  # noqa: S608
    params: list[Any] = [annotator.pk, order.pk, annotator.pk]
    if has_gold:
        where.append(f"NOT EXISTS({mine})")
        params.append(annotator.pk)
    if after is not None:
        where.append('p."key" > %s')
        params.append(after)
    sql = (
        f'SELECT p."key", p.unit_id, EXISTS ({kept}) FROM {t["position"]} p '  # noqa: S608
        f"INNER JOIN {t['unit']} u ON u.id = p.unit_id "
        f"WHERE {' AND '.join(where)} "
        f'ORDER BY p."key" ASC, p.unit_id ASC LIMIT 1{_lock_unit_row()}'
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return (row[0], row[1], bool(row[2])) if row else None


# The labelling loop's hot reads, compiled by the ORM once per process (audit.compiled):
# compiling them cost more CPU than running them (docs/benchmarks.md, "fourth round").
_UNIT_ROW = CompiledRead(
    lambda unit_id: Unit.objects.filter(pk=unit_id).values(*UNIT_VALUES), unit_id=int
)
_UNFINISHED = CompiledRead(
    lambda study_id, annotator_id: (
        Assignment.objects.filter(
            study_id=study_id, annotator_id=annotator_id, submitted_at__isnull=True
        )
        .exclude(Exists(LabelSight.objects.filter(user_id=annotator_id, unit=OuterRef("unit_id"))))
        .order_by("id")[:1]
    ),
    study_id=int,
    annotator_id=int,
)
_ORDER = CompiledRead(
    lambda study_id, annotator_id: QueueOrder.objects.filter(
        study_id=study_id, annotator_id=annotator_id
    ).order_by("pk")[:1],
    study_id=int,
    annotator_id=int,
)
_HAS_GOLD = CompiledRead(
    lambda study_id: GoldItem.objects.filter(study_id=study_id).values_list("pk")[:1],
    study_id=int,
)
# Serializes submissions on the assignment (PostgreSQL row lock), and reads in the same
# statement whether its annotator has been shown the unit's labels.
_LOCK_AND_SEEN = CompiledRead(
    lambda assignment_id, annotator_id, unit_id: (
        Assignment.objects.select_for_update(of=("self",))
        .filter(pk=assignment_id)
        .annotate(seen=Exists(LabelSight.objects.filter(user_id=annotator_id, unit_id=unit_id)))
        .order_by("pk")
        .values_list("seen")[:1]
    ),
    assignment_id=int,
    annotator_id=int,
    unit_id=int,
)
_REPLAY_AND_HEAD = CompiledRead(
    lambda annotator_id, submission_id, unit_id, kind: Label.objects.filter(
        annotator_id=annotator_id
    ).filter(Q(client_submission_id=submission_id) | Q(unit_id=unit_id, kind=kind)),
    annotator_id=int,
    submission_id=uuid.UUID,
    unit_id=int,
    kind=str,
)


def handed_unit_content(*, study: Study, unit_id: int) -> UnitContent:
    """The content of a unit of ``study`` (``study.codebook`` loaded), exactly what
    ``unit_content`` gives, read for the labelling loop's two hot answers: only the
    columns a record needs (``UNIT_VALUES``), and neither the study, its codebook nor a
    baseline joined, since the study is known and only an answer pair has a baseline.
    ``unit_content``'s twelve-table join cost the database about ten times more to plan
    than to run, twice per next + submit (docs/benchmarks.md, "third round")."""
    if study.codebook.unit == CodebookUnit.ANSWER_PAIR:
        return unit_content(unit=Unit(pk=unit_id))
    return _unit_content_of_row(study, unit_id, _UNIT_ROW.dicts(unit_id=unit_id))


def _unit_content_of_row(study: Study, unit_id: int, rows: list[dict[str, Any]]) -> UnitContent:
    if not rows:
        raise Unit.DoesNotExist(f"no unit {unit_id}")
    return unit_contents_of(study=study, units=rows)[unit_id]


@dataclass(frozen=True)
class Handed:
    """What :func:`assignment_handed` gives: the assignment (``None`` when nothing is
    left) and whether it was handed out just now (``False``: an unfinished one again)."""

    assignment: Assignment | None
    new: bool
    #: The unit's content when it was read with the slot's write (one round trip on
    #: PostgreSQL), else ``None``: the caller reads it.
    content: UnitContent | None = None


def assignment_next(*, study: Study, annotator: AbstractBaseUser) -> Assignment | None:
    """The annotator's next unit (:func:`assignment_handed` without its ``new``)."""
    return assignment_handed(study=study, annotator=annotator).assignment


def assignment_handed(
    *,
    study: Study,
    annotator: AbstractBaseUser,
    paused: bool | None = None,
    glance: QueueGlance | None = None,
    with_content: bool = False,
) -> Handed:
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

    ``paused``: whether a researcher paused this annotator, when the caller has just read
    it with their membership (the API's access check); ``None`` reads it here. ``glance``:
    their unfinished assignment's id, whether the study has gold and their order, read
    with it (:class:`QueueGlance`); ``None`` reads them here. ``with_content``: a unit
    handed out now comes with its content (:attr:`Handed.content`), read in the slot
    write's round trip (PostgreSQL, ``study.codebook`` loaded, not an answer pair).
    """
    if paused is None:
        paused = annotator_paused(study=study, annotator=annotator)
    if paused:
        raise AnnotatorPaused(
            f"Your annotation in study {study.slug} is paused by its researcher: no new "
            "item is handed out until they resume you. Your drafts are kept."
        )
    unfinished = []
    if glance is None or glance.unfinished_id is not None:
        # Read (again) as it stands now: the glance only says whether there is one.
        unfinished = _UNFINISHED.instances(study_id=study.pk, annotator_id=annotator.pk)
    if unfinished:
        return Handed(unfinished[0], new=False)
    gold, has_gold = _gold_turn(
        study=study, annotator=annotator, has_gold=None if glance is None else glance.has_gold
    )
    if gold is not None:
        return Handed(gold, new=True)
    order = glance.order if glance is not None and glance.order is not None else None
    if order is None:
        order = _queue_order(study=study, annotator=annotator)
    with transaction.atomic():
        started = _started_unit(study=study, annotator=annotator, order=order)
        if started is not None:
            moved = None if started.key is None else (order, "started_cursor", started.key)
            taken = _assignment_take(
                study,
                annotator,
                started.unit_id,
                kept=started.kept,
                cursor=moved,
                content=with_content,
            )
            return _handed_new(study, taken)
        walk = {"study": study, "annotator": annotator, "order": order, "has_gold": has_gold}
        position = _fresh_position(**walk, after=order.cursor)
        if position is None and order.cursor >= 0:
            position = _fresh_position(**walk, after=None)
        if position is None and queue_positions_add(order=order):
            position = _fresh_position(**walk, after=None)
        if position is None:
            return Handed(None, new=False)
        key, unit_id, kept = position
        assignment = _assignment_take(
            study,
            annotator,
            unit_id,
            kept=kept,
            cursor=(order, "cursor", key),
            content=with_content,
        )
        return _handed_new(study, assignment)


def _handed_new(study: Study, assignment: Assignment) -> Handed:
    """A slot taken just now, with its unit's content when the slot's write read it."""
    rows = assignment.__dict__.pop("_unit_rows", None)
    if rows is None:
        return Handed(assignment, new=True)
    content = _unit_content_of_row(study, assignment.unit_id, _UNIT_ROW.dicts_of(rows))
    return Handed(assignment, new=True, content=content)


def _assignment_take(
    study: Study,
    annotator: AbstractBaseUser,
    unit_id: int,
    *,
    kept: bool,
    cursor: Cursor | None = None,
    content: bool = False,
) -> Assignment:
    """Take a slot of the unit the walk found, and (``cursor``) move one of the order's
    cursors to its key; ``kept``: the walk saw a kept draft of this annotator on it
    (restored), so none is looked for when there is none; ``content``: read the unit's
    content with the slot's write (:func:`_handed_new`)."""
    assignment = _assignment_create(
        study=study,
        unit_id=unit_id,
        annotator=annotator,
        counted=True,
        cursor=cursor,
        content=content,
    )
    if kept:
        _draft_restore(assignment)
    return assignment


def _gold_turn(
    *, study: Study, annotator: AbstractBaseUser, has_gold: bool | None = None
) -> tuple[Assignment | None, bool]:
    """A gold assignment when the study's quality plan asks for one now (a qualification
    unit while the qualification set is unfinished, else a gold unit at the study's gold
    rate), with whether the study has gold units at all (then the regular walk must skip
    the units this annotator holds as gold). Refuses real units to an annotator who
    failed the qualification set."""
    if has_gold is None:  # not read with the caller's seat: study_has_gold, compiled once
        has_gold = bool(_HAS_GOLD.tuples(study_id=study.pk))
    if not has_gold:
        return None, False
    plan = plan_of(study=study)
    if not plan.gold_rate and not plan.qualification_size:
        # Gold handed out under an earlier plan still takes no slot: the walk must skip it.
        return None, True
    served = served_of(study=study, annotator=annotator)
    qualification = qualification_of(study=study, annotator=annotator, plan=plan, served=served)
    unit = None
    if qualification.pending:
        unit = gold_unit_next(study=study, annotator=annotator, qualification=True)
        if unit is None or qualification.assigned >= qualification.required:
            raise QualificationRefused(
                f"Study {study.slug} asks every annotator to pass a qualification set of "
                f"{qualification.required} items before real units, and it is not ready "
                "for you yet. Please ask the study's researcher.",
                code="qualification_unavailable",
            )
    elif qualification.failed:
        raise QualificationRefused(
            f"You did not pass the qualification set of study {study.slug}: "
            f"{qualification.right} of {qualification.required} items matched the key, "
            f"and {qualification.threshold:.0%} was needed. Real units are not handed to "
            "you; please ask the study's researcher."
        )
    elif gold_due(
        served=served.total - served.qualification,
        gold_served=served.gold - served.qualification,
        rate=plan.gold_rate,
    ):
        unit = gold_unit_next(study=study, annotator=annotator, qualification=False)
    if unit is None:
        return None, True
    try:
        with transaction.atomic():
            assignment = _assignment_create(
                study=study, unit_id=unit.pk, annotator=annotator, gold=True
            )
            _draft_restore(assignment)
    except IntegrityError:  # the same person asked twice at once: one gold slot
        assignment = Assignment.objects.get(unit=unit, annotator=annotator)
    return assignment, True


def _draft_restore(assignment: Assignment) -> None:
    """The draft kept when this annotator was paused while holding this unit."""
    kept = list(
        KeptDraft.objects.filter(unit_id=assignment.unit_id, annotator_id=assignment.annotator_id)
    )
    for draft in kept:
        Draft.objects.create(assignment=assignment, payload=draft.payload, version=draft.version)
    if kept:
        KeptDraft.objects.filter(pk__in=[draft.pk for draft in kept]).delete()


def pair_left_is_evaluated_draw(*, study: Study, annotator_id: int, unit_id: int) -> bool | None:
    """For a unit of an answer_pair study: whether this person is shown the evaluated
    answer on the left, drawn from the study's queue seed (drawn now if nobody has asked
    for a unit yet) — the same draw for the same (study, person, unit), every time. ``None``
    for other unit kinds."""
    if study.codebook.unit != CodebookUnit.ANSWER_PAIR:
        return None
    seed, _ = QueueSeed.objects.get_or_create(study=study)
    return answer_pair_left_is_evaluated(seed=seed.seed, annotator_id=annotator_id, unit_id=unit_id)


def pair_sides_draw(*, study: Study, user_id: int, unit_id: int) -> dict[str, str]:
    """The side mapping (audit.contract.sides) of someone who reads an answer pair without
    an assignment (an adjudicator): their own drawn order, as an annotator's would be."""
    left = pair_left_is_evaluated_draw(study=study, annotator_id=user_id, unit_id=unit_id)
    return sides_of(left_is_evaluated=bool(left))


def _assignment_create(
    *,
    study: Study,
    unit_id: int,
    annotator: AbstractBaseUser,
    gold: bool = False,
    counted: bool = False,
    cursor: Cursor | None = None,
    content: bool = False,
) -> Assignment:
    """The slot, numbered next in this annotator's own queue of the study (and, on an
    answer pair, the order of its two answers for them); ``counted``: the unit's
    ``assigned_count`` goes up by one (a slot taken; a gold one takes none); ``cursor``:
    one of the order's cursors moves to the unit's key; a counted slot names its annotator
    as the unit's holder hint where it has none. Two of their tabs asking at the same
    moment would take the same number: the unique constraint refuses the later one, which
    then counts again (after the first has committed)."""
    left = pair_left_is_evaluated_draw(study=study, annotator_id=annotator.pk, unit_id=unit_id)
    for _attempt in range(3):
        assignment = Assignment(
            study=study,
            unit_id=unit_id,
            annotator=annotator,
            gold=gold,
            pair_left_is_evaluated=left,
        )
        if connection.vendor == "postgresql":
            if _assignment_insert(assignment, counted=counted, cursor=cursor, content=content):
                return assignment
            continue  # the number was taken: count again
        # The number is counted by the INSERT itself (the last one, read on the unique
        # (study, annotator, number) index, plus one): no separate read.
        last = (
            Assignment.objects.filter(study=study, annotator=annotator)
            .order_by("-number")
            .values("number")[:1]
        )
        assignment.number = Coalesce(Subquery(last), Value(0)) + Value(1)
        try:
            with transaction.atomic():
                _assignment_save(assignment, counted=counted, cursor=cursor)
        except IntegrityError:
            continue
        # The expression is not the number: left deferred, read if someone asks for it.
        del assignment.__dict__["number"]
        return assignment
    raise IntegrityError(
        f"no free number for a slot of annotator {annotator.pk} in study {study.pk}"
    )


# The two writes of the loop's statements, compiled by the ORM once per process
# (audit.compiled): each call computes only its row's values.
_ASSIGNMENT_INSERT = CompiledInsert(Assignment)
_LABEL_INSERT = CompiledInsert(Label)


def _assignment_save(assignment: Assignment, *, counted: bool, cursor: Cursor | None) -> None:
    """The slot's three writes through the ORM (SQLite)."""
    assignment.save(force_insert=True)
    if counted:
        slot_take(unit_id=assignment.unit_id, annotator_id=assignment.annotator_id)
    if cursor is not None:
        QueueOrder.objects.filter(pk=cursor[0].pk).update(**{cursor[1]: cursor[2]})


def _assignment_insert(
    assignment: Assignment,
    *,
    counted: bool,
    cursor: Cursor | None,
    content: bool = False,
) -> bool:
    """The slot's writes on PostgreSQL, in one statement: the ORM's INSERT (its number
    counted by the statement: the last one, read on the unique (study, annotator, number)
    index, plus one), the unit's count and the order's cursor as data-modifying CTEs.
    ``False`` when a unique constraint refused the slot: then nothing was written (each
    UPDATE waits for the slot), and the transaction goes on without a savepoint."""
    quote = connection.ops.quote_name
    table = quote(Assignment._meta.db_table)
    number = (
        f"(SELECT COALESCE(MAX(number), 0) + 1 FROM {table} "  # noqa: S608 (table name only)
        "WHERE study_id = %s AND annotator_id = %s)",
        [assignment.study_id, assignment.annotator_id],
    )
    insert_sql, params = _ASSIGNMENT_INSERT.sql_and_params(assignment, stand_in={"number": number})
    head, returning, tail = insert_sql.rpartition(" RETURNING ")
    insert_sql = f"{head} ON CONFLICT DO NOTHING{returning}{tail}"
    ctes = [f"slot AS ({insert_sql})"]
    if counted:
        ctes.append(
            f"counted AS (UPDATE {quote(Unit._meta.db_table)} "  # noqa: S608
            "SET assigned_count = assigned_count + 1, holder = COALESCE(holder, %s) "
            "WHERE id = %s AND EXISTS (SELECT 1 FROM slot))"
        )
        params += [assignment.annotator_id, assignment.unit_id]
    if cursor is not None:
        ctes.append(
            f"walked AS (UPDATE {quote(QueueOrder._meta.db_table)} "  # noqa: S608
            f"SET {quote(cursor[1])} = %s WHERE id = %s AND EXISTS (SELECT 1 FROM slot))"
        )
        params += [cursor[2], cursor[0].pk]
    # Only table names from the models and the ORM's own INSERT are interpolated.
    sql = f"WITH {', '.join(ctes)} SELECT id FROM slot"  # noqa: S608
    # ``content``: the unit's content (what the API's answer shows) is read after the
    # write in the same round trip, where the caller holds the study's codebook, except
    # an answer pair's, which reads its baseline too (unit_content). A slot refused here
    # leaves that read unused.
    study = assignment.study
    unit_read = (
        content
        and Study._meta.get_field("codebook").is_cached(study)
        and study.codebook.unit != CodebookUnit.ANSWER_PAIR
    )
    if unit_read:
        [written, unit_rows] = rows_together(
            [(sql, params), _UNIT_ROW.bound(unit_id=assignment.unit_id)]
        )
        row = written[0] if written else None
    else:
        with prepared_cursor() as db:
            db.execute(sql, params)
            row = db.fetchone()
    if row is None:
        return False
    if unit_read:
        assignment.__dict__["_unit_rows"] = unit_rows
    assignment.pk = row[0]
    assignment._state.adding = False
    assignment._state.db = connection.alias
    # The number was counted by the statement: left deferred, read if someone asks for it.
    assignment.__dict__.pop("number", None)
    return True


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


def annotation_from_form(*, engine: Engine, state: Any) -> Any:
    """What the generic form sends (its state: the engine's view of the codebook, with the
    rationale) as the codebook stores it, written by the engine
    (:func:`audit.contract.engine.annotation_from_view`): a format-1 codebook's own shape,
    a format-2 codebook's canonical view. A body without ``values`` is in the stored shape
    already (a tab opened before the generic form, a script) and goes on as it was sent;
    the record contract checks it like any. A view the engine cannot read is refused
    (:class:`LabelRefused`, naming the place)."""
    if not isinstance(state, dict) or "values" not in state:
        return state
    view = {key: state[key] for key in ("values", "reasons", "spans", "documents") if key in state}
    try:
        stored = dict(annotation_from_view(engine, view))
    except ContractError as exc:
        raise LabelRefused(exc.message, code=exc.code) from None
    for key in FORM_EXTRAS:
        if key in state:
            stored[key] = state[key]
    return stored


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
    (kind, pseudonym) and, for a value the client sent bare where the codebook stores an
    object (a format-1 evidence dimension's value, stored with its weight), the object the
    engine writes for it."""
    if not isinstance(data, dict):
        raise LabelRefused("the annotation must be a JSON object", code="invalid_field")
    annotation = dict(data)
    for key in ("kind", "annotator"):
        annotation.pop(key, None)
    annotation = {"kind": str(kind), "annotator": pseudonym, **annotation}
    annotation.setdefault("assisted", None)
    annotation.setdefault("rationale", None)
    return _with_written_objects(engine_of(study.codebook.definition), annotation)


def _with_written_objects(engine: Engine, annotation: dict[str, Any]) -> dict[str, Any]:
    bare: dict[str, Any] = {}
    for item in engine.dimensions:
        path = engine.paths[item.code]
        container = annotation.get(path[0]) if len(path) == 3 and path[2] == "value" else None
        if isinstance(container, dict) and item.code in container:
            held = container[item.code]
            if not isinstance(held, dict):
                bare[item.code] = held
    if not bare:
        return annotation
    written = annotation_from_view(engine, {"values": bare})
    for code in bare:
        head, key = engine.paths[code][0], engine.paths[code][1]
        annotation[head] = {**annotation[head], key: written[head][key]}
    return annotation


def annotation_problems(
    *, codebook: Codebook | None, record: dict[str, Any]
) -> list[dict[str, Any]]:
    """Every problem of a format-2 record's annotation as plain values, spans checked
    against the record's texts (none for format 1, whose checker stops at the first)."""
    if codebook is None or codebook.format_version != FIELDS_FORMAT:
        return []
    texts = record_texts(record, codebook.unit)
    return [
        {"code": problem.code, "path": problem.path, "message": problem.message}
        for problem in check_annotation(codebook, record["annotation"], texts)
    ]


def pair_texts(content: UnitContent, sides: dict[str, str]) -> dict[str, str]:
    """The texts an annotator of an answer pair may cite, by the names they see: the query
    and the answers on the left and on the right."""
    roles = {
        "answer": content.answer["text"],
        "baseline": (content.baseline or {})["answer"]["text"],
    }
    return {
        "query": content.query["text"],
        "left": roles[sides["left"]],
        "right": roles[sides["right"]],
    }


def pair_annotation_stored(
    *, study: Study, assignment: Assignment, content: UnitContent, annotation: Any
) -> dict[str, Any]:
    """An annotator's annotation of an answer pair (left/right) as it is stored (roles),
    with the order recorded on the assignment (audit.contract.sides). What only the client's
    view can judge is refused here, in the client's words (a side field's codes, a span's
    place in the left or right text), so that no refusal names a role."""
    sides = pair_sides_of(assignment)
    if sides is None:
        raise AnnotationError(
            "this assignment has no recorded order of its two answers; ask the study's researcher",
            code="pair_order_missing",
        )
    if not isinstance(annotation, dict):
        raise LabelRefused("the annotation must be a JSON object", code="invalid_field")
    parsed = codebook_registry_of(codebook=study.codebook)[
        (study.codebook.name, study.codebook.version)
    ]
    problems = client_problems(parsed, annotation, pair_texts(content, sides))
    if problems:
        first = problems[0]
        raise LabelRefused(
            str(first) if len(problems) == 1 else f"{len(problems)} problems: {first}",
            code=first.code,
            problems=[
                {"code": problem.code, "path": problem.path, "message": problem.message}
                for problem in problems
            ],
        )
    return to_stored(parsed, annotation, sides)


def _replayed(label: Label, assignment: Assignment) -> Submission:
    """The label a repeated submission id created — only on the assignment it was made on:
    answering with another unit's label would hand one unit's work to another."""
    if label.assignment_id != assignment.pk:
        raise SubmissionIdReused(
            "this client_submission_id was already used for a submission on another "
            "assignment; send a new id for every submission"
        )
    return Submission(label=label, replayed=True)


def _study_of(assignment: Assignment) -> Study:
    """The assignment's study with its codebook: as the access check loaded it, else read."""
    if Assignment.study.is_cached(assignment) and Study.codebook.is_cached(assignment.study):
        return assignment.study
    return Study.objects.select_related("codebook").get(pk=assignment.study_id)


def _replay_and_head_values(assignment: Assignment, submission_id: uuid.UUID) -> dict[str, Any]:
    """What :data:`_REPLAY_AND_HEAD` reads in one query: the label this submission id
    already made (on any assignment of this person), and the person's revisions on this
    assignment's unit (of the assignment's kind: independent, or gold for a unit handed
    out for scoring)."""
    return {
        "annotator_id": assignment.annotator_id,
        "submission_id": submission_id,
        "unit_id": assignment.unit_id,
        "kind": str(label_kind_of(assignment)),
    }


def _replay_and_head_of(
    assignment: Assignment, submission_id: uuid.UUID, rows: list[Label]
) -> tuple[Label | None, Label | None]:
    """The replayed label and the latest revision among :data:`_REPLAY_AND_HEAD`'s rows."""
    kind = label_kind_of(assignment)
    replay = head = None
    for label in rows:
        if label.client_submission_id == submission_id:
            replay = label
        if (
            label.unit_id == assignment.unit_id
            and label.kind == kind
            and (head is None or label.revision > head.revision)
        ):
            head = label
    return replay, head


def label_submit(
    *,
    assignment: Assignment,
    annotation: dict[str, Any],
    client_submission_id: uuid.UUID | str,
    parent_digest: str | None,
    pseudonym: str | None = None,
) -> Submission:
    """Submit an annotation on an assignment.

    Idempotent: the same ``client_submission_id`` returns the label it created. The
    submission names the revision it edits (``parent_digest``; ``None`` for the first);
    if that is not the annotator's latest revision, :class:`StaleRevision` is raised and
    nothing is written. The record is checked by the record contract (the same checker
    as ``python -m audit.check``) before it is stored; labels are never updated.

    ``pseudonym``: the annotator's, when the caller read it with their membership (the
    API's access check); ``None`` reads it here.
    """
    try:
        submission_id = uuid.UUID(str(client_submission_id))
    except ValueError as exc:
        raise AnnotationError(
            "client_submission_id must be a UUID", code="invalid_submission_id"
        ) from exc
    text_refusal(annotation, "annotation", LabelRefused)
    study = _study_of(assignment)
    try:
        return _label_store(
            study=study,
            assignment=assignment,
            annotation=annotation,
            submission_id=submission_id,
            parent_digest=parent_digest,
            pseudonym=pseudonym,
        )
    except _LabelInsertLost as lost:
        head = lost.head
    # The label's INSERT lost to a concurrent one (its unique constraints): everything of
    # this submission was rolled back, so the transaction is usable again without a
    # savepoint around the INSERT.
    replay = Label.objects.filter(
        annotator_id=assignment.annotator_id, client_submission_id=submission_id
    ).first()
    if replay is not None:
        return _replayed(replay, assignment)
    raise StaleRevision("another submission of this revision was accepted first", head=head)


class _LabelInsertLost(Exception):
    """Raised out of the submission's transaction (rolling it back) when the label's
    INSERT broke a unique constraint."""

    def __init__(self, head: Label | None) -> None:
        super().__init__("label insert lost")
        self.head = head


def _label_store(
    *,
    study: Study,
    assignment: Assignment,
    annotation: dict[str, Any],
    submission_id: uuid.UUID,
    parent_digest: str | None,
    pseudonym: str | None,
) -> Submission:
    """:func:`label_submit`'s transaction."""
    with transaction.atomic():
        # The lock (and whether the labels were seen), then the replay and head, then the
        # unit's content: three statements in one round trip (audit.compiled), the second
        # and third run once the lock is held, each with its own snapshot.
        pair = study.codebook.unit == CodebookUnit.ANSWER_PAIR
        reads: list[tuple[CompiledRead, dict[str, Any]]] = [
            (
                _LOCK_AND_SEEN,
                {
                    "assignment_id": assignment.pk,
                    "annotator_id": assignment.annotator_id,
                    "unit_id": assignment.unit_id,
                },
            ),
            (_REPLAY_AND_HEAD, _replay_and_head_values(assignment, submission_id)),
        ]
        if not pair:  # an answer pair's content reads its baseline too (unit_content)
            reads.append((_UNIT_ROW, {"unit_id": assignment.unit_id}))
        locked, labels, *units = fetched_together(*reads)
        locked = _LOCK_AND_SEEN.tuples_of(locked)
        seen = locked[0][0] if locked else None
        replay, head = _replay_and_head_of(
            assignment, submission_id, _REPLAY_AND_HEAD.instances_of(labels)
        )
        if replay is not None:
            return _replayed(replay, assignment)
        if seen is None or seen:  # a slot is only taken back once its labels were seen
            raise LabelsSeen(
                "you have been shown other people's labels of this unit (adjudication, "
                "record, outcomes or a release), so a label of yours on it would not be "
                "blind; it is left to annotators who have not seen them"
            )
        head_digest = head.record_digest if head else None
        if parent_digest != head_digest:
            raise StaleRevision(
                "this submission edits a revision that is no longer the latest: "
                f"latest is {head_digest or 'none (nothing submitted yet)'}, "
                f"the submission names {parent_digest or 'none'}",
                head=head,
            )
        if pair:
            content = handed_unit_content(study=study, unit_id=assignment.unit_id)
        else:
            content = _unit_content_of_row(study, assignment.unit_id, _UNIT_ROW.dicts_of(units[0]))
        if content.codebook_unit == CodebookUnit.ANSWER_PAIR:
            annotation = pair_annotation_stored(
                study=study, assignment=assignment, content=content, annotation=annotation
            )
        try:
            record = record_build(
                study=study,
                content=content,
                annotation=_annotation_from_input(
                    study=study,
                    data=annotation,
                    pseudonym=pseudonym
                    or pseudonym_of_user_id(study=study, user_id=assignment.annotator_id),
                    # A gold label's record says "independent" too: made blind like any.
                    kind=LabelKind.INDEPENDENT.value,
                ),
                parents=[head_digest] if head_digest else [],
            )
        except ContractError as exc:  # sealing refuses what cannot be hashed or stored
            raise LabelRefused(exc.message, code=exc.code) from None
        registry = codebook_registry_of(codebook=study.codebook)
        result = check_record(record, registry)
        if not result.ok:
            raise LabelRefused(
                result.message or "refused",
                code=result.reason,
                problems=annotation_problems(
                    codebook=registry.get((study.codebook.name, study.codebook.version)),
                    record=record,
                ),
            )
        reasons_refusal(study=study, annotation=record["annotation"])
        if head is not None and canonical_json(record["annotation"]) == canonical_json(
            head.annotation
        ):
            raise RevisionUnchanged(
                f"this revision is identical to your revision {head.revision}: nothing "
                "changed, so nothing new was stored",
                head=head,
            )
        assisted = record["annotation"].get("assisted")
        label = Label(
            study=study,
            unit_id=assignment.unit_id,
            annotator_id=assignment.annotator_id,
            assignment=assignment,
            kind=label_kind_of(assignment),
            revision=(head.revision + 1) if head else 1,
            annotation=record["annotation"],
            parents=record["parents"],
            record_digest=record["record_digest"],
            codebook_digest=study.codebook.digest,
            client_submission_id=submission_id,
            assisted_model=assisted.get("model") if isinstance(assisted, dict) else None,
        )
        try:
            # No savepoint: the first write of this transaction, so losing it to a
            # concurrent submission rolls back nothing else (label_submit reads the
            # winner after the rollback).
            _label_write(label, first=head is None, gold=assignment.gold)
        except IntegrityError:
            raise _LabelInsertLost(head) from None
        if not assignment.gold:
            # Its outcome is appended by a job that takes every waiting label of the study,
            # started OUTCOMES_DELAY_SECONDS later so that a batch gathers meanwhile.
            queue_job_once(
                OUTCOMES_PROCESS,
                study.pk,
                delay=float(getattr(settings, "OUTCOMES_DELAY_SECONDS", 0)),
            )
    return Submission(label=label, replayed=False)


def _label_write(label: Label, *, first: bool, gold: bool) -> None:
    """A submission's writes: the label; on its first revision the assignment's
    submission time and (not gold) the unit's count and state; the draft's removal;
    (not gold: scored against the key only, no unit state, no outcome) the row saying
    the label waits for its outcome. On PostgreSQL one statement (the label's INSERT
    and the rest as data-modifying CTEs, all or nothing like the transaction around
    it); elsewhere (SQLite) the same writes through the ORM. A broken unique
    constraint of the label raises IntegrityError before anything is written."""
    now = timezone.now()
    if connection.vendor != "postgresql":
        label.save(force_insert=True)
        if first:
            Assignment.objects.filter(pk=label.assignment_id).update(submitted_at=now)
        if first and not gold:
            Unit.objects.filter(pk=label.unit_id).update(
                submitted_count=F("submitted_count") + 1,
                state=Case(
                    When(state=UnitState.OPEN, then=Value(UnitState.PARTIALLY_LABELLED.value)),
                    default=F("state"),
                ),
            )
        Draft.objects.filter(assignment_id=label.assignment_id).delete()
        if not gold:
            OutcomeWaiting.objects.create(
                label=label, study_id=label.study_id, created_at=label.created_at
            )
        return
    insert_sql, params = _LABEL_INSERT.sql_and_params(label)
    quote = connection.ops.quote_name
    ctes = [f"label AS ({insert_sql})"]
    if first:
        ctes.append(
            f"opened AS (UPDATE {quote(Assignment._meta.db_table)} "  # noqa: S608
            "SET submitted_at = %s WHERE id = %s)"
        )
        params += [now, label.assignment_id]
    if first and not gold:
        ctes.append(
            f"counted AS (UPDATE {quote(Unit._meta.db_table)} "  # noqa: S608
            "SET submitted_count = submitted_count + 1, "
            "state = CASE WHEN state = %s THEN %s ELSE state END WHERE id = %s)"
        )
        params += [UnitState.OPEN.value, UnitState.PARTIALLY_LABELLED.value, label.unit_id]
    ctes.append(
        f"dropped AS (DELETE FROM {quote(Draft._meta.db_table)} WHERE assignment_id = %s)"  # noqa: S608
    )
    params.append(label.assignment_id)
    if not gold:
        ctes.append(
            f"waiting AS (INSERT INTO {quote(OutcomeWaiting._meta.db_table)} "  # noqa: S608
            "(label_id, study_id, created_at) SELECT id, %s, %s FROM label)"
        )
        params += [label.study_id, label.created_at]
    # Only table names from the models and the ORM's own INSERT are interpolated; every
    # value is a parameter. PostgreSQL runs every data-modifying CTE exactly once.
    sql = f"WITH {', '.join(ctes)} SELECT id FROM label"  # noqa: S608
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        label.pk = cursor.fetchone()[0]
    label._state.adding = False
    label._state.db = connection.alias
