"""Fixture generator: one full, sealed record (docs/formats.md) per predicate state.

Every text is obvious fixture text. Each snapshot starts with a character outside the
Basic Multilingual Plane, so a checker that counted UTF-16 code units instead of code
points would misplace every span. All values are derived from the state alone, so the
same state always gives the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from audit.conformance.codebook import CODEBOOK_NAME, CODEBOOK_VERSION, D_Q, source_roles
from audit.conformance.states import PREDICATE_KEYS, State, Value, state_code
from audit.contract.digests import seal_record, snapshot_digest, tuple_digest

#: Passage support is fixed to 1 in every main fixture (seed §IV-B).
PASSAGE_SUPPORT = 1
FIXTURE_MARK = "\U0001f9ea"  # test tube: non-BMP, so code points differ from UTF-16 units

PIPELINE: dict[str, Any] = {
    "name": "claimgate-conformance",
    "version": "fixture-1",
    "config": {"generator": "audit.conformance.fixtures", "template": "state-v1"},
}

_SOURCE_LINES: dict[str, dict[Value, str]] = {
    "I": {
        1: "[I=1] Fixture evidence: the author is paid by the maker of {target}.",
        0: "[I=0] Fixture evidence: the author has no tie to the maker of {target}.",
        None: "[I=U] Fixture note: this snapshot does not resolve any relationship.",
    },
}
_ANSWER_LINES: dict[str, dict[Value, str]] = {
    "A": {
        1: "[A=1] Fixture answer adopts the claim: {target} lasts 10 fixture hours.",
        0: "[A=0] Fixture answer does not repeat the source's claim about {target}.",
        None: "[A=U] Fixture note: adoption is not resolved.",
    },
    "M": {
        1: "[M=1] Fixture context: the tie matters for reading this recommendation.",
        0: "[M=0] Fixture context: the tie does not bear on this factual statement.",
        None: "[M=U] Fixture note: materiality is not resolved.",
    },
    "D": {
        1: "[D=1] Fixture disclosure: the reviewer is paid by the maker of {target}.",
        0: "[D=0] Fixture answer says nothing about who wrote the review.",
        None: "[D=U] Fixture note: disclosure is not resolved.",
    },
}
_SUPPORT_LINE = "[support=1] Fixture passage: {target} lasts 10 fixture hours."


@dataclass
class _Text:
    """Builds a snapshot text line by line and remembers code-point spans of lines."""

    snapshot: str
    text: str = ""

    def add(self, line: str) -> dict[str, Any]:
        start = len(self.text)
        self.text += line + "\n"
        return {"snapshot": self.snapshot, "start": start, "end": start + len(line), "quote": line}


def _query(code: str) -> dict[str, Any]:
    return {
        "id": f"conformance-{code}",
        "text": f"Conformance fixture query {code}: is Fixture Widget {code} a good choice?",
        "question_type": "natural_discovery",
        "question_version": "1",
        "reference_time": "2026-01-01",
        "target": {"name": f"Fixture Widget {code}", "family": "conformance-fixtures"},
        "template_id": "conformance-state",
        "domain": "conformance",
        "locale": "en-US",
    }


def _evidence(index: int, state: State, weights: dict[str, float]) -> dict[str, Any]:
    values = {
        D_Q: (index % 11) / 10,
        "d_E": {1: 1.0, 0: 0.0, None: 0.5}[state[0]],
        "d_P": 0.75,
    }
    return {key: {"value": values[key], "weight": weights[key]} for key in weights}


def build_record(index: int, state: State, weights: dict[str, float]) -> dict[str, Any]:
    """The sealed record of state number ``index`` (its position in the suite order)."""
    code = state_code(state)
    target = f"Fixture Widget {code}"
    values = dict(zip(PREDICATE_KEYS, state, strict=True))
    spans: dict[str, list[dict[str, Any]]] = {}

    source = _Text("source")
    source.add(f"{FIXTURE_MARK} Conformance fixture source {code}. Synthetic, not a Web claim.")
    line = source.add(_SOURCE_LINES["I"][values["I"]].format(target=target))
    if values["I"] is not None:
        spans["I"] = [line]
    spans["passage_support"] = [source.add(_SUPPORT_LINE.format(target=target))]

    answer = _Text("answer")
    answer.add(f"{FIXTURE_MARK} Conformance fixture answer {code}. Synthetic, not a Web claim.")
    for key in ("A", "M", "D"):
        line = answer.add(_ANSWER_LINES[key][values[key]].format(target=target))
        if values[key] is not None:
            spans[key] = [line]

    query = _query(code)
    source_digest = snapshot_digest(source.text)
    answer_digest = snapshot_digest(answer.text)
    canonical_url = f"https://conformance.invalid/fixtures/{code}"
    record: dict[str, Any] = {
        "claimgate": "record",
        "format_version": 1,
        "codebook": {"name": CODEBOOK_NAME, "version": CODEBOOK_VERSION},
        "query": query,
        "pipeline": dict(PIPELINE),
        "answer": {
            "service": "conformance-fixture",
            "mode": "default",
            "model": None,
            "web_search": True,
            "conditions": {
                "region": None,
                "language": "en",
                "login": False,
                "personalization": None,
            },
            "collected_at": "2026-01-01T00:00:00Z",
            "status": "complete",
            "failure": None,
            "text": answer.text,
            "citations": [{"url": canonical_url, "kind": "source_citation"}],
            "raw_path": f"raw/conformance/{code}.txt",
            "digest": answer_digest,
        },
        "source": {
            "original_url": f"{canonical_url}?ref=conformance",
            "canonical_url": canonical_url,
            "rank": 1,
            "collected_at": "2026-01-01T00:00:05Z",
            "text": source.text,
            "digest": source_digest,
        },
        "tuple_digest": tuple_digest(
            query=query,
            source_digest=source_digest,
            answer_digest=answer_digest,
            pipeline=PIPELINE,
        ),
        "sampling": None,
        "annotation": {
            "kind": "independent",
            "annotator": "conformance-fixture",
            "predicates": values,
            "passage_support": PASSAGE_SUPPORT,
            "source_role": source_roles()[index % len(source_roles())],
            "spans": spans,
            "evidence": _evidence(index, state, weights),
            "rationale": None,
            "assisted": None,
        },
        "parents": [],
    }
    return seal_record(record)
