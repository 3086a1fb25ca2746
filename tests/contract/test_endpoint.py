"""Endpoint, short circuit, policy action and priority over the whole state space."""

from __future__ import annotations

import itertools

import pytest

from audit.contract import (
    policy_action,
    priority,
    resolve_complete_case,
    resolve_short_circuit,
)

STATES = list(itertools.product((0, 1, None), repeat=4))


def test_state_space_counts_match_the_seed():
    outcomes = [resolve_complete_case(*state) for state in STATES]
    assert len(STATES) == 81
    assert outcomes.count(1) == 1
    assert outcomes.count(0) == 15
    assert outcomes.count(None) == 65
    assert resolve_complete_case(1, 1, 1, 0) == 1


def test_short_circuit_resolves_66_states_and_agrees_when_complete():
    resolved = [state for state in STATES if resolve_short_circuit(*state) is not None]
    assert len(resolved) == 66
    for state in STATES:
        if None not in state:
            assert resolve_short_circuit(*state) == resolve_complete_case(*state)


@pytest.mark.parametrize(
    ("endpoint", "policy", "action"),
    [
        (0, None, "PASS"),
        (1, None, "CONTEXTUALIZE"),
        (None, None, "REVIEW"),
        (0, "abstain_when_unresolved", "PASS"),
        (1, "abstain_when_unresolved", "CONTEXTUALIZE"),
        (None, "abstain_when_unresolved", "ABSTAIN"),
    ],
)
def test_policy_action(endpoint, policy, action):
    assert policy_action(endpoint, policy) == action


def test_priority_is_the_weighted_sum_clamped_to_unit_interval():
    weights = {"d_Q": 0.5, "d_R": 0.5}
    assert priority({"d_Q": 1.0, "d_R": 0.0}, weights) == 0.5
    assert priority({"d_Q": 1.0, "d_R": 1.0}, {"d_Q": 0.5, "d_R": 0.5 + 1e-10}) == 1.0
