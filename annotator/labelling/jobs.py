"""Celery job of the queue: the study's annotators' orders drawn ahead of their first
request (takes an id, is idempotent and only calls a service)."""

from __future__ import annotations

from celery import shared_task

from annotator.labelling.services import queue_orders_draw
from audit.archive.models import Study
from audit.queueing import QUEUE_ORDERS_DRAW, RETRY, debounce_release


@shared_task(name=QUEUE_ORDERS_DRAW, **RETRY)
def study_queue_orders_draw(study_id: int) -> int:
    """Draw the orders the study's annotators lack (queued once per burst: audit.queueing)."""
    debounce_release(QUEUE_ORDERS_DRAW, study_id)
    study = Study.objects.filter(pk=study_id).first()
    if study is None:  # deleted since
        return 0
    return queue_orders_draw(study=study)
