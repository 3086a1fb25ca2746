"""The record contract: pure Python, no Django (DESIGN.md, "Contract validation").

Canonical serialization and digests, codebooks, the record checker, the endpoint and
policy functions and the observation-file parser. Everything here works on plain values
and can be used and tested without a database.
"""

from __future__ import annotations

from audit.contract.codebook import Codebook, codebook_from_dict, load_codebook, load_codebooks
from audit.contract.endpoint import (
    policy_action,
    priority,
    resolve_complete_case,
    resolve_short_circuit,
    summarize_supported,
)
from audit.contract.errors import ContractError
from audit.contract.observations import (
    LineError,
    ObservationFile,
    ObservationHeader,
    check_observation,
    iter_lines,
    observation_tuples,
    parse_observation_file,
)
from audit.contract.record import CheckResult, check_record, check_span

#: Version of the checker, recorded with every ledger entry and conformance run.
CHECKER_VERSION = "1.0.0"

__all__ = [
    "CHECKER_VERSION",
    "CheckResult",
    "Codebook",
    "ContractError",
    "LineError",
    "ObservationFile",
    "ObservationHeader",
    "check_observation",
    "check_record",
    "check_span",
    "codebook_from_dict",
    "iter_lines",
    "load_codebook",
    "load_codebooks",
    "observation_tuples",
    "parse_observation_file",
    "policy_action",
    "priority",
    "resolve_complete_case",
    "resolve_short_circuit",
    "summarize_supported",
]
