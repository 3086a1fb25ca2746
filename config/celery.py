"""The Celery application. Tasks live in the apps' ``jobs`` modules (never "tasks": in
Claimgate's domain language annotation work is not a Celery task)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("claimgate")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(related_name="jobs")
