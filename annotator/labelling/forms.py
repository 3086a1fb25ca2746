"""Input parsing and page data for the annotation pages.

The forms only read the request: the rules on annotations live in the record contract,
called by ``annotator.labelling.services``. The ``*_for_page`` helpers shape what a page may show an
annotator — never a weight, a priority or anything about other people.
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


def annotation_for_page(annotation: dict[str, Any] | None) -> dict[str, Any] | None:
    """A stored or submitted annotation as the form edits it: evidence as plain values (the
    codebook's weights stay on the server) and without the fields only the server sets."""
    if not isinstance(annotation, dict):
        return None
    shown = {
        key: value
        for key, value in annotation.items()
        if key not in {"kind", "annotator", "assisted"}
    }
    evidence = shown.get("evidence")
    if isinstance(evidence, dict):
        shown["evidence"] = {
            key: value.get("value") if isinstance(value, dict) else value
            for key, value in evidence.items()
        }
    return shown


def codebook_for_page(definition: dict[str, Any]) -> dict[str, Any]:
    """What the form shows of a codebook: definitions, labels and shortcuts. Evidence
    weights are left out: they make the review priority, which annotators never see."""
    page: dict[str, Any] = {
        "name": definition.get("name"),
        "version": definition.get("version"),
        "unit": definition.get("unit"),
        "title": definition.get("title"),
        "description": definition.get("description"),
    }
    if definition.get("unit") == "tuple":
        page["predicates"] = [
            {
                "key": item["key"],
                "label": item.get("label", item["key"]),
                "definition": item.get("definition", ""),
                "shortcut": item.get("shortcut"),
            }
            for item in definition.get("predicates", [])
        ]
        support = definition.get("passage_support") or {}
        page["passage_support"] = {
            "label": support.get("label", "Passage support"),
            "definition": support.get("definition", ""),
        }
        page["source_roles"] = [
            {
                "key": item["key"],
                "label": item.get("label", item["key"]),
                "look_for": item.get("look_for", ""),
            }
            for item in definition.get("source_roles", [])
        ]
        page["evidence_dimensions"] = [
            {
                "key": item["key"],
                "label": item.get("label", item["key"]),
                "definition": item.get("definition", ""),
            }
            for item in definition.get("evidence_dimensions", [])
        ]
    else:
        page["verdicts"] = [
            {
                "key": item["key"],
                "label": item.get("label", item["key"]),
                "definition": item.get("definition", ""),
            }
            for item in definition.get("verdicts", [])
        ]
        page["claim_kinds"] = [
            {
                "key": item["key"],
                "label": item.get("label", item["key"]),
                "definition": item.get("definition", ""),
            }
            for item in definition.get("claim_kinds", [])
        ]
        page["reasons"] = definition.get("reasons", "required")
    return page


def error_sentence(form: forms.Form) -> tuple[str, str]:
    """A form's first error as (code, sentence)."""
    for field, errors in form.errors.as_data().items():
        for error in errors:
            message = " ".join(error.messages)
            return (error.code or "invalid", f"{field}: {message}")
    return ("invalid", "the request is invalid")
