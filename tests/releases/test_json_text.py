"""Table cells take a shortcut for scalars: it must give the encoder's exact text."""

from __future__ import annotations

import pytest

from audit.contract.canonical import CanonicalError, canonical_text_unchecked
from audit.releases.formats import _json_text

VALUES = [
    None,
    True,
    False,
    0,
    -7,
    2**70,
    1.5,
    -0.0,
    1e300,
    "",
    "plain",
    'quote " and \\ backslash',
    "control \x00 \x1f \n \t",
    "unicode é ☃ 😀 \u2028",
    [],
    {},
    {"b": [1, "x", None], "a": {"z": 1.25, "é": False}},
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_json_text_is_the_canonical_text(value):
    assert _json_text(value) == canonical_text_unchecked(value)


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_json_text_refuses_what_the_encoder_refuses(value):
    with pytest.raises(CanonicalError):
        _json_text(value)
