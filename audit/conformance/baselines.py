"""Rule projections compared with the endpoint (seed §IV-B) and the ablation plan (§IV-C).

The baselines are deliberately simple: each keeps one piece of the record and discards the
rest. The common guard gives them the same missingness policy as the complete-case
endpoint, so a comparison measures discarded information, not a stricter guard.
"""

from __future__ import annotations

from collections.abc import Callable

from audit.conformance.states import State, Value

Baseline = Callable[[State, Value], Value]


def support_only(state: State, support: Value) -> Value:
    """0 (no finding) when passage support is present; 1 when it is absent; U unknown."""
    if support is None:
        return None
    return 0 if support == 1 else 1


def relationship_only(state: State, support: Value) -> Value:
    """The relationship predicate I on its own."""
    return state[0]


def disclosure_only(state: State, support: Value) -> Value:
    """1 - D when D is observed, U otherwise (an oracle-feature proxy, not a detector)."""
    disclosure = state[3]
    return None if disclosure is None else 1 - disclosure


BASELINES: tuple[tuple[str, Baseline], ...] = (
    ("support_only", support_only),
    ("relationship_only", relationship_only),
    ("disclosure_only", disclosure_only),
)


def guarded(rule: Baseline) -> Baseline:
    """The same four-predicate completeness guard as the endpoint: U unless all observed."""

    def rule_with_guard(state: State, support: Value) -> Value:
        if any(value is None for value in state):
            return None
        return rule(state, support)

    return rule_with_guard


#: Ablations: (name, predicate index, substituted value). Dropping I, A or M substitutes 1
#: (the requirement always holds); dropping D substitutes 0 (never disclosed).
ABLATIONS: tuple[tuple[str, int, int], ...] = (
    ("drop_I", 0, 1),
    ("drop_A", 1, 1),
    ("drop_M", 2, 1),
    ("drop_D", 3, 0),
)
