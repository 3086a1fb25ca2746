"""Reasons required wherever the codebook says (issue 14 item 5): by default every
answer-level verdict and every verifiable claim of an `answer-claims` label, refused at
submission with ``reason_missing``; pure checks here, the submission paths below."""

from __future__ import annotations

import copy
import uuid

import pytest

from annotator.labelling.selectors import unit_content
from annotator.labelling.services import LabelRefused, label_submit
from audit.contract import ContractError, codebook_from_dict, codes
from audit.contract.codebook import reasons_missing
from tests.annotation.annotations import answer_claims
from tests.annotation.conftest import add_people, assign, make_study
from tests.contract.factories import answer_claims_codebook, source_risk_codebook


def annotation() -> dict:
    claim = {"id": "c1", "kind": "verifiable", "reason": "the source says so"}
    opinion = {"id": "c2", "kind": "not_truth_apt", "reason": None}
    verdicts = {
        key: {"value": True, "reason": f"{key}: checked"}
        for key in ("cited", "supported", "accurate", "timely", "relevant", "complete")
    }
    return {"claims": [claim, opinion], "verdicts": verdicts}


def test_answer_codebooks_require_reasons_by_default_and_may_say_otherwise():
    assert codebook_from_dict(answer_claims_codebook()).reasons_required
    assert not codebook_from_dict(
        {**answer_claims_codebook(), "reasons": "optional"}
    ).reasons_required
    assert not codebook_from_dict(source_risk_codebook()).reasons_required
    with pytest.raises(ContractError) as refused:
        codebook_from_dict({**answer_claims_codebook(), "reasons": "sometimes"})
    assert refused.value.code == codes.INVALID_FIELD


def test_a_blank_verdict_or_verifiable_claim_reason_is_named():
    codebook = codebook_from_dict(answer_claims_codebook())
    assert reasons_missing(annotation(), codebook) is None  # an opinion needs none
    blank = annotation()
    blank["verdicts"]["timely"]["reason"] = "  "
    assert "verdict timely needs a reason" in reasons_missing(blank, codebook)
    unreasoned = annotation()
    unreasoned["claims"][0]["reason"] = None
    assert "claim c1 needs a reason" in reasons_missing(unreasoned, codebook)
    optional = codebook_from_dict({**answer_claims_codebook(), "reasons": "optional"})
    assert reasons_missing(blank, optional) is None
    failed = {"claims": [], "verdicts": None}
    assert reasons_missing(failed, codebook) is None


@pytest.mark.django_db
def test_a_label_without_a_verdict_reason_is_refused_at_submission():
    study = make_study("reasons", "answer-claims-1.0.0", "answer-claims.jsonl")
    people = add_people(study)
    unit = next(u for u in study.units.order_by("id") if unit_content(unit=u).sources)
    good = answer_claims(unit_content(unit=unit))
    bad = copy.deepcopy(good)
    bad["verdicts"]["complete"]["reason"] = ""
    assignment = assign(unit, people["ann_a"])
    with pytest.raises(LabelRefused) as refused:
        label_submit(
            assignment=assignment,
            annotation=bad,
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        )
    assert refused.value.code == "reason_missing"
    assert "complete" in refused.value.message
    stored = label_submit(
        assignment=assignment,
        annotation=good,
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    )
    assert stored.label.annotation["verdicts"]["complete"]["reason"]
