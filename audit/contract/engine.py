"""Every codebook as engine fields: format 2 as it is written, format 1 through an adapter.

Pure (no Django). The engine (audit.contract.fields) works on **fields** and **derived
values**; a format-2 codebook declares them, and the two first codebooks (format 1:
``predicates``/``passage_support``/``source_roles``/``evidence_dimensions`` for tuples,
``verdicts``/``claim_kinds`` for answers) are described here in the same terms, so that a
consumer that compares, reports or predicts values asks :func:`engine_of` and never which
codebook or which unit kind it has (docs/formats.md, "Format 1 on the engine").

Stored format-1 records do not change: the adapter says where each field's value and
reason are in a format-1 annotation (:attr:`Engine.paths`, :attr:`Engine.reason_paths`)
and reads an annotation into the engine's view (:func:`engine_values`). What format 1
maps to:

* a predicate I, A, M, D and ``passage_support``: a ``grade`` field 0/1, nominal, U
  allowed, an evidence span required for a resolved value, no reason (the stored value is
  the integer 0 or 1, as format 1 stores it);
* ``source_role``: a ``choice`` of the codebook's roles, no U;
* the evidence dimensions: ``number`` fields in [0, 1] kept apart (:attr:`Engine.dimensions`):
  they make the review priority and are never compared, reported or predicted;
* R_O: a derived ``R_O`` over the four predicates;
* an answer verdict: a ``verdict`` field, U allowed, a reason required when the codebook
  requires reasons (else optional);
* ``claims``: a ``claims`` field (the claims keep their format-1 shape, with
  ``source_digest``), and the ``supported`` summary a derived ``claims_summary``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import Any

from audit.contract import codes
from audit.contract.codebook import PREDICATE_KEYS, codebook_from_dict
from audit.contract.endpoint import VERDICTS
from audit.contract.errors import ContractError, show
from audit.contract.fields import CLAIM_KINDS, CLAIM_VERDICTS, Derived, Field, Option

ENGINE_FORMAT = 2
PASSAGE_SUPPORT = "passage_support"
SOURCE_ROLE = "source_role"
CLAIMS = "claims"
#: Format 1's derived values, named as in the format-2 definitions of docs/formats.md.
ENDPOINT = "R_O"
CLAIMS_SUPPORTED = "claims_supported"
#: Evidence spans of a format-1 tuple annotation belong to these judgments, in this order.
SPAN_JUDGMENTS = (*PREDICATE_KEYS, PASSAGE_SUPPORT)

Path = tuple[str, ...]


@dataclass(frozen=True)
class Engine:
    """A codebook as the engine sees it, whatever its format."""

    unit: str
    format_version: int
    #: The fields in form order: every judgment with a value, and claims.
    fields: tuple[Field, ...]
    derived: tuple[Derived, ...]
    #: Field code -> where its value is in a stored annotation (a JSON path).
    paths: Mapping[str, Path] = field(hash=False)
    #: Field code -> where its reason is (fields that may carry one).
    reason_paths: Mapping[str, Path] = field(hash=False)
    #: Format 1's evidence vector (``number`` fields): recorded beside the judgments, never
    #: compared, reported or predicted. Empty for format 2.
    dimensions: tuple[Field, ...] = ()
    #: Reliability item labels by code (fields with a value, reported derived values).
    item_labels: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: Derived values reported as reliability items (format 1 reports none: its seed-000
    #: report never had R_O as an item, and must not move).
    reported_derived: tuple[Derived, ...] = ()
    #: Format 1's weight of each evidence dimension by code, as the codebook file writes it
    #: (the stored annotation repeats it beside each value). Empty for format 2.
    weights: Mapping[str, Any] = field(default_factory=dict, hash=False)
    #: In which order a consensus joins the agreeing annotators' reasons: ``"label"`` (the
    #: labels' order, oldest first: format 2) or ``"annotator"`` (by pseudonym: format-1
    #: answers, whose stored consensus records were always joined so).
    consensus_order: str = "label"

    def field(self, code: str) -> Field:
        for item in self.fields:
            if item.code == code:
                return item
        raise KeyError(code)

    @property
    def value_fields(self) -> tuple[Field, ...]:
        """The unit-level fields with a value (compared, reported, predictable), in order."""
        return tuple(f for f in self.fields if f.is_value and f.placement == "unit")

    @property
    def document_fields(self) -> tuple[Field, ...]:
        """Per-document fields with a value (query_documents codebooks)."""
        return tuple(f for f in self.fields if f.is_value and f.placement == "document")

    @cached_property
    def claims_fields(self) -> tuple[Field, ...]:
        return tuple(f for f in self.fields if f.type == "claims")

    @cached_property
    def compared_paths(self) -> tuple[Path, ...]:
        """The paths of :attr:`value_fields`, in order (read once per engine)."""
        return tuple(self.paths[f.code] for f in self.value_fields)

    @cached_property
    def unit_level(self) -> bool:
        """Whether every field is at unit level (no per-document or set-level field)."""
        return all(f.placement == "unit" for f in self.fields)

    @cached_property
    def definition(self) -> dict[str, Any]:
        """The fields as a format-2 definition's JSON value (``unit`` and ``fields``, each
        with its code, type, label, placement and codes): what the pure modules that read a
        definition (annotator.adjudication.picks) take. Dimensions are not fields there."""
        fields = []
        for item in self.fields:
            entry: dict[str, Any] = {
                "code": item.code,
                "type": item.type,
                "label": item.label,
                "placement": item.placement,
            }
            if item.type == "choice":
                entry["choices"] = [{"code": o.code, "label": o.label} for o in item.options]
            elif item.type == "grade":
                entry["grades"] = [{"value": o.code, "label": o.label} for o in item.options]
            fields.append(entry)
        return {"format_version": ENGINE_FORMAT, "unit": self.unit, "fields": fields}


def engine_fields(
    definition: Mapping[str, Any] | None,
) -> tuple[tuple[Field, ...], tuple[Derived, ...]]:
    """The fields and derived values of a codebook file's JSON value, whatever its format."""
    engine = engine_of(definition)
    return engine.fields, engine.derived


#: Engines of recently read definitions: (the definition itself, its engine) by ``id``, the
#: oldest dropped first. The entry holds the definition, so its id cannot be reused while
#: it is cached.
_CACHE: OrderedDict[int, tuple[Mapping[str, Any], Engine]] = OrderedDict()
_CACHE_SIZE = 64


def engine_of(definition: Mapping[str, Any] | None, *, unit: str | None = None) -> Engine:
    """The engine view of a codebook file's JSON value (validated at install).

    ``None`` (a caller that knows only the unit kind) is a format-1 codebook of ``unit``
    with the format's own codes and no labels."""
    if definition is None:
        return _format1({"unit": unit or "tuple"})
    cached = _CACHE.get(id(definition))
    if cached is not None and cached[0] is definition:
        return cached[1]
    if definition.get("format_version") == ENGINE_FORMAT:
        engine = _format2(definition)
    else:
        engine = _format1(definition)
    _CACHE[id(definition)] = (definition, engine)
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return engine


def _format2(definition: Mapping[str, Any]) -> Engine:
    codebook = codebook_from_dict(definition)
    fields = codebook.fields
    unit_values = {f.code for f in fields if f.is_value and f.placement == "unit"}
    reported = tuple(
        d for d in codebook.derived if d.rule in ("min", "R_O") and set(d.inputs) <= unit_values
    )
    labels = {f.code: f"{f.code}: {f.label}" for f in fields if f.is_value}
    labels.update({d.code: f"{d.code}: {d.label or d.code} (derived, {d.rule})" for d in reported})
    return Engine(
        unit=codebook.unit,
        format_version=ENGINE_FORMAT,
        fields=fields,
        derived=codebook.derived,
        paths=MappingProxyType({f.code: ("values", f.code) for f in fields}),
        reason_paths=MappingProxyType(
            {f.code: ("reasons", f.code) for f in fields if f.reason != "none"}
        ),
        item_labels=MappingProxyType(labels),
        reported_derived=reported,
    )


def _entries(value: Any) -> list[Mapping[str, Any]]:
    """A format-1 list of keyed entries (``[{"key": ...}]``, ``{key: {...}}`` or bare
    strings), as entries with their ``key``."""
    if isinstance(value, Mapping):
        return [
            {**(entry if isinstance(entry, Mapping) else {}), "key": key}
            for key, entry in value.items()
        ]
    out: list[Mapping[str, Any]] = []
    for entry in value or ():
        if isinstance(entry, str):
            out.append({"key": entry})
        elif isinstance(entry, Mapping):
            out.append(entry)
    return out


def _field(code: str, type: str, label: str, **given: Any) -> Field:
    """A format-1 field as the engine sees it: placed on the unit, required, no key, U,
    reason or evidence unless ``given`` says otherwise."""
    base: dict[str, Any] = {
        "definition": "",
        "key": None,
        "allow_u": False,
        "reason": "none",
        "evidence": "none",
        "level": "nominal",
        "placement": "unit",
        "required": True,
    }
    return Field(code=code, type=type, label=label, **{**base, **given})


def _binary(code: str, label: str, definition: str, key: str | None) -> Field:
    return _field(
        code,
        "grade",
        label,
        definition=definition,
        key=key,
        allow_u=True,
        evidence="required",
        options=(Option(0, "0", "", None), Option(1, "1", "", None)),
    )


def _format1(definition: Mapping[str, Any]) -> Engine:
    unit = str(definition.get("unit") or "tuple")
    if unit == "tuple":
        return _format1_tuple(definition)
    return _format1_answer(definition)


def _format1_tuple(definition: Mapping[str, Any]) -> Engine:
    given = {str(e.get("key")): e for e in _entries(definition.get("predicates"))}
    fields: list[Field] = []
    labels: dict[str, str] = {}
    paths: dict[str, Path] = {}
    for key in [k for k in given if k in PREDICATE_KEYS] or list(PREDICATE_KEYS):
        entry = given.get(key, {})
        label = entry.get("label") or key
        fields.append(
            _binary(key, str(label), str(entry.get("definition") or ""), entry.get("shortcut"))
        )
        labels[key] = f"{key}: {entry.get('label') or key}"
        paths[key] = ("predicates", key)
    support = definition.get(PASSAGE_SUPPORT)
    support = support if isinstance(support, Mapping) else {}
    support_label = str(support.get("label") or "Passage support")
    fields.append(
        _binary(
            PASSAGE_SUPPORT,
            support_label,
            str(support.get("definition") or ""),
            support.get("shortcut"),
        )
    )
    labels[PASSAGE_SUPPORT] = support_label
    paths[PASSAGE_SUPPORT] = (PASSAGE_SUPPORT,)
    roles = tuple(
        Option(str(e["key"]), str(e.get("label") or e["key"]), str(e.get("look_for") or ""), None)
        for e in _entries(definition.get("source_roles"))
    )
    fields.append(_field(SOURCE_ROLE, "choice", "Source role", options=roles))
    labels[SOURCE_ROLE] = "Source role"
    paths[SOURCE_ROLE] = (SOURCE_ROLE,)
    dimensions = tuple(
        _field(
            str(e["key"]),
            "number",
            str(e.get("label") or e["key"]),
            definition=str(e.get("definition") or ""),
            level="interval",
            minimum=0.0,
            maximum=1.0,
        )
        for e in _entries(definition.get("evidence_dimensions"))
    )
    for dimension in dimensions:
        paths[dimension.code] = ("evidence", dimension.code, "value")
    weights = {
        str(e["key"]): e["weight"]
        for e in _entries(definition.get("evidence_dimensions"))
        if "weight" in e
    }
    endpoint = Derived(
        code=ENDPOINT,
        rule="R_O",
        inputs=PREDICATE_KEYS,
        label="complete-case endpoint",
        definition="1 exactly for (I, A, M, D) = (1, 1, 1, 0), else 0; U if any is U.",
    )
    return Engine(
        unit="tuple",
        format_version=1,
        fields=tuple(fields),
        derived=(endpoint,),
        paths=MappingProxyType(paths),
        reason_paths=MappingProxyType({}),
        dimensions=dimensions,
        item_labels=MappingProxyType(labels),
        weights=MappingProxyType(weights),
    )


def _format1_answer(definition: Mapping[str, Any]) -> Engine:
    given = _entries(definition.get("verdicts")) or [{"key": key} for key in VERDICTS]
    kinds = tuple(str(e["key"]) for e in _entries(definition.get("claim_kinds"))) or CLAIM_KINDS
    reason = "required" if definition.get("reasons", "required") == "required" else "optional"
    fields: list[Field] = [
        _field(CLAIMS, "claims", "Claims", claim_kinds=kinds, claim_verdicts=CLAIM_VERDICTS)
    ]
    labels: dict[str, str] = {}
    paths: dict[str, Path] = {CLAIMS: (CLAIMS,)}
    reasons: dict[str, Path] = {}
    for entry in given:
        key = str(entry["key"])
        fields.append(
            _field(
                key,
                "verdict",
                str(entry.get("label") or key),
                definition=str(entry.get("definition") or ""),
                key=entry.get("shortcut"),
                allow_u=True,
                reason=reason,
            )
        )
        labels[key] = f"{key}: {entry.get('label') or key}"
        paths[key] = ("verdicts", key, "value")
        reasons[key] = ("verdicts", key, "reason")
    summary = Derived(
        code=CLAIMS_SUPPORTED,
        rule="claims_summary",
        inputs=(CLAIMS,),
        label="Supported, from the claims",
        definition="false if any verifiable claim is unsupported, true if all are supported "
        "(and there is one), else null; the supported verdict must equal it.",
    )
    return Engine(
        unit="answer",
        format_version=1,
        fields=tuple(fields),
        derived=(summary,),
        paths=MappingProxyType(paths),
        reason_paths=MappingProxyType(reasons),
        item_labels=MappingProxyType(labels),
        consensus_order="annotator",
    )


# --- reading a stored annotation ---------------------------------------------------------

_ABSENT = object()


def value_at(annotation: Any, path: Sequence[str]) -> Any:
    """The value at ``path`` in an annotation, or :data:`ABSENT` when a step is missing
    (or not an object): an absent value is not U."""
    value = annotation
    for step in path:
        if not isinstance(value, Mapping) or step not in value:
            return _ABSENT
        value = value[step]
    return value


ABSENT = _ABSENT


def compared_key(engine: Engine, annotation: Any) -> tuple:
    """What two agreeing annotations share: each unit-level value field's value, typed
    (``true`` and ``1`` differ; an absent value is neither U nor any value). For a codebook
    whose fields are all at unit level this is annotator.adjudication.picks'
    ``judgments_key`` of the engine's view, read straight from the stored annotation."""
    out = []
    for path in engine.compared_paths:
        value = annotation
        for step in path:
            if (type(value) is not dict and not isinstance(value, Mapping)) or step not in value:
                value = _ABSENT
                break
            value = value[step]
        out.append(_MISSING_KEY if value is _ABSENT else (type(value).__name__, value))
    return tuple(out)


#: How :func:`compared_key` writes an absent value (as picks writes its ``MISSING``).
_MISSING_KEY = ("tuple", "missing")


def field_value(engine: Engine, annotation: Any, code: str) -> Any:
    """One field's value in a stored annotation (``None`` for U or absent)."""
    value = value_at(annotation, engine.paths[code])
    return None if value is _ABSENT else value


def engine_values(engine: Engine, annotation: Mapping[str, Any]) -> dict[str, Any]:
    """A stored annotation in the engine's terms: ``{"values", "reasons", "spans"}`` (and
    ``documents`` for query_documents units), as a format-2 annotation holds them.

    A format-2 annotation is returned as it is (the same objects). For format 1, ``values``
    holds every field and evidence dimension the annotation gives (an absent one is left
    out, never read as U), ``reasons`` the reasons given (strings), ``spans`` the evidence
    spans each naming its ``field``; a failed answer (``verdicts: null``) has ``values``
    ``null``."""
    if engine.format_version == ENGINE_FORMAT:
        out = {
            "values": annotation.get("values"),
            "reasons": annotation.get("reasons") or {},
            "spans": annotation.get("spans") or [],
        }
        if "documents" in annotation:
            out["documents"] = annotation["documents"]
        return out
    if engine.unit == "answer" and annotation.get("verdicts", {}) is None:
        return {"values": None, "reasons": {}, "spans": []}
    values: dict[str, Any] = {}
    for item in (*engine.fields, *engine.dimensions):
        value = value_at(annotation, engine.paths[item.code])
        if value is not _ABSENT:
            values[item.code] = value
    reasons: dict[str, Any] = {}
    for code, path in engine.reason_paths.items():
        reason = value_at(annotation, path)
        if isinstance(reason, str):
            reasons[code] = reason
    spans: list[dict[str, Any]] = []
    given = annotation.get("spans")
    if isinstance(given, Mapping):
        for judgment in SPAN_JUDGMENTS:
            for span in given.get(judgment) or ():
                if isinstance(span, Mapping):
                    spans.append({"field": judgment, **span})
    return {"values": values, "reasons": reasons, "spans": spans}


# --- writing a stored annotation ---------------------------------------------------------


def annotation_from_view(engine: Engine, view: Mapping[str, Any]) -> dict[str, Any]:
    """The stored judgment part of an annotation from the engine's view (the inverse of
    :func:`engine_values`): what the codebook stores, never ``kind``, ``annotator``,
    ``assisted`` or ``rationale`` (nor an answer pair's ``sides``), which callers add.

    * format 2: the view in canonical shape, ``values``, ``reasons`` and ``spans`` (and
      ``documents`` when the view has them), new containers holding the view's entries;
    * a format-1 tuple: ``predicates`` (the codebook's predicates the view gives, in
      codebook order), ``passage_support`` and ``source_role`` (when given), ``spans`` by
      judgment (only the judgments that have spans, in the order I, A, M, D,
      passage_support; each span without its ``field``) and ``evidence`` (each dimension
      the view gives with the codebook's weight);
    * a format-1 answer: ``claims`` as the view has them and ``verdicts`` (each verdict
      given, with its reason or ``null``); a failed answer (``values`` null) is
      ``claims: []`` and ``verdicts: null``.

    An absent value stays absent (never U). A view that is not an object, a value naming
    no field of the codebook or a span naming no judgment that cites evidence raises
    :class:`ContractError` naming the place."""
    if not isinstance(view, Mapping):
        raise ContractError(codes.INVALID_FIELD, f"the view must be an object, not {show(view)}")
    values = view.get("values")
    if values is not None and not isinstance(values, Mapping):
        raise ContractError(
            codes.INVALID_FIELD, f"view.values must be an object or null, not {show(values)}"
        )
    reasons = _view_part(view, "reasons", Mapping, "an object")
    spans = _view_part(view, "spans", list, "a list")
    if engine.format_version == ENGINE_FORMAT:
        out: dict[str, Any] = {
            "values": None if values is None else dict(values),
            "reasons": dict(reasons or {}),
            "spans": [dict(span) for span in _span_objects(spans)],
        }
        if "documents" in view:
            documents = view["documents"]
            out["documents"] = (
                [dict(entry) if isinstance(entry, Mapping) else entry for entry in documents]
                if isinstance(documents, list)
                else documents
            )
        return out
    if engine.unit == "answer":
        return _answer_from_view(engine, values, reasons or {})
    return _tuple_from_view(engine, values or {}, spans or [])


def _view_part(view: Mapping[str, Any], key: str, kind: type, expected: str) -> Any:
    part = view.get(key)
    if part is not None and not isinstance(part, kind):
        raise ContractError(codes.INVALID_FIELD, f"view.{key} must be {expected}, not {show(part)}")
    return part


def _span_objects(spans: Sequence[Any] | None) -> list[Mapping[str, Any]]:
    out = []
    for index, span in enumerate(spans or ()):
        if not isinstance(span, Mapping):
            raise ContractError(
                codes.SPAN_MALFORMED, f"view.spans[{index}] must be an object, not {show(span)}"
            )
        out.append(span)
    return out


def _unknown_values(engine: Engine, values: Mapping[str, Any], known: Sequence[str]) -> None:
    for code in values:
        if code not in known:
            raise ContractError(
                codes.UNKNOWN_FIELD,
                f"view.values.{code} is not a field of this {engine.unit} codebook "
                f"(its fields: {', '.join(known)})",
            )


def _tuple_from_view(
    engine: Engine, values: Mapping[str, Any], spans: Sequence[Any]
) -> dict[str, Any]:
    codes_known = [f.code for f in (*engine.fields, *engine.dimensions)]
    _unknown_values(engine, values, codes_known)
    predicates = {
        f.code: values[f.code]
        for f in engine.fields
        if engine.paths[f.code][0] == "predicates" and f.code in values
    }
    out: dict[str, Any] = {"predicates": predicates}
    for code in (PASSAGE_SUPPORT, SOURCE_ROLE):
        if code in values:
            out[code] = values[code]
    by_judgment: dict[str, list[dict[str, Any]]] = {}
    for index, span in enumerate(_span_objects(spans)):
        judgment = span.get("field")
        if judgment not in SPAN_JUDGMENTS:
            raise ContractError(
                codes.SPAN_MALFORMED,
                f"view.spans[{index}].field is {show(judgment)}; evidence spans belong to "
                f"{', '.join(SPAN_JUDGMENTS)}",
            )
        by_judgment.setdefault(judgment, []).append(
            {key: value for key, value in span.items() if key != "field"}
        )
    out["spans"] = {j: by_judgment[j] for j in SPAN_JUDGMENTS if j in by_judgment}
    out["evidence"] = {
        d.code: {"value": values[d.code], "weight": engine.weights.get(d.code, 0.0)}
        for d in engine.dimensions
        if d.code in values
    }
    return out


def _answer_from_view(
    engine: Engine, values: Mapping[str, Any] | None, reasons: Mapping[str, Any]
) -> dict[str, Any]:
    if values is None:
        return {"claims": [], "verdicts": None}
    _unknown_values(engine, values, [f.code for f in engine.fields])
    claims = values.get(CLAIMS)
    verdicts = {
        f.code: {"value": values[f.code], "reason": reasons.get(f.code)}
        for f in engine.fields
        if f.type == "verdict" and f.code in values
    }
    return {"claims": [] if claims is None else claims, "verdicts": verdicts}
