"""Codebooks: the versioned definitions a record is checked against (docs/formats.md).

A codebook file is validated once, when it is loaded; records then only look it up by
``(name, version)`` in a ``Mapping[tuple[str, str], Codebook]``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from audit.contract import codes
from audit.contract.canonical import CanonicalError, canonical_digest
from audit.contract.errors import ContractError, show, type_name
from audit.contract.fields import UNIT_KINDS, Derived, Field, Problem, parse_fields

UNITS = ("tuple", "answer")
ANSWERABILITY_POLICIES = (None, "abstain_when_unresolved")
#: The endpoint is defined over exactly these predicates (DESIGN.md).
PREDICATE_KEYS = ("I", "A", "M", "D")
#: Query susceptibility: every evidence-vector codebook declares it.
QUERY_SUSCEPTIBILITY = "d_Q"
WEIGHT_TOLERANCE = 1e-9

_COMMON_REQUIRED = ("claimgate", "format_version", "name", "version", "unit")
_COMMON_OPTIONAL = ("title", "description", "answerability_policy", "allow_assisted")
_TUPLE_FIELDS = ("predicates", "passage_support", "source_roles", "evidence_dimensions")
_ANSWER_FIELDS = ("verdicts", "claim_kinds")
#: Optional for answer codebooks: whether every verdict needs a reason (default required,
#: as seed 003 asks of every answer-level and claim verdict).
REASONS = ("required", "optional")


@dataclass(frozen=True)
class Codebook:
    """A validated codebook. ``digest`` is the canonical digest of the file's JSON value."""

    name: str
    version: str
    unit: str
    #: Predicate keys in codebook order (``I``, ``A``, ``M``, ``D``); empty for answers.
    predicates: tuple[str, ...]
    #: Evidence dimension key -> weight, in codebook order; empty for answers.
    weights: Mapping[str, float] = field(hash=False)
    answerability_policy: str | None
    allow_assisted: bool
    #: Answer-level verdict keys (format 1's answer codebook); empty for tuples.
    verdicts: tuple[str, ...]
    #: Claim kinds (``verifiable``, ``not_truth_apt``); empty for tuples.
    claim_kinds: tuple[str, ...]
    #: Source role keys; empty when the codebook declares none.
    source_roles: tuple[str, ...]
    digest: str
    #: 1 for the first codebooks (predicates or verdicts), 2 for codebooks of fields.
    format_version: int = 1
    #: Format 2: the fields, in form order, and the derived values (audit.contract.fields).
    fields: tuple[Field, ...] = ()
    derived: tuple[Derived, ...] = ()
    #: Every answer-level verdict and every verifiable claim needs a non-blank reason when
    #: submitted (annotator and adjudicator alike); see :func:`reasons_missing`.
    reasons_required: bool = False

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.version)


class CodebookProblems(ContractError):
    """A format-2 codebook with problems: every one of them, each naming where it is."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        first = problems[0]
        count = len(problems)
        listing = "; ".join(str(problem) for problem in problems[:50])
        more = f"; and {count - 50} more" if count > 50 else ""
        super().__init__(
            first.code,
            f"the codebook has {count} problem{'s' if count != 1 else ''}: {listing}{more}",
        )


_V2_REQUIRED = ("claimgate", "format_version", "name", "version", "unit", "fields")
_V2_KEYS = frozenset(
    {*_V2_REQUIRED, "title", "description", "derived", "allow_assisted", "answerability_policy"}
)
_VERSION = re.compile(r"[0-9A-Za-z][0-9A-Za-z.+_-]{0,39}")
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")


def codebook_problems(d: Any) -> list[Problem]:
    """Every problem of a format-2 codebook file's JSON value (empty: it is sound)."""
    if not isinstance(d, Mapping):
        return [
            Problem(codes.NOT_AN_OBJECT, "", f"a codebook is a JSON object, not {type_name(d)}")
        ]
    problems: list[Problem] = []
    for key in _V2_REQUIRED:
        if key not in d:
            problems.append(Problem(codes.MISSING_FIELD, key, "is missing"))
    for key in sorted(str(k) for k in d if k not in _V2_KEYS):
        problems.append(Problem(codes.UNKNOWN_FIELD, key, "is not part of a format-2 codebook"))
    if d.get("claimgate") != "codebook":
        problems.append(Problem(codes.UNKNOWN_FORMAT, "claimgate", "must be 'codebook'"))
    name = d.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                "name",
                "must be lowercase letters, digits, '.', '_' or '-' (at most 100), "
                f"not {show(name)}",
            )
        )
    version = d.get("version")
    if not isinstance(version, str) or not _VERSION.fullmatch(version):
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                "version",
                f"must be a version string such as 1.0.0, not {show(version)}",
            )
        )
    unit = d.get("unit")
    if unit not in UNIT_KINDS:
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                "unit",
                f"must be one of {', '.join(UNIT_KINDS)}, not {show(unit)}",
            )
        )
        unit = "answer"
    for key in ("title", "description"):
        if key in d and not isinstance(d[key], str):
            problems.append(
                Problem(codes.INVALID_FIELD, key, f"must be a string, not {type_name(d[key])}")
            )
    if "allow_assisted" in d and not isinstance(d["allow_assisted"], bool):
        problems.append(Problem(codes.INVALID_FIELD, "allow_assisted", "must be true or false"))
    policy = d.get("answerability_policy")
    if policy not in ANSWERABILITY_POLICIES:
        problems.append(
            Problem(
                codes.INVALID_FIELD,
                "answerability_policy",
                "must be null or 'abstain_when_unresolved'",
            )
        )
    if "fields" in d:
        problems.extend(parse_fields(d, unit)[2])
    try:
        canonical_digest(d)
    except CanonicalError as exc:
        problems.append(
            Problem(codes.INVALID_FIELD, "", f"cannot be serialized canonically: {exc}")
        )
    return problems


def _codebook_v2(d: Mapping[str, Any]) -> Codebook:
    problems = codebook_problems(d)
    if problems:
        raise CodebookProblems(problems)
    fields_, derived, _ = parse_fields(d, d["unit"])
    return Codebook(
        name=d["name"],
        version=d["version"],
        unit=d["unit"],
        predicates=(),
        weights=MappingProxyType({}),
        answerability_policy=d.get("answerability_policy"),
        allow_assisted=d.get("allow_assisted", True),
        verdicts=(),
        claim_kinds=(),
        source_roles=(),
        digest=canonical_digest(d),
        format_version=2,
        fields=fields_,
        derived=derived,
    )


def _fail(code: str, message: str) -> ContractError:
    return ContractError(code, message)


def _string(d: Mapping[str, Any], key: str, path: str) -> str:
    value = d[key]
    if not isinstance(value, str) or not value:
        raise _fail(
            codes.INVALID_FIELD, f"{path} must be a non-empty string, not {type_name(value)}"
        )
    return value


def _keyed_entries(value: Any, path: str) -> list[tuple[str, Any]]:
    """Entries of a codebook list such as ``predicates``: ``[{"key": ...}, ...]``.

    A mapping ``{key: {...}}`` and, for ``claim_kinds``, a list of bare strings are read
    too: they carry the same information and the format leaves their shape open.
    """
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, list):
        items = []
        for index, entry in enumerate(value):
            if isinstance(entry, str):
                items.append((entry, {}))
            elif isinstance(entry, Mapping) and "key" in entry:
                items.append((entry["key"], entry))
            else:
                raise _fail(
                    codes.INVALID_FIELD,
                    f"{path}[{index}] must be an object with a 'key', not {show(entry)}",
                )
    else:
        raise _fail(codes.INVALID_FIELD, f"{path} must be a list, not {type_name(value)}")
    seen: set[str] = set()
    for key, _entry in items:
        if not isinstance(key, str) or not key:
            raise _fail(codes.INVALID_FIELD, f"{path} has a key that is not a string: {show(key)}")
        if key in seen:
            raise _fail(codes.INVALID_FIELD, f"{path} declares {key!r} twice")
        seen.add(key)
    return items


def _weights(value: Any, unit_name: str) -> dict[str, float]:
    path = "evidence_dimensions"
    weights: dict[str, float] = {}
    for key, entry in _keyed_entries(value, path):
        if not isinstance(entry, Mapping) or "weight" not in entry:
            raise _fail(codes.MISSING_FIELD, f"{path}.{key}.weight is missing")
        weight = entry["weight"]
        if isinstance(weight, bool) or not isinstance(weight, int | float):
            raise _fail(
                codes.INVALID_FIELD,
                f"{path}.{key}.weight must be a number, not {type_name(weight)}",
            )
        if not math.isfinite(weight) or weight < 0:
            raise _fail(
                codes.WEIGHTS_UNNORMALIZED,
                f"{path}.{key}.weight is {show(weight)}; weights must be non-negative",
            )
        weights[key] = float(weight)
    if not weights:
        raise _fail(codes.DIMENSIONS_MISMATCH, f"{path} declares no dimension")
    total = math.fsum(weights.values())
    if abs(total - 1.0) > WEIGHT_TOLERANCE:
        raise _fail(
            codes.WEIGHTS_UNNORMALIZED,
            f"{path} weights sum to {total!r}, not 1 (tolerance {WEIGHT_TOLERANCE})",
        )
    if QUERY_SUSCEPTIBILITY not in weights:
        raise _fail(
            codes.DIMENSIONS_MISMATCH,
            f"{path} lacks {QUERY_SUSCEPTIBILITY} (query susceptibility), which every "
            f"{unit_name} codebook declares",
        )
    return weights


def codebook_from_dict(d: Any) -> Codebook:
    """Validate a codebook file's JSON value and return it as a :class:`Codebook`.

    Raises :class:`ContractError` naming the first problem. Unknown top-level fields are
    refused (a misspelt ``answerability_policy`` must not silently fall back to the default);
    the prose inside entries (labels, definitions) is not checked.
    """
    if not isinstance(d, Mapping):
        raise _fail(codes.NOT_AN_OBJECT, f"a codebook must be a JSON object, not {type_name(d)}")
    if type(d.get("format_version")) is int and d["format_version"] == 2:
        return _codebook_v2(d)
    for key in _COMMON_REQUIRED:
        if key not in d:
            raise _fail(codes.MISSING_FIELD, f"codebook field {key} is missing")
    if d["claimgate"] != "codebook" or d["format_version"] != 1 or d["format_version"] is True:
        raise _fail(
            codes.UNKNOWN_FORMAT,
            f"not a codebook of format version 1 or 2 (claimgate={show(d['claimgate'])}, "
            f"format_version={show(d['format_version'])})",
        )
    name = _string(d, "name", "name")
    version = _string(d, "version", "version")
    unit = d["unit"]
    if not isinstance(unit, str) or unit not in UNITS:
        raise _fail(codes.INVALID_FIELD, f"unit must be 'tuple' or 'answer', not {show(unit)}")
    specific = _TUPLE_FIELDS if unit == "tuple" else _ANSWER_FIELDS
    allowed = set(_COMMON_REQUIRED) | set(_COMMON_OPTIONAL) | set(specific)
    if unit == "answer":
        allowed.add("source_roles")  # optional for answers: claims name no role
        allowed.add("reasons")
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise _fail(
            codes.UNKNOWN_FIELD,
            f"codebook field {unknown[0]} is not part of a {unit} codebook",
        )
    for key in specific:
        if key not in d:
            raise _fail(codes.MISSING_FIELD, f"codebook field {key} is missing")
    policy = d.get("answerability_policy")
    if not (policy is None or isinstance(policy, str)) or policy not in ANSWERABILITY_POLICIES:
        raise _fail(
            codes.INVALID_FIELD,
            f"answerability_policy must be null or 'abstain_when_unresolved', not {show(policy)}",
        )
    allow_assisted = d.get("allow_assisted", True)
    if not isinstance(allow_assisted, bool):
        raise _fail(
            codes.INVALID_FIELD,
            f"allow_assisted must be true or false, not {type_name(allow_assisted)}",
        )

    predicates: tuple[str, ...] = ()
    weights: dict[str, float] = {}
    verdicts: tuple[str, ...] = ()
    claim_kinds: tuple[str, ...] = ()
    if unit == "tuple":
        predicates = tuple(key for key, _ in _keyed_entries(d["predicates"], "predicates"))
        if sorted(predicates) != sorted(PREDICATE_KEYS):
            raise _fail(
                codes.INVALID_FIELD,
                f"predicates must be exactly I, A, M, D, not {', '.join(predicates) or 'none'}",
            )
        if not isinstance(d["passage_support"], Mapping):
            raise _fail(codes.INVALID_FIELD, "passage_support must be an object")
        weights = _weights(d["evidence_dimensions"], unit)
    else:
        verdicts = tuple(key for key, _ in _keyed_entries(d["verdicts"], "verdicts"))
        if "supported" not in verdicts:
            raise _fail(codes.INVALID_FIELD, "verdicts must include 'supported'")
        claim_kinds = tuple(key for key, _ in _keyed_entries(d["claim_kinds"], "claim_kinds"))
        if "verifiable" not in claim_kinds:
            raise _fail(codes.INVALID_FIELD, "claim_kinds must include 'verifiable'")
    reasons = d.get("reasons", "required")
    if unit == "answer" and reasons not in REASONS:
        raise _fail(
            codes.INVALID_FIELD, f"reasons must be 'required' or 'optional', not {show(reasons)}"
        )
    source_roles: tuple[str, ...] = ()
    if "source_roles" in d:
        source_roles = tuple(key for key, _ in _keyed_entries(d["source_roles"], "source_roles"))
    try:
        digest = canonical_digest(d)
    except CanonicalError as exc:
        raise _fail(
            codes.INVALID_FIELD, f"codebook cannot be serialized canonically: {exc}"
        ) from None
    return Codebook(
        name=name,
        version=version,
        unit=unit,
        predicates=predicates,
        weights=MappingProxyType(weights),
        answerability_policy=policy,
        allow_assisted=allow_assisted,
        verdicts=verdicts,
        claim_kinds=claim_kinds,
        source_roles=source_roles,
        digest=digest,
        reasons_required=unit == "answer" and reasons == "required",
    )


def reasons_missing(annotation: Mapping[str, Any], codebook: Codebook) -> str | None:
    """Where a reason the codebook requires is blank, in words (``None`` when none is):
    every answer-level verdict and every verifiable claim of a complete answer. A failed
    attempt carries no verdicts and needs none."""
    if not codebook.reasons_required or not isinstance(annotation, Mapping):
        return None
    verdicts = annotation.get("verdicts")
    if not isinstance(verdicts, Mapping):
        return None
    for key in codebook.verdicts:
        verdict = verdicts.get(key)
        reason = verdict.get("reason") if isinstance(verdict, Mapping) else None
        if not (isinstance(reason, str) and reason.strip()):
            return f"verdict {key} needs a reason (the codebook requires one for every verdict)"
    for index, claim in enumerate(annotation.get("claims") or []):
        if not isinstance(claim, Mapping) or claim.get("kind") != "verifiable":
            continue
        reason = claim.get("reason")
        if not (isinstance(reason, str) and reason.strip()):
            name = claim.get("id") or index + 1
            return f"claim {name} needs a reason (the codebook requires one for every verdict)"
    return None


def load_codebook(path: str | Path) -> Codebook:
    """Read and validate one codebook file (UTF-8 JSON)."""
    raw = Path(path).read_bytes()
    try:
        value = json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant)
    except UnicodeDecodeError as exc:
        raise _fail(codes.INVALID_UTF8, f"{Path(path).name} is not UTF-8: {exc.reason}") from exc
    except ValueError as exc:
        raise _fail(codes.MALFORMED_JSON, f"{Path(path).name} is not JSON: {exc}") from exc
    return codebook_from_dict(value)


def load_codebooks(directory: str | Path) -> dict[tuple[str, str], Codebook]:
    """Every ``*.json`` codebook of ``directory`` (none if it does not exist), by key."""
    found: dict[tuple[str, str], Codebook] = {}
    folder = Path(directory)
    if not folder.is_dir():
        return found
    for path in sorted(folder.glob("*.json")):
        codebook = load_codebook(path)
        found[codebook.key] = codebook
    return found


def _refuse_constant(name: str) -> Any:
    # json accepts NaN and Infinity by default; the canonical form has no such values.
    raise ValueError(f"{name} is not a JSON number")
