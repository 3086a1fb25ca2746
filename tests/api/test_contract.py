"""The API contract is true: what the schema says is what the server does.

- anonymous requests get 401 with ``WWW-Authenticate: Token`` and the error shape, on
  every operation of the schema;
- docs/api.md documents every operation the schema lists (30);
- Schemathesis, run against a real gunicorn worker (production settings) with an
  annotator's, an adjudicator's and a researcher's token, every check and every phase
  (examples, coverage, fuzzing, stateful), finds nothing: no 5xx, no response that
  violates the schema, no undocumented status. Bounded: a few examples per operation.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.authtoken.models import Token

from tests.annotation.conftest import add_people, make_study
from tests.servers import ROOT, Gunicorn, production_env

CONFIG = Path(__file__).resolve().parent / "schemathesis.toml"
OPERATION_COUNT = 30


def _schema(client: Client) -> dict:
    response = client.get(reverse("api-schema"), {"format": "json"})
    assert response.status_code == 200
    return json.loads(response.content)


def _operations(schema: dict) -> list[tuple[str, str]]:
    return [
        (method.upper(), path)
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
        if isinstance(operation, dict) and "operationId" in operation
    ]


@pytest.mark.django_db
def test_anonymous_requests_get_401_with_www_authenticate_on_every_operation():
    client = Client()
    operations = _operations(_schema(client))
    assert len(operations) == OPERATION_COUNT

    for method, path in operations:
        url = re.sub(r"\{[^}]*id\}", "1", path)
        url = re.sub(r"\{[^}]*\}", "some-study", url)
        response = client.generic(method, url, b"{}", content_type="application/json")

        assert response.status_code == 401, (method, path, response.content)
        assert response["WWW-Authenticate"] == "Token", (method, path)
        body = response.json()
        assert body["reason"] == "not_authenticated", (method, path)
        assert body["message"]


@pytest.mark.django_db
def test_docs_api_md_documents_every_operation():
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    headings = set(re.findall(r"^### (GET|POST|PUT|PATCH|DELETE) (/api/\S+)", text, re.M))
    documented = {(method, re.sub(r"\{[^}]*\}", "{}", path)) for method, path in headings}
    operations = {
        (method, re.sub(r"\{[^}]*\}", "{}", path))
        for method, path in _operations(_schema(Client()))
    }
    assert len(operations) == OPERATION_COUNT
    assert operations - documented == set()
    assert documented - operations == set()


@pytest.fixture
def live_api(transactional_db, tmp_path):
    """Two studies (one per unit kind) with their people; a gunicorn worker serving them."""
    tokens = {}
    for slug, codebook, demo in (
        ("risk", "source-risk-1.0.0", "source-risk.jsonl"),
        ("claims", "answer-claims-1.0.0", "answer-claims.jsonl"),
    ):
        people = add_people(make_study(slug, codebook, demo))
    for role, name in (("annotator", "ann_a"), ("adjudicator", "adj"), ("researcher", "res")):
        tokens[role] = Token.objects.get_or_create(user=people[name])[0].key
    server = Gunicorn(production_env(SUBMIT_RATE="100000/minute"), tmp_path / "gunicorn.log")
    server.wait_ready()
    try:
        yield server, tokens
    finally:
        server.stop()


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.parametrize("role", ["annotator", "adjudicator", "researcher"])
def test_schemathesis_finds_no_server_error_and_no_contract_violation(live_api, role, tmp_path):
    server, tokens = live_api
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("schemathesis")),
            "--config-file",
            str(CONFIG),
            "run",
            f"{server.url}/api/schema/?format=json",
            "--checks",
            "all",
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--max-examples",
            "5",
            "--seed",
            "20261201",
            "--no-shrink",
            "--workers",
            "1",
        ],
        cwd=tmp_path,
        env={**production_env(), "CLAIMGATE_TOKEN": tokens[role]},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{output[-12000:]}\n--- server log ---\n{server.log()[-3000:]}"
    assert re.search(r"\d+ generated, \d+ passed", output), output[-3000:]
    assert "Response violates schema" not in output
    assert "Server error" not in output
    # Under /api/ (pages outside it need collectstatic's manifest, which this server lacks).
    assert "Internal Server Error: /api/" not in server.log()
