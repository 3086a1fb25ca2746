from __future__ import annotations

import pytest

from audit.partitions.rules import ValuesRule
from tests.annotation.conftest import add_people, make_study

#: A leakage-free split of the source-risk demo: these domains share no target family and
#: no query template with the others.
TEST_DOMAINS = frozenset({"culture-and-museums", "local-services", "retail-books"})
SPLIT = ValuesRule("domain", TEST_DOMAINS)
#: local-services alone leaks two templates (opening hours with the museum, best venue
#: near with the bookshop).
LEAKY = ValuesRule("domain", frozenset({"local-services"}))


@pytest.fixture
def study(db):
    return make_study("part", "source-risk-1.0.0", "source-risk.jsonl")


@pytest.fixture
def people(study):
    return add_people(study)
