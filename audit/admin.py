"""Django admin: the archive (read-only), the claim ledger (read-only), the validation gate
of each study with its claim boundary."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from audit.contract import CHECKER_VERSION
from audit.contract.endpoint import ABSTAIN, CONTEXTUALIZE, PASS, REVIEW
from audit.gate import STAGES, claim_boundary
from audit.models import (
    AnswerSnapshot,
    Codebook,
    ConformanceRun,
    ImportBatch,
    LedgerEntry,
    Query,
    SourceSnapshot,
    Study,
    StudyFreeze,
    StudyGate,
    Tuple,
    Unit,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows written only by the application: no add, change or delete in the admin."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


NONE = "none"


class KnownValuesFilter(admin.SimpleListFilter):
    """A list filter over values known in advance (``NONE`` for null): Django's default
    filter for a plain field runs ``SELECT DISTINCT`` over the whole table on every
    changelist, which the claim ledger (an entry per record) cannot afford."""

    values: tuple[tuple[str, str], ...] = ()

    def lookups(self, request: HttpRequest, model_admin: Any) -> tuple[tuple[str, str], ...]:
        return self.values

    def queryset(self, request: HttpRequest, queryset: QuerySet) -> QuerySet:
        value = self.value()
        if value is None:
            return queryset
        if value == NONE:
            return queryset.filter(**{f"{self.parameter_name}__isnull": True})
        return queryset.filter(**{self.parameter_name: value})


class KindFilter(KnownValuesFilter):
    title = "kind"
    parameter_name = "kind"
    values = (("independent", "independent"), ("consensus", "consensus"))
    values += (("adjudicated", "adjudicated"),)


class EndpointFilter(KnownValuesFilter):
    title = "endpoint"
    parameter_name = "endpoint"
    values = (("1", "1"), ("0", "0"), (NONE, "U"))


class ActionFilter(KnownValuesFilter):
    title = "action"
    parameter_name = "action"
    values = (*((action, action) for action in (PASS, CONTEXTUALIZE, REVIEW, ABSTAIN)),)
    values += ((NONE, "none (refused)"),)


class StageFilter(KnownValuesFilter):
    title = "stage"
    parameter_name = "stage"
    values = (*((stage, stage) for stage in STAGES), (NONE, "none"))


class CheckerVersionFilter(KnownValuesFilter):
    """This checker's version and every version the conformance suite ran against (a
    small table), instead of the distinct versions of the whole ledger."""

    title = "checker version"
    parameter_name = "checker_version"

    def lookups(self, request: HttpRequest, model_admin: Any) -> tuple[tuple[str, str], ...]:
        versions = set(ConformanceRun.objects.values_list("checker_version", flat=True))
        return tuple((v, v) for v in sorted(versions | {CHECKER_VERSION}))


@admin.register(LedgerEntry)
class LedgerEntryAdmin(ReadOnlyAdmin):
    list_display = (
        "seq",
        "study_slug",
        "kind",
        "short_record",
        "endpoint",
        "short_circuit",
        "action",
        "priority",
        "stage",
        "ok",
        "recorded_at",
    )
    list_filter = (
        "study",
        KindFilter,
        EndpointFilter,
        ActionFilter,
        StageFilter,
        "ok",
        CheckerVersionFilter,
    )
    search_fields = ("=record_digest", "=unit_digest", "=entry_hash", "record_digest")
    ordering = ("-seq",)
    list_select_related = ()
    show_full_result_count = False

    @admin.display(description="record", ordering="record_digest")
    def short_record(self, obj: LedgerEntry) -> str:
        return obj.record_digest[:16] + "…"


@admin.register(StudyGate)
class StudyGateAdmin(ReadOnlyAdmin):
    list_display = ("study", "reached", "computed_at")
    readonly_fields = ("study", "reached", "computed_at", "stages", "boundary")
    exclude = ("report",)

    @admin.display(description="stages")
    def stages(self, obj: StudyGate) -> str:
        rows = [
            (
                stage["name"],
                "met" if stage["met"] else "not met",
                stage["why"],
            )
            for stage in obj.report.get("stages", [])
        ]
        return format_html(
            "<table><tr><th>stage</th><th>status</th><th>why</th></tr>{}</table>",
            format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", rows),
        )

    @admin.display(description="claim boundary")
    def boundary(self, obj: StudyGate) -> str:
        boundary = claim_boundary(obj.reached)

        def items(values: list[str]) -> str:
            return format_html_join("", "<li>{}</li>", ((v,) for v in values)) or "—"

        return format_html(
            "<p><strong>May claim</strong></p><ul>{}</ul>"
            "<p><strong>May not claim yet</strong></p><ul>{}</ul>"
            "<p><strong>No stage of this tool supports</strong></p><ul>{}</ul>",
            items(boundary["may"]),
            items(boundary["may_not_yet"]),
            items(boundary["may_never"]),
        )


@admin.register(ConformanceRun)
class ConformanceRunAdmin(ReadOnlyAdmin):
    list_display = ("checker_version", "suite_version", "passed", "ran_at")


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
            obj.labels.exists()
            or obj.ledger.exists()
            or obj.releases.exists()
            or StudyFreeze.objects.filter(study=obj).exists()
        ):
            return False
        return super().has_delete_permission(request, obj)


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
