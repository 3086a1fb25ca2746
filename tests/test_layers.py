"""The import contracts of pyproject.toml hold, and they catch what they are for.

Each test copies the four packages and pyproject.toml to a temporary folder, adds one
import that goes against the direction (or closes a loop), runs ``lint-imports`` there and
expects the contract that forbids it to be reported broken. No database: pure file work
and one subprocess each.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("audit", "annotator", "metrics", "config")

ACYCLIC = "No module imports another that imports it back, through any number of modules"
AUDIT_LAYERS = "audit: in every capability, interfaces -> services -> selectors -> models -> pure"
CAPABILITIES = "Between capabilities, services and selectors import downwards only (README)"
BELOW_INTERFACES = "Below the interfaces nothing imports an interface, a jobs module or config"
REGISTRY = "Code imports models from their capability, never from an app's registry module"
ARCHIVE_CORE = "The archive's core knows no person, label, ledger, partition, release or report"
PEOPLE = "People's work knows nothing of partitions, releases or reports"


def lint_imports_command() -> list[str]:
    script = Path(sys.executable).with_name("lint-imports")
    found = str(script) if script.exists() else shutil.which("lint-imports")
    assert found, "lint-imports is not installed (pip install -e '.[dev]')"
    return [found, "--no-cache"]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    tree = tmp_path_factory.mktemp("layers-pristine")
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tree / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tree / "pyproject.toml")
    return tree


@pytest.fixture
def tree(pristine, tmp_path) -> Path:
    copy = tmp_path / "tree"
    shutil.copytree(pristine, copy)
    return copy


def lint(tree: Path) -> tuple[int, str]:
    done = subprocess.run(
        lint_imports_command(),
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def broken(output: str) -> set[str]:
    """Names of the contracts the summary reports BROKEN (one line each; import-linter
    may wrap a long name, so the whole summary is unwrapped first)."""
    summary = output.split("Contracts:")[0].split("-------------------------------------")[-1]
    text = " ".join(summary.split())
    names = [
        ACYCLIC,
        CAPABILITIES,
        AUDIT_LAYERS,
        BELOW_INTERFACES,
        REGISTRY,
        ARCHIVE_CORE,
        PEOPLE,
    ]
    return {name for name in names if f"{name} BROKEN" in text}


def append(tree: Path, module: str, line: str) -> None:
    path = tree / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text(encoding="utf-8") + "\n" + line + "\n", encoding="utf-8")


def test_the_tree_as_it_is_keeps_every_contract(pristine):
    code, output = lint(pristine)
    assert code == 0, output
    assert "0 broken" in output


def test_a_model_importing_a_page_breaks_the_layers(tree):
    append(tree, "audit.archive.models", "from audit.archive import views as _views  # noqa")
    code, output = lint(tree)
    assert code != 0
    assert {AUDIT_LAYERS, ACYCLIC} <= broken(output), output


def test_a_selector_importing_a_service_of_its_capability_breaks_the_layers(tree):
    append(tree, "audit.ledger.selectors", "from audit.ledger import services as _services  # noqa")
    code, output = lint(tree)
    assert code != 0
    assert AUDIT_LAYERS in broken(output), output


def test_a_lower_capability_reading_a_higher_one_breaks_the_capability_order(tree):
    # No loop (reports read partitions' selectors, not their services), yet upwards.
    append(tree, "audit.partitions.services", "from metrics import selectors as _reports  # noqa")
    code, output = lint(tree)
    assert code != 0
    assert broken(output) == {CAPABILITIES}, output


def test_a_service_importing_a_jobs_module_breaks_the_contracts(tree):
    append(tree, "audit.releases.services", "from metrics import jobs as _jobs  # noqa")
    code, output = lint(tree)
    assert code != 0
    assert BELOW_INTERFACES in broken(output), output


def test_a_loop_across_apps_breaks_the_acyclic_contract_even_when_deferred(tree):
    # metrics.selectors <- audit.ledger.services already; the way back closes a loop
    # through two apps. Inside a function, as the old code dodged its cycles.
    append(
        tree,
        "metrics.selectors",
        "def _gate():\n    from audit.ledger.services import gate_recompute\n\n"
        "    return gate_recompute\n",
    )
    code, output = lint(tree)
    assert code != 0
    assert ACYCLIC in broken(output), output
    assert "metrics.selectors -> audit.ledger.services" in " ".join(output.split())


def test_importing_the_registry_module_breaks_its_contract(tree):
    append(tree, "audit.partitions.services", "from audit.models import Study as _Study  # noqa")
    code, output = lint(tree)
    assert code != 0
    assert REGISTRY in broken(output), output


def test_the_archive_core_knowing_labels_breaks_its_contract(tree):
    append(
        tree,
        "audit.archive.selectors",
        "from annotator.labelling.models import Label as _Label  # noqa",
    )
    code, output = lint(tree)
    assert code != 0
    assert ARCHIVE_CORE in broken(output), output


def test_people_s_work_reading_reports_breaks_its_contract(tree):
    append(
        tree,
        "annotator.labelling.selectors",
        "from metrics.models import StudyReport as _R  # noqa",
    )
    code, output = lint(tree)
    assert code != 0
    assert PEOPLE in broken(output), output
