"""Writes for memberships and the study's people settings: roles, the overlap k, and how
records name a person (pseudonyms)."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction

from annotator.errors import AnnotationError
from annotator.memberships.models import Membership, Role
from audit.archive.models import Codebook, Study
from audit.queueing import queue_orders_draw

SLUG_TAKEN = "slug_taken"
INVALID_STUDY = "invalid_study"
OVERLAP_MIN, OVERLAP_MAX = 1, 20


def study_create(
    *,
    slug: str,
    title: str,
    codebook: Codebook,
    user: AbstractBaseUser,
    description: str = "",
    overlap: int = 2,
) -> Study:
    """A new, empty study labelled with ``codebook``; its creator becomes its researcher
    (and so may import observations and add people). The codebook may be any installed
    version: from now on a study uses it, so it never changes."""
    slug = (slug or "").strip()
    title = (title or "").strip()
    try:
        validate_slug(slug)
    except ValidationError:
        raise AnnotationError(
            f"{slug!r} is not a slug: use letters, digits, hyphens and underscores",
            code=INVALID_STUDY,
        ) from None
    if len(slug) > Study._meta.get_field("slug").max_length:
        raise AnnotationError("the slug is too long (at most 80 characters)", code=INVALID_STUDY)
    if not title:
        raise AnnotationError("a study needs a title", code=INVALID_STUDY)
    if len(title) > Study._meta.get_field("title").max_length:
        raise AnnotationError("the title is too long (at most 200 characters)", code=INVALID_STUDY)
    if isinstance(overlap, bool) or not OVERLAP_MIN <= overlap <= OVERLAP_MAX:
        raise AnnotationError(
            f"the overlap k must be between {OVERLAP_MIN} and {OVERLAP_MAX}",
            code="invalid_overlap",
        )
    try:
        with transaction.atomic():
            study = Study.objects.create(
                slug=slug,
                title=title,
                description=(description or "").strip(),
                codebook=codebook,
                overlap=overlap,
                created_by=user,
            )
            Membership.objects.create(study=study, user=user, role=Role.RESEARCHER)
    except IntegrityError:
        if Study.objects.filter(slug=slug).exists():
            raise AnnotationError(
                f"a study with the slug {slug!r} exists", code=SLUG_TAKEN
            ) from None
        raise
    return study


def membership_add(*, study: Study, user: AbstractBaseUser, role: str) -> Membership:
    """Give ``user`` a role in ``study``; adding an existing membership changes nothing.
    A new annotator's queue order is drawn by a job (annotator.labelling.services
    ``queue_orders_draw``) once this commits, ahead of their first request."""
    if role not in Role.values:
        raise AnnotationError(f"unknown role {role!r}", code="unknown_role")
    membership, created = Membership.objects.get_or_create(study=study, user=user, role=role)
    if created and role == Role.ANNOTATOR:
        queue_orders_draw(study.pk)
    return membership


def study_overlap_set(*, study: Study, overlap: int) -> Study:
    """Set k, the number of distinct annotators per unit. Lowering k never takes back a
    slot already handed out; raising it opens new slots on every unit."""
    if overlap < OVERLAP_MIN or overlap > OVERLAP_MAX:
        raise AnnotationError(
            f"the overlap k must be between {OVERLAP_MIN} and {OVERLAP_MAX}",
            code="invalid_overlap",
        )
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
