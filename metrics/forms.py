"""Forms of the metrics pages."""

from django import forms


class PredictionFileForm(forms.Form):
    file = forms.FileField(
        label="Prediction file (JSON Lines)",
        help_text="Line 1 is the header (codebook, field, predictor); every other line one "
        "unit's predicted value. Nothing is imported unless every line is valid.",
    )
