"""A row rebuilt from the archive is the object that went in (normal form)."""

from __future__ import annotations

from audit.archive import mapping as archive
from audit.archive.models import AnswerSnapshot, Pipeline, Query, SourceSnapshot
from tests.archive.builders import observation


def test_every_kind_round_trips_through_its_columns():
    data = observation(1)
    data["answer"]["collected_at"] = "2026-05-02T12:00:00+02:00"
    cases = [
        (archive.query_normal, archive.query_columns, archive.query_as_dict, Query, data["query"]),
        (
            archive.pipeline_normal,
            archive.pipeline_columns,
            archive.pipeline_as_dict,
            Pipeline,
            data["pipeline"],
        ),
        (
            archive.answer_normal,
            archive.answer_columns,
            archive.answer_as_dict,
            AnswerSnapshot,
            data["answer"],
        ),
        (
            archive.source_normal,
            archive.source_columns,
            archive.source_as_dict,
            SourceSnapshot,
            data["sources"][0],
        ),
    ]
    for normal_of, columns_of, as_dict, model, value in cases:
        normal = normal_of(value)
        assert as_dict(model(**columns_of(normal))) == normal


def test_instants_are_kept_in_utc_with_a_z():
    data = observation(1)["answer"]
    data["collected_at"] = "2026-05-02T12:00:00.250+02:00"
    assert archive.answer_normal(data)["collected_at"] == "2026-05-02T10:00:00.250000Z"


def test_the_key_ignores_nothing_but_the_text_its_digest_stands_for():
    source = archive.source_normal(observation(1)["sources"][0])
    moved = dict(source, rank=9)
    assert archive.archive_key(moved) != archive.archive_key(source)
    assert archive.archive_key(source) == archive.archive_key(dict(source, text="other"))


class _Row:
    """A row that has only the given fields and remembers which ones were read."""

    def __init__(self, values: dict) -> None:
        self._values = values
        self.read: set[str] = set()

    def __getattr__(self, name: str):
        if name not in self._values:
            raise AttributeError(name)
        self.read.add(name)
        return self._values[name]


def test_each_as_dict_reads_exactly_its_fields():
    """Readers that fetch plain values (a release) ask for *_FIELDS: nothing more is read,
    nothing less is needed."""
    data = observation(1)
    cases = [
        (archive.query_normal, archive.query_columns, archive.query_as_dict, data["query"]),
        (
            archive.pipeline_normal,
            archive.pipeline_columns,
            archive.pipeline_as_dict,
            data["pipeline"],
        ),
        (archive.answer_normal, archive.answer_columns, archive.answer_as_dict, data["answer"]),
        (
            archive.source_normal,
            archive.source_columns,
            archive.source_as_dict,
            data["sources"][0],
        ),
    ]
    fields = [
        archive.QUERY_FIELDS,
        archive.PIPELINE_FIELDS,
        archive.ANSWER_FIELDS,
        archive.SOURCE_FIELDS,
    ]
    for (normal_of, columns_of, as_dict, value), names in zip(cases, fields, strict=True):
        columns = columns_of(normal_of(value))
        row = _Row({name: columns[name] for name in names})
        assert as_dict(row) == normal_of(value)
        assert row.read == set(names)
