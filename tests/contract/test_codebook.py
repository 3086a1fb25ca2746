"""codebook_from_dict: the shipped codebooks load; each defect has its reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from audit.contract import ContractError, codebook_from_dict, codes
from audit.contract.canonical import canonical_digest
from tests.contract.factories import answer_claims_codebook, source_risk_codebook

ROOT = Path(__file__).resolve().parents[2]


def test_codebook_fields():
    raw = source_risk_codebook()
    book = codebook_from_dict(raw)
    assert book.key == ("source-risk", "test-1")
    assert book.unit == "tuple"
    assert book.predicates == ("I", "A", "M", "D")
    assert dict(book.weights) == {"d_Q": 0.5, "d_R": 0.25, "d_P": 0.25}
    assert book.answerability_policy is None
    assert book.allow_assisted is True
    assert book.digest == canonical_digest(raw)
    answers = codebook_from_dict(answer_claims_codebook())
    assert answers.unit == "answer"
    assert "supported" in answers.verdicts
    assert answers.weights == {}


@pytest.mark.parametrize("path", sorted((ROOT / "fixtures" / "codebooks").glob("*.json")))
def test_shipped_codebooks_load(path):
    book = codebook_from_dict(json.loads(path.read_text(encoding="utf-8")))
    assert f"{book.name}-{book.version}.json" == path.name


def _dimensions(*weights: float, first: str = "d_Q") -> list[dict]:
    keys = [first, "d_R", "d_P"]
    return [
        {"key": key, "label": key, "weight": w, "definition": "x"}
        for key, w in zip(keys, weights, strict=False)
    ]


@pytest.mark.parametrize(
    ("overrides", "code", "words"),
    [
        ({"evidence_dimensions": _dimensions(0.5, 0.25, 0.5)}, codes.WEIGHTS_UNNORMALIZED, "sum"),
        (
            {"evidence_dimensions": _dimensions(1.25, -0.25)},
            codes.WEIGHTS_UNNORMALIZED,
            "non-negative",
        ),
        (
            {"evidence_dimensions": _dimensions(0.5, 0.5, first="d_X")},
            codes.DIMENSIONS_MISMATCH,
            "d_Q",
        ),
        ({"evidence_dimensions": _dimensions("0.5", 0.5)}, codes.INVALID_FIELD, "weight"),
        ({"unit": "page"}, codes.INVALID_FIELD, "unit"),
        ({"answerability_policy": "always"}, codes.INVALID_FIELD, "answerability_policy"),
        ({"format_version": 3}, codes.UNKNOWN_FORMAT, "format version"),
        ({"answerabilty_policy": None}, codes.UNKNOWN_FIELD, "answerabilty_policy"),
        ({"predicates": [{"key": "I"}]}, codes.INVALID_FIELD, "predicates"),
    ],
)
def test_bad_codebook_is_refused(overrides, code, words):
    with pytest.raises(ContractError) as caught:
        codebook_from_dict(source_risk_codebook(**overrides))
    assert caught.value.code == code
    assert words in caught.value.message


def test_missing_codebook_field():
    raw = source_risk_codebook()
    del raw["evidence_dimensions"]
    with pytest.raises(ContractError) as caught:
        codebook_from_dict(raw)
    assert caught.value.code == codes.MISSING_FIELD
    assert "evidence_dimensions" in caught.value.message
