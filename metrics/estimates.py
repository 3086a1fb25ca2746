"""Estimates a paper can print: Hájek-weighted rates and a judge (or system) scored against
gold, each with a bootstrap interval clustered by the sampling unit or the domain.

Pure tier: NumPy only (no Django, DRF or Celery). DESIGN.md, "Estimates a paper can print".
The resampling reuses :mod:`metrics.reliability` (its cluster index, multinomial draws and
percentile interval), so every bootstrap in the reports draws clusters the same way.

The cluster bootstrap
---------------------
With G clusters (domains, queries, answers: whatever the sampling unit is), a resample draws
G clusters with replacement and keeps every unit of each drawn cluster. Every statistic here
is a function of a few *totals* (sums over units), so each cluster is reduced to its totals
once and a resample is a vector of draw counts times those totals
(:func:`cluster_bootstrap_totals`): no unit is copied. The interval is the percentile
interval of the resampled statistic; resamples where the statistic is undefined (a zero
denominator) are left out, and the bounds are ``None`` if all are. The same ``seed`` gives
the same resamples, hence the same interval.

``clusters=None`` makes every unit its own cluster. That is, draw for draw, the same
bootstrap as passing distinct labels in a Python sequence (labels are indexed in order of
first appearance), so a clustered bootstrap with one unit per cluster *is* the unit
bootstrap for a given seed. A NumPy array of labels is indexed in sorted order instead: the
same distribution, not the same draws.

Errors
------
Invalid input raises :class:`EstimateInputError` (a ``ValueError``) whose ``field`` is the
path of the offending value (``inclusion_probabilities[3]``) and ``code`` a reason code.
"""

from __future__ import annotations

import contextlib
import math
import numbers
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from audit.contract import codes
from metrics.reliability import _cluster_index, _interval, _multinomial, encode

__all__ = [
    "LENGTH_MISMATCH",
    "NO_INCLUSION_PROBABILITIES",
    "NO_VALUES",
    "ClassScores",
    "Estimate",
    "EstimateInputError",
    "HajekEstimate",
    "JudgeScores",
    "cluster_bootstrap_totals",
    "hajek",
    "hajek_bootstrap",
    "judge_scores",
    "mean_interval",
    "net_gain_estimates",
    "pass_rate_estimates",
    "percentile_interval",
    "proportion_interval",
    "proportion_intervals",
    "rate_estimates",
    "ratio_difference_interval",
    "ratio_interval",
    "usability_estimates",
]

#: Two sequences that must run over the same units differ in length.
LENGTH_MISMATCH = "length_mismatch"
#: Reason of an undefined estimate: no unit has a value (all are ``None``, or none given).
NO_VALUES = "no_values"


class EstimateInputError(ValueError):
    """Invalid input to an estimate: ``code`` is a reason code, ``field`` the path of the
    offending value (``values[2]``); the message names both."""

    def __init__(self, code: str, field: str, message: str) -> None:
        super().__init__(f"{field}: {message} [{code}]")
        self.code = code
        self.field = field
        self.detail = message


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _invalid(path: str, expected: str, value: Any) -> EstimateInputError:
    return EstimateInputError(codes.INVALID_FIELD, path, f"is {_show(value)}; expected {expected}")


def _real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and math.isfinite(value)


def _listed(value: Any, path: str, expected: str) -> list[Any]:
    """A sequence or array of per-unit values as a list (a string is not one)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise _invalid(path, expected, value)
    return value.tolist() if isinstance(value, np.ndarray) else list(value)


def _check_lengths(n: int, other: Sequence[Any], name: str, of: str) -> None:
    if len(other) != n:
        raise EstimateInputError(
            LENGTH_MISMATCH, name, f"has {len(other)} entries for {n} {of}; one per unit"
        )


def _check_bootstrap(n_boot: Any, confidence: Any, seed: Any = 0) -> None:
    if type(seed) is not int or seed < 0:
        raise _invalid("seed", "an integer >= 0", seed)
    if type(n_boot) is not int or n_boot < 0:
        raise _invalid("n_boot", "an integer >= 0", n_boot)
    if not _real(confidence) or isinstance(confidence, bool) or not 0.0 < confidence < 1.0:
        raise _invalid("confidence", "a number strictly between 0 and 1", confidence)


# --- the cluster bootstrap ------------------------------------------------------------------


def _cluster_codes(clusters: Sequence[Hashable] | None, n_units: int) -> tuple[np.ndarray, int]:
    if clusters is None:
        return np.arange(n_units, dtype=np.int64), n_units
    _check_lengths(n_units, clusters, "clusters", "units")
    try:
        return _cluster_index(clusters, n_units)
    except TypeError:
        raise _invalid("clusters", "hashable labels, one per unit", clusters) from None


def _resample(per_cluster: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """(n_boot x m) totals: each row draws G clusters with replacement (G = rows of input)."""
    g, m = per_cluster.shape
    if g == 0 or n_boot == 0:
        return np.empty((0, m))
    rng = np.random.default_rng(seed)
    blocks = [block @ per_cluster for block in _multinomial(rng, n_boot, g, None, k=g)]
    return np.concatenate(blocks)


def cluster_bootstrap_totals(
    columns: np.ndarray | Sequence[Sequence[float]],
    clusters: Sequence[Hashable] | None,
    *,
    n_boot: int,
    seed: int,
) -> np.ndarray:
    """Column totals of ``n_boot`` cluster-bootstrap resamples.

    ``columns`` is a (units x m) array of per-unit quantities (e.g. an indicator and a
    weight); ``clusters`` one label per unit, or ``None`` for one cluster per unit. Returns
    an (n_boot x m) float array whose row b holds the totals of resample b (G clusters
    drawn with replacement, G the number of distinct labels). Reproducible for a ``seed``;
    an empty (0 x m) array when there are no units or ``n_boot`` is 0.
    """
    array = np.asarray(columns, dtype=np.float64)
    if array.ndim != 2:
        raise _invalid("columns", "a 2-D array (units x quantities)", array.shape)
    _check_bootstrap(n_boot, 0.95, seed)
    index, g = _cluster_codes(clusters, array.shape[0])
    per_cluster = np.zeros((g, array.shape[1]))
    np.add.at(per_cluster, index, array)
    return _resample(per_cluster, n_boot, seed)


def percentile_interval(
    samples: np.ndarray, confidence: float = 0.95
) -> tuple[float | None, float | None]:
    """The (1 - confidence)/2 and (1 + confidence)/2 quantiles of the defined (non-NaN)
    ``samples``; ``(None, None)`` when none is defined."""
    low, high = _interval(np.asarray(samples, dtype=np.float64), confidence)
    return _plain(low), _plain(high)


def _plain(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, numerator / denominator, np.nan)


# --- Hájek ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HajekEstimate:
    """A rate or mean weighted by inverse inclusion probability, beside the unweighted one.

    ``weighted`` = Σ(y/π) / Σ(1/π) and ``unweighted`` = Σy / n over the ``n`` units with a
    value; ``excluded`` counts the units whose value is ``None``. Both are ``None`` (with
    ``reason`` :data:`NO_VALUES`) when ``n`` is 0. The ``*_low``/``*_high`` bounds come from
    :func:`hajek_bootstrap` (``None`` from :func:`hajek`, or when undefined); ``clusters``
    is the number of sampling units the bootstrap drew from (``None`` without one).
    """

    weighted: float | None
    unweighted: float | None
    n: int
    excluded: int
    weighted_low: float | None = None
    weighted_high: float | None = None
    unweighted_low: float | None = None
    unweighted_high: float | None = None
    clusters: int | None = None
    reason: str | None = None


def _hajek_columns(
    values: Sequence[float | bool | None], probabilities: Sequence[float], name: str
) -> tuple[np.ndarray, int]:
    """(units x 4) columns y/π, 1/π, y, 1 (zeros for an excluded unit) and the excluded count."""
    values = _listed(values, "values", "a sequence of numbers or None")
    probabilities = _listed(probabilities, name, "a sequence of probabilities")
    n = len(values)
    _check_lengths(n, probabilities, name, "values")
    columns = np.zeros((n, 4))
    excluded = 0
    for i, (y, p) in enumerate(zip(values, probabilities, strict=True)):
        if isinstance(p, bool) or not _real(p) or not 0.0 < p <= 1.0:
            raise _invalid(f"{name}[{i}]", "an inclusion probability in (0, 1]", p)
        if y is None:
            excluded += 1
            continue
        if not _real(y):
            raise _invalid(f"values[{i}]", "a finite number, a boolean or None", y)
        columns[i] = (float(y) / p, 1.0 / p, float(y), 1.0)
    return columns, excluded


def _hajek_point(columns: np.ndarray, excluded: int) -> HajekEstimate:
    totals = columns.sum(axis=0)
    n = int(totals[3])
    if n == 0:
        return HajekEstimate(None, None, 0, excluded, reason=NO_VALUES)
    return HajekEstimate(float(totals[0] / totals[1]), float(totals[2] / n), n, excluded)


def hajek(
    values: Sequence[float | bool | None], inclusion_probabilities: Sequence[float]
) -> HajekEstimate:
    """The Hájek estimate Σ(y/π)/Σ(1/π) beside the plain mean, without intervals.

    ``values``: one outcome per unit (a number; a boolean counts 1/0, so a rate is the mean
    of an indicator), ``None`` for a unit without one — left out of both estimates and
    counted in ``excluded``. ``inclusion_probabilities``: each unit's probability π of having
    been sampled, in (0, 1]; anything else is an error naming its position. Units sampled
    with certainty (π = 1) make the two estimates equal.
    """
    columns, excluded = _hajek_columns(values, inclusion_probabilities, "inclusion_probabilities")
    return _hajek_point(columns, excluded)


def hajek_bootstrap(
    values: Sequence[float | bool | None],
    probabilities: Sequence[float],
    clusters: Sequence[Hashable] | None,
    seed: int,
    n_boot: int = 1000,
    *,
    confidence: float = 0.95,
) -> HajekEstimate:
    """:func:`hajek` with percentile intervals for both estimates from a bootstrap over the
    sampling unit.

    ``clusters`` gives each unit's sampling unit (the answer for claim metrics, the query for
    protocol metrics; ``None``: each unit is its own). A resample draws as many sampling
    units as there are, with replacement, and recomputes both ratios on the drawn units;
    units with a ``None`` value are drawn with their cluster but contribute nothing.
    """
    _check_bootstrap(n_boot, confidence, seed)
    columns, excluded = _hajek_columns(values, probabilities, "probabilities")
    point = _hajek_point(columns, excluded)
    index, g = _cluster_codes(clusters, len(columns))
    if point.n == 0:
        return HajekEstimate(None, None, 0, excluded, clusters=g, reason=NO_VALUES)
    per_cluster = np.zeros((g, 4))
    np.add.at(per_cluster, index, columns)
    totals = _resample(per_cluster, n_boot, seed)
    w_low, w_high = percentile_interval(_ratio(totals[:, 0], totals[:, 1]), confidence)
    u_low, u_high = percentile_interval(_ratio(totals[:, 2], totals[:, 3]), confidence)
    return HajekEstimate(
        point.weighted,
        point.unweighted,
        point.n,
        excluded,
        weighted_low=w_low,
        weighted_high=w_high,
        unweighted_low=u_low,
        unweighted_high=u_high,
        clusters=g,
    )


# --- a judge against gold -------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """A point ``value`` (``None`` if undefined) with its bootstrap interval ``low``/``high``
    (``None`` if undefined or not computed); ``numerator``/``denominator`` are the counts a
    proportion came from (``None`` for a coefficient such as kappa)."""

    value: float | None
    low: float | None = None
    high: float | None = None
    numerator: int | None = None
    denominator: int | None = None


@dataclass(frozen=True)
class ClassScores:
    """One category (``None`` is U): ``gold`` units with it in gold (its confusion row),
    ``predicted`` units predicted as it (its column); ``precision`` = correct / predicted,
    ``recall`` = correct / gold."""

    category: Hashable | None
    gold: int
    predicted: int
    precision: Estimate
    recall: Estimate


@dataclass(frozen=True)
class JudgeScores:
    """A judge's (or system's) values scored against gold labels.

    ``categories``: the values seen (plus ``positive``), sorted when sortable, then ``None``
    (U) last. ``confusion[i][j]`` counts units whose gold is ``categories[i]`` and whose
    prediction is ``categories[j]`` (rows gold, columns predicted), U included. ``accuracy``
    and ``kappa`` treat U as a category of its own. ``accepted_error`` (α) and
    ``false_block`` (β) are set only for a gate (``positive`` given). Intervals are
    percentile intervals of ``n_boot`` resamples (seed ``seed``) of the ``clusters``
    distinct clusters at level ``confidence``.
    """

    categories: tuple[Hashable | None, ...]
    confusion: tuple[tuple[int, ...], ...]
    n: int
    accuracy: Estimate
    kappa: Estimate
    classes: tuple[ClassScores, ...]
    positive: Hashable | None
    accepted_error: Estimate | None
    false_block: Estimate | None
    clusters: int
    n_boot: int
    seed: int
    confidence: float


def _kappas(matrices: np.ndarray) -> np.ndarray:
    """Cohen's kappa of each (K x K) matrix in a batch (B x K x K); NaN where undefined.

    The same rule as :func:`metrics.reliability.cohen_kappa`: undefined with fewer than two
    units or when chance agreement p_e is 1.
    """
    total = matrices.sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_o = np.trace(matrices, axis1=1, axis2=2) / total
        p_e = np.einsum("bi,bi->b", matrices.sum(axis=2), matrices.sum(axis=1)) / (total * total)
        kappa = (p_o - p_e) / (1.0 - p_e)
    kappa[(total < 2) | (p_e >= 1.0)] = np.nan
    return kappa


def _scores(matrices: np.ndarray, positive: int | None) -> dict[str, np.ndarray]:
    """Every score of a batch of confusion matrices (B x K x K, rows gold, U last)."""
    k = matrices.shape[1]
    gold = matrices.sum(axis=2)
    predicted = matrices.sum(axis=1)
    diagonal = np.diagonal(matrices, axis1=1, axis2=2)
    out = {
        "accuracy": _ratio(diagonal.sum(axis=1), gold.sum(axis=1)),
        "kappa": _kappas(matrices),
    }
    for c in range(k):
        out[f"precision{c}"] = _ratio(diagonal[:, c], predicted[:, c])
        out[f"recall{c}"] = _ratio(diagonal[:, c], gold[:, c])
    if positive is not None:
        fails = [r for r in range(k - 1) if r != positive]  # gold decided and not a pass
        fail_gold = gold[:, fails].sum(axis=1)
        out["alpha"] = _ratio(matrices[:, fails, positive].sum(axis=1), fail_gold)
        passes = gold[:, positive]
        out["beta"] = _ratio(passes - matrices[:, positive, positive], passes)
    return out


def judge_scores(
    predicted: Sequence[Hashable | None],
    gold: Sequence[Hashable | None],
    clusters: Sequence[Hashable] | None,
    seed: int,
    n_boot: int = 1000,
    positive: Hashable | None = None,
    *,
    confidence: float = 0.95,
) -> JudgeScores:
    """Score ``predicted`` against ``gold`` (one value per unit each, ``None`` = U) with
    intervals from a bootstrap clustered by ``clusters`` (the domain of each unit; ``None``:
    each unit its own cluster).

    Returns the confusion (U as its own row and column, always present), accuracy (share of
    units where prediction equals gold, U = U counting as agreement), Cohen's kappa on that
    confusion (p_o − p_e)/(1 − p_e) with p_e from the gold and predicted marginals, and per
    class precision and recall — each with a percentile interval (see the module docstring).

    ``positive`` makes it a binary gate: the value that means "pass"/accept (not ``None``;
    added to the categories if never seen). The judge *accepts* a unit iff it predicts
    ``positive``; any other prediction, U included, blocks it (fail closed). Then
    ``accepted_error`` α = gold-fail units accepted / gold-fail units, where gold fails when
    it is decided (not U) and not ``positive``; and ``false_block`` β = gold-pass units
    blocked / gold-pass units. Units with gold U enter neither α nor β.
    """
    _check_bootstrap(n_boot, confidence, seed)
    predicted = _listed(predicted, "predicted", "a sequence of values (None for U)")
    gold = _listed(gold, "gold", "a sequence of values (None for U)")
    n = len(gold)
    _check_lengths(n, predicted, "predicted", "gold values")
    if positive is not None and not isinstance(positive, Hashable):
        raise _invalid("positive", "a hashable value or None", positive)
    for name, sequence in (("gold", gold), ("predicted", predicted)):
        for i, value in enumerate(sequence):
            if not isinstance(value, Hashable) or (isinstance(value, float) and value != value):
                raise _invalid(f"{name}[{i}]", "a hashable value or None (U)", value)
    rows = [list(gold), list(predicted)]
    codes_, categories = encode(rows)
    if positive is not None and positive not in categories:
        order = [*categories, positive]
        with contextlib.suppress(TypeError):  # unsortable mixtures keep positive last
            order = sorted(order)
        codes_, categories = encode(rows, order=order)
    k = len(categories) + 1  # U last
    codes_ = np.where(codes_ < 0, k - 1, codes_)
    cells = codes_[0] * k + codes_[1]
    confusion = np.bincount(cells, minlength=k * k).reshape(k, k)
    index, g = _cluster_codes(clusters, n)
    per_cluster = np.bincount(index * (k * k) + cells, minlength=g * k * k)
    per_cluster = per_cluster.reshape(g, k * k).astype(np.float64)
    resampled = _resample(per_cluster, n_boot, seed).reshape(-1, k, k)

    pos = None if positive is None else categories.index(positive)
    point = _scores(confusion[None, :, :].astype(np.float64), pos)
    draws = _scores(resampled, pos)

    def estimate(name: str, numerator: int | None = None, denominator: int | None = None):
        value = _plain(float(point[name][0]))
        low = high = None
        if value is not None:
            low, high = percentile_interval(draws[name], confidence)
        return Estimate(value, low, high, numerator, denominator)

    gold_totals = confusion.sum(axis=1)
    predicted_totals = confusion.sum(axis=0)
    diagonal = np.diagonal(confusion)
    classes = tuple(
        ClassScores(
            category=c,
            gold=int(gold_totals[i]),
            predicted=int(predicted_totals[i]),
            precision=estimate(f"precision{i}", int(diagonal[i]), int(predicted_totals[i])),
            recall=estimate(f"recall{i}", int(diagonal[i]), int(gold_totals[i])),
        )
        for i, c in enumerate([*categories, None])
    )
    accepted_error = false_block = None
    if pos is not None:
        fails = [r for r in range(k - 1) if r != pos]
        accepted_error = estimate(
            "alpha", int(confusion[fails, pos].sum()), int(gold_totals[fails].sum())
        )
        passes = int(gold_totals[pos])
        false_block = estimate("beta", passes - int(confusion[pos, pos]), passes)
    return JudgeScores(
        categories=(*categories, None),
        confusion=tuple(tuple(int(v) for v in row) for row in confusion),
        n=n,
        accuracy=estimate("accuracy", int(diagonal.sum()), n),
        kappa=estimate("kappa"),
        classes=classes,
        positive=positive,
        accepted_error=accepted_error,
        false_block=false_block,
        clusters=g,
        n_boot=n_boot,
        seed=seed,
        confidence=float(confidence),
    )


# --- a rate for a report: weighted beside unweighted, or honestly not a prevalence ----------

#: Reason a rate carries no weighted estimate: some unit has no inclusion probability.
NO_INCLUSION_PROBABILITIES = "no_inclusion_probabilities"


def rate_estimates(
    values: Sequence[float | bool | None],
    inclusion_probabilities: Sequence[float | None],
    clusters: Sequence[Hashable] | None,
    seed: int,
    n_boot: int = 1000,
    *,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """A rate (the mean of 0/1 values; ``None`` excluded and counted) as a report shows it.

    With an inclusion probability for **every** unit: the Hájek estimate beside the
    unweighted share, each with its bootstrap interval over ``clusters`` (the sampling unit:
    the answer for claim metrics, the query for protocol metrics). Without one for some
    unit: the unweighted share of the labelled sample only, ``prevalence`` False and
    ``weighted_reason`` :data:`NO_INCLUSION_PROBABILITIES` — it is not a prevalence.

    Returns a JSON value ``{"n", "excluded", "numerator", "prevalence", "unweighted":
    {value, low, high}, "weighted": {value, low, high} | None, "weighted_reason",
    "missing_probabilities", "clusters"}``.
    """
    values = _listed(values, "values", "a sequence of numbers or None")
    probabilities = _listed(
        inclusion_probabilities, "inclusion_probabilities", "a sequence of probabilities or None"
    )
    _check_lengths(len(values), probabilities, "inclusion_probabilities", "values")
    missing = sum(1 for p in probabilities if p is None)
    weighted = missing == 0 and len(values) > 0
    used = probabilities if weighted else [1.0] * len(values)
    result = hajek_bootstrap(values, used, clusters, seed, n_boot, confidence=confidence)
    numerator = sum(1 for v in values if v is not None and float(v) == 1.0)
    return {
        "n": result.n,
        "excluded": result.excluded,
        "numerator": numerator,
        "prevalence": weighted,
        "unweighted": {
            "value": result.unweighted,
            "low": result.unweighted_low,
            "high": result.unweighted_high,
        },
        "weighted": {
            "value": result.weighted,
            "low": result.weighted_low,
            "high": result.weighted_high,
        }
        if weighted
        else None,
        "weighted_reason": None if weighted else NO_INCLUSION_PROBABILITIES,
        "missing_probabilities": missing,
        "clusters": result.clusters,
    }


# --- intervals of the report tables -----------------------------------------------------------


def proportion_interval(
    numerator: int, denominator: int, *, n_boot: int, seed: int, confidence: float = 0.95
) -> tuple[float | None, float | None]:
    """The unit-bootstrap percentile interval of a proportion ``numerator/denominator``
    where each unit is its own sampling unit (an answer, for answer-level verdicts).

    Resampling ``denominator`` units with replacement draws Binomial(denominator, p) ones,
    p = numerator/denominator, so the resampled proportions are drawn from that binomial
    directly: the same distribution as copying units, at no cost per unit. ``(None, None)``
    for a zero denominator or ``n_boot`` 0."""
    _check_bootstrap(n_boot, confidence, seed)
    if type(numerator) is not int or type(denominator) is not int:
        raise _invalid("numerator", "integer counts", (numerator, denominator))
    if not 0 <= numerator <= denominator:
        raise _invalid("numerator", f"a count in [0, {denominator}]", numerator)
    if denominator == 0 or n_boot == 0:
        return None, None
    rng = np.random.default_rng(seed)
    draws = rng.binomial(denominator, numerator / denominator, size=n_boot) / denominator
    return percentile_interval(draws, confidence)


def proportion_intervals(
    counts: Sequence[tuple[int, int]], *, n_boot: int, seed: int, confidence: float = 0.95
) -> list[tuple[float | None, float | None]]:
    """:func:`proportion_interval` of many ``(numerator, denominator)`` pairs at once (every
    verdict rate of every group of a table), drawn together from one seeded generator a
    thousand rows at a time: reproducible for a ``seed``, the same distribution per pair."""
    _check_bootstrap(n_boot, confidence, seed)
    for i, (numerator, denominator) in enumerate(counts):
        if type(numerator) is not int or type(denominator) is not int:
            raise _invalid(f"counts[{i}]", "integer counts", (numerator, denominator))
        if not 0 <= numerator <= denominator:
            raise _invalid(f"counts[{i}]", f"a numerator in [0, {denominator}]", numerator)
    out: list[tuple[float | None, float | None]] = [(None, None)] * len(counts)
    rows = [i for i, (_, d) in enumerate(counts) if d > 0]
    if not rows or n_boot == 0:
        return out
    rng = np.random.default_rng(seed)
    tail = (1.0 - confidence) / 2.0
    for start in range(0, len(rows), 1000):
        chunk = rows[start : start + 1000]
        d = np.array([counts[i][1] for i in chunk], dtype=np.int64)
        p = np.array([counts[i][0] for i in chunk], dtype=np.float64) / d
        draws = rng.binomial(d[:, None], p[:, None], size=(len(chunk), n_boot)) / d[:, None]
        low, high = np.quantile(draws, [tail, 1.0 - tail], axis=1)
        for j, i in enumerate(chunk):
            out[i] = (float(low[j]), float(high[j]))
    return out


def _unit_bootstrap_totals(columns: np.ndarray, *, n_boot: int, seed: int) -> np.ndarray:
    """Column totals of ``n_boot`` unit-bootstrap resamples, drawn over the *distinct* rows.

    Drawing n units with replacement draws each distinct row a Multinomial(n, c_j/n) number
    of times (c_j: its count), so the totals have exactly the distribution of copying units,
    at a cost in the number of distinct rows, not of units (per-answer counts and scores take
    few distinct values even for 10^5 answers)."""
    n = columns.shape[0]
    if n == 0 or n_boot == 0:
        return np.empty((0, columns.shape[1]))
    distinct, counts = np.unique(columns, axis=0, return_counts=True)
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts / n, size=n_boot)
    return draws @ distinct


def mean_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    n_boot: int,
    seed: int,
    confidence: float = 0.95,
) -> tuple[float | None, float | None]:
    """The bootstrap percentile interval of the mean of ``values`` (e.g. per-answer scores),
    drawing ``clusters`` (``None``: each value its own) with replacement."""
    columns = np.column_stack([np.asarray(values, dtype=np.float64), np.ones(len(values))])
    columns = columns.reshape(len(values), 2)
    if clusters is None:
        _check_bootstrap(n_boot, confidence, seed)
        totals = _unit_bootstrap_totals(columns, n_boot=n_boot, seed=seed)
    else:
        totals = cluster_bootstrap_totals(columns, clusters, n_boot=n_boot, seed=seed)
    return percentile_interval(_ratio(totals[:, 0], totals[:, 1]), confidence)


def ratio_interval(
    numerators: Sequence[float],
    denominators: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    *,
    n_boot: int,
    seed: int,
    confidence: float = 0.95,
) -> tuple[float | None, float | None]:
    """The bootstrap percentile interval of Σnumerators / Σdenominators (a pooled rate,
    e.g. supported claims over verifiable claims), drawing units (answers) or ``clusters``
    with replacement, each with all of its numerator and denominator."""
    columns = np.column_stack(
        [np.asarray(numerators, dtype=np.float64), np.asarray(denominators, dtype=np.float64)]
    ).reshape(len(numerators), 2)
    if clusters is None:
        _check_bootstrap(n_boot, confidence, seed)
        totals = _unit_bootstrap_totals(columns, n_boot=n_boot, seed=seed)
    else:
        totals = cluster_bootstrap_totals(columns, clusters, n_boot=n_boot, seed=seed)
    return percentile_interval(_ratio(totals[:, 0], totals[:, 1]), confidence)


def ratio_difference_interval(
    first: Sequence[Sequence[float]],
    second: Sequence[Sequence[float]],
    clusters: Sequence[Hashable] | None = None,
    *,
    n_boot: int,
    seed: int,
    confidence: float = 0.95,
) -> tuple[float | None, float | None]:
    """The paired bootstrap percentile interval of a difference of two pooled rates,
    Σa₁/Σd₁ − Σa₂/Σd₂ (an evaluated system's rate minus its baseline's on the same queries).

    ``first`` and ``second`` hold one ``(numerator, denominator)`` row per sampling unit
    (a query), the same units in the same order: a unit one system has no value for is
    ``(0, 0)`` on its side. Each resample draws the units (or ``clusters``) with
    replacement *once* for both rates, so the interval reflects that both systems answered
    the same queries (a paired comparison) rather than two independent samples. Resamples
    where either rate is undefined (a zero denominator) are left out; ``(None, None)`` when
    none is defined or ``n_boot`` is 0. Reproducible for a ``seed``. Without ``clusters``
    the resamples are drawn over the distinct rows (:func:`_unit_bootstrap_totals`), so
    10⁵ queries with few distinct per-query totals cost little.
    """
    a = _listed(first, "first", "a sequence of (numerator, denominator) rows")
    b = _listed(second, "second", "a sequence of (numerator, denominator) rows")
    _check_lengths(len(a), b, "second", "rows of first")
    _check_bootstrap(n_boot, confidence, seed)
    columns = np.zeros((len(a), 4), dtype=np.float64)
    for name, rows, offset in (("first", a, 0), ("second", b, 2)):
        for i, row in enumerate(rows):
            ok = isinstance(row, Sequence) and len(row) == 2 and all(_real(v) for v in row)
            if not ok or not 0 <= row[0] <= row[1]:
                raise _invalid(f"{name}[{i}]", "(numerator, denominator), 0 <= n <= d", row)
            columns[i, offset : offset + 2] = row
    if len(a) == 0 or n_boot == 0:
        return None, None
    if clusters is None:  # drawn over the distinct rows: the same distribution, faster
        totals = _unit_bootstrap_totals(columns, n_boot=n_boot, seed=seed)
    else:
        totals = cluster_bootstrap_totals(columns, clusters, n_boot=n_boot, seed=seed)
    difference = _ratio(totals[:, 0], totals[:, 1]) - _ratio(totals[:, 2], totals[:, 3])
    return percentile_interval(difference, confidence)


# --- seed 002's protocol rates, weighted ------------------------------------------------------


def pass_rate_estimates(
    passes: Sequence[bool | None],
    inclusion_probabilities: Sequence[float | None],
    queries: Sequence[Hashable],
    seed: int,
    n_boot: int = 1000,
) -> dict[str, Any]:
    """PassR (answers passing the min-grade rule / answers with a decided pass; unknowns
    excluded and counted) weighted beside unweighted, bootstrapped over queries."""
    return rate_estimates(passes, inclusion_probabilities, queries, seed, n_boot)


def usability_estimates(
    query_grades: Sequence[int | None],
    inclusion_probabilities: Sequence[float | None],
    seed: int,
    n_boot: int = 1000,
) -> dict[str, dict[str, Any]]:
    """Usable_q (share of queries with e ≥ 1) and HighQ_q (share with e = 2), one value of e
    per query (``None``: e undefined, no retrieved document — excluded and counted), each
    weighted beside unweighted and bootstrapped over queries (the sampling unit)."""
    grades = _listed(query_grades, "query_grades", "a sequence of 0, 1, 2 or None")
    for i, grade in enumerate(grades):
        if grade is not None and (type(grade) is not int or grade not in (0, 1, 2)):
            raise _invalid(f"query_grades[{i}]", "0, 1, 2 or None", grade)
    usable = [None if e is None else int(e >= 1) for e in grades]
    high = [None if e is None else int(e == 2) for e in grades]
    return {
        "usable_q": rate_estimates(usable, inclusion_probabilities, None, seed, n_boot),
        "highq_q": rate_estimates(high, inclusion_probabilities, None, seed, n_boot),
    }


NET_GAIN_OUTCOMES = ("G", "S", "B")


def net_gain_estimates(
    outcomes: Sequence[str],
    inclusion_probabilities: Sequence[float | None],
    queries: Sequence[Hashable],
    seed: int,
    n_boot: int = 1000,
    *,
    confidence: float = 0.95,
) -> dict[str, Any]:
    """NetGain = (N_G − N_B)/N × 100% of pairwise outcomes ``G``/``S``/``B``, and its Hájek
    form Σ w·(g − b) / Σ w × 100% (w = 1/π) when every pair has an inclusion probability,
    each with a percentile interval from a bootstrap over queries."""
    _check_bootstrap(n_boot, confidence, seed)
    outcomes = _listed(outcomes, "outcomes", "a sequence of G, S or B")
    probabilities = _listed(
        inclusion_probabilities, "inclusion_probabilities", "a sequence of probabilities"
    )
    n = len(outcomes)
    _check_lengths(n, probabilities, "inclusion_probabilities", "outcomes")
    for i, outcome in enumerate(outcomes):
        if outcome not in NET_GAIN_OUTCOMES:
            raise _invalid(f"outcomes[{i}]", "G, S or B", outcome)
    missing = sum(1 for p in probabilities if p is None)
    weighted = missing == 0 and n > 0
    weights = []
    for i, p in enumerate(probabilities):
        if p is None:
            weights.append(1.0)
            continue
        if isinstance(p, bool) or not _real(p) or not 0.0 < p <= 1.0:
            raise _invalid(f"inclusion_probabilities[{i}]", "an inclusion probability in (0, 1]", p)
        weights.append(1.0 / p if weighted else 1.0)
    diff = [(o == "G") - (o == "B") for o in outcomes]
    columns = np.array(
        [[w * d, w, float(d), 1.0] for w, d in zip(weights, diff, strict=True)], dtype=np.float64
    ).reshape(n, 4)
    index, g = _cluster_codes(queries, n)
    per_cluster = np.zeros((g, 4))
    np.add.at(per_cluster, index, columns)
    totals = _resample(per_cluster, n_boot, seed)
    point = columns.sum(axis=0)

    def scaled(numerator: float, denominator: float) -> float | None:
        return None if denominator == 0 else 100.0 * numerator / denominator

    w_low, w_high = percentile_interval(100.0 * _ratio(totals[:, 0], totals[:, 1]), confidence)
    u_low, u_high = percentile_interval(100.0 * _ratio(totals[:, 2], totals[:, 3]), confidence)
    return {
        "n": n,
        "good": outcomes.count("G"),
        "same": outcomes.count("S"),
        "bad": outcomes.count("B"),
        "prevalence": weighted,
        "unweighted": {"value": scaled(point[2], point[3]), "low": u_low, "high": u_high},
        "weighted": {"value": scaled(point[0], point[1]), "low": w_low, "high": w_high}
        if weighted
        else None,
        "weighted_reason": None if weighted else NO_INCLUSION_PROBABILITIES,
        "missing_probabilities": missing,
        "clusters": g,
    }
