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

import numpy as np

from metrics import claims as claim_metrics
from metrics import reliability
from metrics.estimates import (
    mean_interval,
    proportion_intervals,
    rate_estimates,
    ratio_interval,
)
from metrics.matrices import (
    CLAIM_ITEMS,
    Heads,
    Matrix,
    U,
    UnitDomains,
    claims_align,
    document_matrices,
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
    heads: Heads
    domains: UnitDomains
    labels_digest: str
    sealed_partitions: tuple[str, ...]
    included_partitions: tuple[str, ...]
    claim_rows: tuple[dict[str, Any], ...] = ()
    awaiting_final: int = 0
    failed_attempts: int = 0
    #: (final R_O, inclusion probability, answer) of each tuple unit with a final record.
    outcomes: tuple[tuple[Any, float | None, int], ...] = ()
    extra: dict[str, Any] = field(default_factory=dict)
    #: A codebook of fields (format 2): each item's level of measurement, by key. Empty
    #: for the first codebooks (every item nominal, claims aligned for answers).
    levels: dict[str, str] = field(default_factory=dict)
    #: (key, label) of the per-document fields of a query_documents codebook: items whose
    #: units are (unit, document) pairs (their levels are in ``levels`` too).
    document_items: tuple[tuple[str, str], ...] = ()
    #: Whether the codebook's claims are aligned between coders and measured (metrics.claims,
    #: over ``claim_rows``): a codebook whose engine has a claims field in format 1's shape.
    claims_aligned: bool = False
    #: The rates a paper prints (:func:`estimates_build`), from the codebook's engine.
    rates: tuple[RateSpec, ...] = ()


@dataclass(frozen=True)
class RateSpec:
    """One rate of the report's estimates: the share of ``key`` among the final records that
    decide it. ``source`` says where the values are: ``"outcomes"`` (the derived endpoint of
    each final record, :attr:`ReportInputs.outcomes`) or ``"records"`` (a field's value in
    each assessed final record, :attr:`ReportInputs.claim_rows`)."""

    key: str
    label: str
    unit: str
    source: str


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


def _numeric(categories: Sequence[str]) -> np.ndarray | None:
    """Each category's number (U: NaN), or None when one is not a number (a level above
    nominal needs numbers: grades, numbers)."""
    out = np.full(len(categories), np.nan)
    for i, name in enumerate(categories):
        if name == U:
            continue
        try:
            out[i] = float(name)
        except ValueError:
            return None
        if not math.isfinite(out[i]):
            return None
    return out


def _summary_at_level(
    matrix: Matrix, *, level: str, n_boot: int, seed: int
) -> dict[str, Any] | None:
    """U excluded, alpha at an ordinal or interval level over the values themselves (so
    that ranks and distances are the values', not the codes'); None if a value is not a
    number."""
    numbers = _numeric(matrix.categories)
    if numbers is None:
        return None
    values = np.full(matrix.codes.shape, np.nan)
    present = matrix.codes >= 0
    values[present] = numbers[matrix.codes[present]]
    summary = reliability.summarize(
        values, level=level, clusters=matrix.clusters, n_boot=n_boot, seed=seed
    )
    names = {float(numbers[i]): name for i, name in enumerate(matrix.categories) if name != U}
    summary["categories"] = [names.get(float(value), str(value)) for value in summary["categories"]]
    summary["level"] = level
    return finite(summary)


def _summary(
    matrix: Matrix, *, u_missing: bool, n_boot: int, seed: int, level: str | None = None
) -> dict[str, Any]:
    """One treatment of one item. ``level`` is the item's level of measurement (codebooks
    of fields; None: the first codebooks, nominal throughout): with U excluded
    (``u_missing``) alpha is computed at it; with U as a category of its own the values
    cannot all be ranked or measured, so that treatment is nominal. With a ``level`` the
    summary says which level it used."""
    if not matrix.codes.size:
        empty: dict[str, Any] = {"n_units": 0, "n_coders": len(matrix.coders), "empty": True}
        if level is not None:
            empty["level"] = level if u_missing else "nominal"
        return empty
    if u_missing and level not in (None, "nominal"):
        summary = _summary_at_level(matrix, level=level, n_boot=n_boot, seed=seed)
        if summary is not None:
            return summary
    # Codes as numbers (``reliability``'s fast form): with the categories sorted, code
    # order is category order, so every coefficient, pattern and resample is the same as
    # with the category strings, and the categories are named back afterwards.
    summary = reliability.summarize(
        matrix.treatment(u_missing=u_missing),
        level="nominal",
        clusters=matrix.clusters,
        n_boot=n_boot,
        seed=seed,
    )
    summary["categories"] = [matrix.categories[int(code)] for code in summary["categories"]]
    if level is not None:
        summary["level"] = "nominal"
    return finite(summary)


def _confusion(matrix: Matrix) -> dict[str, Any]:
    first, second = pooled_pairs(matrix.codes)
    if not len(first):
        return {"matrix": [], "categories": [], "pairs": 0}
    grid, codes = reliability.confusion_matrix(first.astype(np.float64), second.astype(np.float64))
    categories = [matrix.categories[int(code)] for code in codes]
    return finite({"matrix": grid, "categories": categories, "pairs": len(first)})


def _unresolved(matrix: Matrix) -> list[dict[str, Any]]:
    coded = (matrix.codes >= 0).sum(axis=1).tolist()
    if U in matrix.categories:
        unresolved = (matrix.codes == matrix.categories.index(U)).sum(axis=1).tolist()
    else:
        unresolved = [0] * len(matrix.coders)
    return [
        finite({"coder": coder, "coded": n, "unresolved": u, "share": u / n if n else None})
        for coder, n, u in zip(matrix.coders, coded, unresolved, strict=True)
    ]


def _item_report(
    key: str,
    label: str,
    matrix: Matrix,
    *,
    n_boot: int,
    seed: int,
    unresolved: bool = True,
    level: str | None = None,
) -> dict[str, Any]:
    item: dict[str, Any] = {"key": key, "label": label}
    if level is not None:
        item["level"] = level
    return {
        **item,
        "u_category": _summary(matrix, u_missing=False, n_boot=n_boot, seed=seed, level=level),
        "u_missing": _summary(matrix, u_missing=True, n_boot=n_boot, seed=seed, level=level),
        "confusion": _confusion(matrix),
        "unresolved": _unresolved(matrix) if unresolved and len(matrix.units) else [],
    }


def _groups(inputs: ReportInputs) -> list[tuple[str, list[tuple[str, str, np.ndarray]]]]:
    """Per codebook digest (the study's first): the groups that have labels, with the
    labels they select."""
    heads = inputs.heads
    order = sorted(
        range(len(heads.codebooks)),
        key=lambda i: (heads.codebooks[i] != inputs.codebook.digest, heads.codebooks[i]),
    )
    out = []
    for index in order:
        of_version = heads.codebook == index
        groups = []
        for name, title in GROUPS:
            selected = of_version & (heads.assisted == (name == "assisted"))
            if selected.any():
                groups.append((name, title, selected))
        if of_version.any():
            out.append((heads.codebooks[index], groups))
    return out


def report_build(
    inputs: ReportInputs,
    *,
    n_boot: int,
    seed: int = 0,
    progress: Callable[[int, int], None] = lambda done, total: None,
) -> dict[str, Any]:
    """The report's JSON value. ``progress(done, total)`` is called after each item."""
    # Claims are aligned where the codebook's engine says so; every other value field is
    # compared as an item (a codebook of fields at each field's level).
    is_answer = inputs.claims_aligned
    plan = _groups(inputs)
    per_group = (
        len(inputs.items) + len(inputs.document_items) + (len(CLAIM_ITEMS) if is_answer else 0)
    )
    total = max(1, per_group * sum(len(groups) for _, groups in plan))
    done = 0
    versions = []
    for digest, selections in plan:
        info = inputs.codebooks.get(digest) or CodebookInfo("?", "?", digest, inputs.codebook.unit)
        groups = []
        for name, title, selected in selections:
            coders, units, grids = matrices(inputs.heads, selected, inputs.domains)
            items = []
            for (key, label), matrix in zip(inputs.items, grids, strict=True):
                items.append(
                    _item_report(
                        key,
                        label,
                        matrix,
                        n_boot=n_boot,
                        seed=seed,
                        level=inputs.levels.get(key) if inputs.levels else None,
                    )
                )
                done += 1
                progress(done, total)
            group: dict[str, Any] = {
                "key": name,
                "title": title,
                "labels": int(selected.sum()),
                "units": len(units),
                "coders": list(coders),
                "items": items,
            }
            if inputs.document_items:
                # One item per (unit, document): the field's value on each document.
                n_documents, document_grids = document_matrices(
                    inputs.heads, selected, inputs.domains, len(inputs.document_items)
                )
                for (key, label), matrix in zip(inputs.document_items, document_grids, strict=True):
                    item = _item_report(
                        key, label, matrix, n_boot=n_boot, seed=seed, level=inputs.levels.get(key)
                    )
                    items.append({**item, "per": "document"})
                    done += 1
                    progress(done, total)
                group["documents"] = n_documents
            if is_answer:
                heads = [inputs.heads.head(i) for i in np.flatnonzero(selected).tolist()]
                alignment = claims_align(heads, inputs.domains)
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
    report["estimates"] = estimates_build(inputs, n_boot=n_boot, seed=seed)
    if is_answer:
        rows = list(inputs.claim_rows)
        cohort = claim_cohort(rows)
        report["claim_metrics"] = {
            "veriscore_cohort": cohort,
            "rows": rows,
            # The tables of every row, computed once here (the page shows them unfiltered
            # without computing them again per request).
            "tables": claim_tables(rows, cohort=cohort, n_boot=n_boot),
            "awaiting_final": inputs.awaiting_final,
            "failed_attempts": inputs.failed_attempts,
        }
    return report


def estimates_build(inputs: ReportInputs, *, n_boot: int, seed: int = 0) -> dict[str, Any]:
    """The rates a paper prints (:attr:`ReportInputs.rates`, from the codebook's engine), from
    the final records, each weighted (Hájek) beside unweighted where every unit has an
    inclusion probability, with bootstrap intervals over the sampling unit (the answer). An
    endpoint's rate is the share of 1 among decided units (U excluded and counted); a
    field's, its true share among assessed answers (null excluded and counted)."""
    rates: list[dict[str, Any]] = []
    assessed = [
        row for row in inputs.claim_rows if row.get("status") == "complete" and row.get("record")
    ]
    for spec in inputs.rates:
        if spec.source == "outcomes":
            values = [value for value, _, _ in inputs.outcomes]
            probabilities = [probability for _, probability, _ in inputs.outcomes]
            answers: list[Any] | None = [answer for _, _, answer in inputs.outcomes]
        else:
            values = [row.get(spec.key) for row in assessed]
            probabilities = [row.get("inclusion_probability") for row in assessed]
            answers = None
        rates.append(
            {
                "key": spec.key,
                "label": spec.label,
                "unit": spec.unit,
                **rate_estimates(values, probabilities, answers, seed, n_boot),
            }
        )
    return {"sampling_unit": "answer", "rates": rates}


def claim_cohort(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """VeriScore's K per domain from the study's whole cohort: every answer with a final
    record (answers awaiting one have no claims yet and would pull the median down)."""
    try:
        return claim_metrics.veriscore_cohort([r for r in rows if r.get("record")])
    except claim_metrics.ClaimsInputError:
        return {}


def claim_tables(
    rows: Sequence[dict[str, Any]],
    *,
    cohort: dict[str, dict[str, Any]] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """The claim-metric tables of (filtered) claim rows: metrics.claims, labelled.

    ``cohort`` (:func:`claim_cohort` of the report's unfiltered rows) fixes VeriScore's K per
    domain, so that a filter never changes it; without it K is the median of ``rows``."""
    try:
        parsed = claim_metrics.assessments(rows)  # read once for every table
        tables = {
            "evaluate": claim_metrics.evaluate(parsed),
            "grouped": claim_metrics.grouped(parsed),
            "support_precision": claim_metrics.support_precision(parsed),
            "claim_counts": claim_metrics.claim_counts(parsed),
            "veriscore": claim_metrics.veriscore(parsed, cohort=cohort),
            "by_position": claim_metrics.support_by_position(parsed),
            "error": None,
        }
    except claim_metrics.ClaimsInputError as exc:
        return {"error": f"{exc.code}: {exc}"}
    _intervals(tables, n_boot=n_boot, seed=seed)
    _position_intervals(tables["by_position"], rows, n_boot=n_boot, seed=seed)
    return tables


def _position_intervals(
    bins: list[dict[str, Any]], rows: Sequence[dict[str, Any]], *, n_boot: int, seed: int
) -> None:
    """``low``/``high`` of each claim-position bin's support rate, in place: a bootstrap
    over completed answers (each drawn with all of its claims in the bin, none for an answer
    without one), as metrics.claims.support_by_position counts them."""
    count = len(bins)
    per_answer: list[list[tuple[int, int]]] = [[] for _ in range(count)]
    for row in rows:
        if row.get("status") != "complete":
            continue
        tallies = [[0, 0] for _ in range(count)]
        for claim in row.get("claims") or ():
            position, length = claim.get("position"), claim.get("answer_length")
            if claim.get("kind", "verifiable") != "verifiable" or position is None or not length:
                continue
            tally = tallies[position * count // length]
            tally[0] += claim.get("supported") is True
            tally[1] += 1
        for b in range(count):
            per_answer[b].append((tallies[b][0], tallies[b][1]))
    for b, entry in enumerate(bins):
        entry["low"], entry["high"] = (None, None)
        if entry["denominator"]:
            entry["low"], entry["high"] = ratio_interval(
                [s for s, _ in per_answer[b]],
                [n for _, n in per_answer[b]],
                n_boot=n_boot,
                seed=seed,
            )


def _intervals(tables: dict[str, Any], *, n_boot: int, seed: int) -> None:
    """Add ``low``/``high`` (95% bootstrap over answers, the sampling unit) to every rate of
    the claim tables, in place: each verdict rate of every group, pooled support precision,
    the mean support precision per response and the mean VeriScore."""
    cells = [
        entry[name]
        for entry in [tables["evaluate"], *tables["grouped"]]
        for name in claim_metrics.VERDICTS
    ]
    bounds = proportion_intervals(
        [(cell["numerator"], cell["denominator"]) for cell in cells], n_boot=n_boot, seed=seed
    )
    for cell, (low, high) in zip(cells, bounds, strict=True):
        cell["low"], cell["high"] = low, high
    support = tables["support_precision"]
    per_response = support["per_response"]
    pooled = support["pooled"]
    pooled["low"], pooled["high"] = (None, None)
    if per_response and pooled["denominator"]:
        pooled["low"], pooled["high"] = ratio_interval(
            [r["numerator"] for r in per_response],
            [r["denominator"] for r in per_response],
            n_boot=n_boot,
            seed=seed,
        )
    rates = [r["rate"] for r in per_response if r["rate"] is not None]
    support["mean_low"], support["mean_high"] = (
        mean_interval(rates, n_boot=n_boot, seed=seed) if rates else (None, None)
    )
    support["mean_n"] = len(rates)
    score = tables["veriscore"]
    scores = [r["score"] for r in score["per_response"] if r["score"] is not None]
    score["mean_low"], score["mean_high"] = (
        mean_interval(scores, n_boot=n_boot, seed=seed)
        if score["mean"] is not None and scores
        else (None, None)
    )
