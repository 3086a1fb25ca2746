"""Writes for memberships and the study's people settings: roles, the overlap k, and how
records name a person (pseudonyms)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser

from annotator.errors import AnnotationError
from annotator.memberships.models import Membership, Role
from audit.archive.models import Study


def membership_add(*, study: Study, user: AbstractBaseUser, role: str) -> Membership:
    """Give ``user`` a role in ``study``; adding an existing membership changes nothing."""
    if role not in Role.values:
        raise AnnotationError(f"unknown role {role!r}", code="unknown_role")
    membership, _ = Membership.objects.get_or_create(study=study, user=user, role=role)
    return membership


def study_overlap_set(*, study: Study, overlap: int) -> Study:
    """Set k, the number of distinct annotators per unit. Lowering k never takes back a
    slot already handed out; raising it opens new slots on every unit."""
    if overlap < 1 or overlap > 20:
        raise AnnotationError("the overlap k must be between 1 and 20", code="invalid_overlap")
    Study.objects.filter(pk=study.pk).update(overlap=overlap)
    study.overlap = overlap
    return study


def pseudonym_of(*, study: Study, user: AbstractBaseUser) -> str:
    """How records name a person: the pseudonym of their annotator membership (or of
    their first membership, for an adjudicator)."""
    return pseudonym_of_user_id(study=study, user_id=user.pk)


def pseudonym_of_user_id(*, study: Study, user_id: int) -> str:
    """:func:`pseudonym_of` by the person's id (one query; the person is not read)."""
    memberships = sorted(
        Membership.objects.filter(study=study, user_id=user_id),
        key=lambda m: (m.role != Role.ANNOTATOR, m.pk),
    )
    if not memberships:
        raise AnnotationError("not a member of this study", code="not_a_member")
    return memberships[0].pseudonym
