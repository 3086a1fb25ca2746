"""The freeze: what was fixed before the held-out partition's labels could be opened."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from audit.archive.models import DIGEST_LENGTH, Study


class StudyFreeze(models.Model):
    """What was frozen before test-partition labels could be opened, with digests, who and
    when. Irreversible: database triggers refuse UPDATE and DELETE; a change needs a new
    study version (``Study.previous_version``)."""

    study = models.OneToOneField(Study, on_delete=models.PROTECT, related_name="freeze")
    codebook_digest = models.CharField(max_length=DIGEST_LENGTH)
    pipelines = models.JSONField(help_text="[{name, version, key}] of every pipeline in use.")
    pipelines_digest = models.CharField(max_length=DIGEST_LENGTH)
    thresholds = models.JSONField()
    thresholds_digest = models.CharField(max_length=DIGEST_LENGTH)
    partition_digest = models.CharField(
        max_length=DIGEST_LENGTH, help_text="Digest of the sorted (unit digest, partition) list."
    )
    partition_counts = models.JSONField(help_text="{calibration: n, test: n}")
    frozen_at = models.DateTimeField(auto_now_add=True)
    frozen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )

    def __str__(self) -> str:
        return f"{self.study.slug} frozen {self.frozen_at:%Y-%m-%d}"


class PartitionState(models.Model):
    """A study's partition version, moved on by every change of a unit's partition (a
    database trigger, audit 0025, whatever writes it), and the
    study-wide counts its pages show, stored with the key they were computed for.

    The counts (units per partition and grouping values, and the partition digest) are
    whole-study aggregates; the partitions page and API read them from here while the
    key (version, number of units, last unit) still matches, and recompute them once when
    it does not. Other capabilities (the outcomes summary, the reliability report) read
    ``version`` to tell whether partitions changed since they counted.
    """

    study = models.OneToOneField(
        Study, primary_key=True, on_delete=models.CASCADE, related_name="partition_state"
    )
    version = models.BigIntegerField(default=0)
    summary_key = models.CharField(max_length=100, blank=True)
    summary = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return f"partitions of study {self.study_id}, version {self.version}"
