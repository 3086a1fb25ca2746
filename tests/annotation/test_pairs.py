"""Answer pairs through the pages and the API: the recorded order, the stored roles, and
blinding — nothing an annotator is sent says which side shows the evaluated answer.

Blinding is checked by comparison: two annotators whose drawn orders of one unit are
opposite get responses (page HTML, API JSON, drafts, submissions, the read-only page) that
are byte for byte identical once each response's own identifiers are masked and the two
answer texts are named by their place. Any difference that follows the order — a role in
markup, an attribute, an id, the order of keys, a request made for one side first — would
survive the masking and fail the comparison."""

from __future__ import annotations

import difflib
import json
import re
import uuid

import pytest
from django.core.cache import cache
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.adjudication.services import (
    adjudication_submit_picks,
    consensus_annotation,
    independent_heads,
    labels_agree,
)
from annotator.labelling.models import Assignment, Label, QueueSeed
from annotator.labelling.order import answer_pair_left_is_evaluated
from annotator.labelling.services import (
    LabelRefused,
    assignment_next,
    label_submit,
    pair_sides_draw,
)
from annotator.memberships.models import Membership, Role
from audit.archive.models import Unit, UnitState
from audit.contract.sides import sides_of
from tests.annotation.conftest import assign
from tests.annotation.pairs import (
    HIDDEN_WORDS,
    baseline_text,
    evaluated_text,
    opposite_annotators,
    pairs_study,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fresh_throttle_history():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def study(db):
    return pairs_study(evidence=True)


@pytest.fixture
def unit(study):
    return study.units.order_by("id").first()


def _n(unit) -> int:
    """The pair number of a unit (its query id ends in it)."""
    return int(unit.observation.query.query_id.rsplit("-", 1)[1])


def _client_annotation(preference: str, n: int, side: str = "left") -> dict:
    # a span on the left's text: the same characters whichever answer is there
    return {
        "values": {"preference": preference},
        "reasons": {"preference": "it names a router that fits"},
        "spans": [
            {"field": "preference", "snapshot": side, "start": 0, "end": 5, "quote": "Alpha"}
        ],
        "rationale": None,
    }


# --- the recorded order ---------------------------------------------------------------


def test_the_queue_records_the_drawn_order_on_the_assignment(study):
    people = opposite_annotators(study, study.units.first())
    for person in people:
        assignment = assignment_next(study=study, annotator=person)
        seed = QueueSeed.objects.get(study=study).seed
        assert assignment.pair_left_is_evaluated == answer_pair_left_is_evaluated(
            seed=seed, annotator_id=person.pk, unit_id=assignment.unit_id
        )


def test_other_unit_kinds_record_no_order(risk_study, people):
    assignment = assignment_next(study=risk_study, annotator=people["ann_a"])
    assert assignment.pair_left_is_evaluated is None


# --- the mapping at submit --------------------------------------------------------------


def _submit(assignment, preference: str, side: str = "left"):
    n = _n(assignment.unit)
    annotation = _client_annotation(preference, n, side)
    texts = {True: evaluated_text(n), False: baseline_text(n)}
    left_evaluated = assignment.pair_left_is_evaluated
    shown = texts[left_evaluated] if side == "left" else texts[not left_evaluated]
    annotation["spans"][0]["quote"] = shown[:5]
    return label_submit(
        assignment=assignment,
        annotation=annotation,
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label


@pytest.mark.parametrize(
    ("picked", "good_when_left_evaluated", "good_when_right_evaluated"),
    [("left", "answer", "baseline"), ("right", "baseline", "answer"), ("same", "same", "same")],
)
def test_a_pick_is_stored_as_good_same_or_bad_for_the_evaluated_answer(
    study, unit, picked, good_when_left_evaluated, good_when_right_evaluated
):
    left_evaluated, right_evaluated = opposite_annotators(study, unit)
    first = _submit(assign(unit, left_evaluated), picked)
    second = _submit(assign(unit, right_evaluated), picked)
    assert first.annotation["values"]["preference"] == good_when_left_evaluated
    assert second.annotation["values"]["preference"] == good_when_right_evaluated
    assert first.annotation["sides"] == sides_of(left_is_evaluated=True)
    assert second.annotation["sides"] == sides_of(left_is_evaluated=False)
    # spans on the left cite the answer each annotator saw there
    assert first.annotation["spans"][0]["snapshot"] == "answer"
    assert second.annotation["spans"][0]["snapshot"] == "baseline"


def test_opposite_picks_of_the_same_answer_agree_and_merge(study, unit):
    left_evaluated, right_evaluated = opposite_annotators(study, unit)
    labels = [
        _submit(assign(unit, left_evaluated), "left"),
        _submit(assign(unit, right_evaluated), "right"),
    ]
    definition = study.codebook.definition
    assert labels_agree([label.annotation for label in labels], "answer_pair", definition)
    consensus = consensus_annotation(study=study, heads=labels)
    assert consensus["values"] == {"preference": "answer"}
    assert consensus["sides"] in (
        sides_of(left_is_evaluated=True),
        sides_of(left_is_evaluated=False),
    )


def test_same_side_picks_of_opposite_orders_disagree(study, unit):
    left_evaluated, right_evaluated = opposite_annotators(study, unit)
    labels = [
        _submit(assign(unit, left_evaluated), "left"),
        _submit(assign(unit, right_evaluated), "left"),
    ]
    definition = study.codebook.definition
    assert not labels_agree([label.annotation for label in labels], "answer_pair", definition)


def test_a_client_naming_a_role_is_refused_in_its_own_terms(study, unit):
    left_evaluated, _ = opposite_annotators(study, unit)
    assignment = assign(unit, left_evaluated)
    with pytest.raises(LabelRefused) as refused:
        _submit(assignment, "answer")
    assert refused.value.code == "invalid_field"
    assert "left, same, right" in refused.value.message
    annotation = _client_annotation("left", _n(unit), "baseline")
    with pytest.raises(LabelRefused) as refused:
        label_submit(
            assignment=assignment,
            annotation=annotation,
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        )
    assert refused.value.code == "span_malformed"
    assert "query, left, right" in refused.value.message


def test_a_span_quote_mismatch_names_the_side_not_the_role(study, unit):
    left_evaluated, _ = opposite_annotators(study, unit)
    assignment = assign(unit, left_evaluated)
    annotation = _client_annotation("left", _n(unit), "right")
    annotation["spans"][0]["quote"] = "Wrong"
    with pytest.raises(LabelRefused) as refused:
        label_submit(
            assignment=assignment,
            annotation=annotation,
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        )
    assert "right text" in refused.value.message
    assert not any(word in refused.value.message for word in HIDDEN_WORDS)


# --- adjudication ---------------------------------------------------------------------------


def test_adjudication_shows_each_choice_in_the_adjudicators_order_and_stores_roles(
    study, unit, client
):
    left_evaluated, right_evaluated = opposite_annotators(study, unit)
    # both picked the evaluated answer's side? no: they disagree (Good and Bad)
    _submit(assign(unit, left_evaluated), "left")  # Good
    _submit(assign(unit, right_evaluated), "left")  # Bad
    Unit.objects.filter(pk=unit.pk).update(state=UnitState.DISPUTED)
    adjudicator = type(left_evaluated).objects.create_user(username="judge", password="pw")
    Membership.objects.create(study=study, user=adjudicator, role=Role.ADJUDICATOR)
    client.force_login(adjudicator)
    page = client.get(reverse("adjudication-unit", args=[unit.pk])).content.decode()
    sides = pair_sides_draw(study=study, user_id=adjudicator.pk, unit_id=unit.pk)
    # the Good label reads as the side where the adjudicator sees the evaluated answer
    good_side = "Left" if sides["left"] == "answer" else "Right"
    bad_side = "Right" if good_side == "Left" else "Left"
    heads = independent_heads(unit=unit)
    cells = re.findall(r'class="pick-value">([^<]+)</span>', page)
    assert cells == [f"{good_side} is better", f"{bad_side} is better"]
    n = _n(unit)
    left_pane = page[page.index('id="side-left"') : page.index('id="side-right"')]
    assert (evaluated_text(n) if sides["left"] == "answer" else baseline_text(n)) in left_pane
    # the final label takes the Good label's value: stored as the role, with the
    # adjudicator's own sides
    label = adjudication_submit_picks(
        unit=unit,
        adjudicator=adjudicator,
        picks={"preference": heads[0].record_digest},
        rationale="the first answer names a router that fits",
        client_submission_id=uuid.uuid4(),
    )
    assert label.annotation["values"]["preference"] == "answer"
    assert label.annotation["sides"] == sides


# --- blinding ---------------------------------------------------------------------------


def _masked(text: str, assignment: Assignment, person, n: int) -> str:
    """``text`` with what belongs to this response alone masked (ids, tokens, times,
    digests, the user's name and pseudonym) and the two answers named by their place."""
    left_evaluated = assignment.pair_left_is_evaluated
    for role_text, role_is_left in (
        (evaluated_text(n), left_evaluated),
        (baseline_text(n), not left_evaluated),
    ):
        text = text.replace(role_text, "@LEFT-TEXT@" if role_is_left else "@RIGHT-TEXT@")
        # a quote of the first five characters, as the spans below make
        text = text.replace(role_text[:5], "@LEFT-QUOTE@" if role_is_left else "@RIGHT-QUOTE@")
    pk = assignment.pk
    for pattern in (
        rf"assignments/{pk}/",
        rf"assignments%2F{pk}%2F",
        rf"assignment:{pk}\b",
        rf'"assignment": {pk}\b',
        rf'"id": ?{pk}\b',
        rf'data-assignment-id="{pk}"',
    ):
        text = re.sub(pattern, "@PK@", text)
    text = text.replace(person.username, "@USER@")
    text = re.sub(r"\ba-[0-9a-f]{10}\b", "@PSEUDONYM@", text)
    text = re.sub(r"[0-9a-f]{64}", "@DIGEST@", text)
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "@UUID@", text)
    text = re.sub(r'(csrfmiddlewaretoken" value=")[^"]+', r"\1@CSRF@", text)
    text = re.sub(
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?", "@TIME@", text
    )
    return text


def _diff(mine: str, theirs: str) -> str:
    return "\n".join(difflib.unified_diff(mine.splitlines(), theirs.splitlines(), lineterm="", n=0))


def _visible_hidden_words(text: str) -> list[str]:
    return [word for word in HIDDEN_WORDS if word in text.lower()]


def test_nothing_an_annotator_is_sent_tells_the_sides_apart(study, unit):
    n = _n(unit)
    people = opposite_annotators(study, unit)
    seen: dict[str, list[str]] = {"page": [], "api": [], "draft": [], "submit": [], "after": []}
    for person in people:
        assignment = assign(unit, person)
        assert assignment.pair_left_is_evaluated is (person is people[0])
        api = APIClient()
        api.force_authenticate(person)
        browser = Client()
        browser.force_login(person)

        def keep(kind, response, assignment=assignment, person=person):
            assert response.status_code in (200, 201), response.content[:500]
            body = response.content.decode()
            assert _visible_hidden_words(body) == [], (kind, _visible_hidden_words(body))
            seen[kind].append(_masked(body, assignment, person, n))

        page = browser.get(reverse("assignment-form", args=[assignment.pk]))
        keep("page", page)
        snapshots = set(re.findall(r'data-snapshot="([^"]+)"', page.content.decode()))
        assert snapshots == {"query", "left", "right"}
        keep("api", api.get(reverse("api-assignment", args=[assignment.pk])))
        annotation = _client_annotation("left", n)
        left_text = evaluated_text(n) if assignment.pair_left_is_evaluated else baseline_text(n)
        annotation["spans"][0]["quote"] = left_text[:5]
        keep(
            "draft",
            api.put(
                reverse("api-assignment-draft", args=[assignment.pk]),
                {"payload": annotation},
                format="json",
            ),
        )
        keep("page", browser.get(reverse("assignment-form", args=[assignment.pk])))
        keep(
            "submit",
            api.post(
                reverse("api-assignment-labels", args=[assignment.pk]),
                {"annotation": annotation, "client_submission_id": str(uuid.uuid4())},
                format="json",
            ),
        )
        keep("after", api.get(reverse("api-assignment", args=[assignment.pk])))
        keep("after", api.get(reverse("api-assignment-labels", args=[assignment.pk])))
        keep("after", browser.get(reverse("assignment-form", args=[assignment.pk])))
        keep("after", browser.get(reverse("assignment-form", args=[assignment.pk]) + "?revise=1"))
    for kind, bodies in seen.items():
        half = len(bodies) // 2
        for mine, theirs in zip(bodies[:half], bodies[half:], strict=True):
            assert mine == theirs, (kind, _diff(mine, theirs))
    # and the two stored labels mean opposite things: the same "left" is Good, then Bad
    stored = [
        Label.objects.get(unit=unit, annotator=person).annotation["values"]["preference"]
        for person in people
    ]
    assert stored == ["answer", "baseline"]


def test_the_api_shows_the_head_in_the_annotators_own_terms(study, unit):
    left_evaluated, right_evaluated = opposite_annotators(study, unit)
    for person in (left_evaluated, right_evaluated):
        assignment = assign(unit, person)
        _submit(assignment, "right", side="right")
        api = APIClient()
        api.force_authenticate(person)
        head = api.get(reverse("api-assignment", args=[assignment.pk])).json()["head"]
        assert head["annotation"]["values"] == {"preference": "right"}
        assert head["annotation"]["spans"][0]["snapshot"] == "right"
        assert "sides" not in head["annotation"]
        assert json.dumps(head).lower().count("baseline") == 0
