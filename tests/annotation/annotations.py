"""Valid annotations for units of the demo studies, built from the unit's own texts."""

from __future__ import annotations

from typing import Any

from annotator.labelling.selectors import UnitContent


def span(content: UnitContent, snapshot: str, start: int = 0, length: int = 12) -> dict:
    text = {
        "query": content.query["text"],
        "answer": content.answer["text"],
        "source": content.sources[0]["text"] if content.sources else "",
    }[snapshot]
    end = min(len(text), start + length)
    return {"snapshot": snapshot, "start": start, "end": end, "quote": text[start:end]}


def source_risk(content: UnitContent, *, values=(1, 1, 1, 0), rationale=None) -> dict[str, Any]:
    predicates = dict(zip("IAMD", values, strict=True))
    spans = {
        key: [span(content, "source" if key == "I" else "answer")]
        for key, value in predicates.items()
        if value is not None
    }
    spans["passage_support"] = [span(content, "source", 0, 20)]
    return {
        "predicates": predicates,
        "passage_support": 1,
        "source_role": "affiliate_marketing",
        "spans": spans,
        "evidence": {"d_Q": 0.5, "d_R": 0.25, "d_P": 1.0, "d_S": 0.0},
        "rationale": rationale,
    }


def answer_claims(content: UnitContent) -> dict[str, Any]:
    verdicts = {
        key: {"value": True, "reason": f"{key}: checked against the sources"}
        for key in ("cited", "supported", "accurate", "timely", "relevant", "complete")
    }
    source = content.sources[0] if content.sources else None
    claims = []
    if source is not None:
        claims.append(
            {
                "id": "c1",
                "span": span(content, "answer", 0, 20),
                "source_digest": source["digest"],
                "quote_span": span(content, "source", 0, 20),
                "supported": True,
                "accurate": True,
                "kind": "verifiable",
                "reason": "the source says so",
            }
        )
    else:
        verdicts["supported"] = {"value": None, "reason": "no claim can be checked"}
    return {"claims": claims, "verdicts": verdicts}
