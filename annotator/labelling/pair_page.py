"""What the pages and the API show of an answer pair: two answers named only by their
place, "left" and "right", in the reader's own order (audit.contract.sides).

Neither role nor pipeline reaches the client: a side shows its answer's text and citations
only (no service, model, pipeline or digest, which would tell the systems apart), both
sides come in the same response, and their keys are always ``left`` then ``right``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from audit.archive.records import UnitContent
from audit.contract.codebook import codebook_from_dict
from audit.contract.sides import PAIR_SIDES, to_client


def _answer_of(content: UnitContent, role: str) -> dict[str, Any]:
    answer = content.answer if role == "answer" else (content.baseline or {})["answer"]
    return answer


def pair_sides_shown(content: UnitContent, sides: Mapping[str, str]) -> dict[str, Any]:
    """``{"left": {text, citations}, "right": {text, citations}}`` in the reader's order."""
    shown = {}
    for side in PAIR_SIDES:
        answer = _answer_of(content, sides[side])
        shown[side] = {
            "text": answer["text"],
            "citations": [
                {"url": citation.get("url"), "kind": citation.get("kind")}
                for citation in answer.get("citations") or ()
                if isinstance(citation, Mapping)
            ],
        }
    return shown


def annotation_seen(
    definition: Mapping[str, Any],
    annotation: Any,
    sides: Mapping[str, str] | None = None,
) -> Any:
    """A stored annotation as its reader sees it: an answer pair's in left/right terms
    (the annotator's own order, or ``sides``: an adjudicator's), without ``sides``; any
    other annotation unchanged."""
    if not isinstance(annotation, Mapping) or "sides" not in annotation:
        return annotation
    return to_client(codebook_from_dict(dict(definition)), annotation, sides)
