"""The output files: byte-identical across runs, bound by SHA256SUMS, consistent."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import tempfile
from pathlib import Path

from audit.conformance import SuiteResult

EXPECTED_FILES = {
    "SHA256SUMS",
    "ablation_cases.csv",
    "ablations.csv",
    "baselines.csv",
    "codebook.json",
    "expected.csv",
    "expected.jsonl",
    "manifest.json",
    "mutations.csv",
    "mutations.jsonl",
    "predictions.csv",
    "predictions.jsonl",
    "records.jsonl",
    "serialization.csv",
    "states.csv",
    "summary.json",
    "transitions.csv",
    "transitions.jsonl",
}


def test_two_runs_write_identical_bytes(written_twice: tuple[Path, Path]) -> None:
    first, second = written_twice
    names = {path.name for path in first.iterdir()}
    assert names == {path.name for path in second.iterdir()} == EXPECTED_FILES
    for name in sorted(names):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


def test_written_files_equal_the_rendered_files(
    written_twice: tuple[Path, Path], suite_files: dict[str, bytes]
) -> None:
    first, _second = written_twice
    for name, data in suite_files.items():
        assert (first / name).read_bytes() == data, name


def test_sha256sums_verifies_every_other_file(written_twice: tuple[Path, Path]) -> None:
    first, _second = written_twice
    lines = (first / "SHA256SUMS").read_text(encoding="utf-8").splitlines()
    listed = []
    for line in lines:
        digest, name = line.split("  ", 1)
        assert hashlib.sha256((first / name).read_bytes()).hexdigest() == digest
        listed.append(name)
    assert listed == sorted(listed)
    assert set(listed) == EXPECTED_FILES - {"SHA256SUMS"}


def test_no_machine_path_is_written(suite_files: dict[str, bytes]) -> None:
    machine_paths = {tempfile.gettempdir(), str(Path.home()), str(Path(__file__).parents[2])}
    for name, data in suite_files.items():
        text = data.decode("utf-8")
        for path in machine_paths:
            assert path not in text, (name, path)


def test_records_file_holds_81_distinct_tuples(suite_files: dict[str, bytes]) -> None:
    records = [json.loads(line) for line in suite_files["records.jsonl"].splitlines()]
    assert len(records) == 81
    assert len({record["tuple_digest"] for record in records}) == 81
    assert len({record["record_digest"] for record in records}) == 81


def test_codebook_file_is_the_conformance_codebook(suite: SuiteResult) -> None:
    assert suite.codebook["name"] == "source-risk"
    assert suite.codebook["version"] == "conformance-1"
    weights = [dim["weight"] for dim in suite.codebook["evidence_dimensions"]]
    assert sum(weights) == 1
    assert "d_Q" in {dim["key"] for dim in suite.codebook["evidence_dimensions"]}


def test_predictions_carry_every_check_result_field(suite_files: dict[str, bytes]) -> None:
    rows = [json.loads(line) for line in suite_files["predictions.jsonl"].splitlines()]
    assert len(rows) == 81
    fields = {"ok", "reason", "message", "endpoint", "short_circuit", "priority", "action"}
    fields |= {"record_digest", "stage"}
    for row in rows:
        assert fields <= set(row)
        assert row["ok"] is True


def test_mutation_log_has_192_cases(suite_files: dict[str, bytes]) -> None:
    log = [json.loads(line) for line in suite_files["mutations.jsonl"].splitlines()]
    assert len(log) == 192
    assert len({entry["case"] for entry in log}) == 192
    summary = list(csv.DictReader(io.StringIO(suite_files["mutations.csv"].decode("utf-8"))))
    assert len(summary) == 12
    assert all(row["total"] == row["rejected"] == row["reason_matched"] == "16" for row in summary)


def test_tables_agree_with_the_summary(suite: SuiteResult, suite_files: dict[str, bytes]) -> None:
    def table(name: str) -> list[dict[str, str]]:
        return list(csv.DictReader(io.StringIO(suite_files[name].decode("utf-8"))))

    for row in table("baselines.csv"):
        counts = suite.summary["baselines"][row["baseline"]][row["guard"]]
        assert int(row["resolved_mismatches"]) == counts["resolved_mismatches"]
        assert int(row["incomplete_resolved"]) == counts["incomplete_resolved"]
    for row in table("transitions.csv"):
        counts = suite.summary["transitions"][row["family"]]
        assert int(row["total"]) == counts["total"]
        assert int(row["passed"]) == counts[row["criterion"]]
    assert len(table("states.csv")) == 81
    assert len(table("expected.csv")) == 81
