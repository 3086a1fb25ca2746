"""Releases: named, immutable, downloadable label sets of a study."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from audit.archive.models import DIGEST_LENGTH, Study, Unit


class ReleaseStatus(models.TextChoices):
    BUILDING = "building", "Building"
    READY = "ready", "Ready"
    FAILED = "failed", "Failed"


class Release(models.Model):
    """A named, immutable, downloadable label set of a study. Its files live under
    ``settings.RELEASES_ROOT / <study slug> / <name>``; ``files`` lists them with their
    SHA-256 and sizes (the SHA256SUMS manifest is one of them)."""

    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="releases")
    name = models.SlugField(max_length=80)
    status = models.CharField(
        max_length=10, choices=ReleaseStatus.choices, default=ReleaseStatus.BUILDING
    )
    progress = models.PositiveSmallIntegerField(default=0, help_text="Percent done.")
    stage = models.CharField(max_length=30, null=True, blank=True)
    files = models.JSONField(default=dict, blank=True)
    manifest_sha256 = models.CharField(max_length=DIGEST_LENGTH, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "name"], name="release_name_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.study.slug}/{self.name}"


class UnitRecordText(models.Model):
    """A tuple unit's part of every record made on it, as canonical JSON text, stored
    once (audit.releases.services.unit_record_texts_store, by the first release that meets
    the unit): the archive rows it comes from never change, so a release no longer joins
    six tables and serializes them again per label. A record's text is then
    ``{"annotation":…,<answer>,<the codebook's members>,"parents":…,<head>,<tail>}``, its
    digest checked against the label's stored record digest (bytes that do not hash to it
    are never written: the release rebuilds that record from the archive, as it always
    did). Tuple units only.

    Only ever inserted (a trigger refuses UPDATE; the app role may only SELECT and
    INSERT)."""

    unit = models.OneToOneField(Unit, primary_key=True, on_delete=models.CASCADE, related_name="+")
    # Each a canonical text of members without braces (audit.releases.record_texts).
    answer = models.TextField(help_text="The record's answer member.")
    head = models.TextField(help_text="The record's pipeline and query members.")
    tail = models.TextField(help_text="The record's sampling, source and tuple_digest members.")

    def __str__(self) -> str:
        return f"record texts of unit {self.unit_id}"
