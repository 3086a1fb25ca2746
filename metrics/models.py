"""Stored reliability reports: one row per computation, the latest done one is shown."""

from __future__ import annotations

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
