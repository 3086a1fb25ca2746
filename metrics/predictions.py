"""Prediction files: an automated judge's (or a system's) values for the units of a frozen
study, checked line by line, and the gold value of a final record for the same field.

Pure tier: no Django. DESIGN.md, "Estimates a paper can print"; the format is documented in
``docs/predictions-format.md``. The service (``metrics.services.predictions_import``) reads
the file with :mod:`audit.contract.streams`, hands each decoded line here, and imports
nothing unless every line is good.

Fields a file may predict are the codebook's, as audit.contract.engine describes every
codebook: its derived ``R_O`` (0, 1 or ``null`` for U) and ``min`` values (``true``,
``false`` or ``null``), then its unit-level ``verdict`` (booleans), ``grade`` (its
integers: a format-1 predicate or ``passage_support`` is 0 or 1) and ``choice`` fields
(its codes: a source role). For the first tuple codebook that is ``R_O``, ``I``, ``A``,
``M``, ``D``, ``passage_support``, ``source_role``; for the first answer codebook its six
answer-level verdicts.

A value of the wrong type is refused with a reason, as the record contract refuses it:
``true`` is not 1 and ``"U"`` is not ``null``.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from audit.contract import codes
from audit.contract.engine import Engine, engine_of, engine_values, field_value
from audit.contract.fields import derive
from metrics.estimates import Estimate, JudgeScores, judge_scores

FORMAT = "predictions"
FORMAT_VERSION = 1
ENDPOINT = "R_O"
#: Derived rules and field types a prediction may name.
PREDICTED_RULES = ("R_O", "min")
PREDICTED_TYPES = ("verdict", "grade", "choice")

#: Reason codes of a prediction file (beside audit.contract.codes' line codes).
STUDY_NOT_FROZEN = "study_not_frozen"
UNKNOWN_PREDICTION_FIELD = "unknown_prediction_field"
UNKNOWN_UNIT = "unknown_unit"
DUPLICATE_UNIT = "duplicate_unit"
INVALID_VALUE = "invalid_value"
INVALID_POSITIVE = "invalid_positive"
NO_PREDICTIONS = "no_predictions"
#: A prediction set is never a gold standard (DESIGN.md: a judge is never its own gold).
PREDICTIONS_NOT_GOLD = "predictions_not_gold"

JUDGE = "judge"
SYSTEM = "system"
PREDICTOR_KINDS = (JUDGE, SYSTEM)

_HEADER_KEYS = {"claimgate", "format_version", "codebook", "field", "predictor", "positive"}
_HEADER_REQUIRED = _HEADER_KEYS - {"positive"}
_PREDICTOR_KEYS = {"kind", "name", "version"}
_LINE_KEYS = {"unit", "value"}
_DIGEST = re.compile(r"[0-9a-f]{64}")
_NAME_LIMIT = 200


class PredictionLineError(ValueError):
    """One bad line (or header): ``code`` a reason code, ``message`` a sentence naming the
    field."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


@dataclass(frozen=True)
class FieldSpec:
    """A predictable field: its key, a label, and the resolved values it takes (U is
    ``None`` and always allowed)."""

    key: str
    label: str
    values: tuple[Hashable, ...]
    boolean: bool  # verdicts are true/false; predicates 0/1; roles strings


@dataclass(frozen=True)
class Header:
    codebook_name: str
    codebook_version: str
    field: str
    kind: str
    name: str
    version: str
    positive: Hashable | None


def prediction_engine(unit_kind: str, definition: Mapping[str, Any] | None) -> Engine:
    """The engine of the codebook a prediction file is for (a definition without its
    ``unit`` is of ``unit_kind``)."""
    if not definition:
        return engine_of(None, unit=unit_kind)
    if "unit" not in definition:
        return engine_of({**definition, "unit": unit_kind})
    return engine_of(definition)


def prediction_fields(unit_kind: str, definition: Mapping[str, Any]) -> dict[str, FieldSpec]:
    """The fields a prediction file may name for a codebook of ``unit_kind``: its
    predictable derived values, then its fields with a value of a predictable type."""
    engine = prediction_engine(unit_kind, definition)
    fields: dict[str, FieldSpec] = {}
    for item in engine.derived:
        if item.rule not in PREDICTED_RULES or not set(item.inputs) <= set(engine.paths):
            continue
        label = f"{item.code}: {item.label or item.code}"
        if item.rule == "R_O":
            fields[item.code] = FieldSpec(item.code, label, (0, 1), False)
        else:
            fields[item.code] = FieldSpec(item.code, label, (False, True), True)
    for item in engine.value_fields:
        if item.type not in PREDICTED_TYPES or (item.type != "verdict" and not item.codes):
            continue
        label = engine.item_labels.get(item.code, item.code)
        if item.type == "verdict":
            fields[item.code] = FieldSpec(item.code, label, (False, True), True)
        else:
            fields[item.code] = FieldSpec(item.code, label, item.codes, False)
    return fields


def _string(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > _NAME_LIMIT:
        raise PredictionLineError(
            codes.INVALID_FIELD,
            f"{path} is {value!r:.60}; expected a non-empty string of at most {_NAME_LIMIT} "
            "characters",
        )
    return value


def _keys(value: Mapping[str, Any], allowed: set[str], required: set[str], path: str) -> None:
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise PredictionLineError(
            codes.UNKNOWN_FIELD, f"{path} has the unknown field {unknown[0]!r}"
        )
    missing = sorted(required - set(value))
    if missing:
        raise PredictionLineError(codes.MISSING_FIELD, f"{path} lacks the field {missing[0]!r}")


def value_check(spec: FieldSpec, value: Any, path: str = "value") -> Hashable | None:
    """``value`` if it is a resolved value of ``spec`` or ``None`` (U); else an error."""
    if value is None:
        return None
    if spec.boolean:
        ok = isinstance(value, bool)
    elif all(type(v) is int for v in spec.values):
        ok = type(value) is int and value in spec.values
    else:
        ok = isinstance(value, str) and value in spec.values
    if not ok:
        allowed = ", ".join(
            "true" if v is True else "false" if v is False else repr(v) for v in spec.values
        )
        raise PredictionLineError(
            INVALID_VALUE,
            f"{path} of field {spec.key} is {value!r:.60}; expected one of {allowed}, or null "
            "for U",
        )
    return value


def header_parse(
    value: Any, *, codebook: tuple[str, str], fields: Mapping[str, FieldSpec]
) -> Header:
    """The checked header (line 1); ``codebook`` is the study's (name, version)."""
    if not isinstance(value, dict):
        raise PredictionLineError(codes.NOT_AN_OBJECT, "line 1 must be the header object")
    if value.get("claimgate") != FORMAT:
        raise PredictionLineError(
            codes.MISSING_HEADER,
            f'line 1 must be the header {{"claimgate": "{FORMAT}", "format_version": 1, ...}}',
        )
    _keys(value, _HEADER_KEYS, _HEADER_REQUIRED, "the header")
    if value["format_version"] != FORMAT_VERSION or isinstance(value["format_version"], bool):
        raise PredictionLineError(
            codes.UNKNOWN_FORMAT,
            f"format_version is {value['format_version']!r}; this server reads {FORMAT_VERSION}",
        )
    book = value["codebook"]
    if not isinstance(book, dict):
        raise PredictionLineError(codes.INVALID_FIELD, "codebook must be {name, version}")
    _keys(book, {"name", "version"}, {"name", "version"}, "codebook")
    if (book["name"], book["version"]) != codebook:
        raise PredictionLineError(
            codes.CODEBOOK_MISMATCH,
            f"the file is for codebook {book['name']!r} {book['version']!r}; the study uses "
            f"{codebook[0]} {codebook[1]}",
        )
    field = value["field"]
    if field not in fields:
        raise PredictionLineError(
            UNKNOWN_PREDICTION_FIELD,
            f"field is {field!r:.60}; this codebook's predictable fields are " + ", ".join(fields),
        )
    predictor = value["predictor"]
    if not isinstance(predictor, dict):
        raise PredictionLineError(codes.INVALID_FIELD, "predictor must be {kind, name, version}")
    _keys(predictor, _PREDICTOR_KEYS, _PREDICTOR_KEYS, "predictor")
    if predictor["kind"] not in PREDICTOR_KINDS:
        raise PredictionLineError(
            codes.INVALID_FIELD,
            f"predictor.kind is {predictor['kind']!r:.40}; expected judge or system",
        )
    positive = value.get("positive")
    if positive is not None:
        try:
            value_check(fields[field], positive, "positive")
        except PredictionLineError as exc:
            raise PredictionLineError(INVALID_POSITIVE, exc.message) from None
    return Header(
        codebook_name=book["name"],
        codebook_version=book["version"],
        field=field,
        kind=predictor["kind"],
        name=_string(predictor["name"], "predictor.name"),
        version=_string(predictor["version"], "predictor.version"),
        positive=positive,
    )


def line_parse(value: Any, spec: FieldSpec) -> tuple[str, Hashable | None]:
    """(unit digest, value) of one prediction line."""
    if not isinstance(value, dict):
        raise PredictionLineError(codes.NOT_AN_OBJECT, "a prediction line is a JSON object")
    _keys(value, _LINE_KEYS, _LINE_KEYS, "the line")
    unit = value["unit"]
    if not isinstance(unit, str) or not _DIGEST.fullmatch(unit):
        raise PredictionLineError(
            codes.INVALID_FIELD,
            f"unit is {unit!r:.80}; expected the unit's digest, 64 lowercase hex characters",
        )
    return unit, value_check(spec, value["value"])


def final_value(annotation: Mapping[str, Any], field: str, engine: Engine) -> Hashable | None:
    """The value of ``field`` in a final record's annotation (``None`` for U, absent, or a
    value not of the field's type).

    A derived value (``R_O``) is computed from the record's fields by the codebook's rule,
    so it is the endpoint the contract computes, never a stored guess."""
    for item in engine.derived:
        if item.code == field:
            values = [field_value(engine, annotation, code) for code in item.inputs]
            if any(
                not (v is None or _typed(engine, code, v))
                for code, v in zip(item.inputs, values, strict=True)
            ):
                return None
            return derive(SimpleNamespace(derived=(item,)), engine_values(engine, annotation))[
                field
            ]
    value = field_value(engine, annotation, field)
    return value if value is not None and _typed(engine, field, value) else None


def _typed(engine: Engine, code: str, value: Any) -> bool:
    """Whether ``value`` has the type of field ``code``'s values (``true`` is not 1)."""
    kind = engine.field(code).type
    if kind == "verdict":
        return type(value) is bool
    if kind == "grade":
        return type(value) is int and value in engine.field(code).codes
    return type(value) is str


# --- scoring --------------------------------------------------------------------------------


@dataclass(frozen=True)
class GoldUnit:
    """What scoring needs of one unit: its domain (the bootstrap's cluster), whether it has a
    final record, and the final record's value of the field (``None``: U)."""

    domain: str
    final: bool
    value: Hashable | None


def _estimate_json(estimate: Estimate | None) -> dict[str, Any] | None:
    if estimate is None:
        return None
    return {
        "value": estimate.value,
        "low": estimate.low,
        "high": estimate.high,
        "numerator": estimate.numerator,
        "denominator": estimate.denominator,
    }


def judge_scores_json(scores: JudgeScores) -> dict[str, Any]:
    """:class:`metrics.estimates.JudgeScores` as a JSON value (categories keep their JSON
    type; U is ``null``)."""
    return {
        "categories": list(scores.categories),
        "confusion": [list(row) for row in scores.confusion],
        "n": scores.n,
        "accuracy": _estimate_json(scores.accuracy),
        "kappa": _estimate_json(scores.kappa),
        "classes": [
            {
                "category": c.category,
                "gold": c.gold,
                "predicted": c.predicted,
                "precision": _estimate_json(c.precision),
                "recall": _estimate_json(c.recall),
            }
            for c in scores.classes
        ],
        "positive": scores.positive,
        "accepted_error": _estimate_json(scores.accepted_error),
        "false_block": _estimate_json(scores.false_block),
        "clusters": scores.clusters,
        "n_boot": scores.n_boot,
        "seed": scores.seed,
        "confidence": scores.confidence,
    }


def prediction_scores(
    predictions: Mapping[int, Hashable | None],
    gold: Mapping[int, GoldUnit],
    *,
    positive: Hashable | None,
    n_boot: int,
    seed: int = 0,
) -> dict[str, Any]:
    """Score ``predictions`` (unit id -> value) against the units' final values.

    Units without a final record yet are left out and counted (``awaiting_final``); a final
    record whose value is U stays in, as gold U (its own row of the confusion). Intervals
    come from a bootstrap clustered by domain. Returns ``{"predicted", "scored",
    "awaiting_final", "domains", "scores"}`` with ``scores`` from :func:`judge_scores_json`
    (``None`` when no predicted unit has a final record)."""
    scored = sorted(unit for unit in predictions if unit in gold and gold[unit].final)
    result: dict[str, Any] = {
        "predicted": len(predictions),
        "scored": len(scored),
        "awaiting_final": len(predictions) - len(scored),
        "domains": len({gold[unit].domain for unit in scored}),
        "scores": None,
    }
    if scored:
        scores = judge_scores(
            [predictions[unit] for unit in scored],
            [gold[unit].value for unit in scored],
            [gold[unit].domain for unit in scored],
            seed,
            n_boot,
            positive,
        )
        result["scores"] = judge_scores_json(scores)
    return result
