"""Django admin of the archive: studies, and the archive's rows (read-only)."""

from __future__ import annotations

from django.contrib import admin
from django.core.exceptions import ObjectDoesNotExist
from django.core.paginator import Paginator
from django.db import connection
from django.http import HttpRequest
from django.utils.functional import cached_property

from audit.archive.models import (
    AnswerSnapshot,
    Codebook,
    ImportBatch,
    Query,
    SourceSnapshot,
    Study,
    Tuple,
    Unit,
)

#: Above this many rows (by PostgreSQL's statistics) an unfiltered changelist shows the
#: statistics' estimate instead of counting.
ESTIMATE_ABOVE = 10_000


class EstimatedCountPaginator(Paginator):
    """Pages of a changelist whose table grows with studies. Unfiltered, a large table's
    rows are counted from PostgreSQL's statistics (``pg_class.reltuples``, kept by
    autovacuum): an exact count reads the whole table, and snapshots hold whole pages of
    text. A filtered or small list is counted exactly."""

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        if connection.vendor == "postgresql" and not rows.query.where:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                    [connection.ops.quote_name(rows.model._meta.db_table)],
                )
                found = cursor.fetchone()
            if found and found[0] > ESTIMATE_ABOVE:
                return int(found[0])
        return super().count


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written only by the application: no add, change or delete in the admin.
    Their tables grow with studies, so a changelist never counts a whole table (see
    ``EstimatedCountPaginator``; no "show all" count either)."""

    paginator = EstimatedCountPaginator
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ("slug", "title", "codebook", "overlap", "created_at")
    search_fields = ("slug", "title")
    readonly_fields = ("codebook", "created_at", "created_by")

    def has_delete_permission(self, request: HttpRequest, obj: Study | None = None) -> bool:
        """A study with labels, ledger entries, releases or a freeze is never deleted (the
        database protects them), so the admin does not offer it: its confirmation page
        would first read and list every one of those rows (minutes at 10^5 tuples)."""
        if obj is not None and (
            obj.labels.exists() or obj.ledger.exists() or obj.releases.exists() or _frozen(obj)
        ):
            return False
        return super().has_delete_permission(request, obj)


def _frozen(study: Study) -> bool:
    """Whether the study has a freeze, read through its reverse relation (the archive does
    not import the partitions capability that defines it)."""
    try:
        study.freeze  # noqa: B018
    except ObjectDoesNotExist:
        return False
    return True


@admin.register(Codebook)
class CodebookAdmin(ReadOnlyAdmin):
    list_display = ("name", "version", "unit", "digest", "created_at")


@admin.register(ImportBatch)
class ImportBatchAdmin(ReadOnlyAdmin):
    list_display = ("study", "file_name", "status", "lines", "tuples_created", "created_at")
    list_filter = ("status", "study")


@admin.register(Query)
class QueryAdmin(ReadOnlyAdmin):
    list_display = ("query_id", "question_version", "question_type", "domain", "target_family")
    list_filter = ("question_type",)
    search_fields = ("query_id", "text", "=key")


@admin.register(AnswerSnapshot)
class AnswerSnapshotAdmin(ReadOnlyAdmin):
    list_display = ("service", "mode", "model", "status", "collected_at", "digest")
    list_filter = ("status", "service")
    search_fields = ("=digest", "=key")


@admin.register(SourceSnapshot)
class SourceSnapshotAdmin(ReadOnlyAdmin):
    list_display = ("canonical_url", "rank", "collected_at", "digest")
    search_fields = ("canonical_url", "=digest", "=key")


@admin.register(Tuple)
class TupleAdmin(ReadOnlyAdmin):
    list_display = ("digest", "study", "position", "sampling_stratum")
    list_filter = ("study",)
    search_fields = ("=digest",)
    list_select_related = ("study",)


@admin.register(Unit)
class UnitAdmin(ReadOnlyAdmin):
    list_display = ("digest", "study", "state", "assigned_count", "submitted_count", "priority")
    list_filter = ("study", "state")
    search_fields = ("=digest",)
    list_select_related = ("study",)
