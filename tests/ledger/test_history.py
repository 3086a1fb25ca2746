"""History that cannot be erased unnoticed (issue 11): the TRUNCATE rules, the head that
only moves forward, `verify_ledger --expect` against a head kept outside the database
(every release carries one), and every label matched to its ledger entry.

The tampering is done as the attack was made: by the tables' owner or a superuser with
the triggers off (PostgreSQL replica mode), which no application login can do."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.management import CommandError, call_command
from django.db import IntegrityError, connection, transaction

from annotator.labelling.models import Label
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from audit.contract.ledger import GENESIS
from audit.ledger.chain import ledger_head, ledger_labels_verify
from audit.ledger.models import LedgerEntry
from audit.releases import formats as rf
from audit.releases.services import release_build
from tests.annotation.annotations import source_risk
from tests.releases.conftest import labelled_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def releases_root(settings, tmp_path):
    settings.RELEASES_ROOT = tmp_path / "releases"
    return settings.RELEASES_ROOT


@pytest.fixture
def labelled(db, releases_root):
    return labelled_study()


def _with_triggers_off(*statements: str, params: list | None = None) -> None:
    """What an owner or superuser in psql can do: statements with no trigger firing."""
    assert connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        # The test's own transaction holds deferred foreign-key checks, which TRUNCATE
        # will not run over: check them now.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute("SET session_replication_role = replica")
        try:
            for statement in statements:
                cursor.execute(statement, params)
        finally:
            cursor.execute("SET session_replication_role = origin")


def _verify(capsys, *args: str) -> tuple[int, str, str]:
    try:
        call_command("verify_ledger", *args)
        code = 0
    except SystemExit as exit_info:
        code = exit_info.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- an intact ledger ----------------------------------------------------------------------


def test_an_intact_ledger_and_its_labels_verify_against_their_own_head(labelled, capsys, tmp_path):
    head = ledger_head()
    assert head.seq == LedgerEntry.objects.count() > 0

    code, out, err = _verify(capsys, "--expect", str(head), "--write-head", str(tmp_path / "h"))

    assert (code, err) == (0, "")
    assert f"ledger ok: {head.seq} entries, chain intact, head {head}" in out
    assert f"head ok: the chain passes through {head}" in out
    assert f"labels ok: {Label.objects.count()} labels rebuild to their record digests" in out
    assert (tmp_path / "h").read_text() == f"{head}\n"
    assert _verify(capsys, "--expect", str(tmp_path / "h"))[0] == 0


def test_every_release_carries_the_ledger_head_and_verifies_against_it(
    labelled, capsys, releases_root
):
    head = ledger_head()
    release = release_build(study=labelled.study, name="v1")
    directory = rf.bundle_dir(releases_root, labelled.study.slug, "v1")

    stage = json.loads((directory / rf.STAGE).read_text())
    assert stage["ledger_head"] == {"seq": head.seq, "entry_hash": head.entry_hash}
    assert f"`{head}`" in (directory / rf.README).read_text()
    assert release.status == "ready"
    assert _verify(capsys, "--expect", str(directory))[0] == 0
    assert _verify(capsys, "--expect", str(directory / rf.STAGE))[0] == 0


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("12", "neither SEQ:HASH nor an existing file"),
        ("x:" + "a" * 64, "expected SEQ:HASH"),
        ("3:abc", "64 lowercase hex digits"),
        ("0:" + "a" * 64, r"entry 0 \(an empty chain\)"),
    ],
)
def test_an_unreadable_expected_head_is_refused_with_its_reason(db, value, problem):
    with pytest.raises(CommandError, match=problem) as refused:
        call_command("verify_ledger", "--expect", value)
    assert "[invalid_head]" in str(refused.value)


def test_a_file_without_a_head_is_refused(db, tmp_path):
    (tmp_path / "stage.json").write_text('{"stage": null}')
    with pytest.raises(CommandError, match=r"no ledger_head.*\[invalid_head\]"):
        call_command("verify_ledger", "--expect", str(tmp_path / "stage.json"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(CommandError, match=r"holds no stage.json.*\[invalid_head\]"):
        call_command("verify_ledger", "--expect", str(tmp_path / "empty"))


# --- the database's own rules --------------------------------------------------------------


def test_the_head_only_moves_forward(labelled):
    head = ledger_head()
    for statement, params in (
        ("UPDATE audit_ledgerhead SET seq = seq - 1", None),
        ("UPDATE audit_ledgerhead SET seq = 0, entry_hash = %s", [GENESIS]),
        ("UPDATE audit_ledgerhead SET entry_hash = %s", ["f" * 64]),
        ("DELETE FROM audit_ledgerhead", None),
    ):
        with (
            pytest.raises(IntegrityError, match="ledger head only moves forward"),
            transaction.atomic(),
            connection.cursor() as cursor,
        ):
            cursor.execute(statement, params)
    assert ledger_head() == head


@pytest.mark.postgres
@pytest.mark.parametrize(
    "table",
    [
        "annotator_label",
        "audit_ledgerentry",
        "audit_ledgerhead",
        "audit_studyfreeze",
        "audit_answersnapshot",
        "audit_sourcesnapshot",
        "audit_query",
        "audit_pipeline",
    ],
)
def test_even_the_owner_cannot_truncate_history_with_the_triggers_on(labelled, table):
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass "
            "AND tgtype & 32 = 32 AND NOT tgisinternal",  # TRIGGER_TYPE_TRUNCATE
            [table],
        )
        # its own rule (a table whose rows others reference has their rule too: audit 0024)
        assert (f"{table}_refuse_truncate",) in cursor.fetchall()
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # the test's pending checks first
    with (
        pytest.raises(IntegrityError, match=r"TRUNCATE on \w+ is refused"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(f"TRUNCATE {table} CASCADE")
    assert LedgerEntry.objects.exists()
    assert Label.objects.exists()


@pytest.mark.postgres
def test_a_cascade_from_another_table_is_refused_too(labelled):
    with connection.cursor() as cursor:
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    with (
        # refused by history's rule, or first by the rule of a table whose rows the
        # archive references (audit 0024: the study's observations)
        pytest.raises(
            IntegrityError,
            match=r'TRUNCATE on \w+ is refused|truncate on table "\w+" violates reference',
        ),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("TRUNCATE audit_study CASCADE")
    assert Label.objects.exists()


# --- the attack: truncate and reset, rewind, rewrite ---------------------------------------


@pytest.mark.postgres
def test_a_truncated_and_reset_ledger_fails_against_the_head_kept_elsewhere(
    labelled, capsys, releases_root
):
    kept = ledger_head()
    release_build(study=labelled.study, name="before")
    directory = rf.bundle_dir(releases_root, labelled.study.slug, "before")

    _with_triggers_off(
        "TRUNCATE audit_ledgerentry",
    )
    _with_triggers_off("UPDATE audit_ledgerhead SET seq = 0, entry_hash = %s", params=[GENESIS])

    # Alone, the database looks like a fresh one: that is what the copy kept elsewhere is for.
    code, out, _ = _verify(capsys)
    assert code == 0
    assert "ledger ok: 0 entries" in out
    for expected in (str(kept), str(directory)):
        code, out, err = _verify(capsys, "--expect", expected)
        assert code == 1
        assert "ledger head DOES NOT MATCH the copy kept elsewhere" in err
        assert (
            f"the ledger ends at entry 0, but the copy kept elsewhere says entry {kept.seq}" in err
        )
        assert "truncated or rewound" in err


@pytest.mark.postgres
def test_a_rewound_ledger_fails_against_the_head_kept_elsewhere(labelled, capsys):
    kept = ledger_head()
    back = kept.seq - 2
    earlier = LedgerEntry.objects.get(seq=back).entry_hash
    _with_triggers_off("DELETE FROM audit_ledgerentry WHERE seq > %s", params=[back])
    _with_triggers_off(
        "UPDATE audit_ledgerhead SET seq = %s, entry_hash = %s", params=[back, earlier]
    )

    assert _verify(capsys)[0] == 0  # alone, a shorter chain looks whole
    code, _out, err = _verify(capsys, "--expect", str(kept))
    assert code == 1
    assert (
        f"the ledger ends at entry {back}, but the copy kept elsewhere says entry {kept.seq}" in err
    )


@pytest.mark.postgres
def test_a_rewritten_chain_fails_against_the_head_kept_elsewhere(labelled, capsys):
    """The whole chain recomputed after an edit verifies on its own; not against the head."""
    from audit.contract.ledger import entry_hash
    from audit.ledger.chain import _entries

    kept = ledger_head()
    entries = list(_entries())
    entries[0]["action"] = "PASS" if entries[0]["action"] != "PASS" else "REVIEW"
    previous = GENESIS
    with connection.cursor() as cursor:
        cursor.execute("SET session_replication_role = replica")
        for entry in entries:
            entry["prev_hash"] = previous
            previous = entry["entry_hash"] = entry_hash(entry)
            cursor.execute(
                "UPDATE audit_ledgerentry SET action = %s, prev_hash = %s, entry_hash = %s "
                "WHERE seq = %s",
                [entry["action"], entry["prev_hash"], entry["entry_hash"], entry["seq"]],
            )
        cursor.execute("UPDATE audit_ledgerhead SET entry_hash = %s", [previous])
        cursor.execute("SET session_replication_role = origin")

    code, out, err = _verify(capsys)
    assert "chain intact" in out
    code, out, err = _verify(capsys, "--expect", str(kept))
    assert code == 1
    assert f"entry {kept.seq} has the hash {previous}, but the copy kept elsewhere says" in err
    assert "rewritten" in err


# --- labels edited or deleted with the triggers off ----------------------------------------


@pytest.mark.postgres
def test_a_label_edited_with_the_triggers_off_is_named(labelled, capsys):
    label = labelled.labels[0]
    _with_triggers_off(
        "UPDATE annotator_label SET annotation = jsonb_set(annotation, '{rationale}', "
        "'\"edited\"') WHERE id = %s",
        params=[label.pk],
    )

    code, out, err = _verify(capsys)

    assert code == 1
    assert "chain intact" in out
    assert f"label EDITED: label {label.pk} (independent, study rel, unit " in err
    assert f"not to its stored digest {label.record_digest}" in err
    assert ledger_labels_verify().problem_count == 1


@pytest.mark.postgres
def test_a_label_edited_and_given_a_new_digest_is_named_through_its_entry(labelled, capsys):
    """Editing a label and recomputing its digest leaves its ledger entry without a label."""
    from audit.archive.records import record_build

    label = labelled.labels[0]
    annotation = {**label.annotation, "rationale": "forged"}
    record = record_build(
        study=labelled.study,
        content=unit_content(unit=label.unit),
        annotation=annotation,
        parents=label.parents,
    )
    entry = LedgerEntry.objects.get(record_digest=label.record_digest)
    _with_triggers_off(
        "UPDATE annotator_label SET annotation = %s::jsonb, record_digest = %s WHERE id = %s",
        params=[json.dumps(annotation), record["record_digest"], label.pk],
    )

    code, _out, err = _verify(capsys)

    assert code == 1
    assert f"label MISSING: ledger entry {entry.seq} records a independent label" in err
    assert f"(record {label.record_digest}), but no label holds that record" in err
    assert f"label {label.pk} of that unit has no ledger entry" in err


@pytest.mark.postgres
def test_a_label_deleted_with_the_triggers_off_is_named_through_its_entry(labelled, capsys):
    label = labelled.labels[-1]  # the test partition's unit: no consensus builds on it
    entry = LedgerEntry.objects.get(record_digest=label.record_digest)
    _with_triggers_off("DELETE FROM annotator_label WHERE id = %s", params=[label.pk])

    code, _, err = _verify(capsys)

    assert code == 1
    assert f"label MISSING: ledger entry {entry.seq} records a independent label" in err
    assert "it was deleted or edited" in err


def test_a_label_awaiting_its_outcome_is_counted_not_failed(labelled, capsys):
    """A label whose job has not run yet (broker down: the sweep appends it later)."""
    assignment = assignment_next(study=labelled.study, annotator=labelled.people["ann_c"])
    label_submit(
        assignment=assignment,
        annotation=source_risk(unit_content(unit=assignment.unit), values=(1, 1, 1, 0)),
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    )

    code, out, err = _verify(capsys)

    assert (code, err) == (0, "")
    assert "; 1 labels await their outcome (their job has not run)" in out
