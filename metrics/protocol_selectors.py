"""Reads for seed 002's pairwise protocol: the Good/Same/Bad counts of a study's answer
pairs from their final labels, and each annotator's side picks for the position-bias check.
Fixed number of queries; the computations are metrics.protocol (``net_gain``,
``net_gain_bootstrap``) and metrics.position_bias (``left_shares``).

A pair's stored label speaks of roles (audit.contract.sides): the codebook's side field
(a choice whose codes include left and right; the first one, for a codebook with several)
holds ``answer`` when the evaluated answer was judged better (Good), ``baseline`` when the
baseline's was (Bad), ``same`` (Same); any other value, and U, is counted apart.

Which labels: each unit's **final record** — its latest adjudicated label, else its latest
consensus label while the unit is agreed; a unit with neither is *awaiting*. Units in a
partition that is sealed now (the held-out test partition until the study is frozen) are
left out, as in every other metric.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from annotator.labelling.models import Label, LabelKind
from audit.archive.models import CodebookUnit, Study, Unit, UnitState
from audit.contract.codebook import codebook_from_dict
from audit.contract.fields import side_fields
from audit.contract.sides import picked_side
from audit.partitions.selectors import PARTITION_KEYS, partition_sealed
from metrics.position_bias import LeftShare, left_shares

#: Stored side-field values and what they are for the evaluated system.
JUDGMENT_OF = {"answer": "G", "same": "S", "baseline": "B"}


@dataclass(frozen=True)
class PairwiseCounts:
    """The pairwise outcome of a study (or of one evaluated pipeline in it).

    ``good``, ``same``, ``bad``: N_G, N_S, N_B for :func:`metrics.protocol.net_gain`.
    ``judgments`` (``"G"``/``"S"``/``"B"``, one per judged pair, in unit order) and
    ``clusters`` (the query id of each, the same length) are the inputs of
    :func:`metrics.protocol.net_gain_bootstrap`. ``awaiting``: units without a final record
    yet; ``other``: final records whose value is neither (U, or another code). ``field``:
    the side field read (``None`` when the codebook has none: everything is zero).
    ``pipeline`` and ``baseline``: the filters applied (``None``: every pipeline)."""

    good: int
    same: int
    bad: int
    judgments: tuple[str, ...]
    clusters: tuple[str, ...]
    awaiting: int
    other: int
    field: str | None
    pipeline: str | None
    baseline: str | None

    @property
    def n(self) -> int:
        return self.good + self.same + self.bad


def _side_field(study: Study) -> str | None:
    if study.codebook.unit != CodebookUnit.ANSWER_PAIR:
        return None
    fields = side_fields(codebook_from_dict(study.codebook.definition))
    return fields[0] if fields else None


def _open_units(study: Study, pipeline: str | None, baseline: str | None) -> dict[int, tuple]:
    """Unit id -> (query id, state) of the study's pair units outside sealed partitions."""
    sealed = [key for key in PARTITION_KEYS if partition_sealed(study, key)]
    units = Unit.objects.filter(study=study).exclude(partition__in=sealed)
    if pipeline is not None:
        units = units.filter(observation__pipeline__name=pipeline)
    if baseline is not None:
        units = units.filter(baseline__pipeline__name=baseline)
    rows = units.order_by("id").values_list("id", "observation__query__query_id", "state")
    return {pk: (query_id, state) for pk, query_id, state in rows}


def _finals(study: Study, units: dict[int, tuple]) -> dict[int, dict]:
    """Each unit's final annotation (latest adjudicated, else latest consensus while the
    unit is agreed). One query."""
    best: dict[int, tuple] = {}
    rows = (
        Label.objects.filter(
            study=study,
            unit_id__in=list(units),
            kind__in=(LabelKind.ADJUDICATED, LabelKind.CONSENSUS),
        )
        .order_by("id")
        .values_list("unit_id", "kind", "revision", "id", "annotation")
    )
    for unit_id, kind, revision, pk, annotation in rows:
        adjudicated = kind == LabelKind.ADJUDICATED
        if not adjudicated and units[unit_id][1] != UnitState.AGREED:
            continue
        rank = (adjudicated, revision, pk)
        if unit_id not in best or rank > best[unit_id][0]:
            best[unit_id] = (rank, annotation)
    return {unit_id: row[1] for unit_id, row in best.items()}


def pairwise_counts(
    study: Study, pipeline: str | None = None, *, baseline: str | None = None
) -> PairwiseCounts:
    """N_G, N_S, N_B of ``study``'s answer pairs from their final labels, with the
    per-pair judgments and their queries (clusters) for the bootstrap. ``pipeline``: only
    pairs whose evaluated answer comes from the pipeline of that name; ``baseline``: only
    pairs whose baseline comes from that one. Three queries (the units, the final labels,
    the partition seals) whatever the size of the study."""
    field = _side_field(study)
    units = _open_units(study, pipeline, baseline) if field is not None else {}
    finals = _finals(study, units) if units else {}
    judgments: list[str] = []
    clusters: list[str] = []
    other = 0
    for unit_id, (query_id, _state) in units.items():
        annotation = finals.get(unit_id)
        if annotation is None:
            continue
        value = (annotation.get("values") or {}).get(field)
        judgment = JUDGMENT_OF.get(value) if isinstance(value, str) else None
        if judgment is None:
            other += 1
            continue
        judgments.append(judgment)
        clusters.append(query_id)
    return PairwiseCounts(
        good=judgments.count("G"),
        same=judgments.count("S"),
        bad=judgments.count("B"),
        judgments=tuple(judgments),
        clusters=tuple(clusters),
        awaiting=len(units) - len(finals),
        other=other,
        field=field,
        pipeline=pipeline,
        baseline=baseline,
    )


def pairwise_left_shares(study: Study) -> dict[Hashable, LeftShare]:
    """The share of left picks of each annotator (by pseudonym) over their latest
    independent label of every pair: the side each saw picked is recovered from the
    stored role and the label's ``sides`` (metrics.position_bias). One query."""
    field = _side_field(study)
    if field is None:
        return {}
    latest: dict[tuple[int, int], tuple[int, dict]] = {}
    rows = Label.objects.filter(study=study, kind=LabelKind.INDEPENDENT).values_list(
        "unit_id", "annotator_id", "revision", "annotation"
    )
    for unit_id, annotator_id, revision, annotation in rows:
        key = (unit_id, annotator_id)
        if key not in latest or revision > latest[key][0]:
            latest[key] = (revision, annotation)
    picks = []
    for (_unit, _annotator), (_revision, annotation) in sorted(latest.items()):
        value = (annotation.get("values") or {}).get(field)
        side = picked_side(value, annotation.get("sides") or {})
        # "same" stays "same"; U and any other code count as unresolved
        picks.append((annotation.get("annotator"), side or ("same" if value == "same" else None)))
    return left_shares(picks)
