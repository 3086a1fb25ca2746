"""The validation gate's stages 3 and 4, pure (no database): k ≥ 2, alphas defined with
their intervals, the thresholds, and each unmet stage's reason with what lies behind it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from audit.ledger.gate import (
    ALPHA_UNDEFINED,
    BELOW_THRESHOLD,
    LISTED,
    NO_REPORT,
    OVERLAP_BELOW_TWO,
    REPORT_OUTDATED,
    STAGES,
    UNITS_SHORT,
    FieldAlpha,
    GateInputs,
    ReliabilityInputs,
    alphas_of_report,
    evaluate_gate,
)

FIRM = (
    FieldAlpha("I", "I: independence", "unassisted", 0.91, 0.82, 0.97),
    FieldAlpha("A", "A: adoption", "unassisted", 0.85, 0.70, 0.95),
)


def reliability(*alphas: FieldAlpha, **changes) -> ReliabilityInputs:
    values = {
        "computed": True,
        "current": True,
        "alphas": alphas or FIRM,
        "tentative": 0.667,
        "firm": 0.8,
    }
    return ReliabilityInputs(**{**values, **changes})


def inputs(**changes) -> GateInputs:
    values = {
        "checker_version": "1",
        "conformance_passed": True,
        "records_total": 20,
        "records_refused": 0,
        "units_total": 10,
        "units_fully_labelled": 10,
        "overlap": 2,
        "reliability": reliability(),
        "units_disputed": 0,
        "units_adjudicated": 2,
        "frozen": True,
    }
    return GateInputs(**{**values, **changes})


def stage(report, name):
    return report.stages[STAGES.index(name)]


def test_every_stage_met_reaches_frozen():
    report = evaluate_gate(inputs())
    assert report.reached == "frozen"
    assert "firm threshold" in stage(report, "reliability_reported").why


@given(units=st.integers(min_value=1, max_value=10_000))
def test_overlap_one_never_passes_independent_labels(units):
    # Every unit "fully labelled" at k = 1, reliability and all the rest in place.
    report = evaluate_gate(inputs(overlap=1, units_total=units, units_fully_labelled=units))
    independent = stage(report, "independent_labels")
    assert not independent.met
    assert independent.reason == OVERLAP_BELOW_TWO
    assert "k ≥ 2" in independent.why
    assert report.reached == "structural"


def test_units_with_too_few_labels_are_named_up_to_a_cap_and_counted():
    digests = tuple(f"u{n:03}" for n in range(LISTED))
    report = evaluate_gate(inputs(units_fully_labelled=10 - 7, units_total=10, units_short=()))
    assert stage(report, "independent_labels").reason == UNITS_SHORT
    assert "7 of 10 units have fewer than 2" in stage(report, "independent_labels").why

    many = evaluate_gate(
        inputs(units_total=500, units_fully_labelled=100, units_short=digests)
    ).stages[STAGES.index("independent_labels")]
    assert many.items == digests
    assert many.items_more == 400 - LISTED


def test_an_undefined_alpha_blocks_reliability_reported_and_names_its_fields():
    undefined = (
        FIRM[0],
        FieldAlpha("M", "M: material", "unassisted", None, None, None, "single_category"),
        FieldAlpha("D", "D: disclosure", "assisted", None, None, None, "no_pairable_values"),
    )
    report = evaluate_gate(inputs(reliability=reliability(*undefined)))
    status = stage(report, "reliability_reported")
    assert not status.met
    assert status.reason == ALPHA_UNDEFINED
    assert "2 of 3 fields" in status.why
    assert status.items == ("M: single_category", "D (assisted): no_pairable_values")
    assert report.reached == "independent_labels"


def test_every_alpha_undefined_is_not_a_pass():
    # The demo's old state: one doubly-labelled unit, every alpha undefined.
    nothing = tuple(
        FieldAlpha(key, key, "unassisted", None, None, None, "no_pairable_values") for key in "IAMD"
    )
    report = evaluate_gate(inputs(reliability=reliability(*nothing)))
    assert not stage(report, "reliability_reported").met
    assert report.reached == "independent_labels"


def test_an_alpha_without_an_interval_is_undefined_too():
    no_interval = FieldAlpha("I", "I", "unassisted", 1.0, None, None, None)
    status = stage(
        evaluate_gate(inputs(reliability=reliability(no_interval))), "reliability_reported"
    )
    assert not status.met
    assert status.items == ("I: no interval",)


def test_an_alpha_below_the_tentative_threshold_is_reported_below_threshold():
    weak = (FIRM[0], FieldAlpha("M", "M", "unassisted", 0.41, 0.2, 0.6))
    report = evaluate_gate(inputs(reliability=reliability(*weak, tentative=0.7, firm=0.85)))
    status = stage(report, "reliability_reported")
    assert status.met  # reported, and said to be below the study's threshold
    assert status.reason == BELOW_THRESHOLD
    assert status.why.startswith("reported, below threshold")
    assert "0.700" in status.why
    assert status.items == ("M: α = 0.410",)


def test_tentative_alphas_are_listed_without_a_caveat_code():
    between = (FieldAlpha("A", "A", "unassisted", 0.7, 0.6, 0.8),)
    status = stage(evaluate_gate(inputs(reliability=reliability(*between))), "reliability_reported")
    assert status.met
    assert status.reason == ""
    assert status.items == ("A: α = 0.700",)


def test_no_report_or_an_outdated_one_is_a_reason():
    none = stage(
        evaluate_gate(inputs(reliability=reliability(computed=False, current=False))),
        "reliability_reported",
    )
    old = stage(
        evaluate_gate(inputs(reliability=reliability(current=False))), "reliability_reported"
    )
    assert (none.met, none.reason) == (False, NO_REPORT)
    assert (old.met, old.reason) == (False, REPORT_OUTDATED)


def test_alphas_of_a_report_are_the_study_codebook_versions_per_group_with_claims():
    def item(key, value, low, high, reason=None):
        alpha = {"value": value, "low": low, "high": high, "reason": reason}
        return {"key": key, "label": key.upper(), "u_category": {"alpha": alpha}}

    report = {
        "versions": [
            {
                "codebook": {"digest": "mine"},
                "groups": [
                    {"key": "unassisted", "items": [item("cited", 0.9, 0.8, 1.0)]},
                    {
                        "key": "assisted",
                        "items": [item("cited", None, None, None, "single_category")],
                        "claims": {"items": [item("supported", 0.5, 0.1, 0.8)]},
                    },
                ],
            },
            {"codebook": {"digest": "older"}, "groups": [{"key": "unassisted", "items": []}]},
        ]
    }
    alphas = alphas_of_report(report, "mine")
    assert [(a.name, a.defined) for a in alphas] == [
        ("cited", True),
        ("cited (assisted)", False),
        ("claims: supported (assisted)", True),
    ]
    assert alphas_of_report(report, "none") == ()
