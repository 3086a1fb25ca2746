"""Agreement, consensus and the adjudicator's picks for format-2 codebooks: pure, no Django.

Driven by the codebook's ``fields`` only. Two annotators agree on a unit when every
field whose value is compared (``choice``, ``grade``, ``verdict``, ``number``, ``date``)
has the same value (U equal to U, a missing value equal only to a missing one). Reasons,
free texts and evidence spans may differ between agreeing annotators, as in the first two
codebooks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

COMPARED_TYPES = frozenset({"choice", "grade", "verdict", "number", "date"})
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


def compared_fields(definition: Mapping[str, Any]) -> list[str]:
    """The codes of the fields whose values decide agreement, in codebook order."""
    return [str(f.get("code")) for f in _fields(definition) if f.get("type") in COMPARED_TYPES]


def _values(annotation: Mapping[str, Any]) -> Mapping[str, Any]:
    values = annotation.get("values")
    return values if isinstance(values, Mapping) else {}


def value_of(annotation: Mapping[str, Any], code: str) -> Any:
    return _values(annotation).get(code, MISSING)


def _same(a: Any, b: Any) -> bool:
    # true == 1 in Python; a verdict and a grade are never the same value.
    return type(a) is type(b) and a == b


def judgments_key(definition: Mapping[str, Any], annotation: Mapping[str, Any]) -> tuple:
    """What two agreeing annotations share: the compared fields' values (typed, so that
    ``true`` and ``1`` differ)."""
    return tuple(
        (type(value).__name__, value if value is not MISSING else "missing")
        for value in (value_of(annotation, code) for code in compared_fields(definition))
    )


def differing_fields(
    definition: Mapping[str, Any], annotations: Sequence[Mapping[str, Any]]
) -> set[str]:
    """The compared fields on which the annotations do not all agree."""
    out = set()
    for code in compared_fields(definition):
        values = [value_of(a, code) for a in annotations]
        if any(not _same(values[0], v) for v in values[1:]):
            out.add(code)
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


def consensus_fields(
    definition: Mapping[str, Any], annotations: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """The consensus body of agreeing annotations: the first one's values (equal on
    every compared field; free texts from the first), every annotator's reasons joined with
    " | ", every evidence span once (sorted by field, snapshot, offsets)."""
    first = annotations[0]
    values = dict(_values(first))
    reasons: dict[str, str] = {}
    for field in _fields(definition):
        code = str(field.get("code"))
        given = [
            str(r[code])
            for r in (a.get("reasons") for a in annotations)
            if isinstance(r, Mapping) and isinstance(r.get(code), str) and r.get(code)
        ]
        if given:
            reasons[code] = " | ".join(given)
    merged: dict[tuple, Mapping[str, Any]] = {}
    for annotation in annotations:
        for span in _spans(annotation):
            merged.setdefault(_span_key(span), span)
    body: dict[str, Any] = {
        "values": values,
        "reasons": reasons,
        "spans": [dict(merged[key]) for key in sorted(merged)],
    }
    return body


def final_from_picks(
    definition: Mapping[str, Any],
    annotations: Sequence[Mapping[str, Any]],
    picks: Mapping[str, int],
) -> dict[str, Any]:
    """The adjudicated body: for each field, the value, reason and evidence spans of the
    independent annotation ``picks[code]`` (an index into ``annotations``). A field not
    picked takes the first annotation's when all agree on it, else it is refused."""
    if not annotations:
        raise PickError("", "there is no independent label to pick from")
    differing = differing_fields(definition, annotations)
    values: dict[str, Any] = {}
    reasons: dict[str, Any] = {}
    spans: list[dict[str, Any]] = []
    for field in _fields(definition):
        code = str(field.get("code"))
        label = str(field.get("label") or code)
        index = picks.get(code)
        if index is None:
            if code in differing:
                raise PickError(code, f"{label}: the labels differ; pick one of them")
            index = 0
        if not isinstance(index, int) or not 0 <= index < len(annotations):
            raise PickError(code, f"{label}: pick one of the {len(annotations)} labels")
        source = annotations[index]
        source_values = _values(source)
        if code in source_values:
            values[code] = source_values[code]
        source_reasons = source.get("reasons")
        if isinstance(source_reasons, Mapping) and code in source_reasons:
            reasons[code] = source_reasons[code]
        spans.extend(dict(s) for s in _spans(source) if s.get("field") == code)
    return {"values": values, "reasons": reasons, "spans": spans}
