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


#: Reason codes of unmet stages (and of a met stage's caveat): tests assert on these.
OVERLAP_BELOW_TWO = "overlap_below_two"
UNITS_SHORT = "units_short"
NO_UNITS = "no_units"
NO_REPORT = "no_report"
REPORT_OUTDATED = "report_outdated"
NO_COEFFICIENTS = "no_coefficients"
ALPHA_UNDEFINED = "alpha_undefined"
BELOW_THRESHOLD = "below_threshold"

#: How many units or fields a stage lists by name; the rest are counted.
LISTED = 20


@dataclass(frozen=True)
class FieldAlpha:
    """One field's headline Krippendorff's alpha (U as its own category) with its 95%
    bootstrap interval over units, in one group of labels (unassisted or assisted)."""

    field: str
    label: str
    group: str
    value: float | None
    low: float | None
    high: float | None
    reason: str | None = None  # why undefined (metrics.reliability REASON_* codes)

    @property
    def defined(self) -> bool:
        return self.value is not None and self.low is not None and self.high is not None

    @property
    def name(self) -> str:
        return self.field if self.group == "unassisted" else f"{self.field} ({self.group})"


@dataclass(frozen=True)
class ReliabilityInputs:
    """The study's latest reliability report as the gate needs it, and its thresholds
    (the frozen ones once the study is frozen)."""

    computed: bool  # a report has been computed at all
    current: bool  # ... on exactly the current independent labels
    alphas: tuple[FieldAlpha, ...]
    tentative: float
    firm: float


#: No report yet, the default thresholds.
NO_RELIABILITY = ReliabilityInputs(False, False, (), 0.667, 0.8)


def alphas_of_report(report: dict[str, Any], codebook_digest: str) -> tuple[FieldAlpha, ...]:
    """Every field's headline alpha in a stored reliability report (the JSON value of
    metrics.report_build, format 1), for the study's own codebook version: per group of
    labels (unassisted, assisted), each compared item, then each claim-level item of an
    answer codebook. Labels of another codebook version are never pooled, so they are
    not the study's coefficients and are left out here."""
    alphas: list[FieldAlpha] = []
    for version in report.get("versions") or []:
        if (version.get("codebook") or {}).get("digest") != codebook_digest:
            continue
        for group in version.get("groups") or []:
            name = str(group.get("key") or "unassisted")
            items = [(item, "") for item in group.get("items") or []]
            claims = group.get("claims") or {}
            items += [(item, "claims: ") for item in claims.get("items") or []]
            for item, prefix in items:
                summary = item.get("u_category") or {}
                alpha = summary.get("alpha") or {}
                reason = alpha.get("reason")
                if summary.get("empty"):
                    reason = "no_labels"
                alphas.append(
                    FieldAlpha(
                        field=prefix + str(item.get("key")),
                        label=str(item.get("label") or item.get("key")),
                        group=name,
                        value=alpha.get("value"),
                        low=alpha.get("low"),
                        high=alpha.get("high"),
                        reason=reason,
                    )
                )
    return tuple(alphas)


@dataclass(frozen=True)
class GateInputs:
    """Counts a selector gathers in a fixed number of queries."""

    checker_version: str
    conformance_passed: bool | None  # None: the suite has not run for this checker version
    records_total: int
    records_refused: int
    units_total: int
    units_fully_labelled: int  # units with at least k submitted independent labels
    overlap: int
    reliability: ReliabilityInputs
    units_disputed: int
    units_adjudicated: int
    frozen: bool
    leakage: int = 0  # target families, domains or templates found in both partitions
    units_short: tuple[str, ...] = ()  # digests of (the first LISTED) units with < k labels


@dataclass(frozen=True)
class StageStatus:
    name: str
    met: bool
    why: str
    counts: dict[str, Any] = field(default_factory=dict)
    #: Reason code: why the stage is unmet, or a met stage's caveat (BELOW_THRESHOLD).
    reason: str = ""
    #: The units or fields behind the reason (at most LISTED), and how many more there are.
    items: tuple[str, ...] = ()
    items_more: int = 0


@dataclass(frozen=True)
class GateReport:
    stages: tuple[StageStatus, ...]
    reached: str | None  # the highest stage completed in order; None before conformance

    def as_dict(self) -> dict[str, Any]:
        return {"reached": self.reached, "stages": [asdict(stage) for stage in self.stages]}


def _listed(names: list[str]) -> tuple[tuple[str, ...], int]:
    return tuple(names[:LISTED]), max(0, len(names) - LISTED)


def _number(value: float) -> str:
    return f"{value:.3f}"


def _alpha(alpha: FieldAlpha) -> float:
    if alpha.value is None:
        raise ValueError(f"alpha of {alpha.name} is undefined")
    return alpha.value


def _independent_labels(i: GateInputs) -> StageStatus:
    counts = {"units": i.units_total, "fully_labelled": i.units_fully_labelled, "k": i.overlap}
    if i.overlap < 2:
        return StageStatus(
            "independent_labels",
            False,
            f"overlap k = {i.overlap}: independent labels need at least two annotators per "
            "unit (k ≥ 2); set the study's overlap to 2 or more",
            counts,
            reason=OVERLAP_BELOW_TWO,
        )
    if i.units_total == 0:
        return StageStatus(
            "independent_labels", False, "the study has no units", counts, reason=NO_UNITS
        )
    short = i.units_total - i.units_fully_labelled
    if short:
        items, _ = _listed(list(i.units_short))
        return StageStatus(
            "independent_labels",
            False,
            f"{short} of {i.units_total} units have fewer than {i.overlap} blinded, "
            "submitted labels",
            counts,
            reason=UNITS_SHORT,
            items=items,
            items_more=max(0, short - len(items)),
        )
    return StageStatus(
        "independent_labels",
        True,
        f"all {i.units_total} units have {i.overlap} blinded, submitted labels",
        counts,
    )


def _reliability_reported(r: ReliabilityInputs) -> StageStatus:
    thresholds = f"thresholds {_number(r.tentative)} tentative, {_number(r.firm)} firm"
    counts: dict[str, Any] = {"tentative": r.tentative, "firm": r.firm}
    if not r.computed:
        return StageStatus(
            "reliability_reported",
            False,
            "no reliability report has been computed yet",
            counts,
            reason=NO_REPORT,
        )
    if not r.current:
        return StageStatus(
            "reliability_reported",
            False,
            "the reliability report is out of date: the independent labels changed since "
            "(a new one is computed by a worker)",
            counts,
            reason=REPORT_OUTDATED,
        )
    if not r.alphas:
        return StageStatus(
            "reliability_reported",
            False,
            "the reliability report has no coefficient for this codebook version",
            counts,
            reason=NO_COEFFICIENTS,
        )
    counts["fields"] = len(r.alphas)
    undefined = [a for a in r.alphas if not a.defined]
    if undefined:
        names = [f"{a.name}: {a.reason or 'no interval'}" for a in undefined]
        items, more = _listed(names)
        return StageStatus(
            "reliability_reported",
            False,
            f"Krippendorff's alpha or its interval is undefined for {len(undefined)} of "
            f"{len(r.alphas)} fields (an undefined alpha is a reason, not a pass)",
            {**counts, "undefined": len(undefined)},
            reason=ALPHA_UNDEFINED,
            items=items,
            items_more=more,
        )
    below = [a for a in r.alphas if _alpha(a) < r.tentative]
    tentative = [a for a in r.alphas if r.tentative <= _alpha(a) < r.firm]
    counts.update({"below": len(below), "tentative_only": len(tentative)})
    if below:
        items, more = _listed([f"{a.name}: α = {_number(_alpha(a))}" for a in below])
        return StageStatus(
            "reliability_reported",
            True,
            f"reported, below threshold: {len(below)} of {len(r.alphas)} fields have α under "
            f"the tentative threshold {_number(r.tentative)} ({thresholds})",
            counts,
            reason=BELOW_THRESHOLD,
            items=items,
            items_more=more,
        )
    if tentative:
        items, more = _listed([f"{a.name}: α = {_number(_alpha(a))}" for a in tentative])
        return StageStatus(
            "reliability_reported",
            True,
            f"reported: every α reaches the tentative threshold; {len(tentative)} fields stay "
            f"under the firm one ({thresholds})",
            counts,
            items=items,
            items_more=more,
        )
    return StageStatus(
        "reliability_reported",
        True,
        f"reported: every α with its interval reaches the firm threshold ({thresholds})",
        counts,
    )


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
        _independent_labels(i),
        _reliability_reported(i.reliability),
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
