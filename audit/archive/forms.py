"""Forms of the study page."""

from django import forms


class ImportForm(forms.Form):
    file = forms.FileField(
        label="Observation file (JSON Lines)",
        help_text="Line 1 is the header; every other line one observation. "
        "Nothing is imported unless every line is valid.",
    )
