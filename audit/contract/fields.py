"""Codebook format 2: fields and derived values, and the annotations they define.

A format-2 codebook declares its unit kind and its **fields** (docs/formats.md, "Codebook
format 2"); forms, validation, adjudication, reports and release columns are generated
from them. This module is pure (no Django): it parses the ``fields`` and ``derived``
declarations of a codebook file, checks an annotation against them and evaluates the
derived values.

Both parsing and checking collect **every** problem, each naming where it is (``path``)
with a reason code and a sentence, so that a researcher fixing a codebook file or an
annotator fixing a form sees all of them at once.

An annotation of a format-2 codebook::

    {"kind": "independent", "annotator": "p-…",
     "values": {"severity": 2, "target": null, "harmful": true},
     "reasons": {"target": "…"},
     "spans": [{"field": "severity", "snapshot": "answer", "start": 0, "end": 9,
                "quote": "…"}],
     "documents": [{"values": {…}, "reasons": {…}}, …],   # query_documents units only
     "rationale": null, "assisted": null}

U is the value ``null``. Grades are integers, choices their string codes, verdicts
``true``/``false``, numbers finite floats (or integers) within the field's bounds, dates
``YYYY-MM-DD``, text a string, spans and claims lists.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from audit.contract import codes
from audit.contract.endpoint import (
    resolve_complete_case,
    resolve_short_circuit,
    summarize_supported,
)
from audit.contract.errors import show, type_name

#: Unit kinds of format 2 (format 1 knows ``tuple`` and ``answer`` only).
UNIT_KINDS = ("tuple", "answer", "answer_pair", "query_documents")
FIELD_TYPES = (
    "choice",
    "grade",
    "verdict",
    "number",
    "date",
    "spans",
    "claims",
    "text",
    "links",
    "groups",
)
#: Set-level relations between the documents of a ``query_documents`` unit, by position:
#: ``links`` ([{"document": i, "by": j}]: document i is contradicted by document j) and
#: ``groups`` ([{"representative": i, "members": [i, j, ...]}]: redundant documents).
RELATION_TYPES = ("links", "groups")
#: Field types whose values are judgments (a value that may be U, compared for agreement).
VALUE_TYPES = ("choice", "grade", "verdict", "number", "date")
LEVELS = ("nominal", "ordinal", "interval")
DEFAULT_LEVEL = {"grade": "ordinal", "number": "interval"}
REASON_RULES = ("none", "optional", "required", "required_when_resolved")
EVIDENCE_RULES = ("none", "optional", "required")
PLACEMENTS = ("unit", "document", "set")
DERIVED_RULES = ("min", "R_O", "claims_summary")
R_O_INPUTS = ("I", "A", "M", "D")
CLAIM_KINDS = ("verifiable", "not_truth_apt")
CLAIM_VERDICTS = ("supported", "accurate")
ANNOTATION_KINDS = ("independent", "consensus", "adjudicated")

_CODE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,39}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_FIELD_KEYS = frozenset(
    {
        "code",
        "type",
        "label",
        "definition",
        "key",
        "allow_u",
        "reason",
        "evidence",
        "level",
        "placement",
        "required",
        "choices",
        "grades",
        "min",
        "max",
        "step",
        "claim_kinds",
        "claim_verdicts",
        "max_length",
    }
)
_OPTION_KEYS = frozenset({"code", "label", "definition", "key"})
_GRADE_KEYS = frozenset({"value", "anchor", "label", "key"})
_DERIVED_KEYS = frozenset({"code", "rule", "inputs", "threshold", "label", "definition"})
_ANNOTATION_KEYS = frozenset(
    {
        "kind",
        "annotator",
        "values",
        "reasons",
        "spans",
        "documents",
        "rationale",
        "assisted",
        "sides",
    }
)
_SPAN_KEYS = frozenset({"field", "snapshot", "start", "end", "quote"})
_CLAIM_KEYS = ("id", "span", "source", "quote_span", "kind", "reason")
MAX_TEXT = 20_000


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong, where (``path``, in the file or the annotation) and why."""

    code: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


@dataclass(frozen=True, slots=True)
class Option:
    """A code of a ``choice`` field or a grade of a ``grade`` field (``code`` is then the
    integer grade)."""

    code: str | int
    label: str
    definition: str
    key: str | None


@dataclass(frozen=True, slots=True)
class Field:
    code: str
    type: str
    label: str
    definition: str
    key: str | None
    allow_u: bool
    reason: str
    evidence: str
    level: str
    placement: str
    required: bool
    options: tuple[Option, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    step: float | None = None
    claim_kinds: tuple[str, ...] = CLAIM_KINDS
    claim_verdicts: tuple[str, ...] = CLAIM_VERDICTS
    max_length: int = MAX_TEXT

    @property
    def is_value(self) -> bool:
        """A judgment with a value (compared for agreement, a column in releases)."""
        return self.type in VALUE_TYPES

    @property
    def codes(self) -> tuple[str | int, ...]:
        """The allowed resolved values of a choice or grade field, in codebook order."""
        return tuple(option.code for option in self.options)

    def option(self, code: Any) -> Option | None:
        for option in self.options:
            if option.code == code and type(option.code) is type(code):
                return option
        return None


@dataclass(frozen=True, slots=True)
class Derived:
    code: str
    rule: str
    #: Field codes the rule reads, in order (for ``R_O``: the fields of I, A, M, D).
    inputs: tuple[str, ...]
    threshold: float | None = None
    label: str = ""
    definition: str = ""


# --- answer_pair units: the sides ---------------------------------------------------------
# An annotator of an answer_pair unit sees the two answers as "left" and "right", in an
# order drawn for them; the stored annotation speaks of the roles instead (docs/formats.md,
# "Answer pairs: sides"): a choice field whose codes include left and right stores
# ``answer`` for the side that showed the evaluated answer and ``baseline`` for the other,
# spans cite the snapshots ``answer`` and ``baseline``, and ``sides`` records the order.

#: What the annotator of an answer pair sees: the two answers' places.
PAIR_SIDES = ("left", "right")
#: What a stored answer pair annotation names instead: the answers' roles (and snapshots).
PAIR_ROLES = ("answer", "baseline")


def side_fields(codebook: Any) -> tuple[str, ...]:
    """The codes of an answer_pair codebook's **side fields**: unit-level ``choice`` fields
    whose codes include both ``left`` and ``right`` (empty for other unit kinds)."""
    if getattr(codebook, "unit", None) != "answer_pair":
        return ()
    return tuple(
        field.code
        for field in codebook.fields
        if field.type == "choice"
        and field.placement != "document"
        and {"left", "right"} <= set(field.codes)
    )


def sides_problem(sides: Any) -> str | None:
    """Why ``sides`` is not a valid side mapping (``None``: it is one): exactly
    ``{"left": role, "right": other role}`` with the roles ``answer`` and ``baseline``."""
    if (
        type(sides) is dict
        and sides.keys() == set(PAIR_SIDES)
        and sorted(str(role) for role in sides.values()) == sorted(PAIR_ROLES)
        and all(type(role) is str for role in sides.values())
    ):
        return None
    return (
        f"is {show(sides)}; it records which answer each side showed: "
        '{"left": "answer", "right": "baseline"} or {"left": "baseline", "right": "answer"}'
    )


def _stored_field(field: Field) -> Field:
    """A side field as a stored annotation answers it: ``left`` → ``answer``, ``right`` →
    ``baseline`` (labels kept), so that its codes are the stored ones."""
    stored = {"left": "answer", "right": "baseline"}
    return replace(
        field,
        options=tuple(
            replace(option, code=stored.get(str(option.code), option.code))
            for option in field.options
        ),
    )


# --- parsing a codebook's fields -----------------------------------------------------


def _text(entry: Mapping[str, Any], key: str, path: str, problems: list[Problem]) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str):
        problems.append(
            Problem(
                codes.INVALID_FIELD, f"{path}.{key}", f"must be a string, not {type_name(value)}"
            )
        )
        return ""
    return value


def _key(entry: Mapping[str, Any], path: str, problems: list[Problem]) -> str | None:
    key = entry.get("key")
    if key is None:
        return None
    if not isinstance(key, str) or len(key) != 1 or not key.isprintable() or key.isspace():
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                f"{path}.key",
                f"must be one printable character (a keyboard key), not {show(key)}",
            )
        )
        return None
    return key


def _enum(
    entry: Mapping[str, Any],
    key: str,
    allowed: Sequence[str],
    default: str,
    path: str,
    problems: list[Problem],
) -> str:
    value = entry.get(key, default)
    if not isinstance(value, str) or value not in allowed:
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                f"{path}.{key}",
                f"must be one of {', '.join(allowed)}, not {show(value)}",
            )
        )
        return default
    return value


def _bool(
    entry: Mapping[str, Any], key: str, default: bool, path: str, problems: list[Problem]
) -> bool:
    value = entry.get(key, default)
    if type(value) is not bool:
        problems.append(
            Problem(
                codes.INVALID_FIELD, f"{path}.{key}", f"must be true or false, not {show(value)}"
            )
        )
        return default
    return value


def _number(entry: Mapping[str, Any], key: str, path: str, problems: list[Problem]) -> float | None:
    value = entry.get(key)
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value):
        problems.append(
            Problem(
                codes.INVALID_FIELD, f"{path}.{key}", f"must be a finite number, not {show(value)}"
            )
        )
        return None
    return float(value)


def _unknown_keys(
    entry: Mapping[str, Any], allowed: frozenset[str], path: str, problems: list[Problem]
) -> None:
    for key in sorted(str(k) for k in entry if k not in allowed):
        problems.append(
            Problem(codes.UNKNOWN_FIELD, f"{path}.{key}", "is not a key this format knows")
        )


def _options(field: Mapping[str, Any], path: str, problems: list[Problem]) -> tuple[Option, ...]:
    options: list[Option] = []
    seen: set[Any] = set()
    raw = field.get("choices")
    where = f"{path}.choices"
    if not isinstance(raw, list) or not raw:
        problems.append(
            Problem(
                codes.MISSING_FIELD if raw is None else codes.INVALID_FIELD,
                where,
                "a choice field lists its codes: a non-empty list of {code, label}",
            )
        )
        return ()
    for index, entry in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(entry, Mapping):
            problems.append(
                Problem(codes.INVALID_FIELD, at, f"must be an object, not {type_name(entry)}")
            )
            continue
        _unknown_keys(entry, _OPTION_KEYS, at, problems)
        code = entry.get("code")
        if not isinstance(code, str) or not code or len(code) > 60:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"{at}.code",
                    f"must be a non-empty string, not {show(code)}",
                )
            )
            continue
        if code in seen:
            problems.append(Problem(codes.INVALID_FIELD, f"{at}.code", f"{code!r} is listed twice"))
            continue
        seen.add(code)
        options.append(
            Option(
                code=code,
                label=_text(entry, "label", at, problems) or code,
                definition=_text(entry, "definition", at, problems),
                key=_key(entry, at, problems),
            )
        )
    return tuple(options)


def _grades(field: Mapping[str, Any], path: str, problems: list[Problem]) -> tuple[Option, ...]:
    raw = field.get("grades")
    where = f"{path}.grades"
    if not isinstance(raw, list) or len(raw) < 2:
        problems.append(
            Problem(
                codes.MISSING_FIELD if raw is None else codes.INVALID_FIELD,
                where,
                "a grade field lists its grades 0 to n, each with an anchor text (at least two)",
            )
        )
        return ()
    grades: list[Option] = []
    for index, entry in enumerate(raw):
        at = f"{where}[{index}]"
        if not isinstance(entry, Mapping):
            problems.append(
                Problem(codes.INVALID_FIELD, at, f"must be an object, not {type_name(entry)}")
            )
            continue
        _unknown_keys(entry, _GRADE_KEYS, at, problems)
        value = entry.get("value")
        if type(value) is not int or value != index:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"{at}.value",
                    f"must be {index}: grades run 0, 1, … n in order, not {show(value)}",
                )
            )
            continue
        anchor = _text(entry, "anchor", at, problems)
        if not anchor:
            problems.append(
                Problem(codes.MISSING_FIELD, f"{at}.anchor", "every grade has an anchor text")
            )
        grades.append(
            Option(
                code=value,
                label=_text(entry, "label", at, problems) or str(value),
                definition=anchor,
                key=_key(entry, at, problems) or str(value),
            )
        )
    return tuple(grades)


def _entry_code(
    entry: Any, path: str, allowed: frozenset[str], problems: list[Problem]
) -> str | None:
    """The ``code`` of a field or derived-value declaration, after its shape is checked."""
    if not isinstance(entry, Mapping):
        problems.append(
            Problem(codes.INVALID_FIELD, path, f"must be an object, not {type_name(entry)}")
        )
        return None
    _unknown_keys(entry, allowed, path, problems)
    code = entry.get("code")
    if not isinstance(code, str) or not _CODE.fullmatch(code):
        problems.append(
            Problem(
                codes.INVALID_FIELD if code is not None else codes.MISSING_FIELD,
                f"{path}.code",
                f"must be an identifier (a letter, then letters, digits or _; at most 40), "
                f"not {show(code)}",
            )
        )
        return None
    return code


def _field(entry: Any, index: int, unit: str, problems: list[Problem]) -> Field | None:
    code = _entry_code(entry, f"fields[{index}]", _FIELD_KEYS, problems)
    if code is None:
        return None
    path = f"fields[{index}] ({code})"
    kind = entry.get("type")
    if not isinstance(kind, str) or kind not in FIELD_TYPES:
        problems.append(
            Problem(
                codes.INVALID_FIELD if kind is not None else codes.MISSING_FIELD,
                f"{path}.type",
                f"must be one of {', '.join(FIELD_TYPES)}, not {show(kind)}",
            )
        )
        return None
    label = _text(entry, "label", path, problems)
    if not label:
        problems.append(Problem(codes.MISSING_FIELD, f"{path}.label", "every field has a label"))
    value_type = kind in VALUE_TYPES
    allow_u = _bool(entry, "allow_u", value_type, path, problems)
    reason = _enum(entry, "reason", REASON_RULES, "none", path, problems)
    evidence = _enum(entry, "evidence", EVIDENCE_RULES, "none", path, problems)
    level = _enum(entry, "level", LEVELS, DEFAULT_LEVEL.get(kind, "nominal"), path, problems)
    placement = _enum(entry, "placement", PLACEMENTS, "unit", path, problems)
    if placement != "unit" and unit != "query_documents":
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                f"{path}.placement",
                f"{placement!r} applies to query_documents units only; this codebook's unit "
                f"is {unit!r}",
            )
        )
    if kind in RELATION_TYPES and (unit != "query_documents" or placement != "set"):
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                f"{path}.placement",
                f"a {kind} field relates documents: it needs a query_documents unit and "
                f"placement 'set'",
            )
        )
    if not value_type:
        if "allow_u" in entry and allow_u:
            problems.append(
                Problem(codes.INVALID_FIELD, f"{path}.allow_u", f"a {kind} field has no U value")
            )
        allow_u = False
        if evidence != "none" and kind in ("spans", "claims", *RELATION_TYPES):
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"{path}.evidence",
                    f"a {kind} field is evidence itself; evidence must be 'none'",
                )
            )
    if level == "interval" and kind not in ("number", "grade"):
        problems.append(
            Problem(codes.INVALID_FIELD, f"{path}.level", f"a {kind} field cannot be interval")
        )
    if level == "ordinal" and kind not in ("grade", "number", "date", "choice"):
        problems.append(
            Problem(codes.INVALID_FIELD, f"{path}.level", f"a {kind} field cannot be ordinal")
        )
    options: tuple[Option, ...] = ()
    minimum = maximum = step = None
    claim_kinds = CLAIM_KINDS
    claim_verdicts = CLAIM_VERDICTS
    max_length = MAX_TEXT
    if kind == "choice":
        options = _options(entry, path, problems)
    elif kind == "grade":
        options = _grades(entry, path, problems)
    elif kind == "number":
        minimum = _number(entry, "min", path, problems)
        maximum = _number(entry, "max", path, problems)
        step = _number(entry, "step", path, problems)
        minimum = 0.0 if minimum is None else minimum
        maximum = 1.0 if maximum is None else maximum
        if minimum >= maximum:
            problems.append(
                Problem(
                    codes.INVALID_FIELD, f"{path}.min", f"min {minimum} must be below max {maximum}"
                )
            )
        if step is not None and step <= 0:
            problems.append(Problem(codes.INVALID_FIELD, f"{path}.step", "must be positive"))
    elif kind == "claims":
        claim_kinds = _strings(entry, "claim_kinds", CLAIM_KINDS, path, problems)
        claim_verdicts = _strings(entry, "claim_verdicts", CLAIM_VERDICTS, path, problems)
        if "verifiable" not in claim_kinds:
            problems.append(
                Problem(codes.INVALID_FIELD, f"{path}.claim_kinds", "must include 'verifiable'")
            )
    elif kind == "text":
        raw = entry.get("max_length", MAX_TEXT)
        if type(raw) is not int or not 1 <= raw <= MAX_TEXT:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"{path}.max_length",
                    f"must be an integer from 1 to {MAX_TEXT}, not {show(raw)}",
                )
            )
        else:
            max_length = raw
    for key, applies in (
        ("choices", kind == "choice"),
        ("grades", kind == "grade"),
        ("min", kind == "number"),
        ("max", kind == "number"),
        ("step", kind == "number"),
        ("claim_kinds", kind == "claims"),
        ("claim_verdicts", kind == "claims"),
        ("max_length", kind == "text"),
    ):
        if key in entry and not applies:
            problems.append(
                Problem(codes.UNKNOWN_FIELD, f"{path}.{key}", f"does not apply to a {kind} field")
            )
    return Field(
        code=code,
        type=kind,
        label=label or code,
        definition=_text(entry, "definition", path, problems),
        key=_key(entry, path, problems),
        allow_u=allow_u,
        reason=reason,
        evidence=evidence,
        level=level,
        placement=placement,
        required=_bool(entry, "required", True, path, problems),
        options=options,
        minimum=minimum,
        maximum=maximum,
        step=step,
        claim_kinds=claim_kinds,
        claim_verdicts=claim_verdicts,
        max_length=max_length,
    )


def _strings(
    entry: Mapping[str, Any], key: str, default: tuple[str, ...], path: str, problems: list[Problem]
) -> tuple[str, ...]:
    raw = entry.get(key)
    if raw is None:
        return default
    if (
        not isinstance(raw, list)
        or not raw
        or not all(isinstance(item, str) and _CODE.fullmatch(item) for item in raw)
        or len(set(raw)) != len(raw)
    ):
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                f"{path}.{key}",
                f"must be a non-empty list of distinct identifiers, not {show(raw)}",
            )
        )
        return default
    return tuple(raw)


def _derived(
    entry: Any, index: int, by_code: Mapping[str, Field], taken: set[str], problems: list[Problem]
) -> Derived | None:
    code = _entry_code(entry, f"derived[{index}]", _DERIVED_KEYS, problems)
    if code is None:
        return None
    path = f"derived[{index}] ({code})"
    if code in taken:
        problems.append(
            Problem(
                codes.INVALID_FIELD, f"{path}.code", f"{code!r} is already a field or derived value"
            )
        )
    taken.add(code)
    rule = entry.get("rule")
    if rule not in DERIVED_RULES:
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                f"{path}.rule",
                f"must be one of {', '.join(DERIVED_RULES)}, not {show(rule)}",
            )
        )
        return None
    raw = entry.get("inputs")
    threshold = None
    inputs: tuple[str, ...] = ()
    if rule == "R_O":
        if not isinstance(raw, Mapping) or sorted(raw) != sorted(R_O_INPUTS):
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"{path}.inputs",
                    "R_O maps each of I, A, M, D to a field: "
                    '{"I": code, "A": code, "M": code, "D": code}',
                )
            )
            return None
        inputs = tuple(raw[key] for key in R_O_INPUTS)
        for key, name in zip(R_O_INPUTS, inputs, strict=True):
            field = by_code.get(name) if isinstance(name, str) else None
            if field is None:
                problems.append(
                    Problem(
                        codes.INVALID_FIELD, f"{path}.inputs.{key}", f"names no field: {show(name)}"
                    )
                )
            elif field.type != "choice" or set(field.codes) != {"0", "1"}:
                problems.append(
                    Problem(
                        codes.INVALID_FIELD,
                        f"{path}.inputs.{key}",
                        f"field {name!r} must be a choice with exactly the codes '0' and '1'",
                    )
                )
    else:
        if not isinstance(raw, list) or not raw or not all(isinstance(x, str) for x in raw):
            problems.append(
                Problem(
                    codes.INVALID_FIELD, f"{path}.inputs", "must be a non-empty list of field codes"
                )
            )
            return None
        inputs = tuple(raw)
        for position, name in enumerate(inputs):
            field = by_code.get(name)
            at = f"{path}.inputs[{position}]"
            if field is None:
                problems.append(Problem(codes.INVALID_FIELD, at, f"names no field: {show(name)}"))
            elif rule == "min" and field.type != "grade":
                problems.append(
                    Problem(
                        codes.INVALID_FIELD,
                        at,
                        f"field {name!r} is a {field.type}; min reads grades",
                    )
                )
            elif rule == "claims_summary" and field.type != "claims":
                problems.append(
                    Problem(
                        codes.INVALID_FIELD,
                        at,
                        f"field {name!r} is a {field.type}; claims_summary reads a claims field",
                    )
                )
            elif field is not None and field.placement == "document":
                problems.append(
                    Problem(
                        codes.INVALID_FIELD,
                        at,
                        f"field {name!r} is per document; a derived value reads unit-level fields",
                    )
                )
        if rule == "claims_summary" and len(inputs) != 1:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"{path}.inputs",
                    "claims_summary reads exactly one claims field",
                )
            )
        if rule == "min":
            threshold = _number(entry, "threshold", path, problems)
            if threshold is None:
                problems.append(
                    Problem(
                        codes.MISSING_FIELD, f"{path}.threshold", "a min rule passes at a threshold"
                    )
                )
    if rule != "min" and "threshold" in entry:
        problems.append(
            Problem(codes.UNKNOWN_FIELD, f"{path}.threshold", f"does not apply to {rule}")
        )
    return Derived(
        code=code,
        rule=rule,
        inputs=inputs,
        threshold=threshold,
        label=_text(entry, "label", path, problems) or code,
        definition=_text(entry, "definition", path, problems),
    )


def parse_fields(
    d: Mapping[str, Any], unit: str
) -> tuple[tuple[Field, ...], tuple[Derived, ...], list[Problem]]:
    """The ``fields`` and ``derived`` of a format-2 codebook file, and every problem found
    (an empty list: the declarations are sound)."""
    problems: list[Problem] = []
    raw = d.get("fields")
    fields: list[Field] = []
    if not isinstance(raw, list) or not raw:
        problems.append(
            Problem(
                codes.MISSING_FIELD if raw is None else codes.INVALID_FIELD,
                "fields",
                "a format-2 codebook declares a non-empty list of fields",
            )
        )
        raw = []
    by_code: dict[str, Field] = {}
    keys: dict[str, str] = {}
    for index, entry in enumerate(raw):
        field = _field(entry, index, unit, problems)
        if field is None:
            continue
        if field.code in by_code:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"fields[{index}].code",
                    f"{field.code!r} is declared twice",
                )
            )
            continue
        if field.key is not None and field.key.lower() == "u":
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"fields[{index}] ({field.code}).key",
                    "'u' chooses U (unresolved) inside a field: give the field another key",
                )
            )
        elif field.key is not None:
            other = keys.get(field.key)
            if other is not None:
                problems.append(
                    Problem(
                        codes.INVALID_FIELD,
                        f"fields[{index}] ({field.code}).key",
                        f"key {field.key!r} is already the key of field {other!r}",
                    )
                )
            keys[field.key] = field.code
        by_code[field.code] = field
        fields.append(field)
    derived: list[Derived] = []
    raw_derived = d.get("derived", [])
    if not isinstance(raw_derived, list):
        problems.append(Problem(codes.INVALID_FIELD, "derived", "must be a list"))
        raw_derived = []
    taken = set(by_code)
    for index, entry in enumerate(raw_derived):
        item = _derived(entry, index, by_code, taken, problems)
        if item is not None:
            derived.append(item)
    return tuple(fields), tuple(derived), problems


# --- checking an annotation ----------------------------------------------------------


def _or_u(field: Field) -> str:
    return " or null (U)" if field.allow_u else ""


def _check_value(field: Field, value: Any, path: str, problems: list[Problem]) -> None:
    if value is None:
        if not field.allow_u:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    path,
                    f"{field.label} does not allow U (null); choose a value",
                )
            )
        return
    kind = field.type
    if kind == "choice":
        if type(value) is not str or field.option(value) is None:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    path,
                    f"is {show(value)}; {field.label} takes one of "
                    f"{', '.join(str(c) for c in field.codes)}{_or_u(field)}",
                )
            )
    elif kind == "grade":
        if type(value) is not int or field.option(value) is None:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    path,
                    f"is {show(value)}; {field.label} is a grade 0 to {len(field.options) - 1}"
                    f"{_or_u(field)}",
                )
            )
    elif kind == "verdict":
        if type(value) is not bool:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    path,
                    f"is {show(value)}; a verdict is true or false{_or_u(field)}",
                )
            )
    elif kind == "number":
        if type(value) not in (int, float) or not math.isfinite(value):
            problems.append(
                Problem(codes.INVALID_FIELD, path, f"is {show(value)}; {field.label} is a number")
            )
        elif (
            not (field.minimum or 0.0) <= value <= (1.0 if field.maximum is None else field.maximum)
        ):
            problems.append(
                Problem(
                    codes.DIMENSION_VALUE_OUT_OF_RANGE,
                    path,
                    f"is {value!r}; {field.label} lies in [{field.minimum:g}, {field.maximum:g}]",
                )
            )
    elif kind == "date":
        ok = type(value) is str and _DATE.fullmatch(value) is not None
        if ok:
            try:
                date.fromisoformat(value)
            except ValueError:
                ok = False
        if not ok:
            problems.append(
                Problem(codes.INVALID_FIELD, path, f"is {show(value)}; a date is YYYY-MM-DD")
            )
    elif kind == "text":
        if type(value) is not str:
            problems.append(
                Problem(codes.INVALID_FIELD, path, f"is {type_name(value)}; {field.label} is text")
            )
        elif len(value) > field.max_length:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    path,
                    f"has {len(value):,} characters; at most {field.max_length:,}",
                )
            )


def _span_problem(span: Any, path: str, texts: Mapping[str, str] | None) -> Problem | None:
    """The first problem of one span, or ``None``; with ``texts=None`` only its shape."""
    if type(span) is not dict or span.keys() != _SPAN_KEYS:
        return Problem(codes.SPAN_MALFORMED, path, "a span is {field, snapshot, start, end, quote}")
    snapshot, start, end, quote = span["snapshot"], span["start"], span["end"], span["quote"]
    if texts is None:
        if type(snapshot) is not str or type(start) is not int or type(end) is not int:
            return Problem(codes.SPAN_MALFORMED, path, "a span names its snapshot and positions")
        if type(quote) is not str or not 0 <= start < end:
            return Problem(codes.SPAN_MALFORMED, path, "a span is a non-empty range with its quote")
        return None
    if type(snapshot) is not str or snapshot not in texts:
        return Problem(
            codes.SPAN_MALFORMED,
            f"{path}.snapshot",
            f"is {show(snapshot)}; here it must be one of {', '.join(texts)}",
        )
    if type(start) is not int or type(end) is not int or type(quote) is not str:
        return Problem(
            codes.SPAN_MALFORMED, path, "start and end are integers (code points), quote a string"
        )
    text = texts[snapshot]
    if not 0 <= start < end <= len(text):
        return Problem(
            codes.SPAN_OUT_OF_RANGE,
            path,
            f"[{start}, {end}) is not a non-empty range inside the {snapshot} text of "
            f"{len(text)} code points",
        )
    if text[start:end] != quote:
        return Problem(
            codes.SPAN_QUOTE_MISMATCH,
            f"{path}.quote",
            f"{show(quote, 40)} is not the {snapshot} text at [{start}, {end}), which reads "
            f"{show(text[start:end], 40)}",
        )
    return None


def span_problem(span: Any, path: str, texts: Mapping[str, str] | None) -> Problem | None:
    """The first problem of one span (``{field, snapshot, start, end, quote}``) against
    ``texts`` by snapshot name, or ``None``."""
    return _span_problem(span, path, texts)


def _check_claims(
    field: Field,
    value: Any,
    path: str,
    texts: Mapping[str, str] | None,
    problems: list[Problem],
) -> None:
    if type(value) is not list:
        problems.append(
            Problem(codes.INVALID_FIELD, path, f"is {type_name(value)}; claims are a list")
        )
        return
    answer = None if texts is None else {"answer": texts.get("answer", "")}
    sources = (
        None
        if texts is None
        else {name: text for name, text in texts.items() if name.startswith(("source", "document"))}
    )
    seen: set[str] = set()
    allowed = frozenset((*_CLAIM_KEYS, *field.claim_verdicts))
    for index, claim in enumerate(value):
        at = f"{path}[{index}]"
        if type(claim) is not dict:
            problems.append(Problem(codes.INVALID_FIELD, at, "a claim is an object"))
            continue
        for key in sorted(str(k) for k in claim if k not in allowed):
            problems.append(Problem(codes.UNKNOWN_FIELD, f"{at}.{key}", "is not a key of a claim"))
        for key in (*_CLAIM_KEYS, *field.claim_verdicts):
            if key not in claim:
                problems.append(Problem(codes.MISSING_FIELD, f"{at}.{key}", "is missing"))
        cid = claim.get("id")
        if type(cid) is not str or not cid:
            problems.append(
                Problem(codes.INVALID_FIELD, f"{at}.id", "a claim has a non-empty string id")
            )
        elif cid in seen:
            problems.append(
                Problem(codes.INVALID_FIELD, f"{at}.id", f"{cid!r} is used by an earlier claim")
            )
        else:
            seen.add(cid)
        span = claim.get("span")
        if span is not None or "span" in claim:
            problem = _span_problem(
                {"field": field.code, **span} if type(span) is dict else span,
                f"{at}.span",
                answer,
            )
            if problem is not None:
                problems.append(problem)
        kind = claim.get("kind")
        if kind not in field.claim_kinds:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"{at}.kind",
                    f"is {show(kind)}; one of {', '.join(field.claim_kinds)}",
                )
            )
        for verdict in field.claim_verdicts:
            if verdict in claim and claim[verdict] is not None and type(claim[verdict]) is not bool:
                problems.append(
                    Problem(
                        codes.INVALID_FIELD,
                        f"{at}.{verdict}",
                        f"is {show(claim[verdict])}; true, false or null",
                    )
                )
        reason = claim.get("reason")
        if reason is not None and type(reason) is not str:
            problems.append(Problem(codes.INVALID_FIELD, f"{at}.reason", "a string or null"))
        source = claim.get("source")
        quote = claim.get("quote_span")
        if source is not None and (
            type(source) is not str or (sources is not None and source not in sources)
        ):
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"{at}.source",
                    f"is {show(source)}; one of {', '.join(sources or ()) or 'no source'}",
                )
            )
        elif quote is not None:
            if source is None:
                problems.append(
                    Problem(
                        codes.SPAN_MALFORMED,
                        f"{at}.quote_span",
                        "needs source to say what it quotes",
                    )
                )
            else:
                problem = _span_problem(
                    {"field": field.code, **quote} if type(quote) is dict else quote,
                    f"{at}.quote_span",
                    None if sources is None else {source: sources[source]},
                )
                if problem is not None:
                    problems.append(problem)
        elif claim.get("supported") is not None and "supported" in field.claim_verdicts:
            problems.append(
                Problem(
                    codes.SPAN_MISSING,
                    f"{at}.quote_span",
                    "supported is resolved; cite the source passage",
                )
            )


def _check_values(
    fields: Sequence[Field],
    values: Any,
    reasons: Any,
    path: str,
    texts: Mapping[str, str] | None,
    problems: list[Problem],
    documents: int | None = None,
) -> dict[str, Any]:
    """Check one ``values``/``reasons`` pair against ``fields``; the values it read."""
    if type(values) is not dict:
        problems.append(
            Problem(
                codes.INVALID_FIELD, f"{path}values", f"must be an object, not {type_name(values)}"
            )
        )
        values = {}
    if reasons is None:
        reasons = {}
    if type(reasons) is not dict:
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                f"{path}reasons",
                f"must be an object, not {type_name(reasons)}",
            )
        )
        reasons = {}
    known = {field.code for field in fields}
    for key in sorted(str(k) for k in values if k not in known):
        problems.append(Problem(codes.UNKNOWN_FIELD, f"{path}values.{key}", "is not a field here"))
    for key in sorted(str(k) for k in reasons if k not in known):
        problems.append(Problem(codes.UNKNOWN_FIELD, f"{path}reasons.{key}", "is not a field here"))
    for field in fields:
        at = f"{path}values.{field.code}"
        if field.code not in values:
            if field.required:
                problems.append(
                    Problem(
                        codes.MISSING_FIELD,
                        at,
                        f"{field.label} is missing"
                        + ("; write U as null" if field.allow_u else ""),
                    )
                )
            value = None
        else:
            value = values[field.code]
            if field.type == "claims":
                _check_claims(field, value, at, texts, problems)
            elif field.type in RELATION_TYPES:
                _check_relation(field, value, at, documents, problems)
            elif field.type == "spans":
                if type(value) is not list:
                    problems.append(
                        Problem(codes.INVALID_FIELD, at, "a spans field holds a list of spans")
                    )
                else:
                    for index, span in enumerate(value):
                        problem = _span_problem(
                            {"field": field.code, **span}
                            if type(span) is dict and "field" not in span
                            else span,
                            f"{at}[{index}]",
                            texts,
                        )
                        if problem is not None:
                            problems.append(problem)
            else:
                _check_value(field, value, at, problems)
        reason = reasons.get(field.code)
        where = f"{path}reasons.{field.code}"
        if reason is not None and type(reason) is not str:
            problems.append(Problem(codes.INVALID_FIELD, where, "a reason is a string"))
            reason = None
        if field.reason == "none" and reason:
            problems.append(Problem(codes.UNKNOWN_FIELD, where, f"{field.label} takes no reason"))
        needs = field.reason == "required" or (
            field.reason == "required_when_resolved" and value is not None
        )
        if needs and field.code in values and not (reason and reason.strip()):
            problems.append(
                Problem(
                    codes.MISSING_FIELD, where, f"{field.label} needs a reason: say what decided it"
                )
            )
    return values


def _position(value: Any, documents: int | None) -> bool:
    return type(value) is int and value >= 0 and (documents is None or value < documents)


def _check_relation(
    field: Field, value: Any, path: str, documents: int | None, problems: list[Problem]
) -> None:
    """``links`` and ``groups``: documents named by position, each position in range."""
    if type(value) is not list:
        problems.append(Problem(codes.INVALID_FIELD, path, f"a {field.type} field holds a list"))
        return
    where = "a document position" + (f" from 0 to {documents - 1}" if documents else "")
    grouped: set[int] = set()
    for index, entry in enumerate(value):
        at = f"{path}[{index}]"
        if field.type == "links":
            if type(entry) is not dict or entry.keys() != {"document", "by"}:
                problems.append(Problem(codes.INVALID_FIELD, at, "a link is {document, by}"))
            elif not (
                _position(entry["document"], documents) and _position(entry["by"], documents)
            ):
                problems.append(
                    Problem(codes.INVALID_FIELD, at, f"document and by are each {where}")
                )
            elif entry["document"] == entry["by"]:
                problems.append(
                    Problem(codes.INVALID_FIELD, at, "a document cannot contradict itself")
                )
            continue
        if type(entry) is not dict or entry.keys() != {"representative", "members"}:
            problems.append(
                Problem(codes.INVALID_FIELD, at, "a group is {representative, members}")
            )
            continue
        members = entry["members"]
        if (
            type(members) is not list
            or len(members) < 2
            or not all(_position(m, documents) for m in members)
            or len(set(members)) != len(members)
        ):
            problems.append(
                Problem(codes.INVALID_FIELD, f"{at}.members", f"two or more distinct, each {where}")
            )
            continue
        if entry["representative"] not in members:
            problems.append(
                Problem(codes.INVALID_FIELD, f"{at}.representative", "must be one of the members")
            )
        overlap = grouped.intersection(members)
        if overlap:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    f"{at}.members",
                    f"document {min(overlap)} is already in an earlier group",
                )
            )
        grouped.update(members)


def snapshot_names(unit: str, *, sources: int = 0, documents: int = 0) -> tuple[str, ...]:
    """The names spans may use for a unit of this kind (docs/formats.md)."""
    if unit == "tuple":
        return ("query", "answer", "source")
    if unit == "answer":
        return ("query", "answer", *(f"source:{n}" for n in range(sources)))
    if unit == "answer_pair":
        return ("query", "answer", "baseline")
    return ("query", *(f"document:{n}" for n in range(documents)))


def check_annotation(
    codebook: Any,
    annotation: Any,
    texts: Mapping[str, str] | None = None,
) -> list[Problem]:
    """Every problem of a format-2 ``annotation`` under ``codebook`` (a
    :class:`audit.contract.codebook.Codebook` of format 2); an empty list: it is sound.

    ``texts`` maps each snapshot name a span may cite (``query``, ``answer``, ``source``,
    ``source:N``, ``baseline``, ``document:N``) to its text; spans are checked against it
    (code points, ``quote == text[start:end]``). With ``texts=None`` span positions are
    not checked, only their shape, and documents are not counted.
    """
    problems: list[Problem] = []
    if type(annotation) is not dict:
        return [
            Problem(
                codes.NOT_AN_OBJECT, "annotation", f"must be an object, not {type_name(annotation)}"
            )
        ]
    for key in sorted(str(k) for k in annotation if k not in _ANNOTATION_KEYS):
        problems.append(
            Problem(codes.UNKNOWN_FIELD, f"annotation.{key}", "is not part of an annotation")
        )
    if "values" not in annotation:
        problems.append(Problem(codes.MISSING_FIELD, "annotation.values", "is missing"))
    kind = annotation.get("kind", "independent")
    if kind not in ANNOTATION_KINDS:
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                "annotation.kind",
                f"is {show(kind)}; one of {', '.join(ANNOTATION_KINDS)}",
            )
        )
    rationale = annotation.get("rationale")
    if rationale is not None and type(rationale) is not str:
        problems.append(Problem(codes.INVALID_FIELD, "annotation.rationale", "a string or null"))
    all_texts = dict(texts) if texts is not None else None
    span_texts = all_texts
    unit_fields = [f for f in codebook.fields if f.placement != "document"]
    if codebook.unit == "answer_pair":
        if "sides" not in annotation:
            problems.append(
                Problem(
                    codes.MISSING_FIELD,
                    "annotation.sides",
                    "is missing: an answer_pair annotation records which answer each side "
                    'showed ({"left": "answer" or "baseline", "right": the other})',
                )
            )
        else:
            problem = sides_problem(annotation["sides"])
            if problem is not None:
                problems.append(Problem(codes.INVALID_FIELD, "annotation.sides", problem))
        pair_fields = set(side_fields(codebook))
        unit_fields = [_stored_field(f) if f.code in pair_fields else f for f in unit_fields]
    elif "sides" in annotation:
        problems.append(
            Problem(
                codes.UNKNOWN_FIELD,
                "annotation.sides",
                f"only answer_pair units have sides; this is a {codebook.unit} unit",
            )
        )
    doc_fields = [f for f in codebook.fields if f.placement == "document"]
    n_documents = (
        None if all_texts is None else sum(1 for name in all_texts if name.startswith("document:"))
    )
    values = _check_values(
        unit_fields,
        annotation.get("values", {}),
        annotation.get("reasons"),
        "annotation.",
        span_texts,
        problems,
        n_documents,
    )
    resolved: dict[str, list[Any]] = {f.code: [values.get(f.code)] for f in unit_fields}
    documents = annotation.get("documents")
    if codebook.unit == "query_documents":
        expected = None
        if all_texts is not None:
            expected = sum(1 for name in all_texts if name.startswith("document:"))
        if type(documents) is not list:
            problems.append(
                Problem(
                    codes.MISSING_FIELD if documents is None else codes.INVALID_FIELD,
                    "annotation.documents",
                    "a list with one entry per document, in order",
                )
            )
            documents = []
        elif expected is not None and len(documents) != expected:
            problems.append(
                Problem(
                    codes.INVALID_FIELD,
                    "annotation.documents",
                    f"has {len(documents)} entries; this unit has {expected} documents",
                )
            )
        for f in doc_fields:
            resolved[f.code] = []
        for index, entry in enumerate(documents):
            at = f"annotation.documents[{index}]."
            if type(entry) is not dict:
                problems.append(
                    Problem(codes.INVALID_FIELD, at[:-1], "must be an object {values, reasons}")
                )
                continue
            for key in sorted(str(k) for k in entry if k not in ("values", "reasons")):
                problems.append(
                    Problem(codes.UNKNOWN_FIELD, f"{at}{key}", "is not part of a document entry")
                )
            doc_values = _check_values(
                doc_fields, entry.get("values", {}), entry.get("reasons"), at, span_texts, problems
            )
            for f in doc_fields:
                resolved[f.code].append(doc_values.get(f.code))
    elif documents is not None:
        problems.append(
            Problem(
                codes.UNKNOWN_FIELD,
                "annotation.documents",
                f"only query_documents units have documents; this is a {codebook.unit} unit",
            )
        )
    spans = annotation.get("spans", [])
    by_code = {f.code: f for f in codebook.fields}
    cited: set[str] = set()
    if type(spans) is not list:
        problems.append(Problem(codes.SPAN_MALFORMED, "annotation.spans", "a list of spans"))
        spans = []
    for index, span in enumerate(spans):
        at = f"annotation.spans[{index}]"
        field_code = span.get("field") if type(span) is dict else None
        field = by_code.get(field_code) if isinstance(field_code, str) else None
        if field is None:
            problems.append(
                Problem(
                    codes.SPAN_MALFORMED, f"{at}.field", f"is {show(field_code)}; it names no field"
                )
            )
            continue
        if field.evidence == "none":
            problems.append(
                Problem(
                    codes.SPAN_MALFORMED, f"{at}.field", f"{field.label} takes no evidence spans"
                )
            )
            continue
        problem = _span_problem(span, at, span_texts)
        if problem is not None:
            problems.append(problem)
        else:
            cited.add(field.code)
    for field in codebook.fields:
        if field.evidence != "required":
            continue
        if (
            any(value is not None for value in resolved.get(field.code, []))
            and field.code not in cited
        ):
            problems.append(
                Problem(
                    codes.SPAN_MISSING,
                    f"annotation.spans ({field.code})",
                    f"{field.label} is resolved, so it needs at least one evidence span: select "
                    f"the passage that decided it",
                )
            )
    return problems


# --- derived values ------------------------------------------------------------------


def _min_pass(grades: Sequence[Any], threshold: float) -> bool | None:
    """Pass iff every grade is at least ``threshold``; one below decides fail even when
    others are U; otherwise a U makes it unknown (``None``)."""
    unknown = False
    for grade in grades:
        if grade is None:
            unknown = True
        elif grade < threshold:
            return False
    return None if unknown or not grades else True


def derive(codebook: Any, annotation: Mapping[str, Any]) -> dict[str, Any]:
    """The codebook's derived values for a sound annotation, by code.

    ``min``: pass (``true``/``false``) or ``None``; ``R_O``: the complete-case endpoint
    (0, 1 or ``None``) — its short-circuit sensitivity is ``derive_short_circuit``;
    ``claims_summary``: the ``supported`` summary of the claims.
    """
    values = annotation.get("values") or {}
    out: dict[str, Any] = {}
    for item in codebook.derived:
        if item.rule == "min":
            out[item.code] = _min_pass(
                [values.get(code) for code in item.inputs], item.threshold or 0
            )
        elif item.rule == "R_O":
            out[item.code] = resolve_complete_case(*_binary(values, item.inputs))
        else:
            out[item.code] = summarize_supported(values.get(item.inputs[0]) or [])
    return out


def derive_short_circuit(codebook: Any, annotation: Mapping[str, Any]) -> dict[str, Any]:
    """R_O's short-circuit sensitivity for each ``R_O`` rule, by code."""
    values = annotation.get("values") or {}
    return {
        item.code: resolve_short_circuit(*_binary(values, item.inputs))
        for item in codebook.derived
        if item.rule == "R_O"
    }


def _binary(values: Mapping[str, Any], inputs: Sequence[str]) -> tuple[int | None, ...]:
    out: list[int | None] = []
    for code in inputs:
        value = values.get(code)
        out.append(None if value is None else int(value))
    return tuple(out)


def field_values(codebook: Any, annotation: Mapping[str, Any]) -> dict[str, Any]:
    """The judgment values of an annotation by field code (unit-level fields), for
    agreement, adjudication and release columns; per-document fields as lists."""
    values = annotation.get("values") or {}
    out: dict[str, Any] = {}
    for field in codebook.fields:
        if field.placement == "document":
            out[field.code] = [
                (entry.get("values") or {}).get(field.code)
                for entry in annotation.get("documents") or []
                if isinstance(entry, Mapping)
            ]
        else:
            out[field.code] = values.get(field.code)
    return out
