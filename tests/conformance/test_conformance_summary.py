"""The summary has exactly the specification's shape and numbers (seed §IV)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from audit.conformance import EXPECTED, SuiteResult, compare


def test_summary_equals_the_specification(suite: SuiteResult) -> None:
    assert suite.mismatches == []
    assert suite.ok
    assert suite.summary == EXPECTED


def test_summary_numbers_are_integers_not_booleans(suite: SuiteResult) -> None:
    # compare() distinguishes True from 1, so an accidental boolean count fails here.
    assert compare(suite.summary) == []


def test_summary_file_holds_exactly_the_summary(written_twice: tuple[Path, Path]) -> None:
    first, _second = written_twice
    summary = json.loads((first / "summary.json").read_text(encoding="utf-8"))
    assert summary == EXPECTED
    assert list(summary) == list(EXPECTED)


def test_versions_live_in_the_manifest_not_the_summary(suite: SuiteResult) -> None:
    assert "suite_version" not in suite.summary
    assert suite.manifest["suite_version"]
    assert suite.manifest["checker_version"]
    assert suite.manifest["codebook"]["name"] == "source-risk"
    assert suite.manifest["passed"] is True


def test_compare_reports_every_difference() -> None:
    # given a summary with one wrong number, one missing and one extra key
    summary = copy.deepcopy(EXPECTED)
    summary["states"]["positive"] = 2
    del summary["coverage"]["short_circuit_resolved"]
    summary["mutations"]["extra"] = 0

    # when / then
    assert compare(summary) == [
        "states.positive: got 2, expected 1",
        "coverage.short_circuit_resolved: missing (expected 66)",
        "mutations.extra: unexpected",
    ]


def test_compare_refuses_a_boolean_for_a_count() -> None:
    summary = copy.deepcopy(EXPECTED)
    summary["states"]["positive"] = True
    assert compare(summary) == ["states.positive: got True, expected 1"]
