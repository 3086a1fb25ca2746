"""The pure bundle formats: no database."""

from __future__ import annotations

import io
import json
import zipfile

import pyarrow.parquet as pq
import pytest

from audit.releases import formats as rf

TABLE = rf.Table(
    "labels_final",
    (("name", "string"), ("n", "int"), ("x", "float"), ("ok", "bool"), ("spans", "json")),
)


def rows(count=5):
    for i in range(count):
        yield {
            "name": ["=1+1", "+cmd", "-2", "@SUM(A1)", "\tx", "\rx", "plain", "é 東京"][i % 8],
            "n": -i,
            "x": i / 3 if i % 2 else None,
            "ok": bool(i % 2),
            "spans": {"b": [i], "a": "=x"},
        }


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+1", "'=1+1"),
        ("+cmd", "'+cmd"),
        ("-2", "'-2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("plain", "plain"),
        (None, ""),
    ],
)
def test_csv_cells_that_a_spreadsheet_would_run_are_escaped(value, cell):
    assert rf.csv_cell(value) == cell


def test_numbers_booleans_and_nested_values_in_csv():
    assert rf.csv_cell(-3, "int") == "-3"
    assert rf.csv_cell(True, "bool") == "true"
    assert rf.csv_cell({"b": 1, "a": [1, "é"]}, "json") == '{"a":[1,"é"],"b":1}'


def test_the_three_formats_hold_the_same_rows_in_a_fixed_order(tmp_path):
    assert rf.write_table(tmp_path, TABLE, rows(8)) == 8
    lines = (tmp_path / "labels_final.jsonl").read_bytes().splitlines()
    assert lines[0] == b'{"n":0,"name":"=1+1","ok":false,"spans":{"a":"=x","b":[0]},"x":null}'
    csv_lines = (tmp_path / "labels_final.csv").read_bytes().decode().split("\r\n")
    assert csv_lines[0] == "name,n,x,ok,spans"
    assert csv_lines[1] == '\'=1+1,0,,false,"{""a"":""=x"",""b"":[0]}"'
    table = pq.read_table(tmp_path / "labels_final.parquet")
    assert table.column_names == ["name", "n", "x", "ok", "spans"]
    assert table.column("name").to_pylist()[0] == "=1+1"  # Parquet is data, not a sheet
    assert json.loads(table.column("spans").to_pylist()[1]) == {"a": "=x", "b": [1]}


def test_parquet_is_written_in_row_groups_and_identical_twice(tmp_path, monkeypatch):
    monkeypatch.setattr(rf, "PARQUET_ROW_GROUP", 3)
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        rf.write_table(tmp_path / name, TABLE, rows(10))
    one = (tmp_path / "one" / "labels_final.parquet").read_bytes()
    assert one == (tmp_path / "two" / "labels_final.parquet").read_bytes()
    meta = pq.ParquetFile(tmp_path / "one" / "labels_final.parquet").metadata
    assert meta.num_row_groups == 4
    assert set(meta.metadata) == {b"ARROW:schema"}  # no timestamp, nothing else


def test_manifest_is_sorted_and_sha256sum_compatible(tmp_path):
    (tmp_path / "README.md").write_text("b")
    (tmp_path / "codebook.json").write_text("a")
    files = rf.write_manifest(tmp_path)
    text = (tmp_path / "SHA256SUMS").read_text()
    assert text.splitlines() == [
        f"{files['README.md']['sha256']}  README.md",
        f"{files['codebook.json']['sha256']}  codebook.json",
    ]
    assert rf.parse_manifest(text) == (
        {n: files[n]["sha256"] for n in files if n != "SHA256SUMS"},
        [],
    )


@pytest.mark.parametrize(
    ("slug", "name"),
    [
        ("../evil", "v1"),
        ("ok", "../../etc"),
        ("ok", ".."),
        ("ok", "a/b"),
        ("/abs", "v1"),
        ("ok", "-rf"),
        ("ok", ""),
        ("ok", "v1\x00"),
        ("ok", "x" * 81),
    ],
)
def test_hostile_slugs_and_names_cannot_leave_the_root(tmp_path, slug, name):
    with pytest.raises(rf.BundlePathError):
        rf.bundle_dir(tmp_path, slug, name)


@pytest.mark.parametrize("name", ["../README.md", "/etc/passwd", "x.csv", "records.jsonl/.."])
def test_only_the_bundle_file_names_can_be_joined(tmp_path, name):
    with pytest.raises(rf.BundlePathError):
        rf.bundle_file(tmp_path, name)


def test_a_symlinked_bundle_file_pointing_outside_is_refused(tmp_path):
    (tmp_path / "bundle").mkdir()
    (tmp_path / "bundle" / "README.md").symlink_to(tmp_path / "outside.md")
    with pytest.raises(rf.BundlePathError):
        rf.bundle_file(tmp_path / "bundle", "README.md")


def test_the_zip_is_identical_twice_with_fixed_stamps(tmp_path):
    rf.write_table(tmp_path, TABLE, rows(4))
    names = sorted(p.name for p in tmp_path.iterdir())
    first, second = io.BytesIO(), io.BytesIO()
    rf.write_zip(first, tmp_path, names, "study-v1")
    rf.write_zip(second, tmp_path, list(reversed(names)), "study-v1")
    assert first.getvalue() == second.getvalue()
    with zipfile.ZipFile(first) as archive:
        infos = archive.infolist()
        assert [i.filename for i in infos] == [f"study-v1/{n}" for n in names]
        assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
        assert (
            archive.read("study-v1/labels_final.csv")
            == (tmp_path / "labels_final.csv").read_bytes()
        )


def test_withholding_replaces_quotes_by_their_hash_and_counts():
    counter = rf.Withheld()
    span = {"snapshot": "source", "start": 0, "end": 3, "quote": "abc"}
    query_span = {"snapshot": "query", "start": 0, "end": 1, "quote": "W"}
    annotation = {"spans": {"I": [span, query_span]}}
    out = rf.withhold_annotation(annotation, counter)
    assert out["spans"]["I"][0] == {**span, "quote": None, "quote_sha256": rf.quote_sha256("abc")}
    assert out["spans"]["I"][1] == query_span
    assert counter.quotes == 1
    assert annotation["spans"]["I"][0]["quote"] == "abc"  # the input is left alone


# --- tables written column by column, as the per-row writers write them ---------------------

_TRICKY = [
    None,
    "",
    " =1+1",
    "-3",
    "@home",
    "\tx",
    "plain",
    "é ☃ 💶 \u2028",
    'quote " and \\ and , and\r\nnewline',
]


def _tricky_rows(count: int) -> list[dict]:
    rows = []
    for index in range(count):
        pick = _TRICKY[index % len(_TRICKY)]
        rows.append(
            {
                "record_digest": f"{index:064x}",
                "kind": pick,
                "revision": None if index % 7 == 0 else index - 3,
                "current": [True, False, None][index % 3],
                "parents": [] if index % 2 else [f"{index:064x}"],
                "unit_digest": pick,
                "partition": "train",
                "annotator": pick,
                "assisted_model": None,
                "created_at": "2026-05-01T10:00:00Z",
                "I": index % 2,
                "A": None,
                "M": 1,
                "D": 0,
                "passage_support": -1 if index % 5 == 0 else 1,
                "source_role": pick,
                "spans": None if index % 4 == 0 else {"I": [{"quote": pick, "start": -1}]},
                "evidence": {"d_Q": [1e-05, 0.5, -0.0, 2**70, 1e22][index % 5]},
                "rationale": pick,
            }
        )
    return rows


@pytest.mark.parametrize("fast", [False, True])
def test_tables_written_by_batches_are_the_per_row_writers_bytes(tmp_path, fast):
    table = rf.label_table("labels_independent", "tuple")
    rows = _tricky_rows(rf.TABLE_BATCH * 2 + rf.PARQUET_ROW_GROUP // 3 + 7)
    batched = tmp_path / "batched"
    batched.mkdir()
    files = rf.TableFiles(batched, table)
    for row in rows:
        files.write(row, fast=fast)
    files.close()

    per_row = tmp_path / "per_row"
    per_row.mkdir()
    for ext in rf.TABLE_FORMATS:
        with (per_row / f"{table.name}.{ext}").open("xb") as stream:
            writer = rf._WRITERS[ext](stream, table)
            for row in rows:
                writer.write(row)
            writer.close()

    for ext in rf.TABLE_FORMATS:
        name = f"{table.name}.{ext}"
        assert (batched / name).read_bytes() == (per_row / name).read_bytes(), name
    assert files.rows == len(rows)


def test_parquet_row_groups_from_batches_are_pyarrows_own_bytes(tmp_path, monkeypatch):
    # A row group is gathered as Arrow arrays batch by batch (rows given column by column
    # and one at a time, mixed); the file is the one pyarrow writes from each row group's
    # values converted at once.
    import pyarrow as pa
    import pyarrow.parquet as pq

    monkeypatch.setattr(rf, "PARQUET_ROW_GROUP", 1_200)
    monkeypatch.setattr(rf, "TABLE_BATCH", 500)
    table = rf.Table(
        "mixed", (("s", "string"), ("i", "int"), ("f", "float"), ("b", "bool"), ("j", "json"))
    )
    rows = [
        {
            "s": None if n % 7 == 0 else _TRICKY[n % len(_TRICKY)],
            "i": None if n % 5 == 0 else n * 1_000_003,
            "f": None if n % 3 == 0 else n / 7,
            "b": None if n % 4 == 0 else n % 2 == 0,
            "j": None if n % 6 == 0 else f'{{"n":{n}}}',
        }
        for n in range(3_333)
    ]
    names = table.names
    with (tmp_path / "batched.parquet").open("xb") as stream:
        writer = rf.ParquetWriter(stream, table)
        start, size = 0, 0
        while start < len(rows):
            size = size % 4 + 333
            part = rows[start : start + size]
            if start // size % 2:
                for row in part:
                    writer.write_texts(row, {"j": row["j"]} if row["j"] else {})
            else:
                writer.write_columns([[row[name] for row in part] for name in names], len(part))
            start += size
        writer.close()

    schema = rf._arrow_schema(table)
    with (tmp_path / "reference.parquet").open("xb") as stream:
        reference = pq.ParquetWriter(stream, schema, **rf.PARQUET_OPTIONS)
        for at in range(0, len(rows), 1_200):
            group = rows[at : at + 1_200]
            arrays = [
                pa.array([row[name] for row in group], type=schema.field(name).type)
                for name in names
            ]
            reference.write_batch(pa.record_batch(arrays, schema=schema), row_group_size=1_200)
        reference.close()

    assert (tmp_path / "batched.parquet").read_bytes() == (
        tmp_path / "reference.parquet"
    ).read_bytes()
    assert pq.ParquetFile(tmp_path / "batched.parquet").metadata.num_row_groups == 3
