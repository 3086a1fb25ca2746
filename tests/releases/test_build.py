"""Building a release: layout, determinism, immutability, the sealed test partition,
withheld texts, progress, and the round trip through the records import."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest
from django.core.management import call_command
from django.db import transaction

from annotator.labelling.models import Label, LabelKind
from audit.archive.models import Study, Unit
from audit.archive.selectors import codebook_registry
from audit.contract import check_record
from audit.releases import formats as rf
from audit.releases.models import Release
from audit.releases.records_import import RECORD_EXISTS, records_import
from audit.releases.services import (
    RELEASE_EXISTS,
    ReleaseRefused,
    bundle_write,
    release_build,
    release_create,
)
from tests.releases.conftest import RATIONALE, labelled_study

pytestmark = pytest.mark.django_db


def files_of(directory):
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def records_of(directory):
    lines = (directory / rf.RECORDS).read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0]), [json.loads(line) for line in lines[1:]]


def test_a_release_holds_every_file_listed_in_its_manifest(labelled, releases_root):
    release = release_build(study=labelled.study, name="v1")

    assert release.status == "ready"
    assert release.progress == 100
    directory = releases_root / "rel" / "v1"
    names = {p.name for p in directory.iterdir()}
    assert names == set(rf.BUNDLE_FILES) - {rf.RELIABILITY, rf.PREDICTIONS, rf.COMPARISON}
    sums, bad = rf.parse_manifest((directory / rf.MANIFEST).read_text())
    assert bad == []
    assert set(sums) == names - {rf.MANIFEST}
    assert release.files[rf.MANIFEST]["sha256"] == release.manifest_sha256
    assert all(rf.file_sha256(directory / n) == s for n, s in sums.items())
    assert release.stage == labelled.study.gate.reached


def test_labels_tables_and_records_carry_lineage_and_pseudonyms(labelled, releases_root):
    release_build(study=labelled.study, name="v1")
    directory = releases_root / "rel" / "v1"

    independent = [json.loads(x) for x in (directory / "labels_independent.jsonl").open()]
    final = [json.loads(x) for x in (directory / "labels_final.jsonl").open()]
    header, records = records_of(directory)

    kept = [lb for lb in labelled.labels if lb.unit_id != labelled.test_unit.pk]
    assert {row["record_digest"] for row in independent} == {lb.record_digest for lb in kept}
    revised = next(row for row in independent if row["revision"] == 2)
    assert revised["current"] is True
    assert len(revised["parents"]) == 1
    assert (
        next(r for r in independent if r["record_digest"] == revised["parents"][0])["current"]
        is False
    )
    assert {row["kind"] for row in final} == {"consensus", "adjudicated"}
    adjudicated = next(row for row in final if row["kind"] == "adjudicated")
    assert adjudicated["rationale"] == RATIONALE
    assert adjudicated["current"] is True
    assert sum(row["assisted_model"] == "judge-x 2026-01" for row in independent) == 1
    usernames = {user.username for user in labelled.people.values()}
    text = "".join(p.read_text(errors="replace") for p in directory.iterdir())
    assert not any(f'"{name}"' in text or f",{name}," in text for name in usernames)
    assert header["codebook"]["digest"] == labelled.study.codebook.digest
    registry = codebook_registry()
    assert all(check_record(record, registry).ok for record in records)
    assert len(records) == len(independent) + len(final)
    outcomes = [json.loads(x) for x in (directory / "outcomes.jsonl").open()]
    assert {o["record_digest"] for o in outcomes} == {r["record_digest"] for r in records}


def test_parquet_and_csv_hold_the_same_rows_as_jsonl(labelled, releases_root):
    release_build(study=labelled.study, name="v1")
    directory = releases_root / "rel" / "v1"
    jsonl = [json.loads(x) for x in (directory / "labels_independent.jsonl").open()]
    table = pq.read_table(directory / "labels_independent.parquet")
    assert table.num_rows == len(jsonl)
    assert table.column("record_digest").to_pylist() == [r["record_digest"] for r in jsonl]
    csv_text = (directory / "labels_independent.csv").read_bytes().decode("utf-8")
    assert csv_text.count("\r\n") == len(jsonl) + 1
    assert "'=SUM(A1:A9) looks odd" in csv_text  # the rationale, escaped


def test_the_same_state_gives_identical_bytes_twice(labelled, releases_root, tmp_path):
    release = release_build(study=labelled.study, name="v1")
    again = tmp_path / "again"
    bundle_write(study=labelled.study, name="v1", directory=again)

    assert files_of(releases_root / "rel" / "v1") == files_of(again)
    assert rf.file_sha256(again / rf.MANIFEST) == release.manifest_sha256


def test_export_command_twice_gives_identical_bytes(labelled, releases_root, tmp_path):
    call_command("export_release", study="rel", name="v1", out=str(tmp_path / "a"))
    call_command("export_release", study="rel", name="v1", out=str(tmp_path / "b"))
    assert files_of(tmp_path / "a") == files_of(tmp_path / "b")
    assert Release.objects.filter(study=labelled.study).count() == 1


def test_a_release_is_immutable(labelled, releases_root):
    release = release_build(study=labelled.study, name="v1")
    with pytest.raises(ReleaseRefused) as refused:
        release_build(study=labelled.study, name="v1")
    assert refused.value.code == RELEASE_EXISTS
    shutil.rmtree(releases_root / "rel" / "v1")
    with pytest.raises(ReleaseRefused):  # the row alone says the name is taken
        release_create(study=labelled.study, name="v1")
    Release.objects.filter(pk=release.pk).delete()
    (releases_root / "rel" / "v1").mkdir(parents=True)
    with pytest.raises(ReleaseRefused):  # so does a folder left on disk
        release_create(study=labelled.study, name="v1")


def test_the_test_partition_is_withheld_while_unfrozen_and_counted(labelled, releases_root):
    release_build(study=labelled.study, name="v1")
    directory = releases_root / "rel" / "v1"
    stage = json.loads((directory / rf.STAGE).read_text())
    readme = (directory / rf.README).read_text()

    assert stage["frozen"] is False
    assert stage["test_partition"] == {"sealed": True, "withheld_units": 1, "withheld_labels": 1}
    assert "**NOT FROZEN.**" in readme
    assert "test partition is withheld" in readme
    _, records = records_of(directory)
    test_digest = labelled.test_unit.digest
    assert all(record["tuple_digest"] != test_digest for record in records)


def test_withheld_texts_keep_digests_and_quote_hashes_and_are_counted(labelled, releases_root):
    release = release_build(study=labelled.study, name="lic", withhold_texts=True)
    assert release.status == "ready"
    directory = releases_root / "rel" / "lic"
    header, records = records_of(directory)
    readme = (directory / rf.README).read_text()

    assert header["texts_withheld"] is True
    assert all(r["answer"]["text"] is None and r["source"]["text"] is None for r in records)
    assert all(len(r["answer"]["digest"]) == 64 for r in records)
    spans = [s for r in records for v in r["annotation"]["spans"].values() for s in v]
    assert spans
    assert all(s["quote"] is None and len(s["quote_sha256"]) == 64 for s in spans)
    assert f"{len(records)} answer texts and {len(records)} source texts" in readme
    assert f"{len(spans)} quotes" in readme
    independent = (directory / "labels_independent.jsonl").read_text()
    assert '"quote":null' in independent
    assert "For streamin" not in independent


def _progress_seen(study, monkeypatch, interval: float) -> tuple[list[int], Release]:
    """Build a release in chunks of five labels with progress written at most once per
    ``interval`` seconds; the progress committed each time the build reports it."""
    import audit.releases.services as services

    seen = []
    original = services.bundle_write

    def spy(**kwargs):
        inner = kwargs["on_progress"]

        def record(percent):
            inner(percent)
            seen.append(Release.objects.get(name="v1").progress)

        return original(**{**kwargs, "on_progress": record})

    monkeypatch.setattr(services, "CHUNK", 5)
    monkeypatch.setattr(services, "PROGRESS_SECONDS", interval)
    monkeypatch.setattr(services, "bundle_write", spy)
    return seen, release_build(study=study, name="v1")


def test_progress_is_committed_as_the_build_goes(labelled, releases_root, monkeypatch):
    # Every change of percent written (a build of this size takes less than the interval).
    seen, release = _progress_seen(labelled.study, monkeypatch, 0)

    assert seen == sorted(seen)
    assert len(seen) > 3
    assert seen[-1] <= 99
    assert release.progress == 100


def test_answer_claims_release_round_trips(claims_labelled, releases_root, tmp_path):
    release = release_build(study=claims_labelled, name="v1")
    assert release.status == "ready", release.error
    _, records = records_of(releases_root / "relclaims" / "v1")
    assert records
    assert all(check_record(r, codebook_registry()).ok for r in records)


class _Undo(Exception):
    pass


def build_and_forget(releases_root):
    """A labelled study and its release, then the study is rolled back: only the files stay."""
    definition = None
    try:
        with transaction.atomic():
            origin = labelled_study("origin")
            release_build(study=origin.study, name="v1")
            definition = origin.study.codebook.definition
            raise _Undo
    except _Undo:
        pass
    return definition


def test_round_trip_records_reimport_into_a_fresh_study(db, releases_root, tmp_path):
    """Build a release, forget the study that made it (the savepoint is rolled back, as if
    this were another instance), import its records into a fresh study: every record
    passes the checker with the same record digest."""
    definition = build_and_forget(releases_root)
    data = (releases_root / "origin" / "v1" / rf.RECORDS).read_bytes()
    _, records = records_of(releases_root / "origin" / "v1")
    assert not Study.objects.filter(slug="origin").exists()

    from audit.archive.services import codebook_install

    codebook, _ = codebook_install(definition=definition)
    fresh = Study.objects.create(slug="fresh", title="fresh", codebook=codebook)
    result = records_import(study=fresh, data=data, file_name="records.jsonl")

    assert result.batch.status == "imported", result.problems
    labels = Label.objects.filter(study=fresh)
    assert {lb.record_digest for lb in labels} == {r["record_digest"] for r in records}
    assert all(lb.annotator_id is None for lb in labels)
    assert {lb.kind for lb in labels} == {"independent", "consensus", "adjudicated"}
    from annotator.labelling.selectors import label_record

    registry = codebook_registry()
    for label in labels:
        rebuilt = label_record(label=label)
        assert rebuilt["record_digest"] == label.record_digest
        assert check_record(rebuilt, registry).ok
    by_digest = {r["record_digest"]: r for r in records}
    assert all(
        lb.annotation["annotator"] == by_digest[lb.record_digest]["annotation"]["annotator"]
        for lb in labels
    )
    assert Unit.objects.filter(study=fresh, state="adjudicated").count() == 1
    assert Unit.objects.filter(study=fresh, state="agreed").count() == 2

    again = records_import(study=fresh, data=data, file_name="records.jsonl")
    assert again.batch.status == "unchanged"
    assert again.labels_existing == len(records)

    # The re-imported study releases the same records, byte for byte.
    release_build(study=fresh, name="back")
    assert (releases_root / "fresh" / "back" / rf.RECORDS).read_bytes() == data


def test_records_of_another_study_in_this_instance_are_refused(labelled, releases_root):
    release_build(study=labelled.study, name="v1")
    data = (releases_root / "rel" / "v1" / rf.RECORDS).read_bytes()
    other = Study.objects.create(slug="other", title="other", codebook=labelled.study.codebook)
    result = records_import(study=other, data=data, file_name="records.jsonl")
    assert result.batch.status == "rejected"
    assert {p.reason for p in result.problems} == {RECORD_EXISTS}
    assert not Label.objects.filter(study=other).exists()
    assert LabelKind.INDEPENDENT  # the label kinds are what the file names


def test_a_bad_record_rejects_the_whole_file(labelled, releases_root):
    release_build(study=labelled.study, name="v1")
    lines = (releases_root / "rel" / "v1" / rf.RECORDS).read_bytes().splitlines()
    record = json.loads(lines[2])
    record["annotation"]["predicates"]["I"] = "U"
    lines[2] = json.dumps(record).encode()
    other = Study.objects.create(slug="other", title="other", codebook=labelled.study.codebook)
    result = records_import(study=other, data=b"\n".join(lines), file_name="bad.jsonl")
    assert result.batch.status == "rejected"
    assert [p.line for p in result.problems] == [3]


def test_the_release_record_body_is_record_build_without_the_seal(labelled, claims_labelled):
    from annotator.labelling.selectors import label_record, unit_content
    from audit.archive.records import record_body

    for label in Label.objects.filter(study__in=[labelled.study, claims_labelled]):
        sealed = label_record(label=label)
        body = record_body(
            study=label.study,
            content=unit_content(unit=label.unit),
            annotation=label.annotation,
            parents=label.parents,
        )
        assert {**body, "record_digest": label.record_digest} == sealed


def test_progress_is_written_at_most_once_an_interval(labelled, releases_root, monkeypatch):
    # An interval no build of this size reaches: the first progress only, then the end.
    seen, release = _progress_seen(labelled.study, monkeypatch, 3600)

    assert len(seen) == 1
    assert seen[0] <= 99
    assert release.progress == 100
