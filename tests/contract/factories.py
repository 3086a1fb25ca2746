"""Builders of valid, sealed records, observations and codebooks for contract tests.

Stable API (the conformance tests may import it):

- ``codebooks()``: the test codebooks by ``(name, version)``;
  ``SOURCE_RISK``/``SOURCE_RISK_ABSTAIN``/``ANSWER_CLAIMS`` are their keys.
- ``make_record(**overrides)``: a sealed ``source-risk`` record. Keyword arguments naming a
  top-level record field replace it; those naming an annotation field (``predicates``,
  ``passage_support``, ``spans``, ``evidence``, ``source_role``, ``kind``, ``assisted``...)
  replace that. ``predicates`` may be an ``(I, A, M, D)`` tuple. ``query_text``,
  ``answer_text`` and ``source_text`` replace the snapshot texts. Unless ``spans`` is given,
  every resolved judgment gets a span. ``sealed=False`` leaves the digests unset.
- ``make_answer_record(**overrides)``: the same for ``answer-claims``.
- ``seal(record)``: recompute every digest (snapshots, tuple or unit, record);
  ``reseal(record)``: only the record digest.
- ``make_observation(index, sources=2)``, ``observation_file(observations, header=...)``.
- ``span_of(text, quote, snapshot)``: the span of the first occurrence of ``quote``.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from audit.contract import Codebook, codebook_from_dict
from audit.contract.digests import seal_record, snapshot_digest, tuple_digest, unit_digest

SOURCE_RISK = ("source-risk", "test-1")
SOURCE_RISK_ABSTAIN = ("source-risk", "test-abstain-1")
ANSWER_CLAIMS = ("answer-claims", "test-1")
#: Dyadic weights: they sum to exactly 1 in binary floating point.
WEIGHTS = {"d_Q": 0.5, "d_R": 0.25, "d_P": 0.25}
SOURCE_ROLES = (
    "target_owned",
    "corporate_affiliate",
    "sponsored",
    "affiliate_marketing",
    "competitor",
    "independent_editorial",
    "user_generated",
    "official_public",
    "unknown",
)
VERDICTS = ("cited", "supported", "accurate", "timely", "relevant", "complete")


def source_risk_codebook(version: str = SOURCE_RISK[1], **overrides: Any) -> dict[str, Any]:
    book: dict[str, Any] = {
        "claimgate": "codebook",
        "format_version": 1,
        "name": "source-risk",
        "version": version,
        "unit": "tuple",
        "title": "Source risk (tests)",
        "description": "Codebook of the contract tests.",
        "predicates": [
            {"key": key, "label": key, "definition": "test", "shortcut": key.lower()}
            for key in ("I", "A", "M", "D")
        ],
        "passage_support": {"label": "Passage support", "definition": "test"},
        "source_roles": [{"key": key, "label": key, "look_for": "test"} for key in SOURCE_ROLES],
        "evidence_dimensions": [
            {"key": key, "label": key, "weight": weight, "definition": "test"}
            for key, weight in WEIGHTS.items()
        ],
        "answerability_policy": None,
        "allow_assisted": True,
    }
    book.update(overrides)
    return book


def answer_claims_codebook(**overrides: Any) -> dict[str, Any]:
    book: dict[str, Any] = {
        "claimgate": "codebook",
        "format_version": 1,
        "name": "answer-claims",
        "version": ANSWER_CLAIMS[1],
        "unit": "answer",
        "title": "Answer claims (tests)",
        "description": "Codebook of the contract tests.",
        "verdicts": [{"key": key, "label": key, "definition": "test"} for key in VERDICTS],
        "claim_kinds": [
            {"key": "verifiable", "label": "Verifiable", "definition": "test"},
            {"key": "not_truth_apt", "label": "Opinion", "definition": "test"},
        ],
        "answerability_policy": None,
        "allow_assisted": True,
    }
    book.update(overrides)
    return book


def codebooks() -> dict[tuple[str, str], Codebook]:
    books = [
        codebook_from_dict(source_risk_codebook()),
        codebook_from_dict(
            source_risk_codebook(
                SOURCE_RISK_ABSTAIN[1], answerability_policy="abstain_when_unresolved"
            )
        ),
        codebook_from_dict(answer_claims_codebook()),
    ]
    return {book.key: book for book in books}


QUERY_TEXT = "Which router is best for a small office?"
ANSWER_TEXT = "The Acme X2 is the best router for small offices. It handles 50 devices at once."
SOURCE_TEXT = (
    "RouterDeals earns a commission on every Acme X2 sold. "
    "The Acme X2 is the best router for small offices."
)
#: (snapshot, quote) cited for each judgment by default.
DEFAULT_EVIDENCE = {
    "I": ("source", "earns a commission on every Acme X2 sold"),
    "A": ("answer", "The Acme X2 is the best router for small offices"),
    "M": ("query", "best for a small office"),
    "D": ("answer", "The Acme X2 is the best router for small offices."),
    "passage_support": ("source", "The Acme X2 is the best router for small offices"),
}
ANNOTATION_FIELDS = (
    "kind",
    "annotator",
    "predicates",
    "passage_support",
    "source_role",
    "spans",
    "evidence",
    "rationale",
    "assisted",
    "claims",
    "verdicts",
)


def span_of(text: str, quote: str, snapshot: str) -> dict[str, Any]:
    """The span of the first occurrence of ``quote`` in ``text`` (the whole text if absent)."""
    start = text.find(quote)
    if start < 0 or not quote:
        start, quote = 0, text
    return {"snapshot": snapshot, "start": start, "end": start + len(quote), "quote": quote}


def query(index: int = 0, text: str = QUERY_TEXT) -> dict[str, Any]:
    return {
        "id": f"q-{index:04d}",
        "text": text,
        "question_type": "natural_discovery",
        "question_version": "1",
        "reference_time": "2026-05-01",
        "target": {"name": "Acme X2", "family": "acme-routers"},
        "template_id": "best-product-for",
        "domain": "consumer-electronics",
        "locale": "en-US",
    }


PIPELINE = {"name": "claimgate-tests", "version": "0.1.0", "config": {"temperature": 0}}


def answer(text: str = ANSWER_TEXT, *, failed: bool = False) -> dict[str, Any]:
    return {
        "service": "example-search",
        "mode": "default",
        "model": None,
        "web_search": True,
        "conditions": {"region": "DE", "language": "en", "login": False, "personalization": None},
        "collected_at": "2026-05-02T10:00:00Z",
        "status": "failed" if failed else "complete",
        "failure": "HTTP 429" if failed else None,
        "text": "" if failed else text,
        "citations": []
        if failed
        else [{"url": "https://routerdeals.example/acme-x2", "kind": "source_citation"}],
        "raw_path": "raw/2026-05-02/0001.html",
        "digest": snapshot_digest("" if failed else text),
    }


def source(
    text: str = SOURCE_TEXT,
    rank: int | None = 1,
    url: str = "routerdeals.example/x2",
) -> dict[str, Any]:
    return {
        "original_url": f"https://{url}?utm=1",
        "canonical_url": f"https://{url}",
        "rank": rank,
        "collected_at": "2026-05-02T10:00:05+02:00",
        "text": text,
        "digest": snapshot_digest(text),
    }


def seal(record: dict[str, Any]) -> dict[str, Any]:
    """Recompute every digest of ``record`` (in place) and return it."""
    record["answer"]["digest"] = snapshot_digest(record["answer"]["text"])
    if "sources" in record:
        for item in record["sources"]:
            item["digest"] = snapshot_digest(item["text"])
        record["unit_digest"] = unit_digest(
            query=record["query"],
            answer=record["answer"],
            source_digests=[item["digest"] for item in record["sources"]],
            pipeline=record["pipeline"],
        )
    else:
        record["source"]["digest"] = snapshot_digest(record["source"]["text"])
        record["tuple_digest"] = tuple_digest(
            query=record["query"],
            source_digest=record["source"]["digest"],
            answer_digest=record["answer"]["digest"],
            pipeline=record["pipeline"],
        )
    return reseal(record)


def reseal(record: dict[str, Any]) -> dict[str, Any]:
    """Recompute only the record digest (in place) and return the record."""
    sealed = seal_record(record)
    record["record_digest"] = sealed["record_digest"]
    return record


def _apply(record: dict[str, Any], overrides: dict[str, Any]) -> None:
    for key, value in overrides.items():
        if key in ANNOTATION_FIELDS:
            record["annotation"][key] = value
        else:
            record[key] = value


def make_record(*, sealed: bool = True, **overrides: Any) -> dict[str, Any]:
    """A valid ``source-risk`` record (see the module docstring)."""
    texts = {
        "query": overrides.pop("query_text", QUERY_TEXT),
        "answer": overrides.pop("answer_text", ANSWER_TEXT),
        "source": overrides.pop("source_text", SOURCE_TEXT),
    }
    predicates = overrides.pop("predicates", (1, 1, 1, 0))
    if isinstance(predicates, tuple):
        predicates = dict(zip(("I", "A", "M", "D"), predicates, strict=True))
    support = overrides.pop("passage_support", 1)
    values = {**predicates, "passage_support": support}
    spans = {
        key: [span_of(texts[snapshot], quote, snapshot)]
        for key, (snapshot, quote) in DEFAULT_EVIDENCE.items()
        if values.get(key) is not None
    }
    record: dict[str, Any] = {
        "claimgate": "record",
        "format_version": 1,
        "codebook": {"name": SOURCE_RISK[0], "version": SOURCE_RISK[1]},
        "query": query(text=texts["query"]),
        "pipeline": copy.deepcopy(PIPELINE),
        "answer": answer(texts["answer"]),
        "source": source(texts["source"]),
        "tuple_digest": "",
        "sampling": None,
        "annotation": {
            "kind": "independent",
            "annotator": "a7",
            "predicates": predicates,
            "passage_support": support,
            "source_role": "affiliate_marketing",
            "spans": spans,
            "evidence": {
                "d_Q": {"value": 0.7, "weight": 0.5},
                "d_R": {"value": 0.2, "weight": 0.25},
                "d_P": {"value": 0.4, "weight": 0.25},
            },
            "rationale": None,
            "assisted": None,
        },
        "parents": [],
    }
    _apply(record, overrides)
    return seal(record) if sealed else record


ANSWER_CLAIMS_TEXT = "The museum opens at 9 am on Sundays. It is worth booking ahead."
CLAIM_SOURCES = (
    "Opening hours: the museum opens at 9 am on Sundays and public holidays.",
    "Tickets can be booked online.",
)


def make_answer_record(
    *, sealed: bool = True, failed: bool = False, **overrides: Any
) -> dict[str, Any]:
    """A valid ``answer-claims`` record: one verifiable, supported claim and one opinion."""
    text = overrides.pop("answer_text", ANSWER_CLAIMS_TEXT)
    sources = [
        source(item, rank=i + 1, url=f"museum.example/{i}") for i, item in enumerate(CLAIM_SOURCES)
    ]
    claims = [
        {
            "id": "c1",
            "span": span_of(text, "The museum opens at 9 am on Sundays", "answer"),
            "source_digest": sources[0]["digest"],
            "quote_span": span_of(CLAIM_SOURCES[0], "opens at 9 am on Sundays", "source"),
            "supported": True,
            "accurate": True,
            "kind": "verifiable",
            "reason": "same hours",
        },
        {
            "id": "c2",
            "span": span_of(text, "It is worth booking ahead", "answer"),
            "source_digest": None,
            "quote_span": None,
            "supported": None,
            "accurate": None,
            "kind": "not_truth_apt",
            "reason": "advice",
        },
    ]
    verdicts = {key: {"value": True, "reason": "test"} for key in VERDICTS}
    record: dict[str, Any] = {
        "claimgate": "record",
        "format_version": 1,
        "codebook": {"name": ANSWER_CLAIMS[0], "version": ANSWER_CLAIMS[1]},
        "query": query(text="When does the museum open on Sunday?"),
        "pipeline": copy.deepcopy(PIPELINE),
        "answer": answer(text, failed=failed),
        "sources": [] if failed else sources,
        "unit_digest": "",
        "sampling": None,
        "annotation": {
            "kind": "independent",
            "annotator": "a7",
            "assisted": None,
            "rationale": None,
            "claims": [] if failed else claims,
            "verdicts": None if failed else verdicts,
        },
        "parents": [],
    }
    _apply(record, overrides)
    return seal(record) if sealed else record


def make_observation(
    index: int = 0,
    sources: int = 2,
    *,
    failed: bool = False,
) -> dict[str, Any]:
    """A valid observation line: one answer with ``sources`` distinct sources."""
    the_query = query(index)
    the_answer = answer(f"{ANSWER_TEXT} (observation {index})", failed=failed)
    items = []
    for number in range(0 if failed else sources):
        item = source(
            f"{SOURCE_TEXT} (observation {index}, source {number})",
            rank=number + 1,
            url=f"example.org/{index}/{number}",
        )
        item["tuple_digest"] = tuple_digest(
            query=the_query,
            source_digest=item["digest"],
            answer_digest=the_answer["digest"],
            pipeline=PIPELINE,
        )
        item["sampling"] = {"stratum": "consumer-electronics/high", "inclusion_probability": 0.25}
        items.append(item)
    return {
        "query": the_query,
        "pipeline": copy.deepcopy(PIPELINE),
        "answer": the_answer,
        "sources": items,
    }


def header(codebook: tuple[str, str] = SOURCE_RISK) -> dict[str, Any]:
    return {
        "claimgate": "observations",
        "format_version": 1,
        "codebook": {"name": codebook[0], "version": codebook[1]},
    }


def observation_file(observations: list[Any], *, head: Any = None) -> bytes:
    """Header plus one JSON line per observation (bytes are written as they are)."""
    lines = [json.dumps(head if head is not None else header()).encode("utf-8")]
    for item in observations:
        lines.append(item if isinstance(item, bytes) else json.dumps(item).encode("utf-8"))
    return b"\n".join(lines) + b"\n"
