"""Answer pairs: between what an annotator sees (left, right) and what is stored (the
answers' roles). Pure: no Django.

An annotator of an ``answer_pair`` unit sees the two answers side by side as "left" and
"right", in an order drawn for them and recorded by the server (never sent to the client).
The client's annotation speaks of sides: a **side field** (a choice field whose codes
include ``left`` and ``right``, :func:`audit.contract.fields.side_fields`) answers ``left``,
``right`` or another code (``same``), and evidence spans cite the snapshots ``left`` and
``right``. The **stored** annotation speaks of roles, so that annotators who saw different
orders are compared correctly (agreement, reliability, adjudication, outcomes, releases):

* a side field stores ``answer`` for the side that showed the evaluated answer, ``baseline``
  for the other side, other codes unchanged — for the pairwise codebook, G = ``answer``,
  S = ``same``, B = ``baseline``;
* spans cite ``answer`` and ``baseline`` (the record's snapshot names);
* ``sides`` records the order: ``{"left": "answer", "right": "baseline"}`` or
  ``{"left": "baseline", "right": "answer"}``, written by the server, never taken from the
  client.

:func:`to_stored` and :func:`to_client` are inverse to each other for a given order, and
:func:`client_problems` refuses a client annotation that already names roles.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from audit.contract import codes
from audit.contract.errors import show
from audit.contract.fields import PAIR_ROLES, PAIR_SIDES, Problem, side_fields, span_problem

__all__ = [
    "PAIR_ROLES",
    "PAIR_SIDES",
    "client_problems",
    "picked_side",
    "sides_of",
    "to_client",
    "to_stored",
]


def sides_of(*, left_is_evaluated: bool) -> dict[str, str]:
    """The side mapping of one annotator's order: which role each side shows."""
    if left_is_evaluated:
        return {"left": "answer", "right": "baseline"}
    return {"left": "baseline", "right": "answer"}


def _spans_fields(codebook: Any) -> tuple[str, ...]:
    """Fields of type ``spans``: their values are lists of spans, each naming a snapshot."""
    return tuple(field.code for field in codebook.fields if field.type == "spans")


def _map_span(span: Any, names: Mapping[str, str]) -> Any:
    if isinstance(span, Mapping) and span.get("snapshot") in names:
        return {**span, "snapshot": names[span["snapshot"]]}
    return span


def _map_spans(spans: Any, names: Mapping[str, str]) -> Any:
    if not isinstance(spans, list):
        return spans
    return [_map_span(span, names) for span in spans]


def _translate(
    codebook: Any, annotation: Mapping[str, Any], names: Mapping[str, str]
) -> dict[str, Any]:
    """``annotation`` with every side field's value and every span's snapshot renamed by
    ``names`` (keys in the order given: the key order never tells the sides apart)."""
    out = {key: copy.deepcopy(value) for key, value in annotation.items()}
    values = out.get("values")
    if isinstance(values, dict):
        choices = set(side_fields(codebook))
        spans_fields = set(_spans_fields(codebook))
        mapped: dict[str, Any] = {}
        for code, value in values.items():
            if code in choices and isinstance(value, str) and value in names:
                mapped[code] = names[value]
            elif code in spans_fields:
                mapped[code] = _map_spans(value, names)
            else:
                mapped[code] = value
        out["values"] = mapped
    if "spans" in out:
        out["spans"] = _map_spans(out["spans"], names)
    return out


def to_stored(
    codebook: Any, annotation: Mapping[str, Any], sides: Mapping[str, str]
) -> dict[str, Any]:
    """A client's annotation (left/right) as stored (roles), with ``sides`` set from the
    recorded order (whatever ``sides`` the client sent is replaced)."""
    body = {key: value for key, value in annotation.items() if key != "sides"}
    stored = _translate(codebook, body, {side: sides[side] for side in PAIR_SIDES})
    stored["sides"] = {side: sides[side] for side in PAIR_SIDES}
    return stored


def to_client(
    codebook: Any, annotation: Mapping[str, Any], sides: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A stored annotation (roles) as someone who saw the order ``sides`` reads it
    (left/right), without ``sides``. ``sides`` defaults to the annotation's own (the
    annotator's order); an adjudicator passes theirs to read others' labels in it."""
    order = sides if sides is not None else annotation.get("sides")
    body = {key: value for key, value in annotation.items() if key != "sides"}
    if not isinstance(order, Mapping):
        return body
    names = {order[side]: side for side in PAIR_SIDES if order.get(side) in PAIR_ROLES}
    return _translate(codebook, body, names)


def client_problems(
    codebook: Any, annotation: Any, texts: Mapping[str, str] | None = None
) -> list[Problem]:
    """What is wrong, in the client's own terms, with what a client says about an answer
    pair's sides: a side field's value that is not one of its codes (a role such as
    ``answer`` included: a client cannot know the roles, so a guess is refused rather than
    stored) and evidence spans on the sides. With ``texts`` (``query``, ``left``, ``right``)
    each span is checked against the text it cites, so that a problem names the side, never
    the role; without, only a span naming a role is refused. Everything else is the record
    contract's, after :func:`to_stored`."""
    if not isinstance(annotation, Mapping):
        return []
    problems: list[Problem] = []
    values = annotation.get("values")
    values = values if isinstance(values, Mapping) else {}
    by_code = {field.code: field for field in codebook.fields}
    for code in side_fields(codebook):
        value = values.get(code)
        field = by_code[code]
        if isinstance(value, str) and field.option(value) is None:
            choices = ", ".join(str(c) for c in field.codes)
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"annotation.values.{code}",
                    f"is {show(value)}; {field.label} takes one of {choices}",
                )
            )
    places: list[tuple[str, str | None, Any]] = [
        ("annotation.spans", None, annotation.get("spans"))
    ]
    places += [
        (f"annotation.values.{code}", code, values.get(code)) for code in _spans_fields(codebook)
    ]
    for path, code, spans in places:
        for index, span in enumerate(spans if isinstance(spans, list) else []):
            at = f"{path}[{index}]"
            if not isinstance(span, Mapping):
                continue
            if texts is not None:
                problem = span_problem(
                    dict(span) if code is None else {"field": code, **span}, at, texts
                )
                if problem is not None:
                    problems.append(problem)
            elif span.get("snapshot") in PAIR_ROLES:
                problems.append(
                    Problem(
                        codes.SPAN_MALFORMED,
                        f"{at}.snapshot",
                        f"is {show(span['snapshot'])}; an answer pair's spans cite query, "
                        "left or right",
                    )
                )
    return problems


def picked_side(value: Any, sides: Mapping[str, str]) -> str | None:
    """The side an annotator picked, from a stored side field's ``value`` and the
    annotation's ``sides``: ``"left"``/``"right"``, or ``None`` for any other value (same,
    U). For the position-bias check (share of left picks)."""
    for side in PAIR_SIDES:
        if sides.get(side) == value:
            return side
    return None
