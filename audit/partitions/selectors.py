"""Reads about partitions that other capabilities ask: which partitions exist (in the
order pages show them), their names for people, and whether one is sealed."""

from __future__ import annotations

from audit.archive.models import Partition, Study
from audit.partitions.models import PartitionState
from audit.partitions.rules import CALIBRATION, TEST, UNASSIGNED

__all__ = [
    "PARTITION_KEYS",
    "PARTITION_LABELS",
    "UNASSIGNED",
    "partition_sealed",
    "partitions_mark",
]

#: Partition keys in the order pages show them; units without a partition are "unassigned".
PARTITION_KEYS = (CALIBRATION, TEST, UNASSIGNED)
PARTITION_LABELS = {
    CALIBRATION: "Calibration",
    TEST: "Test (held out)",
    UNASSIGNED: "Unassigned",
}


def partition_sealed(study: Study, partition: str) -> bool:
    """Whether a partition's outcome numbers stay hidden from every page and download:
    the held-out test partition, until the study is frozen (``StudyFreeze``).

    A freeze is irreversible, so the answer is read once per Study instance (Django
    caches the reverse one-to-one, a missing freeze included, and ``study_freeze`` sets
    it): a list page asks per row without a query per row, and a stale instance can only
    err on the sealed side.
    """
    if partition != Partition.TEST:
        return False
    return not hasattr(study, "freeze")


def partitions_mark(study: Study) -> str:
    """Changes whenever what a partition-wise count depends on changes: the partition
    version (moved on by every change of partitions) and whether the study is frozen
    (which unseals the test partition). One query."""
    version = PartitionState.objects.filter(study=study).values_list("version", flat=True).first()
    frozen = "frozen" if hasattr(study, "freeze") else "open"
    return f"{version or 0}:{frozen}"
