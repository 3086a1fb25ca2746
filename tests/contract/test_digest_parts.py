"""Digests assembled from shared identity texts give the same bytes as the plain ones."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.contract import codes
from audit.contract.canonical import CanonicalError, canonical_digest
from audit.contract.digests import (
    answer_identity_text,
    pipeline_identity_text,
    query_identity_text,
    tuple_digest,
    tuple_digest_from_parts,
    unit_digest,
    unit_digest_from_parts,
)
from audit.contract.errors import ContractError
from audit.contract.observations import check_observation, decode_line
from tests.archive.builders import observation, reseal

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=12,
)
texts = st.text(min_size=1, max_size=12) | st.sampled_from(['"', "\\", "\n", "é", "💶", "\x00"])
queries = st.fixed_dictionaries({"id": texts, "question_version": texts, "text": texts})
pipelines = st.fixed_dictionaries(
    {"name": texts, "version": texts, "config": st.dictionaries(texts, json_values, max_size=4)}
)
answers = st.fixed_dictionaries(
    {
        "service": texts,
        "model": st.none() | texts,
        "web_search": st.booleans(),
        "conditions": st.fixed_dictionaries({"region": st.none() | texts}),
        "text": st.text(),
        "citations": st.lists(st.fixed_dictionaries({"url": texts, "kind": texts}), max_size=3),
        "digest": texts,
    }
)


@given(queries, pipelines, texts, texts)
def test_a_tuple_digest_from_parts_is_the_tuple_digest(query, pipeline, source, answer):
    assert tuple_digest_from_parts(
        query_text=query_identity_text(query),
        source_digest=source,
        answer_digest=answer,
        pipeline_text=pipeline_identity_text(pipeline),
    ) == tuple_digest(query=query, source_digest=source, answer_digest=answer, pipeline=pipeline)


@given(queries, pipelines, answers, st.lists(texts, max_size=4))
def test_a_unit_digest_from_parts_is_the_unit_digest(query, pipeline, answer, sources):
    assert unit_digest_from_parts(
        answer_text=answer_identity_text(answer),
        query_text=query_identity_text(query),
        source_digests=sources,
        pipeline_text=pipeline_identity_text(pipeline),
    ) == unit_digest(query=query, answer=answer, source_digests=sources, pipeline=pipeline)


def test_an_unpaired_surrogate_fails_as_the_canonical_digest_does():
    query = {"id": "q", "question_version": "1", "text": "\ud800"}
    pipeline = {"name": "p", "version": "1", "config": {}}
    with pytest.raises(CanonicalError) as plain:
        tuple_digest(query=query, source_digest="s", answer_digest="a", pipeline=pipeline)
    with pytest.raises(CanonicalError) as parts:
        tuple_digest_from_parts(
            query_text=query_identity_text(query),
            source_digest="s",
            answer_digest="a",
            pipeline_text=pipeline_identity_text(pipeline),
        )
    assert str(parts.value) == str(plain.value)


def test_an_observation_whose_query_text_is_not_unicode_is_refused_as_before():
    data = observation(1)
    data["query"]["text"] = "\ud800"
    with pytest.raises(ContractError) as error:
        check_observation(json.loads(json.dumps(data)))
    assert error.value.code == codes.INVALID_FIELD
    assert error.value.message == (
        "the observation cannot be serialized canonically: "
        "text is not valid Unicode: surrogates not allowed"
    )


def test_an_infinite_config_number_is_refused_as_before():
    data = reseal(observation(1))
    line = json.dumps(data).replace('"region": "DE"}', '"x": 1e999}', 1).encode()
    with pytest.raises(ContractError) as error:
        check_observation(decode_line(line))
    with pytest.raises(CanonicalError) as plain:
        canonical_digest({"x": float("inf")})
    assert error.value.message == f"the observation cannot be serialized canonically: {plain.value}"


@pytest.mark.parametrize("line", ['\ufeff{"a": 1}', "{", "[1] x", "NaN", '{"a": Infinity}', " "])
def test_decode_line_says_what_json_loads_says(line):
    with pytest.raises(ContractError) as error:
        decode_line(line.encode("utf-8"))
    if not line.strip():
        assert "blank" in error.value.message
        return
    with pytest.raises(ValueError, match=r".") as plain:
        json.loads(line, parse_constant=_refuse)
    assert error.value.message == f"the line is not JSON: {plain.value}"


def _refuse(name):
    raise ValueError(f"{name} is not a JSON number")
