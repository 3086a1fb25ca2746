"""Take the screenshots of the annotation forms into docs/screenshots/.

    python tests/browser/take_screenshots.py

Runs tests/browser/screenshots.py (not collected by a test run) against a throw-away test
database with the demo loaded, in Debian's headless Chromium at 1440×900.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

if __name__ == "__main__":
    os.chdir(ROOT)
    sys.path.insert(0, str(ROOT))
    sys.exit(
        pytest.main(
            ["-q", "-p", "no:cacheprovider", str(Path(__file__).with_name("screenshots.py"))]
        )
    )
