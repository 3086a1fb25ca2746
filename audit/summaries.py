"""Stored summaries of large studies, counted by a worker: one rule for every page whose
counts grow with the study (the outcomes page, annotators' agreement on the quality page).

A summary row holds ``study``, ``mark`` (what it was counted from) and ``data``. The mark
is read before counting, so a label that arrives meanwhile leaves the row marked behind and
it is counted again; a study small enough to count in a request keeps no row."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db.models import Model

from audit.archive.models import Study


def summary_refresh(
    *,
    model: type[Model],
    study: Study,
    inline: bool,
    mark: Callable[[], Any],
    data: Callable[[], Any],
) -> str:
    """Count ``study`` into its ``model`` row unless it is current: "inline" (counted in
    requests, the row removed), "current" (the stored mark is the mark now) or "counted"."""
    rows = model._default_manager.filter(study=study)
    if inline:
        rows.delete()
        return "inline"
    now = mark()
    if rows.values_list("mark", flat=True).first() == now:
        return "current"
    model._default_manager.update_or_create(study=study, defaults={"mark": now, "data": data()})
    return "counted"
