"""How the pages write an estimate: value, interval and counts, counts first when n is
small (seed 003: with small samples show the counts, not the rate alone). Pure."""

from __future__ import annotations

from typing import Any

#: Below this many units in a denominator the counts are shown before the rate.
SMALL_N = 30


def value_text(value: Any) -> str:
    """A predicted or gold value as people read it: U for null, JSON words for booleans."""
    if value is None:
        return "U"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def _number(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def estimate_view(estimate: dict[str, Any] | None) -> dict[str, Any] | None:
    """An estimate's display parts: the value, its interval and its counts; ``small`` when
    the denominator is under :data:`SMALL_N` (the page then leads with the counts)."""
    if estimate is None:
        return None
    low, high = estimate.get("low"), estimate.get("high")
    numerator, denominator = estimate.get("numerator"), estimate.get("denominator")
    interval = "" if low is None or high is None else f"[{low:.3f}, {high:.3f}]"
    counts = "" if denominator is None else f"{numerator}/{denominator}"
    return {
        "value": _number(estimate.get("value")),
        "interval": interval,
        "counts": counts,
        "small": denominator is not None and denominator < SMALL_N,
        "undefined": estimate.get("value") is None,
    }


def rate_view(rate: dict[str, Any]) -> dict[str, Any]:
    """A report rate (metrics.estimates.rate_estimates) for the page: the sample share with
    its counts, and the weighted estimate when it is a prevalence."""
    counts = {"numerator": rate.get("numerator"), "denominator": rate.get("n")}
    weighted = rate.get("weighted")
    return {
        **rate,
        "unweighted_view": estimate_view({**(rate.get("unweighted") or {}), **counts}),
        "weighted_view": estimate_view({**weighted, **counts}) if weighted else None,
    }
