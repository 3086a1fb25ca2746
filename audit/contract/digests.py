"""Snapshot, tuple, unit and record digests (DESIGN.md, "Digests and lineage").

Digests detect change; they are not signatures and say nothing about correctness.
All digests are lowercase hexadecimal SHA-256 (64 characters).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from audit.contract.canonical import (
    CanonicalError,
    canonical_digest,
    canonical_text_unchecked,
    encode_string,
    sha256_hex,
)

#: Fields of a query that make up its identity inside a tuple digest.
QUERY_IDENTITY_FIELDS = ("id", "question_version", "text")
#: Fields of a pipeline that make up its configuration inside a tuple digest.
PIPELINE_IDENTITY_FIELDS = ("name", "version", "config")


def snapshot_digest(text: str) -> str:
    """SHA-256 of the snapshot text's UTF-8 bytes."""
    return sha256_hex(text.encode("utf-8"))


def query_identity(query: Mapping[str, Any]) -> dict[str, Any]:
    return {key: query[key] for key in QUERY_IDENTITY_FIELDS}


def pipeline_identity(pipeline: Mapping[str, Any]) -> dict[str, Any]:
    return {key: pipeline[key] for key in PIPELINE_IDENTITY_FIELDS}


def tuple_digest(
    *,
    query: Mapping[str, Any],
    source_digest: str,
    answer_digest: str,
    pipeline: Mapping[str, Any],
) -> str:
    """The identity of a tuple r = (q, u, a): query identity, both snapshot digests and
    the pipeline configuration, canonically serialized."""
    return canonical_digest(
        {
            "query": query_identity(query),
            "source_digest": source_digest,
            "answer_digest": answer_digest,
            "pipeline": pipeline_identity(pipeline),
        }
    )


def answer_identity(answer: Mapping[str, Any]) -> dict[str, Any]:
    """Every field of an answer snapshot except its text, which its digest stands for.

    Unlike a tuple, an answer unit binds the observation's metadata too: two failed
    attempts at the same query (same empty text, different times) are two attempts."""
    return {key: value for key, value in answer.items() if key != "text"}


def tuple_digest_unchecked(
    *,
    query: Mapping[str, Any],
    source_digest: str,
    answer_digest: str,
    pipeline: Mapping[str, Any],
    pipeline_text: str | None = None,
) -> str:
    """:func:`tuple_digest` for already validated values, assembled from pieces.

    Same bytes as :func:`tuple_digest` (the tests hold the two equal), but without building
    the intermediate objects or walking their keys: the checker computes one per record.
    Requires string ``id``, ``question_version`` and ``text`` and a pipeline whose
    ``config`` has string keys only. ``pipeline_text``, when given, is
    :func:`pipeline_identity_text` of ``pipeline``, already computed by the caller.
    """
    identity = pipeline_identity_text(pipeline) if pipeline_text is None else pipeline_text
    # Keys in sorted order: answer_digest, pipeline, query (id, question_version, text),
    # source_digest.
    text = (
        '{"answer_digest":'
        + encode_string(answer_digest)
        + ',"pipeline":'
        + identity
        + ',"query":{"id":'
        + encode_string(query["id"])
        + ',"question_version":'
        + encode_string(query["question_version"])
        + ',"text":'
        + encode_string(query["text"])
        + '},"source_digest":'
        + encode_string(source_digest)
        + "}"
    )
    return sha256_hex(text.encode("utf-8"))


def query_identity_text(query: Mapping[str, Any]) -> str:
    """The canonical serialization of :func:`query_identity` for a query whose ``id``,
    ``question_version`` and ``text`` are strings (keys in sorted order)."""
    return (
        '{"id":'
        + encode_string(query["id"])
        + ',"question_version":'
        + encode_string(query["question_version"])
        + ',"text":'
        + encode_string(query["text"])
        + "}"
    )


def pipeline_identity_text(pipeline: Mapping[str, Any]) -> str:
    """The canonical serialization of :func:`pipeline_identity` for a pipeline whose
    ``config`` has string keys only; raises :class:`CanonicalError` (NaN, infinity)."""
    return canonical_text_unchecked({key: pipeline[key] for key in PIPELINE_IDENTITY_FIELDS})


def text_digest(text: str) -> str:
    """SHA-256 of an assembled canonical text; an unpaired surrogate raises
    :class:`CanonicalError` as :func:`canonical_digest` does."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise CanonicalError(f"text is not valid Unicode: {exc.reason}") from exc
    return sha256_hex(data)


def tuple_digest_from_parts(
    *, query_text: str, source_digest: str, answer_digest: str, pipeline_text: str
) -> str:
    """:func:`tuple_digest` from the identity texts of :func:`query_identity_text` and
    :func:`pipeline_identity_text`, which an observation's tuples share (same bytes)."""
    return text_digest(
        '{"answer_digest":'
        + encode_string(answer_digest)
        + ',"pipeline":'
        + pipeline_text
        + ',"query":'
        + query_text
        + ',"source_digest":'
        + encode_string(source_digest)
        + "}"
    )


def unit_digest(
    *,
    query: Mapping[str, Any],
    answer: Mapping[str, Any],
    source_digests: Iterable[str],
    pipeline: Mapping[str, Any],
) -> str:
    """The identity of an answer unit (format 1's answer codebook, and one observation of
    an import file): the query identity, the answer snapshot (all fields but the text,
    whose digest is among them), the digests of all of its sources in the order given (the
    answer's citation order) and the pipeline configuration."""
    return canonical_digest(
        {
            "query": query_identity(query),
            "answer": answer_identity(answer),
            "source_digests": list(source_digests),
            "pipeline": pipeline_identity(pipeline),
        }
    )


def answer_identity_text(answer: Mapping[str, Any]) -> str:
    """The canonical serialization of :func:`answer_identity` for an answer whose object
    keys are strings (a checked one): also the archive key's input (audit.archive.mapping)."""
    return canonical_text_unchecked(answer_identity(answer))


def unit_digest_from_parts(
    *,
    answer_text: str,
    query_text: str,
    source_digests: Iterable[str],
    pipeline_text: str,
) -> str:
    """:func:`unit_digest` from the identity texts (:func:`answer_identity_text`,
    :func:`query_identity_text`, :func:`pipeline_identity_text`); same bytes."""
    return text_digest(
        '{"answer":'
        + answer_text
        + ',"pipeline":'
        + pipeline_text
        + ',"query":'
        + query_text
        + ',"source_digests":['
        + ",".join([encode_string(digest) for digest in source_digests])
        + "]}"
    )


def answer_pair_digest(*, evaluated: str, baseline: str) -> str:
    """The identity of an ``answer_pair`` unit: the unit digests (:func:`unit_digest`) of
    its evaluated observation and of its baseline observation, in those roles. Swapping
    the roles gives another pair, another digest."""
    return canonical_digest({"unit": "answer_pair", "evaluated": evaluated, "baseline": baseline})


def document_order(sources: Iterable[Mapping[str, Any]]) -> list[int]:
    """Positions of an observation's sources in rank order (rank 1 first): the documents
    of a ``query_documents`` unit. Every rank must be an integer (the import refuses an
    unranked source in such a study); equal ranks cannot occur there either."""
    listed = list(sources)
    return sorted(range(len(listed)), key=lambda index: listed[index]["rank"])


def query_documents_digest(
    *,
    query: Mapping[str, Any],
    answer: Mapping[str, Any],
    document_digests: Iterable[str],
    pipeline: Mapping[str, Any],
) -> str:
    """The identity of a ``query_documents`` unit: the query identity, the observation's
    answer snapshot (all fields but its text: which system retrieved, when, how), the
    digests of its documents in rank order and the pipeline configuration. The same
    documents retrieved by another system or at another time are another unit."""
    return canonical_digest(
        {
            "unit": "query_documents",
            "query": query_identity(query),
            "answer": answer_identity(answer),
            "document_digests": list(document_digests),
            "pipeline": pipeline_identity(pipeline),
        }
    )


def record_digest(record: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical record minus its own ``record_digest`` field."""
    body = {key: value for key, value in record.items() if key != "record_digest"}
    return canonical_digest(body)


def seal_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``record`` with ``record_digest`` set to its digest."""
    sealed = dict(record)
    sealed["record_digest"] = record_digest(sealed)
    return sealed
