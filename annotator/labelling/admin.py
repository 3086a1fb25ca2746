from __future__ import annotations

from django.contrib import admin

from annotator.labelling.models import Assignment, Label
from audit.archive.admin import ReadOnlyAdmin


@admin.register(Assignment)
class AssignmentAdmin(ReadOnlyAdmin):
    list_display = ("id", "study", "unit", "annotator", "assigned_at", "submitted_at")
    list_filter = ("study",)
    list_select_related = ("study", "unit", "annotator")


@admin.register(Label)
class LabelAdmin(ReadOnlyAdmin):
    """Labels are append-only in the database too: the admin only shows them."""

    list_display = ("record_digest", "study", "kind", "revision", "annotator", "created_at")
    list_filter = ("study", "kind")
    search_fields = ("=record_digest",)
    list_select_related = ("study", "annotator")
