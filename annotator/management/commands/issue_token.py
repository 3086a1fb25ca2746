"""Print a user's API token (creating it if needed), for scripts: ``Authorization: Token …``."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Print the API token of USERNAME, creating it if needed (--rotate: a new one)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username")
        parser.add_argument(
            "--rotate",
            action="store_true",
            help="Delete the existing token first, so that the old one stops working.",
        )

    def handle(self, *args: Any, username: str, rotate: bool, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        if not user.is_active:
            raise CommandError(f"user {username!r} is inactive")
        if rotate:
            Token.objects.filter(user=user).delete()
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(token.key)
