"""Reads from the archive, in a fixed number of queries."""

from __future__ import annotations

from typing import Any

from django.db.models import Count, IntegerField, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from audit.archive.models import Codebook, ImportBatch, Observation, Study, Tuple
from audit.contract import codebook_from_dict


def codebook_definitions() -> list[tuple[tuple[str, str], dict[str, Any]]]:
    """Every stored codebook version's definition (its JSON), with its (name, version)."""
    return [
        ((name, version), definition)
        for name, version, definition in Codebook.objects.values_list(
            "name", "version", "definition"
        )
    ]


def codebook_registry() -> dict[tuple[str, str], Any]:
    """Every stored codebook version, parsed for the checker, keyed by (name, version)."""
    return {key: codebook_from_dict(definition) for key, definition in codebook_definitions()}


def codebooks_with_use() -> QuerySet[Codebook]:
    """Every installed codebook version with ``study_count``, the studies that use it (one
    query: codebooks are few, studies per codebook a handful)."""
    return Codebook.objects.annotate(study_count=Count("studies")).order_by("name", "version")


#: Parsed codebooks by content digest: a codebook version never changes once stored (its
#: digest names its bytes), so a process parses each one once, not once per submission.
_PARSED: dict[str, Any] = {}


def codebook_registry_of(*, codebook: Codebook) -> dict[tuple[str, str], Any]:
    """The checker's registry for records of one codebook (what ``record_build`` writes
    for a study), parsed once per process: no query, no parse after the first call."""
    key = f"{codebook.digest}:{codebook.name}:{codebook.version}"
    parsed = _PARSED.get(key)
    if parsed is None:
        parsed = _PARSED[key] = codebook_from_dict(codebook.definition)
    return {(codebook.name, codebook.version): parsed}


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
