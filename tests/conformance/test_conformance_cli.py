"""``python -m audit.conformance --out DIR`` through a real subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from audit.conformance.__main__ import describe
from audit.conformance.suite import SuiteResult

REPO = Path(__file__).resolve().parents[2]


def test_cli_exits_zero_and_writes_the_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    completed = subprocess.run(
        [sys.executable, "-m", "audit.conformance", "--out", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "PASS" in completed.stdout
    assert (out / "summary.json").is_file()
    assert (out / "SHA256SUMS").is_file()


def test_cli_requires_an_output_directory() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "audit.conformance"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 2
    assert "--out" in completed.stderr


def test_describe_lists_mismatches(suite: SuiteResult) -> None:
    failing = SuiteResult(
        **{**suite.__dict__, "mismatches": ["states.positive: got 2, expected 1"]}
    )
    text = describe(failing)
    assert "FAIL" in text
    assert "states.positive: got 2, expected 1" in text
    assert "PASS" in describe(suite)
