"""A release's predictions section: the scored prediction sets in ``predictions.json`` and
the datasheet, the rates on the final labels with intervals in the datasheet, and nothing of
the predictions in a label table."""

from __future__ import annotations

import json

import pytest

from audit.releases import formats as rf
from audit.releases.services import bundle_write, release_build
from metrics.services import predictions_import, report_compute
from tests.metrics.predictions_setup import gold_study, prediction_file

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _few_resamples(settings):
    settings.RELIABILITY_BOOTSTRAP = 200


def test_a_release_carries_the_scored_prediction_sets_and_the_rates(releases_root, tmp_path):
    gold = gold_study("relpred", units=6)
    judge = (1, 0, None, 0, 1, None)
    pairs = [(u.digest, v) for u, v in zip(gold.labelled, judge, strict=True)]
    outcome = predictions_import(
        study=gold.study, data=prediction_file(pairs), file_name="judge.jsonl"
    )
    report_compute(study=gold.study)

    release = release_build(study=gold.study, name="v1")

    directory = releases_root / "relpred" / "v1"
    assert release.status == "ready", release.error
    document = json.loads((directory / rf.PREDICTIONS).read_text())
    (entry,) = document["prediction_sets"]
    assert entry["file_sha256"] == outcome.prediction_set.file_sha256
    scores = entry["scores"]["scores"]
    assert scores["accepted_error"]["numerator"] == 1
    assert rf.PREDICTIONS in release.files
    readme = (directory / rf.README).read_text()
    assert "## Predictions (never labels, never gold)" in readme
    assert "judge judge-x 2026-05, field R_O: 6 units scored" in readme
    assert "alpha 0.500 [" in readme
    assert "(1/2)" in readme
    assert "## Rates on the final labels" in readme
    assert "R_O = 1 (material relationship omitted): sample share 0.500 [" in readme
    assert "prevalence (Hájek)" in readme
    labels = (directory / "labels_final.jsonl").read_text()
    assert "judge-x" not in labels
    # Deterministic: the same study written again gives the same predictions file.
    again = tmp_path / "again"
    bundle_write(study=gold.study, name="v1", directory=again)
    assert (again / rf.PREDICTIONS).read_bytes() == (directory / rf.PREDICTIONS).read_bytes()
