"""The ledger head kept outside the database (pure): how it is written and read, and
what a stored chain that no longer passes through it looks like."""

from __future__ import annotations

import pytest

from audit.contract.ledger import (
    GENESIS,
    INVALID_HEAD,
    Head,
    HeadError,
    head_from_json,
    head_parse,
    head_problem,
)

HASH = "ab" * 32


def test_a_head_is_written_and_read_as_seq_colon_hash():
    head = Head(42, HASH)
    assert str(head) == f"42:{HASH}"
    assert head_parse(f"  {head}\n") == head
    assert head_from_json({"ledger_head": head.as_dict(), "stage": None}) == head
    assert head_from_json({"seq": 42, "entry_hash": HASH}) == head
    assert head_parse(f"0:{GENESIS}") == Head(0, GENESIS)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "expected SEQ:HASH"),
        (HASH, "expected SEQ:HASH"),
        (f"-1:{HASH}", "expected SEQ:HASH"),
        (f"1:{HASH.upper()}", "64 lowercase hex digits"),
        (f"1:{HASH}0", "64 lowercase hex digits"),
        (f"0:{HASH}", "entry 0 (an empty chain) has the hash"),
    ],
)
def test_a_malformed_head_is_refused_with_its_reason(text, reason):
    with pytest.raises(HeadError, match=reason.replace("(", r"\(").replace(")", r"\)")) as err:
        head_parse(text, where="--expect")
    assert err.value.code == INVALID_HEAD
    assert str(err.value).startswith("--expect: ")


@pytest.mark.parametrize(
    "value",
    [
        [],
        {"stage": "adjudicated"},
        {"ledger_head": None},
        {"seq": True, "entry_hash": HASH},
        {"seq": 1.0, "entry_hash": HASH},
        {"seq": 1, "entry_hash": 7},
    ],
)
def test_a_json_document_without_a_proper_head_is_refused(value):
    with pytest.raises(HeadError):
        head_from_json(value)


def test_the_chain_still_passing_through_the_head_is_no_problem():
    assert head_problem(Head(3, HASH), last_seq=3, hash_at_seq=HASH) is None
    assert head_problem(Head(3, HASH), last_seq=9, hash_at_seq=HASH) is None  # moved on
    assert head_problem(Head(0, GENESIS), last_seq=0, hash_at_seq=None) is None


def test_a_truncated_or_rewound_chain_is_named():
    problem = head_problem(Head(7, HASH), last_seq=0, hash_at_seq=None)
    assert problem == (
        f"the ledger ends at entry 0, but the copy kept elsewhere says entry 7 was appended "
        f"(7:{HASH}): the chain was truncated or rewound"
    )
    assert "ends at entry 5" in head_problem(Head(7, HASH), last_seq=5, hash_at_seq=None)


def test_a_rewritten_chain_is_named():
    problem = head_problem(Head(7, HASH), last_seq=9, hash_at_seq="cd" * 32)
    assert problem == (
        f"entry 7 has the hash {'cd' * 32}, but the copy kept elsewhere says {HASH}: the "
        "chain was rewritten up to that entry"
    )
