"""The compiled canonical encoder (orjson) gives the standard encoder's bytes, or falls back.

``canonical_json_fast`` returns orjson's bytes only when they hold no fallback marker
(``<digit>e-<digit>``, ``0.0000``) and orjson did not raise. These tests hold that
whenever it returns orjson's bytes they are the standard encoder's, on random JSON values
with non-ASCII text, every kind of finite float, integers of any size and nesting, and
that each case orjson writes differently (small floats, big integers, surrogates, deep
nesting, odd keys and types) gives the standard bytes or the standard error.
"""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from audit.contract.canonical import (
    _ORJSON_OPTIONS,
    CanonicalError,
    canonical_json_fast,
    canonical_json_unchecked,
    canonical_text_fast,
    may_hold_small_float,
)

# Text of every plane, control characters and JSON's special characters included.
text = st.text(
    st.characters(codec="utf-8") | st.sampled_from(['"', "\\", "/", "\x7f", "\u2028", "é", "💶"]),
    max_size=12,
)
finite_floats = st.floats(allow_nan=False, allow_infinity=False) | st.sampled_from(
    [0.0, -0.0, 1e-4, 9.99e-5, 1e-5, 1e-7, 5e-324, 1e15, 1e16, 1e22, 1.7976931348623157e308]
)
integers = st.integers() | st.integers(min_value=-(2**70), max_value=2**70)
json_values = st.recursive(
    st.none() | st.booleans() | integers | finite_floats | text,
    lambda children: st.lists(children, max_size=5) | st.dictionaries(text, children, max_size=5),
    max_leaves=30,
)


def _orjson(value):
    return orjson.dumps(value, option=_ORJSON_OPTIONS)


@settings(max_examples=1500)
@given(json_values)
@example({"b": 1, "a": [1.5, -0.0, 2**63, -(2**63)], "é": {"z": None, "💶": True}, "": "\x00"})
def test_orjson_bytes_are_the_canonical_bytes_whenever_they_are_used(value):
    expected = canonical_json_unchecked(value)
    assert canonical_json_fast(value) == expected
    assert canonical_text_fast(value) == expected.decode("utf-8")
    try:
        fast = _orjson(value)
    except TypeError:
        return  # falls back: integers outside 64 bits
    if not may_hold_small_float(fast):
        assert fast == expected  # the bytes canonical_json_fast returns unchecked


@settings(max_examples=500)
@given(st.lists(finite_floats, min_size=1, max_size=20))
def test_every_float_orjson_writes_otherwise_is_caught_by_a_marker(floats):
    for number in floats:
        fast = _orjson(number)
        if fast != canonical_json_unchecked(number):
            assert may_hold_small_float(fast), (number, fast)


@pytest.mark.parametrize(
    "value",
    [
        1e-5,
        [1.23456e-8, {"x": 9.99e-5}],
        2**64,
        -(2**63) - 1,
        {"n": 10**40},
        "an e- in a string, and 0.0000 too, 1e-3",
        ["source-risk", 1e-6, "e-", "9e-"],
        {"b": "é", "a": "💶"},
    ],
)
def test_the_cases_orjson_writes_otherwise_give_the_standard_bytes(value):
    assert canonical_json_fast(value) == canonical_json_unchecked(value)


def test_values_orjson_refuses_get_the_standard_encoders_answer():
    class Text(str):
        pass

    assert canonical_json_fast({"k": Text("v")}) == canonical_json_unchecked({"k": Text("v")})
    assert canonical_json_fast({1: "v"}) == canonical_json_unchecked({1: "v"}) == b'{"1":"v"}'
    deep: list = []
    inner = deep
    for _ in range(300):
        inner.append([])
        inner = inner[0]
    assert canonical_json_fast(deep) == canonical_json_unchecked(deep)
    with pytest.raises(CanonicalError, match="not valid Unicode"):
        canonical_json_fast({"text": "\ud800"})
    with pytest.raises(CanonicalError, match="not JSON serializable"):
        canonical_json_fast({"at": object()})
    with pytest.raises(CanonicalError):
        canonical_json_fast({"a": 1, 2: "b"})  # keys that cannot be sorted


def test_only_a_number_like_e_minus_counts_as_a_small_float():
    assert not may_hold_small_float(b'{"codebook":"source-risk","e-":"e-"}')
    assert may_hold_small_float(b"[1e-5]")
    assert may_hold_small_float(b"[1.5e-7]")
    assert may_hold_small_float(b"[0.00001]")
    assert may_hold_small_float(b'["3e-1"]')


def test_the_fast_path_is_taken_for_plain_values():
    # Without a marker, the bytes are orjson's own (the fallback is the exception).
    value = json.loads('{"spans": [{"start": 0, "end": 8, "quote": "Ünïcode ✓"}], "w": 0.5}')
    assert canonical_json_fast(value) == _orjson(value) == canonical_json_unchecked(value)
