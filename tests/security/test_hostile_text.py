"""Hostile text on every route that takes free text: a NUL (``\\u0000``, which PostgreSQL
cannot store), an unpaired surrogate (no UTF-8 form, so no digest) and JSON nested 10⁵
deep (DRF's parser would exhaust the recursion) answer 400 with a reason code —
``invalid_text`` or ``too_deep`` — and write nothing. On PostgreSQL, where NUL used to be
a 500."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from annotator.adjudication.jobs import label_submitted
from annotator.adjudication.services import AdjudicationRefused, adjudication_submit
from annotator.labelling.models import Draft, Label, LabelKind
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import (
    AnnotationError,
    LabelRefused,
    assignment_next,
    draft_save,
    label_submit,
)
from audit.archive.models import ImportBatch, Study, UnitState
from audit.archive.records import record_build
from audit.contract import codes
from audit.contract.errors import ContractError
from audit.releases.models import Release
from tests.annotation.annotations import answer_claims, source_risk
from tests.annotation.conftest import add_people, assign, make_study
from tests.archive.builders import HEADER, observation

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]

NUL = "a NUL \x00 here"
SURROGATE = "a lone \ud800 here"
HOSTILE = {"nul": NUL, "surrogate": SURROGATE}
DEEP = "[" * 100_000 + "]" * 100_000
RECORDS_HEADER = {
    "claimgate": "records",
    "format_version": 1,
    "codebook": {"name": "source-risk", "version": "1.0.0"},
}


def deep_body(key: str) -> str:
    """A JSON object whose ``key`` holds arrays nested 10⁵ deep."""
    return '{"' + key + '": ' + DEEP + "}"


def escaped(value: Any) -> str:
    """JSON text as a client sends it: NUL and surrogates as \\u escapes."""
    return json.dumps(value)


@pytest.fixture
def world(db):
    cache.clear()
    study = make_study("hostile", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    assignment = assignment_next(study=study, annotator=people["ann_a"])
    return study, people, assignment


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def client_as(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def nothing_written() -> tuple:
    return (
        Label.objects.count(),
        list(Draft.objects.values_list("pk", "version")),
        Release.objects.count(),
        ImportBatch.objects.count(),
    )


# --- services: the one check pages, API and commands share --------------------------------


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_services_refuse_hostile_text_before_storing_or_hashing(world, kind):
    _, _, assignment = world
    content = unit_content(unit=assignment.unit)
    before = nothing_written()
    with pytest.raises(LabelRefused) as refused:
        label_submit(
            assignment=assignment,
            annotation=source_risk(content, rationale=HOSTILE[kind]),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        )
    assert refused.value.code == codes.INVALID_TEXT
    assert "annotation.rationale" in refused.value.message
    with pytest.raises(AnnotationError) as draft:
        draft_save(assignment=assignment, payload={"note": HOSTILE[kind]}, base_version=None)
    assert draft.value.code == codes.INVALID_TEXT
    assert nothing_written() == before


@pytest.mark.parametrize(
    ("annotation", "code"),
    [
        ({"rationale": NUL}, codes.INVALID_TEXT),
        ({"rationale": SURROGATE}, codes.INVALID_TEXT),
        ({"deep": json.loads("[" * 200 + "]" * 200)}, codes.TOO_DEEP),
    ],
    ids=["nul", "surrogate", "deep"],
)
def test_a_record_is_checked_before_it_is_sealed(world, annotation, code):
    """Sealing computes the digest: hostile text is refused first, with its code, never
    a UnicodeEncodeError or a RecursionError from the serializer."""
    study, _, assignment = world
    with pytest.raises(ContractError) as refused:
        record_build(
            study=study,
            content=unit_content(unit=assignment.unit),
            annotation=annotation,
            parents=[],
        )
    assert refused.value.code == code
    assert "annotation" in refused.value.message


def disputed_unit(study, people):
    """ann_a and ann_b label one unit differently (ann_a's is the world's assignment)."""
    labels = []
    for user, values in ((people["ann_a"], (1, 1, 1, 0)), (people["ann_b"], (0, 1, 1, 0))):
        assignment = assignment_next(study=study, annotator=user)
        label = label_submit(
            assignment=assignment,
            annotation=source_risk(unit_content(unit=assignment.unit), values=values),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        ).label
        label_submitted.run(label.pk)
        labels.append(label)
    unit = labels[0].unit
    unit.refresh_from_db()
    assert unit.state == UnitState.DISPUTED
    return unit, labels


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_adjudication_refuses_hostile_rationale_and_annotation(world, kind):
    study, people, _ = world
    unit, labels = disputed_unit(study, people)
    annotation = dict(labels[0].annotation)
    for bad in (
        {"rationale": HOSTILE[kind], "annotation": annotation},
        {"rationale": "fine", "annotation": {**annotation, "note": HOSTILE[kind]}},
    ):
        with pytest.raises((AdjudicationRefused, LabelRefused)) as refused:
            adjudication_submit(
                unit=unit,
                adjudicator=people["adj"],
                client_submission_id=uuid.uuid4(),
                **bad,
            )
        assert refused.value.code == codes.INVALID_TEXT
    assert not Label.objects.filter(kind=LabelKind.ADJUDICATED).exists()


# --- the API ------------------------------------------------------------------------------


def api_labels(world, text: str | None = None, **annotation_changes: Any):
    _, people, assignment = world
    annotation = {**source_risk(unit_content(unit=assignment.unit)), **annotation_changes}
    body = text or escaped({"annotation": annotation, "client_submission_id": str(uuid.uuid4())})
    return api_as(people["ann_a"]).post(
        f"/api/assignments/{assignment.pk}/labels/", body, content_type="application/json"
    )


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_api_label_with_hostile_rationale_is_400_invalid_text(world, kind):
    before = nothing_written()
    response = api_labels(world, rationale=HOSTILE[kind])
    assert response.status_code == 400, response.content
    assert response.json()["reason"] == codes.INVALID_TEXT
    assert "rationale" in response.json()["message"]
    assert nothing_written() == before


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_api_claim_text_with_hostile_text_is_400_invalid_text(kind):
    cache.clear()
    study = make_study("hostclaims", "answer-claims-1.0.0", "answer-claims.jsonl", overlap=2)
    people = add_people(study)
    # An answer with sources (so its label has a claim), whatever the queue's order.
    unit = next(u for u in study.units.order_by("id") if unit_content(unit=u).sources)
    assignment = assign(unit, people["ann_a"])
    annotation = answer_claims(unit_content(unit=assignment.unit))
    annotation["claims"][0]["reason"] = HOSTILE[kind]
    before = nothing_written()
    response = api_as(people["ann_a"]).post(
        f"/api/assignments/{assignment.pk}/labels/",
        escaped({"annotation": annotation, "client_submission_id": str(uuid.uuid4())}),
        content_type="application/json",
    )
    assert response.status_code == 400, response.content
    assert response.json()["reason"] == codes.INVALID_TEXT
    assert "claims[0].reason" in response.json()["message"]
    assert nothing_written() == before


def test_api_label_nested_1e5_deep_is_400_too_deep(world):
    before = nothing_written()
    response = api_labels(world, text=deep_body("annotation"))
    assert response.status_code == 400
    assert response.json()["reason"] == codes.TOO_DEEP
    assert nothing_written() == before


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (escaped({"payload": {"note": NUL}}), codes.INVALID_TEXT),
        (escaped({"payload": {"note": SURROGATE}}), codes.INVALID_TEXT),
        (escaped({"payload": {NUL: "a key"}}), codes.INVALID_TEXT),
        (deep_body("payload"), codes.TOO_DEEP),
    ],
    ids=["nul", "surrogate", "nul-key", "deep"],
)
def test_api_draft_with_hostile_text_is_400(world, body, reason):
    _, people, assignment = world
    before = nothing_written()
    response = api_as(people["ann_a"]).put(
        f"/api/assignments/{assignment.pk}/draft/", body, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["reason"] == reason
    assert nothing_written() == before


@pytest.mark.parametrize(
    ("route", "body", "reason"),
    [
        ("releases/", escaped({"name": NUL}), codes.INVALID_TEXT),
        ("releases/", escaped({"name": SURROGATE}), codes.INVALID_TEXT),
        ("releases/", deep_body("name"), codes.TOO_DEEP),
        ("partitions/rule/", escaped({"field": "domain", "values": [SURROGATE]}), "invalid_text"),
        ("partitions/rule/", deep_body("values"), codes.TOO_DEEP),
    ],
)
def test_every_json_api_route_refuses_hostile_bodies(world, route, body, reason):
    study, people, _ = world
    before = (nothing_written(), Study.objects.get(pk=study.pk).thresholds)
    response = api_as(people["res"]).post(
        f"/api/studies/{study.slug}/{route}", body, content_type="application/json"
    )
    assert response.status_code == 400, response.content
    assert response.json()["reason"] == reason
    assert (nothing_written(), Study.objects.get(pk=study.pk).thresholds) == before


def test_the_import_api_refuses_an_escaped_nul_in_a_query_and_a_snapshot(world):
    study, people, _ = world
    nul_query = observation(1)
    nul_query["query"]["text"] = "Which router\x00 is best?"
    nul_snapshot = observation(2)
    nul_snapshot["sources"][0]["text"] = "review \x00 text"
    data = (
        b"\n".join(json.dumps(value).encode() for value in (HEADER, nul_query, nul_snapshot))
        + b"\n"
    )
    tuples = study.tuples.count()
    response = api_as(people["res"]).post(
        f"/api/studies/{study.slug}/imports/",
        {"file": _upload(data)},
    )
    assert response.status_code == 400
    assert [(e["line"], e["reason"]) for e in response.json()["errors"]] == [
        (2, codes.INVALID_TEXT),
        (3, codes.INVALID_TEXT),
    ]
    assert study.tuples.count() == tuples


def _upload(data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("obs.jsonl", data, content_type="application/jsonl")


# --- the pages ----------------------------------------------------------------------------


PAGE_BODIES = {
    "nul-escape": lambda annotation: escaped({**annotation, "rationale": NUL}),
    "surrogate-escape": lambda annotation: escaped({**annotation, "rationale": SURROGATE}),
    "raw-nul": lambda annotation: escaped(annotation) + "\x00",
    "deep": lambda annotation: deep_body("rationale"),
}
PAGE_REASONS = {
    "nul-escape": codes.INVALID_TEXT,
    "surrogate-escape": codes.INVALID_TEXT,
    "raw-nul": codes.INVALID_TEXT,
    "deep": codes.TOO_DEEP,
}


@pytest.mark.parametrize("kind", list(PAGE_BODIES))
def test_the_annotation_form_refuses_hostile_text(world, kind):
    _, people, assignment = world
    annotation = source_risk(unit_content(unit=assignment.unit))
    text = PAGE_BODIES[kind](annotation)
    client = client_as(people["ann_a"])
    before = nothing_written()
    submit = client.post(
        f"/assignments/{assignment.pk}/submit",
        {"annotation": text, "client_submission_id": str(uuid.uuid4())},
    )
    draft = client.post(f"/assignments/{assignment.pk}/draft", {"payload": text, "version": "0"})
    for response in (submit, draft):
        assert response.status_code == 400
        assert PAGE_REASONS[kind] in response.content.decode()
    assert nothing_written() == before


@pytest.mark.parametrize("kind", list(PAGE_BODIES))
def test_the_adjudication_form_refuses_hostile_text(world, kind):
    study, people, _ = world
    unit, labels = disputed_unit(study, people)
    annotation = dict(labels[0].annotation)
    client = client_as(people["adj"])
    for data in (
        {"edits": PAGE_BODIES[kind](annotation), "rationale": "fine"},
        {"edits": escaped(annotation), "rationale": NUL},
    ):
        response = client.post(
            f"/adjudicate/{unit.pk}/", {**data, "client_submission_id": str(uuid.uuid4())}
        )
        assert response.status_code == 400
        reason = PAGE_REASONS[kind] if data["rationale"] == "fine" else codes.INVALID_TEXT
        assert reason in response.content.decode()
    assert not Label.objects.filter(kind=LabelKind.ADJUDICATED).exists()


@pytest.mark.parametrize(
    ("text", "sentence"),
    [(escaped({NUL: 0.5}), "holds a NUL character"), ('{"a": ' + DEEP + "}", "levels deep")],
    ids=["nul-key", "deep"],
)
def test_the_thresholds_form_refuses_hostile_text(world, text, sentence):
    """The partitions page names form errors by their sentence (it shows no codes)."""
    study, people, _ = world
    response = client_as(people["res"]).post(
        f"/studies/{study.slug}/partitions/thresholds/", {"thresholds": text}
    )
    assert response.status_code == 400
    assert sentence in response.content.decode()
    assert Study.objects.get(pk=study.pk).thresholds == study.thresholds


# --- the command --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        escaped({**observation(1), "query": {**observation(1)["query"], "text": NUL}}),
        DEEP,
    ],
    ids=["nul-query", "deep"],
)
def test_the_import_command_exits_1_with_the_reason(world, tmp_path, capsys, line):
    study, _, _ = world
    path = tmp_path / "hostile.jsonl"
    path.write_text(escaped(HEADER) + "\n" + line + "\n", encoding="utf-8")
    tuples = study.tuples.count()
    with pytest.raises(SystemExit) as exit_info:
        call_command("import_records", str(path), "--study", study.slug)
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    reason = codes.TOO_DEEP if line == DEEP else codes.INVALID_TEXT
    assert f"{path}:2: {reason}" in err
    assert study.tuples.count() == tuples


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ([DEEP], f":1: {codes.TOO_DEEP}"),
        (
            [escaped(RECORDS_HEADER), escaped({"annotation": {"note": NUL}})],
            f":2: {codes.INVALID_TEXT}",
        ),
        (
            [escaped(RECORDS_HEADER), escaped({"annotation": SURROGATE})],
            f":2: {codes.INVALID_TEXT}",
        ),
        ([escaped(RECORDS_HEADER), DEEP], f":2: {codes.TOO_DEEP}"),
    ],
    ids=["deep-header", "nul-record", "surrogate-record", "deep-record"],
)
def test_the_records_command_exits_1_on_hostile_records(world, tmp_path, capsys, lines, expected):
    study, _, _ = world
    path = tmp_path / "records.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    before = nothing_written()
    with pytest.raises(SystemExit) as exit_info:
        call_command("import_records", str(path), "--study", study.slug)
    assert exit_info.value.code == 1
    assert f"{path}{expected}" in capsys.readouterr().err
    assert nothing_written()[:3] == before[:3]
