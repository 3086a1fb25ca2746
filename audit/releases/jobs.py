"""Celery job of releases: takes an id, is idempotent, only calls the service.

A retried or duplicated delivery changes nothing: a ready or failed release is left as it
is, and a build interrupted by a database error starts again from an empty folder.
"""

from __future__ import annotations

from celery import shared_task

from audit.queueing import RELEASE_BUILD, RETRY
from audit.releases.models import Release
from audit.releases.services import release_build_run


@shared_task(name=RELEASE_BUILD, **RETRY)
def release_build_job(release_id: int, withhold_texts: bool = False) -> str:
    release = Release.objects.get(pk=release_id)
    return release_build_run(release=release, withhold_texts=withhold_texts).status
