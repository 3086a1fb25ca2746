"""The claim ledger (an append-only hash chain of checked records), its head, the
conformance runs and each study's validation gate."""

from __future__ import annotations

from django.db import models

from audit.archive.models import DIGEST_LENGTH, Study, Unit


class LedgerEntry(models.Model):
    """One computed outcome of one record, in a hash chain (audit.contract.ledger).

    Append-only: database triggers refuse UPDATE and DELETE. ``recorded_at`` is kept as
    the exact string that was hashed. One entry per record digest, whatever retries.
    """

    seq = models.BigIntegerField(unique=True)
    study = models.ForeignKey(Study, on_delete=models.PROTECT, related_name="ledger")
    study_slug = models.SlugField(max_length=80)
    unit = models.ForeignKey(
        Unit, null=True, blank=True, on_delete=models.PROTECT, related_name="ledger"
    )
    unit_digest = models.CharField(max_length=DIGEST_LENGTH)
    record_digest = models.CharField(max_length=DIGEST_LENGTH, unique=True)
    kind = models.CharField(max_length=12)
    codebook = models.CharField(max_length=160)
    checker_version = models.CharField(max_length=20)
    stage = models.CharField(max_length=30, null=True, blank=True)
    ok = models.BooleanField()
    reason = models.CharField(max_length=40, null=True, blank=True)
    endpoint = models.SmallIntegerField(null=True, blank=True)
    short_circuit = models.SmallIntegerField(null=True, blank=True)
    priority = models.FloatField(null=True, blank=True)
    action = models.CharField(max_length=16, null=True, blank=True)
    recorded_at = models.CharField(max_length=40)
    prev_hash = models.CharField(max_length=DIGEST_LENGTH)
    entry_hash = models.CharField(max_length=DIGEST_LENGTH, unique=True)
    #: The label this entry checked, joined on the record digest (no column of its own:
    #: labels and entries are written apart, and either may come first). It lets a query
    #: over labels read each one's outcome with one join (``ledger_entry__…``).
    label = models.ForeignObject(
        "annotator.Label",
        on_delete=models.DO_NOTHING,
        null=True,  # an entry's label may be in another table's transaction; no column
        from_fields=["record_digest"],
        to_fields=["record_digest"],
        related_name="ledger_entry",
        related_query_name="ledger_entry",
    )

    class Meta:
        ordering = ["seq"]
        verbose_name = "claim ledger entry"
        verbose_name_plural = "claim ledger"
        indexes = [
            models.Index(fields=["study", "action"], name="ledger_study_action"),
            models.Index(fields=["study", "endpoint"], name="ledger_study_endpoint"),
        ]

    def __str__(self) -> str:
        return f"#{self.seq} {self.record_digest[:12]}"


class LedgerHead(models.Model):
    """The chain's latest position: one row, locked while an entry is appended."""

    seq = models.BigIntegerField(default=0)
    entry_hash = models.CharField(max_length=DIGEST_LENGTH)

    def __str__(self) -> str:
        return f"ledger head #{self.seq}"


class ConformanceRun(models.Model):
    """The conformance suite run against a checker version (gate stage 1)."""

    checker_version = models.CharField(max_length=20)
    suite_version = models.CharField(max_length=20)
    passed = models.BooleanField()
    summary = models.JSONField()
    summary_sha256 = models.CharField(max_length=DIGEST_LENGTH)
    mismatches = models.JSONField(default=list)
    ran_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-ran_at", "-id"]

    def __str__(self) -> str:
        return f"conformance {self.checker_version}: {'pass' if self.passed else 'FAIL'}"


class StudyGate(models.Model):
    """The validation gate of a study as last recomputed by a worker.

    Refreshes are queued coalesced per study (audit.queueing.queue_gate_refresh). Each run
    takes the next ``runs`` number and stores its result only over an older run's
    (``computed_run``), so that a slow run never overwrites a newer one.
    """

    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="gate")
    reached = models.CharField(max_length=30, null=True, blank=True)
    report = models.JSONField(default=dict)
    computed_at = models.DateTimeField(auto_now=True)
    runs = models.PositiveIntegerField(default=0)
    computed_run = models.PositiveIntegerField(default=0)

    class Meta:
        verbose_name = "validation gate"

    def __str__(self) -> str:
        return f"{self.study.slug}: {self.reached or 'no stage'}"


class OutcomeSummary(models.Model):
    """A large study's outcome counts as a worker last counted them, with the mark of
    what they counted (``audit.ledger.selectors.outcomes_mark``). The outcomes page of a
    study with more labels than ``OUTCOMES_INLINE_LABELS`` shows these, saying when they
    were counted and whether newer labels are being counted; a smaller study's page counts
    in the request itself."""

    study = models.OneToOneField(
        Study, primary_key=True, on_delete=models.CASCADE, related_name="outcome_summary"
    )
    mark = models.CharField(max_length=200)
    data = models.JSONField()
    computed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"outcomes of study {self.study_id} ({self.mark})"
