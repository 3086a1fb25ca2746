"""The app's own database login cannot erase history (issue 11), on PostgreSQL.

Each test sets the role up the way a deployment does — ``manage.py db_app_role`` run by
the tables' owner (the suite's login) against the test database — then connects to the
test database as that role and makes the attack as it was made: TRUNCATE, ALTER TABLE …
DISABLE TRIGGER, DROP TRIGGER, UPDATE and DELETE of history. The whole labelling flow,
an import and a release still work as the app role."""

from __future__ import annotations

from contextlib import contextmanager

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, IntegrityError, connection, connections, transaction

from annotator.labelling.models import Label, LabelKind
from audit import dbrole
from audit.ledger.chain import ledger_head, ledger_verify
from audit.ledger.models import LedgerEntry
from audit.releases.services import release_build
from tests.releases.conftest import labelled_study

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PASSWORD = "app-role-test"


def _app_url(role: str) -> str:
    s = connection.settings_dict
    where = f"{s['HOST'] or '127.0.0.1'}:{s['PORT'] or 5432}/{s['NAME']}"
    return f"postgres://{role}:{PASSWORD}@{where}"


@pytest.fixture
def releases_root(settings, tmp_path):
    settings.RELEASES_ROOT = tmp_path / "releases"
    return settings.RELEASES_ROOT


@pytest.fixture
def app_role(transactional_db):
    """The app role of the test database, set up by the command, dropped afterwards
    (roles are the cluster's, so its name is the test database's own)."""
    role = f"{connection.settings_dict['NAME']}_app"
    call_command("db_app_role", app_url=_app_url(role))
    yield role
    with connection.cursor() as cursor:
        cursor.execute(f"DROP OWNED BY {dbrole.quote_ident(role)}")
        cursor.execute(f"DROP ROLE {dbrole.quote_ident(role)}")


@contextmanager
def connected_as(role: str):
    """Every query of the code under test (``django.db.connection``) goes through a new
    connection logged in as ``role``; the owner's connection comes back afterwards."""
    owner = connections["default"]
    app = type(owner)({**owner.settings_dict, "USER": role, "PASSWORD": PASSWORD}, "default")
    connections["default"] = app
    try:
        yield app
    finally:
        app.close()
        connections["default"] = owner


def _refused(statement: str) -> str:
    """Run ``statement`` on the current connection; the error PostgreSQL answered."""
    with (
        pytest.raises(DatabaseError) as refused,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(statement)
    return str(refused.value)


def test_the_whole_flow_works_as_the_app_role(app_role, releases_root):
    with connected_as(app_role):
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_user")
            assert cursor.fetchone()[0] == app_role
        # Import (COPY, temporary tables, nextval), people, labels, revisions, consensus,
        # adjudication, the ledger and the gate, then a release.
        labelled = labelled_study()
        release = release_build(study=labelled.study, name="as-app")
        checked, problem = ledger_verify()

    assert release.status == "ready"
    assert problem is None
    assert checked == LedgerEntry.objects.count() > 0
    assert ledger_head().seq == checked
    assert Label.objects.filter(study=labelled.study, kind=LabelKind.CONSENSUS).exists()
    assert Label.objects.filter(study=labelled.study, kind=LabelKind.ADJUDICATED).count() == 1


@pytest.mark.parametrize(
    ("statement", "answer"),
    [
        ("TRUNCATE annotator_label", "permission denied for table annotator_label"),
        ("TRUNCATE audit_ledgerentry", "permission denied for table audit_ledgerentry"),
        ("TRUNCATE audit_ledgerhead", "permission denied for table audit_ledgerhead"),
        ("TRUNCATE audit_studyfreeze", "permission denied for table audit_studyfreeze"),
        ("TRUNCATE audit_study CASCADE", "permission denied for table audit_study"),
        ("ALTER TABLE annotator_label DISABLE TRIGGER ALL", "must be owner"),
        ("ALTER TABLE audit_ledgerentry DISABLE TRIGGER USER", "must be owner"),
        ("DROP TRIGGER annotator_label_refuse_update ON annotator_label", "must be owner"),
        ("DROP TRIGGER audit_ledgerentry_refuse_delete ON audit_ledgerentry", "must be owner"),
        ("DROP TRIGGER audit_ledgerhead_refuse_update ON audit_ledgerhead", "must be owner"),
        ("ALTER TABLE annotator_label ADD COLUMN x int", "must be owner"),
        ("DROP TABLE audit_ledgerentry", "must be owner"),
        ("UPDATE annotator_label SET annotation = '{}'", "permission denied"),
        ("DELETE FROM annotator_label", "permission denied"),
        ("UPDATE audit_ledgerentry SET action = 'PASS'", "permission denied"),
        ("DELETE FROM audit_ledgerentry", "permission denied"),
        ("UPDATE audit_studyfreeze SET codebook_digest = ''", "permission denied"),
        ("DELETE FROM audit_ledgerhead", "permission denied"),
        ("DELETE FROM audit_answersnapshot", "permission denied"),
        ("DELETE FROM django_migrations", "permission denied"),
        ("SET session_replication_role = replica", "permission denied"),
        ("CREATE TABLE claimgate_side (x int)", "permission denied for schema"),
    ],
)
def test_each_way_to_erase_history_is_refused_to_the_app_role(app_role, statement, answer):
    with connected_as(app_role):
        assert answer in _refused(statement)


def test_the_attack_as_made_leaves_the_labels_and_the_ledger_whole(app_role):
    labelled = labelled_study()
    labels, entries = Label.objects.count(), LedgerEntry.objects.count()
    with connected_as(app_role):
        for statement in (
            "TRUNCATE audit_ledgerentry",
            "TRUNCATE annotator_label CASCADE",
            "ALTER TABLE audit_ledgerentry DISABLE TRIGGER ALL",
            "DROP TRIGGER annotator_label_refuse_delete ON annotator_label",
        ):
            _refused(statement)
        assert labelled_study("second").study.slug == "second"  # the app goes on working

    assert Label.objects.filter(study=labelled.study).count() == labels
    assert LedgerEntry.objects.filter(study=labelled.study).count() == entries
    assert ledger_verify()[1] is None


def test_the_app_role_cannot_move_the_head_back(app_role):
    labelled_study()
    head = ledger_head()
    with (
        connected_as(app_role),
        pytest.raises(IntegrityError, match="only moves forward"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("UPDATE audit_ledgerhead SET seq = 0, entry_hash = %s", ["0" * 64])
    assert ledger_head() == head


def test_the_command_refuses_the_owner_and_privileged_roles(app_role):
    owner = connection.settings_dict["USER"]
    with pytest.raises(CommandError, match=r"owns the tables.*\[app_role_is_owner\]"):
        call_command("db_app_role", app_url=_app_url(owner))

    with connection.cursor() as cursor:
        cursor.execute(f"GRANT {dbrole.quote_ident(owner)} TO {dbrole.quote_ident(app_role)}")
    try:
        with pytest.raises(CommandError, match=r"member of their owner.*\[app_role_member"):
            call_command("db_app_role", app_url=_app_url(app_role))
    finally:
        with connection.cursor() as cursor:
            cursor.execute(
                f"REVOKE {dbrole.quote_ident(owner)} FROM {dbrole.quote_ident(app_role)}"
            )

    with connection.cursor() as cursor:
        cursor.execute("GRANT TRUNCATE ON annotator_label TO PUBLIC")
    try:
        with pytest.raises(CommandError, match=r"TRUNCATE on annotator_label.*\[app_role_excess"):
            call_command("db_app_role", app_url=_app_url(app_role))
    finally:
        with connection.cursor() as cursor:
            cursor.execute("REVOKE TRUNCATE ON annotator_label FROM PUBLIC")


def test_tables_of_a_later_migration_are_readable_and_appendable_until_the_command_runs_again(
    app_role,
):
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE TABLE claimgate_later (id bigint GENERATED BY DEFAULT AS IDENTITY, x int)"
        )
    try:
        with connected_as(app_role):
            with connection.cursor() as cursor:
                cursor.execute("INSERT INTO claimgate_later (x) VALUES (1)")
                cursor.execute("SELECT count(*) FROM claimgate_later")
                assert cursor.fetchone()[0] == 1
            assert "permission denied" in _refused("UPDATE claimgate_later SET x = 2")
        call_command("db_app_role", app_url=_app_url(app_role))
        with connected_as(app_role), connection.cursor() as cursor:
            cursor.execute("UPDATE claimgate_later SET x = 2")
            cursor.execute("DELETE FROM claimgate_later")
    finally:
        with connection.cursor() as cursor:
            cursor.execute("DROP TABLE claimgate_later")


def test_the_command_says_what_it_granted(app_role, capsys):
    call_command("db_app_role", app_url=_app_url(app_role))
    out = capsys.readouterr().out
    assert f"app role '{app_role}' updated" in out
    assert "SELECT, INSERT: 9 tables" in out
    assert "never TRUNCATE" in out
