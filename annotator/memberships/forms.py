"""Forms of the study people page: add a member, set the overlap k."""

from django import forms
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from annotator.memberships.models import Role


class MemberAddForm(forms.Form):
    """Give an existing account a role in a study. The account is looked up here; the
    membership itself is written by ``annotator.memberships.services.membership_add``."""

    username = forms.CharField(
        label="Username",
        max_length=150,
        help_text="The account must exist already; an admin creates accounts.",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false"}),
    )
    role = forms.ChoiceField(label="Role", choices=Role.choices, initial=Role.ANNOTATOR)

    def clean_username(self) -> AbstractBaseUser:
        username = self.cleaned_data["username"].strip()
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise forms.ValidationError(
                f"There is no account with the username “{username}”. "
                "Check the spelling, or ask an admin to create the account first.",
                code="unknown_user",
            )
        if not user.is_active:
            raise forms.ValidationError(
                f"The account “{username}” is deactivated.", code="inactive_user"
            )
        return user


class OverlapForm(forms.Form):
    """k, the number of distinct annotators per unit; ``study_overlap_set`` decides the
    allowed range and its refusal is shown on the field."""

    overlap = forms.IntegerField(
        label="Overlap k (annotators per unit)",
        help_text="Lowering k never takes back a slot already handed out.",
    )
