"""The pure partition rules, the leakage check and the freeze's digests: no database."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.contract.canonical import canonical_digest
from audit.partitions.freeze import freeze_contents, partition_digest, thresholds_problems
from audit.partitions.leakage import leakage, leakage_summary
from audit.partitions.rules import (
    INVALID_RULE,
    LEAKAGE,
    NO_UNITS,
    UNASSIGNED_UNITS,
    UNKNOWN_VALUE,
    RuleError,
    ShareRule,
    UnitGroups,
    ValuesRule,
    group_counts,
    partition_counts,
    rule_assign,
    rule_check,
    share_test_values,
    with_partitions,
)


def unit(digest, domain, family, template=None, partition=None):
    return UnitGroups(
        digest=digest,
        partition=partition,
        target_family=family,
        domain=domain,
        template_id=template,
    )


UNITS = [
    unit("a1", "travel", "acme-air", "best-x"),
    unit("a2", "travel", "acme-air", "best-x"),
    unit("b1", "finance", "bank-b", "site-says"),
    unit("c1", "health", "clinic-c", "best-x"),
    unit("d1", "health", "clinic-d", None),
]


def test_a_values_rule_sends_the_listed_values_to_test_and_the_rest_to_calibration():
    rule = ValuesRule("domain", frozenset({"travel", "finance"}))

    assignment = rule_assign(rule, UNITS)

    assert assignment == {
        "a1": "test",
        "a2": "test",
        "b1": "test",
        "c1": "calibration",
        "d1": "calibration",
    }
    assert "domain in {finance, travel} → test" in rule.describe()


def test_a_unit_without_a_template_goes_to_calibration_under_a_template_rule():
    assignment = rule_assign(ValuesRule("template_id", frozenset({"best-x"})), UNITS)

    assert assignment["d1"] == "calibration"
    assert assignment["c1"] == "test"


def test_a_rule_by_domain_can_still_leak_a_template_and_the_check_names_both_sides():
    after = with_partitions(UNITS, rule_assign(ValuesRule("domain", frozenset({"travel"})), UNITS))

    leaks = leakage(after)

    assert [(leak.field, leak.value) for leak in leaks] == [("template_id", "best-x")]
    assert leaks[0].calibration == ("c1",)
    assert leaks[0].test == ("a1", "a2")
    assert leakage_summary(leaks) == "1 query template"


def test_leakage_reports_every_field_in_order_and_ignores_unassigned_units():
    units = [
        unit("x1", "travel", "fam", "t1", "calibration"),
        unit("x2", "travel", "fam", "t1", "test"),
        unit("x3", "finance", "other", "t2", None),
        unit("x4", "finance", "other", "t2", "test"),
    ]

    leaks = leakage(units)

    assert [(leak.field, leak.value) for leak in leaks] == [
        ("target_family", "fam"),
        ("domain", "travel"),
        ("template_id", "t1"),
    ]
    assert leakage_summary(leaks) == "1 target family, 1 domain, 1 query template"
    assert leaks[0].as_dict() == {
        "field": "target_family",
        "value": "fam",
        "calibration": ["x1"],
        "test": ["x2"],
        "calibration_units": 1,
        "test_units": 1,
    }


def test_no_leakage_when_groups_stay_on_one_side():
    units = with_partitions(
        UNITS, rule_assign(ValuesRule("domain", frozenset({"travel", "health"})), UNITS)
    )
    # best-x is in travel and health only, both on the test side.
    assert leakage(units) == []


def test_a_share_rule_is_seeded_exact_in_groups_and_independent_of_order():
    families = [f"family-{i}" for i in range(10)]

    first = share_test_values(families, share=0.2, seed="7", name="target_family")
    again = share_test_values(reversed(families), share=0.2, seed="7", name="target_family")
    other = share_test_values(families, share=0.2, seed="8", name="target_family")

    assert len(first) == 2
    assert first == again
    assert first != other or len(families) < 3
    assert share_test_values(families, share=0, seed="7", name="target_family") == frozenset()
    assert share_test_values(families, share=1, seed="7", name="target_family") == set(families)
    assert len(share_test_values(families, share=0.25, seed="7", name="domain")) == 3  # 2.5 up


def test_a_share_rule_keeps_every_unit_of_a_group_together():
    rule = ShareRule("target_family", 0.5, "seed")

    assignment = rule_assign(rule, UNITS)

    assert assignment["a1"] == assignment["a2"]
    assert set(assignment.values()) <= {"calibration", "test"}
    assert len(assignment) == len(UNITS)


@given(
    st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=30, unique=True),
    st.floats(min_value=0, max_value=1),
    st.text(max_size=5),
)
def test_a_share_rule_picks_a_subset_of_the_rounded_size(values, share, seed):
    picked = share_test_values(values, share=share, seed=seed, name="domain")
    assert picked <= set(values)
    assert abs(len(picked) - share * len(values)) <= 0.5


@pytest.mark.parametrize(
    ("rule", "code"),
    [
        (ValuesRule("locale", frozenset({"en"})), INVALID_RULE),
        (ValuesRule("domain", frozenset()), INVALID_RULE),
        (ValuesRule("domain", frozenset({"travel", "travle"})), UNKNOWN_VALUE),
        (ShareRule("domain", 1.5, "1"), INVALID_RULE),
        (ShareRule("domain", -0.1, "1"), INVALID_RULE),
    ],
)
def test_a_rule_that_cannot_mean_what_was_meant_is_refused(rule, code):
    with pytest.raises(RuleError) as refused:
        rule_check(rule, UNITS)
    assert refused.value.code == code


def test_an_unknown_value_is_named():
    with pytest.raises(RuleError, match="'travle'"):
        rule_check(ValuesRule("domain", frozenset({"travle"})), UNITS)


def test_counts_per_partition_and_groups_per_partition():
    units = with_partitions(UNITS, {"a1": "test", "a2": "test", "b1": "calibration"})

    assert partition_counts(u.partition for u in units) == {
        "calibration": 1,
        "test": 2,
        "unassigned": 2,
    }
    groups = group_counts(units)
    assert groups["test"] == {"target_family": 1, "domain": 1, "template_id": 1}
    assert groups["unassigned"] == {"target_family": 2, "domain": 1, "template_id": 1}


def test_the_partition_digest_is_the_canonical_digest_of_the_sorted_pairs():
    pairs = [("b" * 64, "test"), ("a" * 64, "calibration")]

    assert partition_digest(pairs) == canonical_digest(
        [["a" * 64, "calibration"], ["b" * 64, "test"]]
    )
    assert partition_digest(reversed(pairs)) == partition_digest(pairs)
    assert partition_digest([("a" * 64, "test"), ("b" * 64, "test")]) != partition_digest(pairs)


def test_freeze_contents_records_digests_of_what_it_shows():
    pipelines = [
        {"name": "z", "version": "1", "key": "k2"},
        {"name": "a", "version": "2", "key": "k1"},
        {"name": "a", "version": "2", "key": "k1"},
    ]
    units = with_partitions(UNITS, {u.digest: "calibration" for u in UNITS})

    contents = freeze_contents(
        codebook_digest="c" * 64,
        pipelines=pipelines,
        thresholds={"priority_review": 0.6},
        units=units,
    )

    assert contents.pipelines == [
        {"name": "a", "version": "2", "key": "k1"},
        {"name": "z", "version": "1", "key": "k2"},
    ]
    assert contents.pipelines_digest == canonical_digest(contents.pipelines)
    assert contents.thresholds_digest == canonical_digest({"priority_review": 0.6})
    assert contents.partition_digest == canonical_digest(
        sorted([u.digest, "calibration"] for u in UNITS)
    )
    assert contents.partition_counts == {"calibration": 5, "test": 0}
    assert contents.problems() == []


def test_freeze_contents_name_what_stands_in_the_way():
    leaky = with_partitions(UNITS, {"a1": "test", "a2": "calibration", "b1": "test"})

    contents = freeze_contents(codebook_digest="c", pipelines=[], thresholds={}, units=leaky)
    codes = [code for code, _ in contents.problems()]
    sentences = " ".join(sentence for _, sentence in contents.problems())

    assert codes == [UNASSIGNED_UNITS, LEAKAGE]
    assert "2 of 5 units have no partition" in sentences
    assert "groups appear in both partitions" in sentences
    empty = freeze_contents(codebook_digest="c", pipelines=[], thresholds={}, units=[])
    assert [code for code, _ in empty.problems()] == [NO_UNITS]


@pytest.mark.parametrize(
    "value",
    [
        {},
        {"priority_review": 0.6, "k": 2, "alpha.min": -1.5e3},
    ],
)
def test_thresholds_are_named_finite_numbers(value):
    assert thresholds_problems(value) == []


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ([0.5], "JSON object"),
        ({"cut": "0.5"}, "not a number"),
        ({"cut": True}, "not a number"),
        ({"cut": None}, "not a number"),
        ({"cut": float("inf")}, "finite"),
        ({"": 1}, "not a threshold name"),
        ({"9lives": 1}, "not a threshold name"),
        ({"nested": {"a": 1}}, "not a number"),
    ],
)
def test_thresholds_that_are_not_named_numbers_are_refused(value, fragment):
    problems = thresholds_problems(value)
    assert problems
    assert fragment in " ".join(problems), json.dumps(problems, default=str)
