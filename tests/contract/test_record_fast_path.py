"""The checker's fast path for a well-formed tuple record changes no result.

``check_record`` first tries ``_accepted_tuple``, which accepts a record only when every
rule of the stages holds, and otherwise runs the stages in their fixed order
(``_check_in_order``). Hypothesis builds valid records varied in every field the fast path
reads (numbers at the edges of their ranges, floats orjson writes otherwise than ``repr``,
huge integers, unpaired surrogates, configurations with floats and nesting), then breaks
them at a random depth, re-seals them canonically or not at all, or seals them with
orjson's bytes (which the canonical digest does not match): whatever the record, the
result of ``check_record`` is the one of the stages, and the fast path answers either
nothing or exactly that result.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.control import currently_in_test_context as hypothesis_running

from audit.conformance import mutations
from audit.conformance.codebook import conformance_codebook
from audit.conformance.fixtures import build_record
from audit.conformance.states import all_states, is_complete
from audit.contract import check_record, codebook_from_dict
from audit.contract.canonical import CanonicalError
from audit.contract.digests import record_digest
from audit.contract.errors import ContractError
from audit.contract.record import _accepted_tuple, _check_in_order
from tests.contract.factories import SOURCE_ROLES, codebooks, make_record, seal, span_of

CODEBOOKS = codebooks()
SETTINGS = settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)


def fast_or_none(record: Any) -> Any:
    try:
        return _accepted_tuple(record, CODEBOOKS)
    except (KeyError, ValueError, TypeError, ContractError):
        return None


def same_result(record: Any) -> None:
    """The fast path answers nothing or the stages' result; check_record is the stages'."""
    try:
        expected = _check_in_order(record, CODEBOOKS)
    except (RecursionError, OverflowError):  # the stages raise: so must check_record
        with pytest.raises((RecursionError, OverflowError)):
            check_record(record, CODEBOOKS)
        return
    accepted = fast_or_none(record)
    if hypothesis_running():
        event("accepted by the fast path" if accepted is not None else "left to the stages")
        event("accepted" if expected.ok else f"refused: {expected.reason}")
    if accepted is not None:
        assert expected.ok
        assert accepted == expected
    assert check_record(record, CODEBOOKS) == expected


scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=3)
    | st.integers(min_value=2**63 - 2, max_value=2**65)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([1e-5, -1e-7, 5e-324, 0.0001, 1e16, 1e22, -0.0, 0.5, 1.0, 1, 0])
    | st.sampled_from(["", "x", "source", "answer", "query", "2026-05-02", "\ud800", "\u2028"])
    | st.text(max_size=6)
)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)
#: Mostly values orjson writes as ``repr`` does, sometimes one it writes otherwise.
unit_floats = st.one_of(
    st.floats(min_value=1e-4, max_value=1.0),
    st.floats(min_value=1e-4, max_value=1.0),
    st.sampled_from([0, 1, 0.0, -0.0, 1e-4, 0.00010000000000000002, 0.1, 1.0]),
    st.floats(min_value=0.0, max_value=1.0),
    st.sampled_from([1e-5, 9.99e-5, 5e-324, True]),
)
texts = st.text(min_size=1, max_size=40) | st.sampled_from(
    ["e\u0301\U0001f600", "\ud800x", '"\\\u2028\x7f\x00', "a" * 30]
)


def valid_record(draw: Any) -> dict[str, Any]:
    """A record the stages accept, unless a drawn edge value (a surrogate, a small float in
    the sampling, a huge rank) is refused or written otherwise by orjson."""
    predicates = tuple(draw(st.sampled_from([0, 1, None])) for _ in range(4))
    support = draw(st.sampled_from([0, 1, None]))
    record = make_record(predicates=predicates, passage_support=support, sealed=False)
    annotation = record["annotation"]
    weights = {"d_Q": 0.5, "d_R": 0.25, "d_P": 0.25}
    annotation["evidence"] = {
        key: {"value": draw(unit_floats), "weight": weight} for key, weight in weights.items()
    }
    if draw(st.booleans()):
        annotation["rationale"] = draw(texts)
    annotation["source_role"] = draw(st.sampled_from(SOURCE_ROLES))
    if draw(st.booleans()):
        annotation["kind"] = draw(st.sampled_from(["consensus", "adjudicated"]))
        record["parents"] = ["0" * 64, "ab" * 32][: draw(st.integers(1, 2))]
    elif draw(st.booleans()):
        record["parents"] = ["f" * 64]
    if draw(st.booleans()):
        key = draw(st.sampled_from(["I", "A", "M", "D", "passage_support"]))
        spans = annotation["spans"]
        if spans.get(key):  # a second span of the same judgment
            snapshot = spans[key][0]["snapshot"]
            source_text = record[snapshot]["text"]
            spans[key].append(span_of(source_text, source_text[:3], snapshot))
        else:
            spans[key] = draw(st.sampled_from([None, []]))
    choice = draw(st.integers(0, 2))
    if choice == 0:
        del record["sampling"]
    elif choice == 1:
        record["sampling"] = {
            "stratum": draw(texts),
            "inclusion_probability": draw(
                st.floats(min_value=1e-9, max_value=1.0) | st.sampled_from([1, 1e-5, 1e-4])
            ),
        }
    config = record["pipeline"]["config"]
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):
        config[draw(st.text(max_size=4))] = draw(scalars | json_values)
    record["source"]["rank"] = draw(st.none() | st.integers(1, 3) | st.just(2**64 + 1))
    for where in ("query", "answer", "source"):
        if draw(st.booleans()):
            record[where]["text"] = record[where]["text"] + draw(texts)
    if draw(st.booleans()):
        record["answer"]["model"] = draw(texts)
        record["answer"]["conditions"]["region"] = draw(texts)
    if draw(st.booleans()):  # insertion order must not matter
        record = dict(reversed(list(record.items())))
        record["annotation"] = dict(reversed(list(record["annotation"].items())))
    return record


def break_at_random(obj: Any, draw: Any) -> None:
    """Set, delete or add one field (or list item) at a random depth, in place."""
    target = obj
    for _ in range(draw(st.integers(0, 4))):
        children = (
            [key for key, value in target.items() if type(value) in (dict, list)]
            if type(target) is dict
            else [index for index, value in enumerate(target) if type(value) in (dict, list)]
        )
        if not children:
            break
        target = target[draw(st.sampled_from(children))]
    if type(target) is list:
        if target and draw(st.booleans()):
            target[draw(st.integers(0, len(target) - 1))] = draw(json_values)
        else:
            target.append(draw(json_values))
        return
    action = draw(st.sampled_from(["set", "set", "set", "delete", "add"]))
    if action == "add" or not target:
        target[draw(st.sampled_from(["extra", "id", "value", "I", "sampling", 3]))] = draw(
            json_values
        )
    elif action == "delete":
        del target[draw(st.sampled_from(list(target)))]
    else:
        target[draw(st.sampled_from(list(target)))] = draw(json_values)


def orjson_seal(record: dict[str, Any]) -> None:
    """Seal with orjson's bytes, which are not the canonical ones for NaN, infinity or a
    float below 1e-4 (the stages refuse such a record; so must the fast path)."""
    body = {key: value for key, value in record.items() if key != "record_digest"}
    try:
        data = orjson.dumps(body, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    except TypeError:
        return
    record["record_digest"] = hashlib.sha256(data).hexdigest()


def sealed(record: dict[str, Any]) -> bool:
    try:
        seal(record)
    except (CanonicalError, ValueError, TypeError, KeyError):
        return False
    return True


@SETTINGS
@given(st.data())
def test_a_varied_valid_record(data):
    record = valid_record(data.draw)
    if data.draw(st.booleans()):
        if not sealed(record):
            return
    else:
        sealed(record)
        orjson_seal(record)
    same_result(record)


@SETTINGS
@given(st.data())
def test_a_broken_record(data):
    record = valid_record(data.draw)
    if not sealed(record):
        return
    for _ in range(data.draw(st.integers(1, 2))):
        break_at_random(record, data.draw)
    reseal_how = data.draw(st.sampled_from(["no", "canonical", "orjson", "all"]))
    if reseal_how == "canonical":
        try:
            body = {key: value for key, value in record.items() if key != "record_digest"}
            record["record_digest"] = record_digest(body)
        except (CanonicalError, ValueError, TypeError, KeyError):
            pass
    elif reseal_how == "orjson":
        orjson_seal(record)
    elif reseal_how == "all":
        with contextlib.suppress(CanonicalError, ValueError, TypeError, KeyError, AttributeError):
            seal(record)
    same_result(record)


def test_the_fast_path_accepts_the_plain_records():
    record = make_record()
    accepted = fast_or_none(record)
    assert accepted is not None
    assert accepted.ok
    assert accepted == _check_in_order(record, CODEBOOKS)


def test_the_fast_path_accepts_every_conformance_record_and_refuses_every_mutation():
    codebook = codebook_from_dict(conformance_codebook())
    registry = {codebook.key: codebook}
    states = list(all_states())
    for index, state in enumerate(states):
        record = build_record(index, state, dict(codebook.weights))
        accepted = _accepted_tuple(record, registry)
        assert accepted is not None
        assert accepted == _check_in_order(record, registry)
        if not is_complete(state):
            continue
        for mutation in mutations.MUTATIONS:
            broken = mutations.mutate(mutation, record, index)
            try:
                answer = _accepted_tuple(broken, registry)
            except (KeyError, ValueError, TypeError, ContractError):
                answer = None
            assert answer is None, mutation.name
            assert check_record(broken, registry) == _check_in_order(broken, registry)


@pytest.mark.parametrize(
    "value",
    [1e-5, 5e-324, math.nan, math.inf, 2**64, -(2**63) - 1, "\ud800", [1e-5], {"k": 1e-7}],
)
def test_a_configuration_orjson_writes_otherwise(value):
    # The pipeline's configuration is free-form: a float below 1e-4, NaN, infinity, an
    # integer outside 64 bits, a surrogate or a nested value never reaches orjson's digest
    # unchecked; sealed canonically the record is accepted (or refused) as the stages say.
    record = make_record(sealed=False)
    record["pipeline"]["config"]["odd"] = value
    if sealed(record):
        same_result(record)
        assert check_record(record, CODEBOOKS).ok
    record["tuple_digest"] = "0" * 64
    orjson_seal(record)
    same_result(record)
    assert not check_record(record, CODEBOOKS).ok
