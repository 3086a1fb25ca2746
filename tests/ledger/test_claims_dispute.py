"""Claims dispute an answer unit (issue 14 item 5): an unmatched claim or a differing claim
verdict makes the unit disputed; agreeing claims give a consensus whose claims are chosen
by content, the same whoever submitted first."""

from __future__ import annotations

import copy
import uuid
from types import SimpleNamespace

import pytest

from annotator.adjudication.jobs import label_submitted
from annotator.adjudication.services import consensus_annotation
from annotator.labelling.models import Label, LabelKind
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import label_submit
from audit.archive.models import Unit, UnitState
from tests.annotation.annotations import answer_claims, span
from tests.annotation.conftest import add_people, assign, make_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def setup(db):
    study = make_study("claims-dispute", "answer-claims-1.0.0", "answer-claims.jsonl")
    people = add_people(study)
    units = [u for u in study.units.order_by("id") if unit_content(unit=u).sources]
    return study, people, units


def submit(unit, user, annotation):
    label = label_submit(
        assignment=assign(unit, user),
        annotation=annotation,
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label
    label_submitted.run(label.pk)
    return label


def test_a_differing_claim_verdict_disputes_the_unit(setup):
    _, people, units = setup
    unit = units[0]
    base = answer_claims(unit_content(unit=unit))
    other = copy.deepcopy(base)
    other["claims"][0]["accurate"] = None  # same claim, another "accurate"
    submit(unit, people["ann_a"], base)
    submit(unit, people["ann_b"], other)
    assert Unit.objects.get(pk=unit.pk).state == UnitState.DISPUTED
    assert not Label.objects.filter(unit=unit, kind=LabelKind.CONSENSUS).exists()


def test_an_unmatched_claim_disputes_the_unit(setup):
    _, people, units = setup
    unit = units[0]
    content = unit_content(unit=unit)
    base = answer_claims(content)
    more = copy.deepcopy(base)
    extra = copy.deepcopy(base["claims"][0])
    extra.update(id="c2", span=span(content, "answer", 40, 60))
    more["claims"].append(extra)
    submit(unit, people["ann_a"], base)
    submit(unit, people["ann_b"], more)
    assert Unit.objects.get(pk=unit.pk).state == UnitState.DISPUTED


def test_agreeing_claims_give_one_consensus_claim_whoever_submits_first(setup):
    _, people, units = setup
    finals = []
    for unit, order in zip(units[:2], (("ann_a", "ann_b"), ("ann_b", "ann_a")), strict=True):
        content = unit_content(unit=unit)
        wide = answer_claims(content)
        wide["claims"][0]["reason"] = "wide"
        narrow = copy.deepcopy(wide)
        narrow["claims"][0].update(span=span(content, "answer", 2, 20), reason="narrow")
        annotations = {"ann_a": wide, "ann_b": narrow}
        for name in order:
            submit(unit, people[name], annotations[name])
        assert Unit.objects.get(pk=unit.pk).state == UnitState.AGREED
        consensus = Label.objects.get(unit=unit, kind=LabelKind.CONSENSUS)
        finals.append(consensus.annotation["claims"])
    for claims in finals:
        assert len(claims) == 1
        assert claims[0]["id"] == "c1"
        assert (claims[0]["span"]["start"], claims[0]["span"]["end"]) == (0, 20)
        assert claims[0]["reason"] == "wide | narrow"


def test_a_consensus_of_imported_labels_without_reasons_keeps_the_reasons_there_are(setup):
    study, _, units = setup
    content = unit_content(unit=units[0])
    first = answer_claims(content)
    second = copy.deepcopy(first)
    first["annotator"], second["annotator"] = "a-one", "a-two"
    second["verdicts"]["cited"]["reason"] = None  # a record imported from elsewhere
    first["verdicts"]["timely"]["reason"] = None
    second["verdicts"]["timely"]["reason"] = None
    heads = [SimpleNamespace(annotation=first), SimpleNamespace(annotation=second)]
    verdicts = consensus_annotation(study=study, heads=heads)["verdicts"]
    assert verdicts["cited"]["reason"] == "cited: checked against the sources"
    assert verdicts["timely"]["reason"] is None
