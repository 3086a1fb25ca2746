"""Canonical serialization: the same value always gives the same bytes.

JSON, UTF-8 (not ASCII-escaped), keys sorted, no insignificant whitespace, no NaN or
infinity. Python's float repr is the shortest round-tripping form on every platform
since 3.1, so floats serialize identically everywhere.
"""

from __future__ import annotations

import hashlib
import json
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


def canonical_json(value: Any) -> bytes:
    """Return the canonical UTF-8 bytes of a JSON value."""
    _check_keys(value)
    try:
        text = json.dumps(
            value,
            ensure_ascii=False,
            sort_keys=True,
            separators=(",", ":"),
            allow_nan=False,
        )
    except ValueError as exc:  # NaN or infinity
        raise CanonicalError(str(exc)) from exc
    except TypeError as exc:
        raise CanonicalError(str(exc)) from exc
    return text.encode("utf-8")


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def canonical_digest(value: Any) -> str:
    """SHA-256 (lowercase hex) of the canonical serialization of ``value``."""
    return sha256_hex(canonical_json(value))
