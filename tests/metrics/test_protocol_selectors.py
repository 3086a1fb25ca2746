"""Seed 002's protocol metrics from stored final labels: the selectors (streamed, a fixed
number of queries per chunk), the setting, the Table II page and CSV, and the release file.

Labels are written directly in the stored format (docs/formats.md), as consensus or
adjudicated records, without the labelling pages."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.labelling.models import Label, LabelKind
from annotator.labelling.selectors import unit_content
from audit.archive.models import Pipeline, Study, Unit, UnitState
from audit.archive.records import record_build
from audit.archive.services import observations_import
from audit.releases import formats as rf
from audit.releases.services import release_build
from fixtures.demo import protocol
from metrics import protocol_selectors as ps
from metrics.protocol import net_gain
from tests.annotation.conftest import add_people, make_study

pytestmark = pytest.mark.django_db


def write_final(unit: Unit, annotation: dict[str, Any], kind: str = LabelKind.ADJUDICATED):
    """A final record in the stored form: adjudicated (the unit adjudicated) or consensus
    (the unit agreed)."""
    annotation = {
        "kind": str(kind),
        "annotator": "consensus" if kind == LabelKind.CONSENSUS else "adjudicator",
        "reasons": {},
        "spans": [],
        "rationale": None if kind == LabelKind.CONSENSUS else "Decided on the evidence.",
        "assisted": None,
        **annotation,
    }
    record = record_build(
        study=unit.study, content=unit_content(unit=unit), annotation=annotation, parents=[]
    )
    Label.objects.create(
        study=unit.study,
        unit=unit,
        kind=kind,
        revision=Label.objects.filter(unit=unit, kind=kind).count() + 1,
        annotation=record["annotation"],
        record_digest=record["record_digest"],
        codebook_digest=unit.study.codebook.digest,
    )
    state = UnitState.ADJUDICATED if kind == LabelKind.ADJUDICATED else UnitState.AGREED
    if Unit.objects.get(pk=unit.pk).state != UnitState.ADJUDICATED:
        Unit.objects.filter(pk=unit.pk).update(state=state)


def units_of(study: Study, pipeline: dict[str, Any]) -> list[Unit]:
    """The study's units whose (evaluated) answer is ``pipeline``'s, in query order."""
    units = Unit.objects.filter(study=study, observation__pipeline__name=pipeline["name"])
    return sorted(
        units.select_related("observation__query"), key=lambda u: u.observation.query.query_id
    )


def pipeline_id(spec: dict[str, Any]) -> int:
    return Pipeline.objects.get(name=spec["name"], version=spec["version"]).pk


@pytest.fixture
def rubric(db):
    return make_study("rubric", "answer-rubric-1.0.0", "protocol-rubric.jsonl")


@pytest.fixture
def documents(db):
    return make_study("docs", "query-document-grades-1.0.0", "protocol-documents.jsonl")


@pytest.fixture
def pairs(db):
    return make_study("pairs", "pairwise-1.0.0", "protocol-pairs.jsonl")


def grades(*values: int | None) -> dict[str, Any]:
    return {"values": dict(zip(protocol.RUBRIC_FIELDS, values, strict=True))}


# --- answer rubric ------------------------------------------------------------------------------


def test_pass_rates_per_pipeline_come_from_final_labels_only(rubric):
    ev = units_of(rubric, protocol.EVALUATED)
    base = units_of(rubric, protocol.BASELINE)
    write_final(ev[0], grades(1, 1, 2, 1, 1))  # pass
    write_final(ev[1], grades(2, 0, 2, 2, 2), LabelKind.CONSENSUS)  # a 0: fail
    write_final(ev[2], grades(1, None, 1, 2, 1))  # a U beside 1s and 2s: unknown
    write_final(ev[3], grades(0, None, 2, 2, 2))  # a 0 beside a U: fail
    # Adjudicated wins over the consensus it replaced: pass.
    write_final(ev[4], grades(0, 1, 1, 1, 1), LabelKind.CONSENSUS)
    write_final(ev[4], grades(1, 1, 1, 1, 1))
    # A consensus on a unit that is no longer agreed (disputed again) is not final.
    write_final(ev[5], grades(2, 2, 2, 2, 2), LabelKind.CONSENSUS)
    Unit.objects.filter(pk=ev[5].pk).update(state=UnitState.DISPUTED)
    write_final(base[0], grades(1, 2, 1, 2, 2))

    rates = ps.pass_rates(rubric)
    mine = rates[pipeline_id(protocol.EVALUATED)]
    assert (mine.numerator, mine.denominator, mine.unknown) == (2, 4, 1)
    theirs = rates[pipeline_id(protocol.BASELINE)]
    assert (theirs.numerator, theirs.denominator, theirs.unknown, theirs.value) == (1, 1, 0, 1.0)

    reading = ps.Reading()
    passes = list(ps.rubric_passes(rubric, reading))
    assert len(passes) == 6
    assert (reading.units, reading.awaiting_final, reading.withheld) == (24, 18, 0)


def test_the_sealed_test_partition_stays_out_until_the_study_is_frozen(rubric):
    ev = units_of(rubric, protocol.EVALUATED)
    write_final(ev[0], grades(1, 1, 1, 1, 1))
    write_final(ev[1], grades(0, 1, 1, 1, 1))
    Unit.objects.filter(pk=ev[1].pk).update(partition="test")
    reading = ps.Reading()
    assert [p for _, p in ps.rubric_passes(rubric, reading)] == [True]
    assert reading.withheld == 1


def test_the_stream_reads_a_fixed_number_of_queries_per_chunk(rubric, monkeypatch):
    for unit in Unit.objects.filter(study=rubric):
        write_final(unit, grades(1, 1, 1, 1, 1), LabelKind.CONSENSUS)
    counts = {}
    for chunk in (5, 1000):
        monkeypatch.setattr(ps, "CHUNK", chunk)
        study = Study.objects.get(pk=rubric.pk)
        with CaptureQueriesContext(connection) as queries:
            assert len(list(ps.rubric_passes(study))) == 24
        counts[chunk] = len(queries)
    # Two queries per chunk of units (the units, their final records): 5 chunks against 1.
    assert counts[5] - counts[1000] == 2 * (math.ceil(24 / 5) - 1)


# --- query–document grades ---------------------------------------------------------------------


def doc(support: int | None, authority: str = "3", **more: Any) -> dict[str, Any]:
    values = {
        "support": support,
        "authority": authority,
        "domain_alignment": None,
        "producer_profile": None,
        "content_time": None,
        "info": None,
        **more,
    }
    return {"values": values, "reasons": {}}


def test_revised_grades_apply_trust_contradictions_and_redundancy(documents):
    ev = units_of(documents, protocol.EVALUATED)
    # An ordinary individual's page without full alignment fails trust (a = 0); document 2
    # is contradicted by document 0, of higher authority (a' = 0).
    write_final(
        ev[0],
        {
            "values": {"contradictions": [{"document": 2, "by": 0}], "redundancy": []},
            "documents": [doc(2), doc(1, "0"), doc(2, "2")],
        },
    )
    # Documents 0 and 1 say the same: 0 keeps its grade.
    write_final(
        ev[1],
        {
            "values": {
                "contradictions": [],
                "redundancy": [{"representative": 0, "members": [0, 1]}],
            },
            "documents": [doc(2), doc(2), doc(1), doc(1)],
        },
        LabelKind.CONSENSUS,
    )
    write_final(
        ev[2],
        {
            "values": {"contradictions": [], "redundancy": []},
            "documents": [
                doc(2),
                doc(1),
                doc(1, "1", domain_alignment="full", producer_profile=True),
            ],
        },
    )
    rows = {u.id: (a, r) for u, a, r in ps.query_document_grades(documents)}
    assert rows[ev[0].pk] == ((2, 0, 2), (2, 0, 0))
    assert rows[ev[1].pk] == ((2, 2, 1, 1), (2, 0, 1, 1))
    assert rows[ev[2].pk] == ((2, 1, 1), (2, 1, 1))

    metrics = ps.document_metrics(documents)[pipeline_id(protocol.EVALUATED)]
    assert metrics.accuracy.denominator == 3
    assert metrics.accuracy.value == pytest.approx((2 / 3 + 1 + 1) / 3)
    # e: {2,0,0} -> 0; {2,0,1,1} -> 0 (3/4 < 0.8); {2,1,1} -> 2.
    assert metrics.usability.grades == (0, 0, 2)
    assert (metrics.usability.usable.numerator, metrics.usability.high_quality.numerator) == (1, 1)


def test_the_querys_expiry_boundary_fails_stale_documents(documents):
    ev = units_of(documents, protocol.EVALUATED)
    fresh, stale = {"content_time": "2026-04-10"}, {"content_time": "2025-12-31"}
    # A boundary: the document whose content time is not after it fails temporal trust
    # (a = 0), as does one whose content time is unknown; the fresh one keeps its grade.
    write_final(
        ev[0],
        {
            "values": {"expiry_boundary": "2026-01-01", "contradictions": [], "redundancy": []},
            "documents": [doc(2, **fresh), doc(2, **stale), doc(1)],
        },
    )
    # No boundary (empty, or U): W_temp does not apply, content times change nothing.
    write_final(
        ev[1],
        {
            "values": {"expiry_boundary": None, "contradictions": [], "redundancy": []},
            "documents": [doc(2, **fresh), doc(2, **stale), doc(1)],
        },
    )
    rows = {u.id: a for u, a, _r in ps.query_document_grades(documents)}
    assert rows[ev[0].pk] == (2, 0, 0)
    assert rows[ev[1].pk] == (2, 2, 1)


def test_an_unreadable_stored_label_names_its_unit(documents):
    unit = units_of(documents, protocol.EVALUATED)[0]
    write_final(
        unit,
        {
            "values": {"contradictions": [{"document": 7, "by": 0}], "redundancy": []},
            "documents": [doc(2)],
        },
    )
    with pytest.raises(ps.ProtocolDataError, match=unit.digest[:12]):
        list(ps.query_document_grades(documents))


# --- pairwise ----------------------------------------------------------------------------------


def test_pairwise_counts_map_the_stored_preference_to_good_same_bad(pairs):
    units = sorted(
        Unit.objects.filter(study=pairs).select_related("observation__query"), key=lambda u: u.pk
    )
    stored = [
        {"values": {"preference": "answer"}},
        {"values": {"preference": "answer"}},
        {"values": {"preference": "same"}},
        {"values": {"preference": "baseline"}},
        # left/right read through the sides stored beside them
        {"values": {"preference": "left"}, "sides": {"left": "baseline", "right": "answer"}},
        {"values": {"preference": "right"}, "sides": {"left": "baseline", "right": "answer"}},
        # no sides: cannot be mapped, counted apart
        {"values": {"preference": "right"}},
    ]
    for unit, annotation in zip(units, stored, strict=False):
        write_final(unit, annotation)
    counts = ps.pairwise_counts(
        pairs, pipeline_id(protocol.EVALUATED), pipeline_id(protocol.BASELINE)
    )
    assert (counts.good, counts.same, counts.bad, counts.unmapped) == (3, 1, 2, 1)
    assert counts.judgments == ["G", "G", "S", "B", "B", "G"]
    assert counts.queries == [u.observation.query.key for u in units[:6]]
    assert counts.reading.awaiting_final == 5
    assert counts.net_gain(n_boot=100).value == net_gain(3, 1, 2).value
    # The roles swapped are another comparison, with no pairs here.
    other = ps.pairwise_counts(
        pairs, pipeline_id(protocol.BASELINE), pipeline_id(protocol.EVALUATED)
    )
    assert other.judgments == []


# --- the setting and Table II ------------------------------------------------------------------


def label_setting(documents: Study, rubric: Study, pairs: Study) -> None:
    """Every unit final with the demo's values (fixtures/demo/protocol.py)."""
    for system, spec in (("evaluated", protocol.EVALUATED), ("baseline", protocol.BASELINE)):
        for unit in units_of(rubric, spec):
            i = protocol.query_number(unit.observation.query.query_id)
            write_final(unit, {"values": protocol.rubric_values(i, system)}, LabelKind.CONSENSUS)
        for unit in units_of(documents, spec):
            i = protocol.query_number(unit.observation.query.query_id)
            docs, values = protocol.document_values(i, system)
            write_final(unit, {"values": values, "documents": docs})
    for unit in units_of(pairs, protocol.EVALUATED):
        i = protocol.query_number(unit.observation.query.query_id)
        write_final(unit, {"values": {"preference": protocol.preference(i)}})


def test_the_setting_is_the_protocol_studies_asking_the_same_queries(documents, rubric, pairs):
    other = Study.objects.create(slug="rubric-few", title="few", codebook=rubric.codebook)
    header = {"claimgate": "observations", "format_version": 1, "codebook": protocol.RUBRIC}
    lines = [header, *protocol.lines(protocol.RUBRIC)[:4]]
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    assert observations_import(study=other, data=data, file_name="few.jsonl").status != "rejected"

    setting = ps.protocol_setting(documents)
    assert {k: s.slug if s else None for k, s in setting.studies.items()} == {
        "query_documents": "docs",
        "rubric": "rubric",
        "pairwise": "pairs",
    }
    assert setting.pairs == [(pipeline_id(protocol.EVALUATED), pipeline_id(protocol.BASELINE), 12)]
    assert {p.name for p in setting.pipelines} == {
        protocol.EVALUATED["name"],
        protocol.BASELINE["name"],
    }
    alone = ps.protocol_setting(other)
    assert alone.studies == {"query_documents": None, "rubric": other, "pairwise": None}
    source_risk = make_study("risk", "source-risk-1.0.0", "source-risk.jsonl")
    assert ps.protocol_setting(source_risk) is None


def test_table_ii_from_the_setting_matches_the_hand_computed_rates(documents, rubric, pairs):
    label_setting(documents, rubric, pairs)
    setting = ps.protocol_setting(pairs)
    table = ps.comparison_fetch(
        setting, pipeline_id(protocol.EVALUATED), pipeline_id(protocol.BASELINE), n_boot=200
    )
    rows = {row["metric"]: row for row in table["rows"]}
    # Rubric: evaluated fails 2 of 12 (10/12); baseline fails 5, one unknown (6/11).
    assert rows["pass_r"]["evaluated"]["numerator"] == 10
    assert (rows["pass_r"]["baseline"]["numerator"], rows["pass_r"]["baseline"]["denominator"]) == (
        6,
        11,
    )
    assert rows["pass_r"]["baseline"]["unknown"] == 1
    assert rows["pass_r"]["delta"] == pytest.approx(100 * (10 / 12 - 6 / 11))
    assert rows["pass_r"]["low"] <= rows["pass_r"]["delta"] <= rows["pass_r"]["high"]
    # Pairwise: 6 G, 4 S, 2 B -> +33.3%.
    gain = rows["net_gain"]
    assert (gain["good"], gain["same"], gain["bad"]) == (6, 4, 2)
    assert gain["value"] == pytest.approx(100 * 4 / 12)
    assert gain["bootstrap"]["clusters"] == 12
    for key in ("acc_qd", "usable_q", "highq_q"):
        assert rows[key]["evaluated"]["denominator"] == 12
        assert rows[key]["baseline"]["denominator"] == 12
    assert table["studies"] == {"query_documents": "docs", "rubric": "rubric", "pairwise": "pairs"}


# --- the page, the CSV, the release -----------------------------------------------------------


def test_the_comparison_page_and_csv_show_table_ii(client, documents, rubric, pairs):
    label_setting(documents, rubric, pairs)
    people = add_people(pairs)
    client.force_login(people["res"])
    detail = client.get(reverse("study-detail", args=["pairs"])).content.decode()
    assert reverse("study-comparison", args=["pairs"]) in detail
    page = client.get(reverse("study-comparison", args=["pairs"]))
    assert page.status_code == 200
    html = page.content.decode()
    for text in ("Acc_qd", "Usable_q", "HighQ_q", "PassR_ans", "+33.3 %", "6 / 4 / 2", "<svg"):
        assert text in html
    ev, base = pipeline_id(protocol.EVALUATED), pipeline_id(protocol.BASELINE)
    response = client.get(
        reverse("study-comparison-csv", args=["pairs"]), {"evaluated": ev, "baseline": base}
    )
    assert response.status_code == 200
    lines = response.content.decode().splitlines()
    assert lines[1].startswith("metric,unit,evaluated")
    assert lines[5].startswith("PassR_ans,pp,83.33,10,12,54.55,6,11,28.79,")
    assert lines[6].startswith("NetGain_ans,%,,,,,,,33.33,")

    same = client.get(
        reverse("study-comparison", args=["pairs"]), {"evaluated": ev, "baseline": ev}
    )
    assert same.status_code == 400
    assert "other than the evaluated one" in same.content.decode()
    bad = client.get(
        reverse("study-comparison-csv", args=["pairs"]), {"evaluated": "x", "baseline": base}
    )
    assert bad.status_code == 400


def test_the_comparison_is_for_researchers_of_protocol_studies(client, pairs):
    people = add_people(pairs)
    client.force_login(people["ann_a"])
    assert client.get(reverse("study-comparison", args=["pairs"])).status_code == 403
    risk = make_study("risk", "source-risk-1.0.0", "source-risk.jsonl")
    risk_people = add_people(risk)
    client.force_login(risk_people["res"])
    assert client.get(reverse("study-comparison", args=["risk"])).status_code == 404
    detail = client.get(reverse("study-detail", args=["risk"])).content.decode()
    assert "comparison-link" not in detail


def test_a_release_of_a_protocol_study_carries_the_comparison(
    settings, tmp_path, documents, rubric, pairs
):
    settings.RELEASES_ROOT = tmp_path / "releases"
    label_setting(documents, rubric, pairs)
    release = release_build(study=rubric, name="v1")
    assert release.status == "ready", release.error
    directory = settings.RELEASES_ROOT / "rubric" / "v1"
    sums, bad = rf.parse_manifest((directory / rf.MANIFEST).read_text())
    assert bad == []
    assert sums[rf.COMPARISON] == rf.file_sha256(directory / rf.COMPARISON)
    content = json.loads((directory / rf.COMPARISON).read_text())
    assert content["setting"] == {
        "query_documents": "docs",
        "rubric": "rubric",
        "pairwise": "pairs",
    }
    [comparison] = content["comparisons"]
    assert [row["metric"] for row in comparison["rows"]][-1] == "net_gain"
    assert comparison["rows"][-1]["good"] == 6
    assert rf.COMPARISON in (directory / rf.README).read_text()
    # The same release built again has the same comparison bytes.
    again = release_build(study=rubric, name="v2")
    assert again.files[rf.COMPARISON]["sha256"] == release.files[rf.COMPARISON]["sha256"]
