"""Forms of the study page, the codebooks page and the new-study page."""

from __future__ import annotations

from typing import Any

from django import forms

from audit.archive.models import Codebook


class ImportForm(forms.Form):
    file = forms.FileField(
        label="Observation file (JSON Lines)",
        help_text="Line 1 is the header; every other line one observation. "
        "Nothing is imported unless every line is valid.",
    )


class CodebookUploadForm(forms.Form):
    file = forms.FileField(
        label="Codebook file (JSON)",
        help_text="A codebook of format 1 or 2 (docs/formats.md). Nothing is installed "
        "unless the whole file is valid; every problem is listed.",
        widget=forms.ClearableFileInput(attrs={"accept": ".json,application/json"}),
    )


class StudyCreateForm(forms.Form):
    slug = forms.SlugField(
        label="Slug",
        max_length=80,
        help_text="The study's name in addresses and commands: letters, digits, hyphens.",
    )
    title = forms.CharField(label="Title", max_length=200)
    description = forms.CharField(
        label="Description", required=False, widget=forms.Textarea(attrs={"rows": 3})
    )
    codebook = forms.ModelChoiceField(
        label="Codebook version",
        queryset=Codebook.objects.none(),
        empty_label=None,
        help_text="What is labelled and how. Once a study uses a codebook version, that "
        "version never changes.",
    )
    overlap = forms.IntegerField(
        label="Overlap k",
        min_value=1,
        max_value=20,
        initial=2,
        help_text="How many distinct annotators label each unit (2 or more to measure "
        "reliability).",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["codebook"]
        field.queryset = Codebook.objects.order_by("name", "version")
        field.label_from_instance = lambda row: (
            f"{row.name} {row.version} — {row.title} ({row.get_unit_display()})"
        )
