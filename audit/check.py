"""Check a file of records: ``python -m audit.check FILE.jsonl [--codebook PATH ...]``.

One record per line, no header. Prints one JSON object per input line, in this key order::

    {"line": n, "ok": true|false, "reason": code|null, "message": text|null,
     "endpoint": 0|1|null, "short_circuit": 0|1|null, "priority": number|null,
     "action": "PASS"|"CONTEXTUALIZE"|"REVIEW"|"ABSTAIN"|null, "record_digest": hex|null}

Exit status: 0 when every line is ok, 1 when any is not, 2 for a usage error (a missing
file, an unreadable codebook). The codebooks are every ``*.json`` of the repository's
``fixtures/codebooks/``, then each ``--codebook`` file (which overrides one with the same
name and version). Pure Python: no Django.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from audit.contract.codebook import Codebook, load_codebook, load_codebooks
from audit.contract.errors import ContractError
from audit.contract.observations import MAX_LINE_BYTES, decode_line, iter_lines
from audit.contract.record import check_record

DEFAULT_CODEBOOKS = Path(__file__).resolve().parent.parent / "fixtures" / "codebooks"


def check_lines(
    data: bytes, codebooks: Mapping[tuple[str, str], Codebook]
) -> Iterator[dict[str, Any]]:
    """One output object per line of ``data`` (a final newline starts no extra line)."""
    for number, raw in iter_lines(data):
        try:
            value = decode_line(raw, max_line_bytes=MAX_LINE_BYTES)
        except ContractError as exc:
            yield _row(number, False, exc.code, exc.message, None, None, None, None, None)
            continue
        result = check_record(value, codebooks)
        yield _row(
            number,
            result.ok,
            result.reason,
            result.message,
            result.endpoint,
            result.short_circuit,
            result.priority,
            result.action,
            result.record_digest,
        )


def _row(
    line: int,
    ok: bool,
    reason: str | None,
    message: str | None,
    endpoint: int | None,
    short_circuit: int | None,
    priority: float | None,
    action: str | None,
    record_digest: str | None,
) -> dict[str, Any]:
    return {
        "line": line,
        "ok": ok,
        "reason": reason,
        "message": message,
        "endpoint": endpoint,
        "short_circuit": short_circuit,
        "priority": priority,
        "action": action,
        "record_digest": record_digest,
    }


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    out = out if out is not None else sys.stdout
    parser = argparse.ArgumentParser(
        prog="python -m audit.check",
        description="Validate and audit records (JSON Lines, one record per line).",
    )
    parser.add_argument("file", type=Path, help="records, one JSON object per line")
    parser.add_argument(
        "--codebook",
        action="append",
        default=[],
        type=Path,
        metavar="PATH",
        help="a codebook JSON file to add (or to override a default with the same version)",
    )
    args = parser.parse_args(argv)  # exits with 2 on a usage error
    try:
        codebooks = load_codebooks(DEFAULT_CODEBOOKS)
        for path in args.codebook:
            codebook = load_codebook(path)
            codebooks[codebook.key] = codebook
    except OSError as exc:
        print(f"error: cannot read codebook: {exc}", file=sys.stderr)
        return 2
    except ContractError as exc:
        print(f"error: invalid codebook ({exc.code}): {exc.message}", file=sys.stderr)
        return 2
    try:
        data = args.file.read_bytes()
    except OSError as exc:
        print(f"error: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    all_ok = True
    for row in check_lines(data, codebooks):
        all_ok = all_ok and row["ok"]
        out.write(json.dumps(row) + "\n")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
