"""The claim ledger's hash chain (DESIGN.md, "Claim ledger and validation gate").

Each entry carries the SHA-256 of its predecessor, so that removing, reordering or editing
an entry anywhere breaks the chain from that point on. Like every digest here this
detects change; it is not a signature: whoever can rewrite the whole table can rewrite
the whole chain, which is why the latest entry hash is also worth keeping elsewhere.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from audit.contract.canonical import canonical_digest

GENESIS = "0" * 64

#: The fields an entry's hash covers, besides ``prev_hash``. Order is irrelevant
#: (canonical JSON sorts keys); the set is the contract.
ENTRY_FIELDS = (
    "seq",
    "study",
    "unit_digest",
    "record_digest",
    "kind",
    "codebook",
    "checker_version",
    "stage",
    "ok",
    "reason",
    "endpoint",
    "short_circuit",
    "priority",
    "action",
    "recorded_at",
)


def entry_hash(entry: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical entry: every field of ENTRY_FIELDS and ``prev_hash``."""
    body = {name: entry[name] for name in ENTRY_FIELDS}
    body["prev_hash"] = entry["prev_hash"]
    return canonical_digest(body)


@dataclass(frozen=True)
class ChainProblem:
    """The first place where the stored chain differs from the one that was written."""

    seq: int
    kind: str  # "removed", "reordered" or "edited"
    message: str


def verify_chain(entries: Iterable[Mapping[str, Any]]) -> tuple[int, ChainProblem | None]:
    """Walk entries in ``seq`` order; return how many were checked and the first problem.

    - a gap in ``seq`` means entries were **removed**;
    - a ``seq`` that does not increase, or a ``prev_hash`` that is not the hash of the
      entry before, means entries were **reordered** (or one was removed and the rest
      renumbered);
    - a stored ``entry_hash`` that differs from the entry's recomputed hash means the
      entry was **edited**.
    """
    previous_seq = 0
    previous_hash = GENESIS
    checked = 0
    for entry in entries:
        seq = entry["seq"]
        if seq > previous_seq + 1:
            missing = (
                f"{previous_seq + 1}"
                if seq == previous_seq + 2
                else (f"{previous_seq + 1}–{seq - 1}")
            )
            return checked, ChainProblem(
                seq, "removed", f"entry {missing} is missing: the chain jumps to {seq}"
            )
        if seq <= previous_seq:
            return checked, ChainProblem(
                seq, "reordered", f"entry {seq} comes after entry {previous_seq}"
            )
        if entry_hash(entry) != entry["entry_hash"]:
            return checked, ChainProblem(
                seq, "edited", f"entry {seq} does not match its hash: it was changed"
            )
        if entry["prev_hash"] != previous_hash:
            return checked, ChainProblem(
                seq,
                "reordered",
                f"entry {seq} does not follow entry {previous_seq}: its predecessor hash "
                "is another entry's (entries were moved or renumbered)",
            )
        previous_seq = seq
        previous_hash = entry["entry_hash"]
        checked += 1
    return checked, None


# --- the head, kept elsewhere ---------------------------------------------------------

#: Reason codes of an expected head that cannot be read.
INVALID_HEAD = "invalid_head"

_HEX = frozenset("0123456789abcdef")


class HeadError(ValueError):
    """An expected head that is not ``SEQ:HASH`` (or a JSON object naming one)."""

    code = INVALID_HEAD


@dataclass(frozen=True)
class Head:
    """A position on the chain: entry ``seq`` (0 = nothing appended) and its hash.

    Written as ``SEQ:HASH`` (``verify_ledger`` prints it; every release's ``stage.json``
    carries it as ``ledger_head``). A copy kept outside the database proves that the chain
    once reached this entry with this hash: a truncated, rewound or rewritten chain no
    longer does."""

    seq: int
    entry_hash: str

    def __str__(self) -> str:
        return f"{self.seq}:{self.entry_hash}"

    def as_dict(self) -> dict[str, Any]:
        return {"seq": self.seq, "entry_hash": self.entry_hash}


def head_of(seq: int, entry_hash: str, *, where: str = "the head") -> Head:
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise HeadError(f"{where}: the entry number must be a whole number ≥ 0, not {seq!r}")
    if not isinstance(entry_hash, str) or len(entry_hash) != 64 or not set(entry_hash) <= _HEX:
        raise HeadError(f"{where}: the entry hash must be 64 lowercase hex digits")
    if seq == 0 and entry_hash != GENESIS:
        raise HeadError(f"{where}: entry 0 (an empty chain) has the hash {GENESIS}")
    return Head(seq, entry_hash)


def head_parse(text: str, *, where: str = "the head") -> Head:
    """``SEQ:HASH`` (surrounding white space ignored) as a :class:`Head`."""
    seq, colon, entry_hash = text.strip().partition(":")
    if not colon or not seq.isdigit():
        raise HeadError(f"{where}: expected SEQ:HASH (e.g. 42:3f…), got {text.strip()[:80]!r}")
    return head_of(int(seq), entry_hash, where=where)


def head_from_json(value: Any, *, where: str = "the head") -> Head:
    """A head from a JSON document: a release's ``stage.json`` (its ``ledger_head``) or
    ``{"seq": …, "entry_hash": …}``."""
    if isinstance(value, dict) and "ledger_head" in value:
        value = value["ledger_head"]
    if not isinstance(value, dict) or "seq" not in value or "entry_hash" not in value:
        raise HeadError(f"{where}: no ledger_head (seq and entry_hash) in this JSON")
    return head_of(value["seq"], value["entry_hash"], where=where)


def head_problem(expected: Head, *, last_seq: int, hash_at_seq: str | None) -> str | None:
    """Compare a head kept elsewhere with the stored chain: ``last_seq`` is the highest
    entry stored, ``hash_at_seq`` the stored hash of entry ``expected.seq`` (``None``:
    no such entry). ``None`` when the chain still passes through ``expected``."""
    if expected.seq == 0:
        return None
    if hash_at_seq is None or last_seq < expected.seq:
        return (
            f"the ledger ends at entry {last_seq}, but the copy kept elsewhere says entry "
            f"{expected.seq} was appended ({expected}): the chain was truncated or rewound"
        )
    if hash_at_seq != expected.entry_hash:
        return (
            f"entry {expected.seq} has the hash {hash_at_seq}, but the copy kept elsewhere "
            f"says {expected.entry_hash}: the chain was rewritten up to that entry"
        )
    return None
