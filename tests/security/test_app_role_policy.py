"""The app role's privileges and set-up statements (pure: audit.dbrole, no database)."""

from __future__ import annotations

import pytest

from audit import dbrole
from audit.dbrole import RoleRefused, RoleState

TABLES = (
    "annotator_label",
    "audit_ledgerentry",
    "audit_ledgerhead",
    "audit_studyfreeze",
    "audit_answersnapshot",
    "audit_unit",
    "django_migrations",
    "django_session",
)


def test_history_is_never_updated_deleted_or_truncated():
    for table in (*dbrole.HISTORY, *dbrole.ARCHIVE):
        assert dbrole.table_privileges(table) == ("SELECT", "INSERT")
    assert dbrole.table_privileges("audit_ledgerhead") == ("SELECT", "INSERT", "UPDATE")
    assert dbrole.table_privileges("django_migrations") == ("SELECT",)
    assert dbrole.table_privileges("audit_unit") == ("SELECT", "INSERT", "UPDATE", "DELETE")
    for table in TABLES:
        assert not {"TRUNCATE", "REFERENCES", "TRIGGER"} & set(dbrole.table_privileges(table))


def test_the_statements_revoke_everything_then_grant_the_policy():
    statements = dbrole.setup_statements(
        role="app",
        database="claimgate",
        schema="public",
        tables=TABLES,
        exists=False,
        password="it's",
    )
    assert statements[0] == "CREATE ROLE \"app\" LOGIN PASSWORD 'it''s'"
    revoke = statements.index('REVOKE ALL ON ALL TABLES IN SCHEMA "public" FROM "app"')
    grants = [s for s in statements if s.startswith("GRANT") and " ON TABLE " in s]
    assert all(statements.index(grant) > revoke for grant in grants)
    assert (
        'GRANT SELECT, INSERT ON TABLE "public"."annotator_label", '
        '"public"."audit_answersnapshot", "public"."audit_ledgerentry", '
        '"public"."audit_studyfreeze" TO "app"'
    ) in grants
    assert 'GRANT SELECT ON TABLE "public"."django_migrations" TO "app"' in grants
    assert not any("TRUNCATE" in s for s in statements)
    assert (
        'ALTER DEFAULT PRIVILEGES IN SCHEMA "public" GRANT SELECT, INSERT ON TABLES TO "app"'
        in statements
    )


def test_an_existing_role_is_altered_only_for_a_password_or_login():
    def first(**kwargs):
        return dbrole.setup_statements(
            role="app", database="d", schema="public", tables=(), exists=True, **kwargs
        )[0]

    assert first(password=None).startswith("GRANT CONNECT")  # a DBA's role: left as it is
    assert first(password=None, can_login=False) == 'ALTER ROLE "app" LOGIN'
    assert first(password="pw") == "ALTER ROLE \"app\" LOGIN PASSWORD 'pw'"


def test_names_are_quoted_and_nul_is_refused():
    assert dbrole.quote_ident('a"b') == '"a""b"'
    with pytest.raises(RoleRefused) as refused:
        dbrole.quote_ident("a\x00b")
    assert refused.value.code == dbrole.INVALID_NAME
    with pytest.raises(RoleRefused):
        dbrole.quote_literal("pw\x00")


@pytest.mark.parametrize(
    ("role", "state", "foreign", "code"),
    [
        ("owner", RoleState(exists=True), (), dbrole.SAME_LOGIN),
        ("app", RoleState(True, attributes=("SUPERUSER",)), (), dbrole.PRIVILEGED),
        ("app", RoleState(True, attributes=("CREATEROLE",)), (), dbrole.PRIVILEGED),
        ("app", RoleState(True, acts_as=("owner",)), (), dbrole.MEMBER_OF_OWNER),
        ("app", RoleState(exists=False), ("audit_unit",), dbrole.FOREIGN_TABLES),
    ],
)
def test_a_role_that_could_erase_history_is_refused(role, state, foreign, code):
    with pytest.raises(RoleRefused) as refused:
        dbrole.role_problems(role=role, owner="owner", state=state, foreign_tables=foreign)
    assert refused.value.code == code


def test_a_fresh_role_is_accepted():
    dbrole.role_problems(role="app", owner="owner", state=RoleState(exists=False))


def test_privileges_held_beyond_the_policy_are_named():
    dbrole.excess_problems({"audit_unit": {"SELECT", "DELETE"}}, role="app")
    with pytest.raises(RoleRefused, match="TRUNCATE on annotator_label") as refused:
        dbrole.excess_problems(
            {"annotator_label": {"SELECT", "INSERT", "TRUNCATE"}, "audit_unit": {"SELECT"}},
            role="app",
        )
    assert refused.value.code == dbrole.EXCESS
