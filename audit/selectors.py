"""Reads from the archive, in a fixed number of queries."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, QuerySet

from audit.models import Codebook, ImportBatch, Study


def codebook_registry() -> dict[tuple[str, str], Any]:
    """Every stored codebook version, parsed for the checker, keyed by (name, version)."""
    from audit.contract import codebook_from_dict

    return {
        (row.name, row.version): codebook_from_dict(row.definition)
        for row in Codebook.objects.all()
    }


def studies_with_counts(*, studies: QuerySet[Study]) -> QuerySet[Study]:
    return studies.select_related("codebook").annotate(
        tuple_count=Count("tuples", distinct=True),
        observation_count=Count("observations", distinct=True),
    )


def study_import_batches(*, study: Study, limit: int = 20) -> list[ImportBatch]:
    return list(study.imports.select_related("created_by")[:limit])
