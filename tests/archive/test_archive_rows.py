"""The bulk import's row tuples hold exactly the values of ``*_columns``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.archive import mapping as archive
from audit.contract.digests import (
    answer_identity_text,
    pipeline_identity_text,
    text_digest,
)
from tests.archive.builders import observation

INSTANTS = [
    "2026-05-02T10:00:00Z",
    "2026-05-02T10:00:00+00:00",
    "2026-05-02T12:00:00+02:00",
    "2026-05-02 10:00:00Z",
    "2026-05-02T10:00:00.000Z",
    "2026-05-02T10:00:00.250000-03:30",
    "0001-01-01T00:00:00Z",
]


def _same(row, columns, names):
    assert tuple(columns) == names
    for name, value in zip(names, row, strict=True):
        expected = columns[name]
        if name == "collected_at":
            assert archive.parse_instant(value) == expected
            assert value == archive.format_instant(expected)
        else:
            assert value == expected, name


@pytest.mark.parametrize("instant", INSTANTS)
def test_every_kind_gives_the_values_of_its_columns(instant):
    data = observation(3, sources=2)
    data["answer"]["collected_at"] = instant
    data["sources"][1]["collected_at"] = instant
    data["sources"][1]["rank"] = None
    query = archive.query_normal(data["query"])
    _same(archive.query_row(query), archive.query_columns(query), archive.QUERY_COLUMNS)
    pipeline = archive.pipeline_normal(data["pipeline"])
    for key in (None, text_digest(pipeline_identity_text(data["pipeline"]))):
        _same(
            archive.pipeline_row(pipeline, key=key),
            archive.pipeline_columns(pipeline),
            archive.PIPELINE_COLUMNS,
        )
    answer = archive.answer_normal(data["answer"])
    for key in (None, text_digest(answer_identity_text(answer))):
        _same(
            archive.answer_row(answer, key=key),
            archive.answer_columns(answer),
            archive.ANSWER_COLUMNS,
        )
    for source in data["sources"]:
        normal = archive.source_normal(source)
        _same(archive.source_row(normal), archive.source_columns(normal), archive.SOURCE_COLUMNS)


@given(
    st.datetimes(timezones=st.timezones()),
    st.sampled_from(["seconds", "milliseconds", "microseconds", "auto"]),
)
def test_a_normal_instant_is_the_formatted_parse(moment, spec):
    text = moment.isoformat(timespec=spec)
    assert archive.normal_instant(text) == archive.format_instant(archive.parse_instant(text))


def test_an_impossible_date_in_normal_shape_is_still_refused():
    with pytest.raises(ValueError, match="day is out of range"):
        archive.normal_instant("2026-02-30T10:00:00Z")


texts = st.text(max_size=10)


@given(texts, texts, st.none() | st.integers(min_value=1), st.text(max_size=3))
def test_a_source_key_is_the_archive_key(url, canonical, rank, body):
    normal = {
        "original_url": url,
        "canonical_url": canonical,
        "rank": rank,
        "collected_at": "2026-05-02T10:00:00Z",
        "text": body,
        "digest": body * 2,
    }
    assert archive.source_key(normal) == archive.archive_key(normal)
