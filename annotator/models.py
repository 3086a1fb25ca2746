"""The ``annotator`` app's models, for Django's app registry only.

Each capability keeps its models in its own ``models.py`` (app label ``annotator`` and
table names unchanged); code imports them from there, never from here. Migration 0002
names ``annotator.models._new_pseudonym``, so it stays importable here.
"""

from annotator.labelling.models import Assignment, Draft, Label, LabelKind
from annotator.memberships.models import Membership, Role, _new_pseudonym
from annotator.quality.models import GoldItem, KeptDraft, QualityPlan

__all__ = [
    "Assignment",
    "Draft",
    "GoldItem",
    "KeptDraft",
    "Label",
    "LabelKind",
    "Membership",
    "QualityPlan",
    "Role",
    "_new_pseudonym",
]
