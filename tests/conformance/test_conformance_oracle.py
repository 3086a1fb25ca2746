"""The oracle, the fixtures and the checker's agreement with the oracle."""

from __future__ import annotations

import pytest

from audit.conformance import SuiteResult
from audit.conformance.codebook import conformance_codebook, dimension_weights
from audit.conformance.fixtures import FIXTURE_MARK, build_record
from audit.conformance.oracle import expected_endpoint
from audit.conformance.states import all_states, complete_states, state_code
from audit.contract.digests import record_digest, snapshot_digest, tuple_digest

WEIGHTS = dimension_weights(conformance_codebook())
# The state space is finite: every property is checked on all 81 states, not a sample.
every_state = pytest.mark.parametrize("state", all_states(), ids=state_code)


def test_state_space_is_exhaustive_and_ordered() -> None:
    states = all_states()
    assert len(states) == len(set(states)) == 81
    assert len(complete_states()) == 16
    assert state_code(states[0]) == "0000"
    assert state_code(states[-1]) == "UUUU"


def test_oracle_counts_one_positive_fifteen_negatives_sixty_five_unresolved() -> None:
    outcomes = [expected_endpoint(state) for state in all_states()]
    assert outcomes.count(1) == 1
    assert outcomes.count(0) == 15
    assert outcomes.count(None) == 65
    assert expected_endpoint((1, 1, 1, 0)) == 1
    assert expected_endpoint((1, 1, 1, None)) is None


def test_checker_agrees_with_the_oracle_on_every_state(suite: SuiteResult) -> None:
    for expected, prediction in zip(suite.expected, suite.predictions, strict=True):
        assert prediction["ok"], prediction
        endpoint = prediction["endpoint"]
        assert ("U" if endpoint is None else str(endpoint)) == expected["expected"], expected


def test_actions_follow_the_endpoint(suite: SuiteResult) -> None:
    actions = {None: "REVIEW", 0: "PASS", 1: "CONTEXTUALIZE"}
    for prediction in suite.predictions:
        assert prediction["action"] == actions[prediction["endpoint"]]


@every_state
def test_fixture_records_are_sealed_and_their_digests_hold(state: tuple) -> None:
    index = all_states().index(state)
    record = build_record(index, state, WEIGHTS)
    assert record["record_digest"] == record_digest(record)
    assert record["source"]["digest"] == snapshot_digest(record["source"]["text"])
    assert record["answer"]["digest"] == snapshot_digest(record["answer"]["text"])
    assert record["tuple_digest"] == tuple_digest(
        query=record["query"],
        source_digest=record["source"]["digest"],
        answer_digest=record["answer"]["digest"],
        pipeline=record["pipeline"],
    )
    assert record == build_record(index, state, WEIGHTS)


@every_state
def test_every_resolved_judgment_has_a_code_point_span(state: tuple) -> None:
    record = build_record(all_states().index(state), state, WEIGHTS)
    annotation = record["annotation"]
    assert annotation["passage_support"] == 1
    resolved = {key for key, value in annotation["predicates"].items() if value is not None}
    assert set(annotation["spans"]) == resolved | {"passage_support"}
    for spans in annotation["spans"].values():
        for span in spans:
            text = record[span["snapshot"]]["text"]
            assert text.startswith(FIXTURE_MARK)
            assert 0 <= span["start"] < span["end"] <= len(text)
            assert text[span["start"] : span["end"]] == span["quote"]
            # UTF-16 offsets would be one unit further: the fixture mark is outside the BMP.
            assert len(text[: span["start"]].encode("utf-16-le")) // 2 == span["start"] + 1


def test_weights_of_every_record_sum_to_one(suite: SuiteResult) -> None:
    for record in suite.records:
        weights = [entry["weight"] for entry in record["annotation"]["evidence"].values()]
        assert sum(weights) == 1
        assert "d_Q" in record["annotation"]["evidence"]
