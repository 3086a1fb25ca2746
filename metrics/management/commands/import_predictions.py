"""Import a prediction file into a frozen study and print its scores (or every bad line)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.archive.models import Study
from metrics.services import predictions_import


class Command(BaseCommand):
    help = (
        "Import a prediction file (docs/predictions-format.md) into a frozen study: checked "
        "whole, imported atomically, scored against the final labels."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("study", help="The study's slug.")
        parser.add_argument("file", type=Path, help="The prediction file (JSON Lines).")

    def handle(self, *args: Any, **options: Any) -> None:
        study = Study.objects.select_related("codebook").filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study {options['study']!r}")
        path: Path = options["file"]
        try:
            stream = path.open("rb")
        except OSError as exc:
            raise CommandError(f"cannot read {path}: {exc.strerror}") from None
        with stream:
            outcome = predictions_import(study=study, data=stream, file_name=path.name)
        if outcome.prediction_set is None:
            for problem in outcome.problems:
                self.stderr.write(f"line {problem.line}: {problem.reason}: {problem.message}")
            raise CommandError(
                f"{outcome.error_count} problem(s) in {path.name}: nothing was imported"
            )
        prediction_set = outcome.prediction_set
        result = prediction_set.scores or {}
        verb = "imported" if outcome.created else "already imported (unchanged)"
        self.stdout.write(
            f"{verb}: prediction set {prediction_set.pk} ({prediction_set.kind} "
            f"{prediction_set.name} {prediction_set.version}, field {prediction_set.field}): "
            f"{result.get('predicted')} units, {result.get('scored')} scored, "
            f"{result.get('awaiting_final')} awaiting a final label"
        )
        scores = result.get("scores")
        if not scores:
            return
        for name, key in (
            ("accuracy", "accuracy"),
            ("kappa", "kappa"),
            ("alpha (accepted error)", "accepted_error"),
            ("beta (false block)", "false_block"),
        ):
            estimate = scores.get(key)
            if estimate is None:
                continue
            self.stdout.write(f"  {name}: {_text(estimate)}")


def _text(estimate: dict[str, Any]) -> str:
    value = estimate.get("value")
    if value is None:
        return "undefined"
    low, high = estimate.get("low"), estimate.get("high")
    interval = "" if low is None else f" [{low:.3f}, {high:.3f}]"
    counts = (
        ""
        if estimate.get("denominator") is None
        else (f" ({estimate['numerator']}/{estimate['denominator']})")
    )
    return f"{value:.3f}{interval}{counts}"
