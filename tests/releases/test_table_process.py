"""The tables written by a process of their own are the in-process writers' bytes."""

from __future__ import annotations

import pytest

from audit.releases import bundle_tables as bt
from audit.releases import formats as rf
from tests.releases.test_formats import _tricky_rows


def _outcome_rows(count: int) -> list[dict]:
    return [
        {
            "record_digest": f"{index:064x}",
            "unit_digest": f"{index:064x}",
            "kind": "independent",
            "codebook": "source-risk 1.0.0",
            "checker_version": "1",
            "stage": None if index % 3 else "pilot",
            "ok": index % 2 == 0,
            "reason": "=SUM(A1)" if index % 4 == 0 else None,
            "endpoint": index % 5,
            "short_circuit": None,
            "priority": [0.5, 1e-05, -0.0, 1e22, None][index % 5],
            "action": "é ☃",
            "recorded_at": "2026-05-01T10:00:00Z",
            "seq": index,
            "prev_hash": "0" * 64,
            "entry_hash": f"{index:064x}",
        }
        for index in range(count)
    ]


def _write(directory, tables, rows_by_table, fasts, *, parallel):
    directory.mkdir()
    written = bt.open_tables(directory, tables, parallel=parallel)
    assert (written.process is not None) is parallel
    for name, rows in rows_by_table.items():
        for index, row in enumerate(rows):
            written[name].write(row, fast=fasts[index % len(fasts)])
    written.close()
    return written


@pytest.mark.parametrize("fasts", [[False], [True], [True, False, False]])
def test_a_process_writes_the_bytes_of_table_files(tmp_path, fasts):
    tables = {
        "labels_independent": rf.label_table("labels_independent", "tuple"),
        "labels_final": rf.label_table("labels_final", "tuple"),
        "labels_gold": rf.label_table("labels_gold", "tuple"),
        "outcomes": rf.OUTCOMES,
    }
    count = rf.TABLE_BATCH * 2 + rf.PARQUET_ROW_GROUP + 7
    rows = {
        "labels_independent": _tricky_rows(count),
        "labels_final": _tricky_rows(rf.TABLE_BATCH - 1),
        "outcomes": _outcome_rows(count // 3),
    }
    parallel = _write(tmp_path / "process", tables, rows, fasts, parallel=True)
    here = _write(tmp_path / "here", tables, rows, fasts, parallel=False)

    names = sorted(p.name for p in (tmp_path / "here").iterdir())
    assert names == sorted(f"{t}.{ext}" for t in tables for ext in rf.TABLE_FORMATS)
    assert sorted(p.name for p in (tmp_path / "process").iterdir()) == names
    for name in names:
        assert (tmp_path / "process" / name).read_bytes() == (
            tmp_path / "here" / name
        ).read_bytes(), name
    assert [m.rows for m in parallel.values()] == [m.rows for m in here.values()]
    assert [m.rows for m in parallel.values()] == [count, rf.TABLE_BATCH - 1, 0, count // 3]
    assert bt.last_figures["peak_mb"] > 0


def test_jsonl_lines_are_the_canonical_rows():
    table = rf.label_table("labels_independent", "tuple")
    rows = _tricky_rows(40)

    def cell(value, kind):
        if kind != "json":
            return value
        return None if value is None else rf._json_text(value)

    columns = [[cell(row[name], kind) for row in rows] for name, kind in table.columns]
    expected = b"".join(
        rf.canonical_json({name: row[name] for name in table.names}) + b"\n" for row in rows
    )
    assert bt.jsonl_lines(table, columns) == expected


def test_a_failure_in_the_process_is_raised_with_its_traceback(tmp_path):
    tables = {"outcomes": rf.OUTCOMES}
    tmp_path.joinpath("bad").mkdir()
    written = bt.open_tables(tmp_path / "bad", tables, parallel=True)
    row = _outcome_rows(1)[0] | {"seq": "not a number"}
    written["outcomes"].write(row)
    with pytest.raises(bt.TableProcessError, match="writing the tables failed"):
        written.close()


def test_a_nan_is_refused_as_the_writers_here_refuse_it(tmp_path):
    tables = {"outcomes": rf.OUTCOMES}
    tmp_path.joinpath("nan").mkdir()
    written = bt.open_tables(tmp_path / "nan", tables, parallel=True)
    written["outcomes"].write(_outcome_rows(1)[0] | {"priority": float("nan")})
    with pytest.raises(bt.TableProcessError, match="CanonicalError"):
        written.close()


def test_an_aborted_build_stops_the_process(tmp_path):
    tmp_path.joinpath("gone").mkdir()
    written = bt.open_tables(tmp_path / "gone", {"outcomes": rf.OUTCOMES}, parallel=True)
    written["outcomes"].write(_outcome_rows(1)[0])
    written.abort()
    assert written.process.process.poll() is not None


def test_a_hashed_file_gives_its_bytes_sha256(tmp_path):
    path = tmp_path / rf.RECORDS
    written = bt.HashedFile(path)
    pieces = [b"", b"x" * 5000, "é ☃\n".encode(), b"y" * 3]
    for piece in pieces:
        written.write(piece)
    assert written.close() == rf.file_sha256(path)
    assert path.read_bytes() == b"".join(pieces)


def test_the_manifest_from_known_sums_is_the_one_from_the_files(tmp_path):
    tables = {"outcomes": rf.OUTCOMES, "labels_final": rf.label_table("labels_final", "tuple")}
    rows = {"outcomes": _outcome_rows(30), "labels_final": _tricky_rows(30)}
    written = _write(tmp_path / "a", tables, rows, [True], parallel=True)
    records = bt.HashedFile(tmp_path / "a" / rf.RECORDS)
    records.write(b'{"claimgate":"records"}\n')
    known = {rf.RECORDS: records.close(), **written.sums()}
    (tmp_path / "a" / rf.README).write_text("# release\n", encoding="utf-8")
    assert len(known) == 7
    import shutil

    shutil.copytree(tmp_path / "a", tmp_path / "b")
    assert bt.write_manifest(tmp_path / "a", known) == rf.write_manifest(tmp_path / "b")
    manifest = rf.MANIFEST
    assert (tmp_path / "a" / manifest).read_bytes() == (tmp_path / "b" / manifest).read_bytes()


def test_without_a_process_the_tables_are_written_here(tmp_path, monkeypatch):
    def refused(*args, **kwargs):
        raise OSError("no process may be started here")

    monkeypatch.setattr(bt, "module_process", refused)
    tmp_path.joinpath("here").mkdir()
    written = bt.open_tables(tmp_path / "here", {"outcomes": rf.OUTCOMES}, parallel=True)
    assert written.process is None
    written["outcomes"].write(_outcome_rows(1)[0])
    written.close()
    assert written.sums() == {}
    assert written["outcomes"].rows == 1
    assert (tmp_path / "here" / "outcomes.csv").read_bytes().count(b"\r\n") == 2
