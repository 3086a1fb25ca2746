"""python manage.py load_demo: codebooks, the two demo studies, demo users, demo data."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from annotator.memberships.models import Membership, Role
from audit.archive.models import Codebook, ImportStatus, Study
from audit.archive.services import codebook_install_file, observations_import
from audit.partitions.services import study_freeze_get

FIXTURES = Path(settings.BASE_DIR) / "fixtures"

#: (slug, title, codebook name, codebook version, demo file)
DEMO_STUDIES = (
    (
        "demo-source-risk",
        "Demo: source risk in AI search answers",
        "source-risk",
        "1.0.0",
        "source-risk.jsonl",
    ),
    (
        "demo-answer-claims",
        "Demo: claim verdicts on AI search answers",
        "answer-claims",
        "1.0.0",
        "answer-claims.jsonl",
    ),
)

#: username -> (password, roles in every demo study, superuser)
DEMO_USERS = {
    "annotator1": ("annotator1-demo", (Role.ANNOTATOR,), False),
    "annotator2": ("annotator2-demo", (Role.ANNOTATOR,), False),
    "adjudicator": ("adjudicator-demo", (Role.ADJUDICATOR,), False),
    "researcher": ("researcher-demo", (Role.RESEARCHER,), False),
    "admin": ("admin-demo", (), True),
}


def demo_users_box(rows: list[tuple[str, str, str]]) -> str:
    """The demo's logins in a box, printed last so that nothing scrolls them away."""
    widths = [max(len(row[column]) for row in rows) for column in range(3)]
    line = "+" + "+".join("-" * (width + 2) for width in widths) + "+"
    body = [
        "| " + " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    title = "Demo users: open http://127.0.0.1:8000/ and log in as one of them"
    return "\n".join([title, line, body[0], line, *body[1:], line])


class Command(BaseCommand):
    help = "Load the demo: both codebooks, one study per codebook, demo users and data."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--allow-without-debug",
            action="store_true",
            help="load even though DEBUG is off (the demo users have published passwords)",
        )

    def handle(self, *args: object, **options: object) -> None:
        demo = settings.DEBUG or getattr(settings, "CLAIMGATE_DEMO", False)
        if not demo and not options["allow_without_debug"]:
            raise CommandError(
                "refusing to create demo users with published passwords outside the demo "
                "settings (config.settings.dev) while DEBUG is off; pass "
                "--allow-without-debug if this really is a throw-away instance"
            )
        with transaction.atomic():
            for path in sorted((FIXTURES / "codebooks").glob("*.json")):
                codebook_install_file(path=path)
            users = self._users()
            for slug, title, name, version, file_name in DEMO_STUDIES:
                study = self._study(slug, title, name, version, users["admin"])
                for username, (_, roles, _) in DEMO_USERS.items():
                    for role in roles:
                        Membership.objects.get_or_create(
                            study=study, user=users[username], role=role
                        )
                if study_freeze_get(study=study) is not None:
                    # Loading the demo again keeps what exists; a frozen study refuses new
                    # observations, and its own are already there.
                    self.stdout.write(f"study {slug}: frozen, left as it is")
                    continue
                path = FIXTURES / "demo" / file_name
                batch = observations_import(
                    study=study, data=path.read_bytes(), file_name=path.name
                )
                if batch.status == ImportStatus.REJECTED:
                    first = batch.errors[0]
                    raise CommandError(
                        f"demo file {file_name} is invalid: line {first['line']}: "
                        f"{first['reason']}: {first['message']}"
                    )
                self.stdout.write(
                    f"study {slug}: {study.tuples.count()} tuples, "
                    f"{study.observations.count()} observations"
                )
        rows = [("username", "password", "role")]
        for username, (password, roles, superuser) in DEMO_USERS.items():
            rows.append(
                (username, password, "admin (superuser)" if superuser else ", ".join(roles))
            )
        self.stdout.write("\n" + demo_users_box(rows))

    def _users(self) -> dict:
        model = get_user_model()
        users = {}
        for username, (password, _, superuser) in DEMO_USERS.items():
            user, created = model.objects.get_or_create(username=username)
            if created:
                user.set_password(password)
                user.is_superuser = superuser
                user.is_staff = superuser
                user.save()
            users[username] = user
        return users

    def _study(self, slug: str, title: str, name: str, version: str, owner: object) -> Study:
        codebook = Codebook.objects.get(name=name, version=version)
        study, created = Study.objects.get_or_create(
            slug=slug, defaults={"title": title, "codebook": codebook, "created_by": owner}
        )
        if not created and study.codebook_id != codebook.pk:
            raise CommandError(f"study {slug} exists with another codebook")
        return study
