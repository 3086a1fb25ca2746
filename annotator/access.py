"""Who may see and do what: decided here, once per role, and nowhere else.

Each condition stands on its own line so that tests can prove every case. A study the
user has no business with is reported as missing (404), not forbidden, so that its
existence does not leak; a study the user belongs to without the needed role is 403.
Every refusal is logged.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db.models import Exists, OuterRef, QuerySet, Subquery
from django.http import Http404

from annotator.labelling.models import Assignment, Label, LabelKind, LabelSight, QueueOrder
from annotator.labelling.selectors import QueueGlance
from annotator.memberships.models import Membership, Role
from annotator.quality.models import GoldItem
from audit.archive.models import CodebookUnit, Study, Unit
from audit.compiled import CompiledRead

logger = logging.getLogger("claimgate.access")


def _refuse(user: AbstractBaseUser | AnonymousUser, what: str, exc: type[Exception]) -> None:
    """Log why, and refuse. A 404 carries no words: "someone else's" and "missing" must
    read the same, so the reason goes to the log only."""
    logger.warning("access refused: user=%s %s", getattr(user, "pk", None), what)
    if exc is Http404:
        raise Http404
    raise exc(what)


def studies_visible_to(*, user: AbstractBaseUser | AnonymousUser) -> QuerySet[Study]:
    if not user.is_authenticated:
        return Study.objects.none()
    if user.is_superuser:
        return Study.objects.all()
    return Study.objects.filter(memberships__user=user).distinct()


def roles_in_study(*, user: AbstractBaseUser | AnonymousUser, study: Study) -> set[str]:
    if not user.is_authenticated:
        return set()
    return set(Membership.objects.filter(user=user, study=study).values_list("role", flat=True))


@dataclass(frozen=True)
class AnnotatorSeat:
    """What the labelling loop needs of the caller's annotator membership, read with their
    roles in the access check so that no request reads a membership twice: the pseudonym
    records name them by, and whether a researcher paused them."""

    pseudonym: str
    paused: bool


def _roles_and_seat(
    *, user: AbstractBaseUser | AnonymousUser, study: Study
) -> tuple[set[str], AnnotatorSeat | None]:
    """:func:`roles_in_study` and, in the same query, the annotator membership's seat
    (``None`` without the annotator role)."""
    if not user.is_authenticated:
        return set(), None
    rows = (
        Membership.objects.filter(user=user, study=study)
        .order_by("pk")
        .values_list("role", "pseudonym", "paused_at")
    )
    roles: set[str] = set()
    seat = None
    for role, pseudonym, paused_at in rows:
        roles.add(role)
        if role == Role.ANNOTATOR and seat is None:
            seat = AnnotatorSeat(pseudonym=pseudonym, paused=paused_at is not None)
    return roles, seat


def may_see_gate(*, user: AbstractBaseUser | AnonymousUser, roles: set[str]) -> bool:
    """Researchers and adjudicators see the validation gate on the study page. Annotators
    never do: its counts are other people's progress. Someone who annotates in the study
    does not see it through an adjudicator role either."""
    if user.is_superuser:
        return True
    if Role.RESEARCHER in roles:
        return True
    if Role.ANNOTATOR in roles:
        return False
    return Role.ADJUDICATOR in roles


def may_set_up_studies(*, user: AbstractBaseUser | AnonymousUser) -> bool:
    """Installing a codebook and creating a study. Codebooks and studies belong to no
    study yet, so this is not a study role: admins, whoever an admin gave the permission
    to add studies, and the researchers of any study."""
    if not user.is_authenticated:
        return False
    if user.is_superuser:
        return True
    if user.has_perm("audit.add_study"):
        return True
    return Membership.objects.filter(user=user, role=Role.RESEARCHER).exists()


def setup_get_for_researcher(*, user: AbstractBaseUser | AnonymousUser) -> None:
    """Refuse (403) anyone who may not install codebooks or create studies."""
    if not may_set_up_studies(user=user):
        _refuse(user, "may not install codebooks or create studies", PermissionDenied)


def _study_with_roles(
    *, user: AbstractBaseUser | AnonymousUser, slug: str
) -> tuple[Study, set[str]]:
    """The study, for its members (and superusers), with the user's roles in it."""
    study = Study.objects.select_related("codebook").filter(slug=slug).first()
    if study is None:
        _refuse(user, f"no study {slug!r}", Http404)
    if not user.is_authenticated:
        _refuse(user, f"anonymous access to study {slug!r}", Http404)
    roles = roles_in_study(user=user, study=study)
    if not user.is_superuser and not roles:
        _refuse(user, f"not a member of study {slug!r}", Http404)
    return study, roles


def study_get_for_member(*, user: AbstractBaseUser | AnonymousUser, slug: str) -> Study:
    return _study_with_roles(user=user, slug=slug)[0]


def study_get_for_researcher(*, user: AbstractBaseUser | AnonymousUser, slug: str) -> Study:
    study = study_get_for_member(user=user, slug=slug)
    if user.is_superuser:
        return study
    if Role.RESEARCHER not in roles_in_study(user=user, study=study):
        _refuse(user, f"not a researcher of study {slug!r}", PermissionDenied)
    return study


def study_get_for_annotator(*, user: AbstractBaseUser | AnonymousUser, slug: str) -> Study:
    return study_seat_for_annotator(user=user, slug=slug)[0]


# The labelling loop's access reads, compiled by the ORM once per process (audit.compiled).
def _seats_in_study(user_id: int, slug: str) -> QuerySet[Membership]:
    """The caller's annotator memberships of the study, first as :func:`_roles_and_seat`
    picks it, with the study and its codebook."""
    return (
        Membership.objects.select_related("study__codebook")
        .filter(user_id=user_id, study__slug=slug, role=Role.ANNOTATOR)
        .order_by("pk")
    )


_SEAT_IN_STUDY = CompiledRead(
    lambda user_id, slug: _seats_in_study(user_id, slug)[:1], user_id=int, slug=str
)


_ORDER_FIELDS = ("pk", "study_id", "annotator_id", "seed", "cursor", "started_cursor")


def _seat_and_queue(user_id: int, slug: str) -> QuerySet[Membership]:
    """:data:`_SEAT_IN_STUDY` with the caller's :class:`QueueGlance` as subqueries, each
    an index probe: the first unfinished assignment (not on a unit whose labels they
    have seen), whether the study has gold, their queue order."""
    unfinished = (
        Assignment.objects.filter(
            study_id=OuterRef("study_id"), annotator_id=user_id, submitted_at__isnull=True
        )
        .exclude(Exists(LabelSight.objects.filter(user_id=user_id, unit_id=OuterRef("unit_id"))))
        .order_by("id")
    )
    orders = QueueOrder.objects.filter(study_id=OuterRef("study_id"), annotator_id=user_id)
    return _seats_in_study(user_id, slug).annotate(
        queue_unfinished=Subquery(unfinished.values("id")[:1]),
        queue_has_gold=Exists(GoldItem.objects.filter(study_id=OuterRef("study_id"))),
        **{
            f"queue_order_{name}": Subquery(orders.order_by("pk").values(name)[:1])
            for name in _ORDER_FIELDS
        },
    )[:1]


_SEAT_AND_QUEUE = CompiledRead(_seat_and_queue, user_id=int, slug=str)


def _assignment_with_seat(assignment_id: int, user_id: int) -> QuerySet[Assignment]:
    seat_of = Membership.objects.filter(
        user_id=user_id, study_id=OuterRef("study_id"), role=Role.ANNOTATOR
    ).order_by("pk")
    return (
        Assignment.objects.select_related("study__codebook", "unit")
        .filter(pk=assignment_id)
        .annotate(
            seat_pseudonym=Subquery(seat_of.values("pseudonym")[:1]),
            seat_paused_at=Subquery(seat_of.values("paused_at")[:1]),
        )
        .order_by("pk")[:1]
    )


_ASSIGNMENT_WITH_SEAT = CompiledRead(_assignment_with_seat, assignment_id=int, user_id=int)


def study_seat_for_annotator(
    *, user: AbstractBaseUser | AnonymousUser, slug: str
) -> tuple[Study, AnnotatorSeat]:
    """:func:`study_get_for_annotator`, with the caller's :class:`AnnotatorSeat` read by
    the same membership query.

    The labelling loop's every request comes through here, so the common case — an
    annotator of the study — is one query: their first annotator membership of the study
    (as :func:`_roles_and_seat` picks it) with the study and its codebook. Without one,
    the checks below decide the refusal, each on its own line."""
    if user.is_authenticated:
        seats = _SEAT_IN_STUDY.instances(user_id=user.pk, slug=slug)
        if seats:
            membership = seats[0]
            return membership.study, AnnotatorSeat(
                pseudonym=membership.pseudonym, paused=membership.paused_at is not None
            )
    study = Study.objects.select_related("codebook").filter(slug=slug).first()
    if study is None:
        _refuse(user, f"no study {slug!r}", Http404)
    if not user.is_authenticated:
        _refuse(user, f"anonymous access to study {slug!r}", Http404)
    roles, seat = _roles_and_seat(user=user, study=study)
    if not user.is_superuser and not roles:
        _refuse(user, f"not a member of study {slug!r}", Http404)
    if seat is None:
        _refuse(user, f"not an annotator of study {slug!r}", PermissionDenied)
    return study, seat


def study_seat_and_queue_for_annotator(
    *, user: AbstractBaseUser | AnonymousUser, slug: str
) -> tuple[Study, AnnotatorSeat, QueueGlance | None]:
    """:func:`study_seat_for_annotator` for the queue's next step: the same access rule,
    with the caller's :class:`QueueGlance` read by the same statement (``None`` when that
    read found no annotator seat and the checks decided: the queue then reads it
    itself)."""
    if user.is_authenticated:
        seats = _SEAT_AND_QUEUE.instances(user_id=user.pk, slug=slug)
        if seats:
            membership = seats[0]
            order = None
            if membership.queue_order_pk is not None:
                order = QueueOrder.from_db(
                    "default",
                    ["id", *_ORDER_FIELDS[1:]],
                    [getattr(membership, f"queue_order_{name}") for name in _ORDER_FIELDS],
                )
            glance = QueueGlance(
                unfinished_id=membership.queue_unfinished,
                has_gold=bool(membership.queue_has_gold),
                order=order,
            )
            seat = AnnotatorSeat(
                pseudonym=membership.pseudonym, paused=membership.paused_at is not None
            )
            return membership.study, seat, glance
    study, seat = study_seat_for_annotator(user=user, slug=slug)
    return study, seat, None


def assignment_get_for_annotator(
    *, user: AbstractBaseUser | AnonymousUser, assignment_id: int
) -> Assignment:
    """An assignment, only for the annotator who holds it. Anyone else — another
    annotator of the same study included — is told it does not exist (blinding)."""
    return assignment_seat_for_annotator(user=user, assignment_id=assignment_id)[0]


def assignment_seat_for_annotator(
    *, user: AbstractBaseUser | AnonymousUser, assignment_id: int
) -> tuple[Assignment, AnnotatorSeat]:
    """:func:`assignment_get_for_annotator`, with the caller's :class:`AnnotatorSeat`
    read in the same query: the assignment with its study, codebook and unit, and the
    caller's first annotator membership of its study (as :func:`_roles_and_seat` picks
    it), its pseudonym and pause as two index probes."""
    if user.is_authenticated:
        found = _ASSIGNMENT_WITH_SEAT.instances(assignment_id=assignment_id, user_id=user.pk)
    else:
        found = list(
            Assignment.objects.select_related("study__codebook", "unit").filter(pk=assignment_id)
        )
    assignment = found[0] if found else None
    if assignment is None:
        _refuse(user, f"no assignment {assignment_id}", Http404)
    if not user.is_authenticated:
        _refuse(user, f"anonymous access to assignment {assignment_id}", Http404)
    if assignment.annotator_id != user.pk:
        _refuse(user, f"assignment {assignment_id} belongs to someone else", Http404)
    seat = None
    if assignment.seat_pseudonym is not None:  # a membership always has a pseudonym
        seat = AnnotatorSeat(
            pseudonym=assignment.seat_pseudonym, paused=assignment.seat_paused_at is not None
        )
    if seat is None:
        _refuse(user, f"no longer an annotator of study {assignment.study.slug!r}", Http404)
    return assignment, seat


def study_get_for_adjudicator(*, user: AbstractBaseUser | AnonymousUser, slug: str) -> Study:
    study = study_get_for_member(user=user, slug=slug)
    if Role.ADJUDICATOR not in roles_in_study(user=user, study=study):
        _refuse(user, f"not an adjudicator of study {slug!r}", PermissionDenied)
    return study


def unit_get_for_adjudicator(*, user: AbstractBaseUser | AnonymousUser, unit_id: int) -> Unit:
    """A unit of a study where the user adjudicates. Anyone else, a member of the study
    included, is told it does not exist: an annotator learns nothing about units. Nobody
    adjudicates a unit they labelled themselves, nor one they hold an assignment on (its
    independent labels would unblind their own work)."""
    unit = Unit.objects.select_related("study__codebook").filter(pk=unit_id).first()
    if unit is None:
        _refuse(user, f"no unit {unit_id}", Http404)
    if not user.is_authenticated:
        _refuse(user, f"anonymous access to unit {unit_id}", Http404)
    if Role.ADJUDICATOR not in roles_in_study(user=user, study=unit.study):
        _refuse(user, f"not an adjudicator of the study of unit {unit_id}", Http404)
    what = "tuple" if unit.study.codebook.unit == CodebookUnit.TUPLE else "answer"
    labelled = Label.objects.filter(
        unit=unit, annotator=user, kind__in=(LabelKind.INDEPENDENT, LabelKind.GOLD)
    )
    if labelled.exists():
        _refuse(
            user,
            f"Nobody adjudicates a {what} they labelled themselves: you labelled unit "
            f"{unit_id}, so another adjudicator must resolve it.",
            PermissionDenied,
        )
    if Assignment.objects.filter(unit=unit, annotator=user).exists():
        _refuse(
            user,
            f"Nobody adjudicates a {what} they label themselves: unit {unit_id} is assigned "
            "to you for annotation, so another adjudicator must resolve it.",
            PermissionDenied,
        )
    return unit
