"""Take the screenshots of the annotation forms into docs/screenshots/.

    python tests/browser/take_screenshots.py

Runs the screenshot tests (tests/browser/test_screenshots.py) against a throw-away test
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
    os.environ["SCREENSHOTS"] = "1"
    sys.exit(
        pytest.main(
            ["-q", "-p", "no:cacheprovider", str(Path(__file__).with_name("test_screenshots.py"))]
        )
    )
