from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.http import HttpRequest

from annotator.labelling.models import Assignment, Label
from audit.archive.admin import ReadOnlyAdmin

User = get_user_model()


class PeopleAdmin(UserAdmin):
    """Django's user admin, except that a person who holds assignments or labels is not
    deleted here: their labels are append-only and name them (the database refuses the
    delete anyway), and the confirmation page would first list every one of their
    thousands of assignments and labels. Deactivate them instead."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and (
            Assignment.objects.filter(annotator=obj).exists()
            or Label.objects.filter(annotator=obj).exists()
        ):
            return False
        return super().has_delete_permission(request, obj)


if admin.site.is_registered(User):
    admin.site.unregister(User)
admin.site.register(User, PeopleAdmin)


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
