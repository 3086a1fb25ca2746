"""Each of the twelve structural defects is rejected with its own reason code."""

from __future__ import annotations

import pytest

from audit.conformance import SuiteResult
from audit.conformance.mutations import MUTATIONS, Mutation
from audit.contract import codes
from audit.contract.digests import record_digest


def _cases(suite: SuiteResult, mutation: Mutation) -> list[dict]:
    return [entry for entry in suite.mutations if entry["mutation"] == mutation.name]


def test_twelve_types_with_the_registered_reasons() -> None:
    assert [mutation.expected_reason for mutation in MUTATIONS] == [
        codes.TUPLE_DIGEST_MISMATCH,
        codes.SOURCE_DIGEST_MISMATCH,
        codes.ANSWER_DIGEST_MISMATCH,
        codes.RECORD_DIGEST_MISMATCH,
        codes.MISSING_FIELD,
        codes.MISSING_FIELD,
        codes.PREDICATE_STRING,
        codes.DIMENSIONS_MISMATCH,
        codes.SPAN_MISSING,
        codes.SPAN_OUT_OF_RANGE,
        codes.SPAN_QUOTE_MISMATCH,
        codes.WEIGHTS_UNNORMALIZED,
    ]
    assert len({mutation.name for mutation in MUTATIONS}) == 12


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda mutation: mutation.name)
def test_mutation_is_rejected_with_its_reason(suite: SuiteResult, mutation: Mutation) -> None:
    cases = _cases(suite, mutation)
    assert len(cases) == 16
    for case in cases:
        assert case["rejected"], case["case"]
        assert case["reason"] == mutation.expected_reason, (case["case"], case["message"])
        assert case["message"]


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda mutation: mutation.name)
def test_structural_mutations_are_resealed(suite: SuiteResult, mutation: Mutation) -> None:
    # A stale record digest must not be what rejects a structural defect.
    for case in _cases(suite, mutation):
        sealed = case["record"]["record_digest"] == record_digest(case["record"])
        assert sealed is mutation.resealed, case["case"]


def test_mutations_leave_the_original_records_untouched(suite: SuiteResult) -> None:
    for record in suite.records:
        assert record["record_digest"] == record_digest(record)
