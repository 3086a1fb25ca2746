"""Codebooks, observation files and records of the unit kinds answer_pair and
query_documents, built with the contract's own digest functions (pure: no database)."""

from __future__ import annotations

import copy
from typing import Any

from audit.contract.digests import (
    answer_pair_digest,
    document_order,
    query_documents_digest,
    seal_record,
    unit_digest,
)
from tests.archive.builders import observation, reseal

#: A side-by-side preference (seed 002's pairwise protocol), as a format-2 codebook.
PAIR_CODEBOOK: dict[str, Any] = {
    "claimgate": "codebook",
    "format_version": 2,
    "name": "side-by-side",
    "version": "1.0.0",
    "unit": "answer_pair",
    "title": "Side by side",
    "fields": [
        {
            "code": "preference",
            "type": "choice",
            "label": "Which answer serves the query better?",
            "choices": [
                {"code": "left", "label": "Left is better", "key": "l"},
                {"code": "same", "label": "About the same", "key": "s"},
                {"code": "right", "label": "Right is better", "key": "r"},
            ],
            "allow_u": False,
            "reason": "required",
            "evidence": "optional",
        },
    ],
}

#: Query–document grades (seed 002), as a format-2 codebook.
DOCUMENTS_CODEBOOK: dict[str, Any] = {
    "claimgate": "codebook",
    "format_version": 2,
    "name": "query-documents",
    "version": "1.0.0",
    "unit": "query_documents",
    "title": "Query–document grades",
    "fields": [
        {
            "code": "grade",
            "type": "grade",
            "label": "Grade a(q, d)",
            "placement": "document",
            "grades": [
                {"value": 0, "anchor": "irrelevant or untrustworthy"},
                {"value": 1, "anchor": "partly useful"},
                {"value": 2, "anchor": "answers the query"},
            ],
            "evidence": "optional",
        },
        {
            "code": "note",
            "type": "text",
            "label": "Note",
            "placement": "set",
            "required": False,
        },
    ],
}


def header_of(codebook: dict[str, Any]) -> dict[str, Any]:
    return {
        "claimgate": "observations",
        "format_version": 1,
        "codebook": {"name": codebook["name"], "version": codebook["version"]},
    }


def baseline_of(evaluated: dict[str, Any], *, name: str = "base") -> dict[str, Any]:
    """The baseline system's answer to the same query in the same setting: another
    service, pipeline and text; the same query and conditions."""
    line = copy.deepcopy(evaluated)
    line.pop("baseline", None)
    line["id"] = name
    line["answer"]["service"] = "baseline-search"
    line["answer"]["text"] = "The baseline answer: " + line["answer"]["text"]
    line["pipeline"] = {**line["pipeline"], "version": "0.9"}
    return reseal(line)


def pair_lines(n: int = 1, *, sources: int = 1) -> tuple[dict[str, Any], dict[str, Any]]:
    """An evaluated line naming its baseline, and the baseline's line."""
    evaluated = observation(n, sources=sources)
    baseline = baseline_of(evaluated, name=f"base-{n}")
    evaluated["id"] = f"eval-{n}"
    evaluated["baseline"] = f"base-{n}"
    return evaluated, baseline


def ranked(n: int = 1, *, ranks: tuple[int | None, ...] = (2, 1)) -> dict[str, Any]:
    """An observation whose sources (in answer order) carry ``ranks``."""
    line = observation(n, sources=len(ranks))
    for source, rank in zip(line["sources"], ranks, strict=True):
        source["rank"] = rank
    return reseal(line)


def _snapshot(source: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in source.items() if k not in ("tuple_digest", "sampling")}


def _observation_digest(line: dict[str, Any]) -> str:
    return unit_digest(
        query=line["query"],
        answer=line["answer"],
        source_digests=[s["digest"] for s in line["sources"]],
        pipeline=line["pipeline"],
    )


def pair_digest(evaluated: dict[str, Any], baseline: dict[str, Any]) -> str:
    return answer_pair_digest(
        evaluated=_observation_digest(evaluated), baseline=_observation_digest(baseline)
    )


def documents_of(line: dict[str, Any]) -> list[dict[str, Any]]:
    return [_snapshot(line["sources"][i]) for i in document_order(line["sources"])]


def documents_digest(line: dict[str, Any]) -> str:
    return query_documents_digest(
        query=line["query"],
        answer=line["answer"],
        document_digests=[d["digest"] for d in documents_of(line)],
        pipeline=line["pipeline"],
    )


def annotation(values: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {
        "kind": "independent",
        "annotator": "a7",
        "values": values,
        "reasons": {},
        "spans": [],
        "rationale": None,
        "assisted": None,
        **more,
    }


def pair_record(
    evaluated: dict[str, Any], baseline: dict[str, Any], note: dict[str, Any]
) -> dict[str, Any]:
    """A sealed record of an answer_pair unit."""
    return seal_record(
        {
            "claimgate": "record",
            "format_version": 1,
            "codebook": {"name": PAIR_CODEBOOK["name"], "version": PAIR_CODEBOOK["version"]},
            "query": evaluated["query"],
            "pipeline": evaluated["pipeline"],
            "answer": evaluated["answer"],
            "sources": [_snapshot(s) for s in evaluated["sources"]],
            "baseline": {
                "pipeline": baseline["pipeline"],
                "answer": baseline["answer"],
                "sources": [_snapshot(s) for s in baseline["sources"]],
            },
            "unit_digest": pair_digest(evaluated, baseline),
            "sampling": None,
            "annotation": note,
            "parents": [],
        }
    )


def documents_record(line: dict[str, Any], note: dict[str, Any]) -> dict[str, Any]:
    """A sealed record of a query_documents unit."""
    return seal_record(
        {
            "claimgate": "record",
            "format_version": 1,
            "codebook": {
                "name": DOCUMENTS_CODEBOOK["name"],
                "version": DOCUMENTS_CODEBOOK["version"],
            },
            "query": line["query"],
            "pipeline": line["pipeline"],
            "answer": line["answer"],
            "documents": documents_of(line),
            "unit_digest": documents_digest(line),
            "sampling": None,
            "annotation": note,
            "parents": [],
        }
    )
