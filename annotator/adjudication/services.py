"""After a submission: outcomes into the claim ledger, the unit's adjudication state,
consensus records, and the adjudicator's final labels. Called by jobs and pages alike."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from statistics import fmean
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max

from annotator.adjudication import picks as picks_module
from annotator.adjudication.final import OWN, EditError, final_view
from annotator.errors import AnnotationError
from annotator.labelling.models import Label, LabelKind, OutcomeWaiting, SightVia
from annotator.labelling.selectors import label_record
from annotator.labelling.services import (
    LabelRefused,
    annotation_problems,
    labels_seen_record,
    pair_sides_draw,
    reasons_refusal,
    text_refusal,
)
from annotator.memberships.models import Role
from annotator.memberships.services import pseudonym_of
from audit.archive.models import CodebookUnit, Study, Unit, UnitState
from audit.archive.records import UNIT_VALUES, record_build, unit_content, unit_contents_of
from audit.archive.selectors import codebook_registry, codebook_registry_of
from audit.contract import check_record
from audit.contract.claim_alignment import claims_agree
from audit.contract.engine import (
    Engine,
    annotation_from_view,
    compared_key,
    engine_of,
    engine_values,
    field_value,
)
from audit.ledger.chain import Outcome, ledger_append, ledger_append_many
from audit.ledger.models import LedgerEntry
from audit.queueing import LABEL_ADJUDICATED, queue_job


def labels_agree(
    annotations: Sequence[dict[str, Any]],
    unit_kind: str,
    definition: dict[str, Any] | None = None,
) -> bool:
    """Whether independent labels agree (consensus) or dispute the unit: equal values on
    every compared field of the codebook (audit.contract.engine: the first two codebooks
    too), and claims that align one to one by answer span with equal verdicts and kind
    (audit.contract.claim_alignment): an unmatched claim or a differing claim verdict
    disputes the unit. Spans, evidence values and reasons may differ between agreeing
    annotators. ``definition`` None: a format-1 codebook of ``unit_kind``."""
    engine = engine_of(definition, unit=unit_kind)
    if len({_judgments(engine, a) for a in annotations}) > 1:
        return False
    return all(
        claims_agree([field_value(engine, a, claims.code) or [] for a in annotations])
        for claims in engine.claims_fields
    )


def judgments_of(
    annotation: dict[str, Any], unit_kind: str, definition: dict[str, Any] | None = None
) -> tuple:
    """What agreeing annotations share: the values of the codebook's compared fields (per
    document too, and relations as sets, for a codebook with fields below unit level)."""
    return _judgments(engine_of(definition, unit=unit_kind), annotation)


def _judgments(engine: Engine, annotation: dict[str, Any]) -> tuple:
    if engine.unit_level:
        return compared_key(engine, annotation)
    return picks_module.judgments_key(engine.definition, engine_values(engine, annotation))


def independent_heads(*, unit: Unit) -> list[Label]:
    """Each annotator's latest independent revision on the unit, oldest annotator first."""
    latest = (
        Label.objects.filter(unit=unit, kind=LabelKind.INDEPENDENT)
        .values("annotator_id")
        .annotate(revision=Max("revision"))
    )
    wanted = {(row["annotator_id"], row["revision"]) for row in latest}
    labels = Label.objects.filter(unit=unit, kind=LabelKind.INDEPENDENT).order_by("id")
    return [label for label in labels if (label.annotator_id, label.revision) in wanted]


def label_outcome(*, label: Label) -> LedgerEntry:
    """Check the label's record and append its outcome to the claim ledger (once)."""
    existing = LedgerEntry.objects.filter(record_digest=label.record_digest).first()
    if existing is not None:
        return existing
    study = Study.objects.select_related("codebook").get(pk=label.study_id)
    record = label_record(label=label)
    result = check_record(record, codebook_registry())
    entry, _ = ledger_append(
        study=study, unit=label.unit, unit_digest=label.unit.digest, result=result, kind=label.kind
    )
    return entry


#: Waiting labels taken per transaction by :func:`outcomes_process`.
OUTCOME_BATCH = 500


def outcomes_process(*, study_id: int, limit: int = OUTCOME_BATCH) -> int:
    """Every label of the study waiting for its outcome (:class:`OutcomeWaiting`), up to
    ``limit``, in bulk and in one transaction: the records rebuilt and checked, their
    outcomes appended to the ledger at once, the units' adjudication states recomputed,
    consensus records created (with their outcomes) where the labels agree, and the
    waiting rows deleted. Rows another worker holds are skipped (SKIP LOCKED), so two
    runs never take the same labels; a label already in the ledger is not appended
    again. Returns how many waiting labels were taken (0: nothing left)."""
    with transaction.atomic():
        taken = list(
            OutcomeWaiting.objects.select_for_update(skip_locked=True)
            .filter(study_id=study_id)
            .order_by("label_id")
            .values_list("label_id", flat=True)[:limit]
        )
        if not taken:
            return 0
        study = Study.objects.select_related("codebook").get(pk=study_id)
        labels = list(Label.objects.filter(pk__in=taken).order_by("id"))
        unit_ids = sorted({label.unit_id for label in labels})
        # Locked in id order: a run beside this one waits here rather than deciding the
        # same unit's state from half of its labels. FOR NO KEY UPDATE, as the update
        # that follows: a FOR UPDATE lock would also hold up every row being written that
        # refers to these units (the key-share lock of each foreign key's check: labels
        # submitted, a queue order being drawn, which deadlocked with it).
        units = list(
            Unit.objects.select_for_update(of=("self",), no_key=True)
            .filter(pk__in=unit_ids)
            .order_by("id")
            .values(*UNIT_VALUES)
        )
        contents = unit_contents_of(study=study, units=units)
        digests = {unit["id"]: unit["digest"] for unit in units}
        registry = codebook_registry_of(codebook=study.codebook)
        outcomes = [
            _outcome(study, contents[label.unit_id], label, registry, digests) for label in labels
        ]
        ledger_append_many(study=study, outcomes=outcomes)
        consensus = _units_state_recompute(
            study=study, states={u["id"]: u["state"] for u in units}, contents=contents
        )
        ledger_append_many(
            study=study,
            outcomes=[
                _outcome(study, contents[label.unit_id], label, registry, digests)
                for label in consensus
            ],
        )
        OutcomeWaiting.objects.filter(label_id__in=taken).delete()
    return len(taken)


def _outcome(
    study: Study,
    content: Any,
    label: Label,
    registry: dict[tuple[str, str], Any],
    digests: dict[int, str],
) -> Outcome:
    record = record_build(
        study=study, content=content, annotation=label.annotation, parents=label.parents
    )
    return Outcome(
        unit_id=label.unit_id,
        unit_digest=digests[label.unit_id],
        result=check_record(record, registry),
        kind=label.kind,
    )


def _units_state_recompute(
    *, study: Study, states: dict[int, str], contents: dict[int, Any]
) -> list[Label]:
    """:func:`unit_state_recompute` for many units of one study in a fixed number of
    queries; returns the consensus labels created."""
    open_ids = [pk for pk, state in states.items() if state != UnitState.ADJUDICATED]
    latest: dict[tuple[int, int], Label] = {}
    for label in Label.objects.filter(unit_id__in=open_ids, kind=LabelKind.INDEPENDENT):
        key = (label.unit_id, label.annotator_id)
        if key not in latest or latest[key].revision < label.revision:
            latest[key] = label
    heads: dict[int, list[Label]] = {pk: [] for pk in open_ids}
    for label in sorted(latest.values(), key=lambda row: row.pk):
        heads[label.unit_id].append(label)
    priorities = dict(
        LedgerEntry.objects.filter(
            record_digest__in=[label.record_digest for label in latest.values()],
            priority__isnull=False,
        ).values_list("record_digest", "priority")
    )
    finals: dict[int, set[str]] = {}
    for unit_id, digest in Label.objects.filter(
        unit_id__in=open_ids, kind=LabelKind.CONSENSUS
    ).values_list("unit_id", "record_digest"):
        finals.setdefault(unit_id, set()).add(digest)
    registry = codebook_registry_of(codebook=study.codebook)
    created: list[Label] = []
    updates: list[Unit] = []
    for unit_id in open_ids:
        unit_heads = heads[unit_id]
        if not unit_heads:
            state = UnitState.OPEN
        elif len(unit_heads) < study.overlap:
            state = UnitState.PARTIALLY_LABELLED
        elif labels_agree(
            [h.annotation for h in unit_heads], study.codebook.unit, study.codebook.definition
        ):
            state = UnitState.AGREED
            annotation = consensus_annotation(study=study, heads=unit_heads)
            parents = sorted(h.record_digest for h in unit_heads)
            record = record_build(
                study=study, content=contents[unit_id], annotation=annotation, parents=parents
            )
            if record["record_digest"] not in finals.get(unit_id, set()):
                result = check_record(record, registry)
                if not result.ok:  # agreeing valid labels always merge into a valid record
                    raise LabelRefused(result.message or "refused", code=result.reason)
                created.append(
                    Label(
                        study=study,
                        unit_id=unit_id,
                        kind=LabelKind.CONSENSUS,
                        revision=len(finals.get(unit_id, ())) + 1,
                        annotation=record["annotation"],
                        parents=parents,
                        record_digest=record["record_digest"],
                        codebook_digest=study.codebook.digest,
                    )
                )
        else:
            state = UnitState.DISPUTED
        known = [priorities[h.record_digest] for h in unit_heads if h.record_digest in priorities]
        updates.append(Unit(pk=unit_id, state=state, priority=fmean(known) if known else None))
    Label.objects.bulk_create(created)
    Unit.objects.bulk_update(updates, ["state", "priority"])
    return created


def consensus_annotation(*, study: Study, heads: Sequence[Label]) -> dict[str, Any]:
    """The consensus of agreeing labels, for every codebook on the engine: each label read
    into the engine's view, the views' consensus (annotator.adjudication.picks
    .consensus_view: the shared values, every evidence span once, evidence dimensions
    averaged, claims aligned by content through claims_consensus, reasons joined in the
    codebook's consensus order) written back as the codebook stores it
    (audit.contract.engine.annotation_from_view)."""
    engine = engine_of(study.codebook.definition, unit=study.codebook.unit)
    annotations = [label.annotation for label in heads]
    first = annotations[0]
    if engine.consensus_order == "annotator":
        annotations = sorted(annotations, key=lambda a: str(a.get("annotator")))
    view = picks_module.consensus_view(engine, [engine_values(engine, a) for a in annotations])
    body = {
        "kind": LabelKind.CONSENSUS.value,
        "annotator": "consensus",
        "assisted": None,
        **annotation_from_view(engine, view),
        "rationale": None,
    }
    if "sides" in first:
        # An answer pair's consensus nobody saw in an order of its own: it keeps the first
        # label's sides (the mapping every pair record carries; its values and spans are
        # roles, the same for every annotator).
        body["sides"] = dict(first["sides"])
    return body


def unit_state_recompute(*, unit: Unit) -> tuple[str, Label | None]:
    """open → partially_labelled → agreed (with a consensus record, no adjudicator) or
    disputed → adjudicated. Returns the state and a consensus label created now, if any."""
    unit = Unit.objects.select_related("study__codebook").get(pk=unit.pk)
    study = unit.study
    if unit.state == UnitState.ADJUDICATED:
        return unit.state, None
    heads = independent_heads(unit=unit)
    consensus = None
    if not heads:
        state = UnitState.OPEN
    elif len(heads) < study.overlap:
        state = UnitState.PARTIALLY_LABELLED
    elif labels_agree(
        [h.annotation for h in heads], study.codebook.unit, study.codebook.definition
    ):
        state = UnitState.AGREED
        consensus = _consensus_create(study=study, unit=unit, heads=heads)
    else:
        state = UnitState.DISPUTED
    priorities = list(
        LedgerEntry.objects.filter(
            record_digest__in=[h.record_digest for h in heads], priority__isnull=False
        ).values_list("priority", flat=True)
    )
    Unit.objects.filter(pk=unit.pk).update(
        state=state, priority=fmean(priorities) if priorities else None
    )
    return state, consensus


def _final_record_fields(
    *, study: Study, unit: Unit, annotation: dict[str, Any], heads: Sequence[Label]
) -> tuple[dict[str, Any], list[str]]:
    parents = sorted(h.record_digest for h in heads)
    record = record_build(
        study=study, content=unit_content(unit=unit), annotation=annotation, parents=parents
    )
    return record, parents


def _consensus_create(*, study: Study, unit: Unit, heads: Sequence[Label]) -> Label | None:
    annotation = consensus_annotation(study=study, heads=heads)
    record, parents = _final_record_fields(
        study=study, unit=unit, annotation=annotation, heads=heads
    )
    if Label.objects.filter(record_digest=record["record_digest"]).exists():
        return None
    result = check_record(record, codebook_registry())
    if not result.ok:  # agreeing valid labels always merge into a valid record
        raise LabelRefused(result.message or "refused", code=result.reason)
    revision = Label.objects.filter(unit=unit, kind=LabelKind.CONSENSUS).count() + 1
    return Label.objects.create(
        study=study,
        unit=unit,
        kind=LabelKind.CONSENSUS,
        revision=revision,
        annotation=record["annotation"],
        parents=parents,
        record_digest=record["record_digest"],
        codebook_digest=study.codebook.digest,
    )


class AdjudicationRefused(AnnotationError):
    code = "adjudication_refused"


def adjudication_submit(
    *,
    unit: Unit,
    adjudicator: AbstractBaseUser,
    annotation: dict[str, Any],
    rationale: str,
    client_submission_id: uuid.UUID | str,
) -> Label:
    """The adjudicator's final labels for a disputed unit: a new record whose parents are
    the independent records (which stay unchanged), with a written rationale."""
    submission_id = uuid.UUID(str(client_submission_id))
    replay = Label.objects.filter(annotator=adjudicator, client_submission_id=submission_id).first()
    if replay is not None:
        return replay
    text_refusal(rationale, "rationale", AdjudicationRefused)
    text_refusal(annotation, "annotation", LabelRefused)
    if not (rationale or "").strip():
        raise AdjudicationRefused("an adjudication needs a written rationale", code="no_rationale")
    with transaction.atomic():
        # The unit's row only, FOR NO KEY UPDATE (see outcomes_process): not its study's
        # and codebook's rows, which every label and slot of the study refers to.
        unit = (
            Unit.objects.select_for_update(of=("self",), no_key=True)
            .select_related("study__codebook")
            .get(pk=unit.pk)
        )
        study = unit.study
        if not study.memberships.filter(user=adjudicator, role=Role.ADJUDICATOR).exists():
            raise AdjudicationRefused("not an adjudicator of this study", code="not_adjudicator")
        heads = independent_heads(unit=unit)
        # Resolving a unit means having read its labels, however the labels were reached.
        labels_seen_record(user=adjudicator, units=[unit.pk], via=SightVia.ADJUDICATION)
        if any(h.annotator_id == adjudicator.pk for h in heads):
            raise AdjudicationRefused(
                "you labelled this unit yourself; another adjudicator must resolve it",
                code="own_unit",
            )
        if unit.state != UnitState.DISPUTED:
            raise AdjudicationRefused(
                f"this unit is {unit.get_state_display().lower()}, not disputed",
                code="not_disputed",
            )
        final = {
            **{k: v for k, v in annotation.items() if k not in ("kind", "annotator")},
            "kind": LabelKind.ADJUDICATED.value,
            "annotator": pseudonym_of(study=study, user=adjudicator),
            "rationale": rationale.strip(),
        }
        final.setdefault("assisted", None)
        if study.codebook.unit == CodebookUnit.ANSWER_PAIR:
            # The final label of a pair records the order its adjudicator saw (roles are
            # what it stores; the sides are never taken from the client).
            final["sides"] = pair_sides_draw(study=study, user_id=adjudicator.pk, unit_id=unit.pk)
        record, parents = _final_record_fields(
            study=study, unit=unit, annotation=final, heads=heads
        )
        registry = codebook_registry()
        result = check_record(record, registry)
        if not result.ok:
            raise LabelRefused(
                result.message or "refused",
                code=result.reason,
                problems=annotation_problems(
                    codebook=registry.get((study.codebook.name, study.codebook.version)),
                    record=record,
                ),
            )
        reasons_refusal(study=study, annotation=record["annotation"])
        label = Label.objects.create(
            study=study,
            unit=unit,
            annotator=adjudicator,
            kind=LabelKind.ADJUDICATED,
            revision=1,
            annotation=record["annotation"],
            parents=parents,
            record_digest=record["record_digest"],
            codebook_digest=study.codebook.digest,
            client_submission_id=submission_id,
        )
        Unit.objects.filter(pk=unit.pk).update(state=UnitState.ADJUDICATED)
        queue_job(LABEL_ADJUDICATED, label.pk)
    return label


def adjudication_final_body(
    *, unit: Unit, picks: dict[str, str], edits: dict[str, Any]
) -> dict[str, Any]:
    """The final label's judgment part, from the page's picks (field key -> the record
    digest of an independent label, or "own") and edits: the engine view
    (annotator.adjudication.final) written by the codebook's writer
    (audit.contract.engine.annotation_from_view). Refusals name the field."""
    engine = engine_of(unit.study.codebook.definition)
    heads = independent_heads(unit=unit)
    position = {head.record_digest: index for index, head in enumerate(heads)}
    indices: dict[str, Any] = {}
    for code, digest in picks.items():
        if digest == OWN:
            indices[code] = OWN
            continue
        if digest not in position:
            raise AdjudicationRefused(
                f"{code}: the label picked is not one of this unit's latest independent "
                "labels (a revision may have arrived): reload the page",
                code="unknown_pick",
            )
        indices[code] = position[digest]
    views = [engine_values(engine, head.annotation) for head in heads]
    try:
        view = final_view(engine, views, indices, edits)
    except picks_module.PickError as exc:
        raise AdjudicationRefused(exc.message, code="pick_missing") from None
    except EditError as exc:
        raise AdjudicationRefused(exc.message, code="bad_edits") from None
    return annotation_from_view(engine, view)


def adjudication_submit_picks(
    *,
    unit: Unit,
    adjudicator: AbstractBaseUser,
    picks: dict[str, str],
    rationale: str,
    client_submission_id: uuid.UUID | str,
    edits: dict[str, Any] | None = None,
) -> Label:
    """The final label of a disputed unit, any codebook, from per-field picks and the
    adjudicator's edits (:func:`adjudication_final_body`)."""
    unit = Unit.objects.select_related("study__codebook").get(pk=unit.pk)
    body = adjudication_final_body(unit=unit, picks=picks, edits=edits or {})
    return adjudication_submit(
        unit=unit,
        adjudicator=adjudicator,
        annotation=body,
        rationale=rationale,
        client_submission_id=client_submission_id,
    )
