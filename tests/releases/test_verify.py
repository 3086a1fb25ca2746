"""verify_release: passes on a fresh bundle, names every changed, missing or extra file,
and every record line the checker refuses."""

from __future__ import annotations

import json
import shutil

import pytest
from django.core.management import call_command

from audit.releases import formats as rf
from audit.releases.services import release_build

pytestmark = pytest.mark.django_db


@pytest.fixture
def bundle(labelled, releases_root, tmp_path):
    release_build(study=labelled.study, name="v1")
    copy = tmp_path / "copy"
    shutil.copytree(releases_root / "rel" / "v1", copy)
    return copy


def verify(directory, capsys):
    with pytest.raises(SystemExit) as exited:
        call_command("verify_release", str(directory))
    captured = capsys.readouterr()
    return exited.value.code, captured.out + captured.err


def test_a_fresh_bundle_verifies(bundle, capsys):
    call_command("verify_release", str(bundle))
    out = capsys.readouterr().out
    assert out.startswith("OK: every file matches SHA256SUMS; 10 records pass the checker")


@pytest.mark.parametrize("name", ["labels_independent.parquet", "README.md", "outcomes.csv"])
def test_one_changed_byte_fails_and_names_the_file(bundle, capsys, name):
    data = bytearray((bundle / name).read_bytes())
    data[len(data) // 2] ^= 0x01
    (bundle / name).write_bytes(bytes(data))
    code, text = verify(bundle, capsys)
    assert code == 1
    assert f"changed: {name}" in text


def test_missing_and_extra_files_are_named(bundle, capsys):
    (bundle / "labels_final.csv").unlink()
    (bundle / "notes.txt").write_text("mine")
    code, text = verify(bundle, capsys)
    assert code == 1
    assert "missing: labels_final.csv" in text
    assert "extra: notes.txt" in text


def test_a_record_the_checker_refuses_is_reported_by_line(bundle, capsys):
    lines = (bundle / rf.RECORDS).read_bytes().splitlines()
    record = json.loads(lines[3])
    record["annotation"]["predicates"]["D"] = 2
    lines[3] = rf.canonical_json(record)
    (bundle / rf.RECORDS).write_bytes(b"\n".join(lines) + b"\n")
    # Even with a manifest that agrees, the record itself is refused.
    (bundle / rf.MANIFEST).unlink()
    rf.write_manifest(bundle)
    code, text = verify(bundle, capsys)
    assert code == 1
    assert "records.jsonl:4:" in text
    assert "changed: " not in text
