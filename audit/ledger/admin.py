"""Django admin: the claim ledger (read-only), the validation gate of each study with its
claim boundary, the conformance runs."""

from __future__ import annotations

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from audit.archive.admin import ReadOnlyAdmin
from audit.ledger.gate import claim_boundary
from audit.ledger.models import ConformanceRun, LedgerEntry, StudyGate


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
    list_filter = ("study", "kind", "endpoint", "action", "stage", "ok", "checker_version")
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
