"""Structural mutations (seed §IV-D): twelve defect types, each with its expected reason.

Every mutation works on a deep copy of a valid, fully observed record. Except for the
deliberate digest and identity defects, the mutated record is re-sealed (its record digest
recomputed), so that a stale outer digest cannot mask the structural defect under test.
Where a defect leaves other checks failing too, the expected reason follows the checker's
fixed order (DESIGN.md, "Contract validation"): snapshot digests before the tuple digest,
the tuple digest before the record digest, fields and digests before predicates and spans,
spans before evidence dimensions.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from audit.conformance.states import PREDICATE_KEYS
from audit.contract import codes
from audit.contract.digests import seal_record, snapshot_digest, tuple_digest

Record = dict[str, Any]


@dataclass(frozen=True)
class Mutation:
    name: str
    expected_reason: str
    resealed: bool
    description: str
    apply: Callable[[Record, int], Record]


def _target_key(index: int) -> str:
    """The predicate a per-predicate defect hits: cycles I, A, M, D over the records."""
    return PREDICATE_KEYS[index % len(PREDICATE_KEYS)]


def _tuple_identity(record: Record, index: int) -> Record:
    # The stored identity names another query version: a record relabelled as a different
    # tuple. Re-sealed, so only the tuple digest check can catch it.
    other_query = dict(record["query"], question_version="conformance-other")
    record["tuple_digest"] = tuple_digest(
        query=other_query,
        source_digest=record["source"]["digest"],
        answer_digest=record["answer"]["digest"],
        pipeline=record["pipeline"],
    )
    return seal_record(record)


def _source_digest(record: Record, index: int) -> Record:
    # The stored source digest belongs to other text. The tuple digest, computed from the
    # stored digests, is then stale too; the snapshot check comes first.
    record["source"]["digest"] = snapshot_digest(record["source"]["text"] + "(tampered)")
    return seal_record(record)


def _answer_digest(record: Record, index: int) -> Record:
    record["answer"]["digest"] = snapshot_digest(record["answer"]["text"] + "(tampered)")
    return seal_record(record)


def _record_digest(record: Record, index: int) -> Record:
    # A changed rationale under the old seal: the stored digest no longer matches.
    record["annotation"]["rationale"] = "Conformance mutation: edited after sealing."
    return record


def _missing_codebook_version(record: Record, index: int) -> Record:
    del record["codebook"]["version"]
    return seal_record(record)


def _missing_pipeline_field(record: Record, index: int) -> Record:
    del record["pipeline"]["version"]
    return seal_record(record)


def _predicate_string(record: Record, index: int) -> Record:
    record["annotation"]["predicates"][_target_key(index)] = "U"
    return seal_record(record)


def _dimensions(record: Record, index: int) -> Record:
    # A dimension renamed, its weight kept: the weights still sum to 1, so only the
    # dimension mapping is wrong.
    evidence = record["annotation"]["evidence"]
    evidence["d_X"] = evidence.pop("d_E")
    return seal_record(record)


def _span_missing(record: Record, index: int) -> Record:
    del record["annotation"]["spans"][_target_key(index)]
    return seal_record(record)


def _span_out_of_range(record: Record, index: int) -> Record:
    span = record["annotation"]["spans"][_target_key(index)][0]
    text = record[span["snapshot"]]["text"]
    span["end"] = len(text) + 7
    return seal_record(record)


def _span_quote(record: Record, index: int) -> Record:
    span = record["annotation"]["spans"][_target_key(index)][0]
    # Same length, different text: only the quote comparison can catch it.
    span["quote"] = span["quote"].swapcase()
    return seal_record(record)


def _weights_unnormalized(record: Record, index: int) -> Record:
    record["annotation"]["evidence"]["d_Q"]["weight"] += 0.25
    return seal_record(record)


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "tuple_identity",
        codes.TUPLE_DIGEST_MISMATCH,
        True,
        "stored tuple digest names another query version",
        _tuple_identity,
    ),
    Mutation(
        "source_snapshot_digest",
        codes.SOURCE_DIGEST_MISMATCH,
        True,
        "stored source digest belongs to other text",
        _source_digest,
    ),
    Mutation(
        "answer_snapshot_digest",
        codes.ANSWER_DIGEST_MISMATCH,
        True,
        "stored answer digest belongs to other text",
        _answer_digest,
    ),
    Mutation(
        "record_digest",
        codes.RECORD_DIGEST_MISMATCH,
        False,
        "rationale edited after sealing",
        _record_digest,
    ),
    Mutation(
        "missing_codebook_version",
        codes.MISSING_FIELD,
        True,
        "codebook.version removed",
        _missing_codebook_version,
    ),
    Mutation(
        "missing_pipeline_field",
        codes.MISSING_FIELD,
        True,
        "pipeline.version removed",
        _missing_pipeline_field,
    ),
    Mutation(
        "invalid_nullable_label",
        codes.PREDICATE_STRING,
        True,
        'one predicate set to the string "U"',
        _predicate_string,
    ),
    Mutation(
        "inconsistent_dimensions",
        codes.DIMENSIONS_MISMATCH,
        True,
        "evidence dimension d_E renamed to d_X",
        _dimensions,
    ),
    Mutation(
        "missing_span",
        codes.SPAN_MISSING,
        True,
        "spans of one resolved predicate removed",
        _span_missing,
    ),
    Mutation(
        "invalid_span_offsets",
        codes.SPAN_OUT_OF_RANGE,
        True,
        "span end moved past the end of its snapshot",
        _span_out_of_range,
    ),
    Mutation(
        "mismatched_quote", codes.SPAN_QUOTE_MISMATCH, True, "span quote case-swapped", _span_quote
    ),
    Mutation(
        "unnormalized_weights",
        codes.WEIGHTS_UNNORMALIZED,
        True,
        "d_Q weight raised by 0.25",
        _weights_unnormalized,
    ),
)


def mutate(mutation: Mutation, record: Record, index: int) -> Record:
    """Apply ``mutation`` to a deep copy of ``record`` (the ``index``-th complete record)."""
    return mutation.apply(copy.deepcopy(record), index)
