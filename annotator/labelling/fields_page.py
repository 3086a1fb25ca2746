"""What the pages show of a format-2 codebook: its fields as form controls, an
annotation's values as text, and the contract's problems attached to the field they name.

Driven only by the codebook's ``fields`` (docs/formats.md, "Codebook format 2"): no field
code or codebook name is known here. The definition was validated when it was installed,
so the defaults below are the format's own (``allow_u`` true, ``reason`` none, ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

#: The value a radio group sends for U (the annotation stores ``null``).
U_VALUE = "U"
U_KEY = "u"
#: Field types answered by picking one option.
OPTION_TYPES = frozenset({"choice", "grade", "verdict"})
#: Field types whose value is compared between annotators (agreement, adjudication).
VALUE_TYPES = frozenset({"choice", "grade", "verdict", "number", "date"})
_DEFAULT_LEVEL = {"grade": "ordinal", "number": "interval"}


def is_fields_codebook(definition: Mapping[str, Any] | None) -> bool:
    """A codebook of format 2: one that declares its fields."""
    return isinstance(definition, Mapping) and definition.get("format_version") == 2


def field_level(field: Mapping[str, Any]) -> str:
    return str(field.get("level") or _DEFAULT_LEVEL.get(str(field.get("type")), "nominal"))


def _options(field: Mapping[str, Any]) -> list[dict[str, Any]]:
    kind = field.get("type")
    options: list[dict[str, Any]] = []
    if kind == "choice":
        for choice in field.get("choices") or ():
            options.append(
                {
                    "value": str(choice.get("code")),
                    "label": choice.get("label") or choice.get("code"),
                    "definition": choice.get("definition") or "",
                    "key": choice.get("key") or "",
                }
            )
    elif kind == "grade":
        for grade in field.get("grades") or ():
            value = grade.get("value")
            options.append(
                {
                    "value": str(value),
                    "label": f"{value} {grade.get('anchor') or ''}".strip(),
                    "definition": grade.get("definition") or "",
                    "key": str(grade.get("key") or value)[:1],
                }
            )
    elif kind == "verdict":
        options = [
            {"value": "true", "label": "true", "definition": "", "key": "1"},
            {"value": "false", "label": "false", "definition": "", "key": "0"},
        ]
    return options


def fields_for_page(definition: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each field of the codebook as the form renders it, in codebook order."""
    fields = []
    for field in definition.get("fields") or ():
        kind = str(field.get("type"))
        allow_u = field.get("allow_u", True) is not False
        options = _options(field)
        if allow_u and kind in OPTION_TYPES:
            options.append(
                {"value": U_VALUE, "label": "U unresolved", "definition": "", "key": U_KEY}
            )
        fields.append(
            {
                "code": field.get("code"),
                "type": kind,
                "label": field.get("label") or field.get("code"),
                "definition": field.get("definition") or "",
                "key": field.get("key") or "",
                "allow_u": allow_u,
                "reason": field.get("reason") or "none",
                "evidence": field.get("evidence") or "none",
                "level": field_level(field),
                "required": field.get("required", True) is not False,
                "placement": field.get("placement") or "unit",
                "options": options,
                "min": field.get("min", 0),
                "max": field.get("max", 1),
                "step": field.get("step", "any"),
            }
        )
    return fields


def codebook_fields_for_page(definition: Mapping[str, Any]) -> dict[str, Any]:
    """The page's codebook: names, prose, fields and derived values (nothing hidden from
    annotators is declared in a format-2 codebook)."""
    return {
        "name": definition.get("name"),
        "version": definition.get("version"),
        "unit": definition.get("unit"),
        "title": definition.get("title"),
        "description": definition.get("description"),
        "format_version": 2,
        "fields": fields_for_page(definition),
        "derived": [
            {"code": item.get("code"), "rule": item.get("rule"), "label": item.get("label")}
            for item in definition.get("derived") or ()
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
            return str(option["label"])
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

_PATH_FIELD = re.compile(r"^(?:annotation\.)?(?:values|reasons)\.([^.\[]+)")
_PATH_SPAN = re.compile(r"^(?:annotation\.)?spans\[(\d+)\]")


def problem_field(path: str, annotation: Mapping[str, Any] | None) -> str | None:
    """The field code a problem's path names (``values.X``, ``reasons.X``, or a span
    attached to X), else None (a problem of the whole annotation)."""
    match = _PATH_FIELD.match(path or "")
    if match:
        return match.group(1)
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
