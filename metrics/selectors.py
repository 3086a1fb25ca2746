"""Reads for reliability reports: fetched once, in a fixed number of queries, into the
plain values metrics.report_build works on.

Which labels: the ORIGINAL INDEPENDENT labels only, each annotator's latest revision per
unit (consensus and adjudicated records never enter a coefficient), of units outside the
partitions sealed at computation time (``partition_sealed``: the held-out test partition
until the study is frozen). ``labels_digest`` is the canonical digest of the sorted record
digests of exactly those labels; a stored report with another digest is out of date.

Claim-metric rows (a codebook whose claims field keeps format 1's shape): one row per
observation of the study. A failed attempt is a ``failed`` row (its failure text, no
verdicts). A complete answer takes its verdicts and claims from its unit's **final
record**: the latest adjudicated label, else the latest consensus label while the unit
is agreed. A consensus record holds one claim per aligned row
(audit.contract.claim_alignment); one stored before claims were aligned holds every
agreeing annotator's claims (ids prefixed ``a1-``, ``a2-``, ...), and the rows use the
first annotator's so that an agreed answer's claims are not counted k times. A complete
answer without a final record yet counts as an attempt with unknown verdicts and no
claims, and the report gives how many there are ("awaiting a final record").
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from functools import partial
from itertools import islice
from types import SimpleNamespace
from typing import Any

from django.db import connection, transaction
from django.db.models import (
    BooleanField,
    CharField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Q,
    Value,
)
from django.db.models.fields.json import KT, KeyTransform
from django.db.models.functions import Coalesce, Concat, Length

from annotator.labelling.models import Label, LabelKind
from annotator.memberships.models import Membership, Role
from audit.archive.models import (
    AnswerStatus,
    Codebook,
    CodebookUnit,
    Observation,
    Study,
    Tuple,
    Unit,
    UnitState,
)
from audit.contract.endpoint import VERDICTS
from audit.contract.engine import ENGINE_FORMAT, Engine, engine_of
from audit.contract.fields import derive
from audit.ledger.models import StudyGate
from audit.partitions.selectors import (
    PARTITION_KEYS,
    UNASSIGNED,
    partition_sealed,
    partitions_mark,
)
from metrics.matrices import (
    CLAIM_ITEMS,
    ClaimSpan,
    UnitDomains,
    category,
    document_categories,
    heads_from_rows,
    labels_digest_of,
)
from metrics.models import Prediction, PredictionSet, ReportStatus, StudyReport
from metrics.predictions import GoldUnit, final_value, prediction_engine
from metrics.report_build import CodebookInfo, RateSpec, ReportInputs

NOT_ARCHIVED = "(raw original not archived)"


def sealed_partitions(study: Study) -> tuple[str, ...]:
    return tuple(key for key in PARTITION_KEYS if partition_sealed(study, key))


#: Rows per fetch of the label and unit reads.
CHUNK = 50_000


def _chunks_orm(queryset: Any) -> Iterator[Sequence[tuple]]:
    """The rows of a ``values_list`` queryset, a list at a time, by the ORM's iterator."""
    rows = queryset.order_by().iterator(chunk_size=CHUNK)
    while chunk := list(islice(rows, CHUNK)):
        yield chunk


def _chunks_server(queryset: Any) -> Iterator[Sequence[tuple]]:
    """The same rows on PostgreSQL, without Django's per-row iteration: the queryset's SQL
    runs on a server-side cursor inside a transaction (so the cursor is not ``WITH HOLD``,
    which would first copy the whole result) and each ``fetchmany`` list is handed on as it
    is, after the field converters if the columns have any (JSON key transforms)."""
    compiler = queryset.order_by().query.get_compiler(using=queryset.db)
    sql, params = compiler.as_sql()
    converters = compiler.get_converters([col for col, _, _ in compiler.select])
    with transaction.atomic(savepoint=False), connection.chunked_cursor() as cursor:
        cursor.execute(sql, params)
        while chunk := cursor.fetchmany(CHUNK):
            yield list(compiler.apply_converters(chunk, converters)) if converters else chunk


def _chunks(queryset: Any) -> Iterator[Sequence[tuple]]:
    """Server-side on PostgreSQL, the ORM elsewhere (SQLite, the embedded default); both
    without the model's default ordering, which would cost PostgreSQL a sort of every row."""
    if connection.vendor == "postgresql":
        return _chunks_server(queryset)
    return _chunks_orm(queryset)


def _independent_labels(study: Study, sealed: Sequence[str]) -> Any:
    """The study's independent labels outside the sealed partitions (every revision)."""
    labels = Label.objects.filter(study=study, kind=LabelKind.INDEPENDENT)
    if sealed:
        in_sealed = Q(partition__in=sealed)
        if UNASSIGNED in sealed:
            in_sealed |= Q(partition__isnull=True)
        # NOT EXISTS (an anti-join), never NOT IN: a large sealed partition would not fit
        # PostgreSQL's hashed subplan and every label would scan it.
        labels = labels.exclude(Exists(Unit.objects.filter(in_sealed, pk=OuterRef("unit_id"))))
    return labels


#: The head columns ``metrics.matrices.heads_from_rows`` reads, before the values.
HEAD_COLUMNS = ("id", "unit_id", "annotator_id", "revision", "record_digest", "codebook_digest")
ASSISTED = ExpressionWrapper(Q(assisted_model__isnull=False), output_field=BooleanField())


def _head_rows(labels: Any, values: dict[str, Any]) -> Iterator[Sequence[tuple]]:
    return _chunks(
        labels.annotate(h_assisted=ASSISTED, **values).values_list(
            *HEAD_COLUMNS, "h_assisted", *values
        )
    )


def labels_digest(*, study: Study) -> str:
    """The digest of the independent labels a report computed now would use (one query,
    plus what ``partition_sealed`` reads)."""
    rows = _head_rows(_independent_labels(study, sealed_partitions(study)), {})
    heads = heads_from_rows(rows, n_items=0, coder_of=str)
    return labels_digest_of(heads.record_digests)


#: Field types whose values are read as text.
TEXT_READ = frozenset({"choice", "grade", "number", "date", "text"})


def _value_reader(engine: Engine, item: Any) -> Any:
    """The database expression that reads one field's value out of a label's annotation,
    at the field's path (audit.contract.engine): choices, grades, numbers and dates as
    text, which the categories are made of; verdicts, claims and spans as their JSON value
    (SQLite reads a JSON ``true`` as the text ``1``)."""
    path = engine.paths[item.code]
    if item.type not in TEXT_READ:
        expression: Any = "annotation"
        for step in path:
            expression = KeyTransform(step, expression)
        return expression
    return KT("__".join(("annotation", *path)))


def _json_value(text: Any) -> Any:
    """A field value read as text from a label's JSON (``KT``) back as its JSON value."""
    if text is None or not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text  # a choice code: the text is the value


def _with_derived(
    chunks: Iterator[Sequence[tuple]], codes: Sequence[str], derived: Sequence[Any]
) -> Iterator[list[tuple]]:
    """Head rows with each label's derived values inserted after its field values (the
    row's 7 head columns, then one per field of ``codes``, then what follows)."""
    rules = SimpleNamespace(derived=tuple(derived))
    end = 7 + len(codes)
    for chunk in chunks:
        rows = []
        for row in chunk:
            values = {code: _json_value(row[7 + i]) for i, code in enumerate(codes)}
            out = derive(rules, {"values": values})
            rows.append((*row[:end], *(out[d.code] for d in derived), *row[end:]))
        yield rows


def _items(engine: Engine) -> tuple[tuple[str, str], ...]:
    """The report's items: every unit-level field with a value, then the derived values
    reported beside them, each with its label."""
    return tuple(
        (item.code, engine.item_labels.get(item.code, item.code))
        for item in (*engine.value_fields, *engine.reported_derived)
    )


def _pseudonyms(study: Study) -> dict[int, str]:
    """How each member is named in reports: their annotator pseudonym (else their first
    membership's), as ``annotator.memberships.services.pseudonym_of`` names them in records."""
    names: dict[int, tuple[bool, int, str]] = {}
    for user_id, role, pk, pseudonym in Membership.objects.filter(study=study).values_list(
        "user_id", "role", "pk", "pseudonym"
    ):
        rank = (role != Role.ANNOTATOR, pk, pseudonym)
        if user_id not in names or rank < names[user_id]:
            names[user_id] = rank
    return {user_id: rank[2] for user_id, rank in names.items()}


def _claim_spans(claims: Any) -> tuple[ClaimSpan, ...]:
    spans = []
    for claim in claims or ():
        span = claim.get("span") or {}
        start, end = span.get("start"), span.get("end")
        if not isinstance(start, int) or not isinstance(end, int):
            continue
        spans.append(
            ClaimSpan(start, end, tuple(category(claim.get(key)) for key, _ in CLAIM_ITEMS))
        )
    return tuple(spans)


#: How the report names the share of units whose derived endpoint (rule ``R_O``) is 1.
_ENDPOINT_LABEL = "R_O = 1 (material relationship omitted)"


def report_inputs_fetch(*, study: Study) -> ReportInputs:
    """Every value a report needs. Queries: units, independent labels, memberships,
    codebooks, and for a format-1 claims codebook final labels, observations and source URLs
    (plus what ``partition_sealed`` reads)."""
    codebook = study.codebook
    is_tuple = codebook.unit == CodebookUnit.TUPLE
    engine = engine_of(codebook.definition or {})
    unit_fields = engine.value_fields
    per_document = engine.document_fields
    derived = engine.reported_derived
    engine_format = engine.format_version == ENGINE_FORMAT
    claims = engine.claims_fields[0] if engine.claims_fields and not engine_format else None
    sealed = sealed_partitions(study)
    columns = ["id", "partition", "observation__query__domain", "state", "observation_id"]
    if is_tuple:
        columns.append("tuple__inclusion_probability")
    ids: list[int] = []
    domains: list[str | None] = []
    present: set[str] = set()
    units: dict[int, tuple] = {}
    for chunk in _chunks(Unit.objects.filter(study=study).values_list(*columns)):
        for column, values in ((ids, 0), (domains, 2)):
            column.extend(row[values] for row in chunk)
        present.update(row[1] or UNASSIGNED for row in chunk)
        units.update((row[0], (row[1] or UNASSIGNED, row[2] or "", *row[3:])) for row in chunk)
    items = _items(engine)
    values = {f"v_{item.code}": _value_reader(engine, item) for item in unit_fields}
    if claims is not None:
        values["claims"] = _value_reader(engine, claims)
    if per_document:
        values["documents"] = KeyTransform("documents", "annotation")
    pseudonyms = _pseudonyms(study)
    rows = _head_rows(_independent_labels(study, sealed), values)
    if derived:
        rows = _with_derived(rows, [f.code for f in unit_fields], derived)
    heads = heads_from_rows(
        rows,
        n_items=len(items),
        coder_of=lambda user_id: pseudonyms.get(user_id, f"user-{user_id}"),
        claims_of=None if claims is None else _claim_spans,
        documents_of=(
            partial(document_categories, codes=[f.code for f in per_document])
            if per_document
            else None
        ),
    )
    digests = {*heads.codebooks, codebook.digest}
    codebooks = {
        digest: CodebookInfo(name, version, digest, unit)
        for digest, name, version, unit in Codebook.objects.filter(digest__in=digests).values_list(
            "digest", "name", "version", "unit"
        )
    }
    inputs: dict[str, Any] = {}
    open_units = {pk for pk, unit in units.items() if unit[0] not in sealed}
    if engine_format:
        inputs = {
            "levels": {
                **{f.code: f.level for f in (*unit_fields, *per_document)},
                **{d.code: "nominal" for d in derived},
            },
            "document_items": tuple(
                (f.code, f"{f.code}: {f.label} (per document)") for f in per_document
            ),
        }
    elif claims is not None:
        inputs = {
            **_claim_rows(study, units, open_units),
            "claims_aligned": True,
            "rates": tuple(
                RateSpec(f.code, f"{f.code} = true", engine.unit, "records")
                for f in unit_fields
                if f.type == "verdict"
            ),
        }
    else:
        inputs = {
            "outcomes": _final_outcomes(study, engine, units, open_units),
            "rates": tuple(
                RateSpec(d.code, _ENDPOINT_LABEL, engine.unit, "outcomes")
                for d in engine.derived
                if d.rule == "R_O"
            ),
        }
    return ReportInputs(
        study=study.slug,
        codebook=CodebookInfo(codebook.name, codebook.version, codebook.digest, codebook.unit),
        codebooks=codebooks,
        items=items,
        heads=heads,
        domains=UnitDomains.of(ids, domains),
        labels_digest=labels_digest_of(heads.record_digests),
        sealed_partitions=tuple(key for key in sealed if key in present),
        included_partitions=tuple(
            key for key in PARTITION_KEYS if key not in sealed and key in present
        ),
        **inputs,
    )


def _final_annotations(
    study: Study,
    states: dict[int, str],
    annotation: Any = "annotation",
    *,
    unit_range: tuple[int, int] | None = None,
) -> dict[int, tuple[str, Any]]:
    """Each unit's final record: (kind, annotation). ``annotation`` is the column read for
    it: the whole annotation, or an expression of the part a caller needs (so that a large
    study's final records are not all parsed as JSON for four predicates). ``unit_range``
    (first, last unit id, inclusive) reads the final records of those units only, so that
    a caller streaming a large study's units reads their final records a chunk at a time."""
    adjudicated: dict[int, tuple] = {}
    consensus: dict[int, tuple] = {}
    labels = Label.objects.filter(
        study=study, kind__in=(LabelKind.ADJUDICATED, LabelKind.CONSENSUS)
    )
    if unit_range is not None:
        labels = labels.filter(unit_id__gte=unit_range[0], unit_id__lte=unit_range[1])
    rows = (
        labels.order_by("id")
        .annotate(final_part=annotation if not isinstance(annotation, str) else F(annotation))
        .values_list("unit_id", "kind", "revision", "id", "final_part")
    )
    for unit_id, kind, revision, pk, annotation in rows:
        target = adjudicated if kind == LabelKind.ADJUDICATED else consensus
        if kind == LabelKind.CONSENSUS and states.get(unit_id) != UnitState.AGREED:
            continue
        current = target.get(unit_id)
        if current is None or (revision, pk) > current[:2]:
            target[unit_id] = (revision, pk, kind, annotation)
    finals = {**consensus, **adjudicated}
    return {unit_id: (row[2], row[3]) for unit_id, row in finals.items()}


def _final_outcomes(
    study: Study, engine: Engine, units: dict[int, tuple], open_units: set[int]
) -> tuple[tuple[Any, float | None, int], ...]:
    """(final R_O, inclusion probability, answer) of every open unit with a final record,
    in unit order: what the weighted outcome estimates need (one query); none when the
    codebook has no R_O."""
    endpoint = next((d for d in engine.derived if d.rule == "R_O"), None)
    if endpoint is None:
        return ()
    # Only R_O's inputs, as text ("1", "0", or "U"): never the whole record.
    inputs = Concat(
        *(
            item
            for code in endpoint.inputs
            for item in (
                Coalesce(
                    KT("__".join(("annotation", *engine.paths[code]))),
                    Value("U", output_field=CharField()),
                    output_field=CharField(),
                ),
                Value(",", output_field=CharField()),
            )
        ),
        output_field=CharField(),
    )
    finals = _final_annotations(study, {pk: unit[2] for pk, unit in units.items()}, inputs)
    rule = SimpleNamespace(derived=(endpoint,))
    out = []
    for pk in sorted(open_units):
        final = finals.get(pk)
        if final is None:
            continue
        _, _, _, observation, probability = units[pk]
        texts = final[1].split(",")
        values = {
            code: _predicate(text) for code, text in zip(endpoint.inputs, texts, strict=False)
        }
        outcome = derive(rule, {"values": values})[endpoint.code]
        out.append((outcome, probability, observation))
    return tuple(out)


def _predicate(text: str) -> int | None:
    return {"0": 0, "1": 1}.get(text)


def _answer_probabilities(study: Study) -> dict[int, float | None]:
    """Each answer's inclusion probability: the one its tuples share (``None`` when a tuple
    has none, when they differ, or when the answer has no tuple)."""
    seen: dict[int, set[float | None]] = {}
    rows = (
        Tuple.objects.filter(study=study)
        .order_by()
        .values_list("observation_id", "inclusion_probability")
    )
    for observation, probability in rows:
        seen.setdefault(observation, set()).add(probability)
    return {
        observation: next(iter(values)) if len(values) == 1 else None
        for observation, values in seen.items()
    }


def _claim_of(claim: dict, urls: dict[str, str], answer_length: int) -> dict[str, Any]:
    span = claim.get("span") or {}
    quote_span = claim.get("quote_span") or {}
    digest = claim.get("source_digest")
    quote = quote_span.get("quote") if isinstance(quote_span.get("quote"), str) else None
    source_url = urls.get(digest) or (f"sha256:{digest}" if isinstance(digest, str) else None)
    position = span.get("start")
    if not isinstance(position, int) or not 0 <= position < answer_length:
        position = None
    return {
        "text": span.get("quote") or "(empty span)",
        "source_url": source_url,
        "quote": quote if source_url else None,
        "supported": claim.get("supported"),
        "accurate": claim.get("accurate"),
        "kind": claim.get("kind") or "verifiable",
        "reason": claim.get("reason") if isinstance(claim.get("reason"), str) else None,
        "position": position,
        "answer_length": answer_length if position is not None else None,
    }


def _claim_rows(study: Study, units: dict[int, tuple], open_units: set[int]) -> dict[str, Any]:
    states = {pk: unit[2] for pk, unit in units.items()}
    unit_of_observation = {unit[3]: pk for pk, unit in units.items()}
    probabilities = _answer_probabilities(study)
    finals = _final_annotations(study, states)
    urls = dict(
        Tuple.objects.filter(study=study).values_list("source__digest", "source__canonical_url")
    )
    observations = (
        Observation.objects.filter(study=study)
        .order_by("id")
        .values(
            "id",
            question_id=F("query__query_id"),
            question_version=F("query__question_version"),
            question_type=F("query__question_type"),
            domain=F("query__domain"),
            service=F("answer__service"),
            mode=F("answer__mode"),
            model=F("answer__model"),
            status=F("answer__status"),
            failure=F("answer__failure"),
            raw_path=F("answer__raw_path"),
            answer_length=Length("answer__text"),
        )
    )
    rows = []
    awaiting = 0
    failed = 0
    for obs in observations:
        identity = {
            key: obs[key]
            for key in ("question_id", "question_version", "question_type", "service", "mode")
        }
        identity["domain"] = obs["domain"] or None
        identity["inclusion_probability"] = probabilities.get(obs["id"])
        identity["model"] = obs["model"] or None
        if obs["status"] == AnswerStatus.FAILED:
            failed += 1
            rows.append(
                {
                    **identity,
                    "status": "failed",
                    "failure": obs["failure"],
                    "raw_path": obs["raw_path"] or None,
                    "record": None,
                }
            )
            continue
        unit_id = unit_of_observation.get(obs["id"])
        if unit_id is None or unit_id not in open_units:
            continue  # a sealed partition's answer: no numbers at all
        row = {
            **identity,
            "status": "complete",
            "failure": None,
            "raw_path": obs["raw_path"] or NOT_ARCHIVED,
        }
        final = finals.get(unit_id)
        if final is None:
            awaiting += 1
            row.update({key: None for key in VERDICTS})
            row.update(reasons={key: None for key in VERDICTS}, claims=[], record=None)
            rows.append(row)
            continue
        kind, annotation = final
        verdicts = annotation.get("verdicts") or {}
        claims = annotation.get("claims") or []
        if kind == LabelKind.CONSENSUS and any(
            str(c.get("id", "")).startswith("a1-") for c in claims
        ):  # a consensus stored before claims were aligned: every annotator's claims
            claims = [c for c in claims if str(c.get("id", "")).startswith("a1-")]
        row.update({key: (verdicts.get(key) or {}).get("value") for key in VERDICTS})
        row["reasons"] = {key: (verdicts.get(key) or {}).get("reason") for key in VERDICTS}
        row["claims"] = [_claim_of(c, urls, obs["answer_length"] or 0) for c in claims]
        row["record"] = kind
        rows.append(row)
    return {"claim_rows": tuple(rows), "awaiting_final": awaiting, "failed_attempts": failed}


# --- stored reports ------------------------------------------------------------------------


def report_latest_done(*, study: Study) -> StudyReport | None:
    return StudyReport.objects.filter(study=study, status=ReportStatus.DONE).order_by("-id").first()


def report_current(*, study: Study) -> StudyReport | None:
    """The report being computed or waiting to be (running first), if any."""
    return (
        StudyReport.objects.filter(
            study=study, status__in=(ReportStatus.QUEUED, ReportStatus.RUNNING)
        )
        .order_by("-status", "-id")  # "running" sorts after "queued": running first
        .first()
    )


def labels_mark(*, study: Study) -> str:
    """What the report's labels depend on, in two short queries: the last independent
    label outside the sealed partitions (labels are append-only, a revision is a new
    label) and the partitions' mark (their version and whether the study is frozen).
    A report stores the mark read before its labels, so a label that arrives meanwhile
    can only make it look out of date, never current."""
    last = (
        _independent_labels(study, sealed_partitions(study))
        .order_by("-id")
        .values_list("id", flat=True)
        .first()
    )
    return f"{last or 0}:{partitions_mark(study)}"


def report_out_of_date(*, study: Study, report: StudyReport | None) -> bool:
    """Whether the labels a report computed now would use differ from the report's: by
    the mark (reports since it was stored), else by the digest of every label."""
    if report is None:
        return False
    if report.labels_mark:
        return report.labels_mark != labels_mark(study=study)
    return report.labels_digest != labels_digest(study=study)


def report_is_current(*, study: Study) -> bool:
    """A done report exists whose labels are the current independent labels."""
    report = report_latest_done(study=study)
    return report is not None and report.labels_digest == labels_digest(study=study)


def latest_report(study: Study) -> dict[str, Any] | None:
    """The latest done report of the study for a release: its stored JSON and metadata."""
    report = report_latest_done(study=study)
    if report is None:
        return None
    return {
        "id": report.pk,
        "study": study.slug,
        "codebook": {"name": report.codebook_name, "version": report.codebook_version},
        "labels_digest": report.labels_digest,
        "stage": report.stage,
        "started_at": report.started_at.isoformat() if report.started_at else None,
        "finished_at": report.finished_at.isoformat() if report.finished_at else None,
        "up_to_date": report.labels_digest == labels_digest(study=study),
        "report": report.report,
    }


def gate_stage(*, study: Study) -> str | None:
    return StudyGate.objects.filter(study=study).values_list("reached", flat=True).first()


# --- predictions ---------------------------------------------------------------------------


def study_unit_ids_by_digest(*, study: Study) -> dict[str, int]:
    """unit digest -> unit id, for checking a prediction file's lines (one query)."""
    return dict(Unit.objects.filter(study=study).values_list("digest", "id").order_by())


def prediction_gold_fetch(*, study: Study, field: str) -> dict[int, GoldUnit]:
    """Every unit of the study with its domain and its final record's value of ``field``
    (two queries: units, final labels). The final record is the latest adjudicated label,
    else the latest consensus label while the unit is agreed; never an independent label,
    never a prediction."""
    units = list(
        Unit.objects.filter(study=study)
        .order_by()
        .values_list("id", "state", "observation__query__domain")
    )
    finals = _final_annotations(study, {pk: state for pk, state, _ in units})
    engine = prediction_engine(study.codebook.unit, study.codebook.definition or {})
    gold = {}
    for pk, _, domain in units:
        final = finals.get(pk)
        value = final_value(final[1] or {}, field, engine) if final is not None else None
        gold[pk] = GoldUnit(domain=domain or "", final=final is not None, value=value)
    return gold


def prediction_values_fetch(*, prediction_set: PredictionSet) -> dict[int, Any]:
    """unit id -> predicted value of a prediction set (one query)."""
    return dict(
        Prediction.objects.filter(prediction_set=prediction_set)
        .order_by()
        .values_list("unit_id", "value")
    )


def prediction_sets_of(*, study: Study) -> list[PredictionSet]:
    return list(PredictionSet.objects.filter(study=study).order_by("-id"))


def prediction_set_get(*, study: Study, pk: int) -> PredictionSet | None:
    return PredictionSet.objects.filter(study=study, pk=pk).first()


def prediction_sets_for_release(*, study: Study) -> list[dict[str, Any]]:
    """The study's prediction sets with their scores, oldest first (one query): what a
    release's ``predictions.json`` holds. Scores only: predicted values are not labels and
    never enter a release's label tables."""
    return list(
        PredictionSet.objects.filter(study=study)
        .order_by("id")
        .values(
            "id",
            "kind",
            "name",
            "version",
            "field",
            "positive",
            "file_name",
            "file_sha256",
            "predictions",
            "gold_digest",
            "scored_at",
            "scores",
        )
    )
