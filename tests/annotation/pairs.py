"""An answer_pair study for tests (codebook fixtures/codebooks/pairwise-1.0.0.json): pairs
whose two answers, services and pipelines have neutral, distinct names, so that a test can
look for any of them in what an annotator is sent; and annotators whose drawn orders of a
unit are opposite."""

from __future__ import annotations

import copy
import json
from typing import Any

from django.contrib.auth import get_user_model

from annotator.labelling.services import pair_left_is_evaluated_draw
from annotator.memberships.models import Membership, Role
from audit.archive.models import Study, Unit
from audit.archive.services import codebook_install, codebook_install_file, observations_import
from tests.annotation.conftest import FIXTURES
from tests.archive.builders import jsonl, observation, reseal

#: Words that name a role or a system: none may reach an annotator of a pair.
HIDDEN_WORDS = (
    "evaluated",
    "baseline",
    "pipe-eval",
    "pipe-base",
    "svc-eval",
    "svc-base",
    "model-eval",
    "model-base",
)


def evaluated_text(n: int) -> str:
    return f"Alpha reply {n}: the Acme X2 router suits a small office, it is quiet and fast."


def baseline_text(n: int) -> str:
    return f"Gamma reply {n}: offices of that size usually pick the Zeta Q9, a cheaper unit."


def pair_lines(n: int) -> list[dict[str, Any]]:
    """An evaluated observation naming its baseline's line, and the baseline's line."""
    evaluated = observation(n, sources=1)
    baseline = copy.deepcopy(evaluated)
    evaluated["answer"].update(service="svc-eval", model="model-eval", text=evaluated_text(n))
    evaluated["pipeline"] = {**evaluated["pipeline"], "name": "pipe-eval"}
    baseline["answer"].update(service="svc-base", model="model-base", text=baseline_text(n))
    baseline["pipeline"] = {**baseline["pipeline"], "name": "pipe-base"}
    evaluated, baseline = reseal(evaluated), reseal(baseline)
    evaluated["id"], baseline["id"] = f"one-{n}", f"two-{n}"
    evaluated["baseline"] = baseline["id"]
    return [evaluated, baseline]


def pairs_study(
    slug: str = "pairs", *, n: int = 3, overlap: int = 2, evidence: bool = False
) -> Study:
    """A study of ``n`` pairs with the pairwise codebook (``evidence``: a variant of it
    whose preference takes optional evidence spans, named ``pairwise-spans``)."""
    path = FIXTURES / "codebooks" / "pairwise-1.0.0.json"
    if evidence:
        definition = json.loads(path.read_text(encoding="utf-8"))
        definition["name"] = "pairwise-spans"
        definition["fields"][0]["evidence"] = "optional"
        codebook, _ = codebook_install(definition=definition)
    else:
        codebook, _ = codebook_install_file(path=path)
    study = Study.objects.create(slug=slug, title="Pairwise", codebook=codebook, overlap=overlap)
    header = {
        "claimgate": "observations",
        "format_version": 1,
        "codebook": {"name": codebook.name, "version": codebook.version},
    }
    lines = [line for i in range(1, n + 1) for line in pair_lines(i)]
    batch = observations_import(study=study, data=jsonl(*lines, header=header), file_name="p.jsonl")
    assert batch.status != "rejected", batch.errors[:3]
    return study


def opposite_annotators(study: Study, unit: Unit, prefix: str = "pair") -> tuple[Any, Any]:
    """Two annotators of ``study``: the first is shown the evaluated answer of ``unit`` on
    the left, the second on the right (users are made until both orders are drawn)."""
    model = get_user_model()
    found: dict[bool, Any] = {}
    index = 0
    while len(found) < 2:
        index += 1
        user = model.objects.create_user(username=f"{prefix}{index}", password="pw")
        left = pair_left_is_evaluated_draw(study=study, annotator_id=user.pk, unit_id=unit.pk)
        if left in found:
            continue
        Membership.objects.create(study=study, user=user, role=Role.ANNOTATOR)
        found[left] = user
    return found[True], found[False]
