"""Annotation work: assignments (slots on units), drafts and submitted labels."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Assignment(models.Model):
    """One annotator's slot on one unit. A unit has at most ``study.overlap`` of them and
    never two for the same annotator (the unique constraint is the last line of defence
    behind the queue's row lock)."""

    study = models.ForeignKey("audit.Study", on_delete=models.CASCADE, related_name="assignments")
    unit = models.ForeignKey("audit.Unit", on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments"
    )
    #: The item's number in this annotator's own queue of the study (1, 2, 3 …): what pages
    #: show, so that nobody reads the pace of others' work from global ids.
    number = models.PositiveIntegerField()
    assigned_at = models.DateTimeField(auto_now_add=True)
    submitted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["unit", "annotator"], name="assignment_once"),
            models.UniqueConstraint(
                fields=["study", "annotator", "number"], name="assignment_number_once"
            ),
        ]
        indexes = [
            models.Index(fields=["study", "annotator", "submitted_at"], name="assignment_mine"),
        ]

    def __str__(self) -> str:
        return f"assignment {self.pk}"


class Draft(models.Model):
    """Work in progress on an assignment: mutable, autosaved, versioned so that two tabs
    cannot silently overwrite each other."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="draft")
    payload = models.JSONField(default=dict)
    version = models.PositiveIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"draft of assignment {self.assignment_id} v{self.version}"


class LabelKind(models.TextChoices):
    INDEPENDENT = "independent", "Independent"
    CONSENSUS = "consensus", "Consensus"
    ADJUDICATED = "adjudicated", "Adjudicated"


class Label(models.Model):
    """A submitted annotation: append-only (database triggers refuse UPDATE and DELETE).

    The full record (docs/formats.md) is the archive's unit plus ``annotation`` and
    ``parents``; ``record_digest`` is its digest. A revision is a new row whose parent is
    the previous revision's record digest.
    """

    study = models.ForeignKey("audit.Study", on_delete=models.PROTECT, related_name="labels")
    unit = models.ForeignKey("audit.Unit", on_delete=models.PROTECT, related_name="labels")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="labels",
    )
    assignment = models.ForeignKey(
        Assignment, null=True, blank=True, on_delete=models.PROTECT, related_name="labels"
    )
    kind = models.CharField(max_length=12, choices=LabelKind.choices)
    revision = models.PositiveSmallIntegerField(default=1)
    annotation = models.JSONField()
    parents = models.JSONField(default=list)
    record_digest = models.CharField(max_length=64, unique=True)
    codebook_digest = models.CharField(max_length=64)
    client_submission_id = models.UUIDField(null=True, blank=True)
    assisted_model = models.CharField(max_length=200, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["annotator", "client_submission_id"], name="label_submission_once"
            ),
            models.UniqueConstraint(
                fields=["unit", "annotator", "kind", "revision"], name="label_revision_once"
            ),
        ]
        indexes = [models.Index(fields=["unit", "kind"], name="label_unit_kind")]

    def __str__(self) -> str:
        return f"{self.kind} label {self.record_digest[:12]}"


class SightVia(models.TextChoices):
    """Where someone was shown the labels of a unit."""

    ADJUDICATION = "adjudication", "Adjudication page"
    RECORD = "record", "Record page"
    OUTCOMES = "outcomes", "Outcomes review list"
    RELEASE = "release", "Release download"


class LabelSight(models.Model):
    """``user`` has been shown the labels of ``unit``: written before the labels are sent,
    never updated or deleted (database triggers refuse both), so that the queue never
    hands this unit to this person to label "blind" — whatever roles they hold later and
    however the study's overlap changes. The first sighting is kept; later ones add
    nothing. The unique index (user, unit) is what the queue's anti-join probes."""

    # The unique index (user, unit) serves lookups by user; no second index on it alone.
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+", db_index=False
    )
    unit = models.ForeignKey("audit.Unit", on_delete=models.PROTECT, related_name="sights")
    via = models.CharField(max_length=12, choices=SightVia.choices)
    seen_at = models.DateTimeField()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "unit"], name="label_sight_once"),
        ]

    def __str__(self) -> str:
        return f"user {self.user_id} saw the labels of unit {self.unit_id} ({self.via})"
