"""Writes of quality control: the study's plan, marking gold units (from final records
or a key file), and pausing and resuming an annotator. Pages, the API and commands all
call these."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from annotator.errors import AnnotationError
from annotator.labelling.models import Assignment, Draft, Label, LabelKind
from annotator.labelling.services import slot_release
from annotator.memberships.models import Membership, Role
from annotator.quality.models import GoldItem, GoldSource, KeptDraft, QualityPlan, QualitySummary
from annotator.quality.scoring import key_of, key_problem, values_of
from annotator.quality.selectors import agreement_counted_inline, agreement_data, agreement_mark
from audit.archive.models import Study, Unit, UnitState
from audit.contract.engine import Engine, engine_of
from audit.contract.texts import text_problem
from audit.summaries import summary_refresh

#: Lines of a key file listed in a refusal; the rest are counted.
MAX_PROBLEMS = 100
#: A key file is small: one line per gold unit.
MAX_KEY_FILE = 5 * 1024 * 1024


class QualityError(AnnotationError):
    """A refused quality-control request; ``problems`` lists every bad line or unit."""

    code = "invalid_gold"

    def __init__(
        self, message: str, *, code: str | None = None, problems: list[dict] | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.problems = problems or []


# --- the plan -------------------------------------------------------------------------


def quality_plan_set(
    *, study: Study, gold_rate: float, qualification_size: int, qualification_threshold: float
) -> QualityPlan:
    """Set how gold is mixed into queues and the qualification set's size and threshold.
    A qualification set larger than the study's qualification units is refused."""
    if not 0 <= gold_rate <= 0.5:
        raise QualityError(
            f"gold_rate must be within 0 and 0.5 (got {gold_rate})", code="invalid_plan"
        )
    if qualification_size < 0:
        raise QualityError("qualification_size must be 0 or more", code="invalid_plan")
    if not 0 <= qualification_threshold <= 1:
        raise QualityError(
            f"qualification_threshold must be within 0 and 1 (got {qualification_threshold})",
            code="invalid_plan",
        )
    available = GoldItem.objects.filter(study=study, qualification=True).count()
    if qualification_size > available:
        raise QualityError(
            f"a qualification set of {qualification_size} items needs as many qualification "
            f"units; study {study.slug} has {available}: mark more gold units as "
            "qualification units first",
            code="invalid_plan",
        )
    plan, _ = QualityPlan.objects.update_or_create(
        study=study,
        defaults={
            "gold_rate": gold_rate,
            "qualification_size": qualification_size,
            "qualification_threshold": qualification_threshold,
        },
    )
    return plan


# --- gold units -------------------------------------------------------------------------


@dataclass
class GoldMarked:
    created: int = 0
    unchanged: int = 0
    units: list[str] = field(default_factory=list)


def _mark(
    *,
    study: Study,
    keys: list[tuple[Unit, dict[str, str], bool]],
    source: str,
    by: AbstractBaseUser | None,
) -> GoldMarked:
    """Store the keys, all or nothing. Marking a unit again with the same key changes
    nothing; another key for a gold unit is refused (a key is not edited in place)."""
    existing = {
        item.unit_id: item
        for item in GoldItem.objects.filter(unit_id__in=[unit.pk for unit, _, _ in keys])
    }
    problems = []
    for unit, key, qualification in keys:
        item = existing.get(unit.pk)
        if item is not None and (item.key != key or item.qualification != qualification):
            problems.append(
                {
                    "unit": unit.digest,
                    "message": f"unit {unit.digest[:12]}… is already gold with key "
                    f"{json.dumps(item.key, sort_keys=True)}"
                    f"{' (qualification)' if item.qualification else ''}: a key is never "
                    "changed",
                }
            )
    if problems:
        raise QualityError(
            f"{len(problems)} unit(s) are already gold with another key; nothing was marked",
            code="gold_key_conflict",
            problems=problems[:MAX_PROBLEMS],
        )
    result = GoldMarked()
    with transaction.atomic():
        for unit, key, qualification in keys:
            result.units.append(unit.digest)
            if unit.pk in existing:
                result.unchanged += 1
                continue
            GoldItem.objects.create(
                study=study,
                unit=unit,
                key=key,
                source=source,
                qualification=qualification,
                marked_by=by,
            )
            result.created += 1
    return result


def _final_annotations(units: list[Unit]) -> dict[int, dict[str, Any]]:
    """Each unit's final record (as the outcomes read it): its latest adjudicated label,
    else its latest consensus label while the unit is agreed. One query."""
    agreed = {unit.pk for unit in units if unit.state == UnitState.AGREED}
    finals: dict[int, dict[str, Any]] = {}
    rows = (
        Label.objects.filter(
            unit_id__in=[unit.pk for unit in units],
            kind__in=(LabelKind.ADJUDICATED, LabelKind.CONSENSUS),
        )
        .order_by("revision", "id")
        .values_list("unit_id", "kind", "annotation")
    )
    adjudicated: dict[int, dict[str, Any]] = {}
    for unit_id, kind, annotation in rows:
        if kind == LabelKind.ADJUDICATED:
            adjudicated[unit_id] = annotation
        elif unit_id in agreed:
            finals[unit_id] = annotation
    finals.update(adjudicated)
    return finals


def gold_mark_from_finals(
    *,
    study: Study,
    unit_digests: Iterable[str],
    qualification: bool = False,
    by: AbstractBaseUser | None = None,
) -> GoldMarked:
    """Mark units gold with their final record (latest adjudicated, else the consensus
    of an agreed unit) as the key. Every unit must have one; a refusal names each unit
    that does not, and marks nothing."""
    digests = list(dict.fromkeys(str(digest) for digest in unit_digests))
    if not digests:
        raise QualityError("name at least one unit (by its digest)", code="invalid_gold")
    units = {unit.digest: unit for unit in Unit.objects.filter(study=study, digest__in=digests)}
    finals = _final_annotations(list(units.values()))
    problems = []
    keys = []
    for digest in digests:
        unit = units.get(digest)
        if unit is None:
            problems.append({"unit": digest, "message": f"no unit {digest!r} in this study"})
        elif unit.pk not in finals:
            problems.append(
                {
                    "unit": digest,
                    "message": f"unit {digest[:12]}… has no final record yet (state "
                    f"{unit.state}): adjudicate it, or give its key in a key file",
                }
            )
        else:
            key = key_of(values_of(finals[unit.pk], engine_of(study.codebook.definition)))
            keys.append((unit, key, qualification))
    if problems:
        raise QualityError(
            f"{len(problems)} of {len(digests)} unit(s) cannot be gold from a final record; "
            "nothing was marked",
            code="no_final_record",
            problems=problems[:MAX_PROBLEMS],
        )
    return _mark(study=study, keys=keys, source=GoldSource.ADJUDICATED, by=by)


def gold_mark_from_file(
    *, study: Study, data: bytes, by: AbstractBaseUser | None = None
) -> GoldMarked:
    """Mark units gold from a key file: JSON Lines, one unit per line,
    ``{"unit": "<unit digest>", "key": {"I": 1, "A": 0, …}, "qualification": false}``.
    Checked whole first: one bad line refuses the file and every bad line is listed."""
    if len(data) > MAX_KEY_FILE:
        raise QualityError(
            f"a key file holds at most {MAX_KEY_FILE} bytes (this one has {len(data)})",
            code="file_too_large",
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise QualityError(
            f"the key file is not UTF-8 (byte {exc.start})", code="invalid_encoding"
        ) from None
    engine = engine_of(study.codebook.definition)
    problems: list[dict[str, Any]] = []
    rows: list[tuple[int, str, dict[str, str], bool]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        problem = _key_line(number, line, engine, rows)
        if problem is not None:
            problems.append({"line": number, "message": problem})
    if not rows and not problems:
        raise QualityError("the key file has no line", code="empty_file")
    seen: dict[str, int] = {}
    for number, digest, _, _ in rows:
        if digest in seen:
            problems.append(
                {"line": number, "message": f"unit {digest[:12]}… again (line {seen[digest]})"}
            )
        seen.setdefault(digest, number)
    units = {
        unit.digest: unit
        for unit in Unit.objects.filter(study=study, digest__in=[row[1] for row in rows])
    }
    for number, digest, _, _ in rows:
        if digest not in units:
            problems.append({"line": number, "message": f"no unit {digest!r} in this study"})
    if problems:
        problems.sort(key=lambda problem: problem["line"])
        raise QualityError(
            f"{len(problems)} bad line(s) in the key file; nothing was marked",
            code="invalid_key_file",
            problems=problems[:MAX_PROBLEMS],
        )
    keys = [(units[digest], key, qualification) for _, digest, key, qualification in rows]
    return _mark(study=study, keys=keys, source=GoldSource.KEY_FILE, by=by)


def _key_line(
    number: int, line: str, engine: Engine, rows: list[tuple[int, str, dict[str, str], bool]]
) -> str | None:
    try:
        value = json.loads(line)
    except ValueError as exc:
        return f"not JSON: {exc.msg} at column {exc.colno}"
    problem = text_problem(value, "$")
    if problem is not None:
        return problem.message
    if not isinstance(value, dict):
        return 'a line must be a JSON object {"unit": …, "key": {…}}'
    unknown = sorted(set(value) - {"unit", "key", "qualification"})
    if unknown:
        return f"unknown member {', '.join(unknown)} (members: unit, key, qualification)"
    digest = value.get("unit")
    if not isinstance(digest, str) or not digest:
        return "unit: the unit's digest (a string) is required"
    qualification = value.get("qualification", False)
    if not isinstance(qualification, bool):
        return "qualification: true or false"
    key = value.get("key")
    problem_text = key_problem(key, engine)
    if problem_text is not None:
        return f"key: {problem_text}"
    rows.append((number, digest, key_of(key), qualification))
    return None


# --- pause and resume -----------------------------------------------------------------------


def _membership(study: Study, annotator: AbstractBaseUser) -> Membership:
    membership = Membership.objects.filter(study=study, user=annotator, role=Role.ANNOTATOR).first()
    if membership is None:
        raise AnnotationError(
            f"{annotator} is not an annotator of study {study.slug}", code="not_an_annotator"
        )
    return membership


def annotator_pause(*, study: Study, annotator: AbstractBaseUser) -> int:
    """Stop handing units to ``annotator`` in ``study``: each of their open (unsubmitted)
    assignments goes back to the pool — its slot is free for another annotator — and its
    draft is kept, to be restored if the queue hands them that unit again. Returns how
    many assignments were released. Pausing a paused annotator changes nothing."""
    with transaction.atomic():
        membership = _membership(study, annotator)
        Membership.objects.select_for_update().filter(pk=membership.pk).first()
        if membership.paused_at is None:
            Membership.objects.filter(pk=membership.pk).update(paused_at=timezone.now())
        open_ones = list(
            Assignment.objects.select_for_update()
            .filter(study=study, annotator=annotator, submitted_at__isnull=True)
            .values_list("pk", "unit_id", "gold")
        )
        drafts = {
            draft.assignment_id: draft
            for draft in Draft.objects.filter(assignment_id__in=[row[0] for row in open_ones])
        }
        for pk, unit_id, gold in open_ones:
            draft = drafts.get(pk)
            if draft is not None:
                KeptDraft.objects.update_or_create(
                    unit_id=unit_id,
                    annotator=annotator,
                    defaults={"study": study, "payload": draft.payload, "version": draft.version},
                )
                draft.delete()
            Assignment.objects.filter(pk=pk).delete()
            if not gold:
                slot_release(unit_id=unit_id, annotator_id=annotator.pk)
    return len(open_ones)


def annotator_resume(*, study: Study, annotator: AbstractBaseUser) -> None:
    with transaction.atomic():
        membership = _membership(study, annotator)
        Membership.objects.filter(pk=membership.pk).update(paused_at=None)


def quality_summary_refresh(*, study: Study) -> str:
    """Count a large study's agreement and store it with the mark read before counting
    (a label that arrives meanwhile leaves the summary marked behind, so it is counted
    again). A study small enough to count in a request stores nothing. Returns
    "inline", "current" or "counted"."""
    return summary_refresh(
        model=QualitySummary,
        study=study,
        inline=agreement_counted_inline(study=study),
        mark=lambda: agreement_mark(study=study),
        data=lambda: agreement_data(study),
    )
