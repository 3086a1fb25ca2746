"""The exhaustive state space {0, 1, U}^4 of the predicates (I, A, M, D).

U is ``None`` here and ``null`` in JSON. The order is fixed (I slowest, D fastest; 0, 1, U)
so that every output of the suite lists states in the same order on every run.
"""

from __future__ import annotations

import itertools
from typing import TypeAlias

Value: TypeAlias = int | None
State: TypeAlias = tuple[Value, Value, Value, Value]

PREDICATE_KEYS: tuple[str, str, str, str] = ("I", "A", "M", "D")
VALUES: tuple[Value, ...] = (0, 1, None)


def all_states() -> tuple[State, ...]:
    """The 81 states, in suite order."""
    return tuple(itertools.product(VALUES, repeat=4))  # type: ignore[return-value]


def is_complete(state: State) -> bool:
    return all(value is not None for value in state)


def complete_states() -> tuple[State, ...]:
    return tuple(state for state in all_states() if is_complete(state))


def value_code(value: Value) -> str:
    return "U" if value is None else str(value)


def state_code(state: State) -> str:
    """Four characters, e.g. ``"110U"`` for I=1, A=1, M=0, D=U."""
    return "".join(value_code(value) for value in state)


def state_dict(state: State) -> dict[str, Value]:
    return dict(zip(PREDICATE_KEYS, state, strict=True))


def replace(state: State, index: int, value: Value) -> State:
    items = list(state)
    items[index] = value
    return tuple(items)  # type: ignore[return-value]
