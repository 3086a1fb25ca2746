"""audit.queueing: jobs are queued by name after commit, never by importing a jobs module.

Every name the code queues is one a worker registers (from the modules in CELERY_IMPORTS,
the one list of them); eager mode (no broker) applies the job here, a broker gets the
name and the arguments, and neither a failing job nor an unreachable broker raises.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from celery import current_app
from django.conf import settings

from audit import queueing
from config.celery import app

ROOT = Path(settings.BASE_DIR)


def test_every_job_name_is_registered_by_the_modules_in_celery_imports():
    app.loader.import_default_modules()
    registered = {name for name in app.tasks if name.startswith("claimgate.")}
    assert registered == set(queueing.JOBS)


def test_every_jobs_module_is_in_celery_imports():
    found = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for package in ("audit", "annotator", "metrics")
        for path in (ROOT / package).rglob("jobs.py")
    }
    assert found == set(settings.CELERY_IMPORTS)


def test_the_beat_schedule_runs_registered_jobs():
    assert {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} <= set(queueing.JOBS)


def test_the_web_process_queues_through_the_worker_app():
    assert current_app.main == app.main


class Log:
    """Stands in for the ``claimgate.jobs`` logger (which does not propagate to pytest)."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def exception(self, message: str, *args: object) -> None:
        self.lines.append(("error", message % args))

    def warning(self, message: str, *args: object) -> None:
        self.lines.append(("warning", message % args))


@pytest.fixture
def log(monkeypatch):
    log = Log()
    monkeypatch.setattr(queueing, "logger", log)
    return log


@pytest.fixture
def ran(monkeypatch):
    """Replace the gate job's body: the calls it gets, instead of a gate computation."""
    calls = []
    app.loader.import_default_modules()
    job = app.tasks[queueing.STUDY_GATE_REFRESH]
    monkeypatch.setattr(job, "run", lambda *args: calls.append(args))
    return calls


def test_eager_mode_applies_the_job_by_name_once_the_transaction_commits(
    db, ran, monkeypatch, django_capture_on_commit_callbacks
):
    monkeypatch.setitem(current_app.conf, "task_always_eager", True)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        queueing.queue_job(queueing.STUDY_GATE_REFRESH, 7)
    assert ran == []  # nothing before the commit
    for callback in callbacks:
        callback()
    assert ran == [(7,)]


def test_a_failing_eager_job_is_logged_and_the_write_stands(
    db, monkeypatch, log, django_capture_on_commit_callbacks
):
    monkeypatch.setitem(current_app.conf, "task_always_eager", True)
    app.loader.import_default_modules()

    def fail(*args):
        raise RuntimeError("boom")

    monkeypatch.setattr(app.tasks[queueing.STUDY_GATE_REFRESH], "run", fail)
    with django_capture_on_commit_callbacks(execute=True):
        queueing.queue_job(queueing.STUDY_GATE_REFRESH, 7)
    assert log.lines == [
        ("error", "job claimgate.study_gate_refresh(7,) failed; the sweep will catch up")
    ]


def test_with_a_broker_the_name_and_arguments_are_sent(
    db, ran, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)
    monkeypatch.setattr(
        current_app, "send_task", lambda name, **options: sent.append((name, options))
    )
    with django_capture_on_commit_callbacks(execute=True):
        queueing.queue_job(queueing.RELEASE_BUILD, 3, True)
    assert sent == [(queueing.RELEASE_BUILD, {"args": (3, True), "retry": False})]
    assert ran == []


def test_an_unreachable_broker_is_logged_and_the_write_stands(
    db, monkeypatch, log, django_capture_on_commit_callbacks
):
    def refuse(name, **options):
        raise ConnectionError("no broker")

    monkeypatch.setitem(current_app.conf, "task_always_eager", False)
    monkeypatch.setattr(current_app, "send_task", refuse)
    with django_capture_on_commit_callbacks(execute=True):
        queueing.queue_job(queueing.LABEL_SUBMITTED, 5)
    assert log.lines == [
        ("warning", "could not queue claimgate.label_submitted(5,); the sweep will catch up")
    ]
