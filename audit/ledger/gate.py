"""The validation gate (DESIGN.md, "Claim ledger and validation gate"): pure, no Django.

A study shows the highest stage it has actually completed, in order; a stage later in the
list does not count while an earlier one is unmet. Every report and export is stamped
with that stage, and the claim boundary says what the study may and may not claim at it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

STAGES = (
    "conformance",
    "structural",
    "independent_labels",
    "reliability_reported",
    "adjudicated",
    "frozen",
)
#: Each stage's name for people.
STAGE_LABELS = {
    "conformance": "Conformance",
    "structural": "Structural",
    "independent_labels": "Independent labels",
    "reliability_reported": "Reliability reported",
    "adjudicated": "Adjudicated",
    "frozen": "Frozen",
}


@dataclass(frozen=True)
class GateInputs:
    """Counts a selector gathers in a fixed number of queries."""

    checker_version: str
    conformance_passed: bool | None  # None: the suite has not run for this checker version
    records_total: int
    records_refused: int
    units_total: int
    units_fully_labelled: int
    overlap: int
    reliability_reported: bool
    units_disputed: int
    units_adjudicated: int
    frozen: bool
    leakage: int = 0  # target families, domains or templates found in both partitions


@dataclass(frozen=True)
class StageStatus:
    name: str
    met: bool
    why: str
    counts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GateReport:
    stages: tuple[StageStatus, ...]
    reached: str | None  # the highest stage completed in order; None before conformance

    def as_dict(self) -> dict[str, Any]:
        return {"reached": self.reached, "stages": [asdict(stage) for stage in self.stages]}


def evaluate_gate(inputs: GateInputs) -> GateReport:
    i = inputs
    labels_complete = i.units_total > 0 and i.units_fully_labelled == i.units_total
    stages = (
        StageStatus(
            "conformance",
            i.conformance_passed is True,
            {
                True: f"checker {i.checker_version} passes the conformance suite",
                False: f"checker {i.checker_version} FAILS the conformance suite",
                None: f"the conformance suite has not run for checker {i.checker_version}",
            }[i.conformance_passed],
            {"checker_version": i.checker_version},
        ),
        StageStatus(
            "structural",
            i.records_total > 0 and i.records_refused == 0,
            "no labelled record yet"
            if i.records_total == 0
            else f"{i.records_refused} of {i.records_total} records do not conform"
            if i.records_refused
            else f"all {i.records_total} records conform to the contract",
            {"records": i.records_total, "refused": i.records_refused},
        ),
        StageStatus(
            "independent_labels",
            i.units_total > 0 and i.units_fully_labelled == i.units_total,
            f"{i.units_fully_labelled} of {i.units_total} units have {i.overlap} blinded, "
            "submitted labels",
            {"units": i.units_total, "fully_labelled": i.units_fully_labelled, "k": i.overlap},
        ),
        StageStatus(
            "reliability_reported",
            i.reliability_reported,
            "coefficients with intervals are computed on the independent labels"
            if i.reliability_reported
            else "no reliability report on the current independent labels",
            {},
        ),
        StageStatus(
            "adjudicated",
            labels_complete and i.units_disputed == 0,
            f"{i.units_disputed} disputed units wait for adjudication"
            if i.units_disputed
            else f"no disagreement left ({i.units_adjudicated} adjudicated)"
            if labels_complete
            else "disagreements are known only once every unit has its independent labels",
            {"disputed": i.units_disputed, "adjudicated": i.units_adjudicated},
        ),
        StageStatus(
            "frozen",
            i.frozen and i.leakage == 0,
            "codebook, pipeline, thresholds and partitions frozen, no leakage"
            if i.frozen and i.leakage == 0
            else f"{i.leakage} leaking groups between calibration and test"
            if i.leakage
            else "not frozen",
            {"leakage": i.leakage},
        ),
    )
    reached = None
    for stage in stages:
        if not stage.met:
            break
        reached = stage.name
    return GateReport(stages=stages, reached=reached)


#: What a study may claim once it has reached a stage (cumulative), and what no stage of
#: this tool supports. Words from seed 000, Table IV and section V.
MAY_CLAIM = {
    "conformance": "the checker implements the declared endpoint on the finite state space "
    "(conformance of the implementation, not semantic accuracy)",
    "structural": "every stored record is well-formed, traceable to its archived snapshots "
    "and carries evidence spans for its resolved judgments",
    "independent_labels": "each unit carries k blinded, independent human labels",
    "reliability_reported": "inter-annotator agreement on the independent labels, with "
    "intervals, for this codebook version",
    "adjudicated": "an adjudicated label set in which every disagreement was resolved with a "
    "written rationale",
    "frozen": "a held-out evaluation against labels opened only after codebook, pipeline, "
    "thresholds and partitions were frozen",
}
NEVER_CLAIM = (
    "prevalence of omissions in AI search without a recorded sampling design and inclusion "
    "probabilities",
    "semantic accuracy of an automated judge (a judge is never its own gold)",
    "application benefit, which needs a matched comparison of answers before and after an "
    "intervention",
    "that a publisher is independent or trustworthy: PASS only means the review requirement "
    "was met for the observed tuple",
)


def claim_boundary(reached: str | None) -> dict[str, list[str]]:
    """What the study may claim at ``reached``, and what it may not (yet or ever)."""
    index = STAGES.index(reached) + 1 if reached else 0
    may = [MAY_CLAIM[name] for name in STAGES[:index]]
    not_yet = [MAY_CLAIM[name] for name in STAGES[index:]]
    return {"may": may, "may_not_yet": not_yet, "may_never": list(NEVER_CLAIM)}
