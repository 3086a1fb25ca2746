"""Observation files for tests, built with the contract's own digest functions."""

from __future__ import annotations

import copy
import json
from typing import Any

from audit.contract.digests import snapshot_digest, tuple_digest

HEADER = {
    "claimgate": "observations",
    "format_version": 1,
    "codebook": {"name": "source-risk", "version": "1.0.0"},
}


def observation(n: int = 1, *, sources: int = 2, failed: bool = False) -> dict[str, Any]:
    query = {
        "id": f"q-{n:04d}",
        "text": f"Which router should a small office buy in 2026? ({n})",
        "question_type": "natural_discovery",
        "question_version": "1",
        "reference_time": "2026-05-01",
        "target": {"name": "Acme X2", "family": "acme-routers"},
        "template_id": "best-product-for",
        "domain": "consumer-electronics",
        "locale": "en-US",
    }
    pipeline = {"name": "test-collector", "version": "1.0", "config": {"region": "DE"}}
    text = "" if failed else f"The Acme X2 is the best choice 👍 (answer {n})."
    answer = {
        "service": "example-search",
        "mode": "default",
        "model": None,
        "web_search": True,
        "conditions": {"region": "DE", "language": "en", "login": False, "personalization": None},
        "collected_at": "2026-05-02T10:00:00Z",
        "status": "failed" if failed else "complete",
        "failure": "HTTP 429" if failed else None,
        "text": text,
        "citations": [],
        "raw_path": None,
        "digest": snapshot_digest(text),
    }
    observation = {"query": query, "pipeline": pipeline, "answer": answer, "sources": []}
    for index in range(0 if failed else sources):
        source_text = f"Café Müller review {n}.{index}: we earn a commission 💶 — 東京"
        source = {
            "original_url": f"https://reviews.example/{n}/{index}?ref=aff",
            "canonical_url": f"https://reviews.example/{n}/{index}",
            "rank": index + 1,
            "collected_at": "2026-05-02T10:00:05Z",
            "text": source_text,
            "digest": snapshot_digest(source_text),
            "sampling": {"stratum": "electronics/high", "inclusion_probability": 0.5},
        }
        observation["answer"]["citations"].append(
            {"url": source["original_url"], "kind": "source_citation"}
        )
        observation["sources"].append(source)
    return reseal(observation)


def reseal(observation: dict[str, Any]) -> dict[str, Any]:
    """Recompute every digest of an observation after a change."""
    sealed = copy.deepcopy(observation)
    sealed["answer"]["digest"] = snapshot_digest(sealed["answer"]["text"])
    for source in sealed["sources"]:
        source["digest"] = snapshot_digest(source["text"])
        source["tuple_digest"] = tuple_digest(
            query=sealed["query"],
            source_digest=source["digest"],
            answer_digest=sealed["answer"]["digest"],
            pipeline=sealed["pipeline"],
        )
    return sealed


def jsonl(*lines: Any, header: dict[str, Any] | None = HEADER) -> bytes:
    rows = ([header] if header is not None else []) + list(lines)
    return "".join(
        (row if isinstance(row, str) else json.dumps(row, ensure_ascii=False)) + "\n"
        for row in rows
    ).encode("utf-8")
