"""The ``audit`` app's models, for Django's app registry only.

Each capability keeps its models in its own ``models.py`` (app label ``audit`` and table
names unchanged); code imports them from there, never from here (import-linter contract).
"""

from audit.archive.models import (
    DIGEST_LENGTH,
    AnswerSnapshot,
    AnswerStatus,
    Codebook,
    CodebookUnit,
    ImportBatch,
    ImportStatus,
    Observation,
    Partition,
    Pipeline,
    Query,
    QuestionType,
    SourceSnapshot,
    Study,
    Tuple,
    Unit,
    UnitState,
)
from audit.ledger.models import ConformanceRun, LedgerEntry, LedgerHead, StudyGate
from audit.partitions.models import StudyFreeze
from audit.releases.models import Release, ReleaseStatus, UnitRecordText

__all__ = [
    "DIGEST_LENGTH",
    "AnswerSnapshot",
    "AnswerStatus",
    "Codebook",
    "CodebookUnit",
    "ConformanceRun",
    "ImportBatch",
    "ImportStatus",
    "LedgerEntry",
    "LedgerHead",
    "Observation",
    "Partition",
    "Pipeline",
    "Query",
    "QuestionType",
    "Release",
    "ReleaseStatus",
    "SourceSnapshot",
    "Study",
    "StudyFreeze",
    "StudyGate",
    "Tuple",
    "Unit",
    "UnitRecordText",
    "UnitState",
]
