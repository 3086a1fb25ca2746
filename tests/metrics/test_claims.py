"""Pure tests of metrics.claims (no database; run with ``-p no:django``).

The first six tests port seed 003's ``metrics.test.mjs`` onto its fixture (four attempts,
three completed, one failed), with DESIGN's field names. Seed 001's VeriScore numbers
follow, then the claim-level metrics and input validation, then properties.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics.claims import (
    CLAIM_KINDS,
    FAILED_WITH_VERDICTS,
    INVALID_COUNT,
    VERDICTS,
    Assessment,
    ClaimsInputError,
    assessment_from_dict,
    claim_counts,
    evaluate,
    grouped,
    ratio,
    support_by_position,
    support_precision,
    veriscore,
    veriscore_cohort,
)
from metrics.report_build import claim_tables

# --- seed 003's fixture ---------------------------------------------------------------------

GUIDE = "https://example.com/policies/opening-hours"
ARCHIVE = "https://example.com/archive/opening-2025"
COMMON = {
    "question_id": "sunday-hours",
    "question_version": "2",
    "service": "fixture-assistant",
    "mode": "offline",
    "model": None,
    "raw_path": "raw/answer-1.json",
    "status": "complete",
    "failure": None,
}


def _claim(text: str, source_url: str | None, quote: str | None, supported, accurate, reason):
    return {
        "text": text,
        "source_url": source_url,
        "quote": quote,
        "supported": supported,
        "accurate": accurate,
        "kind": "verifiable",
        "reason": reason,
    }


EXAMPLES: list[dict[str, Any]] = [
    {
        **COMMON,
        "cited": True,
        "supported": False,
        "accurate": False,
        "timely": True,
        "relevant": True,
        "complete": False,
        "reasons": {
            "cited": "Links current opening guidance as the source",
            "supported": "The original does not support the second claim",
            "accurate": "Conflicts with first-Sunday closure",
            "timely": "Uses material effective October 2026",
            "relevant": "Addresses the date and facility in the question",
            "complete": "Omits the closure exception",
        },
        "claims": [
            _claim(
                "Regular Sunday hours are 10–17",
                GUIDE,
                "Sunday 10–17. Closed on the first Sunday and public holidays.",
                True,
                True,
                "The claim limited to regular hours agrees",
            ),
            _claim(
                "A visit on November 1 is possible",
                GUIDE,
                "Closed on the first Sunday",
                False,
                False,
                "2026-11-01 is the first Sunday",
            ),
        ],
    },
    {
        **COMMON,
        "raw_path": "raw/answer-2.json",
        "cited": True,
        "supported": True,
        "accurate": True,
        "timely": False,
        "relevant": False,
        "complete": False,
        "reasons": {
            "cited": "Links the 2025 record",
            "supported": "The historical fact with its year matches the source",
            "accurate": "Matches the historical fact in the fictional reference",
            "timely": "Not material applicable to 2026 in the question",
            "relevant": "Does not answer whether a visit on 2026-11-01 is possible",
            "complete": "Omits the current closure status",
        },
        "claims": [
            _claim(
                "Sunday hours 11–16 in 2025",
                ARCHIVE,
                "Sunday hours 11–16 in 2025",
                True,
                True,
                "Both sentence and source are limited to 2025",
            )
        ],
    },
    {
        **COMMON,
        "raw_path": "raw/answer-3.json",
        **dict.fromkeys(VERDICTS),
        "reasons": dict.fromkeys(VERDICTS, "Stored original is truncated and cannot be assessed"),
        "claims": [_claim("Unknown", None, None, None, None, "Incomplete original")],
    },
    {**COMMON, "raw_path": "raw/attempt-4.json", "status": "failed", "failure": "HTTP 429"},
]


def examples() -> list[dict[str, Any]]:
    return copy.deepcopy(EXAMPLES)


# --- seed 003's six tests -------------------------------------------------------------------


def test_zero_denominator_gives_rate_none_and_invalid_counts_are_rejected():
    assert ratio(0, 0)["rate"] is None
    for numerator, denominator in [(2, 1), (-1, 1), (0.5, 1)]:
        with pytest.raises(ClaimsInputError) as refused:
            ratio(numerator, denominator)
        assert refused.value.code == INVALID_COUNT


def test_execution_failures_and_unknowns_are_kept_apart_from_denominators():
    result = evaluate(examples())

    assert (result["attempts"], result["completed"], result["failed"]) == (4, 3, 1)
    assert result["supported"] == {"numerator": 1, "denominator": 2, "rate": 0.5, "unknown": 1}
    assert result["complete"]["numerator"] == 0


def test_correct_historical_facts_may_fail_timeliness_and_relevance_for_a_current_question():
    result = evaluate([examples()[1]])

    assert result["accurate"]["rate"] == 1
    assert result["timely"]["rate"] == 0
    assert result["relevant"]["rate"] == 0


def test_partial_claim_support_cannot_count_as_support_for_the_whole_answer():
    row = {**examples()[0], "supported": True}

    with pytest.raises(ClaimsInputError, match="summary mismatch") as refused:
        evaluate([row])
    assert refused.value.code == "summary_mismatch"
    assert refused.value.field == "rows[0].supported"


@pytest.mark.parametrize("key", ["timely", "reasons", "claims", "raw_path"])
def test_missing_judgments_reasons_claims_or_originals_are_rejected(key):
    broken = examples()[0]
    del broken[key]

    with pytest.raises(ClaimsInputError) as refused:
        evaluate([broken])
    assert refused.value.field == f"rows[0].{key}"
    assert refused.value.code == "missing_field"


def test_a_resolved_claim_without_its_source_passage_is_rejected():
    broken = examples()[1]
    broken["claims"][0]["quote"] = None

    with pytest.raises(ClaimsInputError) as refused:
        evaluate([broken])
    assert refused.value.field == "rows[0].claims[0].quote"


def test_changed_question_versions_services_modes_and_models_aggregate_separately():
    first = examples()[0]
    rows = [
        first,
        {**first, "question_version": "3"},
        {**first, "service": "another"},
        {**first, "mode": "browser"},
        {**first, "model": "model-b"},
    ]

    groups = grouped(rows)

    assert len(groups) == 5
    assert [g["group"]["model"] for g in groups] == [None, None, None, None, "model-b"]
    assert all(g["attempts"] == 1 for g in groups)


# --- seed 001: VeriScore ----------------------------------------------------------------------


def answer(
    supported: int = 0,
    unsupported: int = 0,
    unknown: int = 0,
    opinions: int = 0,
    **fields: Any,
) -> dict[str, Any]:
    """A completed answer with the given verifiable claims (by ``supported`` value) and
    ``not_truth_apt`` claims, its answer-level ``supported`` summarizing them."""
    claims = []
    for value, count in ((True, supported), (False, unsupported), (None, unknown)):
        for _ in range(count):
            quote = None if value is None else "passage"
            url = None if value is None else GUIDE
            claims.append(_claim("claim", url, quote, value, value, "reason"))
    claims += [
        {**_claim("opinion", None, None, None, None, "advice"), "kind": "not_truth_apt"}
    ] * opinions
    summary = False if unsupported else (True if supported and not unknown else None)
    row = {
        **COMMON,
        **dict.fromkeys(VERDICTS, True),
        "supported": summary,
        "reasons": dict.fromkeys(VERDICTS, "reason"),
        "claims": claims,
    }
    row.update(fields)
    return row


def test_veriscore_reproduces_seed_001_worked_numbers():
    # C = 14 verifiable claims, s = 11 supported, K = 12: 2·11/(14 + 12) = 11/13, not 0.880.
    result = veriscore([answer(supported=11, unsupported=3)], K=12)
    (entry,) = result["per_response"]

    assert (entry["C"], entry["s"]) == (14, 11)
    assert entry["precision"] == 11 / 14
    assert entry["recall"] == 11 / 12
    assert entry["score"] == 11 / 13
    assert result["mean"] == 11 / 13
    assert (result["K"], result["K_source"]) == (12.0, "given")


@pytest.mark.parametrize(
    ("supported", "unsupported", "expected"),
    [(2, 0, Fraction(2, 7)), (1, 0, Fraction(2, 13)), (1, 11, Fraction(1, 12))],
)
def test_veriscore_recall_counts_supported_claims_not_asserted_ones(
    supported, unsupported, expected
):
    # Seed 001: C = s = 2 gives 2/7; C = s = 1 gives 2/13; twelve claims with one
    # supported give P = R = 1/12: unsupported padding cannot raise recall.
    result = veriscore([answer(supported=supported, unsupported=unsupported)], K=12)

    assert result["per_response"][0]["score"] == float(expected)


def test_veriscore_k_defaults_to_the_median_claim_count_of_the_cohort():
    cohort = [
        answer(supported=11, unsupported=3, raw_path="raw/a.json"),
        answer(supported=12, raw_path="raw/b.json"),
        answer(supported=6, unsupported=6, opinions=4, raw_path="raw/c.json"),
    ]

    result = veriscore(cohort)

    assert (result["K"], result["K_source"]) == (12.0, "cohort_median")
    assert [r["score"] for r in result["per_response"]] == [11 / 13, 1.0, 0.5]
    assert result["per_response"][2]["not_truth_apt"] == 4
    assert result["mean"] == pytest.approx((11 / 13 + 1 + 0.5) / 3)


def test_veriscore_median_of_an_even_cohort_lies_between_the_middle_counts():
    result = veriscore([answer(supported=3), answer(supported=4)])

    assert result["K"] == 3.5


def test_veriscore_scores_zero_when_nothing_is_supported_even_for_an_empty_answer():
    result = veriscore([answer(opinions=2), answer(unsupported=2), answer(supported=4)])
    empty, unsupported, full = result["per_response"]

    assert result["K"] == 2.0
    assert (empty["precision"], empty["score"]) == (None, 0.0)
    assert (unsupported["precision"], unsupported["score"]) == (0.0, 0.0)
    assert full["score"] == 1.0


def test_veriscore_keeps_unresolved_claims_in_the_claim_count():
    result = veriscore([answer(supported=2, unknown=2)], K=2)
    (entry,) = result["per_response"]

    assert (entry["C"], entry["s"], entry["unknown"]) == (4, 2, 2)
    assert entry["precision"] == 0.5


def test_veriscore_of_a_cohort_with_median_zero_leaves_recall_undefined():
    result = veriscore([answer(), answer(), answer(supported=3)])

    assert result["K"] == 0.0
    assert [r["score"] for r in result["per_response"]] == [None, None, None]
    assert result["mean"] is None


def test_veriscore_of_no_responses_has_no_reference_and_no_mean():
    failed = examples()[3]

    result = veriscore([failed])

    assert result == {
        "K": None,
        "K_source": "cohort_median",
        "K_by_domain": {},
        "responses": 0,
        "scored": 0,
        "per_response": [],
        "mean": None,
    }


@pytest.mark.parametrize("k", [0, -1, float("nan"), float("inf"), True, "12"])
def test_veriscore_rejects_a_reference_that_is_not_positive(k):
    with pytest.raises(ClaimsInputError) as refused:
        veriscore([answer(supported=1)], K=k)
    assert refused.value.field == "K"


# --- answer level: zero denominators, unknowns, failed attempts, grouping -------------------


def test_no_assessed_answer_gives_zero_denominators_and_rate_none():
    for rows in ([], [examples()[3]], [examples()[2]]):
        result = evaluate(rows)
        for name in VERDICTS:
            assert result[name]["denominator"] == 0
            assert result[name]["rate"] is None


def test_unknowns_are_counted_beside_the_denominator_per_verdict():
    rows = examples()

    result = evaluate(rows)

    assert result["cited"] == {"numerator": 2, "denominator": 2, "rate": 1.0, "unknown": 1}
    assert result["timely"] == {"numerator": 1, "denominator": 2, "rate": 0.5, "unknown": 1}
    for name in VERDICTS:
        assert result[name]["denominator"] + result[name]["unknown"] == result["completed"]


def test_failed_attempts_count_as_attempts_only():
    failed = examples()[3]
    rows = [examples()[1], failed, {**failed, "raw_path": None, "failure": "timeout"}]

    result = evaluate(rows)

    assert (result["attempts"], result["completed"], result["failed"]) == (3, 1, 2)
    assert result["accurate"] == {"numerator": 1, "denominator": 1, "rate": 1.0, "unknown": 0}


@pytest.mark.parametrize(
    ("change", "field", "code"),
    [
        ({"cited": True}, "cited", FAILED_WITH_VERDICTS),
        ({"complete": False}, "complete", FAILED_WITH_VERDICTS),
        ({"claims": [_claim("x", None, None, None, None, "r")]}, "claims", FAILED_WITH_VERDICTS),
        ({"reasons": {"cited": "r"}}, "reasons", FAILED_WITH_VERDICTS),
        ({"failure": None}, "failure", "invalid_field"),
        ({"failure": ""}, "failure", "invalid_field"),
    ],
)
def test_a_failed_attempt_carries_its_failure_and_no_verdicts(change, field, code):
    row = {**examples()[3], **change}

    with pytest.raises(ClaimsInputError) as refused:
        assessment_from_dict(row)
    assert (refused.value.field, refused.value.code) == (field, code)


def test_a_completed_answer_carries_no_failure():
    with pytest.raises(ClaimsInputError, match="failure"):
        assessment_from_dict({**examples()[0], "failure": "HTTP 500"})


def test_question_types_are_never_pooled_even_when_grouping_leaves_them_out():
    row = examples()[0]
    rows = [
        {**row, "question_type": "natural_discovery"},
        {**row, "question_type": "specified_source"},
        {**row, "question_type": "natural_discovery"},
        row,
    ]

    groups = grouped(rows, by=("service",))

    assert [g["group"] for g in groups] == [
        {"service": "fixture-assistant", "question_type": "natural_discovery"},
        {"service": "fixture-assistant", "question_type": "specified_source"},
        {"service": "fixture-assistant", "question_type": None},
    ]
    assert [g["attempts"] for g in groups] == [2, 1, 1]


def test_grouping_without_question_types_keeps_the_requested_key():
    groups = grouped(examples())

    assert len(groups) == 1
    assert groups[0]["group"] == {
        "question_id": "sunday-hours",
        "question_version": "2",
        "service": "fixture-assistant",
        "mode": "offline",
        "model": None,
    }
    assert {k: v for k, v in groups[0].items() if k != "group"} == evaluate(examples())


@pytest.mark.parametrize("by", [("answer",), ("service", "service"), "service"])
def test_grouping_by_an_unknown_or_repeated_field_is_rejected(by):
    with pytest.raises(ClaimsInputError) as refused:
        grouped(examples(), by=by)
    assert refused.value.field == "by"


# --- claim level: support precision, counts, empty answers, positions -----------------------


def test_support_precision_per_response_and_pooled_are_both_reported_and_differ():
    # Seed 001: claim counts one and nine with support counts one and zero.
    rows = [
        answer(supported=1, raw_path="raw/one.json"),
        answer(unsupported=9, raw_path="raw/nine.json"),
    ]

    result = support_precision(rows)

    assert [(r["raw_path"], r["rate"]) for r in result["per_response"]] == [
        ("raw/one.json", 1.0),
        ("raw/nine.json", 0.0),
    ]
    assert result["mean_per_response"] == 0.5
    assert result["pooled"] == {
        "numerator": 1,
        "denominator": 10,
        "rate": 0.1,
        "unsupported": 9,
        "unknown": 0,
    }


def test_support_precision_excludes_opinions_and_keeps_unresolved_claims():
    result = support_precision([answer(supported=1, unsupported=1, unknown=2, opinions=3)])
    (entry,) = result["per_response"]

    assert (entry["numerator"], entry["denominator"], entry["rate"]) == (1, 4, 0.25)
    assert (entry["unsupported"], entry["unknown"]) == (1, 2)


def test_empty_answers_are_reported_not_scored_as_zero_or_one():
    rows = [answer(opinions=2), answer(), answer(supported=1, unsupported=1)]

    precision = support_precision(rows)
    counts = claim_counts(rows)

    assert [r["rate"] for r in precision["per_response"]] == [None, None, 0.5]
    assert [r["empty_answer"] for r in precision["per_response"]] == [True, True, False]
    assert precision["mean_per_response"] == 0.5
    assert precision["empty_answers"] == 2
    assert precision["responses"] == 3
    assert (counts["total"], counts["verifiable"], counts["not_truth_apt"]) == (4, 2, 2)
    assert counts["empty_answers"] == 2


def test_support_precision_of_only_empty_answers_has_no_mean():
    result = support_precision([answer(opinions=1)])

    assert result["mean_per_response"] is None
    assert result["pooled"]["rate"] is None


def test_claim_counts_per_response_of_the_seed_fixture():
    result = claim_counts(examples())

    assert (result["total"], result["verifiable"], result["not_truth_apt"]) == (4, 4, 0)
    assert result["responses"] == 3  # the failed attempt has no response
    assert [
        (r["raw_path"], r["supported"], r["unsupported"], r["unknown"])
        for r in result["per_response"]
    ] == [
        ("raw/answer-1.json", 1, 1, 0),
        ("raw/answer-2.json", 1, 0, 0),
        ("raw/answer-3.json", 0, 0, 1),
    ]


def test_support_by_position_bins_claims_by_their_start_in_fifths():
    row = answer(supported=3, unsupported=2, unknown=1)
    for claim, position in zip(row["claims"], [0, 19, 20, 99, 85, 60], strict=True):
        claim.update(position=position, answer_length=100)
    unplaced = answer(supported=2, raw_path="raw/unplaced.json")

    bins = support_by_position([row, unplaced])

    assert [(b["bin"], b["start"], b["end"]) for b in bins] == [
        (0, 0.0, 0.2),
        (1, 0.2, 0.4),
        (2, 0.4, 0.6),
        (3, 0.6, 0.8),
        (4, 0.8, 1.0),
    ]
    assert [(b["numerator"], b["denominator"]) for b in bins] == [
        (2, 2),
        (1, 1),
        (0, 0),
        (0, 1),
        (0, 2),
    ]
    assert bins[2]["rate"] is None
    assert bins[3]["unknown"] == 1
    assert bins[4]["unsupported"] == 2
    assert [b["responses"] for b in bins] == [1, 1, 0, 1, 1]


def test_support_by_position_accepts_other_bin_counts_and_rejects_non_positive():
    row = answer(supported=2)
    for claim, position in zip(row["claims"], [0, 9], strict=True):
        claim.update(position=position, answer_length=10)

    assert [b["denominator"] for b in support_by_position([row], bins=2)] == [1, 1]
    with pytest.raises(ClaimsInputError) as refused:
        support_by_position([row], bins=0)
    assert refused.value.field == "bins"


def test_every_result_is_plain_json():
    rows = examples()
    rows[0]["claims"][0].update(position=0, answer_length=55)
    rows[0]["claims"][1].update(position=32, answer_length=55)
    results = [
        evaluate(rows),
        grouped(rows),
        support_precision(rows),
        claim_counts(rows),
        veriscore(rows),
        support_by_position(rows),
    ]

    assert json.loads(json.dumps(results, allow_nan=False)) == results


# --- invalid input --------------------------------------------------------------------------


def _set_claim(key: str, value: Any):
    def change(row: dict[str, Any]) -> None:
        row["claims"][0][key] = value

    return change


def _set(key: str, value: Any):
    def change(row: dict[str, Any]) -> None:
        row[key] = value

    return change


def _delete(key: str):
    def change(row: dict[str, Any]) -> None:
        del row[key]

    return change


@pytest.mark.parametrize(
    ("change", "field", "code"),
    [
        (_set("cited", 1), "cited", "invalid_field"),
        (_set("accurate", "true"), "accurate", "invalid_field"),
        (_set("status", "ok"), "status", "invalid_field"),
        (_delete("status"), "status", "missing_field"),
        (_delete("model"), "model", "missing_field"),
        (_set("model", ""), "model", "invalid_field"),
        (_set("question_version", 2), "question_version", "invalid_field"),
        (_set("service", None), "service", "invalid_field"),
        (_set("question_type", 3), "question_type", "invalid_field"),
        (_set("claims", "none"), "claims", "invalid_field"),
        (_set("reasons", ["why"]), "reasons", "invalid_field"),
        (_set("reasons", {"cited": "why"}), "reasons.supported", "missing_field"),
        (_set("reasons", {**dict.fromkeys(VERDICTS, "r"), "x": "r"}), "reasons.x", "invalid_field"),
        (_set("reasons", dict.fromkeys(VERDICTS, 7)), "reasons.cited", "invalid_field"),
        (_set_claim("supported", 0), "claims[0].supported", "invalid_field"),
        (_set_claim("kind", "opinion"), "claims[0].kind", "invalid_field"),
        (_set_claim("text", ""), "claims[0].text", "invalid_field"),
        (_set_claim("source_url", None), "claims[0].source_url", "span_malformed"),
        (_set_claim("position", -1), "claims[0].position", INVALID_COUNT),
        (_set_claim("position", 3), "claims[0].answer_length", "missing_field"),
        (_set_claim("answer_length", -5), "claims[0].answer_length", INVALID_COUNT),
        (_set_claim("answer_length", 2.0), "claims[0].answer_length", INVALID_COUNT),
    ],
)
def test_invalid_input_is_rejected_naming_the_field(change, field, code):
    rows = examples()
    change(rows[1])

    with pytest.raises(ClaimsInputError) as refused:
        evaluate(rows)
    assert (refused.value.field, refused.value.code) == (f"rows[1].{field}", code)
    assert isinstance(refused.value, ValueError)
    assert f"rows[1].{field}" in str(refused.value)


def test_a_claim_missing_a_key_is_rejected():
    row = examples()[1]
    del row["claims"][0]["kind"]

    with pytest.raises(ClaimsInputError, match=r"claims\[0\]\.kind"):
        assessment_from_dict(row)


def test_a_claim_position_must_lie_inside_the_answer():
    row = examples()[1]
    row["claims"][0].update(position=26, answer_length=26)

    with pytest.raises(ClaimsInputError) as refused:
        assessment_from_dict(row)
    assert refused.value.field == "claims[0].position"


def test_claims_of_one_answer_agree_on_its_length():
    row = examples()[0]
    row["claims"][0].update(position=0, answer_length=55)
    row["claims"][1].update(position=30, answer_length=60)

    with pytest.raises(ClaimsInputError, match="answer_length"):
        assessment_from_dict(row)


def test_a_single_row_instead_of_a_list_is_rejected():
    with pytest.raises(ClaimsInputError) as refused:
        evaluate(examples()[0])
    assert refused.value.field == "rows"


def test_validated_assessments_are_accepted_as_rows():
    assessments = [assessment_from_dict(row) for row in examples()]

    assert isinstance(assessments[0], Assessment)
    assert assessments[0].verdict("supported") is False
    assert evaluate(assessments) == evaluate(examples())


def test_the_module_imports_no_django_rest_framework_or_celery():
    code = (
        "import sys, metrics.claims; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework', "
        "'celery')]; print(bad); sys.exit(1 if bad else 0)"
    )
    root = Path(__file__).resolve().parents[2]

    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)

    assert done.returncode == 0, done.stdout + done.stderr


# --- properties -----------------------------------------------------------------------------

verdict_values = st.sampled_from([True, False, None])


@st.composite
def assessment_rows(draw: st.DrawFn) -> dict[str, Any]:
    identity = {
        "question_id": draw(st.sampled_from(["q1", "q2"])),
        "question_version": draw(st.sampled_from(["1", "2"])),
        "service": draw(st.sampled_from(["s1", "s2"])),
        "mode": "default",
        "model": draw(st.sampled_from([None, "m1"])),
        "raw_path": "raw/x.json",
    }
    if draw(st.booleans()) and draw(st.booleans()):
        identity["question_type"] = draw(st.sampled_from(["natural_discovery", "specific"]))
    if draw(st.integers(0, 4)) == 0:
        return {**identity, "status": "failed", "failure": "HTTP 429"}
    length = draw(st.integers(1, 400))
    claims = []
    for _ in range(draw(st.integers(0, 8))):
        supported = draw(verdict_values)
        quoted = supported is not None or draw(st.booleans())
        claim = {
            "text": "claim",
            "source_url": GUIDE if quoted else None,
            "quote": "passage" if quoted else None,
            "supported": supported,
            "accurate": draw(verdict_values),
            "kind": draw(st.sampled_from(CLAIM_KINDS)),
            "reason": draw(st.sampled_from([None, "why"])),
        }
        if draw(st.booleans()):
            claim.update(position=draw(st.integers(0, length - 1)), answer_length=length)
        claims.append(claim)
    values = [c["supported"] for c in claims if c["kind"] == "verifiable"]
    summary = False if False in values else (True if values and None not in values else None)
    return {
        **identity,
        "status": "complete",
        "failure": None,
        **{name: draw(verdict_values) for name in VERDICTS},
        "supported": summary,
        "reasons": dict.fromkeys(VERDICTS, "why"),
        "claims": claims,
    }


def _valid_count(entry: dict[str, Any]) -> None:
    assert 0 <= entry["numerator"] <= entry["denominator"]
    if entry["denominator"] == 0:
        assert entry["rate"] is None
    else:
        assert 0 <= entry["rate"] <= 1
        assert entry["rate"] == entry["numerator"] / entry["denominator"]


@settings(max_examples=150, deadline=None)
@given(st.lists(assessment_rows(), max_size=12))
def test_answer_level_counts_are_consistent(rows):
    result = evaluate(rows)
    groups = grouped(rows)

    assert result["completed"] + result["failed"] == result["attempts"] == len(rows)
    for name in VERDICTS:
        _valid_count(result[name])
        assert result[name]["denominator"] + result[name]["unknown"] == result["completed"]
        for key in ("numerator", "denominator", "unknown"):
            assert sum(g[name][key] for g in groups) == result[name][key]
    assert sum(g["attempts"] for g in groups) == result["attempts"]
    types = {g["group"].get("question_type") for g in groups}
    assert all(len({r.get("question_type") for r in rows if _in(r, g)}) == 1 for g in groups)
    assert types <= {None, "natural_discovery", "specific"}


def _in(row: dict[str, Any], group: dict[str, Any]) -> bool:
    return all(row.get(key) == value for key, value in group["group"].items())


@settings(max_examples=150, deadline=None)
@given(st.lists(assessment_rows(), max_size=12), st.integers(1, 10))
def test_claim_level_rates_stay_in_range_and_add_up(rows, bins):
    precision = support_precision(rows)
    counts = claim_counts(rows)
    scores = veriscore(rows)
    positions = support_by_position(rows, bins=bins)

    _valid_count(precision["pooled"])
    for entry in precision["per_response"]:
        _valid_count(entry)
        assert entry["empty_answer"] == (entry["denominator"] == 0)
    mean = precision["mean_per_response"]
    assert mean is None or 0 <= mean <= 1
    assert precision["pooled"]["denominator"] == counts["verifiable"]
    assert precision["empty_answers"] == counts["empty_answers"]
    assert counts["total"] == counts["verifiable"] + counts["not_truth_apt"]
    for entry in scores["per_response"]:
        assert entry["score"] is None or 0 <= entry["score"] <= 1
        if entry["score"] is not None:
            assert (entry["score"] == 0) == (entry["s"] == 0)
    assert scores["mean"] is None or 0 <= scores["mean"] <= 1
    assert len(positions) == bins
    for entry in positions:
        _valid_count(entry)
    placed = sum(
        1
        for row in rows
        if row["status"] == "complete"
        for claim in row["claims"]
        if claim["kind"] == "verifiable" and claim.get("position") is not None
    )
    assert sum(entry["denominator"] for entry in positions) == placed


# --- VeriScore's K: per domain, from the whole cohort, never from a report's filter -----------


def _cohort() -> list[dict[str, Any]]:
    # Domain "health": service alpha answers with 14 (11 supported), 13 and 12 claims,
    # service beta with 3, 5, 7 and 7. Median of all seven: 7. Of alpha's alone: 13.
    alpha = [
        answer(supported=11, unsupported=3, service="alpha", domain="health"),
        answer(supported=13, service="alpha", domain="health"),
        answer(supported=12, service="alpha", domain="health"),
    ]
    beta = [answer(supported=n, service="beta", domain="health") for n in (3, 5, 7, 7)]
    other = [answer(supported=2, service="alpha", domain="travel")]
    return alpha + beta + other


def test_veriscore_cohort_k_is_the_median_claim_count_per_domain():
    cohort = veriscore_cohort(_cohort())
    assert cohort == {"health": {"K": 7.0, "answers": 7}, "travel": {"K": 2.0, "answers": 1}}


def test_filtering_a_report_to_one_service_never_moves_k():
    rows = _cohort()
    cohort = veriscore_cohort(rows)
    alpha_only = [row for row in rows if row["service"] == "alpha"]

    moved = veriscore([r for r in alpha_only if r["domain"] == "health"])
    assert moved["K"] == 13.0  # what recomputing K from the filter would do

    tables = claim_tables(alpha_only, cohort=cohort)
    result = tables["veriscore"]
    assert result["K_source"] == "cohort_by_domain"
    assert result["K_by_domain"] == {"health": 7.0, "travel": 2.0}
    first = result["per_response"][0]
    assert (first["K"], first["C"], first["s"]) == (7.0, 14, 11)
    assert first["recall"] == 1.0
    assert first["score"] == pytest.approx(0.88)


def test_a_cohort_with_k_and_a_given_k_are_not_both_allowed():
    with pytest.raises(ClaimsInputError) as refused:
        veriscore([answer(supported=1)], K=3, cohort={"": {"K": 2.0}})
    assert refused.value.field == "K"


def test_an_answer_of_a_domain_without_k_is_counted_not_scored():
    cohort = {"health": {"K": 7.0, "answers": 7}}
    rows = [
        answer(supported=11, unsupported=3, domain="health"),
        answer(supported=2, domain="travel"),
    ]
    result = veriscore(rows, cohort=cohort)
    assert (result["responses"], result["scored"]) == (2, 1)
    assert result["per_response"][1]["score"] is None
    assert result["mean"] == pytest.approx(0.88)


def test_every_claim_position_bin_has_its_interval_over_answers():
    def placed(supported: bool, position: int) -> dict[str, Any]:
        claim = _claim("claim", GUIDE, "passage", supported, supported, "reason")
        return {**claim, "position": position, "answer_length": 100}

    rows = [
        {**answer(), "supported": False, "claims": [placed(True, 5), placed(False, 90)]},
        {**answer(), "supported": True, "claims": [placed(True, 10)]},
    ]
    bins = claim_tables(rows, n_boot=500)["by_position"]
    first, last = bins[0], bins[-1]
    assert (first["numerator"], first["denominator"]) == (2, 2)
    assert (first["low"], first["high"]) == (1.0, 1.0)
    assert (last["numerator"], last["denominator"]) == (0, 1)
    assert (last["low"], last["high"]) == (0.0, 0.0)
    assert (bins[2]["low"], bins[2]["high"]) == (None, None)  # no claim there
