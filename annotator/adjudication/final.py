"""The adjudicator's final label as the engine's view, from per-field picks: pure, no Django.

Any codebook (audit.contract.engine): the independent labels are read as engine views
(``engine_values``), the adjudicator picks one label per compared item (its value, reason
and evidence spans come with it, annotator.adjudication.picks.final_from_picks) or writes
a value of their own, removes or adds evidence spans, and (for claims fields) gives the
final claims; evidence dimensions are not picked: the final value of each is the mean of
the annotators' (as a consensus takes it). The result is an engine view, which the writer
(``annotation_from_view``) turns into the codebook's stored judgment part.

What the page sends besides the picks (``edits``, a JSON object; every part optional)::

    {"own": {code: {"value": ..., "reason": "..."}},
     "removed": [{"field", "snapshot", "start", "end"}, ...],
     "added": [{"field", "snapshot", "start", "end", "quote"}, ...],
     "claims": {code: [claim, ...]}}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from annotator.adjudication.picks import PickError, final_from_picks
from audit.contract.engine import Engine

#: The pick that takes the adjudicator's own value for a field.
OWN = "own"
#: Field types whose value an adjudicator may write themselves (unit-level fields).
OWN_TYPES = frozenset({"choice", "grade", "verdict", "number", "date", "text"})


class EditError(ValueError):
    """Edits that are not what the page sends; ``where`` names the part."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = f"{where}: {message}"


def span_key(span: Mapping[str, Any]) -> tuple[str, str, Any, Any]:
    """What identifies an evidence span of the view: its field, snapshot and offsets."""
    return (str(span.get("field")), str(span.get("snapshot")), span.get("start"), span.get("end"))


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise EditError(where, "must be a JSON object")
    return value


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise EditError(where, "must be a JSON array")
    return value


def _span(value: Any, where: str, *, quote: bool) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise EditError(where, "must be a JSON object")
    for name in ("field", "snapshot"):
        if not isinstance(value.get(name), str):
            raise EditError(where, f"{name} must be a string")
    for name in ("start", "end"):
        if type(value.get(name)) is not int:
            raise EditError(where, f"{name} must be an integer")
    if quote and not isinstance(value.get("quote"), str):
        raise EditError(where, "quote must be a string")
    keys = ("field", "snapshot", "start", "end") + (("quote",) if quote else ())
    return {k: value[k] for k in keys}


def _mean(values: Sequence[Any]) -> float | None:
    numbers = [v for v in values if type(v) in (int, float)]
    return fmean(numbers) if numbers else None


def final_view(
    engine: Engine,
    views: Sequence[Mapping[str, Any]],
    picks: Mapping[str, Any],
    edits: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The final label's engine view. ``views`` are the independent labels' engine views
    (in the order the picks index them); ``picks[key]`` is an index into ``views`` or
    :data:`OWN` (keys as picks.item_key); ``edits`` as the module says. Raises
    :class:`~annotator.adjudication.picks.PickError` for a missing or impossible pick and
    :class:`EditError` for edits of the wrong shape; the values themselves are checked by
    the record contract, as every annotation's are."""
    edits = _object(edits, "edits")
    own = _object(edits.get("own"), "edits.own")
    fields = {f.code: f for f in engine.fields}
    owned = {key for key, pick in picks.items() if pick == OWN}
    for key in sorted(owned):
        item = fields.get(key)
        if item is None or item.type not in OWN_TYPES or item.placement != "unit":
            raise PickError(key, f"{key}: this field takes no value of the adjudicator's own")
        entry = own.get(key)
        if not isinstance(entry, Mapping) or "value" not in entry:
            raise PickError(key, f"{item.label}: write your own value or take an annotator's")
    if views and all(view.get("values") is None for view in views):
        # Every annotator read a failed answer: nothing to pick but that.
        return {"values": None, "reasons": {}, "spans": []}
    indices = {key: (0 if key in owned else pick) for key, pick in picks.items()}
    body = final_from_picks(engine.definition, views, indices)
    values: dict[str, Any] = body["values"]
    reasons: dict[str, Any] = body["reasons"]
    spans: list[dict[str, Any]] = body["spans"]
    for key in sorted(owned):
        entry = own[key]
        values[key] = entry["value"]
        reason = entry.get("reason")
        reasons.pop(key, None)
        if isinstance(reason, str) and reason.strip():
            reasons[key] = reason
        elif reason is not None and not isinstance(reason, str):
            raise EditError(f"edits.own.{key}.reason", "must be a string")
        spans = [span for span in spans if span.get("field") != key]
    removed = {
        span_key(_span(span, f"edits.removed[{index}]", quote=False))
        for index, span in enumerate(_list(edits.get("removed"), "edits.removed"))
    }
    spans = [span for span in spans if span_key(span) not in removed]
    present = {span_key(span) for span in spans}
    for index, given in enumerate(_list(edits.get("added"), "edits.added")):
        span = _span(given, f"edits.added[{index}]", quote=True)
        if span["field"] not in fields:
            raise EditError(f"edits.added[{index}]", f"no field {span['field']!r}")
        if span_key(span) not in present:
            present.add(span_key(span))
            spans.append(span)
    order = list(fields)
    spans.sort(
        key=lambda s: (
            order.index(s["field"]) if s.get("field") in fields else len(order),
            str(s.get("snapshot")),
            s.get("start") if type(s.get("start")) is int else -1,
            s.get("end") if type(s.get("end")) is int else -1,
        )
    )
    claims = _object(edits.get("claims"), "edits.claims")
    for code, given in claims.items():
        if code not in fields or fields[code].type != "claims":
            raise EditError(f"edits.claims.{code}", "not a claims field of the codebook")
        values[code] = _list(given, f"edits.claims.{code}")
    for dimension in engine.dimensions:
        mean = _mean([(view.get("values") or {}).get(dimension.code) for view in views])
        if mean is not None:
            values[dimension.code] = mean
    body["spans"] = spans
    return body
