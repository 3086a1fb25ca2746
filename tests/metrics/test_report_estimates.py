"""The report's rates on the final labels: weighted (Hájek) beside unweighted where every
tuple carries an inclusion probability, never labelled a prevalence where one lacks it."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit.archive.models import Tuple, Unit
from audit.partitions.services import study_freeze
from metrics.estimates import hajek
from metrics.models import VeriScoreCohort
from metrics.services import report_compute
from tests.annotation.annotations import answer_claims
from tests.annotation.conftest import add_people, make_study
from tests.metrics.predictions_setup import GOLD_R_O, gold_study

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _few_resamples(settings):
    settings.RELIABILITY_BOOTSTRAP = 200


def test_r_o_is_weighted_by_inverse_inclusion_probability_beside_the_sample_share():
    gold = gold_study("est", units=9, freeze=False)
    report = report_compute(study=gold.study).report
    (rate,) = report["estimates"]["rates"]
    assert rate["key"] == "R_O"
    probabilities = dict(
        Tuple.objects.filter(unit__in=gold.labelled).values_list(
            "unit__id", "inclusion_probability"
        )
    )
    values = [GOLD_R_O[i % 3] for i in range(9)]
    expected = hajek(values, [probabilities[unit.pk] for unit in gold.labelled])
    assert rate["prevalence"] is True
    assert (rate["n"], rate["excluded"], rate["numerator"]) == (6, 3, 3)
    assert rate["weighted"]["value"] == pytest.approx(expected.weighted)
    assert rate["unweighted"]["value"] == pytest.approx(0.5)
    assert rate["weighted"]["low"] <= rate["weighted"]["value"] <= rate["weighted"]["high"]
    client = Client()
    client.force_login(gold.people["res"])
    html = client.get(f"/studies/{gold.study.slug}/reliability/").content.decode()
    assert "Prevalence (Hájek, weighted)" in html
    assert '<strong class="counts">3/6</strong> = 0.500' in html


def test_answers_without_inclusion_probabilities_get_no_prevalence():
    study = make_study("estc", "answer-claims-1.0.0", "answer-claims.jsonl")
    people = add_people(study)
    for who in ("ann_a", "ann_b"):
        assignment = assignment_next(study=study, annotator=people[who])
        label = label_submit(
            assignment=assignment,
            annotation=answer_claims(unit_content(unit=assignment.unit)),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        ).label
        label_submitted.run(label.pk)
    report = report_compute(study=study).report
    rates = {rate["key"]: rate for rate in report["estimates"]["rates"]}
    assert set(rates) == {"cited", "supported", "accurate", "timely", "relevant", "complete"}
    for rate in rates.values():
        assert rate["prevalence"] is False
        assert rate["weighted"] is None
        assert rate["weighted_reason"] == "no_inclusion_probabilities"
    client = Client()
    client.force_login(people["res"])
    response = client.get(f"/studies/{study.slug}/reliability/")
    html = response.content.decode()
    assert "not a prevalence" in html
    # Every verdict rate of the page carries its interval beside its counts.
    claims = response.context["claims"]
    for entry in [claims["evaluate"], *claims["grouped"]]:
        for name in ("cited", "supported", "accurate", "timely", "relevant", "complete"):
            cell = entry[name]
            if cell["denominator"]:
                assert cell["low"] <= cell["rate"] <= cell["high"]
            else:
                assert (cell["low"], cell["high"]) == (None, None)
    csv = client.get(f"/studies/{study.slug}/reliability/csv/?table=claim_verdicts")
    header = csv.content.decode().splitlines()[1]
    assert "rate,low,high,unknown" in header


def _label_every_answer(study, people):
    for who in ("ann_a", "ann_b"):
        while (assignment := assignment_next(study=study, annotator=people[who])) is not None:
            label = label_submit(
                assignment=assignment,
                annotation=answer_claims(unit_content(unit=assignment.unit)),
                client_submission_id=uuid.uuid4(),
                parent_digest=None,
            ).label
            label_submitted.run(label.pk)


def test_veriscore_k_is_frozen_with_the_study_once_every_answer_is_assessed():
    study = make_study("kfreeze", "answer-claims-1.0.0", "answer-claims.jsonl")
    people = add_people(study)
    first = report_compute(study=study).report["claim_metrics"]
    assert first["veriscore_cohort_state"] == {
        "frozen": False,
        "why": "the study is not frozen yet",
    }
    _label_every_answer(study, people)
    Unit.objects.filter(study=study).update(partition="calibration")
    study_freeze(study=study, user=people["res"])

    report = report_compute(study=study)
    metrics = report.report["claim_metrics"]
    assert metrics["awaiting_final"] == 0
    frozen = VeriScoreCohort.objects.get(study=study)
    assert frozen.report_id == report.pk
    assert metrics["veriscore_cohort"] == frozen.cohort
    assert metrics["veriscore_cohort_state"]["frozen"] is True
    assert frozen.answers == sum(entry["answers"] for entry in frozen.cohort.values()) > 0

    # Later reports score against the frozen cohort, whatever their own rows would give.
    domain = next(iter(frozen.cohort))
    pinned = {domain: {"K": 99.0, "answers": frozen.cohort[domain]["answers"]}}
    VeriScoreCohort.objects.filter(pk=frozen.pk).update(cohort=pinned)
    later = report_compute(study=study).report["claim_metrics"]
    assert later["veriscore_cohort"] == pinned
    client = Client()
    client.force_login(people["res"])
    html = client.get(f"/studies/{study.slug}/reliability/").content.decode()
    assert "Frozen with the study on" in html
    assert f"{domain}: K = 99.0" in html
