"""Properties: canonical serialization, evidence removal, spans over any Unicode text."""

from __future__ import annotations

import itertools
import json

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from audit.contract import check_record, codes, resolve_complete_case, resolve_short_circuit
from audit.contract.canonical import canonical_json, canonical_json_unchecked
from audit.contract.digests import tuple_digest, tuple_digest_unchecked
from tests.contract.factories import codebooks, make_record, reseal

CODEBOOKS = codebooks()

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@given(json_values)
def test_canonical_json_round_trips_and_is_idempotent(value):
    data = canonical_json(value)
    assert json.loads(data) == value
    assert canonical_json(json.loads(data)) == data
    assert canonical_json_unchecked(value) == data


@given(json_values)
def test_canonical_json_does_not_depend_on_key_order(value):
    if isinstance(value, dict):
        reordered = dict(reversed(list(value.items())))
        assert canonical_json(reordered) == canonical_json(value)


# Text with the awkward parts of Unicode mixed in: combining accents (NFD), CJK, emoji
# including skin tones and ZWJ sequences, right-to-left scripts, line separators.
AWKWARD = [
    "e\u0301",
    "\u65e5\u672c\u8a9e",
    "\U0001f600",
    "\U0001f44d\U0001f3fd",
    "\U0001f469\u200d\U0001f469\u200d\U0001f467",
    "\u05e9\u05dc\u05d5\u05dd",
    "\u0645\u0631\u062d\u0628\u0627",
    "\u2028",
    '"\\',
    "\x00",
]
unicode_text = (
    st.lists(st.text(min_size=0, max_size=6) | st.sampled_from(AWKWARD), min_size=1, max_size=12)
    .map("".join)
    .filter(bool)
)


@given(
    query_text=st.text(min_size=1, max_size=20),
    source_digest=st.text(max_size=70),
    config=st.dictionaries(st.text(max_size=5), json_values, max_size=3),
)
def test_fast_tuple_digest_equals_the_reference(query_text, source_digest, config):
    query = {"id": "q\u00e9", "question_version": "1", "text": query_text}
    pipeline = {"name": "p", "version": "1", "config": config}
    assert tuple_digest_unchecked(
        query=query, source_digest=source_digest, answer_digest="a", pipeline=pipeline
    ) == tuple_digest(
        query=query, source_digest=source_digest, answer_digest="a", pipeline=pipeline
    )


STATES = list(itertools.product((0, 1, None), repeat=4))


@given(st.sampled_from(STATES), st.integers(0, 3))
def test_removing_evidence_never_resolves_the_endpoint(state, position):
    # given a state and one of its resolved predicates
    assume(state[position] is not None)
    weaker = list(state)
    weaker[position] = None
    # then the complete-case endpoint of the weaker state is unresolved
    assert resolve_complete_case(*weaker) is None
    # and the short circuit never resolves differently with less evidence
    assert resolve_short_circuit(*weaker) in (None, resolve_short_circuit(*state))


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(STATES), st.integers(0, 3))
def test_removing_evidence_in_a_record_never_resolves_it(state, position):
    assume(state[position] is not None)
    weaker = list(state)
    weaker[position] = None
    result = check_record(make_record(predicates=tuple(weaker)), CODEBOOKS)
    assert result.ok
    assert result.endpoint is None
    assert result.action == "REVIEW"


@st.composite
def text_and_span(draw):
    text = draw(unicode_text)
    start = draw(st.integers(0, len(text) - 1))
    end = draw(st.integers(start + 1, len(text)))
    return text, start, end


def _record_with_span(text, start, end, quote):
    record = make_record(source_text=text)
    record["annotation"]["spans"]["I"] = [
        {"snapshot": "source", "start": start, "end": end, "quote": quote}
    ]
    return reseal(record)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(text_and_span())
def test_spans_survive_any_unicode_text(case):
    # given any text and any code-point range inside it
    text, start, end = case
    # when a record cites exactly that range
    result = check_record(_record_with_span(text, start, end, text[start:end]), CODEBOOKS)
    # then it is accepted
    assert result.ok, result.message


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(text_and_span(), st.sampled_from(["longer", "shorter", "shifted"]))
def test_off_by_one_quotes_are_refused(case, how):
    text, start, end = case
    quote = text[start:end]
    if how == "longer":
        assume(end < len(text))
        bad = text[start : end + 1]
    elif how == "shorter":
        assume(end - start >= 2)
        bad = text[start : end - 1]
    else:
        assume(end < len(text) and text[start + 1 : end + 1] != quote)
        bad = text[start + 1 : end + 1]
    result = check_record(_record_with_span(text, start, end, bad), CODEBOOKS)
    assert result.reason == codes.SPAN_QUOTE_MISMATCH


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(unicode_text)
def test_utf16_offsets_are_refused_when_they_differ_from_code_points(text):
    # A browser counts UTF-16 code units; a span sent without conversion must not pass.
    astral = "\U0001f9ea"
    full = astral + text
    start_utf16 = 2  # the test tube takes two UTF-16 units but one code point
    end_utf16 = start_utf16 + len(text.encode("utf-16-le")) // 2
    record = _record_with_span(full, start_utf16, end_utf16, text)
    assert not check_record(record, CODEBOOKS).ok
    fixed = _record_with_span(full, 1, 1 + len(text), text)
    assert check_record(fixed, CODEBOOKS).ok
