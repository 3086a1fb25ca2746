"""The observation-file parser behind the import (docs/formats.md, "Observation file").

Import is atomic per file, so the parser does not stop at the first bad line: it checks
every line and reports each bad one with its 1-based line number, a reason code and a
sentence. Each line is decoded on its own, so invalid UTF-8 is reported on the line that
holds it rather than failing the whole file.

The file is read line by line (:func:`audit.contract.streams.read_lines`): a line past the
limit is skipped to its end without being held, and at most ``max_errors`` line errors are
kept (``error_count`` counts them all), so the parser's memory grows with the good
observations it keeps, never with the file's size, a line's length or its bad lines.

Blank lines: the file may end with a single newline (the last line's terminator). Any
other empty or whitespace-only line is an error (``malformed_json``), because a blank line
in the middle of a file usually means a line was lost. A file with no observation at all
(no bytes, only blank lines, or a header and nothing else) is one ``empty_file`` error.
"""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, BinaryIO

from audit.contract import codes
from audit.contract.canonical import CanonicalError
from audit.contract.codebook import Codebook
from audit.contract.digests import (
    pipeline_identity_text,
    query_identity_text,
    tuple_digest_from_parts,
)
from audit.contract.errors import ContractError, show, type_name
from audit.contract.streams import HashingReader, LongLine, as_stream, read_lines
from audit.contract.structure import (
    check_answer,
    check_pipeline,
    check_query,
    check_source,
    fields,
    invalid,
    snapshot_matches,
    string,
)
from audit.contract.texts import MAX_DEPTH, check_parsed

try:  # the compiled parser where its values are the standard one's (see _decode)
    import orjson
except ImportError:  # pragma: no cover - a dependency; kept optional for the pure contract
    orjson = None  # type: ignore[assignment]

MAX_LINE_BYTES = 4 * 1024 * 1024
MAX_LINES = 1_000_000
#: Line errors kept for display; past it errors are only counted.
MAX_ERRORS = 1_000

_OBSERVATION = ("query", "pipeline", "answer", "sources")
_OBSERVATION_SET = frozenset(_OBSERVATION)
#: A line's name in its file (``id``) and, in an ``answer_pair`` file, the name of the
#: line holding its baseline answer (``baseline``). Neither is stored: they only pair lines.
_OBSERVATION_OPTIONAL = frozenset({"id", "baseline"})
#: What must agree between the two answers of a pair besides the query: the observation
#: conditions (docs/import-format.md, "Pairs of answers").
PAIR_SETTING = ("region", "language", "login", "personalization")
_HEADER = ("claimgate", "format_version", "codebook")
_HEADER_SET = frozenset(_HEADER)
_CODEBOOK_REF = ("name", "version")
_CODEBOOK_REF_SET = frozenset(_CODEBOOK_REF)


@dataclass(frozen=True, slots=True)
class LineError:
    line: int
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class ObservationHeader:
    codebook_name: str
    codebook_version: str

    @property
    def codebook_key(self) -> tuple[str, str]:
        return (self.codebook_name, self.codebook_version)


#: How many line numbers an error group keeps (its first lines).
GROUP_FIRST_LINES = 5


class ErrorGroups:
    """Line errors grouped by reason, in the order each reason first appeared: how many
    lines, the first few line numbers and the first line's message. Counts every error,
    so that a file with 10^5 bad lines reads as a few sentences ("81,704 lines: invalid
    UTF-8, first at line 1 …") whatever was kept line by line."""

    def __init__(self) -> None:
        self._groups: dict[str, dict[str, Any]] = {}

    def add(self, line: int, reason: str, message: str) -> None:
        group = self._groups.get(reason)
        if group is None:
            group = self._groups[reason] = {
                "reason": reason,
                "count": 0,
                "lines": [],
                "message": message,
            }
        group["count"] += 1
        if len(group["lines"]) < GROUP_FIRST_LINES:
            group["lines"].append(line)

    def as_list(self) -> list[dict[str, Any]]:
        """``[{reason, count, lines, message}]``, largest group first (then first seen)."""
        ordered = sorted(
            enumerate(self._groups.values()), key=lambda item: (-item[1]["count"], item[0])
        )
        return [dict(group, lines=list(group["lines"])) for _, group in ordered]


@dataclass(slots=True)
class ObservationFile:
    """The parsed file. ``observations`` holds the good lines only, in file order (with
    ``lines`` giving each one's line number); the import must refuse the file unless
    ``errors`` is empty."""

    header: ObservationHeader | None = None
    codebook: Codebook | None = None
    observations: list[dict[str, Any]] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    #: ``answer_pair`` files: ``(evaluated, baseline)`` positions in ``observations``, in
    #: the order of the evaluated lines.
    pairs: list[tuple[int, int]] = field(default_factory=list)
    #: Every line error, also those past ``max_errors`` that were not kept in ``errors``.
    error_count: int = 0
    max_errors: int = MAX_ERRORS
    #: Every line error grouped by reason (also those not kept): see :class:`ErrorGroups`.
    error_groups: ErrorGroups = field(default_factory=ErrorGroups)
    #: The number of the last line read: the file's lines, or where reading stopped.
    lines_read: int = 0

    @property
    def ok(self) -> bool:
        return not self.error_count

    def add_error(self, error: LineError) -> None:
        self.error_count += 1
        self.error_groups.add(error.line, error.reason, error.message)
        if len(self.errors) < self.max_errors:
            self.errors.append(error)

    @property
    def tuple_count(self) -> int:
        return sum(len(observation["sources"]) for observation in self.observations)


def iter_lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` for each line, without its ``\\n``. A final newline ends
    the last line and does not start another."""
    number = 0
    start = 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        number += 1
        yield number, data[start:end]
        start = end + 1


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


# ``json.loads(text, parse_constant=...)`` builds a decoder (and its scanner) per call;
# this one is built once and decodes the same way.
_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)

#: Every digit as ``0``, so that one search in C finds 19 digits in a row: the line may
#: hold an integer past 64 bits, which orjson would read as a float (the standard parser
#: keeps it exact). (A regular expression costs more than orjson's whole parse.)
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
_LONG_DIGITS = b"0" * 19


def _decode(raw: bytes, text: str) -> Any:
    """``_DECODER.decode(text)``, by orjson where it gives the same value: a strict
    RFC 8259 parser that also refuses NaN and infinity, keeps the last of two equal keys
    and reads numbers as the standard parser does, except an integer past 64 bits (hence
    the digit guard). Whatever orjson refuses (a number too large for a float, an
    unpaired surrogate escape, nesting past 1,024, any malformed line) the standard
    parser decides, so the values, the refusals and their messages are the standard
    parser's; the contract's tests hold this on the lines they make."""
    if orjson is not None and _LONG_DIGITS not in raw.translate(_DIGITS_AS_ZERO):
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
    return _DECODER.decode(text)


def line_too_long(size: int, max_line_bytes: int) -> ContractError:
    return ContractError(
        codes.LINE_TOO_LONG,
        f"the line holds {size:,} bytes; the limit is {max_line_bytes:,} bytes",
    )


def decode_line(raw: bytes | LongLine, *, max_line_bytes: int = MAX_LINE_BYTES) -> Any:
    """Size limit, UTF-8 and JSON for one line; raises :class:`ContractError`."""
    if isinstance(raw, LongLine):
        raise line_too_long(raw.size, max_line_bytes)
    if len(raw) > max_line_bytes:
        raise line_too_long(len(raw), max_line_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ContractError(
            codes.INVALID_UTF8,
            f"the line is not UTF-8: byte {exc.start + 1} ({raw[exc.start : exc.start + 1]!r}) "
            f"is {exc.reason}",
        ) from None
    # A line that starts with "{" is not blank; only other lines pay for the strip().
    if text[:1] != "{" and not text.strip():
        raise ContractError(
            codes.MALFORMED_JSON,
            "the line is blank; only the file's last line may end with a newline",
        )
    try:
        if text.startswith("\ufeff"):  # as json.loads refuses it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        value = _decode(raw, text)
    except RecursionError:
        raise ContractError(
            codes.TOO_DEEP, f"the line nests arrays or objects more than {MAX_DEPTH} levels deep"
        ) from None
    except ValueError as exc:
        raise ContractError(codes.MALFORMED_JSON, f"the line is not JSON: {exc}") from None
    check_parsed(value, text)
    return value


def _header(
    value: Any, codebooks: Mapping[tuple[str, str], Codebook]
) -> tuple[ObservationHeader, Codebook]:
    if type(value) is not dict:
        raise ContractError(
            codes.MISSING_HEADER,
            f"line 1 must be the header object, not {type_name(value)}",
        )
    if "claimgate" not in value:
        raise ContractError(
            codes.MISSING_HEADER,
            'line 1 is not a header: it lacks "claimgate": "observations" (the first line '
            "names the format and the codebook; observations follow from line 2)",
        )
    version = value.get("format_version")
    if value["claimgate"] != "observations" or type(version) is not int or version != 1:
        raise ContractError(
            codes.UNKNOWN_FORMAT,
            f"the header names claimgate={show(value['claimgate'])}, "
            f"format_version={show(version)}; expected observations, 1",
        )
    fields(value, "header", _HEADER, exact=_HEADER_SET)
    reference = value["codebook"]
    fields(reference, "header.codebook", _CODEBOOK_REF, exact=_CODEBOOK_REF_SET)
    string(reference, "name", "header.codebook")
    string(reference, "version", "header.codebook")
    header = ObservationHeader(reference["name"], reference["version"])
    codebook = codebooks.get(header.codebook_key)
    if codebook is None:
        raise ContractError(
            codes.UNKNOWN_CODEBOOK,
            f"codebook {header.codebook_name} {header.codebook_version} is not known",
        )
    return header, codebook


def check_observation(value: Any, unit: str | None = None) -> list[str]:
    """Structure and digests of one observation; returns its tuple digests in source order.

    ``unit``: the unit kind of the file's codebook, when known. ``baseline`` is a field of
    ``answer_pair`` files only; in a ``query_documents`` file every source of a complete
    answer has a rank of its own (its documents are its sources in rank order).

    Raises :class:`ContractError` for the first problem. The same validators check the
    query, pipeline, answer and source objects of records.
    """
    if type(value) is not dict:
        raise ContractError(
            codes.NOT_AN_OBJECT, f"an observation must be a JSON object, not {type_name(value)}"
        )
    answer = value.get("answer")
    failed = type(answer) is dict and answer.get("status") == "failed"
    if failed and "sources" not in value:
        # A failed answer has no sources; writing "sources": [] is optional.
        fields(value, "", ("query", "pipeline", "answer"), _OBSERVATION_SET | _OBSERVATION_OPTIONAL)
    else:
        fields(value, "", _OBSERVATION, _OBSERVATION_OPTIONAL, exact=_OBSERVATION_SET)
    if "id" in value:
        string(value, "id", "")
    if "baseline" in value:
        if unit != "answer_pair":
            raise ContractError(
                codes.INVALID_FIELD,
                "baseline pairs two answers, which only a file for an answer_pair codebook "
                f"does (this file's codebook labels {unit or 'another unit kind'} units)",
            )
        string(value, "baseline", "")
    query = value["query"]
    pipeline = value["pipeline"]
    check_query(query)
    check_pipeline(pipeline)
    check_answer(answer)
    sources = value.get("sources", [])
    if type(sources) is not list:
        raise invalid("sources", "a list", sources)
    if failed and sources:
        raise ContractError(
            codes.INVALID_FIELD,
            f"sources has {len(sources)} entries, but the answer failed and has none",
        )
    for index, source in enumerate(sources):
        check_source(source, f"sources[{index}]", observed=True)
    if unit == "query_documents":
        check_document_ranks(sources)
    snapshot_matches(answer, "answer", codes.ANSWER_DIGEST_MISMATCH)
    digests = []
    query_text = pipeline_text = ""
    for index, source in enumerate(sources):
        path = f"sources[{index}]"
        snapshot_matches(source, path, codes.SOURCE_DIGEST_MISMATCH)
        try:
            # The tuples of one observation share their query and pipeline identities:
            # serialized once, after the first source's text (the order errors come in).
            # check_query and check_pipeline have made them strings and string keys.
            if not index:
                pipeline_text = pipeline_identity_text(pipeline)
                query_text = query_identity_text(query)
            expected = tuple_digest_from_parts(
                query_text=query_text,
                source_digest=source["digest"],
                answer_digest=answer["digest"],
                pipeline_text=pipeline_text,
            )
        except CanonicalError as exc:
            raise ContractError(
                codes.INVALID_FIELD, f"the observation cannot be serialized canonically: {exc}"
            ) from None
        if source["tuple_digest"] != expected:
            raise ContractError(
                codes.TUPLE_DIGEST_MISMATCH,
                f"{path}.tuple_digest {show(source['tuple_digest'], 20)} is not the digest of "
                f"this query, source, answer and pipeline ({expected[:12]}...)",
            )
        digests.append(expected)
    return digests


def check_document_ranks(sources: list[dict[str, Any]]) -> None:
    """The sources of a ``query_documents`` observation are its retrieved documents in
    rank order: each needs a rank, and no two may share one."""
    first: dict[int, int] = {}
    for index, source in enumerate(sources):
        rank = source["rank"]
        if rank is None:
            raise ContractError(
                codes.DOCUMENT_UNRANKED,
                f"sources[{index}].rank is null; the documents of a query_documents unit are "
                "its sources in rank order, so each needs its rank",
            )
        if rank in first:
            raise ContractError(
                codes.DOCUMENT_RANK_REPEATED,
                f"sources[{index}].rank is {rank}, as is sources[{first[rank]}].rank; each "
                "document has a rank of its own",
            )
        first[rank] = index


def pair_lines(result: ObservationFile, ids_of_bad_lines: Mapping[str, int]) -> None:
    """Pair the good lines of an ``answer_pair`` file (each line naming its baseline by
    the baseline line's ``id``) into ``result.pairs``, and report every line that cannot
    be paired: an unknown or repeated name, a line that is its own baseline or repeats
    its baseline's answer snapshot, a different query or setting, a failed answer, a
    complete answer that is in no pair. A baseline on a bad line is not reported again."""
    observations = result.observations
    lines = result.lines
    by_id: dict[str, int] = {}
    bad: set[int] = set()
    for position, observation in enumerate(observations):
        name = observation.get("id")
        if name is None:
            continue
        earlier_bad = ids_of_bad_lines.get(name, lines[position])
        if name in by_id or earlier_bad < lines[position]:
            first = by_id.get(name)
            first_line = lines[first] if first is not None else earlier_bad
            result.add_error(
                LineError(
                    lines[position],
                    codes.DUPLICATE_OBSERVATION_ID,
                    f"id {show(name)} already names line {first_line}; each line's id is its own",
                )
            )
            bad.add(position)
            continue
        by_id[name] = position
    paired: set[int] = set()
    pairs = []
    for position, observation in enumerate(observations):
        name = observation.get("baseline")
        if name is None or position in bad:
            continue
        other = by_id.get(name)
        if other is None and name in ids_of_bad_lines:
            paired.add(position)  # its baseline's line is reported for its own fault
            continue
        problem = (
            _pair_problem(observation, observations[other], position == other, lines[other])
            if other is not None
            else ContractError(
                codes.BASELINE_UNKNOWN,
                f"baseline {show(name)} names no line of this file (a baseline is the id of "
                "the line holding the baseline's answer)",
            )
        )
        if problem is not None:
            result.add_error(LineError(lines[position], problem.code, problem.message))
            bad.add(position)
            continue
        paired.update((position, other))
        pairs.append((position, other))
    for position, observation in enumerate(observations):
        if position in paired or position in bad:
            continue
        if observation["answer"]["status"] == "complete":
            result.add_error(
                LineError(
                    lines[position],
                    codes.PAIR_UNPAIRED,
                    "this answer is in no pair: give it a baseline (the id of the line with "
                    "the baseline's answer), or name its id as another line's baseline",
                )
            )
    result.errors.sort(key=lambda error: error.line)  # pair errors come after the reading's
    result.pairs = pairs if not result.error_count else []


def _pair_problem(
    evaluated: dict[str, Any], baseline: dict[str, Any], itself: bool, baseline_line: int
) -> ContractError | None:
    if itself:
        return ContractError(
            codes.PAIR_SAME_ANSWER, "baseline names this line itself; a pair holds two answers"
        )
    for role, observation in (("this", evaluated), ("the baseline", baseline)):
        if observation["answer"]["status"] != "complete":
            return ContractError(
                codes.PAIR_ANSWER_FAILED,
                f"{role} answer failed ({observation['answer']['failure']}); a pair compares "
                "two complete answers (import a failed attempt without a pair)",
            )
    if evaluated["query"] != baseline["query"]:
        differing = sorted(
            key for key in evaluated["query"] if evaluated["query"][key] != baseline["query"][key]
        )
        return ContractError(
            codes.PAIR_QUERY_MISMATCH,
            f"the baseline on line {baseline_line} answers another query: "
            f"query.{', query.'.join(differing)} differ; both answers of a pair answer the "
            "same query",
        )
    ours = evaluated["answer"]["conditions"]
    theirs = baseline["answer"]["conditions"]
    differing = [key for key in PAIR_SETTING if ours[key] != theirs[key]]
    if differing:
        return ContractError(
            codes.PAIR_SETTING_MISMATCH,
            f"the baseline on line {baseline_line} was observed in another setting: "
            + ", ".join(
                f"answer.conditions.{key} is {show(ours[key])} here, {show(theirs[key])} there"
                for key in differing
            ),
        )
    if evaluated["answer"] == baseline["answer"]:
        return ContractError(
            codes.PAIR_SAME_ANSWER,
            f"the baseline on line {baseline_line} holds the same answer snapshot; a pair "
            "compares two answers",
        )
    return None


def parse_observation_file(
    data: bytes | BinaryIO | HashingReader,
    codebooks: Mapping[tuple[str, str], Codebook],
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_lines: int = MAX_LINES,
    max_errors: int = MAX_ERRORS,
    into: ObservationFile | None = None,
) -> ObservationFile:
    """Parse and check a whole observation file (bytes or a binary file object, read from
    its current position); see the module docstring for the rules.

    ``max_lines`` bounds the observations (the header is not counted); past it, one
    ``too_many_lines`` error is reported and the rest of the file is not read.

    ``into``: an empty :class:`ObservationFile` to fill (and return), so that another
    thread can take the good lines from ``observations`` while the parse goes on: the
    lists only grow, by appends, and ``header``/``codebook`` are set once, from line 1.
    """
    stream = data if isinstance(data, HashingReader) else as_stream(data)
    with gc_paused():
        return _parse_observation_file(
            stream, codebooks, max_line_bytes, max_lines, max_errors, into
        )


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while a file's objects are built.

    A file of 10^5 observations makes millions of containers, none of them in a cycle;
    the collector would walk the growing heap again and again (a third of the parse time)
    without freeing anything. Reference counting frees them as usual. The collector is
    switched on again afterwards unless it was already off."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _blank(raw: bytes | LongLine) -> bool:
    return not isinstance(raw, LongLine) and not raw.strip()


def _parse_observation_file(
    stream: BinaryIO | HashingReader,
    codebooks: Mapping[tuple[str, str], Codebook],
    max_line_bytes: int,
    max_lines: int,
    max_errors: int,
    into: ObservationFile | None = None,
) -> ObservationFile:
    result = ObservationFile(max_errors=max_errors) if into is None else into
    first_line_of: dict[str, tuple[int, int]] = {}
    # Read as it comes, so what depends on later lines waits for them: a blank line 1 is a
    # missing header only if something follows, and blank lines after the header are errors
    # only if an observation follows (else the file is empty). Those blank lines are
    # consecutive (2 .. n), so a count stands for them.
    header_blank = False
    header_raw: bytes | LongLine | None = None
    blank_after_header = 0
    observed = False  # a non-blank line after line 1
    ids_of_bad_lines: dict[str, int] = {}
    for number, raw in read_lines(stream, max_line_bytes=max_line_bytes):
        result.lines_read = number
        if number == 1:
            header_raw = raw
            header_blank = _blank(raw)
            if not header_blank:
                _read_header(raw, codebooks, result, max_line_bytes)
            continue
        if not observed:
            if _blank(raw):
                blank_after_header += 1
                continue
            observed = True
            if header_blank:
                _read_header(b"", codebooks, result, max_line_bytes)
            for blank in range(2, 2 + blank_after_header):
                try:
                    decode_line(b"", max_line_bytes=max_line_bytes)
                except ContractError as exc:
                    result.add_error(LineError(blank, exc.code, exc.message))
        if number - 1 > max_lines:
            result.add_error(
                LineError(
                    number,
                    codes.TOO_MANY_LINES,
                    f"the file holds more than {max_lines:,} observations (the limit); "
                    f"lines from {number} on were not read",
                )
            )
            break
        value = None
        try:
            value = decode_line(raw, max_line_bytes=max_line_bytes)
            digests = check_observation(
                value, result.codebook.unit if result.codebook is not None else None
            )
        except ContractError as exc:
            result.add_error(LineError(number, exc.code, exc.message))
            if type(value) is dict and type(value.get("id")) is str:
                ids_of_bad_lines.setdefault(value["id"], number)
            continue
        duplicate = None
        for index, digest in enumerate(digests):
            seen = first_line_of.get(digest)
            if seen is not None:
                duplicate = (index, digest, seen)
                break
            first_line_of[digest] = (number, index)
        if duplicate is not None:
            index, digest, (line, other) = duplicate
            where = "this line" if line == number else f"line {line}"
            result.add_error(
                LineError(
                    number,
                    codes.DUPLICATE_TUPLE,
                    f"sources[{index}] repeats the tuple {digest[:12]}... of {where} "
                    f"(sources[{other}]); each tuple may appear once per file",
                )
            )
            if type(value.get("id")) is str:
                ids_of_bad_lines.setdefault(value["id"], number)
            continue
        result.observations.append(value)
        result.lines.append(number)
    if result.codebook is not None and result.codebook.unit == "answer_pair":
        pair_lines(result, ids_of_bad_lines)
    if not observed:
        if header_raw is None or header_blank:
            detail = "has no bytes" if header_raw is None else "holds only blank lines"
            result.add_error(LineError(1, codes.EMPTY_FILE, f"the file {detail}; {_SHAPE}"))
        else:
            # The header was checked too, so a file holding one observation and no header
            # says both.
            result.add_error(
                LineError(
                    2, codes.EMPTY_FILE, f"the file holds no observation after line 1; {_SHAPE}"
                )
            )
    return result


_SHAPE = "an observation file is a header line followed by at least one observation line"


def _read_header(
    raw: bytes | LongLine,
    codebooks: Mapping[tuple[str, str], Codebook],
    result: ObservationFile,
    max_line_bytes: int,
) -> None:
    try:
        if _blank(raw):
            raise ContractError(
                codes.MISSING_HEADER,
                "line 1 is blank; it must be the header naming the format and the codebook",
            )
        result.header, result.codebook = _header(
            decode_line(raw, max_line_bytes=max_line_bytes), codebooks
        )
    except ContractError as exc:
        result.add_error(LineError(1, exc.code, exc.message))


def observation_tuples(observation: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The tuples of a checked observation, one per source, in source order.

    Each is ``{query, pipeline, answer, source, tuple_digest, sampling}`` where ``source``
    is the source snapshot without its ``tuple_digest`` and ``sampling`` (a record keeps
    both at its top level), i.e. the tuple part of a record (docs/formats.md, "Record").
    """
    for source in observation.get("sources", ()):
        snapshot = {
            key: value for key, value in source.items() if key not in ("tuple_digest", "sampling")
        }
        yield {
            "query": observation["query"],
            "pipeline": observation["pipeline"],
            "answer": observation["answer"],
            "source": snapshot,
            "tuple_digest": source["tuple_digest"],
            "sampling": source.get("sampling"),
        }
