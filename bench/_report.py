"""Write a benchmark's figures into its own section of docs/benchmarks.md."""

from __future__ import annotations

import os
import platform
import re
import sys
from datetime import UTC, datetime
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
TITLE = (
    "# Benchmarks\n\nFigures written by the `bench/` scripts; "
    "each section says how to reproduce it.\n"
)


def machine() -> str:
    return (
        f"{os.cpu_count()} cores, Python {platform.python_version()}, "
        f"{platform.machine()}, {datetime.now(UTC):%Y-%m-%d}"
    )


def write_section(heading: str, body: str) -> None:
    """Replace (or append) the ``## heading`` section of docs/benchmarks.md."""
    text = BENCHMARKS.read_text(encoding="utf-8") if BENCHMARKS.exists() else TITLE
    section = f"## {heading}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(heading)}\n.*?(?=^## |\Z)", re.M | re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: section + "\n", text, count=1).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    BENCHMARKS.write_text(text, encoding="utf-8")
    print(f"wrote section {heading!r} of {BENCHMARKS.relative_to(Path.cwd())}", file=sys.stderr)
