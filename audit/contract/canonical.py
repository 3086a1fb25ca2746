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
