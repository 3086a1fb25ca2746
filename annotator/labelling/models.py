"""Annotation work: assignments (slots on units), drafts and submitted labels."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models

from audit.fields import CanonicalJsonText


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
    # A gold unit handed out for scoring (annotator.quality): it takes no slot of the
    # unit's overlap and its labels are kind GOLD. Never shown to the annotator.
    gold = models.BooleanField(default=False)
    #: An answer_pair unit only (null otherwise): whether this annotator is shown the
    #: evaluated answer on the left, drawn when the slot is made from the study's queue
    #: seed (annotator.labelling.order.answer_pair_left_is_evaluated) and kept, so that the
    #: order is recorded and reproducible. Never sent to the annotator: pages and the API
    #: say only "left" and "right" (audit.contract.sides).
    pair_left_is_evaluated = models.BooleanField(null=True, blank=True)

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
    # A label made on a gold assignment: scored against the key, never in reliability,
    # outcomes or a release's label tables (its record still says "independent": the
    # annotator made it blind, like any other).
    GOLD = "gold", "Gold"


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
    #: ``annotation``'s canonical text, the exact bytes its record embeds, made at INSERT
    #: (every path that writes a label: the field's ``pre_save``, ``bulk.insert``): a
    #: release writes it into the record line instead of serializing the annotation again.
    #: ``NULL`` for a value without canonical text; the release then serializes it.
    annotation_canonical = CanonicalJsonText(source="annotation")
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
        indexes = [
            models.Index(fields=["unit", "kind"], name="label_unit_kind"),
            # A study's labels of one kind, newest first: the marks of what a stored
            # count counted (the last label's id) in one index probe.
            models.Index(fields=["study", "kind", "id"], name="label_study_kind"),
        ]

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


class OutcomeWaiting(models.Model):
    """A submitted label whose outcome is not in the claim ledger yet: written with the
    label, in its transaction, and deleted by the job that appends the outcome
    (``annotator.adjudication.services.outcomes_process``), which takes every waiting label
    of a study at once. The oldest row's age is the outcome lag that /healthz shows."""

    label = models.OneToOneField(
        Label, primary_key=True, on_delete=models.CASCADE, related_name="+"
    )
    study = models.ForeignKey("audit.Study", on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["study", "label"], name="outcome_waiting_study")]

    def __str__(self) -> str:
        return f"label {self.label_id} waiting for its outcome"


def new_queue_seed() -> int:
    """A fresh seed for a study's queue orders: 62 random bits."""
    return secrets.randbits(62)


class QueueSeed(models.Model):
    """The seed of every annotator's queue order in a study (annotator.labelling.order):
    drawn once, the first time anybody asks for a unit, and never changed."""

    study = models.OneToOneField("audit.Study", on_delete=models.CASCADE, related_name="+")
    seed = models.BigIntegerField(default=new_queue_seed)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"queue seed of study {self.study_id}"


class QueueOrder(models.Model):
    """One annotator's seeded order in one study (annotator.labelling.order): recorded the
    first time they ask for a unit, with the seed it was drawn from, the key of the last
    fresh unit the queue handed them (``cursor``: the walk resumes after it) and of the
    last started unit its backlog walk handed them (``started_cursor``: likewise)."""

    study = models.ForeignKey("audit.Study", on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    seed = models.BigIntegerField(help_text="The study's queue seed it was drawn from.")
    cursor = models.BigIntegerField(default=-1)
    started_cursor = models.BigIntegerField(default=-1)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "annotator"], name="queue_order_once"),
        ]

    def __str__(self) -> str:
        return f"queue order of annotator {self.annotator_id} in study {self.study_id}"


class QueuePosition(models.Model):
    """A unit's key in one annotator's order. Written in bulk by the database (one
    INSERT … SELECT per study and annotator); the (order, key) index is the queue's walk."""

    # No index of its own: queue_position_once (order, unit) and queue_position_walk lead
    # with it (one index entry fewer for each of the study's units in every order).
    order = models.ForeignKey(
        QueueOrder, on_delete=models.CASCADE, related_name="positions", db_index=False
    )
    unit = models.ForeignKey("audit.Unit", on_delete=models.CASCADE, related_name="+")
    key = models.BigIntegerField()

    class Meta:
        ordering = ["order", "key", "unit"]
        constraints = [
            models.UniqueConstraint(fields=["order", "unit"], name="queue_position_once"),
        ]
        indexes = [models.Index(fields=["order", "key", "unit"], name="queue_position_walk")]

    def __str__(self) -> str:
        return f"unit {self.unit_id} at key {self.key} of order {self.order_id}"
