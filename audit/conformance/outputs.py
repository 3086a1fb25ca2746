"""Turn a SuiteResult into files: the same result always gives the same bytes.

JSON Lines use the canonical serialization (keys sorted, no whitespace). CSV uses ``\\n``
line ends, ``U`` for unresolved values, ``true``/``false`` for booleans and the shortest
round-tripping float repr. No timestamp, host or path is ever written.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from audit.conformance.suite import SuiteResult, run_suite
from audit.contract.canonical import canonical_json

CHECKSUMS = "SHA256SUMS"

PREDICTION_COLUMNS: tuple[str, ...] = (
    "state",
    "I",
    "A",
    "M",
    "D",
    "oracle",
    "ok",
    "reason",
    "endpoint",
    "short_circuit",
    "priority",
    "action",
    "stage",
    "matched",
    "record_digest",
    "message",
)


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _csv(columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> bytes:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(column)) for column in columns])
    return buffer.getvalue().encode("utf-8")


def _jsonl(rows: Iterable[Any]) -> bytes:
    return b"".join(canonical_json(row) + b"\n" for row in rows)


def _json(value: Any) -> bytes:
    # Pretty, but fixed: insertion order as built by the suite, which is deterministic.
    return (json.dumps(value, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


def _endpoint_code(value: Any) -> str:
    return "U" if value is None else str(value)


def _prediction_rows(result: SuiteResult) -> list[dict[str, Any]]:
    rows = []
    for expected, prediction in zip(result.expected, result.predictions, strict=True):
        row = dict(prediction)
        row.update({key: expected[key] for key in ("I", "A", "M", "D")})
        row["endpoint"] = _endpoint_code(prediction["endpoint"]) if prediction["ok"] else ""
        row["short_circuit"] = (
            _endpoint_code(prediction["short_circuit"]) if prediction["ok"] else ""
        )
        rows.append(row)
    return rows


def _mutation_summary_rows(result: SuiteResult) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for entry in result.mutations:
        row = rows.setdefault(
            entry["mutation"],
            {
                "mutation": entry["mutation"],
                "expected_reason": entry["expected_reason"],
                "resealed": entry["resealed"],
                "total": 0,
                "rejected": 0,
                "reason_matched": 0,
                "reasons_seen": set(),
            },
        )
        row["total"] += 1
        row["rejected"] += entry["rejected"]
        row["reason_matched"] += entry["reason_matched"]
        row["reasons_seen"].add(entry["reason"] or "accepted")
    for row in rows.values():
        row["reasons_seen"] = " ".join(sorted(row["reasons_seen"]))
    return list(rows.values())


def _transition_rows(summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for family, counts in summary.items():
        criterion = next(key for key in counts if key != "total")
        rows.append(
            {
                "family": family,
                "total": counts["total"],
                "criterion": criterion,
                "passed": counts[criterion],
                "failed": counts["total"] - counts[criterion],
            }
        )
    return rows


def render_files(result: SuiteResult) -> dict[str, bytes]:
    """Every output file's name and bytes, including SHA256SUMS over all the others."""
    files: dict[str, bytes] = {
        "codebook.json": _json(result.codebook),
        "records.jsonl": _jsonl(result.records),
        "expected.jsonl": _jsonl(result.expected),
        "expected.csv": _csv(
            ("state", "I", "A", "M", "D", "expected", "tuple_digest"), result.expected
        ),
        "predictions.jsonl": _jsonl(result.predictions),
        "predictions.csv": _csv(PREDICTION_COLUMNS, _prediction_rows(result)),
        "states.csv": _csv(
            (
                "state",
                "I",
                "A",
                "M",
                "D",
                "oracle",
                "endpoint",
                "short_circuit",
                "action",
                "priority",
                "matched",
            ),
            _prediction_rows(result),
        ),
        "baselines.csv": _csv(
            (
                "baseline",
                "guard",
                "resolved_mismatches",
                "resolved_matches",
                "incomplete_resolved",
                "unresolved_outputs",
            ),
            result.baselines,
        ),
        "ablations.csv": _csv(
            ("ablation", "metric", "value"),
            [
                {"ablation": name, "metric": metric, "value": value}
                for name, counts in result.summary["ablations"].items()
                for metric, value in counts.items()
            ],
        ),
        "ablation_cases.csv": _csv(("ablation", "state", "reference", "ablated"), result.ablations),
        "transitions.csv": _csv(
            ("family", "total", "criterion", "passed", "failed"),
            _transition_rows(result.summary["transitions"]),
        ),
        "transitions.jsonl": _jsonl(result.transitions),
        "serialization.csv": _csv(
            ("state", "round_trip", "lineage_ok", "record_digest", "revision_digest"),
            result.serialization,
        ),
        "mutations.jsonl": _jsonl(result.mutations),
        "mutations.csv": _csv(
            (
                "mutation",
                "expected_reason",
                "resealed",
                "total",
                "rejected",
                "reason_matched",
                "reasons_seen",
            ),
            _mutation_summary_rows(result),
        ),
        "summary.json": _json(result.summary),
        "manifest.json": _json(result.manifest),
    }
    files[CHECKSUMS] = checksums(files)
    return files


def checksums(files: Mapping[str, bytes]) -> bytes:
    """``sha256sum`` format: ``<hex>  <name>`` lines sorted by name."""
    lines = [
        f"{hashlib.sha256(files[name]).hexdigest()}  {name}\n"
        for name in sorted(files)
        if name != CHECKSUMS
    ]
    return "".join(lines).encode("utf-8")


def write_files(files: Mapping[str, bytes], out_dir: str | os.PathLike[str]) -> Path:
    directory = Path(out_dir)
    directory.mkdir(parents=True, exist_ok=True)
    for name in sorted(files):
        (directory / name).write_bytes(files[name])
    return directory


def write_suite(out_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """Run the suite, write every output file into ``out_dir`` and return the summary."""
    result = run_suite()
    write_files(render_files(result), out_dir)
    return result.summary
