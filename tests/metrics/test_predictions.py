"""Prediction files against the final labels of a frozen study: the import (atomic, reason
codes, idempotent), the scores, and that predictions never become labels or gold. Through
the service, the command, the pages and the API."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from annotator.labelling.models import Label
from audit.contract import codes
from audit.ledger.models import LedgerEntry
from metrics import predictions as p
from metrics.models import Prediction, PredictionSet
from metrics.selectors import labels_digest
from metrics.services import (
    PredictionsRefused,
    prediction_set_refuse_as_gold,
    predictions_import,
)
from tests.metrics.predictions_setup import gold_study, prediction_file

pytestmark = pytest.mark.django_db

# Gold R_O of the nine labelled units: 1, 0, U, 1, 0, U, 1, 0, U. The judge says:
#   gold 0 (units 1, 4, 7): 0, 1, 0   gold 1 (0, 3, 6): 1, 0, 1   gold U (2, 5, 8): U, 0, 1
# Confusion (rows gold 0, 1, U; columns predicted 0, 1, U): [2 1 0] [1 2 0] [1 1 1].
# Accuracy 5/9; p_e = (3·4 + 3·4 + 3·1)/81 = 1/3, kappa = (5/9 - 1/3)/(2/3) = 1/3.
# A gate that passes 0: alpha = gold 1 passed / gold 1 = 1/3; beta = gold 0 blocked = 1/3.
JUDGE = (1, 0, None, 0, 1, 0, 1, 0, 1)


@pytest.fixture
def gold():
    return gold_study()


def _judge_file(gold, **options) -> bytes:
    pairs = [(unit.digest, value) for unit, value in zip(gold.labelled, JUDGE, strict=True)]
    pairs.append((gold.unlabelled[0].digest, 1))  # no final label yet: counted apart
    return prediction_file(pairs, **options)


def test_a_judge_file_is_imported_and_scored_against_the_final_labels(gold):
    outcome = predictions_import(study=gold.study, data=_judge_file(gold), file_name="j.jsonl")

    assert outcome.created
    assert outcome.error_count == 0
    prediction_set = outcome.prediction_set
    assert (prediction_set.kind, prediction_set.field, prediction_set.positive) == (
        "judge",
        "R_O",
        0,
    )
    assert Prediction.objects.filter(prediction_set=prediction_set).count() == 10
    result = prediction_set.scores
    assert (result["predicted"], result["scored"], result["awaiting_final"]) == (10, 9, 1)
    scores = result["scores"]
    assert scores["categories"] == [0, 1, None]
    assert scores["confusion"] == [[2, 1, 0], [1, 2, 0], [1, 1, 1]]
    assert (scores["accuracy"]["numerator"], scores["accuracy"]["denominator"]) == (5, 9)
    assert scores["kappa"]["value"] == pytest.approx(1 / 3)
    alpha, beta = scores["accepted_error"], scores["false_block"]
    assert (alpha["numerator"], alpha["denominator"]) == (1, 3)
    assert (beta["numerator"], beta["denominator"]) == (1, 3)
    assert alpha["low"] <= alpha["value"] <= alpha["high"]
    assert scores["clusters"] == result["domains"]
    assert len(prediction_set.gold_digest) == 64


def test_the_same_file_again_changes_nothing(gold):
    first = predictions_import(study=gold.study, data=_judge_file(gold), file_name="j.jsonl")
    again = predictions_import(study=gold.study, data=_judge_file(gold), file_name="j.jsonl")
    assert not again.created
    assert again.prediction_set.pk == first.prediction_set.pk
    assert PredictionSet.objects.count() == 1


def test_every_bad_line_is_listed_and_nothing_is_imported(gold):
    units = gold.labelled
    data = prediction_file(
        [
            (units[0].digest, 1),
            (units[1].digest, True),  # line 3: a boolean is not 1
            (units[2].digest, "U"),  # line 4: "U" is not null
            ("0" * 64, 0),  # line 5: not a unit of the study
            (units[0].digest, 0),  # line 6: twice
            ("short", 0),  # line 7: not a digest
        ]
    )
    outcome = predictions_import(study=gold.study, data=data, file_name="bad.jsonl")

    assert outcome.prediction_set is None
    found = [(problem.line, problem.reason) for problem in outcome.problems]
    assert found == [
        (3, p.INVALID_VALUE),
        (4, p.INVALID_VALUE),
        (5, p.UNKNOWN_UNIT),
        (6, p.DUPLICATE_UNIT),
        (7, codes.INVALID_FIELD),
    ]
    assert "field R_O" in outcome.problems[0].message
    assert outcome.error_count == 5
    assert not PredictionSet.objects.exists()
    assert not Prediction.objects.exists()


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"codebook": ("answer-claims", "1.0.0")}, codes.CODEBOOK_MISMATCH),
        ({"field": "priority"}, p.UNKNOWN_PREDICTION_FIELD),
        ({"kind": "oracle"}, codes.INVALID_FIELD),
        ({"positive": "pass"}, p.INVALID_POSITIVE),
        ({"header": {"claimgate": "observations"}}, codes.MISSING_HEADER),
    ],
)
def test_a_bad_header_refuses_the_file(gold, options, reason):
    data = prediction_file([(gold.labelled[0].digest, 1)], **options)
    outcome = predictions_import(study=gold.study, data=data, file_name="h.jsonl")
    assert [(x.line, x.reason) for x in outcome.problems] == [(1, reason)]


def test_a_study_that_is_not_frozen_takes_no_predictions(db):
    unfrozen = gold_study("notfrozen", units=3, freeze=False)
    data = prediction_file([(unfrozen.labelled[0].digest, 1)])
    outcome = predictions_import(study=unfrozen.study, data=data, file_name="p.jsonl")
    assert [(x.line, x.reason) for x in outcome.problems] == [(0, p.STUDY_NOT_FROZEN)]


def test_empty_and_header_only_files_are_refused(gold):
    empty = predictions_import(study=gold.study, data=b"", file_name="e.jsonl")
    assert [x.reason for x in empty.problems] == [codes.EMPTY_FILE]
    only = predictions_import(study=gold.study, data=prediction_file([]), file_name="h.jsonl")
    assert [x.reason for x in only.problems] == [p.NO_PREDICTIONS]


def test_predictions_never_become_labels_ledger_entries_or_gold(gold):
    before = (Label.objects.count(), LedgerEntry.objects.count(), labels_digest(study=gold.study))
    outcome = predictions_import(study=gold.study, data=_judge_file(gold), file_name="j.jsonl")
    after = (Label.objects.count(), LedgerEntry.objects.count(), labels_digest(study=gold.study))
    assert after == before
    with pytest.raises(PredictionsRefused) as caught:
        prediction_set_refuse_as_gold(prediction_set=outcome.prediction_set)
    assert caught.value.code == p.PREDICTIONS_NOT_GOLD
    assert "automated judge" in caught.value.message


def test_a_verdict_field_of_an_answer_study_takes_booleans():
    fields = p.prediction_fields("answer", {"verdicts": [{"key": "cited", "label": "Cites"}]})
    assert p.value_check(fields["cited"], True) is True
    with pytest.raises(p.PredictionLineError) as caught:
        p.value_check(fields["cited"], 1)
    assert caught.value.code == p.INVALID_VALUE


# --- interfaces ------------------------------------------------------------------------------


def test_the_command_imports_and_prints_alpha_and_beta(gold, tmp_path):
    path = tmp_path / "judge.jsonl"
    path.write_bytes(_judge_file(gold))
    out = io.StringIO()
    call_command("import_predictions", gold.study.slug, str(path), stdout=out)
    text = out.getvalue()
    assert "10 units, 9 scored, 1 awaiting a final label" in text
    assert "alpha (accepted error): 0.333" in text
    assert "(1/3)" in text
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(prediction_file([("0" * 64, 1)]))
    err = io.StringIO()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_predictions", gold.study.slug, str(bad), stderr=err)
    assert "line 2: unknown_unit" in err.getvalue()


def test_the_pages_import_show_and_download_a_prediction_set(gold, django_assert_max_num_queries):
    client = Client()
    client.force_login(gold.people["res"])
    url = reverse("study-predictions", args=[gold.study.slug])
    upload = io.BytesIO(_judge_file(gold))
    upload.name = "judge.jsonl"
    response = client.post(url, {"file": upload})
    assert response.status_code == 302
    prediction_set = PredictionSet.objects.get()
    detail = reverse("study-prediction", args=[gold.study.slug, prediction_set.pk])
    assert response["Location"] == detail
    with django_assert_max_num_queries(12):
        page = client.get(detail)
    html = page.content.decode()
    assert "Accepted-error rate α" in html
    assert "False-block rate β" in html
    assert '<strong class="counts">1/3</strong> = 0.333' in html  # small n: counts first
    listing = client.get(url).content.decode()
    assert "judge-x 2026-05" in listing
    csv = client.get(reverse("study-prediction-csv", args=[gold.study.slug, prediction_set.pk]))
    body = csv.content.decode()
    assert "accepted_error_alpha,0,0.3333333333333333" in body
    assert "confusion,gold=U predicted=U,1" in body


def test_the_page_lists_every_bad_line(gold):
    client = Client()
    client.force_login(gold.people["res"])
    upload = io.BytesIO(prediction_file([("0" * 64, 1), (gold.labelled[0].digest, "U")]))
    upload.name = "bad.jsonl"
    response = client.post(reverse("study-predictions", args=[gold.study.slug]), {"file": upload})
    assert response.status_code == 400
    html = response.content.decode()
    assert "2 problems in" in html
    assert "unknown_unit" in html
    assert "invalid_value" in html


def test_annotators_never_see_predictions(gold):
    client = Client()
    client.force_login(gold.people["ann_a"])
    response = client.get(reverse("study-predictions", args=[gold.study.slug]))
    assert response.status_code in (403, 404)


def test_the_api_imports_and_reads_a_prediction_set(gold):
    token = Token.objects.create(user=gold.people["res"])
    client = Client(HTTP_AUTHORIZATION=f"Token {token.key}")
    url = f"/api/studies/{gold.study.slug}/predictions/"
    upload = io.BytesIO(_judge_file(gold))
    upload.name = "judge.jsonl"
    created = client.post(url, {"file": upload})
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["scores"]["scores"]["false_block"]["denominator"] == 3
    read = client.get(f"{url}{body['id']}/")
    assert read.status_code == 200
    assert read.json()["field"] == "R_O"
    bad = io.BytesIO(prediction_file([("0" * 64, 1)]))
    bad.name = "bad.jsonl"
    refused = client.post(url, {"file": bad})
    assert refused.status_code == 400
    errors = refused.json()["errors"]
    assert [(e["line"], e["reason"]) for e in errors] == [(2, "unknown_unit")]
    assert refused.json()["error_count"] == 1
    assert client.get(f"{url}999999/").status_code == 404


def test_an_answer_verdict_is_scored_against_the_final_verdicts(db):
    import uuid

    from annotator.adjudication.jobs import label_submitted
    from annotator.labelling.selectors import unit_content
    from annotator.labelling.services import assignment_next, label_submit
    from audit.archive.models import Unit
    from audit.partitions.services import study_freeze
    from tests.annotation.annotations import answer_claims
    from tests.annotation.conftest import add_people, make_study

    study = make_study("predclaims", "answer-claims-1.0.0", "answer-claims.jsonl")
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
    Unit.objects.filter(study=study).update(partition="calibration")
    study_freeze(study=study, user=people["res"])
    units = list(Unit.objects.filter(study=study).order_by("id"))
    data = prediction_file(
        [(unit.digest, False) for unit in units],
        field="cited",
        kind="system",
        positive=True,
        codebook=("answer-claims", "1.0.0"),
    )
    outcome = predictions_import(study=study, data=data, file_name="system.jsonl")

    result = outcome.prediction_set.scores
    assert result["scored"] == 1  # the one answer both annotators labelled alike
    assert result["awaiting_final"] == len(units) - 1
    scores = result["scores"]
    assert scores["categories"] == [False, True, None]
    assert scores["confusion"] == [[0, 0, 0], [1, 0, 0], [0, 0, 0]]  # gold true, said false
    assert scores["false_block"]["numerator"] == 1
    with pytest.raises(PredictionsRefused) as caught:
        prediction_set_refuse_as_gold(prediction_set=outcome.prediction_set)
    assert "a system's values" in caught.value.message


def test_a_codebook_of_fields_predicts_its_derived_values_and_fields():
    definition = json.loads(
        (
            Path(__file__).resolve().parents[2] / "fixtures" / "codebooks" / "toxicity-1.0.0.json"
        ).read_text(encoding="utf-8")
    )
    fields = p.prediction_fields("answer", definition)
    assert list(fields) == ["acceptable", "civility", "target", "harmful"]
    assert p.value_check(fields["civility"], 2) == 2
    assert p.value_check(fields["target"], "group") == "group"
    assert p.value_check(fields["acceptable"], False) is False
    with pytest.raises(p.PredictionLineError):
        p.value_check(fields["civility"], 3)
    engine = p.prediction_engine("answer", definition)
    final = {"values": {"civility": 0, "target": None, "harmful": True}}
    assert p.final_value(final, "acceptable", engine) is False
    assert p.final_value(final, "civility", engine) == 0
    assert p.final_value(final, "target", engine) is None


def test_the_first_tuple_codebook_predicts_r_o_then_its_judgments():
    engine = p.prediction_engine("tuple", {})
    assert list(p.prediction_fields("tuple", {})) == ["R_O", "I", "A", "M", "D", "passage_support"]
    final = {"predicates": {"I": 1, "A": 1, "M": 1, "D": 0}, "passage_support": True}
    assert p.final_value(final, "R_O", engine) == 1
    assert p.final_value(final, "passage_support", engine) is None  # true is not 1
    assert p.final_value({"predicates": {"I": 1, "A": "1", "M": 1, "D": 0}}, "R_O", engine) is None
