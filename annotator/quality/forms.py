"""Forms of the quality page: the plan, marking gold units, and a key file. Each only
parses; the rules are the services' (annotator.quality.services)."""

from __future__ import annotations

from django import forms


class PlanForm(forms.Form):
    gold_rate = forms.FloatField(
        label="Gold rate",
        min_value=0,
        max_value=0.5,
        help_text="Share of each annotator's items (after qualification) that are gold "
        "units, 0 to 0.5; 0 hands out no gold.",
    )
    qualification_size = forms.IntegerField(
        label="Qualification set size n",
        min_value=0,
        help_text="An annotator's first n items are qualification units; 0: no qualification.",
    )
    qualification_threshold = forms.FloatField(
        label="Qualification threshold",
        min_value=0,
        max_value=1,
        help_text="The accuracy on the qualification set needed for real units, 0 to 1.",
    )


class GoldFromFinalsForm(forms.Form):
    units = forms.CharField(
        label="Unit digests",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text="One digest per line (or separated by spaces or commas); each unit's "
        "final record (adjudicated, or the consensus of an agreed unit) becomes its key.",
    )
    qualification = forms.BooleanField(
        label="Qualification units", required=False, help_text="Add them to the qualification set."
    )

    def clean_units(self) -> list[str]:
        text = self.cleaned_data["units"].replace(",", " ")
        digests = [part for part in text.split() if part]
        if not digests:
            raise forms.ValidationError("Give at least one unit digest.", code="empty")
        return digests


class KeyFileForm(forms.Form):
    file = forms.FileField(
        label="Key file (JSON Lines)",
        help_text='One unit per line: {"unit": "the unit digest", "key": {"I": 1, …}, '
        '"qualification": false}. One bad line refuses the whole file.',
    )
