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
