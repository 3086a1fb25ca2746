"""Partition files: a researcher's list of units and their partitions, as CSV
(``digest,partition``) or JSON Lines, read and matched to the study's units. Pure, no
Django."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from audit.contract import codes
from audit.contract.errors import ContractError, LineProblem
from audit.contract.texts import bad_text, loads_checked
from audit.partitions.rules import (
    BAD_DIGEST,
    BAD_PARTITION,
    CONFLICTING_LINE,
    DIGEST,
    EMPTY_FILE,
    INVALID_UTF8,
    MALFORMED_LINE,
    PARTITIONS,
    UNKNOWN_DIGEST,
)


@dataclass(frozen=True)
class FileLine:
    line: int
    digest: str
    partition: str


def _is_jsonl(text: str, file_name: str) -> bool:
    name = file_name.lower()
    if name.endswith((".jsonl", ".ndjson", ".json")):
        return True
    if name.endswith((".csv", ".txt")):
        return False
    return text.lstrip().startswith("{")


def _line_values(raw: str, number: int, jsonl: bool) -> tuple[str, str] | LineProblem:
    if jsonl:
        try:
            value = loads_checked(raw)
        except ContractError as exc:
            if exc.code == codes.MALFORMED_JSON:
                return LineProblem(number, MALFORMED_LINE, f"not a JSON value ({exc.message})")
            return LineProblem(number, exc.code, exc.message)
        if not isinstance(value, dict):
            return LineProblem(number, MALFORMED_LINE, "each line is a JSON object")
        missing = [key for key in ("digest", "partition") if key not in value]
        if missing:
            return LineProblem(number, MALFORMED_LINE, f"the line has no {' or '.join(missing)}")
        digest, partition = value["digest"], value["partition"]
        if not isinstance(digest, str) or not isinstance(partition, str):
            return LineProblem(number, MALFORMED_LINE, "digest and partition are strings")
        return digest, partition
    problem = bad_text(raw, "the line")
    if problem is not None:
        return LineProblem(number, problem.code, problem.message)
    cells = next(csv.reader([raw]))
    if len(cells) != 2:
        return LineProblem(
            number,
            MALFORMED_LINE,
            f"a line has two cells, digest and partition: found {len(cells)}",
        )
    return cells[0], cells[1]


def parse_partition_file(
    data: bytes, *, file_name: str = ""
) -> tuple[list[FileLine], list[LineProblem]]:
    """Read a partition file: CSV (``digest,partition``, header optional) or JSON Lines
    (``{"digest": …, "partition": …}``). Blank lines are skipped; line numbers are the
    file's. A digest is a unit digest or a tuple digest (64 lowercase hex)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], [LineProblem(0, INVALID_UTF8, f"the file is not UTF-8 (byte {exc.start})")]
    jsonl = _is_jsonl(text, file_name)
    lines: list[FileLine] = []
    problems: list[LineProblem] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        values = _line_values(raw, number, jsonl)
        if isinstance(values, LineProblem):
            problems.append(values)
            continue
        digest, partition = (item.strip() for item in values)
        if not jsonl and not lines and not problems and digest.lower() == "digest":
            continue  # the CSV header
        if not DIGEST.fullmatch(digest):
            problems.append(
                LineProblem(number, BAD_DIGEST, f"{digest[:80]!r} is not a 64-hex digest")
            )
            continue
        if partition not in PARTITIONS:
            problems.append(
                LineProblem(
                    number,
                    BAD_PARTITION,
                    f"{partition[:40]!r} is not a partition: write calibration or test",
                )
            )
            continue
        lines.append(FileLine(number, digest, partition))
    if not lines and not problems:
        problems.append(LineProblem(0, EMPTY_FILE, "the file names no unit"))
    return lines, problems


def file_assignment(
    lines: Sequence[FileLine], unit_of: Mapping[str, str]
) -> tuple[dict[str, str], list[LineProblem]]:
    """``{unit digest: partition}`` from the parsed lines, given ``unit_of`` (every unit
    and tuple digest the file names that the study knows → its unit's digest). Unknown
    digests and lines that give one unit two partitions are problems; the caller applies
    nothing unless there are none."""
    assignment: dict[str, str] = {}
    first_line: dict[str, int] = {}
    problems = []
    for line in lines:
        unit = unit_of.get(line.digest)
        if unit is None:
            problems.append(
                LineProblem(
                    line.line,
                    UNKNOWN_DIGEST,
                    f"no unit or tuple of this study has the digest {line.digest}",
                )
            )
            continue
        if unit in assignment and assignment[unit] != line.partition:
            problems.append(
                LineProblem(
                    line.line,
                    CONFLICTING_LINE,
                    f"line {first_line[unit]} put this unit in {assignment[unit]}, this line "
                    f"in {line.partition}",
                )
            )
            continue
        assignment[unit] = line.partition
        first_line.setdefault(unit, line.line)
    return assignment, problems
