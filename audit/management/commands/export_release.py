"""python manage.py export_release --study SLUG --name NAME --out DIR [--withhold-texts]"""

from __future__ import annotations

import shutil
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from audit.archive.models import Study
from audit.releases import formats as rf
from audit.releases.models import Release, ReleaseStatus
from audit.releases.services import ReleaseRefused, release_build, release_dir


class Command(BaseCommand):
    help = (
        "Build release NAME of a study (if it does not exist yet) under RELEASES_ROOT and "
        "write its bundle into DIR (new or empty). A release is immutable: an existing ready "
        "release is copied as it was built, after checking every file's SHA-256."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--study", required=True, help="the study's slug")
        parser.add_argument("--name", required=True, help="the release's name (a slug)")
        parser.add_argument("--out", required=True, type=Path, help="folder to write into")
        parser.add_argument(
            "--withhold-texts",
            action="store_true",
            help="leave answer and source texts out (licensing): digests, spans and the "
            "SHA-256 of each quote stay, and the datasheet counts what was withheld",
        )

    def handle(self, *args: object, **options: object) -> None:
        out = Path(str(options["out"]))
        name: str = options["name"]  # type: ignore[assignment]
        study = Study.objects.select_related("codebook").filter(slug=options["study"]).first()
        if study is None:
            raise CommandError(f"no study with slug {options['study']!r}")
        if out.exists() and (not out.is_dir() or any(out.iterdir())):
            raise CommandError(f"{out} exists and is not an empty folder")
        release = Release.objects.filter(study=study, name=name).first()
        if release is None:
            try:
                release = release_build(
                    study=study, name=name, withhold_texts=bool(options["withhold_texts"])
                )
            except ReleaseRefused as exc:
                raise CommandError(f"{exc.code}: {exc.message}") from exc
            built = True
        else:
            if options["withhold_texts"]:
                raise CommandError(
                    f"release {name!r} exists; its options were fixed when it was built"
                )
            built = False
        if release.status != ReleaseStatus.READY:
            raise CommandError(
                f"release {name!r} is {release.status}"
                + (f": {release.error}" if release.error else "")
            )
        source = release_dir(study=study, name=name)
        out.mkdir(parents=True, exist_ok=True)
        for file_name, info in sorted(release.files.items()):
            path = rf.bundle_file(source, file_name)
            if rf.file_sha256(path) != info["sha256"]:
                raise CommandError(
                    f"{file_name} of release {name!r} changed on disk since it was built "
                    f"(under {settings.RELEASES_ROOT}); not copied"
                )
            shutil.copyfile(path, rf.bundle_file(out, file_name))
        self.stdout.write(
            f"{'built' if built else 'copied'} release {study.slug}/{name} "
            f"(stage {release.stage or 'none'}): {len(release.files)} files into {out}; "
            f"SHA256SUMS {release.manifest_sha256}"
        )
