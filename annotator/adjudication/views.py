"""Pages for adjudicators: the queue of disputed units and the side-by-side page.

Thin: access from ``annotator.access``; the rules (who may adjudicate what, the rationale,
the record contract) live in ``annotator.adjudication.services.adjudication_submit``, which these
pages call and whose refusals they show. Adjudicators see every independent label of the
units they adjudicate, named by pseudonym; never a username.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from statistics import fmean
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotator.access import study_get_for_adjudicator, unit_get_for_adjudicator
from annotator.adjudication.final import OWN, OWN_TYPES, EditError, final_view
from annotator.adjudication.picks import PickError, differing_fields, documents_of, item_key
from annotator.adjudication.services import (
    AdjudicationRefused,
    adjudication_submit,
    independent_heads,
)
from annotator.errors import AnnotationError
from annotator.labelling.fields_page import (
    document_cards,
    fields_for_page,
    panes_template,
    span_document,
    spans_of,
    value_text,
)
from annotator.labelling.forms import TextField, _json_object
from annotator.labelling.models import Assignment, Label, LabelKind, SightVia
from annotator.labelling.pair_page import annotation_seen, pair_sides_shown
from annotator.labelling.services import LabelRefused, labels_seen_record, pair_sides_draw
from audit.archive.models import CodebookUnit, Study, Unit, UnitState
from audit.archive.records import unit_content
from audit.contract.claim_alignment import claims_aligned
from audit.contract.engine import (
    ENGINE_FORMAT,
    Engine,
    annotation_from_view,
    engine_of,
    engine_values,
)
from audit.contract.errors import ContractError
from audit.contract.texts import loads_checked

#: How many disputed units the queue page lists at once (highest priority first).
QUEUE_PAGE_SIZE = 100


def _refused_page(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    """A refusal the user may read: they are an adjudicator of the study."""
    return render(request, "annotator/adjudicate_refused.html", {"message": str(exc)}, status=403)


# --- the queue ---------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueCounts:
    disputed: int
    adjudicated: int
    agreed: int
    yours: int  # disputed units this adjudicator labelled or holds: someone else resolves them
    waiting: int  # disputed units in this adjudicator's queue


def _own_units(*, study: Study, user: Any) -> tuple[QuerySet, QuerySet]:
    return (
        Assignment.objects.filter(study=study, annotator=user).values("unit_id"),
        Label.objects.filter(study=study, annotator=user, kind=LabelKind.INDEPENDENT).values(
            "unit_id"
        ),
    )


def adjudication_queue_of(*, study: Study, user: Any) -> tuple[list[Unit], QueueCounts]:
    """The disputed units ``user`` may adjudicate, highest priority first, and the study's
    counts by state. Three queries, whatever the study's size."""
    by_state = dict(
        Unit.objects.filter(
            study=study,
            state__in=(UnitState.DISPUTED, UnitState.ADJUDICATED, UnitState.AGREED),
        )
        .values_list("state")
        .annotate(n=Count("pk"))
        .values_list("state", "n")
    )
    assigned, labelled = _own_units(study=study, user=user)
    queue = (
        Unit.objects.filter(study=study, state=UnitState.DISPUTED)
        .exclude(pk__in=assigned)
        .exclude(pk__in=labelled)
    )
    waiting = queue.count()
    units = list(
        queue.select_related("observation__query", "observation__answer", "tuple__source")
        .only(
            "id",
            "priority",
            "partition",
            "state",
            "observation__query__text",
            "observation__answer__service",
            "observation__answer__mode",
            "tuple__source__canonical_url",
            "tuple__source__original_url",
        )
        .order_by(F("priority").desc(nulls_last=True), "id")[:QUEUE_PAGE_SIZE]
    )
    disputed = by_state.get(UnitState.DISPUTED, 0)
    counts = QueueCounts(
        disputed=disputed,
        adjudicated=by_state.get(UnitState.ADJUDICATED, 0),
        agreed=by_state.get(UnitState.AGREED, 0),
        yours=disputed - waiting,
        waiting=waiting,
    )
    return units, counts


@login_required
@require_GET
def adjudication_queue(request: HttpRequest, slug: str) -> HttpResponse:
    try:
        study = study_get_for_adjudicator(user=request.user, slug=slug)
    except PermissionDenied as exc:
        return _refused_page(request, exc)
    units, counts = adjudication_queue_of(study=study, user=request.user)
    context = {
        "study": study,
        "units": units,
        "counts": counts,
        "is_tuple": study.codebook.unit == CodebookUnit.TUPLE,
        "page_size": QUEUE_PAGE_SIZE,
    }
    return render(request, "annotator/adjudicate_queue.html", context)


# --- the side-by-side page: every codebook, from its engine fields -----------------------


def _verdict_text(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "unknown"


def _claim_item(claim: dict[str, Any], sources: dict[str, str], verdicts: Any) -> dict[str, Any]:
    quote = claim.get("quote_span") or None
    source = claim.get("source_digest")
    if source is None and isinstance(claim.get("source"), int):
        source = f"source:{claim['source']}"
    return {
        "id": claim.get("id"),
        "span": claim.get("span") or {},
        "quote_span": quote,
        "source": sources.get(source or "", "no source"),
        "verdicts": [(name, _verdict_text(claim.get(name))) for name in verdicts],
        "kind": claim.get("kind"),
        "reason": claim.get("reason") or "",
    }


#: Why an aligned row of claims differs, in words.
CLAIM_ROW_WHY = {
    "unmatched": "no matching claim on every side",
    "verdicts": "verdicts differ",
}


def _claim_rows(
    claims: list[list[Any]], sources: dict[str, str], verdicts: Any
) -> list[dict[str, Any]]:
    """The annotators' claims (one list per column) aligned by answer span
    (audit.contract.claim_alignment), one row per aligned group: per column the claims in
    it, each with the key ``column:index`` by which the page keeps it."""
    lists = [[c for c in given if isinstance(c, dict)] for given in claims]
    return [
        {
            "differs": row.differs,
            "why": CLAIM_ROW_WHY.get(row.why or "", ""),
            "cells": [
                [
                    {
                        **_claim_item(lists[column][index], sources, verdicts),
                        "key": f"{column}:{index}",
                    }
                    for index in indexes
                ]
                for column, indexes in enumerate(row.members)
            ],
        }
        for row in claims_aligned(lists)
    ]


def _fields_cell(
    field: dict[str, Any], view: dict[str, Any], document: int | None = None
) -> dict[str, Any]:
    """One label's value of a field (on ``document`` for a per-document field), with its
    reason and evidence spans; ``view`` is the label's engine view."""
    part: Any = view
    spans = spans_of(view, field["code"])
    if document is not None:
        entries = documents_of(view)
        part = entries[document] if document < len(entries) else {}
        spans = [span for span in spans if span_document(span) == document]
    values = part.get("values")
    values = values if isinstance(values, dict) else {}
    reasons = part.get("reasons")
    reasons = reasons if isinstance(reasons, dict) else {}
    code = field["code"]
    present = code in values or field["type"] in ("links", "groups")
    if field["type"] == "claims":
        claims = values.get(code)
        n = len(claims) if isinstance(claims, list) else 0
        text = f"{n} claim{'s' if n != 1 else ''}" if present else "not answered"
    elif field["type"] == "number" and type(values.get(code)) in (int, float):
        text = f"{float(values[code]):g}"
    else:
        text = value_text(field, values.get(code), present=code in values)
    return {
        "text": text,
        "missing": not present,
        "reason": reasons.get(code) or "",
        "spans": spans,
    }


def _mean_text(views: list[dict[str, Any]], code: str) -> str:
    numbers = [
        value
        for view in views
        if type(value := (view.get("values") or {}).get(code)) in (int, float)
    ]
    return f"{fmean(numbers):g}" if numbers else "—"


def _page_codebook(study: Study, engine: Engine) -> dict[str, Any]:
    """The codebook as the page shows it: its name and the engine's fields (and the
    format-1 evidence dimensions, shown and averaged, never picked)."""
    inputs = {code for item in engine.derived if item.rule == "R_O" for code in item.inputs}
    fields = fields_for_page(engine)
    for entry in fields:
        if entry["code"] in inputs and entry["label"] != entry["code"]:
            entry["label"] = f"{entry['code']} · {entry['label']}"  # "I · Relationship"
        for option in entry["options"]:
            if option["label"] == option["value"]:  # a grade 0/1 without a name reads "1"
                option["text"] = option["value"]
    return {
        "name": study.codebook.name,
        "version": study.codebook.version,
        "unit": engine.unit,
        "fields": fields,
        "dimensions": fields_for_page(Dimensions(engine.dimensions)),
    }


@dataclass(frozen=True)
class Dimensions:
    """The evidence dimensions of an engine, read as fields by ``fields_for_page``."""

    fields: tuple[Any, ...]


def _fields_context(
    unit: Unit,
    *,
    reader: Any,
    picked: dict[str, str] | None = None,
    restored: dict[str, Any] | None = None,
    rationale: str = "",
    error: tuple[str, str] | None = None,
    client_submission_id: str | None = None,
) -> dict[str, Any]:
    study = unit.study
    definition = study.codebook.definition
    engine = engine_of(definition)
    codebook = _page_codebook(study, engine)
    content = unit_content(unit=unit)
    shows_labels = unit.state in (UnitState.DISPUTED, UnitState.ADJUDICATED)
    heads = independent_heads(unit=unit) if shows_labels else []
    final = None
    if unit.state == UnitState.ADJUDICATED:
        final = Label.objects.filter(unit=unit, kind=LabelKind.ADJUDICATED).order_by("-id").first()
    # An answer pair is shown in the adjudicator's own order, and every label (stored in
    # roles) is read in it: "left" means the answer on the adjudicator's left.
    sides = pair = None
    if content.codebook_unit == CodebookUnit.ANSWER_PAIR:
        sides = pair_sides_draw(study=study, user_id=reader.pk, unit_id=unit.pk)
        pair = pair_sides_shown(content, sides)
    columns = [
        {
            "index": index,
            "pseudonym": head.annotation.get("annotator") or f"annotator {index + 1}",
            "record_digest": head.record_digest,
            "revision": head.revision,
            "rationale": head.annotation.get("rationale") or "",
            "view": engine_values(engine, annotation_seen(definition, head.annotation, sides)),
        }
        for index, head in enumerate(heads)
    ]
    final_view_seen = (
        engine_values(engine, annotation_seen(definition, final.annotation, sides))
        if final is not None
        else None
    )
    views = [column["view"] for column in columns]
    differing = differing_fields(engine.definition, views) if views else set()
    picked = picked or {}
    unpicked = error is not None and error[0] == "pick_missing"
    # The adjudicator writes values and evidence of their own, except on an answer pair
    # (whose labels the page shows in sides, not in the roles they are stored in).
    edits = pair is None
    # Claims in the first codebooks' shape (a source by digest) are edited claim by claim;
    # other claims fields are picked whole.
    claims_field = next(
        (f for f in engine.claims_fields if engine.format_version != ENGINE_FORMAT), None
    )
    # One row per unit-level field, then (query_documents) one per document and
    # per-document field, keyed as picks key them ("code:N").
    items: list[tuple[str, str, dict[str, Any], int | None]] = [
        (entry["code"], entry["label"], entry, None)
        for entry in codebook["fields"]
        if entry["placement"] != "document"
        and (claims_field is None or entry["code"] != claims_field.code)
    ]
    n_documents = (
        len(content.documents) if content.codebook_unit == CodebookUnit.QUERY_DOCUMENTS else 0
    )
    for document in range(n_documents):
        items.extend(
            (
                item_key(entry["code"], document),
                f"Document {document + 1} · {entry['label']}",
                entry,
                document,
            )
            for entry in codebook["fields"]
            if entry["placement"] == "document"
        )
    rows = []
    for code, label, entry, document in items:
        cells = []
        for column in columns:
            cell = _fields_cell(entry, column["view"], document)
            digest = column["record_digest"]
            if code in picked:
                checked = picked[code] == digest
            else:
                checked = code not in differing and column["index"] == 0
            cells.append({**cell, "index": column["index"], "digest": digest, "checked": checked})
        own = edits and document is None and entry["type"] in OWN_TYPES
        rows.append(
            {
                "code": code,
                "label": label,
                "type": entry["type"],
                "field": entry,
                "document": document,
                "differs": code in differing,
                "cells": cells,
                "pickable": True,
                "own": own,
                "own_checked": picked.get(code) == OWN,
                "spans": edits and document is None and entry["evidence"] != "none",
                "problem": "Pick one of the labels."
                if unpicked and code in differing and code not in picked
                else "",
                "final": _fields_cell(entry, final_view_seen, document)
                if final_view_seen is not None
                else None,
            }
        )
    for entry in codebook["dimensions"]:
        rows.append(
            {
                "code": entry["code"],
                "label": entry["label"],
                "note": "evidence dimension: the mean is kept",
                "type": "dimension",
                "field": entry,
                "document": None,
                "differs": False,
                "cells": [
                    {**_fields_cell(entry, column["view"]), "index": column["index"]}
                    for column in columns
                ],
                "pickable": False,
                "own": False,
                "spans": False,
                "mean": _mean_text(views, entry["code"]),
                "final": _fields_cell(entry, final_view_seen)
                if final_view_seen is not None
                else None,
            }
        )
    pseudonyms = {column["record_digest"]: column["pseudonym"] for column in columns}
    is_tuple = content.codebook_unit == CodebookUnit.TUPLE
    sources = [
        (
            {
                "index": index,
                "label": f"Source {index + 1}",
                "url": source["canonical_url"] or source["original_url"],
            },
            source,
        )
        for index, source in enumerate(content.sources)
    ]
    source_names = {
        key: meta["label"]
        for meta, source in sources
        for key in (source.get("digest"), f"source:{meta['index']}")
        if key
    }
    claim_rows: list[dict[str, Any]] = []
    final_claims: list[dict[str, Any]] = []
    if claims_field is not None:
        verdicts = claims_field.claim_verdicts
        if columns:
            lists = [(c["view"].get("values") or {}).get(claims_field.code) or [] for c in columns]
            claim_rows = _claim_rows(lists, source_names, verdicts)
        if final_view_seen is not None:
            final_claims = [
                _claim_item(claim, source_names, verdicts)
                for claim in (final_view_seen.get("values") or {}).get(claims_field.code) or []
                if isinstance(claim, dict)
            ]
    editable = unit.state == UnitState.DISPUTED and bool(columns)
    page_data = {
        "editable": editable,
        "edits": edits,
        "columns": [
            {"digest": c["record_digest"], "pseudonym": c["pseudonym"], "view": c["view"]}
            for c in columns
        ],
        "fields": {
            entry["code"]: {
                "type": entry["type"],
                "label": entry["label"],
                "evidence": entry["evidence"],
                "reason": entry["reason"],
                "placement": entry["placement"],
            }
            for entry in codebook["fields"]
        },
        "claims": None
        if claims_field is None
        else {
            "code": claims_field.code,
            "kinds": list(claims_field.claim_kinds),
            "verdicts": list(claims_field.claim_verdicts),
            # The verdict the claims summarize (the record contract's summary_mismatch).
            "summary": next(
                (
                    f.code
                    for f in engine.value_fields
                    if f.type == "verdict" and f.code in claims_field.claim_verdicts
                ),
                None,
            ),
        },
        "sources": [
            {"index": meta["index"], "digest": source.get("digest"), "label": meta["label"]}
            for meta, source in sources
        ],
        "final": final_view_seen,
        "restored": restored,
    }
    return {
        "study": study,
        "unit": unit,
        "codebook": codebook,
        "shows_labels": bool(columns) or final is not None,
        "panes_template": panes_template(content.codebook_unit),
        "query": content.query,
        "answer": content.answer if pair is None else None,
        "pair": pair,
        "source": content.sources[0] if is_tuple else None,
        "sources": sources if pair is None else [],
        "documents": document_cards(codebook["fields"], content.documents)
        if content.codebook_unit == CodebookUnit.QUERY_DOCUMENTS
        else [],
        "columns": columns,
        "rows": rows,
        "claims_field": claims_field,
        "claim_rows": claim_rows,
        "final_claims": final_claims,
        "span_fields": [
            entry for entry in codebook["fields"] if edits and entry["evidence"] != "none"
        ],
        "final": final,
        "parents": [
            {"digest": digest, "pseudonym": pseudonyms.get(digest)}
            for digest in (final.parents if final is not None else [])
        ],
        "editable": editable,
        "page_data": page_data,
        "client_submission_id": client_submission_id or str(uuid.uuid4()),
        "rationale": rationale,
        "error": error,
    }


class AdjudicationForm(forms.Form):
    """What the page sends besides the picks: the adjudicator's edits (own values, spans
    removed and added, final claims: annotator.adjudication.final), the client's id for
    the final label, the rationale (the service refuses an empty one) and the page's own
    state, given back after a refusal."""

    edits = TextField(required=False, strip=False)
    client_submission_id = forms.UUIDField()
    rationale = TextField(required=False, strip=False, max_length=20_000)
    page_state = TextField(required=False, strip=False, max_length=2_000_000)

    def clean_edits(self) -> dict[str, Any]:
        raw = self.cleaned_data.get("edits") or ""
        return _json_object(raw, "edits") if raw else {}

    def page_state_value(self) -> dict[str, Any] | None:
        try:
            value = loads_checked(self.data.get("page_state") or "null")
        except ContractError:  # the page's own state, given back: unreadable means none
            return None
        return value if isinstance(value, dict) else None


def _render_unit(request: HttpRequest, context: dict[str, Any], status: int = 200) -> HttpResponse:
    """The side-by-side page; its labels count as seen (blinding) before it is sent."""
    if context["shows_labels"]:
        labels_seen_record(user=request.user, units=[context["unit"].pk], via=SightVia.ADJUDICATION)
    return render(request, "annotator/adjudicate_fields.html", context, status=status)


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
    except PickError as exc:
        raise AdjudicationRefused(exc.message, code="pick_missing") from None
    except EditError as exc:
        raise AdjudicationRefused(exc.message, code="bad_edits") from None
    return annotation_from_view(engine, view)


@login_required
@require_http_methods(["GET", "POST"])
def adjudication_unit(request: HttpRequest, unit_id: int) -> HttpResponse:
    """Any codebook: the labels side by side per field, one pick per field (radios, no
    script needed), the adjudicator's own values and evidence (the page's script), the
    final record built on the server from the picks."""
    try:
        unit = unit_get_for_adjudicator(user=request.user, unit_id=unit_id)
    except PermissionDenied as exc:
        return _refused_page(request, exc)
    if request.method == "GET":
        return _render_unit(request, _fields_context(unit, reader=request.user))
    picked = {
        key.removeprefix("pick-"): value
        for key, value in request.POST.items()
        if key.startswith("pick-") and value
    }
    form = AdjudicationForm(request.POST)
    rationale = request.POST.get("rationale", "")

    def refused(code: str, sentence: str) -> HttpResponse:
        context = _fields_context(
            unit,
            reader=request.user,
            picked=picked,
            restored=form.page_state_value(),
            rationale=rationale,
            error=(code, sentence),
            client_submission_id=request.POST.get("client_submission_id") or None,
        )
        return _render_unit(request, context, status=400)

    if not form.is_valid():
        name, problems = next(iter(form.errors.as_data().items()))
        error = problems[0]
        return refused(error.code or "invalid", f"{name}: {' '.join(error.messages)}")
    try:
        body = adjudication_final_body(unit=unit, picks=picked, edits=form.cleaned_data["edits"])
        label = adjudication_submit(
            unit=unit,
            adjudicator=request.user,
            annotation=body,
            rationale=form.cleaned_data["rationale"],
            client_submission_id=form.cleaned_data["client_submission_id"],
        )
    except (AdjudicationRefused, LabelRefused, AnnotationError, ContractError) as exc:
        return refused(exc.code, exc.message)
    messages.success(
        request,
        f"Unit {unit.pk} adjudicated: final record {label.record_digest[:12]}… stored with "
        f"{len(label.parents)} parents.",
    )
    return redirect("adjudication-queue", slug=unit.study.slug)
