"""Input parsing and page data for the annotation pages.

The forms only read the request: the rules on annotations live in the record contract,
called by ``annotator.labelling.services``; what a page shows of a codebook comes from its
engine fields (``annotator.labelling.fields_page``).
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.validators import ProhibitNullCharactersValidator

from audit.contract import codes
from audit.contract.errors import ContractError
from audit.contract.texts import bad_text, loads_checked

MAX_JSON_CHARS = 2_000_000


def _no_bad_text(value: str) -> None:
    problem = bad_text(value, "the text")
    if problem is not None:
        raise forms.ValidationError(problem.message, code=problem.code)


class TextField(forms.CharField):
    """A free-text field whose NUL or unpaired surrogate is refused as ``invalid_text``,
    the code the API and the services use (Django's own check would say
    ``null_characters_not_allowed``)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [
            v for v in self.validators if not isinstance(v, ProhibitNullCharactersValidator)
        ]
        self.validators.append(_no_bad_text)


def _json_object(raw: str, what: str) -> dict[str, Any]:
    if len(raw) > MAX_JSON_CHARS:
        raise forms.ValidationError(f"the {what} is too large", code="too_large")
    try:
        value = loads_checked(raw)
    except ContractError as exc:
        if exc.code != codes.MALFORMED_JSON:  # invalid_text, too_deep: named as such
            raise forms.ValidationError(f"the {what}: {exc.message}", code=exc.code) from None
        raise forms.ValidationError(f"the {what} is {exc.message}", code="bad_json") from None
    if not isinstance(value, dict):
        raise forms.ValidationError(f"the {what} must be a JSON object", code="not_an_object")
    return value


class DraftForm(forms.Form):
    """Autosave: the work in progress and the draft version the client last saw."""

    payload = TextField(strip=False)
    version = forms.IntegerField(required=False, min_value=0)

    def clean_payload(self) -> dict[str, Any]:
        return _json_object(self.cleaned_data["payload"], "draft")


class SubmitForm(forms.Form):
    """A submission: the annotation, the client's id for it and the revision it edits."""

    annotation = TextField(strip=False)
    client_submission_id = forms.UUIDField()
    parent_digest = forms.RegexField(regex=r"^[0-9a-f]{64}$", required=False)

    def clean_annotation(self) -> dict[str, Any]:
        return _json_object(self.cleaned_data["annotation"], "annotation")

    def clean_parent_digest(self) -> str | None:
        return self.cleaned_data.get("parent_digest") or None

    @property
    def raw_annotation(self) -> dict[str, Any] | None:
        """The annotation as sent, when it parses, even if another field is invalid."""
        try:
            return _json_object(self.data.get("annotation", ""), "annotation")
        except forms.ValidationError:
            return None


def error_sentence(form: forms.Form) -> tuple[str, str]:
    """A form's first error as (code, sentence)."""
    for field, errors in form.errors.as_data().items():
        for error in errors:
            message = " ".join(error.messages)
            return (error.code or "invalid", f"{field}: {message}")
    return ("invalid", "the request is invalid")
