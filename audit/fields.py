"""Model fields shared by the capabilities."""

from __future__ import annotations

from typing import Any

from django.db import models

from audit.contract.canonical import CanonicalError, canonical_json


class CanonicalJsonText(models.TextField):
    """The canonical JSON text (:func:`audit.contract.canonical.canonical_json`) of the
    model's ``source`` field, made when the row is inserted: by ``save``, ``create``,
    ``bulk_create`` and :class:`audit.compiled.CompiledInsert` (each calls ``pre_save``)
    and by :func:`audit.archive.bulk.insert` (:meth:`text_of_row`). ``NULL`` where the
    value has no canonical text (a value the encoder refuses) or for rows written before
    the field existed; readers fall back on the value itself. A stored text is the bytes a
    record embeds for that value, and whoever writes it into a record still checks the
    record's digest."""

    def __init__(self, *args: Any, source: str, **kwargs: Any) -> None:
        self.source = source
        kwargs.setdefault("null", True)
        kwargs.setdefault("blank", True)
        kwargs.setdefault("editable", False)
        super().__init__(*args, **kwargs)

    def deconstruct(self) -> tuple[Any, ...]:
        name, path, args, kwargs = super().deconstruct()
        kwargs["source"] = self.source
        for key in ("null", "blank", "editable"):
            kwargs.pop(key, None)
        return name, path, args, kwargs

    @staticmethod
    def text_of(value: Any) -> str | None:
        """The canonical text of ``value``, or ``None`` where there is none."""
        try:
            return canonical_json(value).decode("utf-8")
        except (CanonicalError, UnicodeDecodeError):
            return None

    def text_of_row(self, row: dict[str, Any]) -> str | None:
        """The text for a row given as a dict of attribute values (bulk inserts)."""
        return self.text_of(row[self.source])

    def pre_save(self, model_instance: models.Model, add: bool) -> Any:
        value = getattr(model_instance, self.attname)
        if value is None and add:
            value = self.text_of(getattr(model_instance, self.source))
            setattr(model_instance, self.attname, value)
        return value
