"""Inter-coder reliability: Krippendorff's alpha, Cohen's, Fleiss' and Gwet's coefficients,
raw agreement, confusion matrices, bootstrap intervals and unresolved coverage.

Pure tier: NumPy only (no Django, DRF or Celery), so workers, the report and the tests call
the same functions on plain values.

Data convention
---------------
``data`` is a sequence of coders' rows over the same units — rows are coders (annotators),
columns are units — each value a hashable category or ``None`` (a float NaN counts as
missing too); or a 2-D NumPy array, numeric with NaN as missing. :func:`encode` turns either
into integer codes (missing is ``-1``) and the list of categories.

How the report treats U (unresolved) is the caller's choice, made before calling: map U to
a value such as ``"U"`` to count it as a category of its own (the headline), or to ``None``
to treat it as missing (the sensitivity analysis). :func:`unresolved_coverage` reports how
often each coder used it.

Efficiency
----------
Every coefficient here depends on the units only through how many units show each distinct
column of values (a *pattern*: which coder gave which code). Units are therefore collapsed to
their unique columns with counts (:func:`unique_columns`), every per-pattern quantity is
computed once, and a coefficient is a weighted sum over patterns. A bootstrap resample of
units is then just another vector of pattern counts (multinomial over the patterns), so
1,000 resamples cost 1,000 small weighted sums and never copy the data.

Undefined values
----------------
The coefficient functions return ``nan`` when a coefficient is undefined; :func:`summarize`
turns that into ``None`` with a reason code (:data:`REASON_NO_PAIRABLE_VALUES`,
:data:`REASON_SINGLE_CATEGORY`).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import math
import numbers
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "LEVELS",
    "REASON_NO_PAIRABLE_VALUES",
    "REASON_SINGLE_CATEGORY",
    "REASON_TOO_FEW_SHARED_UNITS",
    "bootstrap_ci",
    "cohen_kappa",
    "confusion_matrix",
    "encode",
    "fleiss_kappa",
    "gwet_ac1",
    "krippendorff_alpha",
    "pairwise_cohen",
    "raw_agreement",
    "summarize",
    "unique_columns",
    "unresolved_coverage",
]

LEVELS = ("nominal", "ordinal", "interval")

#: No unit has two or more values, so no pair of values can be compared.
REASON_NO_PAIRABLE_VALUES = "no_pairable_values"
#: The pairable values all fall in one category (for interval data: are all equal), so the
#: disagreement expected by chance is zero and the chance-corrected coefficient is 0/0.
REASON_SINGLE_CATEGORY = "single_category"
#: Two coders share fewer than two units (pairwise Cohen's kappa only).
REASON_TOO_FEW_SHARED_UNITS = "too_few_shared_units"

MISSING = -1

# A numeric array whose values are integers spanning fewer than this many consecutive values
# is encoded with one bincount instead of a sort.
_DENSE_SPAN = 1 << 20
# Rows of bootstrap weights computed at once: bounds the (resamples x patterns) matrix.
_CHUNK_CELLS = 1 << 22

Data = Sequence[Sequence[Hashable | None]] | np.ndarray


# --------------------------------------------------------------------------- encoding


def encode(data: Data, *, order: Sequence[Hashable] | None = None) -> tuple[np.ndarray, list]:
    """Integer codes (coders x units, ``-1`` for missing) and the categories they index.

    The codes are an integer array (int32 or int64) indexing ``categories``.

    Categories come in their natural sort order when they can be sorted (otherwise in order
    of first appearance), or exactly as ``order`` lists them; a value absent from ``order``
    is an error. A numeric array's categories are its distinct non-NaN values as Python
    numbers. In a list of rows, ``None`` and float NaN are missing; note that Python treats
    ``True == 1`` and ``1 == 1.0`` as the same category.
    """
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf":
        codes, categories = _encode_numeric(data)
    else:
        codes, categories = _encode_objects(data)
    if order is not None:
        codes, categories = _reorder(codes, categories, list(order))
    return codes, categories


def _encode_numeric(array: np.ndarray) -> tuple[np.ndarray, list]:
    dense = _dense_offsets(array)
    if dense is not None:
        offsets, low, dtype = dense
        counts = np.bincount(offsets.ravel(), minlength=1)
        present = np.flatnonzero(counts[1:])
        if len(present) == len(counts) - 1:  # every value of the range occurs
            offsets -= 1
            return offsets, _values(present, low, dtype)
        table = np.concatenate([[MISSING], np.cumsum(counts[1:] > 0) - 1])
        return table[offsets], _values(present, low, dtype)
    if array.dtype.kind == "b":
        array = array.astype(np.int8)
    missing = np.isnan(array) if array.dtype.kind == "f" else np.zeros(array.shape, dtype=bool)
    uniques, inverse = np.unique(array[~missing], return_inverse=True)
    codes = np.full(array.shape, MISSING, dtype=np.int64)
    codes[~missing] = inverse
    return codes, uniques.tolist()


def _dense_offsets(array: np.ndarray) -> tuple[np.ndarray, Any, np.dtype] | None:
    """Integer-valued data in a short range as offsets: 0 missing, j the value low + j - 1.

    Lets encoding and collapsing use one ``bincount`` instead of a sort. ``None`` when the
    data are not integers in a range shorter than ``_DENSE_SPAN`` (then a sort is needed).
    """
    if array.ndim != 2:
        raise ValueError(f"data must be 2-D (coders x units), got {array.ndim}-D")
    if array.dtype.kind == "b":
        array = array.astype(np.int8)
    floating = array.dtype.kind == "f"
    flat = array.ravel()
    if flat.size == 0:
        return np.zeros(array.shape, dtype=np.int64), 0, array.dtype
    if floating:  # fmin/fmax skip NaN
        low, high = np.fmin.reduce(flat), np.fmax.reduce(flat)
        if np.isnan(low):  # nothing but missing
            return np.zeros(array.shape, dtype=np.int64), 0, array.dtype
    else:
        low, high = flat.min(), flat.max()
    if not (max(abs(low), abs(high)) < 2**52 and high - low < _DENSE_SPAN):
        return None
    if floating:
        shifted = np.subtract(array, float(low) - 1.0, dtype=np.float64)
        np.fmax(shifted, 0.0, out=shifted)  # NaN -> 0; fmax keeps the number, not the NaN
        offsets = shifted.astype(np.int64)
        if not np.array_equal(offsets, shifted):
            return None
    else:
        offsets = (array - low).astype(np.int64)
        offsets += 1
    return offsets, low, array.dtype


def _values(present: np.ndarray, low: Any, dtype: np.dtype) -> list:
    return (present.astype(dtype) + low).tolist()


def _collapse_dense(array: np.ndarray, keep_inverse: bool) -> tuple | None:
    """Patterns, counts, inverse and categories straight from the offsets (no codes array)."""
    dense = _dense_offsets(array)
    if dense is None:
        return None
    offsets, low, dtype = dense
    coders, units = offsets.shape
    base = int(offsets.max(initial=0)) + 1
    space = base**coders
    if coders == 0 or units == 0 or space > 4 * units + (1 << 16):
        return None
    keys = offsets[0].copy()
    for row in offsets[1:]:
        keys *= base
        keys += row
    tally = np.bincount(keys, minlength=space)
    uniques = np.flatnonzero(tally)
    powers = base ** np.arange(coders - 1, -1, -1, dtype=np.int64)
    digits = (uniques[None, :] // powers[:, None]) % base
    seen = np.zeros(base, dtype=bool)
    seen[digits.ravel()] = True
    present = np.flatnonzero(seen[1:])
    table = np.full(base, MISSING, dtype=np.int64)
    table[present + 1] = np.arange(len(present))
    inverse = (np.cumsum(tally > 0) - 1)[keys] if keep_inverse else None
    return table[digits], tally[uniques], inverse, _values(present, low, dtype)


def _encode_objects(data: Any) -> tuple[np.ndarray, list]:
    rows = [row.tolist() if isinstance(row, np.ndarray) else row for row in data]
    if not rows:
        return np.empty((0, 0), dtype=np.int64), []
    units = len(rows[0])
    if any(len(row) != units for row in rows):
        raise ValueError("every coder's row must cover the same units")
    # Distinct values in order of first appearance, collected and then mapped at C speed
    # (dict.fromkeys, map): no Python-level loop over the cells.
    distinct = dict.fromkeys(itertools.chain.from_iterable(rows))
    # ``v != v`` is true only for NaN.
    categories = [v for v in distinct if not (v is None or v != v)]
    with contextlib.suppress(TypeError):  # unsortable mixtures keep first appearance
        categories = sorted(categories)
    lookup = dict.fromkeys(distinct, MISSING)
    lookup.update((value, i) for i, value in enumerate(categories))
    codes = np.empty((len(rows), units), dtype=np.int64)
    for i, row in enumerate(rows):
        codes[i] = np.fromiter(map(lookup.__getitem__, row), dtype=np.int64, count=units)
    return codes, categories


def _reorder(codes: np.ndarray, categories: list, order: list) -> tuple[np.ndarray, list]:
    position = {value: i for i, value in enumerate(order)}
    if len(position) != len(order):
        raise ValueError("order lists a category twice")
    try:
        table = np.array([position[value] for value in categories] + [MISSING], dtype=np.int64)
    except KeyError as exc:
        raise ValueError(f"value {exc.args[0]!r} is not in order") from None
    # Index -1 (missing) picks the trailing MISSING entry.
    return table[codes], order


def _collapse(data: Data, order: Sequence[Hashable] | None, keep_inverse: bool) -> tuple:
    """(patterns, counts, inverse or None, categories, (coders, units)) for any data."""
    collapsed = None
    if isinstance(data, np.ndarray) and data.dtype.kind in "biuf":
        collapsed = _collapse_dense(data, keep_inverse)
    if collapsed is None:
        codes, categories = encode(data)
        unique = unique_columns(codes, return_inverse=keep_inverse)
        inverse = unique[2] if keep_inverse else None
        collapsed = (unique[0], unique[1], inverse, categories)
        shape = codes.shape
    else:
        shape = data.shape
    patterns, counts, inverse, categories = collapsed
    if order is not None:
        patterns, categories = _reorder(patterns, categories, list(order))
    return patterns, counts, inverse, categories, shape


# --------------------------------------------------------------------------- patterns


def unique_columns(codes: np.ndarray, *, return_inverse: bool = False) -> tuple[np.ndarray, ...]:
    """Distinct columns of ``codes`` (coders x patterns) and how many units show each.

    Same result and order as ``np.unique(codes, axis=1, return_counts=True)``, but each
    column is first packed into one integer (mixed radix, coder 0 most significant), so the
    usual case is a single ``bincount`` or a 1-D sort. With ``return_inverse`` the pattern
    index of each unit comes third.
    """
    coders, units = codes.shape
    if coders == 0 or units == 0:
        empty = np.zeros((coders, 0), dtype=np.int64)
        out: tuple[np.ndarray, ...] = (empty, np.zeros(0, dtype=np.int64))
        return (*out, np.zeros(units, dtype=np.int64)) if return_inverse else out
    base = int(codes.max()) + 2  # codes -1 .. K-1 shifted to 0 .. K
    space = base**coders
    if space >= 1 << 62:
        result = np.unique(codes, axis=1, return_counts=True, return_inverse=return_inverse)
        if return_inverse:
            patterns, inverse, counts = result
            return patterns, counts, inverse.ravel()
        return result
    keys = codes[0].astype(np.int64)  # in-place steps: no temporaries of the unit count
    keys += 1
    for row in codes[1:]:
        keys *= base
        keys += row
        keys += 1
    if space <= 4 * units + (1 << 16):
        tally = np.bincount(keys, minlength=space)
        uniques = np.flatnonzero(tally)
        counts = tally[uniques]
        inverse = (np.cumsum(tally > 0) - 1)[keys] if return_inverse else None
    else:
        uniques, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    powers = base ** np.arange(coders - 1, -1, -1, dtype=np.int64)
    patterns = (uniques[None, :] // powers[:, None]) % base - 1
    if return_inverse:
        return patterns, counts.astype(np.int64), inverse.astype(np.int64)
    return patterns, counts.astype(np.int64)


def _category_counts(patterns: np.ndarray, k: int) -> np.ndarray:
    """Per pattern, how many coders gave each category: (patterns x categories)."""
    n_patterns = patterns.shape[1]
    flat = np.zeros(n_patterns * k, dtype=np.int64)
    columns = np.arange(n_patterns) * k
    for row in patterns:
        coded = row >= 0
        flat += np.bincount(columns[coded] + row[coded], minlength=n_patterns * k)
    return flat.reshape(n_patterns, k)


class _Table:
    """Units collapsed to patterns plus the per-pattern terms every coefficient sums.

    Pattern weights are unit counts; a bootstrap resample is another weight vector. The
    non-pairable patterns (fewer than two values) share one bucket whose terms are all zero,
    so resampling draws from all units, as the bootstrap's definition says, at no cost.
    """

    def __init__(
        self,
        data: Data,
        order: Sequence[Hashable] | None = None,
        *,
        keep_inverse: bool = False,
    ):
        patterns, counts, inverse, categories, shape = _collapse(data, order, keep_inverse)
        self.patterns, self.counts, self.categories = patterns, counts, categories
        self.k = len(categories)
        self.n_coders, self.n_units = shape
        counts_by_category = _category_counts(self.patterns, self.k)
        values = counts_by_category.sum(axis=1)
        pairable = values >= 2
        n = counts_by_category[pairable].astype(np.float64)  # P x K
        m = values[pairable].astype(np.float64)
        # Bucket index of each pattern: pairable patterns 0..P-1, the rest share bucket P.
        self.bucket = np.where(pairable, np.cumsum(pairable) - 1, int(pairable.sum()))
        self.weights = np.bincount(self.bucket, weights=self.counts, minlength=len(m) + 1)
        self.inverse = self.bucket[inverse] if keep_inverse else None
        self.n = n
        self.m = m
        self.sum_sq = (n * n).sum(axis=1)

    @property
    def n_pairable_units(self) -> int:
        return int(self.weights[:-1].sum())

    @property
    def n_pairable(self) -> int:
        return int(self.weights[:-1] @ self.m)


# --------------------------------------------------------------------------- coefficients
#
# Each coefficient is written once, vectorised over a batch of weight vectors W (rows =
# resamples, columns = pattern buckets): the point estimate is the batch of one row holding
# the observed counts.


def _features(table: _Table, names: set[str], level: str, values: np.ndarray | None) -> dict:
    """Per-bucket terms (rows: pairable patterns, then a zero row for the rest)."""
    n, m = table.n, table.m
    terms: dict[str, np.ndarray] = {"n_c": n, "units": np.ones_like(m)}
    if "alpha" in names or "raw" in names:
        # Sum over the unit's ordered value pairs c != k of 1/(m-1): its disagreement mass
        # in the coincidence matrix (Krippendorff), nominal metric.
        terms["disagree_nominal"] = (m * m - table.sum_sq) / (m - 1)
    if "alpha" in names and level == "interval":
        # Same with the squared difference of the values: sum_{c,k} N_c N_k (v_c-v_k)^2/(m-1)
        s1 = n @ values
        s2 = n @ (values * values)
        terms["disagree_interval"] = 2 * (m * s2 - s1 * s1) / (m - 1)
    if "alpha" in names and level == "ordinal":
        # The ordinal metric depends on the marginals, which change with each resample, so
        # the whole coincidence matrix is summed: o_ck += (N_c N_k - [c=k] N_c) / (m - 1).
        outer = n[:, :, None] * n[:, None, :]
        idx = np.arange(table.k)
        outer[:, idx, idx] -= n
        terms["coincidence"] = (outer / (m - 1)[:, None, None]).reshape(len(m), table.k**2)
    if "fleiss" in names or "ac1" in names:
        # Per-unit agreement P_i = sum_c N_c (N_c - 1) / (m (m - 1)) and category shares N_c/m.
        terms["p_i"] = (table.sum_sq - m) / (m * (m - 1))
        terms["share"] = n / m[:, None]
    return terms


def _sums(terms: dict, weights: np.ndarray) -> dict:
    """Weighted sums of every term for each row of ``weights`` (B x buckets)."""
    widths = [int(np.prod(t.shape[1:])) for t in terms.values()]
    stacked = np.zeros((weights.shape[1], sum(widths)))
    start = 0
    for t, width in zip(terms.values(), widths, strict=True):
        stacked[: len(t), start : start + width] = t.reshape(len(t), width)
        start += width
    total = weights @ stacked
    out, start = {}, 0
    for (name, t), width in zip(terms.items(), widths, strict=True):
        block = total[:, start : start + width]
        out[name] = block[:, 0] if t.ndim == 1 else block
        start += width
    return out


def _undefined(sums: dict) -> tuple[np.ndarray, np.ndarray]:
    n_c = sums["n_c"]
    n = n_c.sum(axis=1)
    return n == 0, (n_c > 0).sum(axis=1) < 2


def _alpha(sums: dict, level: str, values: np.ndarray | None) -> np.ndarray:
    """Krippendorff's alpha = 1 - D_o / D_e from the coincidence sums.

    With n_c the pairable values per category and n their total,
    D_o = (1/n) sum_ck o_ck d_ck and D_e = 1/(n(n-1)) sum_ck n_c n_k d_ck, where the metric
    d_ck is 1 - [c=k] (nominal), (v_c - v_k)^2 (interval) or, for ordinal data,
    (sum_{g=c..k} n_g - (n_c + n_k)/2)^2. The ordinal metric equals the interval metric on
    mid-ranks r_c = (n_1 + ... + n_c) - n_c/2, which is how it is computed here.
    """
    n_c = sums["n_c"]
    n = n_c.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        if level == "nominal":
            observed = sums["disagree_nominal"]
            expected = (n * n - (n_c * n_c).sum(axis=1)) / (n - 1)
        else:
            if level == "interval":
                ranks = np.broadcast_to(values, n_c.shape)
            else:
                ranks = np.cumsum(n_c, axis=1) - n_c / 2
            s1 = (n_c * ranks).sum(axis=1)
            s2 = (n_c * ranks * ranks).sum(axis=1)
            expected = 2 * (n * s2 - s1 * s1) / (n - 1)
            if level == "interval":
                observed = sums["disagree_interval"]
            else:
                k = n_c.shape[1]
                o = sums["coincidence"].reshape(len(n), k, k)
                d = (ranks[:, :, None] - ranks[:, None, :]) ** 2
                observed = (o * d).sum(axis=(1, 2))
        result = 1.0 - observed / expected
    no_pairs, single = _undefined(sums)
    result[no_pairs | single] = np.nan
    return result


def _raw(sums: dict) -> np.ndarray:
    """Share of agreeing value pairs, each pairable value weighted equally (1 - D_o nominal)."""
    n = sums["n_c"].sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = 1.0 - sums["disagree_nominal"] / n
    result[n == 0] = np.nan
    return result


def _agreement_and_shares(sums: dict) -> tuple[np.ndarray, np.ndarray]:
    units = sums["units"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return sums["p_i"] / units, sums["share"] / units[:, None]


def _fleiss(sums: dict) -> np.ndarray:
    p_a, shares = _agreement_and_shares(sums)
    p_e = (shares * shares).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        result = (p_a - p_e) / (1.0 - p_e)
    no_pairs, single = _undefined(sums)
    result[no_pairs | single] = np.nan
    return result


def _ac1(sums: dict, k: int) -> np.ndarray:
    p_a, shares = _agreement_and_shares(sums)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_e = (shares * (1.0 - shares)).sum(axis=1) / (k - 1)
        result = (p_a - p_e) / (1.0 - p_e)
    no_pairs, _ = _undefined(sums)
    result[no_pairs] = np.nan
    if k < 2:
        result[:] = np.nan
    return result


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")


def _interval_values(categories: list) -> np.ndarray:
    if not all(isinstance(c, numbers.Real) and not isinstance(c, bool) for c in categories):
        raise ValueError("interval data needs numeric values")
    values = np.asarray(categories, dtype=np.float64)
    if not np.isfinite(values).all():
        raise ValueError("interval data needs finite values")
    # The interval metric only sees differences; centring keeps the sums of squares exact.
    return values - values.mean() if values.size else values


def _point(table: _Table, name: str, level: str = "nominal", k: int | None = None) -> float:
    values = _interval_values(table.categories) if level == "interval" else None
    sums = _sums(_features(table, {name}, level, values), table.weights[None, :])
    return float(_statistic(name, sums, level, values, table.k if k is None else k)[0])


def _statistic(name: str, sums: dict, level: str, values: np.ndarray | None, k: int) -> Any:
    if name == "alpha":
        return _alpha(sums, level, values)
    if name == "fleiss":
        return _fleiss(sums)
    if name == "ac1":
        return _ac1(sums, k)
    return _raw(sums)


def krippendorff_alpha(
    data: Data, level: str = "nominal", *, order: Sequence[Hashable] | None = None
) -> float:
    """Krippendorff's alpha over the pairable values (units with at least two values).

    ``level``: ``"nominal"``; ``"ordinal"`` (ranks from the categories' natural sort order
    or from ``order``); ``"interval"`` (numeric values). ``nan`` when there are no pairable
    values or they all fall in one category.
    """
    _check_level(level)
    return _point(_Table(data, order), "alpha", level)


def fleiss_kappa(data: Data) -> float:
    """Fleiss' kappa over the units with at least two values.

    A varying number of raters per unit is handled by the usual generalisation (as in
    Gwet's handbook): with r_i values in unit i of which r_ic in category c,
    P_a = mean_i sum_c r_ic (r_ic - 1) / (r_i (r_i - 1)), p_c = mean_i r_ic / r_i,
    P_e = sum_c p_c^2 and kappa = (P_a - P_e) / (1 - P_e). With the same number of raters in
    every unit this is Fleiss (1971) exactly. ``nan`` if no unit has two values or all the
    values fall in one category.
    """
    return _point(_Table(data), "fleiss")


def gwet_ac1(data: Data, *, n_categories: int | None = None) -> float:
    """Gwet's AC1 over the units with at least two values.

    P_a and p_c as in :func:`fleiss_kappa`; chance agreement P_e = sum_c p_c (1 - p_c) / (K-1)
    with K the number of categories: those seen in ``data`` unless ``n_categories`` gives the
    codebook's count. ``nan`` if no unit has two values or K < 2.
    """
    table = _Table(data)
    return _point(table, "ac1", k=table.k if n_categories is None else n_categories)


def raw_agreement(data: Data) -> float:
    """Observed agreement: the share of agreeing pairs among the pairable values.

    Each pairable value has equal weight (unit i's pairs count 1/(m_i - 1) each), i.e.
    Krippendorff's observed agreement 1 - D_o for nominal data; with two coders it is the
    plain share of units both coded alike. ``nan`` without pairable values.
    """
    return _point(_Table(data), "raw")


# --------------------------------------------------------------------------- pairwise


def _kappa(matrix: np.ndarray) -> float:
    total = matrix.sum()
    if total < 2:
        return math.nan
    p_o = np.trace(matrix) / total
    p_e = float(matrix.sum(axis=1) @ matrix.sum(axis=0)) / (total * total)
    if p_e >= 1.0:
        return math.nan
    return float((p_o - p_e) / (1.0 - p_e))


def confusion_matrix(
    a: Sequence[Hashable | None],
    b: Sequence[Hashable | None],
    categories: Sequence[Hashable] | None = None,
) -> tuple[np.ndarray, list]:
    """Counts of (a's value, b's value) over the units both coded: rows a, columns b.

    Categories are those of ``categories`` in that order (a value outside it is an error),
    or the values seen in either sequence, sorted when sortable.
    """
    codes, cats = encode(_pair_rows(a, b), order=categories)
    return _confusion(codes[0], codes[1], len(cats)), cats


def _pair_rows(a: Any, b: Any) -> Data:
    if len(a) != len(b):
        raise ValueError("a and b must cover the same units")
    numeric = [isinstance(x, np.ndarray) and x.dtype.kind in "biuf" for x in (a, b)]
    if all(numeric):
        return np.vstack([a, b])
    return [list(a), list(b)]


def _confusion(x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    both = (x >= 0) & (y >= 0)
    return np.bincount(x[both] * k + y[both], minlength=k * k).reshape(k, k)


def cohen_kappa(a: Sequence[Hashable | None], b: Sequence[Hashable | None]) -> float:
    """Cohen's kappa (p_o - p_e) / (1 - p_e) over the units both coders coded.

    p_e = sum_c p_a(c) p_b(c) from each coder's own marginals on those units. ``nan`` with
    fewer than two shared units or when p_e = 1 (both coders used one and the same category).
    """
    matrix, _ = confusion_matrix(a, b)
    return _kappa(matrix)


def _pairwise(table: _Table) -> tuple[np.ndarray, np.ndarray]:
    r, k = table.n_coders, table.k
    kappas = np.eye(r)
    shared = np.zeros((r, r), dtype=np.int64)
    patterns, counts = table.patterns, table.counts
    for i in range(r):
        shared[i, i] = int(counts[patterns[i] >= 0].sum())
        for j in range(i + 1, r):
            both = (patterns[i] >= 0) & (patterns[j] >= 0)
            cells = patterns[i, both] * k + patterns[j, both]
            matrix = np.bincount(cells, weights=counts[both], minlength=k * k).reshape(k, k)
            kappas[i, j] = kappas[j, i] = _kappa(matrix)
            shared[i, j] = shared[j, i] = int(counts[both].sum())
    return kappas, shared


def pairwise_cohen(data: Data) -> np.ndarray:
    """Cohen's kappa for every pair of coders (coders x coders).

    The diagonal is 1.0; an entry is NaN where the two coders share fewer than two units or
    their kappa is undefined (see :func:`cohen_kappa`).
    """
    return _pairwise(_Table(data))[0]


# --------------------------------------------------------------------------- bootstrap

_NAMES = {
    "alpha": "alpha",
    "krippendorff_alpha": "alpha",
    "fleiss_kappa": "fleiss",
    "gwet_ac1": "ac1",
    "raw_agreement": "raw",
}


def _fast_statistic(statistic: Any) -> tuple[str, dict] | None:
    """Our own coefficients (by name, function, or functools.partial) get the fast path."""
    if isinstance(statistic, str):
        if statistic not in _NAMES:
            raise ValueError(f"unknown statistic {statistic!r}; one of {sorted(_NAMES)}")
        return _NAMES[statistic], {}
    keywords: dict = {}
    if isinstance(statistic, functools.partial) and not statistic.args:
        keywords = dict(statistic.keywords)
        statistic = statistic.func
    for name, fast in (
        ("krippendorff_alpha", "alpha"),
        ("fleiss_kappa", "fleiss"),
        ("gwet_ac1", "ac1"),
        ("raw_agreement", "raw"),
    ):
        if statistic is globals()[name]:
            return fast, keywords
    return None


def _cluster_index(clusters: Sequence[Hashable], n_units: int) -> tuple[np.ndarray, int]:
    if len(clusters) != n_units:
        raise ValueError(f"clusters has {len(clusters)} labels for {n_units} units")
    if isinstance(clusters, np.ndarray) and clusters.dtype.kind in "biufUS":
        uniques, index = np.unique(clusters, return_inverse=True)
        return index.ravel(), len(uniques)
    lookup: dict[Hashable, int] = {}
    index = np.fromiter(
        (lookup.setdefault(c, len(lookup)) for c in clusters), dtype=np.int64, count=n_units
    )
    return index, len(lookup)


def _resample_weights(table: _Table, n_boot: int, rng: np.random.Generator, clusters: Any) -> Any:
    """Yield blocks of bucket weights, one row per resample.

    Units: resampling n units with replacement puts Multinomial(n, c_p / n) units on the
    patterns with counts c_p. Clusters: Multinomial(G, 1/G) copies of each of the G clusters,
    times each cluster's bucket counts.
    """
    buckets = len(table.weights)
    if clusters is None:
        total = int(table.weights.sum())
        if total == 0:
            return
        for block in _multinomial(rng, n_boot, total, table.weights / total):
            yield block
        return
    index, g = _cluster_index(clusters, table.n_units)
    if g == 0:
        return
    per_cluster = np.bincount(index * buckets + table.inverse, minlength=g * buckets)
    per_cluster = per_cluster.reshape(g, buckets).astype(np.float64)
    for block in _multinomial(rng, n_boot, g, None, k=g):
        yield block @ per_cluster


def _multinomial(
    rng: np.random.Generator, n_boot: int, total: int, p: np.ndarray | None, k: int = 0
) -> Any:
    """Blocks of Multinomial(total, p) draws (``p=None``: k equally likely cells), as floats.

    Few cells: NumPy's multinomial. Many cells relative to ``total`` (clusters): draw the
    ``total`` cells one by one and count them, which is cheaper than one binomial per cell.
    """
    k = len(p) if p is not None else k
    by_draws = 8 * k > total
    step = max(1, _CHUNK_CELLS // max(k, total if by_draws else 1))
    for start in range(0, n_boot, step):
        size = min(step, n_boot - start)
        if not by_draws:
            yield rng.multinomial(total, p, size=size).astype(np.float64)
            continue
        if p is None:
            cells = rng.integers(0, k, size=(size, total))
        else:
            cells = rng.choice(k, size=(size, total), p=p)
        cells += (np.arange(size) * k)[:, None]
        yield np.bincount(cells.ravel(), minlength=size * k).reshape(size, k).astype(np.float64)


def _interval(samples: np.ndarray, confidence: float) -> tuple[float, float]:
    samples = samples[~np.isnan(samples)]
    if samples.size == 0:
        return math.nan, math.nan
    tail = (1.0 - confidence) / 2.0
    low, high = np.quantile(samples, [tail, 1.0 - tail])
    return float(low), float(high)


def _check_confidence(confidence: float, n_boot: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must lie strictly between 0 and 1")
    if n_boot < 0:
        raise ValueError("n_boot must not be negative")


def bootstrap_ci(
    data: Data,
    statistic: Callable[..., float] | str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    clusters: Sequence[Hashable] | None = None,
) -> tuple[float, float]:
    """Percentile bootstrap interval for ``statistic`` over units (or clusters of units).

    Each resample draws ``n_units`` units (columns) with replacement or, with ``clusters``
    (one label per unit, e.g. the domain), as many whole clusters as there are, with
    replacement. The interval is the (1 - confidence)/2 and (1 + confidence)/2 quantiles of
    the resampled values; resamples where the statistic is undefined are left out, and the
    result is ``(nan, nan)`` if all are. Reproducible for a given ``seed``.

    ``statistic``: one of this module's coefficients — the function itself (optionally a
    ``functools.partial`` with keywords such as ``level="ordinal"``) or its name
    (``"alpha"``, ``"fleiss_kappa"``, ``"gwet_ac1"``, ``"raw_agreement"``). These are resampled
    as pattern counts, without copying the data. Any other callable is called with each
    resampled 2-D array (an object array with ``None`` for missing, unless ``data`` is a
    numeric array), which is much slower.
    """
    _check_confidence(confidence, n_boot)
    rng = np.random.default_rng(seed)
    fast = _fast_statistic(statistic)
    if fast is None:
        return _interval(_generic_samples(data, statistic, n_boot, rng, clusters), confidence)
    name, keywords = fast
    level = keywords.pop("level", "nominal")
    _check_level(level)
    table = _Table(data, keywords.pop("order", None), keep_inverse=clusters is not None)
    categories = table.categories
    k = keywords.pop("n_categories", None) or table.k
    if keywords:
        raise ValueError(f"unsupported keywords for the bootstrap: {sorted(keywords)}")
    values = _interval_values(categories) if name == "alpha" and level == "interval" else None
    terms = _features(table, {name}, level, values)
    samples = [
        _statistic(name, _sums(terms, weights), level, values, k)
        for weights in _resample_weights(table, n_boot, rng, clusters)
    ]
    return _interval(np.concatenate(samples) if samples else np.empty(0), confidence)


def _generic_samples(
    data: Data, statistic: Callable, n_boot: int, rng: np.random.Generator, clusters: Any
) -> np.ndarray:
    numeric = isinstance(data, np.ndarray) and data.dtype.kind in "biuf"
    array = data if numeric else np.array([list(row) for row in data], dtype=object)
    n_units = array.shape[1]
    if clusters is not None:
        index, g = _cluster_index(clusters, n_units)
        members = np.split(np.argsort(index, kind="stable"), np.cumsum(np.bincount(index))[:-1])
    out = np.empty(n_boot)
    for b in range(n_boot):
        if clusters is None:
            picked = rng.integers(0, n_units, size=n_units)
        else:
            chosen = rng.integers(0, g, size=g)
            picked = np.concatenate([members[c] for c in chosen])
        out[b] = statistic(array[:, picked])
    return out


# --------------------------------------------------------------------------- summary


def _plain(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _reason(table: _Table, value: float) -> str | None:
    if not math.isnan(value):
        return None
    if table.n_pairable == 0:
        return REASON_NO_PAIRABLE_VALUES
    return REASON_SINGLE_CATEGORY


def summarize(
    data: Data,
    *,
    level: str = "nominal",
    clusters: Sequence[Hashable] | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    order: Sequence[Hashable] | None = None,
) -> dict:
    """Every coefficient with its bootstrap interval, as plain JSON-ready values.

    Returns ``n_units``, ``n_coders``, ``n_pairable`` (pairable values: values in units with
    at least two), ``n_pairable_units``, ``categories``; ``alpha`` (at ``level``),
    ``fleiss_kappa``, ``gwet_ac1`` and ``raw_agreement`` as ``{"value", "low", "high",
    "reason"}`` — ``alpha`` also with ``cluster_low``/``cluster_high`` from the cluster
    bootstrap (``None`` without ``clusters``); and ``cohen_kappa`` as ``{"matrix", "shared",
    "reasons"}`` (coders x coders; ``shared`` counts the units both coded; ``reasons`` says
    why a kappa is ``None``). An undefined value is ``None`` and its ``reason`` one of the
    ``REASON_*`` codes; so are its interval bounds. ``order``
    fixes the categories (the ranks for ordinal alpha; the K of Gwet's AC1). All intervals
    come from the same ``n_boot`` resamples (seeded); ``n_boot=0`` skips them.
    """
    _check_level(level)
    _check_confidence(confidence, n_boot)
    table = _Table(data, order, keep_inverse=clusters is not None)
    categories = table.categories
    values = _interval_values(categories) if level == "interval" else None
    names = {"alpha", "fleiss", "ac1", "raw"}
    terms = _features(table, names, level, values)
    k = table.k

    def evaluate(weights: np.ndarray) -> dict[str, np.ndarray]:
        sums = _sums(terms, weights)
        return {name: _statistic(name, sums, level, values, k) for name in names}

    point = {name: float(v[0]) for name, v in evaluate(table.weights[None, :]).items()}
    draws: dict[str, list] = {name: [] for name in names}
    for weights in _resample_weights(table, n_boot, np.random.default_rng(seed), None):
        for name, v in evaluate(weights).items():
            draws[name].append(v)
    cluster_alpha = None
    if clusters is not None:
        rng = np.random.default_rng(seed)
        samples = [
            _alpha(_sums(terms, weights), level, values)
            for weights in _resample_weights(table, n_boot, rng, clusters)
        ]
        cluster_alpha = np.concatenate(samples) if samples else np.empty(0)

    def entry(name: str) -> dict:
        value = point[name]
        low = high = None
        if not math.isnan(value) and draws[name]:
            low, high = map(_plain, _interval(np.concatenate(draws[name]), confidence))
        return {"value": _plain(value), "low": low, "high": high, "reason": _reason(table, value)}

    alpha = entry("alpha")
    alpha["cluster_low"] = alpha["cluster_high"] = None
    if cluster_alpha is not None and alpha["value"] is not None and cluster_alpha.size:
        bounds = _interval(cluster_alpha, confidence)
        alpha["cluster_low"], alpha["cluster_high"] = map(_plain, bounds)
    kappas, shared = _pairwise(table)
    return {
        "n_units": table.n_units,
        "n_coders": table.n_coders,
        "n_pairable": table.n_pairable,
        "n_pairable_units": table.n_pairable_units,
        "categories": [_plain_category(c) for c in categories],
        "alpha": alpha,
        "fleiss_kappa": entry("fleiss"),
        "gwet_ac1": entry("ac1"),
        "raw_agreement": entry("raw"),
        "cohen_kappa": {
            "matrix": [[_plain(float(v)) for v in row] for row in kappas],
            "shared": shared.tolist(),
            "reasons": [
                [_pair_reason(kappas[i, j], shared[i, j]) for j in range(table.n_coders)]
                for i in range(table.n_coders)
            ],
        },
    }


def _pair_reason(kappa: float, shared: int) -> str | None:
    if not math.isnan(kappa):
        return None
    return REASON_TOO_FEW_SHARED_UNITS if shared < 2 else REASON_SINGLE_CATEGORY


def _plain_category(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


# --------------------------------------------------------------------------- coverage


def unresolved_coverage(data: Data, unresolved: Hashable | None = None) -> list[dict]:
    """Per coder: ``coder`` (row index), ``coded``, ``unresolved`` and ``share``.

    ``unresolved`` is the value that stands for U in ``data`` (e.g. ``"U"``): ``coded`` counts
    the coder's non-missing values, ``unresolved`` those equal to it, and ``share`` is their
    ratio (``None`` for a coder with nothing coded). With ``unresolved=None`` the caller has
    mapped U to missing, so every missing cell counts as unresolved and ``coded`` is the
    number of units: use that only when each coder was given every unit.
    """
    codes, categories = encode(data)
    n_coders, n_units = codes.shape
    rows = []
    for i in range(n_coders):
        row = codes[i]
        if unresolved is None:
            coded, count = n_units, int((row == MISSING).sum())
        else:
            coded = int((row != MISSING).sum())
            target = categories.index(unresolved) if unresolved in categories else None
            count = 0 if target is None else int((row == target).sum())
        share = count / coded if coded else None
        rows.append({"coder": i, "coded": coded, "unresolved": count, "share": share})
    return rows
