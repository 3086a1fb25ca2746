"""Hostile text answers a reason code, never a crash: NUL, unpaired surrogates, deep
nesting — in a parsed value, in JSON text and in an import line."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.contract import codes
from audit.contract.errors import ContractError
from audit.contract.observations import decode_line
from audit.contract.texts import MAX_DEPTH, loads_checked, text_problem


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"rationale": "fine\x00then"}, "$.rationale"),
        ({"a": ["ok", "\ud800"]}, "$.a[1]"),
        ({"spans": [{"quote": "x\udfff"}]}, "$.spans[0].quote"),
        ({"bad\x00key": 1}, "a key of $"),
    ],
)
def test_nul_and_unpaired_surrogates_are_named_with_their_path(value, path):
    problem = text_problem(value)
    assert problem is not None
    assert problem.code == codes.INVALID_TEXT
    assert problem.message.startswith(path)


def test_paired_surrogates_in_escapes_are_characters():
    assert loads_checked('{"emoji": "\\ud83d\\ude02"}') == {"emoji": "😂"}


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 10_000, 100_000])
def test_deep_nesting_is_too_deep_at_any_depth(depth):
    with pytest.raises(ContractError) as refused:
        loads_checked("[" * depth + "]" * depth)
    assert refused.value.code == codes.TOO_DEEP


def test_nesting_up_to_the_limit_is_accepted():
    text = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert loads_checked(text) is not None


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b'{"query": {"text": "a\\u0000b"}}', codes.INVALID_TEXT),
        (b'{"answer": {"text": "\\udc00"}}', codes.INVALID_TEXT),
        (b"[" * 100_000 + b"]" * 100_000, codes.TOO_DEEP),
        (b'{"a": ' * 70 + b"1" + b"}" * 70, codes.TOO_DEEP),
    ],
)
def test_an_import_line_with_hostile_text_is_refused_with_its_code(raw, code):
    with pytest.raises(ContractError) as refused:
        decode_line(raw)
    assert refused.value.code == code


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)


def _holds_bad_text(value) -> bool:
    return any(
        ch == "\x00" or 0xD800 <= ord(ch) <= 0xDFFF for text in _strings(value) for ch in text
    )


values = st.recursive(
    st.text(), lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner), max_leaves=20
)


@given(values)
def test_a_value_is_refused_exactly_when_it_holds_nul_or_a_surrogate(value):
    problem = text_problem(value)
    assert (problem is not None) == _holds_bad_text(value)
    text = json.dumps(value)  # escapes NUL and surrogates as \u sequences
    if _holds_bad_text(value):
        with pytest.raises(ContractError):
            loads_checked(text)
    else:
        assert loads_checked(text) == value
