"""An import line decodes to the standard parser's value, or is refused with its message,
whichever parser read it (audit.contract.observations reads most lines with orjson)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audit.contract import observations
from audit.contract.errors import ContractError
from audit.contract.observations import decode_line


def outcome(raw: bytes):
    try:
        return ("value", decode_line(raw))
    except ContractError as exc:
        return ("refused", exc.code, exc.message)


def standard(raw: bytes):
    """What decode_line gives with the standard parser alone."""
    compiled = observations.orjson
    observations.orjson = None
    try:
        return outcome(raw)
    finally:
        observations.orjson = compiled


def same(a, b) -> bool:
    """Equal, with the type of every number too (an int is not its float)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@pytest.mark.parametrize(
    "raw",
    [
        b'{"n": 12345678901234567890123}',  # past 64 bits: exact, not a float
        b'{"n": -9223372036854775809}',
        b'{"n": 18446744073709551615, "m": -9223372036854775808}',
        b'{"x": 1e400}',  # infinity for the standard parser, refused by orjson
        b'{"x": -0.0, "y": 5e-324, "z": 0.1, "w": 1E5}',
        b'{"a": 1, "b": 2, "a": 3}',  # the last of two equal keys, in the first's place
        b'{"s": "\\ud800"}',  # an unpaired surrogate: the standard parser's refusal
        b'{"s": "\\u0000"}',
        b'{"s": "caf\\u00e9", "t": "e\\u0301"}',
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": 1,}',
        b'{"a": "x\ty"}',  # a raw control character
        b"[" * 2000 + b"]" * 2000,  # past orjson's depth
        b' {"a": [1, 2, {"b": null}]} ',
        b'{"a": 1} x',
    ],
)
def test_a_line_decodes_as_the_standard_parser_decodes_it(raw):
    assert observations.orjson is not None  # a dependency: the compiled path is the one tested
    assert same(outcome(raw), standard(raw))


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=5), st.booleans())
def test_any_object_line_decodes_as_the_standard_parser_decodes_it(value, ascii_only):
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    assert same(outcome(raw), standard(raw))
