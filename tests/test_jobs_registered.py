"""A real worker loads every job the application queues (autodiscovery + CELERY_IMPORTS)."""

from __future__ import annotations

from config.celery import app


def test_every_claimgate_job_is_registered_in_the_worker_app():
    app.loader.import_default_modules()
    registered = {name for name in app.tasks if name.startswith("claimgate.")}
    assert {
        "claimgate.label_submitted",
        "claimgate.label_adjudicated",
        "claimgate.study_gate_refresh",
        "claimgate.outcomes_sweep",
        "claimgate.release_build",
        "claimgate.study_comparison_refresh",
    } <= registered
    assert any("report" in name for name in registered)
