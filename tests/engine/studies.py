"""A study on a codebook that no code knows: the proof that the engine is generic.

The codebook is ``fixtures/codebooks/toxicity-1.0.0.json``, installed through the same
service as any other codebook; the demo's answers are imported under it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings

from audit.archive.models import Study
from audit.archive.services import codebook_install, observations_import

HERE = Path(__file__).resolve().parent
FILE_NAME = "toxicity-1.0.0.json"
DEMO_ANSWERS = "answer-claims.jsonl"


def generic_definition() -> dict[str, Any]:
    path = Path(settings.BASE_DIR) / "fixtures" / "codebooks" / FILE_NAME
    return json.loads(path.read_text(encoding="utf-8"))


def observations_under(definition: dict[str, Any], demo_file: str = DEMO_ANSWERS) -> bytes:
    """The demo's observations with their header naming ``definition``'s codebook."""
    path = Path(settings.BASE_DIR) / "fixtures" / "demo" / demo_file
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    header["codebook"] = {"name": definition["name"], "version": definition["version"]}
    return "\n".join([json.dumps(header), *lines[1:]]).encode("utf-8") + b"\n"


def every_type_definition() -> dict[str, Any]:
    """A codebook of tuples with one field of every type the form edits."""
    return json.loads((HERE / "every-type-1.0.0.json").read_text(encoding="utf-8"))


def make_generic_study(
    slug: str = "generic",
    overlap: int = 2,
    definition: dict[str, Any] | None = None,
    demo_file: str = DEMO_ANSWERS,
) -> Study:
    definition = definition or generic_definition()
    codebook, _ = codebook_install(definition=definition)
    study = Study.objects.create(slug=slug, title=slug, codebook=codebook, overlap=overlap)
    batch = observations_import(
        study=study, data=observations_under(definition, demo_file), file_name="generic.jsonl"
    )
    assert batch.status != "rejected", batch.errors[:3]
    return study
