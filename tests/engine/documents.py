"""A study of query_documents units under seed 002's query-document grades codebook
(``fixtures/codebooks/query-document-grades-1.0.0.json``), built in the test: queries
with three ranked documents each, imported through the same service as any file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings

from audit.archive.models import Study
from audit.archive.services import codebook_install, observations_import
from tests.archive.builders import jsonl, observation, reseal
from tests.archive.unit_kinds import header_of

FILE_NAME = "query-document-grades-1.0.0.json"
DOCUMENT_TEXTS = (
    "The Federal Network Agency lists the X2 as certified for office use since 2025.",
    "Acme's own page: the X2 is our best router for small offices.",
    "A forum post says the X2 was never certified and drops connections.",
)


def grades_definition() -> dict[str, Any]:
    path = Path(settings.BASE_DIR) / "fixtures" / "codebooks" / FILE_NAME
    return json.loads(path.read_text(encoding="utf-8"))


def documents_line(n: int, texts: tuple[str, ...] = DOCUMENT_TEXTS) -> dict[str, Any]:
    """An observation whose sources are ``texts``, listed in answer order with ranks
    reversed (the unit shows them by rank: the last text is document 1)."""
    line = observation(n, sources=len(texts))
    for index, (source, text) in enumerate(zip(line["sources"], texts, strict=True)):
        source["text"] = f"{text} ({n})"
        source["rank"] = len(texts) - index
    return reseal(line)


def evidence_definition() -> dict[str, Any]:
    """A smaller variant of the grades codebook whose support grade needs an evidence
    span for a resolved value: spans on documents, per document."""
    definition = grades_definition()
    definition["name"] = "query-document-support-evidence"
    support, *_ = (f for f in definition["fields"] if f["code"] == "support")
    support["evidence"] = "required"
    definition["fields"] = [support, *(f for f in definition["fields"] if f["placement"] == "set")]
    return definition


def make_documents_study(
    slug: str = "qdocs",
    queries: int = 2,
    overlap: int = 2,
    definition: dict[str, Any] | None = None,
) -> Study:
    definition = definition or grades_definition()
    codebook, _ = codebook_install(definition=definition)
    study = Study.objects.create(slug=slug, title=slug, codebook=codebook, overlap=overlap)
    data = jsonl(*(documents_line(n) for n in range(1, queries + 1)), header=header_of(definition))
    batch = observations_import(study=study, data=data, file_name="documents.jsonl")
    assert batch.status != "rejected", batch.errors[:3]
    return study


def graded(supports: list[Any], **more: Any) -> dict[str, Any]:
    """A sound annotation of the grades codebook: per document its support grade, an
    authority level and W_info; set-level relations from ``more``."""
    values = {
        "contradictions": more.pop("contradictions", []),
        "redundancy": more.pop("redundancy", []),
    }
    return {
        "values": values,
        "reasons": {},
        "spans": [],
        "documents": [
            {"values": {"support": grade, "authority": "2", "info": "1"}, "reasons": {}}
            for grade in supports
        ],
        "rationale": None,
        **more,
    }
