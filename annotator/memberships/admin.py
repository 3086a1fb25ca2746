from __future__ import annotations

from django.contrib import admin

from annotator.memberships.models import Membership


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("study", "user", "role", "pseudonym", "created_at")
    list_filter = ("role", "study")
    search_fields = ("user__username", "pseudonym")
    readonly_fields = ("pseudonym",)
    list_select_related = ("study", "user")
