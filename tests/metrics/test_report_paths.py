"""The report's two fetch paths and its NumPy form give the same report as the plain one:
the server-side read (PostgreSQL) and the ORM's iterator (SQLite, the embedded default)
on the same labels; code arrays passed to ``summarize`` and the category strings; the
streamed labels digest and ``canonical_digest``."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from annotator.adjudication.jobs import label_submitted
from annotator.adjudication.services import adjudication_submit
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit.archive.models import Partition, Unit
from audit.contract.canonical import canonical_digest
from metrics import reliability, selectors
from metrics.matrices import (
    Matrix,
    U,
    UnitDomains,
    heads_from_rows,
    labels_digest_input,
    labels_digest_of,
)
from metrics.report_build import _confusion, _summary, _unresolved, finite, report_build
from tests.annotation.annotations import answer_claims, source_risk
from tests.annotation.conftest import add_people, make_study

# --- pure: the NumPy form is the plain form -----------------------------------------------


def test_the_streamed_labels_digest_is_the_canonical_digest():
    digests = ["b" * 64, "a" * 64, 'quote"d', "back\\slash", "été", "tab\tx", "0" * 64]
    assert labels_digest_of(digests) == canonical_digest(labels_digest_input(digests))
    assert labels_digest_of([]) == canonical_digest([])


def _row(pk, unit, annotator, revision, *values, digest=None, codebook="cb", assisted=False):
    return (pk, unit, annotator, revision, digest or f"d{pk}", codebook, assisted, *values)


def test_heads_keep_each_annotators_latest_revision_by_revision_then_id():
    rows = [
        _row(1, 10, 7, 1, "0"),
        _row(2, 10, 7, 2, "1"),  # the latest of (10, 7)
        _row(3, 10, 8, 1, None),
        _row(5, 11, 8, 1, "1"),
        _row(4, 11, 8, 1, "0"),  # same revision: the higher id (5) wins
        _row(6, 11, None, 1, "1"),  # a deleted account is a coder of its own
    ]
    names = {7: "p-b", 8: "p-a", None: "user-None"}
    heads = heads_from_rows([rows[:2], rows[2:]], n_items=1, coder_of=names.__getitem__)
    assert [(h.unit_id, h.coder, h.record_digest, h.values) for h in heads] == [
        (10, "p-a", "d3", (U,)),
        (10, "p-b", "d2", ("1",)),
        (11, "p-a", "d5", ("1",)),
        (11, "user-None", "d6", ("1",)),
    ]


def test_equal_keys_of_different_types_stay_different_categories():
    # 1 == True as dict keys, but "1" and "true" are different categories (SQLite, JSON).
    rows = [_row(1, 1, 1, 1, 1), _row(2, 1, 2, 1, True), _row(3, 2, 1, 1, None)]
    heads = heads_from_rows([rows], n_items=1, coder_of=str)
    assert [h.values[0] for h in heads] == ["1", "true", U]


def _plain_summary(data, clusters):
    """A summary the plain way: category strings, cluster names."""
    return finite(
        reliability.summarize(data, level="nominal", clusters=clusters, n_boot=60, seed=3)
    )


def _plain_pairs(data):
    first, second = [], []
    for a in range(len(data)):
        for b in range(a + 1, len(data)):
            for x, y in zip(data[a], data[b], strict=True):
                if x is not None and y is not None:
                    first.append(x)
                    second.append(y)
    return first, second


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_code_arrays_give_the_same_coefficients_intervals_and_tables_as_strings(seed):
    rng = np.random.default_rng(seed)
    coders, n_units = ("p-a", "p-b", "p-c"), 300
    pool = ["0", "1", "2", U, None]
    data = [[pool[i] for i in rng.integers(0, 5, n_units)] for _ in coders]
    data[2][:40] = [U] * 40
    domains = ["news", "health", "", "shop"]
    names = [domains[i] for i in rng.integers(0, 4, n_units)]
    units = list(range(100, 100 + n_units))
    clusters = UnitDomains.of(units, names).clusters(np.array(units))
    matrix = Matrix.of_values(coders, units, clusters, data)
    assert matrix.data == data

    assert _summary(matrix, u_missing=False, n_boot=60, seed=3) == _plain_summary(data, names)
    missing = [[None if v == U else v for v in row] for row in data]
    assert _summary(matrix, u_missing=True, n_boot=60, seed=3) == _plain_summary(missing, names)
    first, second = _plain_pairs(data)
    grid, categories = reliability.confusion_matrix(first, second)
    assert _confusion(matrix) == {
        "matrix": grid.tolist(),
        "categories": categories,
        "pairs": len(first),
    }
    coverage = reliability.unresolved_coverage(data, unresolved=U)
    assert _unresolved(matrix) == [
        {**row, "coder": coder} for coder, row in zip(coders, coverage, strict=True)
    ]


# --- the database paths ---------------------------------------------------------------------


def _submit(study, user, annotation_of, parent=None, assignment=None):
    assignment = assignment or assignment_next(study=study, annotator=user)
    label = label_submit(
        assignment=assignment,
        annotation=annotation_of(unit_content(unit=assignment.unit)),
        client_submission_id=uuid.uuid4(),
        parent_digest=parent,
    ).label
    label_submitted.run(label.pk)
    return label


def _source_risk_study():
    study = make_study("paths", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)
    people = add_people(study)
    a, b = people["ann_a"], people["ann_b"]
    values = [
        ((1, 1, 1, 0), (1, None, 1, 0)),
        ((0, 1, 1, 0), (1, 1, 1, 0)),
        ((1, 1, 0, 0), (1, 1, 0, 0)),
        ((1, None, None, 1), (0, 1, 1, 1)),
    ]
    labels = []
    for first, second in values:
        labels.append(_submit(study, a, lambda c, v=first: source_risk(c, values=v)))
        labels.append(_submit(study, b, lambda c, v=second: source_risk(c, values=v)))
    revised = labels[0]
    _submit(
        study,
        a,
        lambda c: source_risk(c, values=(0, 0, 1, 0)),
        parent=revised.record_digest,
        assignment=revised.assignment,
    )
    adjudication_submit(
        unit=Unit.objects.get(pk=labels[2].unit_id),
        adjudicator=people["adj"],
        annotation=labels[2].annotation,
        rationale="checked",
        client_submission_id=uuid.uuid4(),
    )
    Unit.objects.filter(pk=labels[6].unit_id).update(partition=Partition.TEST)
    return study


def _answer_claims_study():
    study = make_study("pathc", "answer-claims-1.0.0", "answer-claims.jsonl")
    people = add_people(study)
    for _ in range(2):
        for who in ("ann_a", "ann_b"):
            _submit(study, people[who], answer_claims)
    return study


def _report(study, monkeypatch, chunks):
    monkeypatch.setattr(selectors, "_chunks", chunks)
    inputs = selectors.report_inputs_fetch(study=study)
    return (
        report_build(inputs, n_boot=50, seed=1),
        [(h.unit_id, h.coder, h.record_digest, h.values) for h in inputs.heads],
        selectors.labels_digest(study=study),
    )


@pytest.mark.django_db
@pytest.mark.parametrize("make", [_source_risk_study, _answer_claims_study])
def test_the_orm_path_reads_the_labels_a_report_uses(make, monkeypatch):
    study = make()
    report, heads, digest = _report(study, monkeypatch, selectors._chunks_orm)
    assert report["labels"] == len(heads) > 0
    assert report["labels_digest"] == digest
    assert report["versions"][0]["groups"][0]["items"]


@pytest.mark.postgres
@pytest.mark.django_db
@pytest.mark.parametrize("make", [_source_risk_study, _answer_claims_study])
def test_the_server_side_path_gives_the_orm_paths_report(make, monkeypatch):
    study = make()
    orm = _report(study, monkeypatch, selectors._chunks_orm)
    server = _report(study, monkeypatch, selectors._chunks_server)
    assert server == orm
