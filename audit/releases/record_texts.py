"""A tuple unit's record as stored canonical texts spliced around a label's annotation.

A record's canonical text (docs/formats.md, "Record") is its members in sorted key order,
compact. For a tuple unit they sort as::

    annotation | answer | claimgate, codebook, format_version | parents |
    pipeline, query | record_digest | sampling, source, tuple_digest

so everything but the annotation and the parents comes from the unit (``answer``,
``head``, ``tail``: stored once per unit, :class:`audit.releases.models.UnitRecordText`)
or from the study's codebook (``constant``: once per release), and a record line is the
concatenation of those bytes around the label's annotation and parents, the record
digest spliced in between ``head`` and ``tail``. The bytes are only ever written when
their SHA-256 is the label's stored record digest (:func:`record_line` returns ``None``
otherwise), so a wrong stored text can cost a slower line, never a wrong one.

Pure: no Django. ``tests/releases/test_record_texts.py`` holds the assembled bytes equal to
the canonical encoder's (:func:`audit.contract.canonical.canonical_json`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from audit.contract.canonical import canonical_json_fast

#: The unit's members of a tuple record that sort between annotation and the constants.
ANSWER = ("answer",)
#: The members that are the same in every record of a study (its codebook's).
CONSTANT = ("claimgate", "codebook", "format_version")
#: The unit's members between parents and record_digest.
HEAD = ("pipeline", "query")
#: The unit's members after record_digest.
TAIL = ("sampling", "source", "tuple_digest")
#: Every member of a tuple record body but annotation and parents.
UNIT_KEYS = frozenset(ANSWER + CONSTANT + HEAD + TAIL)


class NotATupleRecord(ValueError):
    """The record body's members are not a tuple record's."""


def _fragment(body: Mapping[str, Any], keys: tuple[str, ...]) -> bytes:
    """The canonical text of ``body``'s ``keys`` as members, without the braces."""
    return canonical_json_fast({key: body[key] for key in keys})[1:-1]


def _members(body: Mapping[str, Any]) -> None:
    found = set(body) - {"annotation", "parents"}
    if found != UNIT_KEYS:
        raise NotATupleRecord(f"not a tuple record's members: {sorted(found ^ UNIT_KEYS)}")


def unit_texts(body: Mapping[str, Any]) -> tuple[bytes, bytes, bytes]:
    """``answer``, ``head`` and ``tail`` of a tuple record body (its annotation and parents,
    if any, are left out): what is stored per unit."""
    _members(body)
    return _fragment(body, ANSWER), _fragment(body, HEAD), _fragment(body, TAIL)


def constant_text(body: Mapping[str, Any]) -> bytes:
    """The members every record of the study shares (a tuple record body)."""
    _members(body)
    return _fragment(body, CONSTANT)


def record_line(
    *,
    annotation: bytes,
    parents: bytes,
    answer: bytes,
    constant: bytes,
    head: bytes,
    tail: bytes,
    record_digest: str,
) -> bytes | None:
    """The record line (``record_digest`` included, newline-terminated) assembled from
    the canonical texts of a label's ``annotation`` and ``parents`` and of the unit's and
    the study's members — or ``None`` when the record without its digest does not hash
    to ``record_digest`` (then these bytes are not the record the label was sealed with)."""
    front = b"".join(
        (b'{"annotation":', annotation, b",", answer, b",", constant, b',"parents":', parents)
    )
    digest = hashlib.sha256(front)
    digest.update(b",")
    digest.update(head)
    digest.update(b",")
    digest.update(tail)
    digest.update(b"}")
    hexdigest = digest.hexdigest()
    if hexdigest != record_digest:
        return None
    return b"".join(
        (
            front,
            b",",
            head,
            b',"record_digest":"',
            hexdigest.encode("ascii"),
            b'",',
            tail,
            b"}\n",
        )
    )
