"""Who may do what in which study."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models


def _new_pseudonym() -> str:
    return "a-" + secrets.token_hex(5)


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
    pseudonym = models.CharField(
        max_length=20,
        default=_new_pseudonym,
        help_text="How records and releases name this person: never the username.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # Set by a researcher on an annotator membership: no unit is handed out until resumed.
    paused_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "role", "user"]
        constraints = [
            models.UniqueConstraint(fields=["study", "user", "role"], name="membership_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.user} {self.role} in {self.study}"
