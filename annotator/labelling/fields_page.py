"""What the pages show of a codebook: its fields as form controls, an annotation's values
as text, and the contract's problems attached to the field they name.

Driven only by the codebook's engine fields (``audit.contract.engine.engine_of``: a
format-2 codebook's ``fields`` as written, a format-1 codebook's judgments, evidence
dimensions and claims as the adapter describes them; docs/formats.md): no field code,
codebook name or unit kind is known here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from audit.contract.codebook import Codebook
from audit.contract.engine import ABSENT, Engine, engine_of, engine_values, value_at
from audit.contract.fields import Field

#: The value a radio group sends for U (the annotation stores ``null``).
U_VALUE = "U"
U_KEY = "u"
#: Field types answered by picking one option.
OPTION_TYPES = frozenset({"choice", "grade", "verdict"})
#: Set-level relations between the documents of a query_documents unit.
RELATION_TYPES = frozenset({"links", "groups"})
#: The claims editor's keys (static/js/claims.js), by action; a key the codebook gives a
#: field goes to that field instead.
CLAIM_ACTION_KEYS = {"add": "a", "quote": "q", "next": "n", "previous": "p", "verdicts": "v"}
#: The claim verdicts that have a key and a label of their own (any other claim verdict is
#: labelled by its code and reached with the mouse or Tab).
CLAIM_VERDICT_KEYS = {"supported": "s", "accurate": "c"}
CLAIM_VERDICT_LABELS = {"supported": "Supported by the quote", "accurate": "Accurate"}


def panes_template(unit_kind: str) -> str:
    """The template showing a unit's texts, by unit kind (``annotator/panes/<kind>.html``):
    a new unit kind plugs in with its own panes, naming its snapshots as spans name them."""
    return f"annotator/panes/{unit_kind}.html"


def _is_bare_binary(field: Field) -> bool:
    """A 0/1 grade whose options have no names, definitions or keys of their own (format
    1's predicates and passage support): shown as "1 yes" and "0 no", keys 1 and 0."""
    return (
        field.type == "grade"
        and sorted(option.code for option in field.options) == [0, 1]
        and all(
            option.label == str(option.code) and not option.definition and not option.key
            for option in field.options
        )
    )


def _option_rows(field: Field) -> list[dict[str, Any]]:
    if _is_bare_binary(field):
        return [
            {"value": "1", "label": "yes", "text": "1 yes", "definition": "", "key": "1"},
            {"value": "0", "label": "no", "text": "0 no", "definition": "", "key": "0"},
        ]
    if field.type == "verdict":
        return [
            {"value": "true", "label": "true", "text": "true", "definition": "", "key": "1"},
            {"value": "false", "label": "false", "text": "false", "definition": "", "key": "0"},
        ]
    rows = []
    for option in field.options:
        label, definition = option.label, option.definition
        if field.type == "grade":
            # A grade's anchor is its definition; without a label of its own the anchor
            # names it. It reads as its number and its name ("2 Civil").
            if label == str(option.code) and definition:
                label, definition = definition, ""
            text = f"{option.code} {label}"
        else:
            text = label
        rows.append(
            {
                "value": str(option.code),
                "label": label,
                "text": text,
                "definition": definition,
                "key": option.key or "",
            }
        )
    return rows


def _range_step(field: Field) -> float | None:
    if field.type != "number":
        return None
    if field.step is not None:
        return field.step
    low = 0.0 if field.minimum is None else field.minimum
    high = 1.0 if field.maximum is None else field.maximum
    return round((high - low) / 20, 12) or None


def claims_widget(
    field: Field,
    *,
    format_version: int,
    taken: Iterable[str] = (),
    kind_labels: Mapping[str, str] | None = None,
    reason_required: bool | None = None,
) -> dict[str, Any]:
    """How the claims editor (static/js/claims.js) edits a ``claims`` field: its kinds, its
    claim verdicts, the claim shape it writes and its keys.

    A format-2 claim cites its source by snapshot name (``source``: ``source:N``) and has
    one key per claim verdict; a format-1 claim (the engine's claims field of a format-1
    answer codebook) cites it by digest (``source_digest``) and keeps ``supported`` and
    ``accurate``, and its answer-level ``supported`` verdict must equal the claims' summary
    (the form warns; the server refuses a mismatch). ``taken`` are the keys the codebook
    gives fields: an editor key among them is left to the field; ``kind_labels`` name the
    kinds (format 2 names them by code); ``reason_required`` says whether a verifiable
    claim needs a reason (default: as its format does: format 1 requires one unless the
    codebook's ``reasons`` are optional, format 2 leaves it to people)."""
    taken = {key.lower() for key in taken if key}
    labels = kind_labels or {}
    format1 = format_version == 1
    return {
        "shape": "format1" if format1 else "format2",
        "source_key": "source_digest" if format1 else "source",
        "kinds": [{"key": kind, "label": labels.get(kind, kind)} for kind in field.claim_kinds],
        "verdicts": [
            {
                "code": code,
                "label": CLAIM_VERDICT_LABELS.get(code, code),
                "key": ""
                if CLAIM_VERDICT_KEYS.get(code, "") in taken
                else CLAIM_VERDICT_KEYS.get(code, ""),
            }
            for code in field.claim_verdicts
        ],
        # The "supported" summary of the claims, shown as the claims change.
        "summary": "supported" in field.claim_verdicts,
        # Format 1 refuses an answer-level "supported" that differs from the summary.
        "summary_verdict": "supported" if format1 and "supported" in field.claim_verdicts else "",
        "reason_required": format1 if reason_required is None else reason_required,
        "keys": {
            action: ("" if key in taken else key) for action, key in CLAIM_ACTION_KEYS.items()
        },
    }


def fields_for_page(
    codebook: Codebook | Engine | _Dimensions, *, kind_labels: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Each field of a parsed format-2 codebook (or of a codebook's engine, format 1 too)
    as the form renders it, in codebook order; ``kind_labels`` name the claim kinds of a
    claims field (format 1 has labels for them). An engine's evidence dimensions are not
    among them (:func:`dimensions_for_page`)."""
    fields = []
    taken = [field.key for field in codebook.fields if field.key]
    # Format 1 requires a reason on a verifiable claim when it requires one on its verdicts.
    claim_reasons = any(
        field.type == "verdict" and field.reason == "required" for field in codebook.fields
    )
    claims_seen = False
    for field in codebook.fields:
        options = _option_rows(field) if field.type in OPTION_TYPES else []
        if field.allow_u and field.type in OPTION_TYPES:
            options.append(
                {
                    "value": U_VALUE,
                    "label": "U unresolved",
                    "text": "U",
                    "definition": "",
                    "key": U_KEY,
                }
            )
        fields.append(
            {
                "code": field.code,
                "type": field.type,
                "label": field.label,
                # Where room is short (the evidence toolbar): a code of one or two
                # letters (format 1's I, A, M, D) names its field as the protocol does.
                "short": field.code if len(field.code) <= 2 else field.label,
                "definition": field.definition,
                "key": field.key or "",
                "allow_u": field.allow_u,
                "reason": field.reason,
                "evidence": field.evidence,
                "level": field.level,
                "required": field.required,
                "placement": field.placement,
                "options": options,
                "min": 0 if field.minimum is None else field.minimum,
                "max": 1 if field.maximum is None else field.maximum,
                "step": "any" if field.step is None else field.step,
                # The slider beside a number's input moves in twentieths of its range
                # unless the field has a step of its own.
                "range_step": _range_step(field),
            }
        )
        if field.type == "claims" and not claims_seen:
            # One claims editor per form (its elements have ids of their own).
            claims_seen = True
            fields[-1]["claims"] = claims_widget(
                field,
                format_version=codebook.format_version,
                taken=taken,
                kind_labels=kind_labels,
                reason_required=claim_reasons if codebook.format_version == 1 else None,
            )
    return fields


@dataclass(frozen=True)
class _Dimensions:
    """An engine's evidence dimensions, read as fields."""

    fields: tuple[Field, ...]
    format_version: int


def dimensions_for_page(engine: Engine) -> list[dict[str, Any]]:
    """A format-1 codebook's evidence dimensions as the form renders them: number fields
    (their weights are never on a page)."""
    return fields_for_page(_Dimensions(engine.dimensions, engine.format_version))


def _claim_kinds(definition: Mapping[str, Any]) -> list[dict[str, str]]:
    """The claim kinds a codebook names and defines (format 1's ``claim_kinds``)."""
    kinds = definition.get("claim_kinds")
    return [
        {
            "key": str(kind["key"]),
            "label": str(kind.get("label") or kind["key"]),
            "definition": str(kind.get("definition") or ""),
        }
        for kind in (kinds if isinstance(kinds, list) else [])
        if isinstance(kind, Mapping) and "key" in kind
    ]


def codebook_fields_for_page(
    definition: Mapping[str, Any], engine: Engine | None = None
) -> dict[str, Any]:
    """The page's codebook: names, prose, the engine's fields (a format-1 codebook's
    evidence dimensions among them, as number fields after its judgments) and derived
    values. Only what annotators may see: an evidence dimension's weight makes the review
    priority and is never on a page."""
    engine = engine or engine_of(definition)
    kinds = _claim_kinds(definition)
    return {
        "name": definition.get("name"),
        "version": definition.get("version"),
        "unit": engine.unit,
        "title": definition.get("title"),
        "description": definition.get("description"),
        "format_version": engine.format_version,
        # The evidence dimensions after the judgments, as the first form had them.
        "fields": fields_for_page(
            engine, kind_labels={kind["key"]: kind["label"] for kind in kinds}
        )
        + dimensions_for_page(engine),
        "claim_kinds": kinds,
        "derived": [
            {"code": item.code, "rule": item.rule, "label": item.label or item.code}
            for item in engine.derived
        ],
    }


# --- the form's state ---------------------------------------------------------------------

#: What an annotation holds beside its judgments that the form edits too.
FORM_EXTRAS = ("rationale",)


def _bare_values_read(engine: Engine, annotation: Mapping[str, Any]) -> Mapping[str, Any]:
    """An annotation whose value objects (``{"value": ...}``, a format-1 evidence
    dimension's) are given bare, as the first format-1 form's drafts kept them, with each
    bare value in its object, so that the engine reads it."""
    fixed: dict[str, Any] | None = None
    for path in engine.paths.values():
        if len(path) < 2 or path[-1] != "value":
            continue
        held = value_at(annotation, path[:-1])
        if held is ABSENT or isinstance(held, Mapping):
            continue
        fixed = fixed if fixed is not None else _deep_copy_path(annotation)
        target = fixed
        for step in path[:-2]:
            target = target.setdefault(step, {}) if isinstance(target, dict) else {}
        if isinstance(target, dict):
            target[path[-2]] = {"value": held}
    return fixed if fixed is not None else annotation


def _deep_copy_path(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _deep_copy_path(item) for key, item in value.items()}
    return value


def form_state(engine: Engine, annotation: Any) -> dict[str, Any] | None:
    """A stored annotation, a submitted one or a draft as the form edits it: the engine's
    view (``values``, ``reasons``, ``spans`` and, for query_documents, ``documents``)
    with the rationale. Read by the engine (:func:`audit.contract.engine.engine_values`),
    so a draft kept in a codebook's stored shape (format 1's) opens as well as one in the
    view's; a weight is never part of it."""
    if not isinstance(annotation, Mapping):
        return None
    view = dict(engine_values(engine, _bare_values_read(engine, annotation)))
    for key in FORM_EXTRAS:
        if key in annotation:
            view[key] = annotation[key]
    return view


def as_form_state(engine: Engine, given: Any) -> dict[str, Any] | None:
    """What a page hands the form: a state it sent (the engine's view, with ``values``)
    as it is, an annotation in the codebook's stored shape (a label, a draft) read by
    :func:`form_state`."""
    if not isinstance(given, Mapping):
        return None
    if "values" in given:
        return dict(given)
    return form_state(engine, given)


# --- values as text ------------------------------------------------------------------------


def document_name(position: Any) -> str:
    """A document as people number it (position 0 is "document 1")."""
    return f"document {position + 1}" if isinstance(position, int) else f"document {position!r}"


def relation_text(kind: str, value: Any) -> str:
    """A ``links`` or ``groups`` value as a sentence, documents numbered from 1."""
    if not isinstance(value, list) or not value:
        return "none"
    parts = []
    for entry in value:
        if not isinstance(entry, Mapping):
            parts.append(repr(entry))
        elif kind == "links":
            parts.append(
                f"{document_name(entry.get('document'))} contradicted by "
                f"{document_name(entry.get('by'))}"
            )
        else:
            members = entry.get("members")
            others = [
                document_name(m)
                for m in (members if isinstance(members, list) else [])
                if m != entry.get("representative")
            ]
            parts.append(
                f"{document_name(entry.get('representative'))} represents "
                + (", ".join(others) or "nothing")
            )
    return "; ".join(parts).capitalize()


def value_text(field: Mapping[str, Any], value: Any, *, present: bool = True) -> str:
    """A field's value as people read it: an option's label, ``U`` for null."""
    if field.get("type") in RELATION_TYPES:
        return relation_text(str(field["type"]), value if present else [])
    if not present:
        return "not answered"
    if value is None:
        return "U"
    if value is True:
        return "true"
    if value is False:
        return "false"
    for option in field.get("options") or ():
        if option["value"] == str(value):
            return str(option.get("text") or option["label"])
    return str(value)


def span_text(span: Any) -> str:
    if not isinstance(span, Mapping):
        return "—"
    return (
        f"{span.get('snapshot', '?')} [{span.get('start', '?')}, {span.get('end', '?')}): "
        f"“{span.get('quote', '')}”"
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def spans_of(annotation: Mapping[str, Any], code: str) -> list[Mapping[str, Any]]:
    spans = annotation.get("spans")
    return [
        span
        for span in (spans if isinstance(spans, list) else [])
        if isinstance(span, Mapping) and span.get("field") == code
    ]


def _verdict_word(value: Any) -> str:
    return {True: "true", False: "false", None: "unknown"}.get(value, repr(value))


def claims_rows(field: Mapping[str, Any], value: Any) -> list[tuple[str, str]]:
    """A claims field's claims as rows, as format 1 has always shown them: each claim's
    span, its kind and claim verdicts, the source and quote it cites, its reason."""
    config = _mapping(field.get("claims"))
    verdicts = [str(v["code"]) for v in config.get("verdicts") or ()] or ["supported", "accurate"]
    source_key = str(config.get("source_key") or "source")
    rows: list[tuple[str, str]] = []
    for claim in value if isinstance(value, list) else []:
        if not isinstance(claim, Mapping):
            continue
        name = f"Claim {claim.get('id', '?')}"
        rows.append((name, span_text(claim.get("span"))))
        judged = ", ".join(f"{code} {_verdict_word(claim.get(code))}" for code in verdicts)
        rows.append((f"{name} judgments", f"kind {claim.get('kind')}, {judged}"))
        if claim.get(source_key):
            rows.append((f"{name} source", str(claim[source_key])))
        rows.append((f"{name} quote", span_text(claim.get("quote_span"))))
        if claim.get("reason"):
            rows.append((f"{name} reason", str(claim["reason"])))
    return rows


def fields_rows(
    annotation: Mapping[str, Any] | None, fields: Sequence[Mapping[str, Any]]
) -> list[tuple[str, str]]:
    """An annotation as (label, text) rows, forgiving (a refused one is shown as far as it
    goes), for showing two versions side by side."""
    if not isinstance(annotation, Mapping):
        return [("Annotation", "nothing stored")]
    values = _mapping(annotation.get("values"))
    reasons = _mapping(annotation.get("reasons"))
    rows: list[tuple[str, str]] = []
    per_document = [f for f in fields if f.get("placement") == "document"]
    for field in fields:
        if field.get("placement") == "document":
            continue
        code = field["code"]
        if field.get("type") == "claims" and isinstance(values.get(code), list):
            claims = values[code]
            count = f"{len(claims)} claim{'' if len(claims) == 1 else 's'}"
            rows.append((str(field["label"]), count))
            rows.extend(claims_rows(field, claims))
        else:
            rows.append(
                (str(field["label"]), value_text(field, values.get(code), present=code in values))
            )
        if reasons.get(code):
            rows.append((f"{field['label']} · reason", str(reasons[code])))
        for span in spans_of(annotation, code):
            rows.append((f"{field['label']} · evidence", span_text(span)))
    documents = annotation.get("documents")
    for index, entry in enumerate(documents if isinstance(documents, list) else []):
        entry = _mapping(entry)
        doc_values = _mapping(entry.get("values"))
        doc_reasons = _mapping(entry.get("reasons"))
        name = f"Document {index + 1}"
        for field in per_document:
            code = field["code"]
            rows.append(
                (
                    f"{name} · {field['label']}",
                    value_text(field, doc_values.get(code), present=code in doc_values),
                )
            )
            if doc_reasons.get(code):
                rows.append((f"{name} · {field['label']} · reason", str(doc_reasons[code])))
            for span in spans_of(annotation, code):
                if span_document(span) == index:
                    rows.append((f"{name} · {field['label']} · evidence", span_text(span)))
    if annotation.get("rationale"):
        rows.append(("Rationale", str(annotation["rationale"])))
    return rows


# --- the contract's problems, by field -------------------------------------------------------

_PATH_FIELD = re.compile(r"^(?:annotation\.)?(?:(?:values|reasons)\.([^.\[ ]+)|spans \(([^)]+)\))")
_PATH_SPAN = re.compile(r"^(?:annotation\.)?spans\[(\d+)\]")
_PATH_DOCUMENT = re.compile(r"^(?:annotation\.)?documents\[(\d+)\]\.(?:values|reasons)\.([^.\[ ]+)")


def document_key(code: str, document: int) -> str:
    """The name of a per-document field's copy for one document, in the page and in
    problems: ``code-N`` (N from 0; a field code has no ``-``)."""
    return f"{code}-{document}"


def span_document(span: Mapping[str, Any]) -> int:
    """The document a span of a per-document field belongs to: the one it cites (a span
    in the query goes with the first document, as adjudication picks take it)."""
    snapshot = str(span.get("snapshot") or "")
    if snapshot.startswith("document:") and snapshot[9:].isdigit():
        return int(snapshot[9:])
    return 0


def problem_field(
    path: str,
    annotation: Mapping[str, Any] | None,
    document_codes: Iterable[str] = (),
) -> str | None:
    """The field a problem's path names (``values.X``, ``reasons.X``, or a span attached
    to X; ``documents[N].values.X`` as :func:`document_key`, as is a span of a
    per-document field among ``document_codes``), else None (a problem of the whole
    annotation)."""
    match = _PATH_DOCUMENT.match(path or "")
    if match:
        return document_key(match.group(2), int(match.group(1)))
    match = _PATH_FIELD.match(path or "")
    if match:
        return match.group(1) or match.group(2)
    match = _PATH_SPAN.match(path or "")
    if match and isinstance(annotation, Mapping):
        spans = annotation.get("spans")
        index = int(match.group(1))
        if isinstance(spans, list) and index < len(spans) and isinstance(spans[index], Mapping):
            code = spans[index].get("field")
            if not isinstance(code, str):
                return None
            if code in set(document_codes):
                return document_key(code, span_document(spans[index]))
            return code
    return None


_PATH_CLAIM = re.compile(r"^(?:annotation\.)?values\.([^.\[ ]+)\[(\d+)\]\.?(.*)$")


def claim_message(path: str, annotation: Mapping[str, Any] | None, message: str) -> str:
    """A problem inside one claim of a claims field, named by the claim's id (and the key
    of the claim it concerns): "Claim c1, accurate: is missing". Other messages as given."""
    match = _PATH_CLAIM.match(path or "")
    if not match or not isinstance(annotation, Mapping):
        return message
    value = _mapping(annotation.get("values")).get(match.group(1))
    index = int(match.group(2))
    if not isinstance(value, list) or index >= len(value) or not isinstance(value[index], Mapping):
        return message
    claim_id = value[index].get("id")
    if not isinstance(claim_id, str) or "span" not in value[index]:
        return message
    rest = match.group(3)
    return f"Claim {claim_id}{', ' + rest if rest else ''}: {message}"


_POSITIONS = re.compile(r"a document position from 0 to (\d+)")


def readable_message(message: str) -> str:
    """A contract sentence as a form shows it: U is chosen, not written as null, and
    documents are numbered from 1 as the page numbers them."""
    message = message.replace("; write U as null", "; choose a value, or U if unresolved")
    message = _POSITIONS.sub(lambda m: f"one of documents 1 to {int(m.group(1)) + 1}", message)
    message = message.replace("a document position", "one of the documents")
    return message


def problems_by_field(
    problems: Iterable[Mapping[str, Any]],
    annotation: Mapping[str, Any] | None,
    document_codes: Iterable[str] = (),
) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """Problems (``{"code", "path", "message"}``) split into those of each field and the
    rest, in the order given; a per-document field's (among ``document_codes``) under
    :func:`document_key`. A problem naming a per-document field but no document (its
    missing evidence) is one of the rest, its sentence naming the field."""
    codes = set(document_codes)
    by_field: dict[str, list[dict[str, Any]]] = {}
    rest: list[dict[str, Any]] = []
    for problem in problems:
        item = dict(problem)
        if codes:
            item["message"] = readable_message(str(item.get("message") or ""))
        item["message"] = claim_message(
            str(item.get("path") or ""), annotation, str(item.get("message") or "")
        )
        code = problem_field(str(item.get("path") or ""), annotation, codes)
        if code is None or code in codes:
            rest.append(item)
        else:
            by_field.setdefault(code, []).append(item)
    return by_field, rest


def document_cards(
    fields: Sequence[Mapping[str, Any]],
    documents: Sequence[Mapping[str, Any]],
    by_field: Mapping[str, Sequence[Mapping[str, Any]]] | None = None,
) -> list[dict[str, Any]]:
    """A query_documents unit's documents as the form shows them, in rank order: each
    with its number, facts, and a copy of every per-document field named for it
    (:func:`document_key`; ``base`` is the field's code), with the problems naming it.
    Without ``by_field`` (pages that show, not edit) the cards carry no fields."""
    per_document = [f for f in fields if f.get("placement") == "document"]
    cards = []
    for index, document in enumerate(documents):
        card: dict[str, Any] = {
            "index": index,
            "number": index + 1,
            "snapshot": f"document:{index}",
            "url": document.get("canonical_url") or document.get("original_url"),
            "rank": document.get("rank"),
            "collected_at": document.get("collected_at"),
            "text": document.get("text"),
            "fields": [],
        }
        if by_field is not None:
            for field in per_document:
                key = document_key(str(field["code"]), index)
                card["fields"].append(
                    {
                        **field,
                        "code": key,
                        "base": field["code"],
                        "document": index,
                        "problems": list(by_field.get(key, ())),
                    }
                )
        cards.append(card)
    return cards


def with_problems(
    fields: Sequence[Mapping[str, Any]], by_field: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    """The page's fields, each with ``problems``: the ones naming it."""
    return [{**field, "problems": list(by_field.get(field["code"], ()))} for field in fields]
