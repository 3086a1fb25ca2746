"""Forms of the partitions page. They read input; the rules live in audit.partitions.rules and
the writes in audit.partitions.services."""

from __future__ import annotations

import json
import re
from typing import Any

from django import forms

from audit.archive.models import Codebook, Study
from audit.contract import codes
from audit.contract.texts import MAX_DEPTH, text_problem
from audit.partitions.rules import FIELD_LABELS, GROUP_FIELDS, Rule, ShareRule, ValuesRule

KIND_VALUES = "values"
KIND_SHARE = "share"
VALUE_SEPARATORS = re.compile(r"[\n,]")


class RuleForm(forms.Form):
    field = forms.ChoiceField(
        label="Split by",
        choices=[(name, FIELD_LABELS[name].capitalize()) for name in GROUP_FIELDS],
        initial="domain",
    )
    kind = forms.ChoiceField(
        label="Send to test",
        choices=[
            (KIND_VALUES, "the values listed below"),
            (KIND_SHARE, "a seeded share of the values"),
        ],
        initial=KIND_VALUES,
    )
    values = forms.CharField(
        label="Values to test",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false", "autocomplete": "off"}),
        help_text="One per line, or separated by commas. Every other unit goes to calibration.",
    )
    share = forms.DecimalField(
        label="Share of the values to test (%)",
        required=False,
        min_value=0,
        max_value=100,
        decimal_places=2,
        initial=20,
        help_text="Of the distinct values (groups), not of the units.",
    )
    seed = forms.CharField(
        label="Seed",
        required=False,
        max_length=100,
        initial="1",
        help_text="The same seed always gives the same split.",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        name, kind = data.get("field"), data.get("kind")
        if not name or not kind:
            return data
        if kind == KIND_VALUES:
            values = {v.strip() for v in VALUE_SEPARATORS.split(data.get("values") or "")}
            values.discard("")
            if not values:
                self.add_error("values", "List at least one value to send to test.")
                return data
            data["rule"] = ValuesRule(field=name, test_values=frozenset(values))
        else:
            if data.get("share") is None:
                self.add_error("share", "Give the share of values to send to test.")
                return data
            data["rule"] = ShareRule(
                field=name, share=float(data["share"]) / 100, seed=data.get("seed") or ""
            )
        return data

    @property
    def rule(self) -> Rule:
        return self.cleaned_data["rule"]


class PartitionFileForm(forms.Form):
    file = forms.FileField(
        label="Partition file (CSV or JSON Lines)",
        help_text="CSV: digest,partition (header optional). JSON Lines: "
        '{"digest": "…", "partition": "test"}. A digest is a unit or tuple digest. '
        "Nothing is applied unless every line is good.",
    )


class ThresholdsForm(forms.Form):
    thresholds = forms.CharField(
        label="Operating thresholds (JSON object of named numbers)",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text='For example {"priority_review": 0.6}. reliability_tentative and '
        "reliability_firm (alphas between 0 and 1, by default 0.667 and 0.8) are what the "
        "validation gate compares every field's Krippendorff's alpha with. Frozen with the "
        "study.",
    )

    def clean_thresholds(self) -> Any:
        text = self.cleaned_data["thresholds"]
        try:
            value = json.loads(text)
        except RecursionError:
            raise forms.ValidationError(
                f"thresholds nest arrays or objects more than {MAX_DEPTH} levels deep",
                code=codes.TOO_DEEP,
            ) from None
        except ValueError as exc:
            raise forms.ValidationError(
                f"Not valid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno}).",
                code="invalid_json",
            ) from exc
        problem = text_problem(value, "thresholds")
        if problem is not None:
            raise forms.ValidationError(problem.message, code=problem.code)
        return value


class FreezeForm(forms.Form):
    """Freezing is irreversible, so the researcher types the study's slug to confirm."""

    confirm = forms.CharField(
        label="Type the study's slug to confirm",
        max_length=80,
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.study = study

    def clean_confirm(self) -> str:
        typed = self.cleaned_data["confirm"].strip()
        if typed != self.study.slug:
            raise forms.ValidationError(
                f"Type {self.study.slug} exactly to freeze this study.", code="not_confirmed"
            )
        return typed


class StudyVersionForm(forms.Form):
    slug = forms.SlugField(label="Slug of the new version", max_length=80)
    title = forms.CharField(label="Title", max_length=200)
    codebook = forms.ModelChoiceField(
        label="Codebook version",
        queryset=Codebook.objects.none(),
        empty_label=None,
        help_text="The same codebook, or a newer version of it.",
    )

    def __init__(self, *args: Any, study: Study, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["codebook"].queryset = Codebook.objects.filter(
            name=study.codebook.name, unit=study.codebook.unit
        ).order_by("-created_at", "-id")
        self.fields["codebook"].initial = study.codebook_id
