"""Run the conformance suite once per test session; it needs no database."""

from __future__ import annotations

from pathlib import Path

import pytest

from audit.conformance import SuiteResult, render_files, run_suite, write_suite


@pytest.fixture(scope="session")
def suite() -> SuiteResult:
    return run_suite()


@pytest.fixture(scope="session")
def suite_files(suite: SuiteResult) -> dict[str, bytes]:
    return render_files(suite)


@pytest.fixture(scope="session")
def written_twice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two independent runs, each written into its own directory."""
    first = tmp_path_factory.mktemp("conformance-first")
    second = tmp_path_factory.mktemp("conformance-second")
    write_suite(first)
    write_suite(second)
    return first, second
