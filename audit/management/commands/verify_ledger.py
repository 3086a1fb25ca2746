"""python manage.py verify_ledger [--expect HEAD|FILE] [--write-head FILE]: re-walk the
claim ledger's hash chain, compare it with a head kept elsewhere, and match every label to
its ledger entry."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.contract.ledger import Head, HeadError, head_from_json, head_parse
from audit.ledger.chain import (
    ledger_head,
    ledger_head_check,
    ledger_labels_verify,
    ledger_verify,
)
from audit.releases.formats import STAGE


def expected_head(value: str) -> Head:
    """``SEQ:HASH``, or a file holding it: a text file with ``SEQ:HASH``, a JSON file (a
    release's ``stage.json``, or ``{"seq", "entry_hash"}``), or a release folder (its
    ``stage.json``)."""
    path = Path(value)
    if not path.exists():
        if ":" in value:
            return head_parse(value, where="--expect")
        raise HeadError(f"--expect: {value} is neither SEQ:HASH nor an existing file")
    if path.is_dir():
        path = path / STAGE
        if not path.is_file():
            raise HeadError(f"--expect: the folder {value} holds no {STAGE} (not a release)")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HeadError(f"--expect: {path} cannot be read ({exc})") from exc
    if text.lstrip().startswith("{"):
        try:
            document = json.loads(text)
        except json.JSONDecodeError as exc:
            raise HeadError(f"--expect: {path} is not JSON ({exc})") from exc
        return head_from_json(document, where=str(path))
    return head_parse(text, where=str(path))


class Command(BaseCommand):
    help = (
        "Check the claim ledger's hash chain, report the first entry that was removed, "
        "reordered or edited; with --expect, check that the chain still passes through a "
        "head kept outside the database (SEQ:HASH, a file holding it, or a release); "
        "rebuild every label's record and match it to its ledger entry. Exit 1 on any "
        "problem."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--expect",
            metavar="HEAD|FILE",
            help="a head kept elsewhere: SEQ:HASH, a file holding it (as --write-head "
            "writes it), a release's stage.json or a release folder",
        )
        parser.add_argument(
            "--write-head",
            metavar="FILE",
            help="after a clean check, write the current head (SEQ:HASH) to FILE, for the "
            "next --expect; keep FILE outside the database's machine",
        )

    def handle(self, *args: object, **options: object) -> None:
        expected = None
        if options["expect"]:
            try:
                expected = expected_head(str(options["expect"]))
            except HeadError as exc:
                raise CommandError(f"{exc} [{exc.code}]") from exc
        head = ledger_head()
        failed = False

        checked, problem = ledger_verify()
        if problem is None:
            self.stdout.write(f"ledger ok: {checked} entries, chain intact, head {head}")
        else:
            failed = True
            self.stderr.write(
                f"ledger BROKEN at entry {problem.seq}: {problem.kind}: {problem.message} "
                f"({checked} entries verified before it)"
            )

        if expected is not None:
            mismatch = ledger_head_check(expected=expected)
            if mismatch is None:
                self.stdout.write(f"head ok: the chain passes through {expected}")
            else:
                failed = True
                self.stderr.write(f"ledger head DOES NOT MATCH the copy kept elsewhere: {mismatch}")

        labels = ledger_labels_verify()
        for kind, message in labels.problems:
            self.stderr.write(f"label {kind.upper()}: {message}")
        if labels.problem_count > len(labels.problems):
            self.stderr.write(
                f"… and {labels.problem_count - len(labels.problems)} more label problems"
            )
        if labels.problem_count:
            failed = True
        else:
            self.stdout.write(
                f"labels ok: {labels.labels} labels rebuild to their record digests; "
                f"{labels.entries} ledger entries each name a label"
                + (
                    f"; {labels.awaiting} labels await their outcome (their job has not run)"
                    if labels.awaiting
                    else ""
                )
            )

        if failed:
            sys.exit(1)
        if options["write_head"]:
            target = Path(str(options["write_head"]))
            partial = target.with_name(f".{target.name}.partial")
            partial.write_text(f"{head}\n", encoding="utf-8")
            os.replace(partial, target)
            self.stdout.write(f"head {head} written to {target}")
