"""Verifying a release bundle anywhere: recompute its SHA256SUMS (changed, missing or
extra files) and re-check every record against the bundled codebook with the record
checker. Pure, no Django (``manage.py verify_release`` is its command)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from audit.contract import check_record, codebook_from_dict
from audit.contract.errors import ContractError
from audit.releases.formats import CODEBOOK, MANIFEST, RECORDS, file_sha256, parse_manifest


@dataclass
class Verification:
    changed: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    manifest_problems: list[str] = field(default_factory=list)
    bad_records: list[tuple[int, str, str]] = field(default_factory=list)
    records_checked: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.changed or self.missing or self.extra or self.manifest_problems or self.bad_records
        )


def verify_bundle(directory: Path, *, check_records: bool = True) -> Verification:
    """Recompute ``SHA256SUMS`` (every changed, missing or extra file) and re-check every
    record line against the bundled codebook with the record checker."""
    result = Verification()
    directory = Path(directory)
    manifest = directory / MANIFEST
    if not manifest.is_file():
        result.missing.append(MANIFEST)
        return result
    sums, result.manifest_problems = parse_manifest(manifest.read_text(encoding="utf-8"))
    present = sorted(p.name for p in directory.iterdir() if p.name != MANIFEST)
    for name in sorted(sums):
        path = directory / name
        if not path.is_file():
            result.missing.append(name)
        elif file_sha256(path) != sums[name]:
            result.changed.append(name)
    result.extra = [name for name in present if name not in sums]
    if check_records and (directory / RECORDS).is_file() and (directory / CODEBOOK).is_file():
        _verify_records(directory, result)
    return result


def _verify_records(directory: Path, result: Verification) -> None:
    try:
        definition = json.loads((directory / CODEBOOK).read_text(encoding="utf-8"))
        codebook = codebook_from_dict(definition)
    except (ValueError, ContractError) as exc:
        result.bad_records.append((0, "invalid_codebook", f"{CODEBOOK}: {exc}"))
        return
    registry = {(codebook.name, codebook.version): codebook}
    with (directory / RECORDS).open("rb") as stream:
        for number, record in _numbered_json(stream, result):
            if number == 1:
                if not isinstance(record, dict) or record.get("claimgate") != "records":
                    result.bad_records.append(
                        (1, "invalid_header", "line 1 is not a records header")
                    )
                    return
                if record.get("texts_withheld"):
                    result.notes.append(
                        "snapshot texts are withheld in this release: the records cannot be "
                        "re-checked without them (their digests and the quotes' SHA-256 stay)"
                    )
                    return
                continue
            checked = check_record(record, registry)
            result.records_checked += 1
            if not checked.ok:
                result.bad_records.append(
                    (number, checked.reason or "refused", checked.message or "refused")
                )


def _numbered_json(stream: IO[bytes], result: Verification) -> Iterator[tuple[int, Any]]:
    for number, line in enumerate(stream, start=1):
        try:
            yield number, json.loads(line)
        except (ValueError, UnicodeDecodeError) as exc:
            result.bad_records.append((number, "malformed_json", str(exc)))
