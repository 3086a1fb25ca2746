"""The hash chain alone (pure): every kind of tampering is found at the right entry."""

from __future__ import annotations

import copy

from audit.contract.ledger import GENESIS, entry_hash, verify_chain


def chain(length: int = 5) -> list[dict]:
    entries, previous = [], GENESIS
    for seq in range(1, length + 1):
        entry = {
            "seq": seq,
            "study": "s",
            "unit_digest": "u" * 64,
            "record_digest": f"{seq:064d}",
            "kind": "independent",
            "codebook": "source-risk 1.0.0",
            "checker_version": "1.0.0",
            "stage": None,
            "ok": True,
            "reason": None,
            "endpoint": seq % 2,
            "short_circuit": 0,
            "priority": 0.25 * (seq % 4),
            "action": "PASS",
            "recorded_at": f"2026-11-30T10:00:0{seq}Z",
            "prev_hash": previous,
        }
        entry["entry_hash"] = previous = entry_hash(entry)
        entries.append(entry)
    return entries


def test_an_intact_chain_verifies():
    assert verify_chain(chain()) == (5, None)


def test_a_removed_entry_is_named():
    entries = chain()
    del entries[2]
    checked, problem = verify_chain(entries)
    assert (checked, problem.seq, problem.kind) == (2, 4, "removed")
    assert "3" in problem.message


def test_an_edited_entry_is_named():
    entries = chain()
    entries[1]["endpoint"] = 1 - entries[1]["endpoint"]
    checked, problem = verify_chain(entries)
    assert (checked, problem.seq, problem.kind) == (1, 2, "edited")


def test_an_edited_entry_with_a_recomputed_hash_breaks_the_next_link():
    entries = chain()
    entries[1]["action"] = "CONTEXTUALIZE"
    entries[1]["entry_hash"] = entry_hash(entries[1])
    _checked, problem = verify_chain(entries)
    assert (problem.seq, problem.kind) == (3, "reordered")


def test_swapped_entries_are_found():
    entries = chain()
    entries[1], entries[2] = entries[2], entries[1]
    checked, problem = verify_chain(entries)
    assert (checked, problem.seq, problem.kind) == (1, 3, "removed")


def test_renumbered_entries_are_found_as_reordered():
    entries = copy.deepcopy(chain())
    entries[1]["seq"], entries[2]["seq"] = 3, 2
    entries.sort(key=lambda e: e["seq"])
    _checked, problem = verify_chain(entries)
    assert problem is not None
    assert problem.seq == 2


def test_no_stage_is_met_vacuously_before_the_labels_are_in():
    from audit.ledger.gate import NO_RELIABILITY, GateInputs, evaluate_gate

    inputs = GateInputs(
        checker_version="1.0.0",
        conformance_passed=True,
        records_total=0,
        records_refused=0,
        units_total=10,
        units_fully_labelled=0,
        overlap=2,
        reliability=NO_RELIABILITY,
        units_disputed=0,
        units_adjudicated=0,
        frozen=False,
    )
    stages = {stage.name: stage for stage in evaluate_gate(inputs).stages}
    assert not stages["adjudicated"].met
    assert "every unit" in stages["adjudicated"].why
