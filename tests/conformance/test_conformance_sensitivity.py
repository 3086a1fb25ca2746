"""The suite is not vacuous: a checker broken in one way fails the numbers that test it.

Each test wraps the real ``check_record`` with one deliberate defect and runs the whole
suite against it.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import audit.contract as contract
from audit.conformance import run_suite

REPO = Path(__file__).resolve().parents[2]
real_check_record = contract.check_record


def _broken(change: Callable[[Any, Any], Any]) -> Callable[..., Any]:
    def check_record(obj: Any, codebooks: Any) -> Any:
        return change(obj, real_check_record(obj, codebooks))

    return check_record


def _failing_paths(monkeypatch: pytest.MonkeyPatch, change: Callable[[Any, Any], Any]) -> set:
    monkeypatch.setattr(contract, "check_record", _broken(change))
    result = run_suite()
    assert not result.ok
    return {line.split(":", 1)[0] for line in result.mismatches}


def test_short_circuit_substituted_for_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    def change(obj: Any, result: Any) -> Any:
        return dataclasses.replace(result, endpoint=result.short_circuit) if result.ok else result

    paths = _failing_paths(monkeypatch, change)
    assert "states.negative" in paths
    assert "oracle_agreement.matched" in paths
    assert "transitions.evidence_removal.to_unresolved" in paths


def test_passage_support_leaking_into_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    def change(obj: Any, result: Any) -> Any:
        if result.ok and obj["annotation"].get("passage_support") == 0:
            return dataclasses.replace(result, endpoint=0)
        return result

    paths = _failing_paths(monkeypatch, change)
    assert paths == {"transitions.support_toggle.unchanged"}


def test_query_susceptibility_leaking_into_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    def change(obj: Any, result: Any) -> Any:
        if result.ok and obj["annotation"]["evidence"]["d_Q"]["value"] == 0.0:
            return dataclasses.replace(result, endpoint=1)
        return result

    paths = _failing_paths(monkeypatch, change)
    assert "ablations.drop_dQ.changed" in paths
    assert "transitions.dq_sweep.unchanged" in paths


def test_a_checker_that_ignores_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    span_reasons = {"span_missing", "span_out_of_range", "span_quote_mismatch"}

    def change(obj: Any, result: Any) -> Any:
        if result.reason in span_reasons:
            return dataclasses.replace(result, ok=True, reason=None, message=None)
        return result

    paths = _failing_paths(monkeypatch, change)
    assert paths == {"mutations.rejected", "mutations.reason_matched"}


def test_a_checker_with_a_different_reason_order(monkeypatch: pytest.MonkeyPatch) -> None:
    def change(obj: Any, result: Any) -> Any:
        if result.reason == "source_digest_mismatch":
            return dataclasses.replace(result, reason="tuple_digest_mismatch")
        return result

    assert _failing_paths(monkeypatch, change) == {"mutations.reason_matched"}


def test_a_checker_that_drops_lineage(monkeypatch: pytest.MonkeyPatch) -> None:
    def change(obj: Any, result: Any) -> Any:
        if result.ok and obj["parents"]:
            return dataclasses.replace(result, ok=False, reason="invalid_field")
        return result

    assert _failing_paths(monkeypatch, change) == {"serialization.lineage_ok"}


def test_cli_exits_one_when_a_number_differs(tmp_path: Path) -> None:
    # A child process with a broken resolver: the CLI must report and exit 1.
    program = (
        "import sys, audit.contract as c\n"
        "from audit.conformance.__main__ import main\n"
        "real = c.check_record\n"
        "import dataclasses\n"
        "def broken(obj, books):\n"
        "    r = real(obj, books)\n"
        "    return dataclasses.replace(r, endpoint=r.short_circuit) if r.ok else r\n"
        "c.check_record = broken\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", program, "--out", str(tmp_path / "out")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 1, completed.stdout + completed.stderr
    assert "FAIL" in completed.stdout
    assert "states.negative: got 65, expected 15" in completed.stdout
