"""A leak-free split to propose, and why a rule leaks. Pure, no Django.

Units that share a target family, a domain or a query template must sit on the same side
(``leakage``). Joining every unit to each of its three values makes connected groups: a
split is leak-free exactly when it moves whole groups. A set of whole groups is also
exactly the set of units whose domain is one of the groups' domains (every unit has a
domain, and a domain never spans two groups), so the proposal is an ordinary values rule
on the domain that the partitions page previews and applies like any other.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from audit.partitions.leakage import Leak
from audit.partitions.rules import FIELD_LABELS, FIELD_PLURALS, GROUP_FIELDS, GroupCount

#: The share of units a proposal aims to hold out for test.
TEST_SHARE = 0.2
PROPOSAL_FIELD = "domain"


@dataclass(frozen=True)
class SplitProposal:
    """Whole groups to send to test (named by their domains), with the sizes it gives;
    ``reason`` says why there is none when ``test_values`` is empty."""

    field: str
    test_values: tuple[str, ...]
    test_units: int
    calibration_units: int
    groups: int  # independent groups in the study
    reason: str | None = None

    @property
    def possible(self) -> bool:
        return bool(self.test_values)

    @property
    def test_percent(self) -> int:
        total = self.test_units + self.calibration_units
        return round(100 * self.test_units / total) if total else 0


class _Groups:
    """Union-find over (field, value) keys, numbered as they come (union by size, path
    halving): linear in practice over a study's grouped rows."""

    def __init__(self) -> None:
        self.number: dict[tuple[str, str], int] = {}
        self.parent: list[int] = []
        self.size: list[int] = []

    def key(self, key: tuple[str, str]) -> int:
        found = self.number.get(key)
        if found is None:
            found = self.number[key] = len(self.parent)
            self.parent.append(found)
            self.size.append(1)
        return found

    def find(self, item: int) -> int:
        parent = self.parent
        while parent[item] != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    def join(self, keys: Sequence[tuple[str, str]]) -> None:
        first = self.find(self.key(keys[0]))
        for key in keys[1:]:
            other = self.find(self.key(key))
            if other == first:
                continue
            if self.size[other] > self.size[first]:
                first, other = other, first
            self.parent[other] = first
            self.size[first] += self.size[other]


def leak_free_split(groups: Iterable[GroupCount], *, share: float = TEST_SHARE) -> SplitProposal:
    """Whole groups for test whose units come closest to ``share`` of the study without
    going over (at least one group, never every group), largest groups first, ties by
    domain: the same study always gets the same proposal."""
    rows = list(groups)
    union = _Groups()
    for row in rows:
        union.join([(name, value) for name in GROUP_FIELDS if (value := row.value(name))])
    units: Counter[int] = Counter()
    domains: dict[int, set[str]] = {}
    for row in rows:
        root = union.find(union.key((PROPOSAL_FIELD, row.domain)))
        units[root] += row.units
        domains.setdefault(root, set()).add(row.domain)
    total = sum(units.values())
    components = sorted(units, key=lambda root: (-units[root], min(domains[root])))
    if len(components) < 2:
        return SplitProposal(
            field=PROPOSAL_FIELD,
            test_values=(),
            test_units=0,
            calibration_units=total,
            groups=len(components),
            reason=(
                "no split can avoid leakage: every unit is tied to every other through a "
                "shared target family, domain or query template"
                if components
                else "the study has no units yet"
            ),
        )
    target = share * total
    chosen: list[int] = []
    taken = 0
    for root in components:
        if len(chosen) == len(components) - 1:
            break
        if taken + units[root] <= target:
            chosen.append(root)
            taken += units[root]
    if not chosen:  # every group alone is larger than the share: the smallest one
        chosen = [components[-1]]
        taken = units[components[-1]]
    values = sorted(value for root in chosen for value in domains[root])
    return SplitProposal(
        field=PROPOSAL_FIELD,
        test_values=tuple(values),
        test_units=taken,
        calibration_units=total - taken,
        groups=len(components),
    )


def leak_reason(field: str, leaks: Sequence[Leak], *, named: int = 3) -> str:
    """One sentence: why a split by ``field`` leaks, naming the groups that cause it."""
    by_field: dict[str, list[Leak]] = {}
    for leak in leaks:
        by_field.setdefault(leak.field, []).append(leak)
    parts = []
    for name in GROUP_FIELDS:
        found = by_field.get(name, [])
        if not found:
            continue
        shown = ", ".join(repr(leak.value) for leak in found[:named])
        more = f" and {len(found) - named} more" if len(found) > named else ""
        noun = FIELD_LABELS[name] if len(found) == 1 else FIELD_PLURALS[name]
        parts.append(f"{len(found)} {noun} ({shown}{more})")
    causes = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    verb = "has" if len(leaks) == 1 else "have"
    return (
        f"It leaks because it splits by {FIELD_LABELS[field]}, while {causes} {verb} units "
        "on both sides, and the freeze refuses any group in both partitions."
    )
