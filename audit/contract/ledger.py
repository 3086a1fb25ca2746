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
