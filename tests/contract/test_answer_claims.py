"""check_record on answer-claims units: claims, quote spans, verdicts and the summary."""

from __future__ import annotations

import pytest

from audit.contract import check_record, codes, summarize_supported
from tests.contract.factories import codebooks, make_answer_record, reseal

CODEBOOKS = codebooks()


def test_good_answer_unit_is_accepted_with_its_summary():
    record = make_answer_record()
    result = check_record(record, CODEBOOKS)
    assert result.ok
    assert result.unit == "answer"
    assert result.supported is True
    assert result.unit_digest == record["unit_digest"]
    assert result.endpoint is None
    assert result.action is None
    assert result.priority is None


def test_failed_answer_carries_no_verdicts_and_no_claims():
    assert check_record(make_answer_record(failed=True), CODEBOOKS).ok
    record = make_answer_record(failed=True)
    record["annotation"]["verdicts"] = {}
    result = check_record(reseal(record), CODEBOOKS)
    assert result.reason == codes.INVALID_FIELD
    assert "annotation.verdicts" in result.message


def test_summary_mismatch_when_answer_level_supported_disagrees_with_claims():
    # given a claim that is not supported but an answer-level supported = true
    record = make_answer_record()
    record["annotation"]["claims"][0]["supported"] = False
    reseal(record)
    # when checked
    result = check_record(record, CODEBOOKS)
    # then the disagreement is refused
    assert result.reason == codes.SUMMARY_MISMATCH
    assert "false" in result.message


def test_unresolved_claim_makes_supported_null():
    record = make_answer_record()
    record["annotation"]["claims"][0]["supported"] = None
    record["annotation"]["verdicts"]["supported"]["value"] = None
    assert check_record(reseal(record), CODEBOOKS).supported is None


@pytest.mark.parametrize(
    ("mutate", "code", "words"),
    [
        (
            lambda c: c.update(span={"snapshot": "source", "start": 0, "end": 3, "quote": "Ope"}),
            codes.SPAN_MALFORMED,
            "claims[0].span.snapshot",
        ),
        (lambda c: c["span"].update(end=999), codes.SPAN_OUT_OF_RANGE, "claims[0].span"),
        (
            lambda c: c["quote_span"].update(quote="nope"),
            codes.SPAN_QUOTE_MISMATCH,
            "claims[0].quote_span.quote",
        ),
        (lambda c: c.update(quote_span=None), codes.SPAN_MISSING, "claims[0].quote_span"),
        (
            lambda c: c.update(source_digest="f" * 64),
            codes.INVALID_FIELD,
            "claims[0].source_digest",
        ),
        (lambda c: c.update(supported=1), codes.INVALID_FIELD, "claims[0].supported"),
        (lambda c: c.update(accurate="true"), codes.INVALID_FIELD, "claims[0].accurate"),
        (lambda c: c.update(kind="fact"), codes.INVALID_FIELD, "claims[0].kind"),
        (lambda c: c.pop("reason"), codes.MISSING_FIELD, "claims[0].reason"),
    ],
)
def test_bad_claim_is_refused(mutate, code, words):
    record = make_answer_record()
    mutate(record["annotation"]["claims"][0])
    result = check_record(reseal(record), CODEBOOKS)
    assert result.reason == code, result.message
    assert words in result.message


def test_quote_span_is_checked_against_the_source_it_names():
    # given a quote that is right for source 0 but the claim names source 1
    record = make_answer_record()
    claim = record["annotation"]["claims"][0]
    claim["source_digest"] = record["sources"][1]["digest"]
    result = check_record(reseal(record), CODEBOOKS)
    assert result.reason in (codes.SPAN_OUT_OF_RANGE, codes.SPAN_QUOTE_MISMATCH)


def test_verdict_types_and_keys():
    record = make_answer_record()
    record["annotation"]["verdicts"]["timely"]["value"] = 0
    result = check_record(reseal(record), CODEBOOKS)
    assert result.reason == codes.INVALID_FIELD
    assert "verdicts.timely.value" in result.message
    record = make_answer_record()
    del record["annotation"]["verdicts"]["complete"]
    result = check_record(reseal(record), CODEBOOKS)
    assert result.reason == codes.MISSING_FIELD
    assert "verdicts.complete" in result.message


def test_unit_digest_binds_the_source_order():
    record = make_answer_record()
    record["sources"].reverse()
    result = check_record(reseal(record), CODEBOOKS)
    assert result.reason == codes.UNIT_DIGEST_MISMATCH


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], None),
        ([True], True),
        ([True, True], True),
        ([True, None], None),
        ([True, False, None], False),
        ([None, None], None),
    ],
)
def test_summarize_supported(values, expected):
    claims = [{"kind": "verifiable", "supported": value} for value in values]
    claims.append({"kind": "not_truth_apt", "supported": False})  # never counted
    assert summarize_supported(claims) is expected
