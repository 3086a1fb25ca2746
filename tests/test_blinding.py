"""Blinding, proved by walking the whole site as another annotator.

Annotators A and B work in the same study, on the same unit. A has submitted revisions
and a draft. B requests EVERY URL pattern of the site — enumerated from the resolver, so a
page added later is walked without anyone editing this file — first with A's ids in the
path, then with B's own. Whatever concerns A's objects must answer 403 or 404 (or 405 for
a method the route does not take), exactly as it would for an object that does not exist,
and nothing B can read anywhere may contain A's username, pseudonym, record digests,
draft or rationale, nor the study's overlap or any priority.

A route whose path parameter the walk cannot fill fails the test: teach ``BY_NAME`` or
``BY_SEGMENT`` below what the new parameter means instead of skipping it.
"""

from __future__ import annotations

import itertools
import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import IntegrityError, connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RegexPattern, RoutePattern
from rest_framework.test import APIClient

from annotator.adjudication.jobs import label_submitted
from annotator.labelling.models import Assignment, Draft, Label, LabelSight, SightVia
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import (
    assignment_next,
    draft_save,
    label_submit,
    labels_seen_record,
)
from annotator.memberships.models import Membership, Role
from annotator.memberships.services import pseudonym_of, study_overlap_set
from audit.archive.models import Study, Unit, UnitState
from tests.annotation.annotations import source_risk
from tests.annotation.conftest import add_people, assign, make_study

pytestmark = pytest.mark.django_db

# Routes not walked, each with its reason. Everything else is.
SKIPPED = {
    "admin/": "Django admin: staff only (is_staff), never an annotator's surface",
    "static/": "static files carry no study data",
    "media/": "no uploads are served",
    "accounts/login/": "the login form itself: no study data",
    "accounts/logout/": "would end B's session in the middle of the walk",
    "api/schema/": "the schema describes the API's shapes (field names), no object's data",
    "api/docs/": "the Swagger page only loads the schema",
    "healthz": "process health: database, broker, worker; no study data",
}
METHODS = ("get", "post", "put", "patch", "delete")
ALLOWED_FOR_OTHERS = {403, 404, 405}
# Weights make the priority (DESIGN.md): annotators see neither.
FORBIDDEN_WORDS = ("overlap", "priority", "weight", "assigned_count", "submitted_count")
PRIORITY = 0.731_592_6
A_DRAFT_TEXT = "A-DRAFT-7f3c9e-only-A-may-read-this"
A_RATIONALE = "A-RATIONALE-51be02-second-look"
PLACEHOLDER = re.compile(r"<(?:(?P<converter>\w+):)?(?P<name>\w+)>")
REGEX_GROUP = re.compile(r"\(\?P<(?P<name>\w+)>[^)]*\)")


@dataclass(frozen=True)
class Route:
    route: str  # "api/assignments/<int:assignment_id>/", as Django joins it
    name: str | None


def _route_text(pattern: Any) -> str:
    if isinstance(pattern, RoutePattern):
        return str(pattern)
    if isinstance(pattern, RegexPattern):
        text = pattern.regex.pattern.removeprefix("^").removesuffix("$").removesuffix(r"\Z")
        return REGEX_GROUP.sub(lambda m: f"<{m['name']}>", text)
    raise AssertionError(f"unknown URL pattern type {type(pattern).__name__}: {pattern}")


def all_routes(resolver: URLResolver | None = None, prefix: str = "") -> Iterator[Route]:
    for entry in (resolver or get_resolver()).url_patterns:
        route = prefix + _route_text(entry.pattern)
        if isinstance(entry, URLResolver):
            yield from all_routes(entry, route)
        elif isinstance(entry, URLPattern):
            yield Route(route=route, name=entry.name)


def skip_reason(route: str) -> str | None:
    for prefix, reason in SKIPPED.items():
        if route == prefix or (prefix.endswith("/") and route.startswith(prefix)):
            return reason
    return None


@dataclass
class World:
    study: Any
    a: Any
    b: Any
    a_pseudonym: str
    a_assignments: list[Assignment]
    a_labels: list[Label]
    a_draft: Draft
    b_assignments: list[Assignment]
    b_labels: list[Label]
    batch_id: int


# What a path parameter means, by its name, then (for pk/id) by the segment before it.
# Each maps to (values with the owner's objects, a value naming nothing, owned-by-a-person).
def values_by_name(world: World, owner: str) -> dict[str, tuple[list[Any], Any, bool]]:
    mine = owner == "a"
    user = world.a if mine else world.b
    assignments = world.a_assignments if mine else world.b_assignments
    labels = world.a_labels if mine else world.b_labels
    pseudonym = world.a_pseudonym if mine else pseudonym_of(study=world.study, user=user)
    membership = Membership.objects.get(study=world.study, user=user, role=Role.ANNOTATOR)
    return {
        "slug": ([world.study.slug], "no-such-study", False),
        "study_slug": ([world.study.slug], "no-such-study", False),
        "batch_id": ([world.batch_id], 999_999, False),
        "assignment_id": ([a.pk for a in assignments], 999_999, True),
        "label_id": ([label.pk for label in labels], 999_999, True),
        "record_digest": ([label.record_digest for label in labels], "0" * 64, True),
        "digest": ([label.record_digest for label in labels], "0" * 64, True),
        "unit_id": ([assignments[0].unit_id], 999_999, True),
        "user_id": ([user.pk], 999_999, True),
        "username": ([user.username], "nobody-at-all", True),
        "pseudonym": ([pseudonym], "a-0000000000", True),
        "membership_id": ([membership.pk], 999_999, True),
        # Researchers' pages: B is refused before any prediction set is looked up.
        "prediction_set_id": ([1], 999_999, False),
    }


BY_SEGMENT = {
    "assignments": "assignment_id",
    "labels": "label_id",
    "revisions": "label_id",
    "imports": "batch_id",
    "units": "unit_id",
    "tuples": "unit_id",
    "users": "user_id",
    "people": "user_id",
    "members": "user_id",
    "memberships": "membership_id",
    "studies": "slug",
}


def fill(route: str, world: World, owner: str) -> tuple[list[str], str | None, bool]:
    """Concrete paths for a route with ``owner``'s objects, the same path naming objects
    that do not exist (None when there is no parameter), and whether a parameter names a
    person's object. Raises LookupError for a parameter the walk does not know."""
    table = values_by_name(world, owner)
    choices: list[list[str]] = []
    missing: list[str] = []
    owned = False
    pieces = PLACEHOLDER.split(route)
    # split() yields: literal, converter, name, literal, converter, name, ...
    literals = pieces[0::3]
    names = pieces[2::3]
    for index, name in enumerate(names):
        key = name
        if key not in table:
            segment = literals[index].rstrip("/").rsplit("/", 1)[-1]
            key = BY_SEGMENT.get(segment, key)
        if key not in table:
            raise LookupError(f"{route}: no value for path parameter <{name}>")
        values, absent, personal = table[key]
        owned = owned or personal
        choices.append([str(v) for v in values])
        missing.append(str(absent) if personal else str(values[0]))

    def build(parameters: list[str]) -> str:
        out = literals[0]
        for parameter, literal in zip(parameters, literals[1:], strict=True):
            out += parameter + literal
        return "/" + out

    if any(ch in route for ch in "()[]*+?\\|{"):
        raise LookupError(f"{route}: a regular expression the walk cannot turn into a path")
    paths = [build(list(combo)) for combo in itertools.product(*choices)]
    return paths, (build(missing) if names else None), owned


def request_bodies(world: World, owner: str) -> list[dict[str, Any]]:
    """The most plausible writes: valid for the owner's unit, naming the current draft
    version and head revision, as JSON and as a form."""
    assignments = world.a_assignments if owner == "a" else world.b_assignments
    labels = world.a_labels if owner == "a" else world.b_labels
    annotation = source_risk(unit_content(unit=assignments[0].unit), rationale="walk")
    head = labels[-1].record_digest
    data = {
        "payload": {"note": "overwritten by the walk"},
        "annotation": annotation,
        "client_submission_id": str(uuid.uuid4()),
    }
    form = {
        "payload": json.dumps(data["payload"]),
        "annotation": json.dumps(annotation),
        "client_submission_id": str(uuid.uuid4()),
        "parent_digest": head,
        "version": "1",
    }
    return [
        {
            "data": json.dumps(data),
            "content_type": "application/json",
            "HTTP_IF_MATCH": f'"{head}"',
        },
        {"data": form, "content_type": "application/x-www-form-urlencoded"},
    ]


def send(client: Client, method: str, path: str, body: dict[str, Any] | None) -> Any:
    if method == "get" or body is None:
        return getattr(client, method)(path)
    body = dict(body)
    data = body.pop("data")
    if body["content_type"] == "application/x-www-form-urlencoded":
        from urllib.parse import urlencode

        data = urlencode(data)
    return getattr(client, method)(path, data=data, **body)


def content_of(response: Any) -> str:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content).decode("utf-8", "replace")
    return response.content.decode("utf-8", "replace")


def json_words(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from json_words(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_words(item)
    elif isinstance(value, str):
        yield value


@pytest.fixture
def world(db) -> World:
    cache.clear()
    study = make_study("blind", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    a, b = people["ann_a"], people["ann_b"]
    a.username, b.username = "alice_7c1e_blind", "bob_93fa_blind"
    a.save()
    b.save()
    Unit.objects.filter(study=study).update(priority=PRIORITY)

    first = assignment_next(study=study, annotator=a)
    content = unit_content(unit=first.unit)
    one = label_submit(
        assignment=first,
        annotation=source_risk(content),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label
    two = label_submit(
        assignment=first,
        annotation=source_risk(content, rationale=A_RATIONALE),
        client_submission_id=uuid.uuid4(),
        parent_digest=one.record_digest,
    ).label
    second = assignment_next(study=study, annotator=a)
    draft = draft_save(assignment=second, payload={"note": A_DRAFT_TEXT}, base_version=None)

    b_first = assign(first.unit, b)  # B labels the very unit A labelled
    b_label = label_submit(
        assignment=b_first,
        annotation=source_risk(unit_content(unit=b_first.unit), rationale="B's own"),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label
    b_second = assignment_next(study=study, annotator=b)
    draft_save(assignment=b_second, payload={"note": "B's own draft"}, base_version=None)

    return World(
        study=study,
        a=a,
        b=b,
        a_pseudonym=pseudonym_of(study=study, user=a),
        a_assignments=[first, second],
        a_labels=[one, two],
        a_draft=draft,
        b_assignments=[b_first, b_second],
        b_labels=[b_label],
        batch_id=study.imports.values_list("pk", flat=True).first(),
    )


def secrets_of_a(world: World) -> list[str]:
    return [
        world.a.username,
        world.a_pseudonym,
        A_DRAFT_TEXT,
        A_RATIONALE,
        *(label.record_digest for label in world.a_labels),
        str(PRIORITY),
    ]


def check_body(path: str, method: str, response: Any, world: World, problems: list[str]) -> None:
    text = content_of(response)
    for secret in secrets_of_a(world):
        if secret in text:
            problems.append(f"{method.upper()} {path} -> {response.status_code} shows {secret!r}")
    if "Overlap k" in text:
        problems.append(f"{method.upper()} {path} -> {response.status_code} shows the overlap")
    if "json" in response.get("Content-Type", "") and text:
        words = " ".join(json_words(json.loads(text))).lower()
        for word in FORBIDDEN_WORDS:
            if word in words:
                problems.append(f"{method.upper()} {path}: JSON mentions {word!r}")


def walk(world: World, owner: str) -> tuple[int, list[str], list[str]]:
    """Request every walkable route as B with ``owner``'s ids; the problems found."""
    client = Client()
    client.force_login(world.b)
    problems: list[str] = []
    walked: list[str] = []
    for route in all_routes():
        if skip_reason(route.route):
            continue
        try:
            paths, missing, owned = fill(route.route, world, owner)
        except LookupError as exc:
            problems.append(str(exc))
            continue
        walked.append(route.route)
        for path, method in itertools.product(paths, METHODS):
            bodies = [None] if method == "get" else request_bodies(world, owner)
            for body in bodies:
                cache.clear()  # the walk's own writes must never meet the submit throttle
                response = send(client, method, path, body)
                check_body(path, method, response, world, problems)
                if owner != "a" or not owned:
                    continue
                code = response.status_code
                if code not in ALLOWED_FOR_OTHERS:
                    problems.append(f"{method.upper()} {path} (A's) answered {code} to B")
                    continue
                absent = send(client, method, missing, body).status_code
                if absent != code:
                    problems.append(
                        f"{method.upper()} {path} answers {code} for A's object but {absent} "
                        f"for none ({missing}): the difference tells B it exists"
                    )
    return len(walked), walked, problems


def a_state(world: World) -> tuple:
    return (
        list(Label.objects.filter(annotator=world.a).values_list("record_digest", flat=True)),
        list(Draft.objects.filter(assignment__annotator=world.a).values_list("payload", "version")),
        list(
            Assignment.objects.filter(annotator=world.a).values_list(
                "pk", "unit_id", "submitted_at"
            )
        ),
    )


def test_b_walking_every_route_with_as_ids_learns_nothing_and_changes_nothing(world):
    before = a_state(world)

    count, walked, problems = walk(world, owner="a")

    assert problems == []
    assert a_state(world) == before
    # The walk reaches the annotation API and the annotation pages (sanity, not a list).
    assert "api/assignments/<int:assignment_id>/labels/" in walked
    assert "api/studies/<slug:slug>/assignments/" in walked
    assert count >= 10


def test_b_own_pages_and_api_never_show_a_nor_overlap_nor_priority(world):
    count, _, problems = walk(world, owner="b")
    assert problems == []
    assert count >= 10


def test_every_route_is_walked_or_skipped_with_a_reason(world):
    routes = list(all_routes())
    skipped = {r.route: skip_reason(r.route) for r in routes if skip_reason(r.route)}
    unfillable = []
    for route in routes:
        if route.route in skipped:
            continue
        try:
            fill(route.route, world, "a")
        except LookupError as exc:
            unfillable.append(str(exc))
    assert unfillable == []
    assert all(skipped.values())


# --- People with two roles: nobody labels a unit whose labels they have seen -----------
#
# The attack (issue 11): someone who annotates and adjudicates in one study reads two
# annotators' labels on /adjudicate/<unit>/; the study's overlap is raised; the queue must
# never hand them that unit. The walk below plays every order of "see", "become an
# annotator" and "overlap raised" through every surface that shows labels, draining the
# person's queue through the API after each step, and checks that nothing they have seen
# is ever handed to them.

DISPUTED = (0, 1, 1, 0)  # against (1, 1, 1, 0): I differs
AGREED = (1, 1, 1, 0)  # R_O = 1: CONTEXTUALIZE, so the unit is on the outcomes review list


@dataclass
class TwoRoles:
    study: Any
    a: Any
    b: Any
    c: Any
    res: Any
    dual: Any
    disputed: Any  # both annotators labelled it, differently
    agreed: Any  # both labelled it alike: consensus, proposed for review
    a_label_on_disputed: Label


def _label(
    study: Any, user: Any, values: tuple, *, assignment: Any = None, jobs: bool = True
) -> Label:
    assignment = assignment or assignment_next(study=study, annotator=user)
    label = label_submit(
        assignment=assignment,
        annotation=source_risk(unit_content(unit=assignment.unit), values=values),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label
    if jobs:
        label_submitted.run(label.pk)
    return label


def two_roles_world(viewing_role: str) -> TwoRoles:
    """A study (k = 2) with one disputed and one agreed unit, and ``dual``, who holds
    ``viewing_role`` (adjudicator or researcher) and is not an annotator yet."""
    cache.clear()
    study = make_study("tworoles", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    a, b = people["ann_a"], people["ann_b"]
    a_disputed = _label(study, a, AGREED)
    _label(study, b, DISPUTED)
    _label(study, a, AGREED)
    _label(study, b, AGREED)
    dual = get_user_model().objects.create_user("dual", password="pw")
    Membership.objects.create(study=study, user=dual, role=viewing_role)
    disputed = Unit.objects.get(pk=a_disputed.unit_id)
    agreed = Unit.objects.exclude(pk=disputed.pk).get(study=study, state=UnitState.AGREED)
    assert disputed.state == UnitState.DISPUTED
    return TwoRoles(study, a, b, people["ann_c"], people["res"], dual, disputed, agreed, a_disputed)


def _show_adjudication(world: TwoRoles, client: Client) -> set[int]:
    response = client.get(f"/adjudicate/{world.disputed.pk}/")
    if response.status_code == 403:  # they label it themselves: the page refuses
        return set()
    assert response.status_code == 200
    assert pseudonym_of(study=world.study, user=world.a) in content_of(response)
    return {world.disputed.pk}


def _show_record(world: TwoRoles, client: Client) -> set[int]:
    digest = world.a_label_on_disputed.record_digest
    response = client.get(f"/studies/{world.study.slug}/records/{digest}/")
    assert response.status_code == 200
    assert digest in content_of(response)
    return {world.disputed.pk}


def _show_outcomes_page(world: TwoRoles, client: Client) -> set[int]:
    response = client.get(f"/studies/{world.study.slug}/outcomes/")
    assert response.status_code == 200
    consensus = Label.objects.get(unit=world.agreed, kind="consensus")
    assert consensus.record_digest[:12] in content_of(response)
    return {world.agreed.pk}


def _show_review_csv(world: TwoRoles, client: Client) -> set[int]:
    response = client.get(f"/studies/{world.study.slug}/outcomes/csv/?table=review")
    assert response.status_code == 200
    assert world.agreed.digest in content_of(response)
    return {world.agreed.pk}


def _ready_release(world: TwoRoles) -> str:
    from audit.releases.services import release_build

    name = f"r{uuid.uuid4().hex[:8]}"
    release_build(study=world.study, name=name)
    return name


def _show_release_file(world: TwoRoles, client: Client) -> set[int]:
    name = _ready_release(world)
    # The manifest shows no label: fetching it sees nothing.
    before = LabelSight.objects.filter(user=world.dual).count()
    manifest = client.get(f"/studies/{world.study.slug}/releases/{name}/download/?file=SHA256SUMS")
    assert manifest.status_code == 200
    content_of(manifest)
    assert LabelSight.objects.filter(user=world.dual).count() == before
    response = client.get(
        f"/studies/{world.study.slug}/releases/{name}/download/?file=labels_independent.csv"
    )
    assert response.status_code == 200
    assert world.disputed.digest in content_of(response)
    return _labelled_units(world)


def _show_release_api(world: TwoRoles, client: Client) -> set[int]:
    name = _ready_release(world)
    api = APIClient()
    api.force_authenticate(world.dual)
    response = api.get(f"/api/studies/{world.study.slug}/releases/{name}/file/?name=records.jsonl")
    assert response.status_code == 200
    assert world.disputed.digest in content_of(response)
    return _labelled_units(world)


def _show_release_zip(world: TwoRoles, client: Client) -> set[int]:
    name = _ready_release(world)
    response = client.get(f"/studies/{world.study.slug}/releases/{name}/bundle.zip")
    assert response.status_code == 200
    content_of(response)
    return _labelled_units(world)


def _labelled_units(world: TwoRoles) -> set[int]:
    """The units a release made now holds: every labelled one (none is in the sealed test
    partition here)."""
    return set(Label.objects.filter(study=world.study).values_list("unit_id", flat=True))


SURFACES = {
    "adjudication page": (Role.ADJUDICATOR, _show_adjudication),
    "record page": (Role.RESEARCHER, _show_record),
    "outcomes page": (Role.RESEARCHER, _show_outcomes_page),
    "outcomes review csv": (Role.RESEARCHER, _show_review_csv),
    "release file (page)": (Role.RESEARCHER, _show_release_file),
    "release file (API)": (Role.RESEARCHER, _show_release_api),
    "release zip": (Role.RESEARCHER, _show_release_zip),
}
EVENTS = ("see", "become annotator", "raise overlap")
# Every order for the attack's own surface; for the others, seeing first and seeing last
# (each case builds and labels a study, and the orders in between add no new path there).
WALK = [
    *(("adjudication page", order) for order in itertools.permutations(EVENTS)),
    *(
        (surface, order)
        for surface in SURFACES
        if surface != "adjudication page"
        for order in (EVENTS, (*EVENTS[1:], EVENTS[0]))
    ),
]


def _drain(world: TwoRoles, seen_now: set[int], handed: list[int]) -> None:
    """Ask the API for the next unit until nothing is left, labelling each one; a unit
    whose labels ``dual`` has been shown must never come."""
    api = APIClient()
    api.force_authenticate(world.dual)
    for _ in range(100):
        cache.clear()
        response = api.post(f"/api/studies/{world.study.slug}/assignments/next/")
        if response.status_code == 204:
            return
        assert response.status_code in (200, 201), response.content
        assignment = Assignment.objects.get(pk=response.json()["id"])
        sighted = set(LabelSight.objects.filter(user=world.dual).values_list("unit_id", flat=True))
        assert assignment.unit_id not in sighted | seen_now, "handed a unit whose labels it saw"
        handed.append(assignment.unit_id)
        _label(world.study, world.dual, AGREED, assignment=assignment, jobs=False)
    raise AssertionError("the queue never ran dry")


def _people_page(world: TwoRoles, data: dict[str, Any]) -> None:
    client = Client()
    client.force_login(world.res)
    response = client.post(f"/studies/{world.study.slug}/people/", data)
    assert response.status_code == 302, content_of(response)


@pytest.mark.parametrize(
    ("surface", "order"), WALK, ids=[f"{s}: {' then '.join(o)}" for s, o in WALK]
)
def test_whatever_the_order_nobody_is_handed_a_unit_whose_labels_they_saw(surface, order):
    role, show = SURFACES[surface]
    world = two_roles_world(role)
    client = Client()
    client.force_login(world.dual)
    seen: set[int] = set()
    handed: list[int] = []
    handed_before_seeing: set[int] = set()
    for event in order:
        if event == "see":
            handed_before_seeing = set(handed)
            seen = show(world, client)
        elif event == "become annotator":
            _people_page(
                world, {"action": "member-add", "username": "dual", "role": Role.ANNOTATOR}
            )
        else:
            _people_page(world, {"action": "overlap-set", "overlap": "3"})
        if Role.ANNOTATOR in set(
            Membership.objects.filter(user=world.dual).values_list("role", flat=True)
        ):
            _drain(world, seen, handed)

    sighted = set(LabelSight.objects.filter(user=world.dual).values_list("unit_id", flat=True))
    assert seen <= sighted
    # Whatever dual labelled, they labelled blind: before seeing, or a unit never seen.
    after_seeing = handed[len(handed_before_seeing) :] if "see" in order else handed
    assert not set(after_seeing) & sighted
    labelled = set(
        Label.objects.filter(annotator=world.dual, kind="independent").values_list(
            "unit_id", flat=True
        )
    )
    assert labelled & sighted <= handed_before_seeing
    if order[0] == "see":
        assert seen
        assert not labelled & seen


def test_the_attack_an_annotator_adjudicator_never_gets_the_unit_they_adjudicated():
    """As reported: annotator and adjudicator in one study, reads both annotators' labels
    on /adjudicate/<unit>/, the overlap is raised; the queue (API and page) never hands
    that unit back, and a third annotator, still blind to it, gets the free slot."""
    world = two_roles_world(Role.ADJUDICATOR)
    Membership.objects.create(study=world.study, user=world.dual, role=Role.ANNOTATOR)
    client = Client()
    client.force_login(world.dual)
    page = client.get(f"/adjudicate/{world.disputed.pk}/")
    assert page.status_code == 200
    for author in (world.a, world.b):
        assert pseudonym_of(study=world.study, user=author) in content_of(page)
    _people_page(world, {"action": "overlap-set", "overlap": "3"})

    handed: list[int] = []
    _drain(world, {world.disputed.pk}, handed)
    assert world.disputed.pk not in handed
    assert world.agreed.pk in handed  # seen by nobody: a third label is welcome
    # The page's "next item" agrees: nothing is left for them.
    nothing = client.post(f"/studies/{world.study.slug}/annotate/")
    assert nothing.status_code == 302
    assert nothing.url == f"/studies/{world.study.slug}/annotate/"
    assert not Assignment.objects.filter(annotator=world.dual, unit=world.disputed).exists()
    # The slot stays open for someone who has not seen the labels.
    study = Study.objects.get(pk=world.study.pk)  # overlap 3 now
    for _ in range(100):
        taken = assignment_next(study=study, annotator=world.c)
        assert taken is not None, "the third slot of the disputed unit was never handed out"
        if taken.unit_id == world.disputed.pk:
            break
        _label(study, world.c, AGREED, assignment=taken, jobs=False)


def test_seeing_a_release_gives_back_an_unfinished_slot_and_refuses_revisions():
    """Annotator and researcher: their unfinished assignment on a unit whose labels a
    release download shows them is given back (the draft with it), their labels already
    made on such a unit may not be revised, and nothing of theirs is written."""
    world = two_roles_world(Role.RESEARCHER)
    Membership.objects.create(study=world.study, user=world.dual, role=Role.ANNOTATOR)
    study_overlap_set(study=world.study, overlap=3)
    # dual labels the disputed unit blind, then holds the agreed one unfinished (assigned
    # directly: dual's own order need not reach them in this order).
    labelled = _label(
        world.study, world.dual, AGREED, assignment=assign(world.disputed, world.dual)
    )
    held = assign(world.agreed, world.dual)
    draft_save(assignment=held, payload={"note": "half done"}, base_version=None)
    count_before = Unit.objects.get(pk=world.agreed.pk).assigned_count

    client = Client()
    client.force_login(world.dual)
    name = _ready_release(world)
    response = client.get(f"/studies/{world.study.slug}/releases/{name}/bundle.zip")
    assert response.status_code == 200
    content_of(response)

    assert not Assignment.objects.filter(pk=held.pk).exists()
    assert not Draft.objects.filter(assignment_id=held.pk).exists()
    assert Unit.objects.get(pk=world.agreed.pk).assigned_count == count_before - 1
    again = assignment_next(study=world.study, annotator=world.dual)
    assert again is None or again.unit_id not in {world.agreed.pk, world.disputed.pk}

    api = APIClient()
    api.force_authenticate(world.dual)
    labels_before = Label.objects.count()
    cache.clear()
    revision = api.post(
        f"/api/assignments/{labelled.assignment_id}/labels/",
        {
            "annotation": source_risk(unit_content(unit=world.disputed), values=DISPUTED),
            "client_submission_id": str(uuid.uuid4()),
        },
        format="json",
        HTTP_IF_MATCH=f'"{labelled.record_digest}"',
    )
    assert revision.status_code == 400, revision.content
    assert revision.json()["reason"] == "labels_seen"
    assert Label.objects.count() == labels_before


def test_the_queue_excludes_seen_units_with_an_anti_join_in_a_fixed_number_of_queries():
    world = two_roles_world(Role.RESEARCHER)
    Membership.objects.create(study=world.study, user=world.dual, role=Role.ANNOTATOR)
    study_overlap_set(study=world.study, overlap=3)

    def next_queries() -> list[str]:
        with CaptureQueriesContext(connection) as queries, transaction.atomic():
            taken = assignment_next(study=world.study, annotator=world.dual)
            transaction.set_rollback(True)
        assert taken is not None
        return [query["sql"] for query in queries.captured_queries]

    few = next_queries()
    every_unit = Unit.objects.filter(study=world.study).exclude(pk=world.agreed.pk)
    labels_seen_record(user=world.dual, units=every_unit, via=SightVia.RELEASE)
    many = next_queries()
    assert len(many) == len(few)
    walks = [sql for sql in many if 'FROM "audit_unit"' in sql and "assigned_count" in sql]
    assert walks, many
    anti_join = re.compile(r'NOT \(*EXISTS\(SELECT .* FROM "annotator_labelsight"')
    assert all(anti_join.search(sql) for sql in walks), walks
    assert assignment_next(study=world.study, annotator=world.dual).unit_id == world.agreed.pk


def test_a_sighting_is_never_updated_nor_deleted():
    world = two_roles_world(Role.ADJUDICATOR)
    labels_seen_record(user=world.dual, units=[world.disputed.pk], via=SightVia.ADJUDICATION)
    labels_seen_record(user=world.dual, units=[world.disputed.pk], via=SightVia.RECORD)
    sight = LabelSight.objects.get(user=world.dual)
    assert sight.via == SightVia.ADJUDICATION  # the first sighting is kept
    for write in (
        lambda: LabelSight.objects.filter(pk=sight.pk).update(via=SightVia.RELEASE),
        lambda: LabelSight.objects.filter(pk=sight.pk).delete(),
    ):
        with pytest.raises(IntegrityError), transaction.atomic():
            write()
    assert LabelSight.objects.filter(user=world.dual).count() == 1
