"""Pages for adjudicators: the queue of disputed units and the side-by-side page.

Thin: access from ``annotator.access``; the rules (who may adjudicate what, the rationale,
the record contract) live in ``annotator.adjudication.services.adjudication_submit``, which these
pages call and whose refusals they show. Adjudicators see every independent label of the
units they adjudicate, named by pseudonym; never a username.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Count, F, QuerySet
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotator.access import study_get_for_adjudicator, unit_get_for_adjudicator
from annotator.adjudication.picks import differing_fields, documents_of, item_key
from annotator.adjudication.services import (
    AdjudicationRefused,
    adjudication_submit,
    adjudication_submit_picks,
    independent_heads,
)
from annotator.errors import AnnotationError
from annotator.labelling.fields_page import (
    codebook_fields_for_page,
    document_cards,
    is_fields_codebook,
    panes_template,
    span_document,
    spans_of,
    value_text,
)
from annotator.labelling.forms import (
    SubmitForm,
    TextField,
    annotation_for_page,
    codebook_for_page,
)
from annotator.labelling.models import Assignment, Label, LabelKind, SightVia
from annotator.labelling.pair_page import annotation_seen, pair_sides_shown
from annotator.labelling.services import (
    LabelRefused,
    _annotation_from_input,
    labels_seen_record,
    pair_sides_draw,
)
from audit.archive.models import CodebookUnit, Study, Unit, UnitState
from audit.archive.records import UnitContent, unit_content
from audit.contract.claim_alignment import claims_aligned
from audit.contract.engine import ABSENT, Engine, engine_of, engine_values, field_value, value_at
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


# --- the side-by-side page ------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """What one column says about one field: a text, or a list (spans, claims)."""

    text: str = ""
    items: list[dict[str, Any]] = field(default_factory=list)
    missing: bool = False


@dataclass(frozen=True)
class Row:
    """One field of the annotation across the columns. ``kind`` says which input the
    adjudicator's own value takes; spans rows follow their judgment's pick."""

    field: str
    label: str
    kind: str
    cells: list[Cell]
    differs: bool
    final: Cell | None = None
    follows: str | None = None  # for spans rows: the judgment field they belong to

    @property
    def pickable(self) -> bool:
        return self.kind not in {"spans", "note"}


def _judgment_text(value: Any) -> str:
    if value is None:
        return "U"
    return str(value)


def _verdict_text(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    return "unknown"


def _differs(values: list[Any]) -> bool:
    return len({json.dumps(value, sort_keys=True) for value in values}) > 1


def _span_key(span: dict[str, Any]) -> tuple:
    return (span.get("snapshot"), span.get("start"), span.get("end"))


def _spans_cells(lists: list[list[dict[str, Any]]]) -> tuple[list[Cell], bool]:
    keys = [{_span_key(span) for span in spans} for spans in lists]
    shared = set.intersection(*keys) if keys else set()
    cells = [
        Cell(
            text=f"{len(spans)} span{'s' if len(spans) != 1 else ''}",
            items=[
                {**span, "only_here": _span_key(span) not in shared}
                for span in sorted(spans, key=_span_key)
            ],
        )
        for spans in lists
    ]
    return cells, len({frozenset(k) for k in keys}) > 1


def _value_cell(annotation: dict[str, Any] | None, get: Any, show: Any) -> tuple[Cell, Any]:
    if annotation is None:
        return Cell(), None
    try:
        value = get(annotation)
    except (KeyError, TypeError, AttributeError):
        return Cell(text="not answered", missing=True), None
    return Cell(text=show(value)), value


def _note_row(annotations: list[dict[str, Any]]) -> Row:
    """Each annotator's own rationale: shown to the adjudicator, never taken over."""
    cells = [
        Cell(text=str(a.get("rationale") or "—"), missing=not a.get("rationale"))
        for a in annotations
    ]
    return Row("note", "Annotator’s rationale", "note", cells, differs=False)


def _engine_rows(
    engine: Engine,
    annotations: list[dict[str, Any]],
    final: dict[str, Any] | None,
) -> list[Row]:
    """One row per compared field of the codebook (audit.contract.engine), in codebook
    order, each judgment with a span row when its field cites evidence; then the evidence
    dimensions and the annotators' rationales. ``annotations`` and ``final`` are stored
    annotations. Rows are named as the page's script knows them: ``pred-I`` for an input
    of R_O, ``verdict-cited``, ``evidence-d_Q``, else the field's code."""
    rows: list[Row] = []
    predicates = {code for d in engine.derived if d.rule == "R_O" for code in d.inputs}
    views = [engine_values(engine, annotation) for annotation in annotations]
    final_view = engine_values(engine, final) if final is not None else None

    def value_cell(annotation: dict[str, Any], code: str, show: Any) -> tuple[Cell, Any]:
        value = value_at(annotation, engine.paths[code])
        if value is ABSENT:
            return Cell(text="not answered", missing=True), None
        reason = engine.reason_paths.get(code)
        items = [] if reason is None else [{"reason": field_value_reason(annotation, reason)}]
        return Cell(text=show(value), items=items), value

    def add(name: str, label: str, kind: str, code: str, show: Any) -> None:
        pairs = [value_cell(annotation, code, show) for annotation in annotations]
        final_cell = value_cell(final, code, show)[0] if final is not None else None
        differs = _differs([value for _, value in pairs])
        rows.append(Row(name, label, kind, [cell for cell, _ in pairs], differs, final_cell))

    def spans_for(view: dict[str, Any], code: str) -> list[dict[str, Any]]:
        return [
            {k: v for k, v in span.items() if k != "field"}
            for span in view["spans"]
            if span.get("field") == code
        ]

    def add_spans(code: str, label: str, follows: str) -> None:
        cells, differs = _spans_cells([spans_for(view, code) for view in views])
        final_cell = None
        if final_view is not None:
            final_cell = _spans_cells([spans_for(final_view, code)])[0][0]
        name = f"Spans for {label}"
        rows.append(Row(f"spans-{code}", name, "spans", cells, differs, final_cell, follows))

    for item in engine.value_fields:
        code = item.code
        if item.type == "verdict":
            add(f"verdict-{code}", item.label, "verdict", code, _verdict_text)
            continue
        if item.type == "choice":
            labels = {option.code: option.label for option in item.options}
            add(code, item.label, "role", code, lambda v, labels=labels: labels.get(v, str(v)))
            continue
        predicate = code in predicates
        name = f"pred-{code}" if predicate else code
        add(
            name,
            f"{code} · {item.label}" if predicate else item.label,
            "judgment",
            code,
            _judgment_text,
        )
        if item.evidence != "none":
            add_spans(code, code if predicate else item.label, name)
    for item in engine.dimensions:
        add(
            f"evidence-{item.code}",
            item.label,
            "evidence",
            item.code,
            lambda value: "—" if value is None else f"{float(value):g}",
        )
    rows.append(_note_row(annotations))
    return rows


def field_value_reason(annotation: dict[str, Any], path: tuple[str, ...]) -> str:
    reason = value_at(annotation, path)
    return reason if isinstance(reason, str) and reason else ""


def _claim_item(claim: dict[str, Any], sources: dict[str, str]) -> dict[str, Any]:
    quote = claim.get("quote_span") or None
    return {
        "id": claim.get("id"),
        "span": claim.get("span") or {},
        "quote_span": quote,
        "source": sources.get(claim.get("source_digest") or "", "no source"),
        "supported": _verdict_text(claim.get("supported")),
        "accurate": _verdict_text(claim.get("accurate")),
        "kind": claim.get("kind"),
        "reason": claim.get("reason") or "",
    }


#: Why an aligned row of claims differs, in words.
CLAIM_ROW_WHY = {
    "unmatched": "no matching claim on every side",
    "verdicts": "verdicts differ",
}


def _claim_rows(claims: list[list[Any]], sources: dict[str, str]) -> list[dict[str, Any]]:
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
                    {**_claim_item(lists[column][index], sources), "key": f"{column}:{index}"}
                    for index in indexes
                ]
                for column, indexes in enumerate(row.members)
            ],
        }
        for row in claims_aligned(lists)
    ]


def _texts(content: UnitContent) -> tuple[dict[str, str], list[dict[str, Any]]]:
    texts = {"query": content.query["text"], "answer": content.answer["text"]}
    if content.codebook_unit == CodebookUnit.TUPLE:
        texts["source"] = content.source["text"]
        return texts, []
    sources = [
        {
            "index": index,
            "digest": source["digest"],
            "label": f"Source {index + 1}",
            "url": source["canonical_url"] or source["original_url"],
            "text": source["text"],
            "rank": source.get("rank"),
            "collected_at": source.get("collected_at"),
        }
        for index, source in enumerate(content.sources)
    ]
    return texts, sources


def _page_context(
    unit: Unit,
    *,
    client_submission_id: str | None = None,
    restored: dict[str, Any] | None = None,
    rationale: str = "",
    error: tuple[str, str] | None = None,
) -> dict[str, Any]:
    study = unit.study
    codebook = codebook_for_page(study.codebook.definition)
    content = unit_content(unit=unit)
    texts, sources = _texts(content)
    is_tuple = content.codebook_unit == CodebookUnit.TUPLE
    shows_labels = unit.state in (UnitState.DISPUTED, UnitState.ADJUDICATED)
    heads = independent_heads(unit=unit) if shows_labels else []
    final = None
    if unit.state == UnitState.ADJUDICATED:
        final = Label.objects.filter(unit=unit, kind=LabelKind.ADJUDICATED).order_by("-id").first()
    columns = [
        {
            "index": index,
            "pseudonym": head.annotation.get("annotator") or f"annotator {index + 1}",
            "record_digest": head.record_digest,
            "revision": head.revision,
            "created_at": head.created_at,
            "annotation": annotation_for_page(head.annotation),
        }
        for index, head in enumerate(heads)
    ]
    final_annotation = annotation_for_page(final.annotation) if final is not None else None
    source_names = {source["digest"]: source["label"] for source in sources}
    engine = engine_of(study.codebook.definition)
    claim_rows: list[dict[str, Any]] = []
    rows: list[Row] = []
    if columns:
        stored = [head.annotation for head in heads]
        rows = _engine_rows(engine, stored, final.annotation if final is not None else None)
        for claims in engine.claims_fields:
            lists = [field_value(engine, annotation, claims.code) or [] for annotation in stored]
            claim_rows = _claim_rows(lists, source_names)
    pseudonyms = {column["record_digest"]: column["pseudonym"] for column in columns}
    editable = unit.state == UnitState.DISPUTED and bool(columns)
    page_data = {
        "unit": content.codebook_unit,
        "unit_id": unit.pk,
        "editable": editable,
        "texts": texts,
        "sources": [{k: s[k] for k in ("digest", "label", "text")} for s in sources],
        "codebook": codebook,
        "columns": [{"pseudonym": c["pseudonym"], "annotation": c["annotation"]} for c in columns],
        "final": final_annotation,
        "restored": restored,
        "span_judgments": [f.code for f in engine.value_fields if f.evidence != "none"],
    }
    return {
        "study": study,
        "unit": unit,
        "codebook": codebook,
        "is_tuple": is_tuple,
        "shows_labels": bool(columns) or final is not None,
        "query": content.query,
        "answer": content.answer,
        "source": content.sources[0] if is_tuple else None,
        "sources": sources,
        "documents": document_cards(codebook["fields"], content.documents)
        if content.codebook_unit == CodebookUnit.QUERY_DOCUMENTS
        else [],
        "columns": columns,
        "rows": rows,
        "claim_rows": claim_rows,
        "final_claims": [
            _claim_item(claim, source_names)
            for claim in (final_annotation or {}).get("claims") or []
            if isinstance(claim, dict)
        ],
        "final": final,
        "final_annotation": final_annotation,
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


class AdjudicationForm(SubmitForm):
    """The final annotation (JSON), the client's id for it, the rationale (the service
    refuses an empty one) and the page's own state, given back after a refusal."""

    rationale = TextField(required=False, strip=False, max_length=20_000)
    page_state = TextField(required=False, strip=False, max_length=2_000_000)

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
    return render(request, "annotator/adjudicate_unit.html", context, status=status)


@login_required
@require_http_methods(["GET", "POST"])
def adjudication_unit(request: HttpRequest, unit_id: int) -> HttpResponse:
    try:
        unit = unit_get_for_adjudicator(user=request.user, unit_id=unit_id)
    except PermissionDenied as exc:
        return _refused_page(request, exc)
    if is_fields_codebook(unit.study.codebook.definition):
        return _fields_unit(request, unit)
    if request.method == "GET":
        return _render_unit(request, _page_context(unit))

    form = AdjudicationForm(request.POST)
    submission_id = request.POST.get("client_submission_id") or None

    def refused(code: str, sentence: str) -> HttpResponse:
        context = _page_context(
            unit,
            client_submission_id=submission_id,
            restored=form.page_state_value(),
            rationale=request.POST.get("rationale", ""),
            error=(code, sentence),
        )
        return _render_unit(request, context, status=400)

    if not form.is_valid():
        problem = next(iter(form.errors.as_data().items()))
        error = problem[1][0]
        return refused(error.code or "invalid", f"{problem[0]}: {' '.join(error.messages)}")
    study = unit.study
    annotation = _annotation_from_input(
        study=study,
        data=form.cleaned_data["annotation"],
        pseudonym="",  # the service names the adjudicator
        kind=LabelKind.ADJUDICATED.value,
    )
    try:
        label = adjudication_submit(
            unit=unit,
            adjudicator=request.user,
            annotation=annotation,
            rationale=form.cleaned_data["rationale"],
            client_submission_id=form.cleaned_data["client_submission_id"],
        )
    except (AdjudicationRefused, LabelRefused, AnnotationError) as exc:
        return refused(exc.code, exc.message)
    messages.success(
        request,
        f"Unit {unit.pk} adjudicated: final record {label.record_digest[:12]}… stored with "
        f"{len(label.parents)} parents.",
    )
    return redirect("adjudication-queue", slug=study.slug)


# --- codebooks of format 2: the page from the codebook's fields -------------------------


def _fields_cell(
    field: dict[str, Any], annotation: dict[str, Any], document: int | None = None
) -> dict[str, Any]:
    """One annotation's value of a field (on ``document`` for a per-document field), with
    its reason and evidence spans."""
    part: Any = annotation
    spans = spans_of(annotation, field["code"])
    if document is not None:
        entries = documents_of(annotation)
        part = entries[document] if document < len(entries) else {}
        spans = [span for span in spans if span_document(span) == document]
    values = part.get("values")
    values = values if isinstance(values, dict) else {}
    reasons = part.get("reasons")
    reasons = reasons if isinstance(reasons, dict) else {}
    code = field["code"]
    present = code in values or field["type"] in ("links", "groups")
    return {
        "text": value_text(field, values.get(code), present=code in values),
        "missing": not present,
        "reason": reasons.get(code) or "",
        "spans": spans,
    }


def _fields_context(
    unit: Unit,
    *,
    reader: Any,
    picked: dict[str, str] | None = None,
    rationale: str = "",
    error: tuple[str, str] | None = None,
    client_submission_id: str | None = None,
) -> dict[str, Any]:
    study = unit.study
    definition = study.codebook.definition
    codebook = codebook_fields_for_page(definition)
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
            "annotation": annotation_for_page(annotation_seen(definition, head.annotation, sides))
            or {},
        }
        for index, head in enumerate(heads)
    ]
    final_seen = annotation_seen(definition, final.annotation, sides) if final else None
    annotations = [column["annotation"] for column in columns]
    differing = differing_fields(definition, annotations) if annotations else set()
    picked = picked or {}
    unpicked = error is not None and error[0] == "pick_missing"
    # One row per unit-level field, then (query_documents) one per document and
    # per-document field, keyed as picks key them ("code:N").
    items: list[tuple[str, str, dict[str, Any], int | None]] = [
        (entry["code"], entry["label"], entry, None)
        for entry in codebook["fields"]
        if entry["placement"] != "document"
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
            cell = _fields_cell(entry, column["annotation"], document)
            digest = column["record_digest"]
            if code in picked:
                checked = picked[code] == digest
            else:
                checked = code not in differing and column["index"] == 0
            cells.append({**cell, "index": column["index"], "digest": digest, "checked": checked})
        rows.append(
            {
                "code": code,
                "label": label,
                "type": entry["type"],
                "document": document,
                "differs": code in differing,
                "cells": cells,
                "problem": "Pick one of the labels."
                if unpicked and code in differing and code not in picked
                else "",
                "final": _fields_cell(entry, final_seen, document)
                if final_seen is not None
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
        "final": final,
        "parents": [
            {"digest": digest, "pseudonym": pseudonyms.get(digest)}
            for digest in (final.parents if final is not None else [])
        ],
        "editable": unit.state == UnitState.DISPUTED and bool(columns),
        "client_submission_id": client_submission_id or str(uuid.uuid4()),
        "rationale": rationale,
        "error": error,
    }


def _render_fields(
    request: HttpRequest, context: dict[str, Any], status: int = 200
) -> HttpResponse:
    if context["shows_labels"]:
        labels_seen_record(user=request.user, units=[context["unit"].pk], via=SightVia.ADJUDICATION)
    return render(request, "annotator/adjudicate_fields.html", context, status=status)


def _fields_unit(request: HttpRequest, unit: Unit) -> HttpResponse:
    """A format-2 unit: the labels side by side per field, one pick per field (radios, no
    script needed), the final record built by the service from the picks."""
    if request.method == "GET":
        return _render_fields(request, _fields_context(unit, reader=request.user))
    picked = {
        key.removeprefix("pick-"): value
        for key, value in request.POST.items()
        if key.startswith("pick-") and value
    }
    rationale = request.POST.get("rationale", "")
    submission_id = request.POST.get("client_submission_id") or ""
    try:
        uuid.UUID(submission_id)
    except ValueError:
        context = _fields_context(
            unit,
            reader=request.user,
            picked=picked,
            rationale=rationale,
            error=("invalid_submission_id", "client_submission_id must be a UUID"),
        )
        return _render_fields(request, context, status=400)
    try:
        label = adjudication_submit_picks(
            unit=unit,
            adjudicator=request.user,
            picks=picked,
            rationale=rationale,
            client_submission_id=submission_id,
        )
    except (AdjudicationRefused, LabelRefused, AnnotationError) as exc:
        context = _fields_context(
            unit,
            reader=request.user,
            picked=picked,
            rationale=rationale,
            error=(exc.code, exc.message),
            client_submission_id=submission_id,
        )
        return _render_fields(request, context, status=400)
    messages.success(
        request,
        f"Unit {unit.pk} adjudicated: final record {label.record_digest[:12]}… stored with "
        f"{len(label.parents)} parents.",
    )
    return redirect("adjudication-queue", slug=unit.study.slug)
