"""Stored annotations of the fixture codebooks, for the engine's writer and consensus
tests: sealed records built from the demo observations (fixtures/demo) labelled as the
demo loader labels them, and the demo's protocol labels (fixtures/demo/protocol.py) as
stored. Pure: no database."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from audit.contract.digests import snapshot_digest
from audit.contract.engine import SPAN_JUDGMENTS
from fixtures.demo import protocol
from tests.contract.factories import seal, span_of

ROOT = Path(__file__).resolve().parents[2]
CODEBOOKS = ROOT / "fixtures" / "codebooks"
DEMO = ROOT / "fixtures" / "demo"


def definition(name: str) -> dict[str, Any]:
    """A fixture codebook file's JSON value, by its file name without ``.json``."""
    return json.loads((CODEBOOKS / f"{name}.json").read_text(encoding="utf-8"))


def _fixture_lines(name: str) -> list[dict[str, Any]]:
    lines = (DEMO / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[1:] if line.strip()]


def _span(text: str, snapshot: str, length: int) -> dict[str, Any]:
    end = min(len(text), length)
    return {"snapshot": snapshot, "start": 0, "end": end, "quote": text[:end]}


def source_risk_fixture_records() -> list[dict[str, Any]]:
    """A record per tuple of the demo's source-risk observations, labelled as the demo
    loader labels them (predicates varying, U on some, a span per resolved judgment)."""
    book = definition("source-risk-1.0.0")
    weights = {e["key"]: e["weight"] for e in book["evidence_dimensions"]}
    roles = [r["key"] for r in book["source_roles"]]
    records = []
    for number, line in enumerate(_fixture_lines("source-risk.jsonl")):
        for item in line["sources"]:
            source = {k: v for k, v in item.items() if k not in ("tuple_digest", "sampling")}
            predicates = {
                "I": number % 2,
                "A": None if number % 3 == 1 else 1,
                "M": 1 if number % 3 == 0 else 0,
                "D": None if number % 4 == 2 else 0,
            }
            support = None if number % 5 == 2 else 1
            spans = {}
            for key in SPAN_JUDGMENTS:
                value = support if key == "passage_support" else predicates[key]
                if value is not None:
                    snapshot = "source" if key in ("I", "passage_support") else "answer"
                    text = source["text"] if snapshot == "source" else line["answer"]["text"]
                    spans[key] = [_span(text, snapshot, 12 + number % 7)]
            record = {
                "claimgate": "record",
                "format_version": 1,
                "codebook": {"name": book["name"], "version": book["version"]},
                "query": line["query"],
                "pipeline": line["pipeline"],
                "answer": line["answer"],
                "source": source,
                "tuple_digest": "",
                "sampling": None,
                "annotation": {
                    "kind": "independent",
                    "annotator": "a1",
                    "predicates": predicates,
                    "passage_support": support,
                    "source_role": roles[number % len(roles)],
                    "spans": spans,
                    "evidence": {
                        key: {"value": (number % 5) / 4, "weight": weight}
                        for key, weight in weights.items()
                    },
                    "rationale": None,
                    "assisted": None,
                },
                "parents": [],
            }
            records.append(seal(record))
    return records


def answer_claims_fixture_records() -> list[dict[str, Any]]:
    """A record per answer of the demo's answer-claims observations: a claim per source
    (supported or not), verdicts with and without reasons, U among them."""
    book = definition("answer-claims-1.0.0")
    verdict_keys = [v["key"] for v in book["verdicts"]]
    records = []
    for number, line in enumerate(_fixture_lines("answer-claims.jsonl")):
        failed = line["answer"]["status"] != "complete"
        text = line["answer"]["text"]
        sources = [
            {k: v for k, v in s.items() if k not in ("tuple_digest", "sampling")}
            for s in line["sources"]
        ]
        claims = []
        for index, item in enumerate(sources):
            supported = [True, False, None][(number + index) % 3]
            claims.append(
                {
                    "id": f"c{index + 1}",
                    "span": _span(text, "answer", 5 + index),
                    "source_digest": snapshot_digest(item["text"]),
                    "quote_span": _span(item["text"], "source", 8),
                    "supported": supported,
                    "accurate": supported,
                    "kind": "verifiable",
                    "reason": None if index % 2 else "checked",
                }
            )
        summary = None
        verifiable = [c["supported"] for c in claims]
        if False in verifiable:
            summary = False
        elif verifiable and all(v is True for v in verifiable):
            summary = True
        verdicts = {
            key: {
                "value": [True, False, None][(number + position) % 3],
                "reason": f"reason {position}",
            }
            for position, key in enumerate(verdict_keys)
        }
        verdicts["supported"]["value"] = summary
        record = {
            "claimgate": "record",
            "format_version": 1,
            "codebook": {"name": book["name"], "version": book["version"]},
            "query": line["query"],
            "pipeline": line["pipeline"],
            "answer": line["answer"],
            "sources": [] if failed else sources,
            "unit_digest": "",
            "sampling": None,
            "annotation": {
                "kind": "independent",
                "annotator": "a1",
                "assisted": None,
                "rationale": None,
                "claims": [] if failed else claims,
                "verdicts": None if failed else verdicts,
            },
            "parents": [],
        }
        records.append(seal(record))
    return records


def protocol_annotations() -> list[tuple[str, dict[str, Any]]]:
    """The demo's protocol labels (fixtures/demo/protocol.py) as stored, per codebook."""
    out: list[tuple[str, dict[str, Any]]] = []
    common = {"kind": "independent", "annotator": "a1", "assisted": None, "rationale": None}
    for i in range(len(protocol.QUERIES)):
        for system in ("evaluated", "baseline"):
            out.append(
                (
                    "answer-rubric-1.0.0",
                    {**common, "values": protocol.rubric_values(i, system), "reasons": {}},
                )
            )
            documents, values = protocol.document_values(i, system)
            out.append(
                (
                    "query-document-grades-1.0.0",
                    {**common, "values": values, "spans": [], "documents": documents},
                )
            )
        out.append(
            (
                "pairwise-1.0.0",
                {
                    **common,
                    "values": {"preference": protocol.preference(i)},
                    "reasons": {"preference": "Demo: the answer that serves the need better."},
                    "spans": [],
                    "sides": {"left": "answer", "right": "baseline"},
                },
            )
        )
    for civility, target in ((0, None), (1, "group"), (2, "none")):
        out.append(
            (
                "toxicity-1.0.0",
                {
                    **common,
                    "values": {"civility": civility, "target": target, "harmful": civility == 0},
                    "reasons": {"target": "named in the answer"},
                    "spans": [
                        {
                            "field": "civility",
                            **span_of("Rude words here.", "Rude", "answer"),
                        }
                    ],
                },
            )
        )
    return out
