"""The leak-free split the partitions page proposes, and the sentence on why a rule leaks.
Pure: no database."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from audit.partitions.leakage import Leak, leakage
from audit.partitions.proposal import leak_free_split, leak_reason
from audit.partitions.rules import (
    GroupCount,
    UnitGroups,
    ValuesRule,
    rule_assign,
    with_partitions,
)


def row(family: str, domain: str, template: str | None, units: int = 1) -> GroupCount:
    return GroupCount(None, family, domain, template, units)


def units_of(rows: list[GroupCount]) -> list[UnitGroups]:
    return [
        UnitGroups(f"{n:064x}", None, r.target_family, r.domain, r.template_id)
        for n, r in enumerate(r for r in rows for _ in range(r.units))
    ]


def test_groups_joined_by_a_template_go_together():
    rows = [
        row("acme", "travel", "t1", 5),
        row("bolt", "books", "t1", 5),  # shares t1 with travel: one group
        row("cask", "food", "t2", 3),
        row("dune", "maps", None, 2),
    ]

    proposal = leak_free_split(rows, share=0.2)

    assert proposal.groups == 3
    assert proposal.test_values == ("food",)  # 3 of 15 units: the largest that fits
    assert (proposal.test_units, proposal.calibration_units) == (3, 12)
    assert proposal.test_percent == 20


def test_when_every_group_is_larger_than_the_share_the_smallest_goes_to_test():
    rows = [row("a", "x", None, 10), row("b", "y", None, 12)]
    proposal = leak_free_split(rows, share=0.2)
    assert proposal.test_values == ("x",)


def test_one_connected_study_has_no_proposal_and_says_why():
    rows = [row("a", "x", "t"), row("b", "y", "t"), row("a", "z", None)]
    proposal = leak_free_split(rows)
    assert not proposal.possible
    assert "every unit is tied to every other" in proposal.reason
    assert not leak_free_split([]).possible


@given(
    st.lists(
        st.tuples(
            st.sampled_from("abcdef"),
            st.sampled_from("uvwxyz"),
            st.one_of(st.none(), st.sampled_from("123456")),
            st.integers(min_value=1, max_value=4),
        ),
        min_size=1,
        max_size=25,
    )
)
def test_a_proposal_never_leaks_and_never_empties_a_side(combos):
    rows = [row(f, d, t, n) for f, d, t, n in combos]
    proposal = leak_free_split(rows)
    if not proposal.possible:
        return
    units = units_of(rows)
    after = with_partitions(
        units, rule_assign(ValuesRule("domain", frozenset(proposal.test_values)), units)
    )
    assert leakage(after) == []
    tested = sum(1 for unit in after if unit.partition == "test")
    assert tested == proposal.test_units
    assert 0 < tested < len(units)


def test_the_reason_names_the_groups_in_one_sentence():
    leaks = [
        Leak("template_id", "best-venue-near", ("a",), ("b",)),
        Leak("template_id", "opening-hours", ("c",), ("d",)),
        Leak("target_family", "acme", ("e",), ("f",)),
    ]
    assert leak_reason("domain", leaks) == (
        "It leaks because it splits by domain, while 1 target family ('acme') and 2 query "
        "templates ('best-venue-near', 'opening-hours') have units on both sides, and the "
        "freeze refuses any group in both partitions."
    )
    many = [Leak("domain", f"d{n}", ("a",), ("b",)) for n in range(5)]
    assert "5 domains ('d0', 'd1', 'd2' and 2 more)" in leak_reason("target_family", many)
