"""Unit kinds answer_pair and query_documents in the contract: observation files that pair
answers or rank documents, their reason codes and line numbers, unit digests, and the
top-level shape of their records. Pure: no database."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from audit.contract import codebook_from_dict, codes, parse_observation_file
from audit.contract.digests import answer_pair_digest, document_order, seal_record
from audit.contract.record import check_record
from audit.contract.structure import snapshot_texts
from tests.archive.builders import jsonl, observation, reseal
from tests.archive.unit_kinds import (
    DOCUMENTS_CODEBOOK,
    PAIR_CODEBOOK,
    annotation,
    baseline_of,
    documents_digest,
    documents_record,
    header_of,
    pair_digest,
    pair_lines,
    pair_record,
    ranked,
)
from tests.contract.factories import codebooks, header, span_of

PAIRS = codebook_from_dict(PAIR_CODEBOOK)
DOCUMENTS = codebook_from_dict(DOCUMENTS_CODEBOOK)
REGISTRY = {PAIRS.key: PAIRS, DOCUMENTS.key: DOCUMENTS}


def _pairs_file(*lines: Any) -> Any:
    return parse_observation_file(jsonl(*lines, header=header_of(PAIR_CODEBOOK)), REGISTRY)


def _documents_file(*lines: Any) -> Any:
    return parse_observation_file(jsonl(*lines, header=header_of(DOCUMENTS_CODEBOOK)), REGISTRY)


def _reasons(parsed: Any) -> list[tuple[int, str]]:
    return [(error.line, error.reason) for error in parsed.errors]


# --- answer_pair files ----------------------------------------------------------------


def test_an_evaluated_line_names_its_baseline_by_the_baseline_lines_id():
    # given two pairs; the second lists its baseline first
    evaluated, baseline = pair_lines(1)
    second, second_base = pair_lines(2)
    # when parsed
    parsed = _pairs_file(evaluated, baseline, second_base, second)
    # then each pair is (evaluated, baseline) by position among the observations
    assert parsed.ok, parsed.errors
    assert parsed.pairs == [(0, 1), (3, 2)]


def test_one_baseline_may_serve_two_evaluated_answers():
    evaluated, baseline = pair_lines(1)
    other = baseline_of(evaluated, name="other")
    other["answer"]["service"] = "third-search"
    other["answer"]["text"] = "A third system's answer."
    other["baseline"] = "base-1"
    other = reseal(other)
    parsed = _pairs_file(evaluated, baseline, other)
    assert parsed.ok, parsed.errors
    assert parsed.pairs == [(0, 1), (2, 1)]


def test_every_line_that_cannot_be_paired_is_refused_with_its_reason_and_line():
    # given one good pair (lines 2, 3) and one defect per later line
    evaluated, baseline = pair_lines(1)
    unknown = pair_lines(2)[0]
    unknown["baseline"] = "nobody"
    itself = pair_lines(3)[0]
    itself["baseline"] = itself["id"]
    other_query, other_query_base = pair_lines(4)
    other_query_base["query"]["text"] += " (reworded)"
    other_query_base = reseal(other_query_base)
    other_setting, other_setting_base = pair_lines(5)
    other_setting_base["answer"]["conditions"]["region"] = "FR"
    failed_base = observation(6, failed=True)
    failed_base["id"] = "failed-6"
    failed_eval = pair_lines(6)[0]
    failed_eval["baseline"] = "failed-6"
    lonely = observation(7)
    same, same_base = pair_lines(8)
    twin = copy.deepcopy(same)  # the evaluated answer snapshot again, by another pipeline
    twin["id"] = "twin-8"
    del twin["baseline"]
    twin["pipeline"] = {**twin["pipeline"], "version": "0.8"}
    twin = reseal(twin)
    same["baseline"] = "twin-8"
    repeated = pair_lines(9)[1]
    repeated["id"] = "base-1"
    # when parsed
    parsed = _pairs_file(
        evaluated,  # 2
        baseline,  # 3
        unknown,  # 4
        itself,  # 5
        other_query,  # 6
        other_query_base,  # 7
        other_setting,  # 8
        other_setting_base,  # 9
        failed_base,  # 10: a failed attempt alone is fine
        failed_eval,  # 11
        lonely,  # 12
        same,  # 13
        same_base,  # 14: named by no line
        twin,  # 15
        repeated,  # 16
    )
    # then every bad line is reported, in line order, and no pair is kept
    assert _reasons(parsed) == [
        (4, codes.BASELINE_UNKNOWN),
        (5, codes.PAIR_SAME_ANSWER),
        (6, codes.PAIR_QUERY_MISMATCH),
        (7, codes.PAIR_UNPAIRED),
        (8, codes.PAIR_SETTING_MISMATCH),
        (9, codes.PAIR_UNPAIRED),
        (11, codes.PAIR_ANSWER_FAILED),
        (12, codes.PAIR_UNPAIRED),
        (13, codes.PAIR_SAME_ANSWER),
        (14, codes.PAIR_UNPAIRED),
        (15, codes.PAIR_UNPAIRED),
        (16, codes.DUPLICATE_OBSERVATION_ID),
    ]
    assert parsed.pairs == []
    messages = {error.line: error.message for error in parsed.errors}
    assert "'nobody'" in messages[4]
    assert "query.text" in messages[6]
    assert "line 7" in messages[6]
    assert "answer.conditions.region is 'DE' here, 'FR' there" in messages[8]
    assert "HTTP 429" in messages[11]
    assert "line 3" in messages[16]


def test_a_baseline_on_a_bad_line_is_reported_once_on_that_line():
    evaluated, baseline = pair_lines(1)
    baseline["answer"]["digest"] = "0" * 64
    parsed = _pairs_file(evaluated, baseline)
    assert _reasons(parsed) == [(3, codes.ANSWER_DIGEST_MISMATCH)]


def test_baseline_belongs_to_answer_pair_files_only():
    line = observation(1)
    line["baseline"] = "b"
    data = jsonl(line, header=header_of(DOCUMENTS_CODEBOOK))
    parsed = parse_observation_file(data, REGISTRY)
    assert _reasons(parsed) == [(2, codes.INVALID_FIELD)]
    assert "answer_pair" in parsed.errors[0].message


def test_a_line_id_must_be_a_non_empty_string():
    evaluated, baseline = pair_lines(1)
    baseline["id"] = 7
    parsed = _pairs_file(evaluated, baseline)
    # the evaluated line's baseline is on no good line with that name
    assert _reasons(parsed) == [(2, codes.BASELINE_UNKNOWN), (3, codes.INVALID_FIELD)]
    assert parsed.errors[1].message.startswith("id must be a non-empty string")


# --- query_documents files ------------------------------------------------------------


def test_documents_are_the_sources_in_rank_order():
    line = ranked(1, ranks=(3, 1, 2))
    parsed = _documents_file(line, observation(2, sources=0))
    assert parsed.ok, parsed.errors
    assert document_order(line["sources"]) == [1, 2, 0]


def test_a_document_needs_a_rank_of_its_own():
    parsed = _documents_file(ranked(1, ranks=(1, None)), ranked(2, ranks=(2, 2)))
    assert _reasons(parsed) == [(2, codes.DOCUMENT_UNRANKED), (3, codes.DOCUMENT_RANK_REPEATED)]
    assert "sources[1].rank is null" in parsed.errors[0].message
    assert "sources[0].rank" in parsed.errors[1].message


def test_other_unit_kinds_keep_unranked_sources():
    line = ranked(1, ranks=(None, None))
    parsed = parse_observation_file(jsonl(line, header=header()), codebooks())
    assert parsed.ok, parsed.errors


# --- unit digests ---------------------------------------------------------------------


def test_a_pairs_digest_depends_on_which_answer_is_the_baseline():
    evaluated, baseline = pair_lines(1)
    assert pair_digest(evaluated, baseline) != pair_digest(baseline, evaluated)
    assert answer_pair_digest(evaluated="a" * 64, baseline="b" * 64) != answer_pair_digest(
        evaluated="b" * 64, baseline="a" * 64
    )


def test_a_documents_digest_follows_rank_not_answer_order():
    first = ranked(1, ranks=(2, 1))
    swapped = copy.deepcopy(first)
    swapped["sources"].reverse()
    assert documents_digest(first) == documents_digest(reseal(swapped))
    reranked = ranked(1, ranks=(1, 2))
    assert documents_digest(first) != documents_digest(reranked)


# --- records --------------------------------------------------------------------------


def _pair_annotation(evaluated: dict[str, Any], baseline: dict[str, Any]) -> dict[str, Any]:
    text = baseline["answer"]["text"]
    return annotation(
        {"preference": "baseline"},
        reasons={"preference": "the left answer names the router"},
        spans=[{"field": "preference", **span_of(text, "The baseline answer", "baseline")}],
        sides={"left": "baseline", "right": "answer"},
    )


def test_a_pair_record_is_accepted_and_its_spans_may_cite_the_baseline():
    evaluated, baseline = pair_lines(1)
    record = pair_record(evaluated, baseline, _pair_annotation(evaluated, baseline))
    result = check_record(record, REGISTRY)
    assert result.ok, result.message
    assert (result.unit, result.unit_digest) == ("answer_pair", record["unit_digest"])


def test_a_pair_record_with_swapped_roles_has_the_wrong_unit_digest():
    evaluated, baseline = pair_lines(1)
    record = pair_record(evaluated, baseline, _pair_annotation(evaluated, baseline))
    record["unit_digest"] = pair_digest(baseline, evaluated)
    result = check_record(seal_record(record), REGISTRY)
    assert result.reason == codes.UNIT_DIGEST_MISMATCH
    assert "baseline answer" in result.message


def test_a_pair_records_baseline_is_checked_like_any_answer():
    evaluated, baseline = pair_lines(1)
    record = pair_record(evaluated, baseline, _pair_annotation(evaluated, baseline))
    record["baseline"]["answer"]["text"] += " edited"
    assert check_record(seal_record(record), REGISTRY).reason == codes.ANSWER_DIGEST_MISMATCH
    record = pair_record(evaluated, baseline, _pair_annotation(evaluated, baseline))
    del record["baseline"]["sources"]
    result = check_record(seal_record(record), REGISTRY)
    assert (result.reason, result.message) == (codes.MISSING_FIELD, "baseline.sources is missing")
    record = pair_record(evaluated, baseline, _pair_annotation(evaluated, baseline))
    record["tuple_digest"] = record.pop("unit_digest")
    assert check_record(seal_record(record), REGISTRY).reason == codes.MISSING_FIELD


def test_a_pair_records_annotation_is_checked_against_the_codebook():
    evaluated, baseline = pair_lines(1)
    note = _pair_annotation(evaluated, baseline)
    note["values"]["preference"] = None  # U is not allowed here
    result = check_record(pair_record(evaluated, baseline, note), REGISTRY)
    assert not result.ok
    assert "preference" in result.message
    note = _pair_annotation(evaluated, baseline)
    note["spans"][0]["snapshot"] = "source:0"  # a pair's spans cite query, answer, baseline
    result = check_record(pair_record(evaluated, baseline, note), REGISTRY)
    assert result.reason == codes.SPAN_MALFORMED


def _documents_annotation(line: dict[str, Any]) -> dict[str, Any]:
    first = line["sources"][document_order(line["sources"])[0]]
    return annotation(
        {"note": "both documents name the router"},
        documents=[{"values": {"grade": 2}}, {"values": {"grade": None}}],
        spans=[{"field": "grade", **span_of(first["text"], "Café", "document:0")}],
    )


def test_a_documents_record_is_accepted_with_one_entry_per_document_in_rank_order():
    line = ranked(1, ranks=(2, 1))
    record = documents_record(line, _documents_annotation(line))
    assert [d["rank"] for d in record["documents"]] == [1, 2]
    result = check_record(record, REGISTRY)
    assert result.ok, result.message
    assert (result.unit, result.unit_digest) == ("query_documents", record["unit_digest"])


def test_a_documents_record_is_refused_when_its_documents_are_not_in_rank_order():
    line = ranked(1, ranks=(2, 1))
    record = documents_record(line, _documents_annotation(line))
    record["documents"].reverse()
    result = check_record(seal_record(record), REGISTRY)
    assert result.reason == codes.INVALID_FIELD
    assert result.message.startswith("documents[1].rank must be greater than the rank before it")
    record = documents_record(line, _documents_annotation(line))
    record["documents"][0]["rank"] = None
    assert check_record(seal_record(record), REGISTRY).reason == codes.DOCUMENT_UNRANKED


def test_a_documents_record_needs_one_annotation_entry_per_document():
    line = ranked(1, ranks=(2, 1))
    note = _documents_annotation(line)
    note["documents"].pop()
    result = check_record(documents_record(line, note), REGISTRY)
    assert not result.ok
    assert "annotation.documents" in result.message


def test_a_documents_record_without_documents_is_refused():
    line = ranked(1, ranks=(2, 1))
    record = documents_record(line, annotation({}, documents=[]))
    record["documents"] = []
    result = check_record(seal_record(record), REGISTRY)
    assert result.reason == codes.INVALID_FIELD
    assert "documents is empty" in result.message


def test_snapshot_names_by_unit_kind():
    query = {"text": "q"}
    answer = {"text": "a"}
    sources = [{"text": "s0"}, {"text": "s1"}]
    baseline = {"answer": {"text": "b"}}
    assert snapshot_texts("tuple", query=query, answer=answer, sources=sources[:1]) == {
        "query": "q",
        "answer": "a",
        "source": "s0",
    }
    assert list(snapshot_texts("answer", query=query, answer=answer, sources=sources)) == [
        "query",
        "answer",
        "source:0",
        "source:1",
    ]
    assert snapshot_texts(
        "answer_pair", query=query, answer=answer, sources=sources, baseline=baseline
    ) == {"query": "q", "answer": "a", "baseline": "b"}
    assert snapshot_texts("query_documents", query=query, answer=answer, sources=sources) == {
        "query": "q",
        "document:0": "s0",
        "document:1": "s1",
    }


# --- JSON Schemas ---------------------------------------------------------------------

SCHEMAS = Path(__file__).resolve().parents[2] / "audit" / "schemas"


def _schema_errors(name: str, instance: Any) -> list[str]:
    schema = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return [error.message for error in Draft202012Validator(schema).iter_errors(instance)]


def test_the_observation_schema_takes_a_lines_id_and_baseline():
    evaluated, baseline = pair_lines(1)
    assert _schema_errors("observations-1.schema.json", evaluated) == []
    assert _schema_errors("observations-1.schema.json", baseline) == []
    evaluated["baseline"] = ""
    assert _schema_errors("observations-1.schema.json", evaluated)


def test_the_record_schema_takes_pair_and_documents_records_as_the_checker_does():
    evaluated, baseline = pair_lines(1)
    pair = pair_record(evaluated, baseline, _pair_annotation(evaluated, baseline))
    line = ranked(1, ranks=(2, 1))
    documents = documents_record(line, _documents_annotation(line))
    for record in (pair, documents):
        assert check_record(record, REGISTRY).ok
        assert _schema_errors("record-1.schema.json", record) == []
    broken = copy.deepcopy(pair)
    del broken["baseline"]
    assert _schema_errors("record-1.schema.json", broken)
    broken = copy.deepcopy(documents)
    broken["documents"][0]["rank"] = None
    assert _schema_errors("record-1.schema.json", broken)
    broken = copy.deepcopy(documents)
    broken["annotation"]["spans"][0]["snapshot"] = "document"
    assert _schema_errors("record-1.schema.json", broken)


def test_a_repeated_id_is_reported_on_its_later_line_only():
    evaluated, baseline = pair_lines(1)
    broken = pair_lines(2)[1]
    broken["id"] = "base-1"
    broken["answer"]["digest"] = "0" * 64  # bad on its own: reported for that
    before = _pairs_file(broken, evaluated, baseline)
    assert _reasons(before) == [
        (2, codes.ANSWER_DIGEST_MISMATCH),
        (4, codes.DUPLICATE_OBSERVATION_ID),
    ]
    after = _pairs_file(evaluated, baseline, broken)
    assert _reasons(after) == [(4, codes.ANSWER_DIGEST_MISMATCH)]
