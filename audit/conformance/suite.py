"""The conformance suite (seed §IV): run the checker over the exhaustive state space, the
baselines, ablations, controlled transitions, serialization and structural mutations.

Every number in the summary is counted from what the checker (``check_record``) or its
resolver returned; the expected numbers live in :mod:`audit.conformance.expected` and are
only compared with, never copied into, the summary.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from audit.conformance import baselines as rules
from audit.conformance.checker import Checker, checker_version, resolve_complete_case
from audit.conformance.codebook import (
    D_Q,
    codebook_without_weight,
    conformance_codebook,
    dimension_weights,
)
from audit.conformance.expected import EXPECTED, SUITE_VERSION, compare
from audit.conformance.fixtures import build_record
from audit.conformance.mutations import MUTATIONS, mutate
from audit.conformance.oracle import expected_endpoint
from audit.conformance.states import (
    PREDICATE_KEYS,
    State,
    Value,
    all_states,
    is_complete,
    replace,
    state_code,
)
from audit.contract.canonical import canonical_digest, canonical_json
from audit.contract.digests import seal_record

Record = dict[str, Any]

#: Registered direction of each single-predicate flip 0 -> 1 (seed §IV-D): the flip changes
#: the endpoint only when the other three predicates hold the listed values; "raises" turns
#: a negative into the omission, "lowers" removes it. Elsewhere both ends stay negative.
FLIP_REGISTRY: dict[str, tuple[str, dict[str, int]]] = {
    "I": ("raises", {"A": 1, "M": 1, "D": 0}),
    "A": ("raises", {"I": 1, "M": 1, "D": 0}),
    "M": ("raises", {"I": 1, "A": 1, "D": 0}),
    "D": ("lowers", {"I": 1, "A": 1, "M": 1}),
}

#: d_Q values of the sweep: 0 to 1 in steps of 0.1.
DQ_SWEEP: tuple[float, ...] = tuple(step / 10 for step in range(11))


@dataclass(frozen=True)
class SuiteResult:
    """Everything one run produced, as plain JSON values in suite order."""

    codebook: dict[str, Any]
    records: list[Record]
    expected: list[dict[str, Any]]
    predictions: list[dict[str, Any]]
    baselines: list[dict[str, Any]]
    ablations: list[dict[str, Any]]
    transitions: list[dict[str, Any]]
    serialization: list[dict[str, Any]]
    mutations: list[dict[str, Any]]
    summary: dict[str, Any]
    manifest: dict[str, Any]
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every summary number equals the specification's."""
        return not self.mismatches


def _revise(record: Record, change: dict[str, Any] | None = None) -> Record:
    """A deep copy of ``record`` with annotation fields replaced, re-sealed."""
    revised = copy.deepcopy(record)
    revised["annotation"].update(copy.deepcopy(change or {}))
    return seal_record(revised)


def _resolved(result: dict[str, Any]) -> Value:
    """The endpoint of an accepted record; a rejected record resolves nothing."""
    return result["endpoint"] if result["ok"] else None


def _code(value: Value) -> str:
    return "U" if value is None else str(value)


# --- the suite, section by section -------------------------------------------------------


def _state_counts(states: list[State], results: list[dict[str, Any]]) -> dict[str, int]:
    accepted = [result for result in results if result["ok"]]
    return {
        "total": len(states),
        "positive": sum(1 for result in accepted if result["endpoint"] == 1),
        "negative": sum(1 for result in accepted if result["endpoint"] == 0),
        "unresolved": sum(1 for result in accepted if result["endpoint"] is None),
    }


def _baselines(
    states: list[State], records: list[Record], endpoints: list[Value]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    summary: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for name, rule in rules.BASELINES:
        summary[name] = {}
        for guard, applied in (("unguarded", rule), ("guarded", rules.guarded(rule))):
            outputs = [
                applied(state, record["annotation"]["passage_support"])
                for state, record in zip(states, records, strict=True)
            ]
            pairs = list(zip(outputs, endpoints, strict=True))
            counts = {
                "resolved_mismatches": sum(
                    1 for out, ref in pairs if ref is not None and out != ref
                ),
                "incomplete_resolved": sum(
                    1 for out, ref in pairs if ref is None and out is not None
                ),
            }
            summary[name][guard] = counts
            rows.append(
                {
                    "baseline": name,
                    "guard": guard,
                    **counts,
                    "resolved_matches": sum(
                        1 for out, ref in pairs if ref is not None and out == ref
                    ),
                    "unresolved_outputs": sum(1 for out, _ref in pairs if out is None),
                }
            )
    return summary, rows


def _ablations(
    states: list[State],
    records: list[Record],
    endpoints: list[Value],
    codebook: dict[str, Any],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    summary: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    complete = [
        (state, endpoint)
        for state, endpoint in zip(states, endpoints, strict=True)
        if is_complete(state)
    ]
    for name, index, substitute in rules.ABLATIONS:
        extra = 0
        for state, endpoint in complete:
            ablated = resolve_complete_case(replace(state, index, substitute))
            if ablated == 1 and endpoint != 1:
                extra += 1
                rows.append(
                    {
                        "ablation": name,
                        "state": state_code(state),
                        "reference": _code(endpoint),
                        "ablated": _code(ablated),
                    }
                )
        summary[name] = {"extra_positives": extra}

    # d_Q separation control (seed §IV-C). The endpoint is computed without any d_Q
    # information twice: by the resolver on the bare predicates, and by the checker on each
    # record re-weighted under a codebook in which d_Q has weight 0 and the record value 0
    # (the contract keeps d_Q declared). A state counts as changed if either differs from
    # the checker's endpoint on the full record.
    reduced = codebook_without_weight(codebook, D_Q)
    weights = dimension_weights(reduced)
    checker = Checker([reduced])
    changed = 0
    for state, record, endpoint in zip(states, records, endpoints, strict=True):
        variant = copy.deepcopy(record)
        variant["codebook"]["version"] = reduced["version"]
        evidence = variant["annotation"]["evidence"]
        variant["annotation"]["evidence"] = {
            key: {"value": 0.0 if key == D_Q else evidence[key]["value"], "weight": weights[key]}
            for key in weights
        }
        result = checker.check(seal_record(variant))
        without_dq = _resolved(result)
        bare = resolve_complete_case(state)
        if not result["ok"] or without_dq != endpoint or bare != endpoint:
            changed += 1
            rows.append(
                {
                    "ablation": "drop_dQ",
                    "state": state_code(state),
                    "reference": _code(endpoint),
                    "ablated": _code(without_dq),
                }
            )
    summary["drop_dQ"] = {"changed": changed}
    return summary, rows


def _transitions(
    checker: Checker,
    states: list[State],
    records: list[Record],
    results: list[dict[str, Any]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    log: list[dict[str, Any]] = []
    endpoints = [_resolved(result) for result in results]

    removal_total = removal_ok = 0
    for state, record, endpoint in zip(states, records, endpoints, strict=True):
        for index, key in enumerate(PREDICATE_KEYS):
            if state[index] is None:
                continue
            annotation = record["annotation"]
            spans = {k: v for k, v in annotation["spans"].items() if k != key}
            predicates = dict(annotation["predicates"], **{key: None})
            result = checker.check(_revise(record, {"predicates": predicates, "spans": spans}))
            passed = result["ok"] and result["endpoint"] is None
            removal_total += 1
            removal_ok += passed
            log.append(
                {
                    "family": "evidence_removal",
                    "from": state_code(state),
                    "to": state_code(replace(state, index, None)),
                    "change": f"{key}=U",
                    "before": _code(endpoint),
                    "after": _code(_resolved(result)),
                    "reason": result["reason"],
                    "passed": passed,
                }
            )

    toggle_ok = 0
    for state, record, endpoint in zip(states, records, endpoints, strict=True):
        support = record["annotation"]["passage_support"]
        result = checker.check(_revise(record, {"passage_support": 1 - support}))
        passed = result["ok"] and result["endpoint"] == endpoint
        toggle_ok += passed
        log.append(
            {
                "family": "support_toggle",
                "from": state_code(state),
                "to": state_code(state),
                "change": f"passage_support={1 - support}",
                "before": _code(endpoint),
                "after": _code(_resolved(result)),
                "reason": result["reason"],
                "passed": passed,
            }
        )

    sweep_total = sweep_ok = 0
    for state, record, endpoint in zip(states, records, endpoints, strict=True):
        for value in DQ_SWEEP:
            evidence = copy.deepcopy(record["annotation"]["evidence"])
            evidence[D_Q]["value"] = value
            result = checker.check(_revise(record, {"evidence": evidence}))
            passed = result["ok"] and result["endpoint"] == endpoint
            sweep_total += 1
            sweep_ok += passed
            log.append(
                {
                    "family": "dq_sweep",
                    "from": state_code(state),
                    "to": state_code(state),
                    "change": f"d_Q={value!r}",
                    "before": _code(endpoint),
                    "after": _code(_resolved(result)),
                    "reason": result["reason"],
                    "passed": passed,
                }
            )

    # Binary flips: both ends are fixture records, so the checker sees two full records.
    by_state = {state: i for i, state in enumerate(states)}
    flip_total = flip_ok = 0
    for index, key in enumerate(PREDICATE_KEYS):
        direction, condition = FLIP_REGISTRY[key]
        for state in states:
            if not is_complete(state) or state[index] != 0:
                continue
            flipped = replace(state, index, 1)
            before = _resolved(results[by_state[state]])
            after = _resolved(results[by_state[flipped]])
            others = {k: v for k, v in zip(PREDICATE_KEYS, state, strict=True) if k != key}
            changes = others == condition
            registered = ((0, 1) if direction == "raises" else (1, 0)) if changes else (0, 0)
            passed = (before, after) == registered
            flip_total += 1
            flip_ok += passed
            log.append(
                {
                    "family": "binary_flips",
                    "from": state_code(state),
                    "to": state_code(flipped),
                    "change": f"{key}=0->1 ({direction})",
                    "before": _code(before),
                    "after": _code(after),
                    "reason": None,
                    "passed": passed,
                }
            )

    summary = {
        "evidence_removal": {"total": removal_total, "to_unresolved": removal_ok},
        "support_toggle": {"total": len(states), "unchanged": toggle_ok},
        "dq_sweep": {"total": sweep_total, "unchanged": sweep_ok},
        "binary_flips": {"total": flip_total, "as_registered": flip_ok},
    }
    return summary, log


def _serialization(
    checker: Checker,
    states: list[State],
    records: list[Record],
    results: list[dict[str, Any]],
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rows: list[dict[str, Any]] = []
    round_trip = lineage_ok = 0
    for state, record, result in zip(states, records, results, strict=True):
        data = canonical_json(record)
        loaded = json.loads(data)
        reloaded = checker.check(loaded)
        trip = (
            loaded == record
            and canonical_json(loaded) == data
            and reloaded["ok"]
            and reloaded["record_digest"] == record["record_digest"]
            and reloaded["endpoint"] == result["endpoint"]
        )

        revision = copy.deepcopy(record)
        revision["annotation"]["rationale"] = (
            f"Conformance revision of state {state_code(state)}: rationale added."
        )
        revision["parents"] = [record["record_digest"]]
        revision = seal_record(revision)
        revised = checker.check(revision)
        lineage = (
            revised["ok"]
            and revision["tuple_digest"] == record["tuple_digest"]
            and revised["record_digest"] == revision["record_digest"]
            and revised["record_digest"] != record["record_digest"]
            and revision["parents"] == [record["record_digest"]]
            and revised["endpoint"] == result["endpoint"]
        )
        round_trip += trip
        lineage_ok += lineage
        rows.append(
            {
                "state": state_code(state),
                "record_digest": record["record_digest"],
                "revision_digest": revision["record_digest"],
                "round_trip": trip,
                "lineage_ok": lineage,
            }
        )
    return {"round_trip": round_trip, "lineage_ok": lineage_ok}, rows


def _mutations(
    checker: Checker, states: list[State], records: list[Record]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    complete = [
        (state, record) for state, record in zip(states, records, strict=True) if is_complete(state)
    ]
    log: list[dict[str, Any]] = []
    for mutation in MUTATIONS:
        for position, (state, record) in enumerate(complete):
            mutated = mutate(mutation, record, position)
            result = checker.check(mutated)
            log.append(
                {
                    "case": f"{mutation.name}/{state_code(state)}",
                    "mutation": mutation.name,
                    "state": state_code(state),
                    "description": mutation.description,
                    "resealed": mutation.resealed,
                    "expected_reason": mutation.expected_reason,
                    "rejected": not result["ok"],
                    "reason": result["reason"],
                    "message": result["message"],
                    "reason_matched": (not result["ok"])
                    and result["reason"] == mutation.expected_reason,
                    "record": mutated,
                }
            )
    summary = {
        "types": len({entry["mutation"] for entry in log}),
        "total": len(log),
        "rejected": sum(1 for entry in log if entry["rejected"]),
        "reason_matched": sum(1 for entry in log if entry["reason_matched"]),
    }
    return summary, log


def run_suite() -> SuiteResult:
    """Run the whole conformance suite in memory; nothing is written."""
    codebook = conformance_codebook()
    weights = dimension_weights(codebook)
    checker = Checker([codebook])

    states = list(all_states())
    records = [build_record(index, state, weights) for index, state in enumerate(states)]
    oracle = [expected_endpoint(state) for state in states]
    results = [checker.check(record) for record in records]
    endpoints = [_resolved(result) for result in results]

    expected_rows = [
        {
            "state": state_code(state),
            **{key: _code(value) for key, value in zip(PREDICATE_KEYS, state, strict=True)},
            "tuple_digest": record["tuple_digest"],
            "expected": _code(value),
        }
        for state, record, value in zip(states, records, oracle, strict=True)
    ]
    predictions = [
        {
            "state": state_code(state),
            **result,
            "oracle": _code(value),
            "matched": result["ok"] and result["endpoint"] == value,
        }
        for state, result, value in zip(states, results, oracle, strict=True)
    ]

    baseline_summary, baseline_rows = _baselines(states, records, endpoints)
    ablation_summary, ablation_rows = _ablations(states, records, endpoints, codebook)
    transition_summary, transition_log = _transitions(checker, states, records, results)
    serialization_summary, serialization_rows = _serialization(checker, states, records, results)
    mutation_summary, mutation_log = _mutations(checker, states, records)

    summary = {
        "states": _state_counts(states, results),
        "oracle_agreement": {
            "matched": sum(1 for row in predictions if row["matched"]),
            "total": len(states),
        },
        "baselines": baseline_summary,
        "ablations": ablation_summary,
        "coverage": {
            "complete_case_resolved": sum(1 for value in endpoints if value is not None),
            "short_circuit_resolved": sum(
                1 for result in results if result["ok"] and result["short_circuit"] is not None
            ),
        },
        "transitions": transition_summary,
        "serialization": serialization_summary,
        "mutations": mutation_summary,
    }
    mismatches = compare(summary, EXPECTED)
    manifest = {
        "suite": "claimgate-conformance",
        "suite_version": SUITE_VERSION,
        "checker_version": checker_version(),
        "codebook": {
            "name": codebook["name"],
            "version": codebook["version"],
            "digest": canonical_digest(codebook),
        },
        "passed": not mismatches,
    }
    return SuiteResult(
        codebook=codebook,
        records=records,
        expected=expected_rows,
        predictions=predictions,
        baselines=baseline_rows,
        ablations=ablation_rows,
        transitions=transition_log,
        serialization=serialization_rows,
        mutations=mutation_log,
        summary=summary,
        manifest=manifest,
        mismatches=mismatches,
    )
