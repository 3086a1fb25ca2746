"""pairwise_counts and pairwise_left_shares (metrics.protocol_selectors) on labels submitted
through the service: annotators pick sides in their own orders, the counts come out in
Good/Same/Bad."""

from __future__ import annotations

import uuid

import pytest

from annotator.adjudication.services import adjudication_submit_picks, unit_state_recompute
from annotator.labelling.services import label_submit
from annotator.memberships.models import Membership, Role
from audit.archive.models import UnitState
from metrics.protocol import net_gain, net_gain_bootstrap
from metrics.protocol_selectors import pairwise_counts, pairwise_left_shares, pipeline_pairs
from tests.annotation.conftest import assign
from tests.annotation.pairs import opposite_annotators, pairs_study

pytestmark = pytest.mark.django_db


def _side_for(assignment, meaning: str) -> str:
    """The side this annotator must pick to mean Good, Same or Bad for the evaluated
    answer, in the order drawn for them."""
    if meaning == "S":
        return "same"
    good_side = "left" if assignment.pair_left_is_evaluated else "right"
    bad_side = "right" if good_side == "left" else "left"
    return good_side if meaning == "G" else bad_side


def _label(unit, person, meaning: str) -> str:
    assignment = assign(unit, person)
    side = _side_for(assignment, meaning)
    label_submit(
        assignment=assignment,
        annotation={
            "values": {"preference": side},
            "reasons": {"preference": "read as the user who asked"},
            "spans": [],
            "rationale": None,
        },
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    )
    return side


@pytest.fixture
def labelled(db):
    """Three pairs: both annotators find the evaluated answer better (G), both find them
    the same (S), and they disagree, the adjudicator deciding for the baseline (B)."""
    study = pairs_study("counts", n=3)
    units = list(study.units.order_by("id"))
    first, second = opposite_annotators(study, units[0])
    picks = {}
    for unit, meanings in zip(units, (("G", "G"), ("S", "S"), ("G", "B")), strict=True):
        picks[unit.pk] = [_label(unit, first, meanings[0]), _label(unit, second, meanings[1])]
        unit_state_recompute(unit=unit)
    disputed = units[2]
    disputed.refresh_from_db()
    assert disputed.state == UnitState.DISPUTED
    judge = type(first).objects.create_user(username="judge", password="pw")
    Membership.objects.create(study=study, user=judge, role=Role.ADJUDICATOR)
    bad_label = [
        h for h in disputed.labels.filter(kind="independent") if h.annotator_id == second.pk
    ]
    adjudication_submit_picks(
        unit=disputed,
        adjudicator=judge,
        picks={"preference": bad_label[0].record_digest},
        rationale="the second answer serves the office better",
        client_submission_id=uuid.uuid4(),
    )
    return study, units, (first, second), picks


def _pipelines(study) -> tuple[int, int]:
    (evaluated, baseline, _units), *_ = pipeline_pairs(study)
    return evaluated, baseline


def test_pairwise_counts_reads_good_same_bad_from_final_labels(labelled):
    study, units, _people, _picks = labelled
    counts = pairwise_counts(study, *_pipelines(study))
    assert (counts.good, counts.same, counts.bad, counts.unmapped) == (1, 1, 1, 0)
    assert counts.judgments == ["G", "S", "B"]
    # one cluster per query (each pair asks its own query here)
    assert len(counts.queries) == len(set(counts.queries)) == len(units)
    # the inputs of the pure metrics, as the comparison report passes them
    assert net_gain(counts.good, counts.same, counts.bad).value == pytest.approx(0.0)
    boot = net_gain_bootstrap(counts.judgments, counts.queries, seed=1, n_boot=50)
    assert boot.value == pytest.approx(0.0)


def test_pairwise_counts_of_other_pipelines_are_empty(labelled):
    study, *_ = labelled
    evaluated, baseline = _pipelines(study)
    swapped = pairwise_counts(study, baseline, evaluated)
    assert (swapped.good, swapped.same, swapped.bad, swapped.judgments) == (0, 0, 0, [])


def test_a_pair_without_a_final_label_is_not_counted(db):
    study = pairs_study("awaiting", n=2)
    unit = study.units.order_by("id").first()
    first, _second = opposite_annotators(study, unit)
    _label(unit, first, "G")
    counts = pairwise_counts(study, *_pipelines(study))
    assert (counts.good + counts.same + counts.bad, counts.judgments) == (0, [])


def test_left_shares_recover_the_side_each_annotator_saw(labelled):
    study, units, people, picks = labelled
    shares = pairwise_left_shares(study)
    pseudonyms = {
        person.pk: Membership.objects.get(study=study, user=person, role=Role.ANNOTATOR).pseudonym
        for person in people
    }
    for index, person in enumerate(people):
        seen = [picks[u.pk][index] for u in units]
        share = shares[pseudonyms[person.pk]]
        assert (share.left, share.right, share.same) == (
            seen.count("left"),
            seen.count("right"),
            seen.count("same"),
        )


def test_the_selectors_run_a_fixed_number_of_queries(labelled, django_assert_max_num_queries):
    study, *_ = labelled
    pipelines = _pipelines(study)
    with django_assert_max_num_queries(8):
        pairwise_counts(study, *pipelines)
    with django_assert_max_num_queries(3):
        pairwise_left_shares(study)
