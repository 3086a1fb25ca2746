"""The archive: what was observed, stored once and never edited.

Every archive row carries ``key``, the canonical digest of the whole stored object, which
makes imports idempotent. Snapshots also carry ``digest``, DESIGN's snapshot digest (the
SHA-256 of the text alone); it is indexed but not unique, because two observations can
share a text (every failed answer with an empty body does) and must stay two snapshots.
Database triggers (migration 0002) refuse UPDATE on snapshots, queries and pipelines, and
on a codebook that a study uses.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q, Value
from django.db.models.functions import Coalesce

DIGEST_LENGTH = 64


class QuestionType(models.TextChoices):
    NATURAL_DISCOVERY = "natural_discovery", "Natural discovery"
    SPECIFIED_SOURCE = "specified_source", "Specified source"
    SPECIFIC_DOCUMENT = "specific_document", "Specific document"


class AnswerStatus(models.TextChoices):
    COMPLETE = "complete", "Complete"
    FAILED = "failed", "Failed"


class CodebookUnit(models.TextChoices):
    TUPLE = "tuple", "Tuple (query, source, answer)"
    ANSWER = "answer", "Answer with all of its sources"
    ANSWER_PAIR = "answer_pair", "Two answers to one query: evaluated and baseline"
    QUERY_DOCUMENTS = "query_documents", "A query with its retrieved documents in rank order"


class Codebook(models.Model):
    name = models.CharField(max_length=100)
    version = models.CharField(max_length=50)
    unit = models.CharField(max_length=20, choices=CodebookUnit.choices)
    title = models.CharField(max_length=200)
    definition = models.JSONField(help_text="The codebook file's JSON value, as loaded.")
    digest = models.CharField(max_length=DIGEST_LENGTH, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="codebook_name_version"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


class Study(models.Model):
    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    codebook = models.ForeignKey(Codebook, on_delete=models.PROTECT, related_name="studies")
    overlap = models.PositiveSmallIntegerField(
        default=2, help_text="How many distinct annotators label each unit (k)."
    )
    previous_version = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="next_versions"
    )
    thresholds = models.JSONField(
        default=dict,
        blank=True,
        help_text="Operating thresholds (e.g. the review priority cut-off); frozen with the study.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["slug"]
        verbose_name_plural = "studies"
        constraints = [
            models.CheckConstraint(condition=Q(overlap__gte=1), name="study_overlap_positive"),
        ]

    def __str__(self) -> str:
        return self.slug


class Query(models.Model):
    key = models.CharField(max_length=DIGEST_LENGTH, unique=True)
    query_id = models.CharField(max_length=200, db_index=True)
    text = models.TextField()
    question_type = models.CharField(max_length=30, choices=QuestionType.choices)
    question_version = models.CharField(max_length=50)
    reference_time = models.CharField(
        max_length=40, help_text="ISO 8601 date or date-time the question is asked about."
    )
    target_name = models.CharField(max_length=300)
    target_family = models.CharField(max_length=200, db_index=True)
    template_id = models.CharField(max_length=200, null=True, blank=True, db_index=True)
    domain = models.CharField(max_length=200, db_index=True)
    locale = models.CharField(max_length=35)

    class Meta:
        verbose_name_plural = "queries"

    def __str__(self) -> str:
        return f"{self.query_id} v{self.question_version}"


class Pipeline(models.Model):
    key = models.CharField(max_length=DIGEST_LENGTH, unique=True)
    name = models.CharField(max_length=200)
    version = models.CharField(max_length=100)
    config = models.JSONField()

    def __str__(self) -> str:
        return f"{self.name} {self.version}"


class AnswerSnapshot(models.Model):
    key = models.CharField(max_length=DIGEST_LENGTH, unique=True)
    digest = models.CharField(max_length=DIGEST_LENGTH, db_index=True)
    service = models.CharField(max_length=200)
    mode = models.CharField(max_length=200)
    model = models.CharField(
        max_length=200, null=True, blank=True, help_text="Null when the service does not say."
    )
    web_search = models.BooleanField(null=True)
    region = models.CharField(max_length=100, null=True, blank=True)
    language = models.CharField(max_length=35, null=True, blank=True)
    login = models.BooleanField(null=True)
    personalization = models.BooleanField(null=True)
    collected_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=AnswerStatus.choices)
    failure = models.TextField(null=True, blank=True)
    text = models.TextField(blank=True)
    citations = models.JSONField(default=list)
    raw_path = models.TextField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=(Q(status="complete", failure__isnull=True))
                | (Q(status="failed") & Q(failure__isnull=False) & ~Q(failure="")),
                name="answer_failure_iff_failed",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.service}/{self.mode} {self.digest[:12]}"


class SourceSnapshot(models.Model):
    key = models.CharField(max_length=DIGEST_LENGTH, unique=True)
    digest = models.CharField(max_length=DIGEST_LENGTH, db_index=True)
    original_url = models.TextField()
    canonical_url = models.TextField()
    rank = models.PositiveIntegerField(null=True, blank=True)
    collected_at = models.DateTimeField()
    text = models.TextField()

    def __str__(self) -> str:
        return f"{self.canonical_url} {self.digest[:12]}"


class ImportStatus(models.TextChoices):
    IMPORTED = "imported", "Imported"
    UNCHANGED = "unchanged", "Already imported: nothing changed"
    REJECTED = "rejected", "Rejected: nothing imported"


class ImportBatch(models.Model):
    """One import attempt of one file, kept whether it was imported or rejected."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="imports")
    file_name = models.CharField(max_length=255)
    file_sha256 = models.CharField(max_length=DIGEST_LENGTH)
    file_bytes = models.PositiveBigIntegerField()
    status = models.CharField(max_length=10, choices=ImportStatus.choices)
    lines = models.PositiveIntegerField(default=0)
    observations_created = models.PositiveIntegerField(default=0)
    tuples_created = models.PositiveIntegerField(default=0)
    tuples_existing = models.PositiveIntegerField(default=0)
    error_count = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, help_text="[{line, reason, message}], capped.")
    error_groups = models.JSONField(
        default=list,
        help_text="Every bad line counted by reason: [{reason, count, lines, message}], "
        "lines the first few line numbers, message the first line's.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "import batches"

    def __str__(self) -> str:
        return f"{self.file_name} ({self.status})"


class Observation(models.Model):
    """One answer to one query by one pipeline, inside a study: the unit of the
    answer codebook. Its sources give its tuples."""

    # No index of its own: observation_unique (study, unit_digest) leads with it.
    # On PostgreSQL every reference of the import-written tables (observations, tuples,
    # units) is checked once per statement by triggers (audit.triggers.Reference,
    # audit 0024), not row by row by a declared foreign key.
    study = models.ForeignKey(
        Study,
        on_delete=models.CASCADE,
        related_name="observations",
        db_index=False,
        db_constraint=False,
    )
    unit_digest = models.CharField(max_length=DIGEST_LENGTH)
    query = models.ForeignKey(
        Query, on_delete=models.PROTECT, related_name="+", db_constraint=False
    )
    pipeline = models.ForeignKey(
        Pipeline, on_delete=models.PROTECT, related_name="+", db_constraint=False
    )
    answer = models.ForeignKey(
        AnswerSnapshot, on_delete=models.PROTECT, related_name="+", db_constraint=False
    )
    batch = models.ForeignKey(
        ImportBatch, on_delete=models.PROTECT, related_name="+", db_constraint=False
    )
    position = models.PositiveIntegerField(help_text="Line number in the imported file.")

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "unit_digest"], name="observation_unique"),
        ]

    def __str__(self) -> str:
        return self.unit_digest[:12]


class Tuple(models.Model):
    """r = (q, u, a): the unit of a tuple codebook."""

    # A tuple's study, query, pipeline and answer are its observation's: on PostgreSQL one
    # reference (ref_tuple_observation, audit 0021 and 0024) checks all five columns
    # against the observation, whose own references check the rest.
    # No index of its own: tuple_unique_in_study (study, digest) leads with it.
    study = models.ForeignKey(
        Study, on_delete=models.CASCADE, related_name="tuples", db_index=False, db_constraint=False
    )
    observation = models.ForeignKey(
        Observation, on_delete=models.CASCADE, related_name="tuples", db_constraint=False
    )
    digest = models.CharField(max_length=DIGEST_LENGTH)
    query = models.ForeignKey(
        Query, on_delete=models.PROTECT, related_name="+", db_index=False, db_constraint=False
    )
    pipeline = models.ForeignKey(
        Pipeline, on_delete=models.PROTECT, related_name="+", db_index=False, db_constraint=False
    )
    answer = models.ForeignKey(
        AnswerSnapshot,
        on_delete=models.PROTECT,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    source = models.ForeignKey(
        SourceSnapshot, on_delete=models.PROTECT, related_name="+", db_constraint=False
    )
    position = models.PositiveSmallIntegerField(help_text="Order among the answer's sources.")
    sampling_stratum = models.CharField(max_length=200, null=True, blank=True)
    inclusion_probability = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "digest"], name="tuple_unique_in_study"),
            models.CheckConstraint(
                condition=Q(inclusion_probability__isnull=True)
                | (Q(inclusion_probability__gt=0) & Q(inclusion_probability__lte=1)),
                name="tuple_inclusion_probability_range",
            ),
        ]

    def __str__(self) -> str:
        return self.digest[:12]


class UnitState(models.TextChoices):
    OPEN = "open", "Open"
    PARTIALLY_LABELLED = "partially_labelled", "Partially labelled"
    AGREED = "agreed", "Agreed"
    DISPUTED = "disputed", "Disputed"
    ADJUDICATED = "adjudicated", "Adjudicated"


class Partition(models.TextChoices):
    CALIBRATION = "calibration", "Calibration"
    TEST = "test", "Test (held out)"


class Unit(models.Model):
    """What one annotator labels once, as the study's codebook says: a tuple
    (a tuple codebook), a complete answer with all of its sources (an answer codebook), a
    pair of answers to one query (``answer_pair``: ``observation`` is the evaluated
    answer, ``baseline`` the baseline's) or a query with its documents
    (``query_documents``: the observation's sources in rank order).

    ``assigned_count`` is kept beside the assignments so that the queue can find a unit
    with a free slot through an index instead of counting rows for every request.
    """

    # A unit's study is its observation's: on PostgreSQL one reference
    # (ref_unit_observation, audit 0021 and 0024) checks both columns against the
    # observation.
    # No index of its own: unit_unique_in_study (study, digest) and unit_queue lead with it.
    study = models.ForeignKey(
        Study, on_delete=models.CASCADE, related_name="units", db_index=False, db_constraint=False
    )
    observation = models.ForeignKey(
        Observation, on_delete=models.CASCADE, related_name="units", db_constraint=False
    )
    baseline = models.ForeignKey(
        Observation,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="baseline_units",
        help_text="answer_pair units only: the baseline's observation.",
        db_constraint=False,
    )
    tuple = models.OneToOneField(
        Tuple,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="unit",
        db_constraint=False,
    )
    digest = models.CharField(max_length=DIGEST_LENGTH)
    assigned_count = models.PositiveSmallIntegerField(default=0)
    #: A hint for the queue's started-unit walk: the user id of one annotator holding a
    #: counted slot on the unit, or null (nobody, or not known). Set by the slot's write
    #: when it is null, moved to another holder (or null) when the slot it names is
    #: released (annotator.labelling.services). Sound in one direction only: a hint
    #: naming someone means they hold the unit, so the walk leaves those units out on an
    #: index without visiting them; a null hint only costs a visit.
    holder = models.BigIntegerField(null=True, blank=True, editable=False)
    submitted_count = models.PositiveSmallIntegerField(default=0)
    state = models.CharField(max_length=20, choices=UnitState.choices, default=UnitState.OPEN)
    priority = models.FloatField(
        null=True, blank=True, help_text="Review priority; never shown to annotators."
    )
    partition = models.CharField(
        max_length=12,
        choices=Partition.choices,
        null=True,
        blank=True,
        help_text="Calibration or held-out test; unassigned until the researcher decides.",
    )

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "digest"], name="unit_unique_in_study"),
            models.CheckConstraint(
                condition=Q(baseline__isnull=True) | ~Q(baseline=F("observation")),
                name="unit_baseline_not_itself",
            ),
        ]
        indexes = [
            models.Index(fields=["study", "assigned_count", "id"], name="unit_queue"),
            # The started-unit walk: the units someone holds, by count and holder hint,
            # so that one's own are skipped on the index (annotator.labelling.services).
            # A null hint read as 0 (no user's id): the walk's two ranges (below and above
            # the asking annotator) then take it, and each is a bound of the index scan.
            models.Index(
                F("study"),
                F("assigned_count"),
                Coalesce(F("holder"), Value(0)),
                name="unit_held",
                condition=Q(assigned_count__gte=1),
            ),
            # Adjudication queue and counts by state: the disputed, agreed and adjudicated
            # units of a study without reading its open ones.
            models.Index(fields=["study", "state"], name="unit_study_state"),
        ]

    def __str__(self) -> str:
        return f"unit {self.pk} ({self.digest[:12]})"
