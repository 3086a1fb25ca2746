"""Memory is bounded by the import limit, never by the upload (issue: a 400 MB upload grew
a web worker by 400 MB, 10^6 tiny lines by 302 MB, the command peaked at 893 MB on a
200 MB first line).

The web tests upload to a real gunicorn worker under the production settings and read the
worker's peak resident memory (VmHWM) from /proc; the command tests run ``import_records``
in a child of a small wrapper that reports its children's peak (getrusage). Big bodies are
generated as streams: the test never holds them either.
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token

from audit.archive.models import ImportBatch, ImportStatus
from audit.contract import codes
from tests.annotation.conftest import add_people, make_study
from tests.archive.builders import HEADER as HEADER_FIELDS
from tests.servers import ROOT, Gunicorn, memory_kib, production_env

pytestmark = [pytest.mark.postgres, pytest.mark.redis]

MB = 1024 * 1024
HEADER = json.dumps(HEADER_FIELDS).encode()
#: What a worker may grow by while it refuses or rejects an upload (the issue's bound).
GROWTH_LIMIT_KIB = 100 * 1024
BOUNDARY = "claimgate-test-boundary"


@pytest.fixture
def server(transactional_db, tmp_path):
    study = make_study("mem", "source-risk-1.0.0", "source-risk.jsonl")
    researcher = add_people(study)["res"]
    token = Token.objects.create(user=researcher).key
    gunicorn = Gunicorn(production_env(), tmp_path / "gunicorn.log").wait_ready()
    gunicorn.token = token  # type: ignore[attr-defined]
    gunicorn.study = study  # type: ignore[attr-defined]
    try:
        yield gunicorn
    finally:
        gunicorn.stop()


def _multipart(parts: Iterator[bytes], size: int) -> tuple[Iterator[bytes], int]:
    """A multipart body holding one file of ``size`` bytes given as blocks."""
    head = (
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="big.jsonl"\r\nContent-Type: application/octet-stream\r\n\r\n'
    ).encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()

    def body() -> Iterator[bytes]:
        yield head
        yield from parts
        yield tail

    return body(), len(head) + size + len(tail)


def _post(server: Gunicorn, body: Iterator[bytes], length: int) -> tuple[int, dict]:
    """POST the body to the import API, streamed; a server that answers before reading it
    all may close the connection while we send, so the answer is read either way."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)
    connection.putrequest("POST", f"/api/studies/{server.study.slug}/imports/")  # type: ignore[attr-defined]
    connection.putheader("Authorization", f"Token {server.token}")  # type: ignore[attr-defined]
    connection.putheader("Content-Type", f"multipart/form-data; boundary={BOUNDARY}")
    connection.putheader("Content-Length", str(length))
    connection.endheaders()
    try:
        for block in body:
            connection.send(block)
    except (BrokenPipeError, ConnectionResetError):
        pass
    response = connection.getresponse()
    answer = (response.status, json.loads(response.read()))
    connection.close()
    return answer


def _idle(server: Gunicorn) -> int:
    """The worker's resident memory after it has served the API once (code loaded)."""
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    connection.request(
        "GET",
        "/api/studies/",
        headers={"Authorization": f"Token {server.token}"},  # type: ignore[attr-defined]
    )
    assert connection.getresponse().status == 200
    connection.close()
    return memory_kib(server.worker_pid, "VmRSS")


def test_a_400_mb_upload_is_refused_before_it_is_read(server):
    idle = _idle(server)
    size = 400 * MB
    block = b"x" * MB
    body, length = _multipart((block for _ in range(size // MB)), size)

    status, answer = _post(server, body, length)

    assert status == 413
    assert answer["reason"] == "file_too_large"
    assert f"{length:,}" in answer["message"]
    growth = memory_kib(server.worker_pid, "VmHWM") - idle
    assert growth < GROWTH_LIMIT_KIB, f"the worker grew by {growth} KiB"
    assert not ImportBatch.objects.filter(file_name="big.jsonl").exists()


def test_a_million_bad_lines_keep_the_first_thousand_errors_and_count_all(server):
    idle = _idle(server)
    lines = 1_000_000
    header = HEADER + b"\n"
    size = len(header) + 3 * lines

    def blocks() -> Iterator[bytes]:
        yield header
        for _ in range(lines // 10_000):
            yield b"{}\n" * 10_000

    body, length = _multipart(blocks(), size)

    status, answer = _post(server, body, length)

    assert status == 400
    assert answer["status"] == ImportStatus.REJECTED
    assert answer["error_count"] == lines
    assert len(answer["errors"]) == 1_000
    assert {error["reason"] for error in answer["errors"]} == {codes.MISSING_FIELD}
    assert answer["file_bytes"] == size
    growth = memory_kib(server.worker_pid, "VmHWM") - idle
    assert growth < GROWTH_LIMIT_KIB, f"the worker grew by {growth} KiB"


# --- the command ----------------------------------------------------------------------

_WRAPPER = (
    "import resource, subprocess, sys\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stderr.write(done.stderr)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(done.returncode)\n"
)


def _command(path: Path, slug: str, **env: str) -> tuple[int, str, int]:
    """Run ``import_records`` in a child of a wrapper; exit code, stderr, peak RSS (KiB)."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _WRAPPER,
            sys.executable,
            "manage.py",
            "import_records",
            str(path),
            "--study",
            slug,
        ],
        cwd=ROOT,
        env=production_env(**env),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return done.returncode, done.stderr, int(done.stdout.split()[-1])


def _file(path: Path, first_line_bytes: int) -> Path:
    with path.open("wb") as out:
        for _ in range(first_line_bytes // MB):
            out.write(b"x" * MB)
        out.write(b"\n" + HEADER + b"\n")
    return path


@pytest.fixture
def command_study(transactional_db):
    return make_study("cmd", "source-risk-1.0.0", "source-risk.jsonl")


def test_the_command_refuses_a_200_mb_first_line_in_bounded_memory(command_study, tmp_path):
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"x\n" + HEADER + b"\n")
    big = _file(tmp_path / "big.jsonl", 200 * MB)
    _, _, baseline = _command(small, command_study.slug)

    # Over the file limit (64 MiB): refused by its size, before reading.
    code, stderr, peak = _command(big, command_study.slug)
    assert code == 1
    assert f"big.jsonl:0: {codes.FILE_TOO_LARGE}:" in stderr
    assert peak - baseline < 50 * 1024, (baseline, peak)

    # With a limit above the file: read, the line skipped to its end without being held.
    code, stderr, peak = _command(big, command_study.slug, IMPORT_MAX_FILE_BYTES=str(256 * MB))
    assert code == 1
    assert f"big.jsonl:1: {codes.LINE_TOO_LONG}: the line holds {200 * MB:,} bytes" in stderr
    assert peak - baseline < 50 * 1024, (baseline, peak)
