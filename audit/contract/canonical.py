"""Canonical serialization: the same value always gives the same bytes.

JSON, UTF-8 (not ASCII-escaped), keys sorted, no insignificant whitespace, no NaN or
infinity. Python's float repr is the shortest round-tripping form on every platform
since 3.1, so floats serialize identically everywhere.
"""

from __future__ import annotations

import hashlib
import json
from json.encoder import c_make_encoder, encode_basestring
from typing import Any

try:  # a compiled encoder for the bulk paths (releases); the standard one is the reference
    import orjson
except ImportError:  # pragma: no cover - a dependency; kept optional for the pure contract
    orjson = None  # type: ignore[assignment]


class CanonicalError(ValueError):
    """The value cannot be serialized canonically (NaN, infinity, a non-string key...)."""


def _check_keys(value: Any) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise CanonicalError(f"object key {key!r} is not a string")
            _check_keys(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_keys(item)


#: One encoder for every canonical serialization, so both entry points give identical bytes.
_ENCODER = json.JSONEncoder(
    ensure_ascii=False,
    sort_keys=True,
    separators=(",", ":"),
    allow_nan=False,
)


def check_keys(value: Any) -> None:
    """Raise :class:`CanonicalError` if any object key inside ``value`` is not a string."""
    _check_keys(value)


def canonical_json(value: Any) -> bytes:
    """Return the canonical UTF-8 bytes of a JSON value."""
    _check_keys(value)
    return canonical_json_unchecked(value)


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# The C encoder that ``_ENCODER.encode`` builds on every call, built once. Same settings,
# so the same bytes; without the circular-reference markers, which cost a dict insertion
# per container (a JSON value parsed from text cannot be circular, and the key walk of
# ``canonical_json`` would already recurse forever on one).
_C_ENCODER = (
    c_make_encoder(None, _refuse, encode_basestring, None, ":", ",", True, False, False)
    if c_make_encoder is not None
    else None
)


def encode_string(value: str) -> str:
    """The canonical JSON form of one string (quoted, escaped, not ASCII-escaped)."""
    return encode_basestring(value)


def canonical_text_unchecked(value: Any) -> str:
    """The canonical serialization as ``str`` (see :func:`canonical_json_unchecked`)."""
    try:
        if _C_ENCODER is not None:
            return "".join(_C_ENCODER(value, 0))
        return _ENCODER.encode(value)
    except ValueError as exc:  # NaN or infinity
        raise CanonicalError(str(exc)) from exc
    except TypeError as exc:
        raise CanonicalError(str(exc)) from exc


def canonical_chunks_unchecked(value: Any) -> list[str] | tuple[str, ...]:
    """:func:`canonical_text_unchecked` as pieces whose concatenation is that text.

    For assembling a larger canonical text (one object whose keys are written out in
    sorted order) without joining each value's serialization first. Same errors.
    """
    try:
        if _C_ENCODER is not None:
            return _C_ENCODER(value, 0)
        return (_ENCODER.encode(value),)
    except ValueError as exc:  # NaN or infinity
        raise CanonicalError(str(exc)) from exc
    except TypeError as exc:
        raise CanonicalError(str(exc)) from exc


def canonical_json_unchecked(value: Any) -> bytes:
    """:func:`canonical_json` without the walk that checks object keys.

    Only for values whose object keys are already known to be strings (parsed from JSON
    text, or validated field by field): ``json`` would silently turn an integer key into a
    string, and the walk is what refuses that. Same bytes as :func:`canonical_json`.
    """
    text = canonical_text_unchecked(value)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:  # an unpaired surrogate, e.g. from "\ud800"
        raise CanonicalError(f"text is not valid Unicode: {exc.reason}") from exc


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_digest(value: Any) -> str:
    """SHA-256 (lowercase hex) of the canonical serialization of ``value``."""
    return sha256_hex(canonical_json(value))


def canonical_digest_unchecked(value: Any) -> str:
    """:func:`canonical_digest` for values whose keys are known to be strings (see
    :func:`canonical_json_unchecked`)."""
    return sha256_hex(canonical_json_unchecked(value))


# --- the compiled encoder ------------------------------------------------------------------
#
# orjson with sorted keys writes the bytes of the standard encoder above for every JSON
# value (tests/contract/test_canonical_fast.py holds the two equal on random values),
# except where it cannot or where its text differs; each such case falls back to the
# standard encoder, so the result is always the canonical bytes:
# - a finite float below 1e-4 in magnitude: orjson writes ``1e-5`` or ``0.00001`` where
#   ``repr`` writes ``1e-05``. Every such float's text contains ``<digit>e-<digit>`` or
#   starts with ``0.0000`` (``-0.0000``), so any output containing either falls back
#   (:func:`may_hold_small_float`; a string holding one only costs the second encoding);
# - integers outside 64 bits, non-string keys, unpaired surrogates, nesting deeper than
#   255, subclasses of str/int/dict/list, datetimes and dataclasses: orjson raises (the
#   last three because of the pass-through options and ``_refuse``) and the standard
#   encoder decides, raising :class:`CanonicalError` where it always did.
# Not covered, hence the name: NaN and infinity (orjson writes ``null``, the standard
# encoder refuses them) and the non-JSON types orjson serializes natively (UUID, enum).
# Only values parsed from JSON by a parser that refuses NaN, or already serialized
# canonically once (a record whose digest was checked), go through it.

_ORJSON_OPTIONS = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    if orjson is not None
    else 0
)


def canonical_json_fast(value: Any) -> bytes:
    """:func:`canonical_json_unchecked` of a JSON value without NaN or infinity (see the
    note above), by the compiled encoder where its bytes are the canonical ones."""
    if orjson is not None:
        try:
            data = orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS)
        except TypeError:  # orjson.JSONEncodeError is a TypeError
            return canonical_json_unchecked(value)
        if not may_hold_small_float(data):
            return data
    return canonical_json_unchecked(value)


_DIGITS = frozenset(b"0123456789")


def may_hold_small_float(data: bytes) -> bool:
    """Whether orjson's ``data`` may hold a float it writes otherwise than ``repr``: one
    below 1e-4 in magnitude, written ``<digit>e-<digit>`` or from ``0.0000`` on. Text that
    merely contains either (``"1e-3"``, ``"0.00001"`` in a string) answers yes too, which
    only costs a second encoding; ``e-`` between letters (``"e-mail"``) does not."""
    if b"0.0000" in data:
        return True
    # Each ``e-`` (a few per record: "e-mail", a codebook name), its neighbours looked at;
    # no copy of the data (a record is kilobytes, a release millions of them).
    at = data.find(b"e-", 1)
    while at != -1:
        if data[at - 1] in _DIGITS and at + 2 < len(data) and data[at + 2] in _DIGITS:
            return True
        at = data.find(b"e-", at + 2)
    return False


def canonical_text_fast(value: Any) -> str:
    """:func:`canonical_json_fast` as ``str``."""
    return canonical_json_fast(value).decode("utf-8")


def parse_json_fast(text: str) -> tuple[Any, bool]:
    """A stored JSON value from its text, and whether :func:`canonical_json_fast` may
    serialize it: parsed by orjson (which refuses NaN and infinity) when it can, else by
    the standard parser (``False``: it may hold NaN). orjson reads an integer outside 64
    bits as a float: a caller that serializes the value canonically must check the result
    (a record against its digest) or use the standard parser."""
    if orjson is not None:
        try:
            return orjson.loads(text), True
        except orjson.JSONDecodeError:
            pass
    return json.loads(text), False
