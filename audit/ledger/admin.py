"""Django admin: the claim ledger (read-only), the validation gate of each study with its
claim boundary, the conformance runs."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from audit.archive.admin import ReadOnlyAdmin
from audit.contract import CHECKER_VERSION
from audit.contract.endpoint import ABSTAIN, CONTEXTUALIZE, PASS, REVIEW
from audit.ledger.gate import STAGES, claim_boundary
from audit.ledger.models import ConformanceRun, LedgerEntry, StudyGate

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
    readonly_fields = (
        "study",
        "reached",
        "computed_at",
        "stages",
        "boundary",
    )
    exclude = ("report", "runs", "computed_run")

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
