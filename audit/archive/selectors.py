"""Reads from the archive, in a fixed number of queries."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from audit.archive.models import Codebook, ImportBatch, Observation, Study, Tuple
from audit.contract import codebook_from_dict


def codebook_registry() -> dict[tuple[str, str], Any]:
    """Every stored codebook version, parsed for the checker, keyed by (name, version)."""
    return {
        (row.name, row.version): codebook_from_dict(row.definition)
        for row in Codebook.objects.all()
    }


def _count_per_study(model: type[Tuple] | type[Observation]) -> Coalesce:
    """A correlated subquery counting one table's rows of the outer study.

    One aggregate per table: joining two child tables in one query and counting distinct
    ids multiplies their rows (10⁸ for a study of 10⁴ tuples with 10⁴ observations).
    """
    counted = (
        model.objects.filter(study=OuterRef("pk"))
        .order_by()
        .values("study")
        .annotate(n=Count("*"))
        .values("n")
    )
    return Coalesce(Subquery(counted, output_field=IntegerField()), 0)


def studies_with_counts(*, studies: QuerySet[Study]) -> QuerySet[Study]:
    """Studies with ``tuple_count`` and ``observation_count``, one subquery per table."""
    return studies.select_related("codebook").annotate(
        tuple_count=_count_per_study(Tuple),
        observation_count=_count_per_study(Observation),
    )


def study_import_batches(*, study: Study, limit: int = 20) -> list[ImportBatch]:
    """The latest imports for the study page's table (their stored errors are not read)."""
    return list(study.imports.select_related("created_by").defer("errors", "error_groups")[:limit])


def study_frozen(*, study: Study) -> bool:
    """Whether the study's partitions have been frozen (then nothing may be imported)."""
    return Study.objects.filter(pk=study.pk, freeze__isnull=False).exists()
