"""Each annotator's queue order: a seeded permutation of the study's units, pure (no Django).

The order of a unit for an annotator is its **order key**, a function of the study's seed,
the annotator's id and the unit's id alone, so that anybody holding the three numbers
recomputes the permutation an annotator was given, and two annotators (different ids) get
unrelated orders: no shared sequence, no order effects common to everyone.

The key is a bijection of the unit id modulo the Mersenne prime ``P = 2**31 - 1``: an
affine map, the fifth power (a permutation of Z/P because 5 does not divide P - 1), and a
second affine map, with the four coefficients drawn from SHA-256 of (seed, annotator).
Every step is integer arithmetic below 2**62, so the database computes the same key in
plain SQL (:func:`order_key_sql`) for a whole study in one INSERT … SELECT, and the queue
walks an index on the stored keys instead of shuffling units per request. Unit ids at or
above P fold onto smaller ones; such rare ties are ordered by unit id.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

#: The modulus of every step: a prime, so that each step is a permutation.
P = 2**31 - 1
#: The power step; gcd(5, P - 1) == 1, so x -> x**5 mod P is a bijection.
POWER = 5


@dataclass(frozen=True)
class OrderParameters:
    a1: int
    b1: int
    a2: int
    b2: int


def order_parameters(*, seed: int, annotator_id: int) -> OrderParameters:
    """The four coefficients of one annotator's permutation in one study."""
    digest = hashlib.sha256(f"claimgate-queue-order:{seed}:{annotator_id}".encode()).digest()
    words = [int.from_bytes(digest[i : i + 8], "big") for i in range(0, 32, 8)]
    return OrderParameters(
        a1=1 + words[0] % (P - 1),
        b1=words[1] % P,
        a2=1 + words[2] % (P - 1),
        b2=words[3] % P,
    )


def order_key(parameters: OrderParameters, unit_id: int) -> int:
    """The unit's position key in the annotator's order (smaller comes first)."""
    x = (parameters.a1 * (unit_id % P) + parameters.b1) % P
    x = pow(x, POWER, P)
    return (parameters.a2 * x + parameters.b2) % P


def order_key_sql(parameters: OrderParameters, column: str) -> str:
    """:func:`order_key` as a SQL expression over the integer ``column`` (PostgreSQL and
    SQLite alike). Only integers computed here are interpolated, never user input."""
    p = P
    x1 = f"((({column} % {p}) * {parameters.a1} + {parameters.b1}) % {p})"
    x2 = f"(({x1} * {x1}) % {p})"
    x4 = f"(({x2} * {x2}) % {p})"
    x5 = f"(({x4} * {x1}) % {p})"
    return f"(({x5} * {parameters.a2} + {parameters.b2}) % {p})"


def order_of(*, seed: int, annotator_id: int, unit_ids: list[int]) -> list[int]:
    """The unit ids in the annotator's order: what the queue hands out when nobody else
    takes a unit first (ties by unit id)."""
    parameters = order_parameters(seed=seed, annotator_id=annotator_id)
    return sorted(unit_ids, key=lambda unit_id: (order_key(parameters, unit_id), unit_id))


def answer_pair_left_is_evaluated(*, seed: int, annotator_id: int, unit_id: int) -> bool:
    """For an ``answer_pair`` unit: whether this annotator sees the evaluated system's
    answer on the left. Drawn from the same study seed, per (annotator, unit), independent
    of the queue order (a separate hash domain), so the side is as reproducible as the
    order and a position bias cannot follow the order."""
    digest = hashlib.sha256(
        f"claimgate-pair-sides:{seed}:{annotator_id}:{unit_id}".encode()
    ).digest()
    return digest[0] & 1 == 1
