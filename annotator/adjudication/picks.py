"""Agreement, consensus and the adjudicator's picks for format-2 codebooks: pure, no Django.

Driven by the codebook's ``fields`` only. Two annotators agree on a unit when every
field whose value is compared (``choice``, ``grade``, ``verdict``, ``number``, ``date``)
has the same value (U equal to U, a missing value equal only to a missing one). Reasons,
free texts and evidence spans may differ between agreeing annotators, as in the first two
codebooks.

A ``query_documents`` codebook compares more: each per-document field (``placement:
document``) once per document, under the item key ``code:N`` (N the document's position,
from 0), and its set-level relations (``links``, ``groups``) as sets (the order in which an
annotator listed links, groups or a group's members never makes a disagreement). Picks use
the same keys: one per unit-level field, one per (field, document).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from audit.contract.claim_alignment import claims_consensus
from audit.contract.engine import Engine

COMPARED_TYPES = frozenset({"choice", "grade", "verdict", "number", "date"})
#: Set-level fields of a query_documents codebook, compared as sets of relations.
RELATION_TYPES = frozenset({"links", "groups"})
#: Stands for "not answered" in a comparison (never equal to U, which is ``None``).
MISSING = ("missing",)


class PickError(ValueError):
    """A pick that names no field or no independent label; ``field`` names the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field
        self.message = message


def _fields(definition: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [f for f in definition.get("fields") or () if isinstance(f, Mapping)]


def _placement(field: Mapping[str, Any]) -> str:
    return str(field.get("placement") or "unit")


def compared_fields(definition: Mapping[str, Any]) -> list[str]:
    """The codes of the unit-level fields whose values decide agreement (set-level
    relations included), in codebook order; per-document fields are
    :func:`document_fields`."""
    return [
        str(f.get("code"))
        for f in _fields(definition)
        if _placement(f) != "document"
        and (f.get("type") in COMPARED_TYPES or f.get("type") in RELATION_TYPES)
    ]


def document_fields(definition: Mapping[str, Any]) -> list[str]:
    """The codes of the per-document fields whose values decide agreement."""
    return [
        str(f.get("code"))
        for f in _fields(definition)
        if _placement(f) == "document" and f.get("type") in COMPARED_TYPES
    ]


def item_key(code: str, document: int | None = None) -> str:
    """The key of a compared item (and of its pick): a field's code, or ``code:N`` for a
    per-document field on document N (from 0)."""
    return code if document is None else f"{code}:{document}"


def _values(annotation: Mapping[str, Any]) -> Mapping[str, Any]:
    values = annotation.get("values")
    return values if isinstance(values, Mapping) else {}


def documents_of(annotation: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The per-document entries of an annotation (``{values, reasons}`` each), forgiving:
    an entry that is not an object reads as empty."""
    documents = annotation.get("documents")
    if not isinstance(documents, list):
        return []
    return [entry if isinstance(entry, Mapping) else {} for entry in documents]


def document_count(annotations: Sequence[Mapping[str, Any]]) -> int:
    """How many documents the annotations describe (the longest list: all are equally
    long for a sound unit)."""
    return max((len(documents_of(a)) for a in annotations), default=0)


def _relation(kind: Any, value: Any) -> Any:
    """A links or groups value as a comparable set; a malformed one stays as it is."""
    if not isinstance(value, list):
        return value
    try:
        if kind == "links":
            return tuple(sorted({(int(e["document"]), int(e["by"])) for e in value}))
        return tuple(
            sorted(
                {(int(e["representative"]), tuple(sorted(map(int, e["members"])))) for e in value}
            )
        )
    except (TypeError, KeyError, ValueError):
        return repr(value)


def value_of(
    annotation: Mapping[str, Any], code: str, document: int | None = None, kind: Any = None
) -> Any:
    """A field's value (:data:`MISSING` when not answered), on ``document`` for a
    per-document field; a relation (``kind`` links or groups) as a set."""
    if document is None:
        values = _values(annotation)
    else:
        documents = documents_of(annotation)
        values = _values(documents[document]) if document < len(documents) else {}
    if kind in RELATION_TYPES:
        # No relation listed and the field left out say the same: none.
        return _relation(kind, values.get(code, []))
    if code not in values:
        return MISSING
    return values[code]


def _same(a: Any, b: Any) -> bool:
    # true == 1 in Python; a verdict and a grade are never the same value.
    return type(a) is type(b) and a == b


def compared_items(
    definition: Mapping[str, Any], n_documents: int
) -> list[tuple[str, str, int | None, Any]]:
    """``(key, code, document, type)`` of every compared item: unit-level fields first,
    then each per-document field of each of ``n_documents`` documents, document by
    document."""
    types = {str(f.get("code")): f.get("type") for f in _fields(definition)}
    items: list[tuple[str, str, int | None, Any]] = [
        (code, code, None, types[code]) for code in compared_fields(definition)
    ]
    per_document = document_fields(definition)
    for document in range(n_documents):
        items.extend(
            (item_key(code, document), code, document, types[code]) for code in per_document
        )
    return items


def judgments_key(definition: Mapping[str, Any], annotation: Mapping[str, Any]) -> tuple:
    """What two agreeing annotations share: the compared items' values (typed, so that
    ``true`` and ``1`` differ), per-document fields on each document."""
    return tuple(
        (type(value).__name__, value if value is not MISSING else "missing")
        for value in (
            value_of(annotation, code, document, kind)
            for _, code, document, kind in compared_items(definition, len(documents_of(annotation)))
        )
    )


def differing_fields(
    definition: Mapping[str, Any], annotations: Sequence[Mapping[str, Any]]
) -> set[str]:
    """The keys of the compared items (:func:`item_key`) on which the annotations do not
    all agree."""
    out = set()
    for key, code, document, kind in compared_items(definition, document_count(annotations)):
        values = [value_of(a, code, document, kind) for a in annotations]
        if any(not _same(values[0], v) for v in values[1:]):
            out.add(key)
    return out


def _spans(annotation: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    spans = annotation.get("spans")
    return [s for s in (spans if isinstance(spans, list) else []) if isinstance(s, Mapping)]


def _span_key(span: Mapping[str, Any]) -> tuple:
    return (
        str(span.get("field")),
        str(span.get("snapshot")),
        span.get("start") if isinstance(span.get("start"), int) else -1,
        span.get("end") if isinstance(span.get("end"), int) else -1,
    )


def _joined_reasons(
    fields: Sequence[Mapping[str, Any]], reasons_of: Sequence[Any]
) -> dict[str, str]:
    reasons: dict[str, str] = {}
    for field in fields:
        code = str(field.get("code"))
        given = [
            str(r[code])
            for r in reasons_of
            if isinstance(r, Mapping) and isinstance(r.get(code), str) and r.get(code)
        ]
        if given:
            reasons[code] = " | ".join(given)
    return reasons


def _is_documents(definition: Mapping[str, Any]) -> bool:
    return definition.get("unit") == "query_documents"


def consensus_fields(
    definition: Mapping[str, Any], annotations: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The consensus body of agreeing annotations: the first one's values (equal on
    every compared field; free texts from the first), every annotator's reasons joined with
    " | ", every evidence span once (sorted by field, snapshot, offsets); for a
    query_documents codebook the same per document."""
    first = annotations[0]
    fields = _fields(definition)
    unit_fields = [f for f in fields if _placement(f) != "document"]
    values = dict(_values(first))
    reasons = _joined_reasons(unit_fields, [a.get("reasons") for a in annotations])
    merged: dict[tuple, Mapping[str, Any]] = {}
    for annotation in annotations:
        for span in _spans(annotation):
            merged.setdefault(_span_key(span), span)
    body: dict[str, Any] = {
        "values": values,
        "reasons": reasons,
        "spans": [dict(merged[key]) for key in sorted(merged)],
    }
    if _is_documents(definition):
        per_document = [f for f in fields if _placement(f) == "document"]
        body["documents"] = [
            {
                "values": dict(_values(entry)),
                "reasons": _joined_reasons(
                    per_document,
                    [
                        documents_of(a)[index].get("reasons")
                        for a in annotations
                        if index < len(documents_of(a))
                    ],
                ),
            }
            for index, entry in enumerate(documents_of(first))
        ]
    return body


def consensus_view(engine: Engine, views: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The consensus of agreeing annotations in the engine's terms, for every codebook:
    ``views`` are their engine views (audit.contract.engine.engine_values), in the order
    whose reasons are joined (:attr:`Engine.consensus_order` says which the codebook keeps).

    :func:`consensus_fields` of the views (the first view's values, reasons joined with
    " | ", every evidence span once, per document the same), then: each claims field the
    aligned claims of all (audit.contract.claim_alignment.claims_consensus, decided by
    content), and each evidence dimension (format 1) the mean of the values. Views that
    all have no values (a failed answer) give a view without values."""
    if not views:
        raise ValueError("a consensus needs at least one view")
    if all(view.get("values") is None for view in views):
        return {"values": None, "reasons": {}, "spans": []}
    body = consensus_fields(engine.definition, views)
    values = body["values"]
    for field in engine.claims_fields:
        if any(field.code in _values(view) for view in views):
            values[field.code] = claims_consensus(
                [_values(view).get(field.code) or [] for view in views]
            )
    for dimension in engine.dimensions:
        if dimension.code in values:
            values[dimension.code] = fmean(_values(view)[dimension.code] for view in views)
    return body


def _document_of_span(span: Mapping[str, Any]) -> int:
    """The document a span of a per-document field is about: the one it cites (a span in
    the query goes with the first document's pick)."""
    snapshot = str(span.get("snapshot") or "")
    if snapshot.startswith("document:") and snapshot[9:].isdigit():
        return int(snapshot[9:])
    return 0


def final_from_picks(
    definition: Mapping[str, Any],
    annotations: Sequence[Mapping[str, Any]],
    picks: Mapping[str, int],
) -> dict[str, Any]:
    """The adjudicated body: for each field, the value, reason and evidence spans of the
    independent annotation ``picks[key]`` (an index into ``annotations``; keys as
    :func:`item_key`: a per-document field is picked document by document, and its spans
    go with the pick of the document they cite). An item not picked takes the first
    annotation's when all agree on it, else it is refused."""
    if not annotations:
        raise PickError("", "there is no independent label to pick from")
    differing = differing_fields(definition, annotations)

    def chosen(key: str, label: str) -> Mapping[str, Any]:
        index = picks.get(key)
        if index is None:
            if key in differing:
                raise PickError(key, f"{label}: the labels differ; pick one of them")
            index = 0
        if not isinstance(index, int) or not 0 <= index < len(annotations):
            raise PickError(key, f"{label}: pick one of the {len(annotations)} labels")
        return annotations[index]

    values: dict[str, Any] = {}
    reasons: dict[str, Any] = {}
    spans: list[dict[str, Any]] = []
    n_documents = document_count(annotations) if _is_documents(definition) else 0
    documents: list[dict[str, Any]] = [{"values": {}, "reasons": {}} for _ in range(n_documents)]
    for field in _fields(definition):
        code = str(field.get("code"))
        label = str(field.get("label") or code)
        if _placement(field) == "document":
            for document in range(n_documents):
                source = chosen(item_key(code, document), f"Document {document + 1} · {label}")
                entries = documents_of(source)
                entry = entries[document] if document < len(entries) else {}
                source_values = _values(entry)
                if code in source_values:
                    documents[document]["values"][code] = source_values[code]
                source_reasons = entry.get("reasons")
                if isinstance(source_reasons, Mapping) and code in source_reasons:
                    documents[document]["reasons"][code] = source_reasons[code]
                spans.extend(
                    dict(s)
                    for s in _spans(source)
                    if s.get("field") == code and _document_of_span(s) == document
                )
            continue
        source = chosen(code, label)
        source_values = _values(source)
        if code in source_values:
            values[code] = source_values[code]
        source_reasons = source.get("reasons")
        if isinstance(source_reasons, Mapping) and code in source_reasons:
            reasons[code] = source_reasons[code]
        spans.extend(dict(s) for s in _spans(source) if s.get("field") == code)
    body: dict[str, Any] = {"values": values, "reasons": reasons, "spans": spans}
    if _is_documents(definition):
        body["documents"] = documents
    return body
