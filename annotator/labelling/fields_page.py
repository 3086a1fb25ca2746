"""What the pages show of a format-2 codebook: its fields as form controls, an
annotation's values as text, and the contract's problems attached to the field they name.

Driven only by the codebook's ``fields`` (docs/formats.md, "Codebook format 2"), as the
record contract parses them (``audit.contract.fields``): no field code or codebook name is
known here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from audit.contract.codebook import Codebook, codebook_from_dict
from audit.contract.fields import Field

#: The value a radio group sends for U (the annotation stores ``null``).
U_VALUE = "U"
U_KEY = "u"
#: Field types answered by picking one option.
OPTION_TYPES = frozenset({"choice", "grade", "verdict"})


def panes_template(unit_kind: str) -> str:
    """The template showing a unit's texts, by unit kind (``annotator/panes/<kind>.html``):
    a new unit kind plugs in with its own panes, naming its snapshots as spans name them."""
    return f"annotator/panes/{unit_kind}.html"


def is_fields_codebook(definition: Mapping[str, Any] | None) -> bool:
    """A codebook of format 2: one that declares its fields."""
    return isinstance(definition, Mapping) and definition.get("format_version") == 2


def _option_rows(field: Field) -> list[dict[str, Any]]:
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


def fields_for_page(codebook: Codebook) -> list[dict[str, Any]]:
    """Each field of a parsed format-2 codebook as the form renders it, in codebook order."""
    fields = []
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
            }
        )
    return fields


def codebook_fields_for_page(definition: Mapping[str, Any]) -> dict[str, Any]:
    """The page's codebook: names, prose, fields and derived values (a format-2 codebook
    declares nothing that annotators may not see)."""
    codebook = codebook_from_dict(definition)
    return {
        "name": codebook.name,
        "version": codebook.version,
        "unit": codebook.unit,
        "title": definition.get("title"),
        "description": definition.get("description"),
        "format_version": codebook.format_version,
        "fields": fields_for_page(codebook),
        "derived": [
            {"code": item.code, "rule": item.rule, "label": item.label or item.code}
            for item in codebook.derived
        ],
    }


# --- values as text ------------------------------------------------------------------------


def value_text(field: Mapping[str, Any], value: Any, *, present: bool = True) -> str:
    """A field's value as people read it: an option's label, ``U`` for null."""
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
    for field in fields:
        code = field["code"]
        rows.append(
            (str(field["label"]), value_text(field, values.get(code), present=code in values))
        )
        if reasons.get(code):
            rows.append((f"{field['label']} · reason", str(reasons[code])))
        for span in spans_of(annotation, code):
            rows.append((f"{field['label']} · evidence", span_text(span)))
    if annotation.get("rationale"):
        rows.append(("Rationale", str(annotation["rationale"])))
    return rows


# --- the contract's problems, by field -------------------------------------------------------

_PATH_FIELD = re.compile(r"^(?:annotation\.)?(?:(?:values|reasons)\.([^.\[ ]+)|spans \(([^)]+)\))")
_PATH_SPAN = re.compile(r"^(?:annotation\.)?spans\[(\d+)\]")


def problem_field(path: str, annotation: Mapping[str, Any] | None) -> str | None:
    """The field code a problem's path names (``values.X``, ``reasons.X``, or a span
    attached to X), else None (a problem of the whole annotation)."""
    match = _PATH_FIELD.match(path or "")
    if match:
        return match.group(1) or match.group(2)
    match = _PATH_SPAN.match(path or "")
    if match and isinstance(annotation, Mapping):
        spans = annotation.get("spans")
        index = int(match.group(1))
        if isinstance(spans, list) and index < len(spans) and isinstance(spans[index], Mapping):
            code = spans[index].get("field")
            return code if isinstance(code, str) else None
    return None


def problems_by_field(
    problems: Iterable[Mapping[str, Any]], annotation: Mapping[str, Any] | None
) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, Any]]]:
    """Problems (``{"code", "path", "message"}``) split into those of each field and the
    rest, in the order given."""
    by_field: dict[str, list[dict[str, Any]]] = {}
    rest: list[dict[str, Any]] = []
    for problem in problems:
        item = dict(problem)
        code = problem_field(str(item.get("path") or ""), annotation)
        if code is None:
            rest.append(item)
        else:
            by_field.setdefault(code, []).append(item)
    return by_field, rest


def with_problems(
    fields: Sequence[Mapping[str, Any]], by_field: Mapping[str, Sequence[Mapping[str, Any]]]
) -> list[dict[str, Any]]:
    """The page's fields, each with ``problems``: the ones naming it."""
    return [{**field, "problems": list(by_field.get(field["code"], ()))} for field in fields]
