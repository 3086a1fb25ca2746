"""The reliability report as a JSON value, built from fetched plain values: pure, no Django.

DESIGN.md, "Reliability": coefficients on the original independent labels (each
annotator's latest revision), per codebook version (never pooled), per item, for
unassisted and assisted labels separately, U both as a category (headline) and as
missing (sensitivity), bootstrap intervals over units and clustered by query domain.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from metrics import claims as claim_metrics
from metrics import reliability
from metrics.matrices import (
    CLAIM_ITEMS,
    Head,
    Matrix,
    U,
    claims_align,
    matrices,
    pooled_pairs,
)

FORMAT_VERSION = 1
GROUPS = (("unassisted", "Unassisted labels"), ("assisted", "Assisted labels (model pre-filled)"))
TREATMENTS = (("u_category", "U as its own category"), ("u_missing", "U excluded as missing"))


@dataclass(frozen=True)
class CodebookInfo:
    name: str
    version: str
    digest: str
    unit: str  # "tuple" | "answer"


@dataclass(frozen=True)
class ReportInputs:
    """Everything a report needs, fetched by metrics.selectors.report_inputs_fetch."""

    study: str
    codebook: CodebookInfo  # the study's codebook
    codebooks: dict[str, CodebookInfo]  # by digest: every version the labels name
    items: tuple[tuple[str, str], ...]  # (key, label) of the compared judgments
    heads: tuple[Head, ...]
    domain_of: dict[int, str]
    labels_digest: str
    sealed_partitions: tuple[str, ...]
    included_partitions: tuple[str, ...]
    claim_rows: tuple[dict[str, Any], ...] = ()
    awaiting_final: int = 0
    failed_attempts: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def finite(value: Any) -> Any:
    """The value with every NaN or infinity replaced by None (JSON has neither)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    if hasattr(value, "tolist"):  # a numpy array or scalar
        return finite(value.tolist())
    return value


def _summary(
    data: list[list[str | None]], clusters: Sequence[str], *, n_boot: int, seed: int
) -> dict[str, Any]:
    if not data or not data[0]:
        return {"n_units": 0, "n_coders": len(data), "empty": True}
    return finite(
        reliability.summarize(
            data, level="nominal", clusters=list(clusters), n_boot=n_boot, seed=seed
        )
    )


def _confusion(matrix: Matrix) -> dict[str, Any]:
    first, second = pooled_pairs(matrix.data)
    if not first:
        return {"matrix": [], "categories": [], "pairs": 0}
    grid, categories = reliability.confusion_matrix(first, second)
    return finite({"matrix": grid, "categories": list(categories), "pairs": len(first)})


def _unresolved(matrix: Matrix) -> list[dict[str, Any]]:
    rows = reliability.unresolved_coverage(matrix.data, unresolved=U)
    return [{**finite(row), "coder": coder} for coder, row in zip(matrix.coders, rows, strict=True)]


def _item_report(
    key: str, label: str, matrix: Matrix, *, n_boot: int, seed: int, unresolved: bool = True
) -> dict[str, Any]:
    return {
        "key": key,
        "label": label,
        "u_category": _summary(matrix.data, matrix.clusters, n_boot=n_boot, seed=seed),
        "u_missing": _summary(matrix.u_missing(), matrix.clusters, n_boot=n_boot, seed=seed),
        "confusion": _confusion(matrix),
        "unresolved": _unresolved(matrix) if unresolved and matrix.units else [],
    }


def _work(inputs: ReportInputs) -> int:
    steps = 0
    for digest in {head.codebook_digest for head in inputs.heads}:
        for name, _ in GROUPS:
            heads = [h for h in inputs.heads if h.codebook_digest == digest]
            if any(h.assisted == (name == "assisted") for h in heads):
                steps += len(inputs.items) + (
                    len(CLAIM_ITEMS) if inputs.codebook.unit == "answer" else 0
                )
    return max(steps, 1)


def report_build(
    inputs: ReportInputs,
    *,
    n_boot: int,
    seed: int = 0,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> dict[str, Any]:
    """The report's JSON value. ``progress(done, total)`` is called after each item."""
    total = _work(inputs)
    done = 0
    versions = []
    digests = sorted(
        {head.codebook_digest for head in inputs.heads},
        key=lambda d: (d != inputs.codebook.digest, d),
    )
    is_answer = inputs.codebook.unit == "answer"
    for digest in digests:
        info = inputs.codebooks.get(digest) or CodebookInfo("?", "?", digest, inputs.codebook.unit)
        groups = []
        for name, title in GROUPS:
            heads = [
                h
                for h in inputs.heads
                if h.codebook_digest == digest and h.assisted == (name == "assisted")
            ]
            if not heads:
                continue
            coders, units, grids = matrices(heads, len(inputs.items), inputs.domain_of)
            items = []
            for (key, label), matrix in zip(inputs.items, grids, strict=True):
                items.append(_item_report(key, label, matrix, n_boot=n_boot, seed=seed))
                done += 1
                progress(done, total)
            group: dict[str, Any] = {
                "key": name,
                "title": title,
                "labels": len(heads),
                "units": len(units),
                "coders": list(coders),
                "items": items,
            }
            if is_answer:
                alignment = claims_align(heads, inputs.domain_of)
                claim_items = []
                for (key, label), matrix in zip(CLAIM_ITEMS, alignment.matrices, strict=True):
                    claim_items.append(
                        _item_report(key, label, matrix, n_boot=n_boot, seed=seed, unresolved=False)
                    )
                    done += 1
                    progress(done, total)
                group["claims"] = {
                    "matched_pairs": alignment.matched_pairs,
                    "per_coder": [
                        {
                            "coder": coder,
                            "claims": alignment.claims[coder],
                            "unmatched": alignment.unmatched[coder],
                        }
                        for coder in alignment.coders
                    ],
                    "items": claim_items,
                }
            groups.append(group)
        versions.append(
            {
                "codebook": {"name": info.name, "version": info.version, "digest": info.digest},
                "groups": groups,
            }
        )
    report: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "study": inputs.study,
        "codebook": {
            "name": inputs.codebook.name,
            "version": inputs.codebook.version,
            "digest": inputs.codebook.digest,
            "unit": inputs.codebook.unit,
        },
        "labels": len(inputs.heads),
        "labels_digest": inputs.labels_digest,
        "partitions": list(inputs.included_partitions),
        "sealed_partitions": list(inputs.sealed_partitions),
        "bootstrap": {"n_boot": n_boot, "seed": seed, "confidence": 0.95},
        "versions": versions,
    }
    if is_answer:
        report["claim_metrics"] = {
            "rows": list(inputs.claim_rows),
            "awaiting_final": inputs.awaiting_final,
            "failed_attempts": inputs.failed_attempts,
        }
    return report


def claim_tables(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The claim-metric tables of (filtered) claim rows: metrics.claims, labelled."""
    try:
        return {
            "evaluate": claim_metrics.evaluate(rows),
            "grouped": claim_metrics.grouped(rows),
            "support_precision": claim_metrics.support_precision(rows),
            "claim_counts": claim_metrics.claim_counts(rows),
            "veriscore": claim_metrics.veriscore(rows),
            "by_position": claim_metrics.support_by_position(rows),
            "error": None,
        }
    except claim_metrics.ClaimsInputError as exc:
        return {"error": f"{exc.code}: {exc}"}
