"""Who may do what in which study."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Role(models.TextChoices):
    ANNOTATOR = "annotator", "Annotator"
    ADJUDICATOR = "adjudicator", "Adjudicator"
    RESEARCHER = "researcher", "Researcher"


class Membership(models.Model):
    """A person's role in one study; a person may hold several roles in it."""

    study = models.ForeignKey("audit.Study", on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=12, choices=Role.choices)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "role", "user"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user", "role"], name="membership_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.role} in {self.study}"
