"""The Celery application. Tasks live in the capabilities' ``jobs`` modules (never "tasks":
in Claimgate's domain language annotation work is not a Celery task), all of them listed
in CELERY_IMPORTS; code queues them by name through audit.queueing."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")

app = Celery("claimgate")
app.config_from_object("django.conf:settings", namespace="CELERY")
