"""The conformance suite (seed §IV), pure Python: no Django, DRF or Celery.

``run_suite()`` runs it in memory; ``write_suite(out_dir)`` also writes every output file
and returns the summary; ``python -m audit.conformance --out DIR`` does the same from a
shell and exits 0 only when every number equals the specification's (``EXPECTED``).
"""

from __future__ import annotations

from audit.conformance.expected import EXPECTED, SUITE_VERSION, compare
from audit.conformance.outputs import render_files, write_files, write_suite
from audit.conformance.suite import SuiteResult, run_suite

__all__ = [
    "EXPECTED",
    "SUITE_VERSION",
    "SuiteResult",
    "compare",
    "render_files",
    "run_suite",
    "write_files",
    "write_suite",
]
