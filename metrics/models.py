"""Stored reliability reports: one row per computation, the latest done one is shown."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q


class ReportStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class StudyReport(models.Model):
    """A study's reliability and claim-metric report, computed by a worker.

    ``labels_digest`` is the canonical digest of the sorted record digests of the
    independent labels the report used (metrics.selectors.labels_digest); a report whose
    digest differs from the current labels' is out of date. ``labels_mark`` tells the same
    without reading every label (``metrics.selectors.report_out_of_date``). A ``queued`` row is the
    debounce of the refresh job: at most one per study (partial unique constraint).
    """

    study = models.ForeignKey("audit.Study", on_delete=models.CASCADE, related_name="reports")
    status = models.CharField(
        max_length=10, choices=ReportStatus.choices, default=ReportStatus.QUEUED
    )
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done.")
    codebook_name = models.CharField(max_length=100, blank=True)
    codebook_version = models.CharField(max_length=50, blank=True)
    labels_digest = models.CharField(max_length=64, blank=True)
    labels_mark = models.CharField(
        max_length=100,
        blank=True,
        help_text="The last independent label counted and the partitions' mark, read "
        "before the labels (metrics.selectors.labels_mark).",
    )
    stage = models.CharField(
        max_length=30, null=True, blank=True, help_text="The study's gate stage when computed."
    )
    report = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study"], condition=Q(status="queued"), name="report_one_queued"
            ),
            models.CheckConstraint(condition=Q(progress__lte=100), name="report_progress_percent"),
        ]
        indexes = [models.Index(fields=["study", "status", "-id"], name="report_latest")]

    def __str__(self) -> str:
        return f"report {self.pk} of study {self.study_id} ({self.status})"


class PredictorKind(models.TextChoices):
    JUDGE = "judge", "Automated judge"
    SYSTEM = "system", "System"


class PredictionSet(models.Model):
    """One imported prediction file: a judge's or a system's values of one codebook field
    for units of a frozen study, and its scores against the final labels.

    A prediction set is never gold: nothing reads it as a label (reliability, outcomes and
    the claim ledger read ``annotator.labelling`` labels only), and
    ``metrics.services.prediction_set_refuse_as_gold`` refuses it wherever gold is chosen
    (``kind`` says whether it is a judge's). ``scores`` is the JSON of
    ``metrics.estimates.judge_scores`` with the gold counts, computed at import and again on
    request; ``gold_digest`` names the final records it was scored against.
    """

    study = models.ForeignKey("audit.Study", on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=PredictorKind.choices)
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=200)
    field = models.CharField(max_length=50, help_text="The codebook field predicted.")
    positive = models.JSONField(
        null=True, blank=True, help_text="The value a gate lets through (alpha and beta)."
    )
    file_name = models.CharField(max_length=255)
    file_sha256 = models.CharField(max_length=64)
    file_bytes = models.PositiveBigIntegerField()
    predictions = models.PositiveIntegerField()
    scores = models.JSONField(default=dict, blank=True)
    gold_digest = models.CharField(max_length=64, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "file_sha256"], name="prediction_file_once"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.name} {self.version}: {self.field}"


class Prediction(models.Model):
    """One predicted value (JSON; ``null`` is U) of one unit."""

    prediction_set = models.ForeignKey(
        PredictionSet, on_delete=models.CASCADE, related_name="values"
    )
    unit = models.ForeignKey("audit.Unit", on_delete=models.CASCADE, related_name="+")
    value = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["prediction_set", "unit"], name="prediction_unique"),
        ]

    def __str__(self) -> str:
        return f"prediction {self.pk}"


class VeriScoreCohort(models.Model):
    """VeriScore's K per query domain, frozen for a study: written once, by the first report
    computed after the study's freeze in which every included complete answer has a final
    record (so that the cohort is the study's whole cohort, not the part labelled so far).
    Every later report scores against it; filters and new reports never change it. Until it
    exists, reports compute K from their own cohort and say that it is provisional."""

    study = models.OneToOneField(
        "audit.Study", on_delete=models.CASCADE, related_name="veriscore_cohort"
    )
    cohort = models.JSONField(help_text='{domain: {"K": float | null, "answers": n}}')
    answers = models.PositiveIntegerField()
    report = models.ForeignKey(StudyReport, null=True, on_delete=models.SET_NULL, related_name="+")
    frozen_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"VeriScore cohort of study {self.study_id}"


class ComparisonSummary(models.Model):
    """One Table II comparison (metrics.protocol_selectors.comparison_fetch) of a protocol
    study's setting for one (evaluated, baseline) pair of pipelines, as a worker last
    computed it, with the mark of what it read (``comparison_mark``: each study's last
    label of each kind, its units, partition version and freeze). The comparison page of a setting
    larger than ``COMPARISON_INLINE_UNITS`` shows this, saying when it was computed and
    whether a newer one is being computed; a smaller one computes in the request.

    A row with ``data`` null is a request: the page asked for a pair never computed, and
    the job (``claimgate.study_comparison_refresh``) computes it."""

    study = models.ForeignKey("audit.Study", on_delete=models.CASCADE, related_name="+")
    evaluated = models.ForeignKey("audit.Pipeline", on_delete=models.CASCADE, related_name="+")
    baseline = models.ForeignKey("audit.Pipeline", on_delete=models.CASCADE, related_name="+")
    mark = models.CharField(max_length=300, blank=True)
    data = models.JSONField(null=True, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["study", "evaluated", "baseline"], name="comparison_once_per_pair"
            ),
            models.CheckConstraint(
                condition=~Q(evaluated=models.F("baseline")), name="comparison_two_pipelines"
            ),
        ]

    def __str__(self) -> str:
        return f"comparison {self.evaluated_id} vs {self.baseline_id} of study {self.study_id}"


class ComparisonSetting(models.Model):
    """A protocol study's setting (metrics.protocol_selectors.protocol_setting) as last
    read, so that the comparison page does not read it again over every unit of every
    protocol study on each view: the study of each protocol (``rubric``, ``documents``,
    ``pairwise``), and in ``data`` the pipelines answering in it, the pairs of its pairwise
    study and each member's units (count and last id, part of the comparisons' mark).

    ``mark`` is what the setting was read from (``setting_mark``: the last study, the last
    observation and the last unit of the whole archive, which a new study or any import
    moves on); a row whose mark is behind, or one of whose member studies is gone, is read
    again once. ``units`` (over the member studies) says whether the setting is small
    enough to compute its comparison in a request, and which settings the label jobs
    queue a recount for."""

    study = models.OneToOneField("audit.Study", on_delete=models.CASCADE, related_name="+")
    rubric = models.ForeignKey(
        "audit.Study", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    documents = models.ForeignKey(
        "audit.Study", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    pairwise = models.ForeignKey(
        "audit.Study", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    units = models.PositiveBigIntegerField(default=0)
    mark = models.CharField(max_length=100)
    data = models.JSONField(default=dict)
    read_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"comparison setting of study {self.study_id}"
