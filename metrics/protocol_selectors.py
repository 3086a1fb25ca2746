"""Seed 002's protocol metrics from stored labels: reads that feed metrics.protocol and
metrics.comparison (thin: database to plain values, the computing is pure).

Which labels: each unit's **final record** as everywhere else (metrics.selectors
``_final_annotations``: the latest adjudicated label, else the latest consensus label while
the unit is agreed), of units outside the partitions sealed at reading time (the held-out
test partition until the study is frozen). A unit without a final record is counted as
awaiting one, never guessed.

Streaming: units are read in keyset chunks of :data:`CHUNK` (by id), and each chunk's final
records by a range of unit ids, so a study of 10⁵ units takes 2 queries per chunk (plus a
few fixed ones) and only one chunk's labels are in memory; what is kept across chunks is a
few counts per query (metrics.comparison.Side) or one judgment per pair.

The three protocols, recognised by a codebook's shape (never by its name):

* **rubric** — an ``answer`` codebook of fields with a derived ``min`` value: pass per
  answer by :func:`metrics.protocol.answer_pass` with the derived value's threshold;
* **query_documents** — a ``query_documents`` codebook with a grade placed on documents:
  a(q, d) is that grade; the trust dimensions are read from the fields coded
  ``authority``, ``domain_alignment``, ``producer_profile``, ``content_time`` and ``info``;
  the set-level ``links`` field gives contradictions and the ``groups`` field redundancy;
  a′ by :func:`metrics.protocol.revised_grades`. W_temp compares each document's content
  time with the query's expiry boundary, the set-level date field ``expiry_boundary``
  (empty or U: the query is not sensitive to stale content, W_temp does not apply);
* **pairwise** — an ``answer_pair`` codebook with a choice field: the stored preference is
  ``answer`` (the evaluated system's answer is better: G), ``same`` (S) or ``baseline``
  (B). A value ``left``/``right`` is mapped through the ``sides`` the annotation stores
  beside it (``{"left": "answer", "right": "baseline"}``); one that cannot be mapped is
  counted as ``unmapped``.

A **study setting** (Table II compares within one): the protocol studies whose units ask
the same set of archived queries (the same query keys). A study's setting holds at most
one study per protocol: itself for its own protocol, the most recent matching study for the
others.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

import orjson
from django.conf import settings as django_settings
from django.core.cache import cache
from django.db import connection
from django.db.models import Count, F, Max, OuterRef, Q, Subquery, TextField
from django.db.models.fields.json import KeyTransform
from django.db.models.functions import Cast

from annotator.labelling.models import Label, LabelKind
from audit.archive.models import Codebook, CodebookUnit, Observation, Pipeline, Study, Unit
from audit.contract.codebook import codebook_from_dict
from audit.contract.fields import side_fields
from audit.contract.sides import picked_side
from audit.partitions.models import PartitionState
from audit.partitions.selectors import UNASSIGNED
from metrics.comparison import Pairwise, Side, compare
from metrics.models import ComparisonSetting, ComparisonSummary
from metrics.position_bias import LeftShare, left_shares
from metrics.protocol import (
    Contradiction,
    Document,
    NetGain,
    PassRate,
    ProtocolInputError,
    QueryAccuracy,
    RedundancyGroup,
    Usability,
    accuracy_qd,
    answer_pass,
    net_gain_bootstrap,
    pass_rate,
    revised_grades,
    usability,
)
from metrics.selectors import _final_annotations, sealed_partitions

RUBRIC = "rubric"
DOCUMENTS = "query_documents"
PAIRWISE = "pairwise"
PROTOCOLS = (DOCUMENTS, RUBRIC, PAIRWISE)
PROTOCOL_LABELS = {
    RUBRIC: "Answer rubric (PassR)",
    DOCUMENTS: "Query–document grades (Acc_qd, Usable_q, HighQ_q)",
    PAIRWISE: "Pairwise side by side (NetGain)",
}
#: Units per keyset chunk (and per read of final records).
CHUNK = 5_000
#: Bootstrap resamples and seed of the comparison's intervals (reproducible).
N_BOOT = 1000
SEED = 2002
#: Stored pairwise preferences -> the judgment for the evaluated system.
PREFERENCE_JUDGMENTS = {"answer": "G", "same": "S", "baseline": "B"}


class ProtocolDataError(ValueError):
    """A stored final label the protocol cannot read; the message names the unit."""


# --- the codebook's protocol ----------------------------------------------------------------


def _fields(definition: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in definition.get("fields") or () if isinstance(f, dict)]


def protocol_of(codebook: Codebook) -> str | None:
    """``rubric``, ``query_documents``, ``pairwise`` or ``None`` (not a protocol codebook)."""
    definition = codebook.definition or {}
    if definition.get("format_version") != 2:
        return None
    fields = _fields(definition)
    if codebook.unit == CodebookUnit.ANSWER and _min_rule(definition) is not None:
        return RUBRIC
    if codebook.unit == CodebookUnit.QUERY_DOCUMENTS and _document_grade(fields):
        return DOCUMENTS
    if codebook.unit == CodebookUnit.ANSWER_PAIR and _preference(fields):
        return PAIRWISE
    return None


def _min_rule(definition: dict[str, Any]) -> dict[str, Any] | None:
    for derived in definition.get("derived") or ():
        if isinstance(derived, dict) and derived.get("rule") == "min":
            return derived
    return None


def _document_grade(fields: list[dict[str, Any]]) -> str | None:
    grades = [f for f in fields if f.get("type") == "grade" and f.get("placement") == "document"]
    codes = [f["code"] for f in grades]
    return "support" if "support" in codes else (codes[0] if codes else None)


def _preference(fields: list[dict[str, Any]]) -> str | None:
    choices = [f["code"] for f in fields if f.get("type") == "choice"]
    return "preference" if "preference" in choices else (choices[0] if choices else None)


def _field_of_type(fields: list[dict[str, Any]], kind: str) -> str | None:
    return next((f["code"] for f in fields if f.get("type") == kind), None)


# --- streaming units with their final records -----------------------------------------------


@dataclass(frozen=True)
class UnitRow:
    id: int
    digest: str
    pipeline: int
    baseline: int | None
    query: str


@dataclass
class Reading:
    """What a stream read besides the values: units withheld (sealed partitions) and units
    that have no final record yet."""

    units: int = 0
    withheld: int = 0
    awaiting_final: int = 0


def _decode(text: str | None) -> Any:
    return None if text is None else orjson.loads(text)


def _final_stream(
    study: Study,
    part: Any,
    reading: Reading,
    *,
    pipelines: Sequence[int] | None = None,
    baseline: int | None = None,
) -> Iterator[tuple[UnitRow, Any]]:
    """(unit, final annotation part) of every unit of ``study`` with a final record, in id
    order, outside the sealed partitions; ``pipelines`` keeps units whose (evaluated)
    observation's pipeline is one of them, ``baseline`` answer pairs whose baseline's
    pipeline is that one."""
    sealed = set(sealed_partitions(study))
    units = Unit.objects.filter(study=study)
    if pipelines is not None:
        units = units.filter(observation__pipeline_id__in=list(pipelines))
    if baseline is not None:
        units = units.filter(baseline__pipeline_id=baseline)
    columns = (
        "id",
        "state",
        "partition",
        "digest",
        "observation__pipeline_id",
        "baseline__pipeline_id",
        "observation__query__key",
    )
    # The part as JSON text, decoded here by orjson: the standard decoder Django's JSONField
    # applies was a third of the query–document pass (docs/benchmarks.md).
    text = Cast(F(part) if isinstance(part, str) else part, TextField())
    last = 0
    while True:
        chunk = list(units.filter(id__gt=last).order_by("id").values_list(*columns)[:CHUNK])
        if not chunk:
            return
        last = chunk[-1][0]
        kept = [row for row in chunk if (row[2] or UNASSIGNED) not in sealed]
        reading.withheld += len(chunk) - len(kept)
        reading.units += len(kept)
        if not kept:
            continue
        states = {row[0]: row[1] for row in kept}
        finals = _final_annotations(study, states, text, unit_range=(kept[0][0], kept[-1][0]))
        for pk, _, _, digest, pipeline, baseline, query in kept:
            final = finals.get(pk)
            if final is None:
                reading.awaiting_final += 1
                continue
            yield UnitRow(pk, digest, pipeline, baseline, query), _decode(final[1])


# --- answer rubric ----------------------------------------------------------------------------


def _rubric_rule(study: Study) -> tuple[tuple[str, ...], int]:
    rule = _min_rule(study.codebook.definition or {})
    if rule is None:
        raise ProtocolDataError(f"study {study.slug}: its codebook has no derived min value")
    return tuple(rule.get("inputs") or ()), int(rule.get("threshold") or 1)


def rubric_passes(
    study: Study, reading: Reading | None = None, *, pipelines: Sequence[int] | None = None
) -> Iterator[tuple[UnitRow, bool | None]]:
    """(unit, pass) of each answer with a final label: ``True``, ``False`` or ``None``."""
    inputs, threshold = _rubric_rule(study)
    reading = reading if reading is not None else Reading()
    values = KeyTransform("values", "annotation")
    for unit, final in _final_stream(study, values, reading, pipelines=pipelines):
        final = final or {}
        try:
            passed = answer_pass([final.get(code) for code in inputs], threshold=threshold)
        except ProtocolInputError as exc:
            raise ProtocolDataError(f"unit {unit.digest[:12]}: {exc}") from None
        yield unit, passed


def pass_rates(study: Study) -> dict[int, PassRate]:
    """PassR per pipeline (numerator, denominator, unknowns) from the final labels."""
    passes: dict[int, list[bool | None]] = {}
    for unit, passed in rubric_passes(study):
        passes.setdefault(unit.pipeline, []).append(passed)
    return {pipeline: pass_rate(values) for pipeline, values in sorted(passes.items())}


# --- query–document grades ------------------------------------------------------------------


def _int_or_none(value: Any) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return int(value)
    return int(value)


def _date_or_none(value: Any) -> date | None:
    return date.fromisoformat(value) if isinstance(value, str) and value else None


def documents_of(annotation: dict[str, Any], grade: str) -> list[Document]:
    """A query_documents annotation's documents as :class:`metrics.protocol.Document`
    (ids are positions from 0). A codebook without an ``authority`` field does not assess
    source trust: the source dimension then counts as satisfied. The query's expiry
    boundary is the set-level ``expiry_boundary`` date (empty or U: W_temp does not
    apply)."""
    expiry = _date_or_none((annotation.get("values") or {}).get("expiry_boundary"))
    out = []
    for i, entry in enumerate(annotation.get("documents") or ()):
        values = (entry or {}).get("values") or {}
        authority = _int_or_none(values.get("authority"))
        out.append(
            Document(
                id=i,
                grade=values.get(grade),
                authority=3 if authority is None else authority,
                domain_alignment=values.get("domain_alignment"),
                producer_profile=_int_or_none(values.get("producer_profile")),
                content_time=_date_or_none(values.get("content_time")),
                expiry_boundary=expiry,
                info=_int_or_none(values.get("info")),
            )
        )
    return out


def query_document_grades(
    study: Study, reading: Reading | None = None, *, pipelines: Sequence[int] | None = None
) -> Iterator[tuple[UnitRow, tuple[int | None, ...], tuple[int | None, ...]]]:
    """(unit, a(q, d) after trust, a′(q, d)) of each query_documents unit with a final
    label, documents in rank order."""
    fields = _fields(study.codebook.definition or {})
    grade = _document_grade(fields)
    if grade is None:
        raise ProtocolDataError(f"study {study.slug}: its codebook has no document grade")
    links, groups = _field_of_type(fields, "links"), _field_of_type(fields, "groups")
    reading = reading if reading is not None else Reading()
    for unit, annotation in _final_stream(study, "annotation", reading, pipelines=pipelines):
        annotation = annotation or {}
        values = annotation.get("values") or {}
        try:
            documents = documents_of(annotation, grade)
            contradictions = [
                Contradiction(link["document"], link["by"])
                for link in (values.get(links) if links else None) or ()
            ]
            redundancy = [
                RedundancyGroup(group["representative"], tuple(group["members"]))
                for group in (values.get(groups) if groups else None) or ()
            ]
            revised = revised_grades(documents, contradictions, redundancy)
        except (ProtocolInputError, KeyError, TypeError, ValueError) as exc:
            raise ProtocolDataError(f"unit {unit.digest[:12]}: {exc}") from None
        yield unit, revised.grades, revised.revised


@dataclass(frozen=True)
class DocumentMetrics:
    """Acc_qd and Usable_q/HighQ_q of one pipeline (queries with no documents apart)."""

    accuracy: QueryAccuracy
    usability: Usability


def document_metrics(study: Study) -> dict[int, DocumentMetrics]:
    """Per pipeline: Acc_qd (macro over its queries), e(q) per query, Usable_q, HighQ_q,
    each with counts, from the final labels."""
    grades: dict[int, list[tuple[int | None, ...]]] = {}
    revised: dict[int, list[tuple[int | None, ...]]] = {}
    for unit, a, a_revised in query_document_grades(study):
        grades.setdefault(unit.pipeline, []).append(a)
        revised.setdefault(unit.pipeline, []).append(a_revised)
    return {
        pipeline: DocumentMetrics(accuracy_qd(grades[pipeline]), usability(revised[pipeline]))
        for pipeline in sorted(grades)
    }


# --- pairwise -------------------------------------------------------------------------------


def judgment_of(annotation: dict[str, Any], field_code: str = "preference") -> str | None:
    """G, S or B from a stored answer_pair annotation, ``None`` when it cannot be mapped."""
    values = annotation.get("values") or {}
    preference = values.get(field_code)
    if preference in PREFERENCE_JUDGMENTS:
        return PREFERENCE_JUDGMENTS[preference]
    sides = annotation.get("sides") or values.get("sides") or {}
    if preference in ("left", "right") and isinstance(sides, dict):
        return PREFERENCE_JUDGMENTS.get(sides.get(preference))
    return None


@dataclass
class PairwiseCounts:
    """G/S/B of the pairs (evaluated, baseline) with a final label; ``judgments`` and
    ``queries`` (one per pair, in unit order) are what the clustered bootstrap resamples."""

    evaluated: int
    baseline: int
    good: int = 0
    same: int = 0
    bad: int = 0
    unmapped: int = 0
    judgments: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    reading: Reading = field(default_factory=Reading)

    def net_gain(self, *, seed: int = SEED, n_boot: int = N_BOOT) -> NetGain:
        """NetGain with the bootstrap clustered by query (the normal interval is
        :func:`metrics.protocol.net_gain` on ``good``, ``same``, ``bad``)."""
        return net_gain_bootstrap(self.judgments, self.queries, seed=seed, n_boot=n_boot)


def pairwise_counts(study: Study, evaluated: int, baseline: int) -> PairwiseCounts:
    """G/S/B for pipeline ``evaluated`` against pipeline ``baseline`` (ids) from the final
    labels of the study's answer_pair units whose evaluated answer is ``evaluated``'s and
    whose baseline is ``baseline``'s."""
    code = _preference(_fields(study.codebook.definition or {})) or "preference"
    counts = PairwiseCounts(evaluated, baseline)
    stream = _final_stream(
        study, "annotation", counts.reading, pipelines=[evaluated], baseline=baseline
    )
    for unit, annotation in stream:
        judgment = judgment_of(annotation or {}, code)
        if judgment is None:
            counts.unmapped += 1
            continue
        counts.judgments.append(judgment)
        counts.queries.append(unit.query)
        if judgment == "G":
            counts.good += 1
        elif judgment == "S":
            counts.same += 1
        else:
            counts.bad += 1
    return counts


def _cached_by_rows(model: Any, study: Study, name: str, read: Any) -> Any:
    """``read(study)``, cached under the count and last id of the study's ``model`` rows
    (append-only: a new row moves the key on, so the cache never needs clearing)."""
    seen = model.objects.filter(study=study).aggregate(n=Count("id"), last=Max("id"))
    key = (
        f"claimgate:{name}:{connection.settings_dict['NAME']}:{study.pk}:"
        f"{seen['n']}:{seen['last'] or 0}"
    )
    value = cache.get(key)
    if value is None:
        value = read(study)
        cache.set(key, value, timeout=None)
    return value


def pipeline_pairs(study: Study) -> list[tuple[int, int, int]]:
    """(evaluated pipeline, baseline pipeline, units) of an answer_pair study, most first;
    cached under the count and last id of its units (units are only ever added)."""
    pairs = _cached_by_rows(Unit, study, "pipeline-pairs", _pipeline_pairs_read)
    return [tuple(pair) for pair in pairs]


def _pipeline_pairs_read(study: Study) -> list[tuple[int, int, int]]:
    rows = (
        Unit.objects.filter(study=study, baseline__isnull=False)
        .values_list("observation__pipeline_id", "baseline__pipeline_id")
        .annotate(n=Count("id"))
        .order_by("-n", "observation__pipeline_id", "baseline__pipeline_id")
    )
    return [(a, b, n) for a, b, n in rows]


# --- the setting and the comparison ---------------------------------------------------------


def _query_set_digest(study: Study) -> str:
    """The digest of the study's sorted query keys, cached under the count and last id of
    its observations (append-only: an import adds observations, so it moves the key on):
    one aggregate instead of sorting every query key of every protocol study per page."""
    return _cached_by_rows(Observation, study, "query-set", _query_set_digest_read)


def _query_set_digest_read(study: Study) -> str:
    keys = (
        Observation.objects.filter(study=study)
        .order_by("query__key")
        .values_list("query__key", flat=True)
        .distinct()
    )
    digest = hashlib.sha256()
    for key in keys.iterator(chunk_size=CHUNK):
        digest.update(key.encode() + b"\n")
    return digest.hexdigest()


@dataclass(frozen=True)
class Setting:
    """A study's protocol setting: one study per protocol (``None`` where the setting has
    none), the pipelines answering in it, and the pairs of the pairwise study. ``units``
    counts the member studies' units; ``mark`` is the mark of what a comparison of the
    setting reads (:func:`comparison_mark`). ``read`` is set when the setting was read
    afresh rather than as stored: the archive's mark and the JSON that
    metrics.services.comparison_setting_store keeps (``ComparisonSetting``)."""

    study: Study
    protocol: str
    studies: dict[str, Study | None]
    pipelines: list[Pipeline]
    pairs: list[tuple[int, int, int]]
    units: int = 0
    mark: str = ""
    read: tuple[str, dict[str, Any]] | None = None


#: ComparisonSetting's member column of each protocol.
MEMBER_COLUMNS = {RUBRIC: "rubric", DOCUMENTS: "documents", PAIRWISE: "pairwise"}
#: The label kinds a comparison reads (final records, and independent labels for the
#: position-bias shares and for a unit's state); gold labels never enter it.
MARK_KINDS = (LabelKind.INDEPENDENT, LabelKind.CONSENSUS, LabelKind.ADJUDICATED)


def _last(queryset: Any) -> Subquery:
    return Subquery(queryset.order_by("-id").values("id")[:1])


def _archive_marks() -> dict[str, Subquery]:
    """The last study, observation and unit of the whole archive (primary-key probes)."""
    return {
        "mark_study": _last(Study.objects.all()),
        "mark_observation": _last(Observation.objects.all()),
        "mark_unit": _last(Unit.objects.all()),
    }


def _archive_mark(row: Any) -> str:
    get = row.get if isinstance(row, dict) else lambda name: getattr(row, name)
    return ":".join(str(get(name) or 0) for name in _archive_marks())


def setting_mark(study: Study) -> str:
    """Changes whenever a study's setting may: a new study (of any codebook), or new
    observations or units in any study (only an import adds them). One query (read beside
    ``study``'s row) of three primary-key probes, whatever the size of the archive."""
    marks = _archive_marks()
    rows = Study.objects.filter(pk=study.pk).order_by().annotate(**marks).values(*marks)
    return _archive_mark(rows.first() or {})


def _members_marked(ids: Sequence[int]) -> dict[int, Study]:
    """The member studies (codebook and freeze with them), each annotated with its last
    label of every kind a comparison reads, its partition version and the archive's marks
    (:func:`setting_mark`): one query of index probes (label_study_kind), whatever the
    number of labels."""
    annotations = {
        f"last_{kind}": _last(Label.objects.filter(study=OuterRef("pk"), kind=kind))
        for kind in MARK_KINDS
    }
    version = PartitionState.objects.filter(study=OuterRef("pk")).values("version")[:1]
    rows = (
        Study.objects.filter(pk__in=list(ids))
        .select_related("codebook", "freeze")
        .annotate(partition_version=Subquery(version), **annotations, **_archive_marks())
    )
    return {study.pk: study for study in rows}


def _comparison_mark(data: dict[str, Any], members: dict[int, Study]) -> str:
    """The mark of what a comparison reads: per protocol, the member study, its last label
    of each kind, its stored (units, last unit), partition version and freeze."""
    parts = []
    for protocol in PROTOCOLS:
        pk = data["studies"][protocol]
        if pk is None:
            parts.append("-")
            continue
        study = members[pk]
        labels = ",".join(str(getattr(study, f"last_{kind}") or 0) for kind in MARK_KINDS)
        n, last = data["units"].get(str(pk), (0, 0))
        frozen = "frozen" if hasattr(study, "freeze") else "open"
        parts.append(f"{pk}:{labels}:{n}:{last}:{study.partition_version or 0}:{frozen}")
    return "|".join(parts)


def protocol_setting(study: Study) -> Setting | None:
    """The setting of a protocol study (``None`` for a study of another codebook), as
    stored (metrics.models.ComparisonSetting) while the archive's mark
    (:func:`setting_mark`) has not moved: then two queries, the stored row and the member
    studies with their marks. Otherwise it is read again over every protocol study (the
    archive's mark read first, so that an import meanwhile leaves it behind), with
    ``read`` set for metrics.services.comparison_setting_store to keep: once per import."""
    protocol = protocol_of(study.codebook)
    if protocol is None:
        return None
    stored = ComparisonSetting.objects.filter(study=study).values_list("mark", "data").first()
    if stored is not None:
        mark, data = stored
        ids = [pk for pk in data["studies"].values() if pk is not None]
        members = _members_marked(ids)
        current = all(pk in members for pk in ids) and study.pk in members
        if current and _archive_mark(members[study.pk]) == mark:
            return _setting_from(study, protocol, data, members)
    mark = setting_mark(study)
    data = _setting_read(study, protocol)
    members = _members_marked([pk for pk in data["studies"].values() if pk is not None])
    return _setting_from(study, protocol, data, members, read=(mark, data))


def _setting_from(
    study: Study,
    protocol: str,
    data: dict[str, Any],
    members: dict[int, Study],
    read: tuple[str, dict[str, Any]] | None = None,
) -> Setting:
    studies: dict[str, Study | None] = {
        p: None if pk is None else study if pk == study.pk else members[pk]
        for p, pk in data["studies"].items()
    }
    pipelines = [Pipeline(pk=pk, name=name, version=v) for pk, name, v in data["pipelines"]]
    pairs = [(a, b, n) for a, b, n in data["pairs"]]
    units = sum(n for n, _ in data["units"].values())
    mark = _comparison_mark(data, members)
    return Setting(study, protocol, studies, pipelines, pairs, units, mark, read)


def _setting_read(study: Study, protocol: str) -> dict[str, Any]:
    """The setting read over the protocol studies (grows with them: done once per import),
    as the JSON a ComparisonSetting stores."""
    mine = _query_set_digest(study)
    studies: dict[str, Study | None] = dict.fromkeys(PROTOCOLS)
    studies[protocol] = study
    units = (CodebookUnit.ANSWER, CodebookUnit.QUERY_DOCUMENTS, CodebookUnit.ANSWER_PAIR)
    candidates = (
        Study.objects.filter(codebook__unit__in=units)
        .exclude(pk=study.pk)
        .select_related("codebook")
        .order_by("-id")
    )
    for other in candidates:
        kind = protocol_of(other.codebook)
        if kind is None or studies[kind] is not None:
            continue
        if _query_set_digest(other) == mine:
            studies[kind] = other
    present = [s.pk for s in studies.values() if s is not None]
    pipeline_ids = set(
        Observation.objects.filter(study_id__in=present)
        .order_by()
        .values_list("pipeline_id", flat=True)
        .distinct()
    )
    pipelines = Pipeline.objects.filter(pk__in=pipeline_ids).order_by("name", "version")
    pair_study = studies[PAIRWISE]
    counted = (
        Unit.objects.filter(study_id__in=present)
        .order_by()
        .values_list("study_id")
        .annotate(n=Count("id"), last=Max("id"))
    )
    return {
        "studies": {p: (s.pk if s is not None else None) for p, s in studies.items()},
        "pipelines": [[p.pk, p.name, p.version] for p in pipelines],
        "pairs": [list(pair) for pair in pipeline_pairs(pair_study)] if pair_study else [],
        "units": {str(pk): [n, last] for pk, n, last in counted},
    }


def _sides(
    study: Study, protocol: str, evaluated: int, baseline: int, reading: Reading
) -> dict[int, Side]:
    """Both pipelines' :class:`Side` of one study, in one pass over its final labels."""
    sides = {evaluated: Side(), baseline: Side()}
    if protocol == RUBRIC:
        for unit, passed in rubric_passes(study, reading, pipelines=list(sides)):
            sides[unit.pipeline].add_answer(unit.query, passed)
    else:
        rows = query_document_grades(study, reading, pipelines=list(sides))
        for unit, a, a_revised in rows:
            sides[unit.pipeline].add_documents(unit.query, a, a_revised)
    return sides


def comparison_fetch(
    setting: Setting, evaluated: int, baseline: int, *, seed: int = SEED, n_boot: int = N_BOOT
) -> dict[str, Any]:
    """Table II (metrics.comparison.compare) for pipeline ``evaluated`` against
    ``baseline`` in ``setting``, with what each study's reading withheld or still awaits
    (both pipelines' units together)."""
    sides: dict[str, dict[str, Side | None]] = {"evaluated": {}, "baseline": {}}
    readings: dict[str, dict[str, int]] = {}
    for protocol in (RUBRIC, DOCUMENTS):
        study = setting.studies[protocol]
        if study is None:
            sides["evaluated"][protocol] = sides["baseline"][protocol] = None
            continue
        reading = Reading()
        both = _sides(study, protocol, evaluated, baseline, reading)
        sides["evaluated"][protocol], sides["baseline"][protocol] = both[evaluated], both[baseline]
        readings[protocol] = vars(reading)
    pairwise = None
    pair_study = setting.studies[PAIRWISE]
    unmapped = 0
    if pair_study is not None:
        counts = pairwise_counts(pair_study, evaluated, baseline)
        pairwise = Pairwise(counts.judgments, counts.queries, counts.reading.awaiting_final)
        readings[PAIRWISE] = vars(counts.reading)
        unmapped = counts.unmapped
    result = compare(sides["evaluated"], sides["baseline"], pairwise, seed=seed, n_boot=n_boot)
    names = {p.pk: f"{p.name} {p.version}" for p in setting.pipelines}
    result.update(
        evaluated={"id": evaluated, "name": names.get(evaluated, str(evaluated))},
        baseline={"id": baseline, "name": names.get(baseline, str(baseline))},
        studies={k: (s.slug if s is not None else None) for k, s in setting.studies.items()},
        readings=readings,
        unmapped_pairs=unmapped,
    )
    return result


def comparisons_for_release(study: Study) -> dict[str, Any] | None:
    """The comparisons a release of ``study`` carries: one per (evaluated, baseline) pair
    of the setting's pairwise study, or ``None`` when the study is no protocol study or its
    setting has no pairwise study (nothing says which pipeline is whose baseline). A pair
    a worker stored (ComparisonSummary) with the setting's mark as it is now is taken as
    stored: it is what :func:`comparison_fetch` computes now, as JSON values; any other is
    computed here."""
    setting = protocol_setting(study)
    if setting is None or not setting.pairs:
        return None
    stored = {
        (evaluated, baseline): data["comparison"]
        for evaluated, baseline, data in ComparisonSummary.objects.filter(
            study=study, mark=setting.mark, data__isnull=False
        ).values_list("evaluated_id", "baseline_id", "data")
    }
    return {
        "format": 1,
        "study": study.slug,
        "setting": {k: (s.slug if s is not None else None) for k, s in setting.studies.items()},
        "comparisons": [
            stored.get((a, b)) or comparison_fetch(setting, a, b) for a, b, _ in setting.pairs
        ],
    }


def _side_field(study: Study) -> str | None:
    """The codebook's side field (a choice whose codes include left and right; the first
    one), ``None`` for a study that is not of answer pairs."""
    if study.codebook.unit != CodebookUnit.ANSWER_PAIR:
        return None
    fields = side_fields(codebook_from_dict(study.codebook.definition))
    return fields[0] if fields else None


def pairwise_left_shares(study: Study) -> dict[Hashable, LeftShare]:
    """The share of left picks of each annotator (by pseudonym) over their latest
    independent label of every pair: the side each saw picked is recovered from the
    stored role and the label's ``sides`` (metrics.position_bias). One query."""
    code = _side_field(study)
    if code is None:
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
    for _key, (_revision, annotation) in sorted(latest.items()):
        value = (annotation.get("values") or {}).get(code)
        side = picked_side(value, annotation.get("sides") or {})
        # "same" stays "same"; U and any other code count as unresolved
        picks.append((annotation.get("annotator"), side or ("same" if value == "same" else None)))
    return left_shares(picks)


# --- the stored comparison ------------------------------------------------------------------

#: Below this many units over the setting's studies the page computes Table II in the
#: request (the demo shows numbers at once); above it, a worker computes and stores it.
COMPARISON_INLINE_UNITS = 20_000


def comparison_inline(setting: Setting) -> bool:
    """Whether the setting is small enough to compute its comparison in a request (its
    units are counted with the setting: no query)."""
    return setting.units <= _inline_limit()


def _inline_limit() -> int:
    return int(getattr(django_settings, "COMPARISON_INLINE_UNITS", COMPARISON_INLINE_UNITS))


def comparison_mark(setting: Setting) -> str:
    """Changes whenever a comparison of the setting may: which study is the setting's for
    each protocol, a new label in one of them (labels are append-only, and a unit's final
    record or state changes only with a new label), new units, a change of partitions or
    the freeze. Read with the setting (:func:`protocol_setting`): no query of its own."""
    return setting.mark


def comparison_followers(study_id: int) -> list[int]:
    """The studies whose stored comparisons read ``study_id``'s labels: those whose stored
    setting has it as a member and is too large to compute in a request (a small one is
    computed on each view). One indexed query; none for a study in no such setting."""
    member = Q(rubric_id=study_id) | Q(documents_id=study_id) | Q(pairwise_id=study_id)
    rows = ComparisonSetting.objects.filter(member, units__gt=_inline_limit())
    return sorted(rows.values_list("study_id", flat=True))


def left_shares_rows(setting: Setting) -> list[dict[str, Any]]:
    """Each annotator's share of left picks in the setting's pairwise study, as JSON."""
    study = setting.studies.get(PAIRWISE)
    if study is None:
        return []
    return [
        {"annotator": str(annotator), **vars(share)}
        for annotator, share in sorted(pairwise_left_shares(study).items(), key=lambda i: str(i[0]))
    ]


def comparison_data(setting: Setting, evaluated: int, baseline: int) -> dict[str, Any]:
    """What a stored comparison holds (``ComparisonSummary.data``): the comparison and the
    setting's position-bias shares, as JSON values."""
    return {
        "comparison": comparison_fetch(setting, evaluated, baseline),
        "left_shares": left_shares_rows(setting),
    }


@dataclass(frozen=True)
class ComparisonShown:
    """What the comparison page and its CSV show. ``data`` is ``None`` while a worker
    computes the first one (``computing``); ``computed_at`` is set for a stored one, and
    ``stale`` when the setting has changed since (a newer one is being computed)."""

    data: dict[str, Any] | None
    computed_at: datetime | None = None
    stale: bool = False
    computing: bool = False


def comparison_shown(setting: Setting, evaluated: int, baseline: int) -> ComparisonShown:
    """Computed now for a small setting (:func:`comparison_inline`); for a larger one, the
    comparison a worker stored for the page's study and this pair, with when, and whether
    it is behind (the caller asks for a new one when it is, or when there is none)."""
    if comparison_inline(setting):
        return ComparisonShown(comparison_data(setting, evaluated, baseline))
    stored = (
        ComparisonSummary.objects.filter(
            study=setting.study, evaluated_id=evaluated, baseline_id=baseline
        )
        .values_list("mark", "data", "computed_at")
        .first()
    )
    if stored is None or stored[1] is None:
        return ComparisonShown(None, computing=True)
    mark, data, computed_at = stored
    return ComparisonShown(data, computed_at, stale=mark != comparison_mark(setting))
