"""Import of answer_pair and query_documents studies: units, refusals, contents, records."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.db import IntegrityError, transaction

from audit.archive.models import ImportStatus, Observation, Study, Tuple, Unit
from audit.archive.records import UNIT_VALUES, record_build, unit_content, unit_contents_of
from audit.archive.selectors import codebook_registry
from audit.archive.services import codebook_install, observations_import
from audit.contract import codes
from audit.contract.record import check_record
from tests.archive.builders import jsonl, observation
from tests.archive.unit_kinds import (
    DOCUMENTS_CODEBOOK,
    PAIR_CODEBOOK,
    annotation,
    documents_digest,
    header_of,
    pair_digest,
    pair_lines,
    ranked,
)
from tests.contract.factories import span_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def pairs_study(db):
    codebook, _ = codebook_install(definition=PAIR_CODEBOOK)
    return Study.objects.create(slug="pairs", title="Pairs", codebook=codebook)


@pytest.fixture
def documents_study(db):
    codebook, _ = codebook_install(definition=DOCUMENTS_CODEBOOK)
    return Study.objects.create(slug="documents", title="Documents", codebook=codebook)


def _pairs_file(*lines):
    return jsonl(*lines, header=header_of(PAIR_CODEBOOK))


def _documents_file(*lines):
    return jsonl(*lines, header=header_of(DOCUMENTS_CODEBOOK))


# --- answer_pair ----------------------------------------------------------------------


def test_each_pair_becomes_one_unit_of_its_evaluated_and_baseline_observations(pairs_study):
    # given two pairs (one listing its baseline first) and a failed attempt on its own
    first, first_base = pair_lines(1, sources=2)
    second, second_base = pair_lines(2)
    data = _pairs_file(first, first_base, second_base, second, observation(3, failed=True))
    # when imported
    batch = observations_import(study=pairs_study, data=data, file_name="pairs.jsonl")
    # then every observation and tuple is stored, and one unit per pair
    assert batch.status == ImportStatus.IMPORTED, batch.errors
    assert (batch.observations_created, batch.tuples_created) == (5, 6)
    units = list(pairs_study.units.select_related("observation", "baseline").order_by("id"))
    assert [u.digest for u in units] == [
        pair_digest(first, first_base),
        pair_digest(second, second_base),
    ]
    assert [(u.observation.position, u.baseline.position) for u in units] == [(2, 3), (5, 4)]


def test_a_pair_file_imported_twice_changes_nothing(pairs_study):
    data = _pairs_file(*pair_lines(1))
    observations_import(study=pairs_study, data=data, file_name="a.jsonl")
    again = observations_import(study=pairs_study, data=data, file_name="a.jsonl")
    assert again.status == ImportStatus.UNCHANGED
    assert pairs_study.units.count() == 1


def test_a_new_pairing_of_observations_already_imported_is_a_new_unit(pairs_study):
    # given a pair already imported
    evaluated, baseline = pair_lines(1)
    observations_import(study=pairs_study, data=_pairs_file(evaluated, baseline), file_name="a")
    # when the same two answers arrive again with the roles swapped
    swapped_eval = {**baseline, "baseline": evaluated["id"]}
    swapped_base = {k: v for k, v in evaluated.items() if k != "baseline"}
    batch = observations_import(
        study=pairs_study, data=_pairs_file(swapped_eval, swapped_base), file_name="b"
    )
    # then no observation is new, but the pair is
    assert batch.status == ImportStatus.IMPORTED
    assert batch.observations_created == 0
    assert pairs_study.units.count() == 2
    assert Observation.objects.filter(study=pairs_study).count() == 2


def test_a_file_with_a_bad_pair_imports_nothing_and_names_each_bad_line(pairs_study):
    # given a good pair and a pair whose baseline was observed from another region
    good, good_base = pair_lines(1)
    bad, bad_base = pair_lines(2)
    bad_base["answer"]["conditions"]["region"] = "FR"
    unknown = pair_lines(3)[0]
    unknown["baseline"] = "missing"
    data = _pairs_file(good, good_base, bad, bad_base, unknown)
    # when imported
    batch = observations_import(study=pairs_study, data=data, file_name="bad.jsonl")
    # then nothing is stored and every bad line is listed
    assert batch.status == ImportStatus.REJECTED
    assert [(e["line"], e["reason"]) for e in batch.errors] == [
        (4, codes.PAIR_SETTING_MISMATCH),
        (5, codes.PAIR_UNPAIRED),
        (6, codes.BASELINE_UNKNOWN),
    ]
    assert batch.error_count == 3
    assert not Observation.objects.filter(study=pairs_study).exists()
    assert not Tuple.objects.filter(study=pairs_study).exists()
    assert not pairs_study.units.exists()


def test_a_pair_units_content_holds_both_answers_in_two_queries(
    pairs_study, django_assert_num_queries
):
    evaluated, baseline = pair_lines(1, sources=2)
    observations_import(study=pairs_study, data=_pairs_file(evaluated, baseline), file_name="a")
    unit = pairs_study.units.get()
    with django_assert_num_queries(2):
        content = unit_content(unit=unit)
    assert content.codebook_unit == "answer_pair"
    assert content.answer["text"] == evaluated["answer"]["text"]
    assert content.baseline["answer"]["text"] == baseline["answer"]["text"]
    assert content.baseline["pipeline"]["version"] == "0.9"
    assert [s["digest"] for s in content.sources] == [s["digest"] for s in evaluated["sources"]]
    assert [s["digest"] for s in content.baseline["sources"]] == [
        s["digest"] for s in baseline["sources"]
    ]
    assert content.texts == {
        "query": evaluated["query"]["text"],
        "answer": evaluated["answer"]["text"],
        "baseline": baseline["answer"]["text"],
    }
    bulk = unit_contents_of(study=pairs_study, units=list(pairs_study.units.values(*UNIT_VALUES)))
    assert bulk[unit.pk] == content


def test_a_pair_units_record_passes_the_contract(pairs_study):
    evaluated, baseline = pair_lines(1)
    observations_import(study=pairs_study, data=_pairs_file(evaluated, baseline), file_name="a")
    content = unit_content(unit=pairs_study.units.get())
    # as stored: "right" showed the evaluated answer (audit.contract.sides)
    note = annotation(
        {"preference": "answer"},
        reasons={"preference": "the baseline is vaguer"},
        spans=[
            {
                "field": "preference",
                **span_of(content.baseline["answer"]["text"], "baseline answer", "baseline"),
            }
        ],
        sides={"left": "baseline", "right": "answer"},
    )
    record = record_build(study=pairs_study, content=content, annotation=note, parents=[])
    assert set(record) >= {"sources", "baseline", "unit_digest"}
    result = check_record(record, codebook_registry())
    assert result.ok, result.message
    assert result.unit_digest == content.digest


def test_the_database_refuses_a_pair_whose_baseline_is_its_own_observation(pairs_study):
    evaluated, baseline = pair_lines(1)
    observations_import(study=pairs_study, data=_pairs_file(evaluated, baseline), file_name="a")
    unit = pairs_study.units.get()
    with pytest.raises(IntegrityError), transaction.atomic():
        Unit.objects.create(
            study=pairs_study,
            observation_id=unit.observation_id,
            baseline_id=unit.observation_id,
            digest="f" * 64,
        )


# --- query_documents ------------------------------------------------------------------


def test_each_answer_with_documents_becomes_one_unit(documents_study):
    # given an answer with two ranked sources, one that retrieved nothing, and a failure
    line = ranked(1, ranks=(2, 1))
    data = _documents_file(line, observation(2, sources=0), observation(3, failed=True))
    # when imported
    batch = observations_import(study=documents_study, data=data, file_name="docs.jsonl")
    # then all three observations are stored, and only the first is a unit to grade
    assert batch.status == ImportStatus.IMPORTED, batch.errors
    assert (batch.observations_created, batch.tuples_created) == (3, 2)
    unit = documents_study.units.get()
    assert unit.digest == documents_digest(line)
    assert unit.baseline_id is None


def test_a_documents_units_content_lists_its_documents_in_rank_order(
    documents_study, django_assert_num_queries
):
    line = ranked(1, ranks=(3, 1, 2))
    observations_import(study=documents_study, data=_documents_file(line), file_name="a")
    unit = documents_study.units.get()
    with django_assert_num_queries(2):
        content = unit_content(unit=unit)
    assert [d["rank"] for d in content.documents] == [1, 2, 3]
    assert list(content.texts) == ["query", "document:0", "document:1", "document:2"]
    assert content.texts["document:0"] == line["sources"][1]["text"]
    bulk = unit_contents_of(
        study=documents_study, units=list(documents_study.units.values(*UNIT_VALUES))
    )
    assert bulk[unit.pk] == content
    note = annotation(
        {},
        documents=[{"values": {"grade": g}} for g in (2, 1, None)],
        spans=[{"field": "grade", **span_of(content.texts["document:2"], "Café", "document:2")}],
    )
    record = record_build(study=documents_study, content=content, annotation=note, parents=[])
    assert [d["rank"] for d in record["documents"]] == [1, 2, 3]
    result = check_record(record, codebook_registry())
    assert result.ok, result.message


def test_an_unranked_document_refuses_the_file(documents_study):
    data = _documents_file(ranked(1, ranks=(1, 2)), ranked(2, ranks=(None, 1)))
    batch = observations_import(study=documents_study, data=data, file_name="a")
    assert batch.status == ImportStatus.REJECTED
    assert [(e["line"], e["reason"]) for e in batch.errors] == [(3, codes.DOCUMENT_UNRANKED)]
    assert not Observation.objects.filter(study=documents_study).exists()


def test_a_records_file_is_refused_whole_in_a_pairs_study(pairs_study):
    from audit.releases.records_import import records_import

    outcome = records_import(study=pairs_study, data=b"{}\n", file_name="records.jsonl")
    assert outcome.batch.status == ImportStatus.REJECTED
    assert [(e["line"], e["reason"]) for e in outcome.batch.errors] == [(0, codes.UNKNOWN_FORMAT)]


def test_the_documented_pair_file_imports_as_one_pair(pairs_study):
    doc = (Path(settings.BASE_DIR) / "docs" / "import-format.md").read_text(encoding="utf-8")
    section = doc.split("## Pairs of answers", 1)[1].split("\n## ", 1)[0]
    data = section.split("```jsonl\n", 1)[1].split("```", 1)[0].encode("utf-8")
    batch = observations_import(study=pairs_study, data=data, file_name="example.jsonl")
    assert batch.status == ImportStatus.IMPORTED, batch.errors
    unit = pairs_study.units.select_related("observation__pipeline", "baseline__pipeline").get()
    assert (unit.observation.pipeline.version, unit.baseline.pipeline.version) == (
        "0.4.0",
        "0.3.1",
    )
