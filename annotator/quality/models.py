"""Quality control of annotators: gold units with their keys, the study's gold and
qualification plan, and the drafts kept when an annotator is paused."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class QualityPlan(models.Model):
    """How a study mixes gold into its queues and whom it lets label real units.

    ``gold_rate``: the share of an annotator's items (after qualification) that are gold
    units. ``qualification_size`` n > 0: an annotator's first n items are n distinct
    qualification units, and real units are handed out only once their accuracy on them
    is at least ``qualification_threshold``."""

    study = models.OneToOneField(
        "audit.Study", on_delete=models.CASCADE, related_name="quality_plan"
    )
    gold_rate = models.FloatField(default=0.0)
    qualification_size = models.PositiveIntegerField(default=0)
    qualification_threshold = models.FloatField(default=0.8)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=models.Q(gold_rate__gte=0) & models.Q(gold_rate__lte=0.5),
                name="quality_plan_gold_rate",
            ),
            models.CheckConstraint(
                condition=models.Q(qualification_threshold__gte=0)
                & models.Q(qualification_threshold__lte=1),
                name="quality_plan_threshold",
            ),
        ]

    def __str__(self) -> str:
        return f"quality plan of study {self.study_id}"


class GoldSource(models.TextChoices):
    ADJUDICATED = "adjudicated", "Final record (adjudicated or consensus)"
    KEY_FILE = "key_file", "Key file"


class GoldItem(models.Model):
    """A unit with a known answer. ``key`` maps the codebook's compared fields (the
    reliability items: I, A, M, D, passage_support, source_role; or the answer verdicts)
    to their category ("0", "1", "true", "U", …); a label is right when it gives every
    keyed field its key. ``qualification``: part of the study's qualification set."""

    study = models.ForeignKey("audit.Study", on_delete=models.CASCADE, related_name="gold_items")
    unit = models.OneToOneField("audit.Unit", on_delete=models.CASCADE, related_name="gold")
    key = models.JSONField()
    source = models.CharField(max_length=12, choices=GoldSource.choices)
    qualification = models.BooleanField(default=False)
    marked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    marked_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["study", "qualification", "id"], name="gold_queue")]

    def __str__(self) -> str:
        return f"gold unit {self.unit_id}"


class KeptDraft(models.Model):
    """The draft of an open assignment given back to the pool when its annotator was
    paused: restored if the queue hands them the same unit again."""

    study = models.ForeignKey("audit.Study", on_delete=models.CASCADE, related_name="+")
    unit = models.ForeignKey("audit.Unit", on_delete=models.CASCADE, related_name="+")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    payload = models.JSONField(default=dict)
    version = models.PositiveIntegerField(default=0)
    kept_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["unit", "annotator"], name="kept_draft_once"),
        ]

    def __str__(self) -> str:
        return f"kept draft of unit {self.unit_id}"


class QualitySummary(models.Model):
    """A large study's agreement counts (per annotator, ISO week and block of 50 items)
    as a worker last counted them, with the mark of the labels they counted
    (``annotator.quality.reports.agreement_mark``). The quality page and API of a study
    with more independent labels than ``QUALITY_INLINE_LABELS`` show these, saying when
    they were counted and whether newer labels are being counted; a smaller study's are
    counted in the request itself."""

    study = models.OneToOneField(
        "audit.Study", primary_key=True, on_delete=models.CASCADE, related_name="quality_summary"
    )
    mark = models.CharField(max_length=100)
    data = models.JSONField()
    computed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"quality counts of study {self.study_id} ({self.mark})"
