"""Query_documents annotations outside the database: agreement and picks per (field,
document) and relations as sets (annotator.adjudication.picks), the page's reading of the
contract's problems and of a stored annotation (annotator.labelling.fields_page), and the
coder x (unit, document) matrices of reliability (metrics.matrices)."""

from __future__ import annotations

import numpy as np
import pytest

from annotator.adjudication.picks import (
    PickError,
    consensus_fields,
    differing_fields,
    final_from_picks,
    judgments_key,
)
from annotator.labelling.fields_page import (
    document_cards,
    fields_rows,
    problem_field,
    problems_by_field,
    readable_message,
)
from metrics.matrices import (
    UnitDomains,
    document_categories,
    document_matrices,
    heads_from_rows,
)

DEFINITION = {
    "unit": "query_documents",
    "fields": [
        {"code": "g", "type": "grade", "label": "Grade", "placement": "document"},
        {"code": "n", "type": "text", "label": "Note", "placement": "document"},
        {"code": "links", "type": "links", "label": "Contradicted", "placement": "set"},
        {"code": "groups", "type": "groups", "label": "Redundant", "placement": "set"},
    ],
}


def note(grades, *, links=(), groups=(), reasons=None, spans=()):
    return {
        "values": {"links": list(links), "groups": list(groups)},
        "reasons": {},
        "spans": list(spans),
        "documents": [
            {"values": {"g": g, "n": f"note {i}"}, "reasons": (reasons or {}).get(i, {})}
            for i, g in enumerate(grades)
        ],
    }


# --- agreement and picks ------------------------------------------------------------------


def test_each_document_is_compared_on_its_own():
    a, b = note([2, 1, 0]), note([2, 0, 0])
    assert differing_fields(DEFINITION, [a, b]) == {"g:1"}
    assert judgments_key(DEFINITION, a) != judgments_key(DEFINITION, b)
    # Free texts and reasons never make a disagreement; U differs from 0.
    c = note([2, 1, 0], reasons={0: {"g": "other words"}})
    assert judgments_key(DEFINITION, a) == judgments_key(DEFINITION, c)
    assert differing_fields(DEFINITION, [note([None]), note([0])]) == {"g:0"}


def test_relations_are_compared_as_sets():
    a = note([1, 1, 1], links=[{"document": 0, "by": 1}, {"document": 2, "by": 1}])
    b = note([1, 1, 1], links=[{"document": 2, "by": 1}, {"document": 0, "by": 1}])
    assert differing_fields(DEFINITION, [a, b]) == set()
    grouped = note([1, 1, 1], groups=[{"representative": 2, "members": [2, 0]}])
    reordered = note([1, 1, 1], groups=[{"representative": 2, "members": [0, 2]}])
    other_rep = note([1, 1, 1], groups=[{"representative": 0, "members": [0, 2]}])
    assert differing_fields(DEFINITION, [grouped, reordered]) == set()
    assert differing_fields(DEFINITION, [grouped, other_rep]) == {"groups"}
    # No relation listed and the field left out say the same: none.
    bare = note([1, 1, 1])
    del bare["values"]["links"]
    assert "links" not in differing_fields(DEFINITION, [bare, note([1, 1, 1])])


def test_consensus_keeps_documents_and_joins_their_reasons():
    body = consensus_fields(
        DEFINITION,
        [note([2, 1], reasons={1: {"g": "r1"}}), note([2, 1], reasons={1: {"g": "r2"}})],
    )
    assert [d["values"]["g"] for d in body["documents"]] == [2, 1]
    assert body["documents"][1]["reasons"] == {"g": "r1 | r2"}
    assert body["documents"][0]["reasons"] == {}


def test_picks_are_made_per_field_and_document():
    span = {"field": "g", "snapshot": "document:1", "start": 0, "end": 3, "quote": "abc"}
    a = note([2, 1, 0], links=[{"document": 2, "by": 0}])
    b = note([2, 2, 0], reasons={1: {"g": "says it"}}, spans=[span])
    with pytest.raises(PickError, match=r"Document 2 · Grade: the labels differ") as refused:
        final_from_picks(DEFINITION, [a, b], {"links": 0})
    assert refused.value.field == "g:1"
    body = final_from_picks(DEFINITION, [a, b], {"g:1": 1, "links": 1})
    assert [d["values"]["g"] for d in body["documents"]] == [2, 2, 0]
    assert body["documents"][1]["reasons"] == {"g": "says it"}
    assert body["values"]["links"] == []
    assert body["spans"] == [span]  # the span on document 2 came with its pick
    body = final_from_picks(DEFINITION, [a, b], {"g:1": 0, "links": 0})
    assert body["spans"] == []
    assert body["values"]["links"] == [{"document": 2, "by": 0}]


# --- the page's reading of problems and annotations -----------------------------------------


def test_problems_of_a_document_go_to_its_copy_of_the_field():
    annotation = note([1, 1], spans=[{"field": "g", "snapshot": "document:1"}])
    assert problem_field("annotation.documents[1].values.g", annotation, ["g"]) == "g-1"
    assert problem_field("annotation.documents[0].reasons.g", annotation, ["g"]) == "g-0"
    assert problem_field("annotation.spans[0].start", annotation, ["g"]) == "g-1"
    assert problem_field("annotation.values.links[0]", annotation, ["g"]) == "links"
    problems = [
        {
            "code": "missing_field",
            "path": "annotation.documents[1].values.g",
            "message": "Grade is missing; write U as null",
        },
        {
            "code": "invalid_field",
            "path": "annotation.values.links[0]",
            "message": "document and by are each a document position from 0 to 2",
        },
        {
            "code": "invalid_field",
            "path": "annotation.documents",
            "message": "has 2 entries; this unit has 3 documents",
        },
        {"code": "span_missing", "path": "annotation.spans (g)", "message": "Grade needs a span"},
    ]
    by_field, rest = problems_by_field(problems, annotation, ["g", "n"])
    assert by_field["g-1"][0]["message"] == "Grade is missing; choose a value, or U if unresolved"
    assert by_field["links"][0]["message"] == ("document and by are each one of documents 1 to 3")
    assert [p["path"] for p in rest] == ["annotation.documents", "annotation.spans (g)"]
    assert readable_message("plain") == "plain"


def test_rows_show_each_document_and_the_relations_in_words():
    fields = [{**f, "placement": f["placement"], "options": []} for f in DEFINITION["fields"]]
    annotation = note(
        [2, None],
        links=[{"document": 1, "by": 0}],
        groups=[{"representative": 0, "members": [0, 1]}],
        reasons={0: {"g": "strong"}},
    )
    rows = dict(fields_rows(annotation, fields))
    assert rows["Contradicted"] == "Document 2 contradicted by document 1"
    assert rows["Redundant"] == "Document 1 represents document 2"
    assert rows["Document 1 · Grade"] == "2"
    assert rows["Document 2 · Grade"] == "U"
    assert rows["Document 1 · Grade · reason"] == "strong"
    assert dict(fields_rows(note([1]), fields))["Contradicted"] == "none"


def test_cards_give_each_document_its_own_copy_of_the_fields():
    fields = [{**f, "options": []} for f in DEFINITION["fields"]]
    documents = [{"text": "a", "rank": 1, "canonical_url": "u1"}, {"text": "b", "rank": 2}]
    cards = document_cards(fields, documents, {"g-1": [{"message": "x"}]})
    assert [c["snapshot"] for c in cards] == ["document:0", "document:1"]
    assert [f["code"] for f in cards[1]["fields"]] == ["g-1", "n-1"]
    assert cards[1]["fields"][0]["base"] == "g"
    assert cards[1]["fields"][0]["problems"] == [{"message": "x"}]
    assert document_cards(fields, documents)[0]["fields"] == []  # pages that only show


# --- reliability: one item per (unit, document) ---------------------------------------------


def test_document_matrices_have_a_column_per_unit_and_document():
    codes = ["g"]
    rows = []
    grades = {(10, 1): [2, 1, 0], (10, 2): [2, None, 0], (11, 1): [1, 1], (11, 2): [1]}
    for pk, ((unit, coder), values) in enumerate(grades.items()):
        documents = [{"values": {"g": g}} for g in values]
        rows.append((pk, unit, coder, 1, f"d{pk}", "cb", False, documents))
    heads = heads_from_rows(
        [rows],
        n_items=0,
        coder_of=lambda user: f"p{user}",
        documents_of=lambda raw: document_categories(raw, codes),
    )
    domains = UnitDomains.of([10, 11], ["health", "law"])
    n, (matrix,) = document_matrices(heads, np.ones(len(heads), dtype=bool), domains, 1)
    assert n == 5  # unit 10's three documents, unit 11's two
    assert matrix.units.tolist() == [10, 10, 10, 11, 11]
    assert matrix.data == [["2", "1", "0", "1", "1"], ["2", "U", "0", "1", None]]
    assert matrix.clusters.tolist() == [0, 0, 0, 1, 1]
    assert document_categories([{"values": {}}, "junk"], codes) == ((None,), (None,))
