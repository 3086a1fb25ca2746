"""python -m audit.check: one JSON object per line and the exit status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from audit.contract import codes
from tests.contract.factories import (
    make_record,
    source_risk_codebook,
)

ROOT = Path(__file__).resolve().parents[2]
KEYS = [
    "line",
    "ok",
    "reason",
    "message",
    "endpoint",
    "short_circuit",
    "priority",
    "action",
    "record_digest",
]


def _run(tmp_path: Path, lines: list[bytes], *extra: str) -> subprocess.CompletedProcess:
    book = tmp_path / "source-risk-test-1.json"
    book.write_text(json.dumps(source_risk_codebook()), encoding="utf-8")
    records = tmp_path / "records.jsonl"
    records.write_bytes(b"".join(line + b"\n" for line in lines))
    return subprocess.run(
        [sys.executable, "-m", "audit.check", str(records), "--codebook", str(book), *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _rows(completed: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in completed.stdout.splitlines()]


def test_good_and_unresolved_lines_exit_zero(tmp_path):
    # given a positive and an unresolved record
    good = make_record()
    unresolved = make_record(predicates=(1, None, 1, 0))
    # when the command checks them
    completed = _run(tmp_path, [json.dumps(good).encode(), json.dumps(unresolved).encode()])
    # then each line has its row, in the documented key order, and the exit status is 0
    assert completed.returncode == 0, completed.stderr
    rows = _rows(completed)
    assert [list(row) for row in rows] == [KEYS, KEYS]
    assert rows[0] == {
        "line": 1,
        "ok": True,
        "reason": None,
        "message": None,
        "endpoint": 1,
        "short_circuit": 1,
        "priority": rows[0]["priority"],
        "action": "CONTEXTUALIZE",
        "record_digest": good["record_digest"],
    }
    assert (rows[1]["endpoint"], rows[1]["action"]) == (None, "REVIEW")


def test_malformed_and_refused_lines_exit_one(tmp_path):
    refused = make_record()
    refused["annotation"]["predicates"]["I"] = "U"
    completed = _run(
        tmp_path,
        [
            json.dumps(make_record()).encode(),
            b"{oops",
            json.dumps(refused).encode(),
            b"\xff",
            b"",
            b"42",
        ],
    )
    assert completed.returncode == 1
    rows = _rows(completed)
    assert [(row["line"], row["ok"], row["reason"]) for row in rows] == [
        (1, True, None),
        (2, False, codes.MALFORMED_JSON),
        (3, False, codes.RECORD_DIGEST_MISMATCH),
        (4, False, codes.INVALID_UTF8),
        (5, False, codes.MALFORMED_JSON),
        (6, False, codes.NOT_AN_OBJECT),
    ]
    assert all(row["message"] for row in rows[1:])


def test_missing_file_is_a_usage_error(tmp_path):
    completed = subprocess.run(
        [sys.executable, "-m", "audit.check", str(tmp_path / "absent.jsonl")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2
    assert "absent.jsonl" in completed.stderr
    no_args = subprocess.run(
        [sys.executable, "-m", "audit.check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert no_args.returncode == 2


def test_bad_codebook_is_a_usage_error(tmp_path):
    book = tmp_path / "bad.json"
    book.write_text('{"claimgate": "codebook"}', encoding="utf-8")
    records = tmp_path / "records.jsonl"
    records.write_text("", encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-m", "audit.check", str(records), "--codebook", str(book)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2
    assert "missing_field" in completed.stderr
