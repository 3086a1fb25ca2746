"""parse_observation_file: every bad line is reported with its line number and reason."""

from __future__ import annotations

import json

from audit.contract import codes, observation_tuples, parse_observation_file
from tests.contract.factories import (
    codebooks,
    header,
    make_observation,
    observation_file,
)

CODEBOOKS = codebooks()


def _reasons(parsed):
    return [(error.line, error.reason) for error in parsed.errors]


def test_good_file_parses_in_order_with_its_tuples():
    # given a header and three observations, one of them failed (no sources)
    observations = [
        make_observation(0),
        make_observation(1, sources=3),
        make_observation(2, failed=True),
    ]
    # when parsed
    parsed = parse_observation_file(observation_file(observations), CODEBOOKS)
    # then
    assert parsed.ok
    assert parsed.errors == []
    assert parsed.header.codebook_key == ("source-risk", "test-1")
    assert parsed.observations == observations
    assert parsed.lines == [2, 3, 4]
    assert parsed.tuple_count == 5
    tuples = list(observation_tuples(parsed.observations[1]))
    assert [t["tuple_digest"] for t in tuples] == [
        s["tuple_digest"] for s in observations[1]["sources"]
    ]
    assert "tuple_digest" not in tuples[0]["source"]


def test_failed_answer_may_omit_its_empty_sources():
    observation = make_observation(0, failed=True)
    del observation["sources"]
    assert parse_observation_file(observation_file([observation]), CODEBOOKS).ok


def test_every_bad_line_is_listed_not_just_the_first():
    # given a file with a malformed line, a wrong digest and a non-object between good lines
    wrong_digest = make_observation(2)
    wrong_digest["answer"]["digest"] = "0" * 64
    data = observation_file(
        [
            make_observation(0),
            b"{not json",
            wrong_digest,
            b"[1, 2]",
            make_observation(4),
        ]
    )
    # when parsed
    parsed = parse_observation_file(data, CODEBOOKS)
    # then each bad line is named
    assert _reasons(parsed) == [
        (3, codes.MALFORMED_JSON),
        (4, codes.ANSWER_DIGEST_MISMATCH),
        (5, codes.NOT_AN_OBJECT),
    ]
    assert parsed.lines == [2, 6]


def test_digest_mismatches_name_the_field():
    source_digest = make_observation(0)
    source_digest["sources"][1]["digest"] = "0" * 64
    tuple_digest = make_observation(1)
    tuple_digest["sources"][0]["tuple_digest"] = "0" * 64
    missing = make_observation(2)
    del missing["sources"][0]["digest"]
    parsed = parse_observation_file(
        observation_file([source_digest, tuple_digest, missing]), CODEBOOKS
    )
    assert _reasons(parsed) == [
        (2, codes.SOURCE_DIGEST_MISMATCH),
        (3, codes.TUPLE_DIGEST_MISMATCH),
        (4, codes.MISSING_FIELD),
    ]
    assert "sources[1].digest" in parsed.errors[0].message
    assert "sources[0].tuple_digest" in parsed.errors[1].message
    assert "sources[0].digest" in parsed.errors[2].message


def test_structural_errors_use_the_shared_validators():
    unknown = make_observation(0)
    unknown["answer"]["modle"] = "x"
    failed_with_text = make_observation(1, failed=True)
    failed_with_text["answer"]["failure"] = ""
    parsed = parse_observation_file(observation_file([unknown, failed_with_text]), CODEBOOKS)
    assert _reasons(parsed) == [(2, codes.UNKNOWN_FIELD), (3, codes.INVALID_FIELD)]
    assert "answer.modle" in parsed.errors[0].message
    assert "answer.failure" in parsed.errors[1].message


def test_line_over_the_size_limit_states_limit_and_size():
    big = make_observation(0)
    big["answer"]["text"] = "x" * 5000
    line = json.dumps(big).encode()
    parsed = parse_observation_file(
        observation_file([make_observation(1), line]), CODEBOOKS, max_line_bytes=4000
    )
    assert _reasons(parsed) == [(3, codes.LINE_TOO_LONG)]
    assert f"{len(line):,}" in parsed.errors[0].message
    assert "4,000" in parsed.errors[0].message


def test_invalid_utf8_is_reported_on_its_own_line():
    good = json.dumps(make_observation(0)).encode()
    broken = good.replace(b"Acme", b"Ac\xffme", 1)
    parsed = parse_observation_file(observation_file([good, broken, b"\xc3"]), CODEBOOKS)
    assert _reasons(parsed) == [(3, codes.INVALID_UTF8), (4, codes.INVALID_UTF8)]


def test_header_problems():
    observation = make_observation(0)
    unknown = parse_observation_file(
        observation_file([observation], head=header(("source-risk", "9.9"))), CODEBOOKS
    )
    assert _reasons(unknown) == [(1, codes.UNKNOWN_CODEBOOK)]
    assert "source-risk 9.9" in unknown.errors[0].message
    wrong = parse_observation_file(
        observation_file([observation], head={"claimgate": "record", "format_version": 1}),
        CODEBOOKS,
    )
    assert _reasons(wrong) == [(1, codes.UNKNOWN_FORMAT)]
    # a file that starts straight with observations: the header is missing, and line 1 is
    # not read as an observation
    missing = parse_observation_file(
        b"\n".join(json.dumps(make_observation(i)).encode() for i in range(2)), CODEBOOKS
    )
    assert _reasons(missing) == [(1, codes.MISSING_HEADER)]


def test_duplicate_tuple_names_both_lines():
    first = make_observation(0)
    parsed = parse_observation_file(
        observation_file([first, make_observation(1), first]), CODEBOOKS
    )
    assert _reasons(parsed) == [(4, codes.DUPLICATE_TUPLE)]
    assert "line 2" in parsed.errors[0].message


def test_duplicate_tuple_inside_one_line():
    observation = make_observation(0)
    observation["sources"].append(dict(observation["sources"][0]))
    parsed = parse_observation_file(observation_file([observation]), CODEBOOKS)
    assert _reasons(parsed) == [(2, codes.DUPLICATE_TUPLE)]
    assert "this line" in parsed.errors[0].message


def test_empty_files():
    assert _reasons(parse_observation_file(b"", CODEBOOKS)) == [(1, codes.EMPTY_FILE)]
    assert _reasons(parse_observation_file(b"\n\n  \n", CODEBOOKS)) == [(1, codes.EMPTY_FILE)]
    only_header = observation_file([])
    assert _reasons(parse_observation_file(only_header, CODEBOOKS)) == [(2, codes.EMPTY_FILE)]
    assert _reasons(parse_observation_file(only_header + b"\n", CODEBOOKS)) == [
        (2, codes.EMPTY_FILE)
    ]


def test_blank_lines_are_errors_except_the_final_newline():
    data = observation_file([make_observation(0), make_observation(1)])
    assert parse_observation_file(data, CODEBOOKS).ok
    assert parse_observation_file(data.rstrip(b"\n"), CODEBOOKS).ok
    lines = data.split(b"\n")
    with_gap = b"\n".join([lines[0], lines[1], b"", lines[2]]) + b"\n\n"
    assert _reasons(parse_observation_file(with_gap, CODEBOOKS)) == [
        (3, codes.MALFORMED_JSON),
        (5, codes.MALFORMED_JSON),
    ]


def test_nan_is_not_json():
    line = json.dumps(make_observation(0)).replace('"temperature": 0', '"temperature": NaN')
    parsed = parse_observation_file(observation_file([line.encode()]), CODEBOOKS)
    assert _reasons(parsed) == [(2, codes.MALFORMED_JSON)]


def test_too_many_lines_stops_reading():
    data = observation_file([make_observation(i) for i in range(4)])
    parsed = parse_observation_file(data, CODEBOOKS, max_lines=2)
    assert _reasons(parsed) == [(4, codes.TOO_MANY_LINES)]
    assert "2" in parsed.errors[0].message
