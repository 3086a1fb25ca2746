"""The test oracle, written without the resolver (seed §IV-A).

It expresses the same rule differently: membership in an explicit positive set for fully
observed states, U otherwise. It is an independently expressed oracle for the rule, not
semantic ground truth.
"""

from __future__ import annotations

from audit.conformance.states import State, Value

#: The only fully observed state that is a material relationship omission.
POSITIVE_STATES: frozenset[tuple[int, int, int, int]] = frozenset({(1, 1, 1, 0)})


def expected_endpoint(state: State) -> Value:
    """1 for a member of the positive set, 0 for any other complete state, None (U)
    when any predicate is unresolved."""
    if None in state:
        return None
    return 1 if state in POSITIVE_STATES else 0
