"""python manage.py load_demo: codebooks, the two demo studies, demo users, demo data."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from annotator.adjudication.services import outcomes_process
from annotator.labelling.models import Assignment, Label
from annotator.labelling.selectors import pair_sides_of, unit_content
from annotator.labelling.services import (
    assignment_next,
    label_submit,
    pair_left_is_evaluated_draw,
    slot_take,
)
from annotator.memberships.models import Membership, Role
from audit.archive.models import Codebook, CodebookUnit, ImportStatus, Study, Unit
from audit.archive.records import UnitContent
from audit.archive.services import codebook_install_file, observations_import
from audit.partitions.services import study_freeze_get
from audit.queueing import jobs_deferred
from fixtures.demo import protocol

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
    # Seed 002's protocol: one setting (the same twelve queries, two pipelines) labelled
    # with each of the three protocol codebooks; the Table II page compares the pipelines.
    (
        "demo-protocol-documents",
        "Demo: query–document grades (seed 002 protocol)",
        "query-document-grades",
        "1.0.0",
        "protocol-documents.jsonl",
    ),
    (
        "demo-protocol-rubric",
        "Demo: answer rubric (seed 002 protocol)",
        "answer-rubric",
        "1.0.0",
        "protocol-rubric.jsonl",
    ),
    (
        "demo-protocol-pairs",
        "Demo: pairwise side by side (seed 002 protocol)",
        "pairwise",
        "1.0.0",
        "protocol-pairs.jsonl",
    ),
)
#: The protocol studies, whose units come labelled (all but one per annotator) too.
PROTOCOL_STUDIES = ("demo-protocol-documents", "demo-protocol-rubric", "demo-protocol-pairs")

#: username -> (password, roles in every demo study, superuser)
DEMO_USERS = {
    "annotator1": ("annotator1-demo", (Role.ANNOTATOR,), False),
    "annotator2": ("annotator2-demo", (Role.ANNOTATOR,), False),
    "adjudicator": ("adjudicator-demo", (Role.ADJUDICATOR,), False),
    "researcher": ("researcher-demo", (Role.RESEARCHER,), False),
    "admin": ("admin-demo", (), True),
}


#: The study whose units (all but the first) come labelled by annotator1 and annotator2:
#: after the README's walk-through (the first unit labelled twice, differently, and
#: adjudicated; partitions; the freeze) its gate honestly reaches ``frozen``.
SEEDED_STUDY = "demo-source-risk"
#: The demo study of each format-1 unit kind: what the bench scripts build their studies on.
BENCH_STUDIES = {"tuple": "demo-source-risk", "answer": "demo-answer-claims"}


def demo_files(unit: str) -> tuple[Path, Path]:
    """(codebook file, demo data file) of the demo study of ``unit`` (``tuple`` or
    ``answer``, :data:`BENCH_STUDIES`)."""
    for slug, _title, name, version, data in DEMO_STUDIES:
        if slug == BENCH_STUDIES[unit]:
            return FIXTURES / "codebooks" / f"{name}-{version}.json", FIXTURES / "demo" / data
    raise KeyError(unit)


#: Roles that are the target's own or paid by it: their relationship is an interest (I).
INTERESTED_ROLES = {"target_owned", "corporate_affiliate", "sponsored", "affiliate_marketing"}


def _span(text: str, snapshot: str, length: int) -> dict[str, Any]:
    end = min(len(text), length)
    return {"snapshot": snapshot, "start": 0, "end": end, "quote": text[:end]}


def demo_annotation(
    content: UnitContent,
    number: int,
    role: str,
    predicates: dict[str, int | None] | None = None,
) -> dict[str, Any]:
    """A label of the demo's tuple codebook: the key's source role, predicates that vary
    over the units (so that every field's alpha is defined) unless ``predicates`` are
    given, a span for each resolved one."""
    if predicates is None:
        interest = 1 if role in INTERESTED_ROLES else 0
        predicates = {
            "I": interest,
            "A": number % 2,
            "M": 1 if number % 3 == 0 else 0,
            "D": 0 if interest and number % 4 != 1 else 1,
        }
    source = content.sources[0]["text"] if content.sources else ""
    answer = content.answer["text"]
    spans = {
        key: [_span(source, "source", 12) if key == "I" else _span(answer, "answer", 12)]
        for key, value in predicates.items()
        if value is not None
    }
    spans["passage_support"] = [_span(source, "source", 20)]
    return {
        "predicates": predicates,
        "passage_support": 0 if number % 5 == 2 else 1,
        "source_role": role,
        "spans": spans,
        "evidence": {"d_Q": 0.5, "d_R": 0.25, "d_P": 1.0, "d_S": 0.0},
        "rationale": None,
    }


def seed_labels(study: Study, users: dict) -> int:
    """Two agreeing independent labels on every unit of the study but one, by annotator1
    and annotator2 through the queue and the submission service, as if they had worked
    through it; the unit left is the one the queue hands each of them next. Nothing when
    the study already has labels. The number of labels stored."""
    if Label.objects.filter(study=study).exists():
        return 0
    key = json.loads((FIXTURES / "demo" / "key.json").read_text(encoding="utf-8"))
    roles = {row["tuple_digest"]: row["source_role"] for row in key["source-risk.jsonl"]}
    numbers = {
        pk: n
        for n, pk in enumerate(
            Unit.objects.filter(study=study).order_by("id").values_list("pk", flat=True)
        )
    }
    stored = 0
    for username in ("annotator1", "annotator2"):
        for _ in range(len(numbers) - 1):
            assignment = assignment_next(study=study, annotator=users[username])
            unit = assignment.unit
            label_submit(
                assignment=assignment,
                annotation=demo_annotation(
                    unit_content(unit=unit), numbers[unit.pk], roles[unit.digest]
                ),
                client_submission_id=uuid.uuid5(
                    uuid.NAMESPACE_URL, f"demo:{unit.digest}:{username}"
                ),
                parent_digest=None,
            )
            stored += 1
    return stored


def _protocol_annotation(study: Study, content: UnitContent) -> dict[str, Any]:
    """The demo label of a protocol unit (fixtures/demo/protocol.py), as submitted."""
    i = protocol.query_number(content.query["id"])
    system = "evaluated" if content.pipeline["name"] == protocol.EVALUATED["name"] else "baseline"
    if study.codebook.unit == CodebookUnit.ANSWER_PAIR:
        values = {"preference": protocol.preference(i)}
        reason = "Demo: the answer that serves the need better."
        return {"values": values, "reasons": {"preference": reason}, "spans": []}
    if study.codebook.unit == CodebookUnit.QUERY_DOCUMENTS:
        documents, values = protocol.document_values(i, system)
        return {"values": values, "reasons": {}, "spans": [], "documents": documents}
    return {"values": protocol.rubric_values(i, system), "reasons": {}, "spans": []}


def _as_seen(annotation: dict[str, Any], sides: dict[str, str] | None) -> dict[str, Any]:
    """The demo's pairwise preference (``answer``, ``same`` or ``baseline``: what it means
    for the evaluated system) as the annotator whose ``sides`` they are submits it: the
    side they saw it on (the server maps it back when it stores the label)."""
    if not sides:
        return annotation
    side_of = {role: side for side, role in sides.items()}
    values = dict(annotation["values"])
    values["preference"] = side_of.get(values["preference"], values["preference"])
    return {**annotation, "values": values}


def seed_protocol_labels(study: Study, users: dict) -> int:
    """Agreeing labels by annotator1 and annotator2 on every unit of a protocol study but
    its last, which the queue hands each of them next. Each unit is given to both as the
    queue would (a slot counted on the unit, an answer pair's order drawn for them), and
    each label goes through the submission service as the page would send it (a pairwise
    choice as the side the annotator saw). Nothing when the study already has labels. The
    number of labels stored."""
    if Label.objects.filter(study=study).exists():
        return 0
    annotators = [users["annotator1"], users["annotator2"]]
    units = list(Unit.objects.filter(study=study).order_by("id"))[:-1]
    stored = 0
    for number, unit in enumerate(units, start=1):
        submitted = _protocol_annotation(study, unit_content(unit=unit))
        for user in annotators:
            assignment = Assignment.objects.create(
                study=study,
                unit=unit,
                annotator=user,
                number=number,
                pair_left_is_evaluated=pair_left_is_evaluated_draw(
                    study=study, annotator_id=user.pk, unit_id=unit.pk
                ),
            )
            slot_take(unit_id=unit.pk, annotator_id=user.pk)
            label_submit(
                assignment=assignment,
                annotation=_as_seen(submitted, pair_sides_of(assignment)),
                client_submission_id=uuid.uuid5(
                    uuid.NAMESPACE_URL, f"demo:{unit.digest}:{user.username}"
                ),
                parent_digest=None,
            )
            stored += 1
    # The outcomes and agreement of the submitted labels now, not when a worker gets to
    # them: the Table II page shows numbers as soon as the demo is loaded.
    while outcomes_process(study_id=study.pk):
        pass
    return stored


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
        parser.add_argument(
            "--without-labels",
            dest="labels",
            action="store_false",
            help=f"leave {SEEDED_STUDY} unlabelled (the browser tests label chosen units)",
        )

    def handle(self, *args: object, **options: object) -> None:
        demo = settings.DEBUG or getattr(settings, "CLAIMGATE_DEMO", False)
        if not demo and not options["allow_without_debug"]:
            raise CommandError(
                "refusing to create demo users with published passwords outside the demo "
                "settings (config.settings.dev) while DEBUG is off; pass "
                "--allow-without-debug if this really is a throw-away instance"
            )
        # Every label's job, then one report and one gate refresh per study, after commit.
        with jobs_deferred(), transaction.atomic():
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
                if slug in PROTOCOL_STUDIES and options["labels"]:
                    seeded = seed_protocol_labels(study, users)
                    if seeded:
                        self.stdout.write(
                            f"study {slug}: {seeded} labels by annotator1 and annotator2, "
                            "agreeing, on every unit but the last, which the queue hands out next"
                        )
                if slug == SEEDED_STUDY and options["labels"]:
                    seeded = seed_labels(study, users)
                    if seeded:
                        self.stdout.write(
                            f"study {slug}: {seeded} labels by annotator1 and annotator2 on "
                            "every unit but the first, which the queue hands out next"
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
