"""Installing a codebook: the service, `manage.py install_codebook`, the codebooks page and
the API, and creating a study with the installed version (page and API)."""

from __future__ import annotations

import html
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.memberships.models import Membership, Role
from audit.archive.models import Codebook, Study
from audit.archive.services import (
    CODEBOOK_IN_USE,
    CODEBOOK_MAX_BYTES,
    UNREADABLE_FILE,
    CodebookConflict,
    CodebookRefused,
    codebook_install,
    codebook_install_bytes,
    observations_import,
)
from audit.contract import codes
from tests.archive.conftest import CODEBOOKS

pytestmark = pytest.mark.django_db

SOURCE_RISK = CODEBOOKS / "source-risk-1.0.0.json"
TOXICITY = CODEBOOKS / "toxicity-1.0.0.json"


def broken_toxicity() -> dict:
    """The toxicity codebook with three problems in three places."""
    value = definition(TOXICITY, layout="tabs")
    value["fields"][0]["grades"][1].pop("anchor")
    value["fields"][1]["choices"] = []
    return value


BROKEN_TOXICITY = [
    (codes.UNKNOWN_FIELD, "layout"),
    (codes.MISSING_FIELD, "fields[0] (civility).grades[1].anchor"),
    (codes.INVALID_FIELD, "fields[1] (target).choices"),
]


def definition(path: Path = SOURCE_RISK, **changes) -> dict:
    value = json.loads(path.read_text(encoding="utf-8"))
    value.update(changes)
    return value


def as_bytes(value: dict) -> bytes:
    return json.dumps(value, indent=2).encode("utf-8")


def upload(data: bytes, name: str = "codebook.json") -> SimpleUploadedFile:
    return SimpleUploadedFile(name, data, content_type="application/json")


def api_as(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


# --- the service ------------------------------------------------------------------------


def test_installing_the_same_content_twice_changes_nothing():
    first, created = codebook_install_bytes(data=SOURCE_RISK.read_bytes())
    # Other whitespace, same JSON value: the same codebook (its digest is canonical).
    again, created_again = codebook_install(definition=definition())

    assert created is True
    assert created_again is False
    assert again.pk == first.pk
    assert Codebook.objects.count() == 1


def test_other_content_under_a_version_a_study_uses_is_refused(study):
    before = Codebook.objects.get(pk=study.codebook_id)

    with pytest.raises(CodebookConflict) as refused:
        codebook_install(definition=definition(title="Changed afterwards"))

    assert refused.value.problems[0].code == CODEBOOK_IN_USE
    assert "study 'routers'" in str(refused.value)
    assert "new version" in str(refused.value)
    after = Codebook.objects.get(pk=study.codebook_id)
    assert (after.digest, after.title, after.definition) == (
        before.digest,
        before.title,
        before.definition,
    )


def test_an_unused_version_may_still_be_corrected():
    codebook_install(definition=definition())

    row, created = codebook_install(definition=definition(title="Corrected title"))

    assert created is True
    assert Codebook.objects.count() == 1
    assert row.title == "Corrected title"
    assert row.definition["title"] == "Corrected title"


@pytest.mark.parametrize(
    ("data", "code", "where"),
    [
        (b'{"claimgate": "codebook",\n  "name": }', codes.MALFORMED_JSON, "line 2, column 11"),
        (b'{"claimgate": "codebook"\xff}', codes.INVALID_UTF8, "byte 24"),
        (b'{"a": 1, "a": 2}', codes.MALFORMED_JSON, ""),
        (b'{"a": NaN}', codes.MALFORMED_JSON, ""),
        (b'{"name": "x\\u0000"}', codes.INVALID_TEXT, ""),
        (b"[" * 100_000 + b"]" * 100_000, codes.TOO_DEEP, ""),
        (b" " * (CODEBOOK_MAX_BYTES + 1), codes.FILE_TOO_LARGE, ""),
    ],
)
def test_a_file_that_is_not_a_codebook_is_refused_saying_where(data, code, where):
    with pytest.raises(CodebookRefused) as refused:
        codebook_install_bytes(data=data, file_name="bad.json")

    problem = refused.value.problems[0]
    assert (problem.code, problem.path) == (code, where)
    assert str(refused.value).startswith("bad.json: 1 problem, nothing installed")
    assert Codebook.objects.count() == 0


def test_a_format_2_codebook_installs_with_its_unit_and_fields():
    row, created = codebook_install_bytes(data=TOXICITY.read_bytes(), file_name=TOXICITY.name)

    assert created is True
    assert (row.name, row.version, row.unit) == ("toxicity", "1.0.0", "answer")
    assert [f["code"] for f in row.definition["fields"]] == ["civility", "target", "harmful"]


def test_a_malformed_format_2_codebook_is_refused_with_every_problem_placed():
    with pytest.raises(CodebookRefused) as refused:
        codebook_install(definition=broken_toxicity(), file_name="toxicity.json")

    assert [(p.code, p.path) for p in refused.value.problems] == BROKEN_TOXICITY
    assert str(refused.value).startswith("toxicity.json: 3 problems, nothing installed: layout:")
    assert Codebook.objects.count() == 0


@pytest.mark.parametrize("unit", ["tuple", "answer", "answer_pair", "query_documents"])
def test_a_codebook_of_every_unit_kind_installs(unit):
    value = {
        "claimgate": "codebook",
        "format_version": 2,
        "name": f"kind-{unit}",
        "version": "1.0.0",
        "unit": unit,
        "fields": [{"code": "ok", "type": "verdict", "label": "Fine?"}],
    }

    row, created = codebook_install(definition=value)

    assert created is True
    assert Codebook.objects.get(pk=row.pk).unit == unit


def test_a_format_1_name_longer_than_the_column_is_refused():
    with pytest.raises(CodebookRefused) as refused:
        codebook_install(definition=definition(name="n" * 101))

    assert [(p.code, p.path) for p in refused.value.problems] == [(codes.INVALID_FIELD, "name")]


# --- the command ----------------------------------------------------------------------


def test_the_command_installs_every_file_and_says_so(tmp_path):
    out = StringIO()

    call_command("install_codebook", str(SOURCE_RISK), stdout=out)
    call_command("install_codebook", str(SOURCE_RISK), stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[0].startswith("installed: codebook source-risk 1.0.0 (Tuple")
    assert lines[1].startswith("already installed, unchanged: codebook source-risk 1.0.0")


def test_the_command_installs_nothing_when_one_file_is_bad(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_bytes(b'{"claimgate": "codebook",\n "format_version": }')
    missing = tmp_path / "missing.json"

    with pytest.raises(CommandError) as refused:
        call_command("install_codebook", str(SOURCE_RISK), str(bad), str(missing))

    message = str(refused.value)
    assert message.startswith("refused, nothing installed: 2 problems")
    assert "broken.json: line 2, column 20: the file is not JSON" in message
    assert f"[{codes.MALFORMED_JSON}]" in message
    assert f"{missing}: No such file or directory [{UNREADABLE_FILE}]" in message
    assert Codebook.objects.count() == 0


def test_the_command_lists_every_problem_of_a_format_2_file(tmp_path):
    bad = tmp_path / "toxicity-draft.json"
    bad.write_bytes(as_bytes(broken_toxicity()))

    with pytest.raises(CommandError) as refused:
        call_command("install_codebook", str(TOXICITY), str(bad))

    lines = str(refused.value).splitlines()
    assert lines[0] == "refused, nothing installed: 3 problems"
    assert [line.split(": ", 2)[:2] for line in lines[1:]] == [
        ["  toxicity-draft.json", path] for _, path in BROKEN_TOXICITY
    ]
    assert Codebook.objects.count() == 0


def test_the_command_refuses_a_changed_codebook_in_use(study, tmp_path):
    changed = tmp_path / "source-risk-1.0.0.json"
    changed.write_bytes(as_bytes(definition(description="Changed afterwards")))

    with pytest.raises(CommandError) as refused:
        call_command("install_codebook", str(changed))

    assert "source-risk 1.0.0 is already installed with different content" in str(refused.value)
    assert f"[{CODEBOOK_IN_USE}]" in str(refused.value)


# --- the codebooks page and the new-study page -----------------------------------------


def test_a_researcher_uploads_a_codebook_then_creates_a_study_with_it(client, people):
    client.force_login(people["researcher"])
    data = as_bytes(definition(version="1.1.0", title="Source risk, second wording"))

    installed = client.post(reverse("codebooks"), {"file": upload(data)})

    row = Codebook.objects.get(name="source-risk", version="1.1.0")
    assert installed.status_code == 302
    assert installed["Location"] == f"{reverse('codebooks')}#codebook-{row.pk}"
    page = client.get(installed["Location"])
    assert "Installed codebook source-risk 1.1.0." in page.content.decode()
    assert f'href="{reverse("study-new")}?codebook={row.pk}"' in page.content.decode()

    form = client.get(reverse("study-new"), {"codebook": row.pk})
    assert f'<option value="{row.pk}" selected>' in form.content.decode()
    created = client.post(
        reverse("study-new"),
        {"slug": "routers-2", "title": "Routers again", "codebook": row.pk, "overlap": 3},
    )

    assert created.status_code == 302
    assert created["Location"] == reverse("study-detail", args=["routers-2"])
    study = Study.objects.get(slug="routers-2")
    assert (study.codebook_id, study.overlap, study.created_by) == (
        row.pk,
        3,
        people["researcher"],
    )
    assert Membership.objects.filter(
        study=study, user=people["researcher"], role=Role.RESEARCHER
    ).exists()
    assert client.get(created["Location"]).status_code == 200


def test_the_page_lists_every_problem_and_installs_nothing(client, people):
    client.force_login(people["researcher"])
    data = b'{"claimgate": "codebook",\n "format_version": 1,\n "name": [}'

    response = client.post(reverse("codebooks"), {"file": upload(data, "draft.json")})

    body = response.content.decode()
    assert response.status_code == 400
    assert "draft.json was not installed: 1 problem" in body
    assert "<code>line 3, column 11</code>" in body
    assert f"<code>{codes.MALFORMED_JSON}</code>" in body
    assert Codebook.objects.filter(name="source-risk").count() == 1


def test_the_page_places_every_problem_of_a_format_2_file(client, people):
    client.force_login(people["researcher"])
    installed = Codebook.objects.get(name="toxicity")

    response = client.post(
        reverse("codebooks"), {"file": upload(as_bytes(broken_toxicity()), "toxicity.json")}
    )

    body = html.unescape(response.content.decode())
    assert response.status_code == 400
    assert "toxicity.json was not installed: 3 problems" in body
    for code, path in BROKEN_TOXICITY:
        assert f"<td><code>{path}</code></td><td><code>{code}</code></td>" in body
    assert Codebook.objects.get(name="toxicity").digest == installed.digest


def test_a_taken_slug_is_refused_on_the_form(client, people, study):
    client.force_login(people["researcher"])

    response = client.post(
        reverse("study-new"),
        {"slug": study.slug, "title": "Again", "codebook": study.codebook_id, "overlap": 2},
    )

    assert response.status_code == 400
    assert f"a study with the slug {study.slug!r} exists" in html.unescape(
        response.content.decode()
    )
    assert Study.objects.count() == 1


def test_only_researchers_and_admins_install_codebooks_or_create_studies(client, people):
    for name in ("annotator", "outsider"):
        client.force_login(people[name])
        assert client.get(reverse("codebooks")).status_code == 403
        assert client.get(reverse("study-new")).status_code == 403
        refused = client.post(reverse("codebooks"), {"file": upload(SOURCE_RISK.read_bytes())})
        assert refused.status_code == 403
        assert "New study" not in client.get(reverse("home")).content.decode()
    client.force_login(people["researcher"])
    assert "New study" in client.get(reverse("home")).content.decode()


def test_the_permission_to_add_studies_is_enough_without_a_study(client, people):
    from django.contrib.auth.models import Permission

    people["outsider"].user_permissions.add(Permission.objects.get(codename="add_study"))
    client.force_login(people["outsider"])

    assert client.get(reverse("codebooks")).status_code == 200


def test_the_codebooks_page_takes_a_fixed_number_of_queries(client, people, codebooks):
    client.force_login(people["researcher"])
    client.get(reverse("codebooks"))
    with CaptureQueriesContext(connection) as few:
        client.get(reverse("codebooks"))
    for index in range(5):
        codebook_install(definition=definition(version=f"2.{index}.0"))
    with CaptureQueriesContext(connection) as many:
        response = client.get(reverse("codebooks"))

    assert response.status_code == 200
    assert len(many) == len(few)


# --- the API ----------------------------------------------------------------------------


def test_the_api_installs_a_codebook_and_creates_a_study_with_it(people):
    api = api_as(people["researcher"])
    data = as_bytes(definition(version="1.2.0"))

    created = api.post(reverse("api-codebooks"), {"file": upload(data)})
    again = api.post(reverse("api-codebooks"), {"file": upload(data)})
    listed = api.get(reverse("api-codebooks"))

    assert created.status_code == 201, created.content
    assert again.status_code == 200
    assert created.json()["format_version"] == 1
    assert created.json()["study_count"] == 0
    assert {(c["name"], c["version"]) for c in listed.json()} >= {("source-risk", "1.2.0")}

    study = api.post(
        reverse("api-studies"),
        {
            "slug": "routers-api",
            "title": "Routers by API",
            "codebook": "source-risk",
            "codebook_version": "1.2.0",
        },
        format="json",
    )
    assert study.status_code == 201, study.content
    assert study.json()["overlap"] == 2
    assert study.json()["codebook_version"] == "1.2.0"
    taken = api.post(
        reverse("api-studies"),
        {
            "slug": "routers-api",
            "title": "x",
            "codebook": "source-risk",
            "codebook_version": "1.2.0",
        },
        format="json",
    )
    assert taken.status_code == 409
    assert taken.json()["reason"] == "slug_taken"
    unknown = api.post(
        reverse("api-studies"),
        {"slug": "other", "title": "x", "codebook": "source-risk", "codebook_version": "9"},
        format="json",
    )
    assert unknown.status_code == 400
    assert "no codebook source-risk 9 is installed" in unknown.json()["codebook_version"][0]
    in_use = api.post(
        reverse("api-codebooks"), {"file": upload(as_bytes(definition(version="1.2.0", title="x")))}
    )
    assert in_use.status_code == 409
    assert in_use.json()["reason"] == CODEBOOK_IN_USE


def test_the_api_lists_every_problem_of_a_refused_file(people):
    api = api_as(people["researcher"])

    bad = api.post(reverse("api-codebooks"), {"file": upload(b"{\n\n  oops", "x.json")})
    large = api.post(reverse("api-codebooks"), {"file": upload(b" " * (CODEBOOK_MAX_BYTES + 2))})

    assert bad.status_code == 400
    assert bad.json()["reason"] == codes.MALFORMED_JSON
    assert bad.json()["problems"][0]["path"] == "line 3, column 3"
    assert large.status_code == 413
    assert large.json()["reason"] == codes.FILE_TOO_LARGE


def test_the_api_lists_every_problem_of_a_format_2_file(people):
    response = api_as(people["researcher"]).post(
        reverse("api-codebooks"), {"file": upload(as_bytes(broken_toxicity()), "toxicity.json")}
    )

    assert response.status_code == 400
    body = response.json()
    assert body["reason"] == "codebook_invalid"
    assert body["message"] == "3 problems in toxicity.json: nothing installed"
    assert [(p["reason"], p["path"]) for p in body["problems"]] == BROKEN_TOXICITY


def test_the_api_refuses_annotators(people):
    api = api_as(people["annotator"])

    assert api.get(reverse("api-codebooks")).status_code == 403
    refused = api.post(
        reverse("api-studies"),
        {"slug": "x", "title": "x", "codebook": "source-risk", "codebook_version": "1.0.0"},
        format="json",
    )
    assert refused.status_code == 403


def test_a_study_of_an_uploaded_format_2_codebook_imports_its_observations(client, people):
    """The path a researcher takes with a codebook no code knows: upload, create, import."""
    client.force_login(people["researcher"])
    client.post(reverse("codebooks"), {"file": upload(TOXICITY.read_bytes(), TOXICITY.name)})
    row = Codebook.objects.get(name="toxicity", version="1.0.0")
    client.post(
        reverse("study-new"),
        {"slug": "toxicity-pilot", "title": "Toxicity pilot", "codebook": row.pk, "overlap": 2},
    )
    header, *lines = (CODEBOOKS.parent / "demo" / "answer-claims.jsonl").read_bytes().splitlines()
    header = json.dumps(
        dict(json.loads(header), codebook={"name": "toxicity", "version": "1.0.0"})
    ).encode()

    imported = client.post(
        reverse("study-import", args=["toxicity-pilot"]),
        {"file": SimpleUploadedFile("answers.jsonl", b"\n".join([header, *lines]) + b"\n")},
    )

    study = Study.objects.get(slug="toxicity-pilot")
    batch = study.imports.get()
    assert imported.status_code == 302
    assert batch.status == "imported", batch.errors[:3]
    assert batch.observations_created == len(lines)
    # The same answers as units of the answer-claims codebook, unit for unit.
    claims = Study.objects.create(
        slug="claims", title="Claims", codebook=Codebook.objects.get(name="answer-claims")
    )
    observations_import(
        study=claims,
        data=(CODEBOOKS.parent / "demo" / "answer-claims.jsonl").read_bytes(),
        file_name="answer-claims.jsonl",
    )
    digests = set(study.units.values_list("digest", flat=True))
    assert digests == set(claims.units.values_list("digest", flat=True))
    assert digests


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_installs_of_one_new_version_store_it_once():
    """Six uploads of the same new file at the same moment: one installs it, the others
    find it installed; none fails on the unique name and version."""
    import threading

    value = definition(TOXICITY, version="3.0.0")
    barrier = threading.Barrier(6)
    results, errors = [], []

    def install() -> None:
        try:
            barrier.wait()
            results.append(codebook_install(definition=value)[1])
        except Exception as exc:  # every failure is the finding
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=install) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert sorted(results) == [False] * 5 + [True]
    assert Codebook.objects.filter(name="toxicity", version="3.0.0").count() == 1
