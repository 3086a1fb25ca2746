"""The researcher's outcomes page, the record page, the gate panel and its Recompute
button, through HTTP. Labels are made with the services and the jobs are run directly."""

from __future__ import annotations

import csv
import io
import uuid

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from annotator.adjudication.jobs import label_adjudicated, label_submitted
from annotator.adjudication.services import adjudication_submit
from annotator.labelling.models import Label, LabelKind
from annotator.labelling.selectors import unit_content
from annotator.labelling.services import assignment_next, label_submit
from annotator.memberships.models import Membership, Role
from audit.archive.models import Unit, UnitState
from audit.ledger.downloads import csv_cell
from audit.ledger.jobs import study_gate_refresh
from audit.ledger.models import LedgerEntry, StudyGate
from audit.ledger.selectors import (
    NO_ROLE,
    GroupRow,
    OutcomeData,
    outcome_csv_rows,
    outcome_tables,
)
from audit.ledger.services import gate_recompute
from audit.partitions.selectors import partition_sealed
from tests.annotation.annotations import answer_claims, source_risk
from tests.annotation.conftest import add_people, make_study

pytestmark = pytest.mark.django_db

SCRIPT = "<script>alert(1)</script>"


def client_for(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def label(study, user, values, role="affiliate_marketing", rationale=None):
    """One independent label through the services, its job run directly."""
    assignment = assignment_next(study=study, annotator=user)
    annotation = source_risk(unit_content(unit=assignment.unit), values=values, rationale=rationale)
    annotation["source_role"] = role
    submitted = label_submit(
        assignment=assignment,
        annotation=annotation,
        client_submission_id=uuid.uuid4(),
        parent_digest=None,
    ).label
    label_submitted.run(submitted.pk)
    return submitted


def adjudicate(unit, adjudicator, annotation):
    final = adjudication_submit(
        unit=unit,
        adjudicator=adjudicator,
        annotation=annotation,
        rationale="The commission note on the source page settles materiality.",
        client_submission_id=uuid.uuid4(),
    )
    label_adjudicated.run(final.pk)
    return final


@pytest.fixture
def study(db):
    return make_study("outc", "source-risk-1.0.0", "source-risk.jsonl", overlap=2)


@pytest.fixture
def people(study):
    return add_people(study)


@pytest.fixture
def world(study, people):
    """Seven units. Calibration: u1 agreed R_O=1, u3 agreed R_O=U (short-circuit U),
    u4 agreed R_O=U (short-circuit 0), u5 disputed then adjudicated to R_O=1.
    Test (sealed): u2 agreed R_O=0 by a role nobody else uses. Unassigned: u6 disputed,
    u7 partially labelled, and the 28 units nobody opened."""
    a, b = people["ann_a"], people["ann_b"]
    units = {}

    def pair(name, first, second=None, role="affiliate_marketing", **kw):
        one = label(study, a, first, role, **kw)
        two = label(study, b, second or first, role)
        assert one.unit_id == two.unit_id
        units[name] = Unit.objects.get(pk=one.unit_id)
        return one, two

    pair("u1", (1, 1, 1, 0), rationale=SCRIPT)
    pair("u2", (0, 1, 1, 0), role="target_owned")
    pair("u3", (1, 1, None, 0), role="sponsored")
    pair("u4", (0, None, 1, 0), role="sponsored")
    first, _ = pair("u5", (1, 1, 1, 0), (1, 1, None, 0))
    adjudicate(units["u5"], people["adj"], first.annotation)
    pair("u6", (1, 1, 1, 0), (0, 1, 1, 0))
    units["u7"] = Unit.objects.get(pk=label(study, a, (1, 1, 1, 0)).unit_id)

    calibration = [units[n].pk for n in ("u1", "u3", "u4", "u5")]
    Unit.objects.filter(pk__in=calibration).update(partition="calibration")
    Unit.objects.filter(pk=units["u2"].pk).update(partition="test")
    for name, priority in (("u1", 0.5), ("u3", 0.9), ("u4", None), ("u5", 0.7)):
        Unit.objects.filter(pk=units[name].pk).update(priority=priority)
    return {name: Unit.objects.get(pk=unit.pk) for name, unit in units.items()}


def outcomes_url(study) -> str:
    return reverse("study-outcomes", args=[study.slug])


def record_url(study, digest) -> str:
    return reverse("study-record", args=[study.slug, digest])


def final_of(unit) -> Label:
    kind = LabelKind.ADJUDICATED if unit.state == UnitState.ADJUDICATED else LabelKind.CONSENSUS
    return Label.objects.get(unit=unit, kind=kind)


def tables_by_partition(tables):
    return {table.partition: table for table in tables}


# --- outcomes page -----------------------------------------------------------------------


def test_final_records_are_counted_by_partition_source_role_and_both_policies(study, people, world):
    response = client_for(people["res"]).get(outcomes_url(study))

    assert response.status_code == 200
    outcomes = response.context["outcomes"]
    final = tables_by_partition(outcomes.final)
    calibration = final["calibration"]
    assert (calibration.units, calibration.records, calibration.awaiting) == (4, 4, 0)
    roles = {row.role: row for row in calibration.roles}
    assert list(roles) == ["sponsored", "affiliate_marketing"]  # the codebook's order
    affiliate, sponsored = roles["affiliate_marketing"], roles["sponsored"]
    assert affiliate.records == 2  # u1 (consensus) and u5 (adjudicated)
    cc, sc = affiliate.complete_case, affiliate.short_circuit
    assert (cc.one, cc.zero, cc.unresolved) == (2, 0, 0)
    assert (sc.one, sc.zero, sc.unresolved) == (2, 0, 0)
    cc, sc = sponsored.complete_case, sponsored.short_circuit
    assert (cc.one, cc.zero, cc.unresolved) == (0, 0, 2)
    assert (sc.one, sc.zero, sc.unresolved) == (0, 1, 1)  # u4 has A=U but I=0
    actions = dict(calibration.policy_actions)
    cc_actions = actions["Complete-case R_O (primary)"].actions
    sc_actions = actions["Short-circuit (sensitivity)"].actions
    assert cc_actions == {"PASS": 0, "CONTEXTUALIZE": 2, "REVIEW": 2, "ABSTAIN": 0}
    assert sc_actions == {"PASS": 1, "CONTEXTUALIZE": 2, "REVIEW": 1, "ABSTAIN": 0}

    unassigned = final["unassigned"]
    assert (unassigned.units, unassigned.records, unassigned.awaiting) == (30, 0, 30)
    assert unassigned.awaiting_by_state == {"disputed": 1, "partially_labelled": 1, "open": 28}

    independent = tables_by_partition(outcomes.independent)["calibration"]
    assert independent.records == 8  # two annotators on each of four units
    assert independent.awaiting is None
    heads = {row.role: row for row in independent.roles}["affiliate_marketing"]
    assert (heads.complete_case.one, heads.complete_case.unresolved) == (3, 1)

    html = response.content.decode()
    assert "Complete-case R_O" in html
    assert "Short-circuit" in html
    assert "Awaiting agreement or adjudication" in html
    assert "<svg" in html
    assert 'fill="#c2571a"' in html
    assert " style=" not in html.split("<main", 1)[1]


def test_a_disagreement_broken_after_consensus_is_not_a_final_record(study, people, world):
    Unit.objects.filter(pk=world["u1"].pk).update(state=UnitState.DISPUTED)
    response = client_for(people["res"]).get(outcomes_url(study))
    calibration = tables_by_partition(response.context["outcomes"].final)["calibration"]
    assert (calibration.records, calibration.awaiting) == (3, 1)


def test_the_test_partition_is_sealed(study, people, world):
    assert partition_sealed(study, "test")
    assert not partition_sealed(study, "calibration")
    assert not partition_sealed(study, "unassigned")

    response = client_for(people["res"]).get(outcomes_url(study))

    html = response.content.decode()
    outcomes = response.context["outcomes"]
    test = tables_by_partition(outcomes.final)["test"]
    assert test.sealed
    assert test.records == 0
    assert test.roles == ()
    assert test.units is None
    assert tables_by_partition(outcomes.independent)["test"].sealed
    assert outcomes.sealed_partitions == ["test"]
    assert "sealed until the study is frozen" in html
    # u2 is the only PASS and the only target_owned record: nothing of it may show.
    assert "target_owned" not in html
    assert "Owned by the target" not in html
    u2_digests = Label.objects.filter(unit=world["u2"]).values_list("record_digest", flat=True)
    for digest in u2_digests:
        assert digest not in html
    for table in ("final", "independent", "review"):
        body = client_for(people["res"]).get(
            reverse("study-outcomes-csv", args=[study.slug]), {"table": table}
        )
        text = body_text(body)
        assert "test" not in [row[1] if table == "review" else row[0] for row in _rows(text)]
        assert "target_owned" not in text


def test_contextualize_and_review_units_are_listed_by_priority(study, people, world):
    response = client_for(people["res"]).get(outcomes_url(study))

    review = response.context["review"]
    assert [row.unit_id for row in review] == [
        world["u3"].pk,  # 0.9 REVIEW
        world["u5"].pk,  # 0.7 CONTEXTUALIZE (adjudicated)
        world["u1"].pk,  # 0.5 CONTEXTUALIZE
        world["u4"].pk,  # no priority: last
    ]
    assert [row.action for row in review] == ["REVIEW", "CONTEXTUALIZE", "CONTEXTUALIZE", "REVIEW"]
    assert review[1].kind == "adjudicated"
    html = response.content.decode()
    for row in review:
        assert record_url(study, row.record_digest) in html
        assert f'{record_url(study, row.record_digest)}#ledger">#{row.seq}<' in html
    positions = [html.index(record_url(study, row.record_digest)) for row in review]
    assert positions == sorted(positions)


def test_the_csv_downloads_hold_every_table(study, people, world):
    client = client_for(people["res"])
    url = reverse("study-outcomes-csv", args=[study.slug])

    final = client.get(url, {"table": "final"})
    assert final["Content-Type"].startswith("text/csv")
    assert 'filename="outc-outcomes-final.csv"' in final["Content-Disposition"]
    rows = _rows(final.content.decode())
    assert rows[0][:7] == [
        "partition",
        "source_role",
        "policy",
        "records",
        "endpoint_1",
        "endpoint_0",
        "endpoint_U",
    ]
    by_key = {(r[0], r[1], r[2]): r for r in rows[1:]}
    assert by_key[("calibration", "sponsored", "short_circuit")][4:7] == ["0", "1", "1"]
    assert by_key[("calibration", "(all)", "complete_case")][-1] == "0"
    assert by_key[("unassigned", "(all)", "complete_case")][-1] == "30"

    review_response = client.get(url, {"table": "review"})
    assert review_response.streaming  # one row per unit: never built whole in memory
    review = _rows(body_text(review_response))
    assert [r[0] for r in review[1:]] == [world[n].digest for n in ("u3", "u5", "u1", "u4")]
    assert review[1][3] == "0.9"
    assert review[4][3] == ""

    assert client.get(url, {"table": "nonsense"}).status_code == 404


def body_text(response) -> str:
    """A response's text, streamed or not."""
    if response.streaming:
        return b"".join(response.streaming_content).decode()
    return response.content.decode()


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ('=HYPERLINK("http://x")', '\'=HYPERLINK("http://x")'),
        ("+1+1", "'+1+1"),
        ("-2", "'-2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("affiliate_marketing", "affiliate_marketing"),
        (3, "3"),
        (None, ""),
    ],
)
def test_csv_cells_that_a_spreadsheet_would_run_are_escaped(value, cell):
    assert csv_cell(value) == cell


def test_an_injected_role_leaves_the_csv_as_text():
    data = OutcomeData(
        codebook_unit="tuple",
        answerability_policy=None,
        source_roles=(("sponsored", "Sponsored"),),
        units={"calibration": 1},
        awaiting={},
        final=(GroupRow("calibration", '=cmd|" /C calc"!A0', None, 1),),
        independent=(),
    )
    tables = outcome_tables(data, data.final, sealed=lambda p: False, finals=True)
    cells = [csv_cell(v) for row in outcome_csv_rows(tables, is_tuple=True) for v in row]
    assert '\'=cmd|" /C calc"!A0' in cells
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@"))]
    assert tables[0].roles[0].not_computed == 1  # no ledger entry: not computed yet
    assert NO_ROLE == ""


def test_the_outcomes_page_takes_a_fixed_number_of_queries(
    study, people, world, django_assert_max_num_queries
):
    client = client_for(people["res"])
    client.get(outcomes_url(study))  # warm the session

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert client.get(outcomes_url(study)).status_code == 200
            csv_body = client.get(
                reverse("study-outcomes-csv", args=[study.slug]), {"table": "final"}
            )
            assert csv_body.status_code == 200
        return len(queries)

    before = count()
    for values in ((1, 1, 1, 0), (0, 0, 0, 1), (1, None, 1, 0), (1, 1, 1, 1)):
        label(study, people["ann_b"], values)  # u7's second label, then new units
        label(study, people["ann_c"], values)
    Unit.objects.filter(study=study, partition__isnull=True).update(partition="calibration")
    assert count() == before
    # Session, user, study with its codebook, membership, whether the study is small
    # enough to count here, the freeze (is `test` still sealed?), units by partition and
    # state, final and independent records grouped, the first rows of the review list, and
    # the record that the researcher has seen those units' labels (a savepoint, the insert,
    # the release of any slot they held on them).
    with django_assert_max_num_queries(15):
        client.get(outcomes_url(study))


def test_an_answer_claims_study_shows_verdict_counts(db):
    study = make_study("claims-out", "answer-claims-1.0.0", "answer-claims.jsonl")
    people = add_people(study)
    for user in (people["ann_a"], people["ann_b"]):
        assignment = assignment_next(study=study, annotator=user)
        submitted = label_submit(
            assignment=assignment,
            annotation=answer_claims(unit_content(unit=assignment.unit)),
            client_submission_id=uuid.uuid4(),
            parent_digest=None,
        ).label
        label_submitted.run(submitted.pk)

    response = client_for(people["res"]).get(outcomes_url(study))

    assert response.status_code == 200
    html = response.content.decode()
    assert "apply to tuple codebooks that derive it only" in html
    table = tables_by_partition(response.context["outcomes"].final)["unassigned"]
    verdicts = {row.verdict: row for row in table.verdicts}
    assert table.records == 1
    assert (verdicts["cited"].true, verdicts["cited"].false, verdicts["cited"].unknown) == (1, 0, 0)
    assert response.context["review"] == []
    rows = _rows(
        client_for(people["res"])
        .get(reverse("study-outcomes-csv", args=[study.slug]), {"table": "final"})
        .content.decode()
    )
    assert rows[0] == ["partition", "verdict", "records", "true", "false", "unknown"]
    assert ["unassigned", "cited", "1", "1", "0", "0"] in rows


@pytest.mark.parametrize("name", ["study-outcomes", "study-outcomes-csv"])
def test_only_researchers_see_outcomes(study, people, name):
    url = reverse(name, args=[study.slug])
    outsider = get_user_model().objects.create_user("outsider", password="pw")
    assert client_for(people["ann_a"]).get(url).status_code == 403
    assert client_for(people["adj"]).get(url).status_code == 403
    assert client_for(outsider).get(url).status_code == 404
    assert Client().get(url).status_code == 302  # to the login page
    assert client_for(people["res"]).get(url).status_code == 200


# --- record page -------------------------------------------------------------------------


def test_the_record_page_shows_the_record_as_the_checker_sees_it(study, people, world):
    consensus = final_of(world["u1"])
    entry = LedgerEntry.objects.get(record_digest=consensus.record_digest)

    response = client_for(people["res"]).get(record_url(study, consensus.record_digest))

    assert response.status_code == 200
    html = response.content.decode()
    assert "The checker now" in html
    assert "agrees with the ledger" in html
    assert "rebuilt record has this digest" in html
    assert "&quot;claimgate&quot;: &quot;record&quot;" in html  # pretty-printed, escaped
    for parent in consensus.parents:
        assert f'href="{record_url(study, parent)}"' in html
    assert entry.entry_hash in html
    assert entry.prev_hash in html
    assert f">{entry.seq}<" in html
    assert "CONTEXTUALIZE" in html
    assert response.context["detail"].result.endpoint == 1


def test_the_record_page_escapes_what_annotators_wrote(study, people, world):
    independent = Label.objects.get(
        unit=world["u1"], kind=LabelKind.INDEPENDENT, annotator=people["ann_a"]
    )
    response = client_for(people["res"]).get(record_url(study, independent.record_digest))
    html = response.content.decode()
    assert SCRIPT not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "None: this is a first record." in html


def test_record_page_access(study, people, world):
    digest = final_of(world["u1"]).record_digest
    url = record_url(study, digest)
    outsider = get_user_model().objects.create_user("outsider", password="pw")
    other = make_study("other", "source-risk-1.0.0", "source-risk.jsonl")
    Membership.objects.create(study=other, user=people["res"], role=Role.RESEARCHER)

    assert client_for(people["ann_a"]).get(url).status_code == 403
    assert client_for(outsider).get(url).status_code == 404
    assert client_for(people["res"]).get(record_url(study, "0" * 64)).status_code == 404
    # A digest of this study asked for under another study's slug names nothing there.
    assert client_for(people["res"]).get(record_url(other, digest)).status_code == 404
    assert client_for(people["res"]).post(url).status_code == 405


def test_the_record_page_takes_a_fixed_number_of_queries(
    study, people, world, django_assert_max_num_queries
):
    client = client_for(people["res"])
    # Thirteen reads, and four to record that the researcher saw the unit's labels.
    with django_assert_max_num_queries(17):
        assert client.get(record_url(study, final_of(world["u5"]).record_digest)).status_code == 200


# --- gate panel --------------------------------------------------------------------------


def test_the_gate_panel_is_shown_to_researchers_and_adjudicators_only(study, people, world):
    url = reverse("study-detail", args=[study.slug])
    gate_recompute(study=study)

    researcher = client_for(people["res"]).get(url).content.decode()
    assert "Validation gate" in researcher
    for stage in ("Conformance", "Structural", "Independent labels", "Adjudicated", "Frozen"):
        assert stage in researcher
    assert "Stage reached: <strong>Structural</strong>" in researcher
    assert "May not claim yet" in researcher
    assert "Never, with this tool" in researcher
    assert "1 disputed units wait for adjudication" in researcher
    assert reverse("study-gate-recompute", args=[study.slug]) in researcher
    assert reverse("study-outcomes", args=[study.slug]) in researcher

    adjudicator = client_for(people["adj"]).get(url).content.decode()
    assert "Validation gate" in adjudicator
    assert reverse("study-gate-recompute", args=[study.slug]) not in adjudicator
    assert reverse("study-outcomes", args=[study.slug]) not in adjudicator

    annotator = client_for(people["ann_a"]).get(url).content.decode()
    assert "Validation gate" not in annotator
    assert "disputed" not in annotator
    assert "fully_labelled" not in annotator
    assert reverse("study-outcomes", args=[study.slug]) not in annotator


def test_the_gate_panel_computes_a_missing_gate(study, people):
    assert not StudyGate.objects.filter(study=study).exists()
    html = client_for(people["res"]).get(reverse("study-detail", args=[study.slug])).content
    assert b"Stage reached: <strong>Conformance</strong>" in html
    assert StudyGate.objects.get(study=study).reached == "conformance"


def test_recompute_queues_the_gate_job(
    study, people, world, monkeypatch, django_capture_on_commit_callbacks
):
    queued = []
    monkeypatch.setattr(
        "audit.queueing.queue_job", lambda name, *args, **kwargs: queued.append((name, args))
    )
    url = reverse("study-gate-recompute", args=[study.slug])

    assert client_for(people["ann_a"]).post(url).status_code == 403
    assert client_for(people["adj"]).post(url).status_code == 403
    assert client_for(people["res"]).get(url).status_code == 405
    assert queued == []

    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(people["res"]).post(url, follow=True)

    assert queued == [(study_gate_refresh.name, (study.pk,))]
    assert response.redirect_chain[-1][0].endswith(
        reverse("study-detail", args=[study.slug]) + "#gate"
    )
    assert "being recomputed by a worker" in response.content.decode()
    assert study_gate_refresh.run(study.pk) == "structural"
    assert StudyGate.objects.get(study=study).reached == "structural"


def test_recompute_gate_command(study, people, world, capsys):
    call_command("recompute_gate", "--study", study.slug)
    out = capsys.readouterr().out
    assert out.startswith("outc: structural (next: independent_labels:")
    assert StudyGate.objects.get(study=study).reached == "structural"
    call_command("recompute_gate")
    assert "outc: structural" in capsys.readouterr().out
    with pytest.raises(Exception, match="no study 'nope'"):
        call_command("recompute_gate", "--study", "nope")


# --- a large study: counted by a worker ------------------------------------------------


def _numbers(outcomes):
    return (outcomes.final, outcomes.independent, outcomes.review, outcomes.review_total)


def test_a_large_studys_page_shows_what_a_worker_counted_and_says_when(
    study, people, world, settings
):
    from audit.ledger.jobs import study_outcomes_refresh
    from audit.ledger.models import OutcomeSummary
    from audit.ledger.selectors import study_outcomes

    exact = study_outcomes(study=study)  # counted in the request, as a small study is
    settings.OUTCOMES_INLINE_LABELS = 3  # now this study counts as large
    client = client_for(people["res"])
    csv_url = reverse("study-outcomes-csv", args=[study.slug])

    waiting = client.get(outcomes_url(study))
    assert waiting.status_code == 200
    assert waiting.context["outcomes"].counting
    assert "counting them now" in waiting.content.decode()
    assert 'hx-trigger="every 5s"' in waiting.content.decode()  # fills in by itself
    busy = client.get(csv_url, {"table": "final"})
    assert busy.status_code == 503
    assert busy["Retry-After"] == "10"

    assert study_outcomes_refresh.run(study.pk) == "counted"
    assert study_outcomes_refresh.run(study.pk) == "current"  # nothing new: not recounted
    shown = client.get(outcomes_url(study))
    outcomes = shown.context["outcomes"]
    assert (outcomes.counting, outcomes.stale) == (False, False)
    assert _numbers(outcomes) == _numbers(exact)  # the same numbers, sealing included
    assert outcomes.sealed_partitions == exact.sealed_partitions == ["test"]
    assert "with every label so far" in shown.content.decode()
    assert "hx-trigger" not in shown.content.decode()
    download = client.get(csv_url, {"table": "final"})
    assert download.status_code == 200
    assert "-as-of-" in download["Content-Disposition"]
    assert _rows(download.content.decode()) == _rows(
        "".join(
            ",".join(map(csv_cell, row)) + "\n"
            for row in outcome_csv_rows(exact.final, is_tuple=True)
        )
    )

    # A new label puts the stored counts behind: the page says so until the recount.
    label(study, people["ann_b"], (1, 1, 1, 0))
    behind = client.get(outcomes_url(study))
    assert behind.context["outcomes"].stale
    assert "newer labels are being counted" in behind.content.decode()
    assert study_outcomes_refresh.run(study.pk) == "counted"
    assert _numbers(client.get(outcomes_url(study)).context["outcomes"]) == _numbers(
        study_outcomes(study=study)
    )
    # Back under the limit, the study is counted in the request and stores nothing.
    settings.OUTCOMES_INLINE_LABELS = 10_000
    assert study_outcomes_refresh.run(study.pk) == "inline"
    assert not OutcomeSummary.objects.filter(study=study).exists()


def test_a_burst_of_events_queues_one_recount(monkeypatch, django_capture_on_commit_callbacks):
    from audit import queueing
    from audit.queueing import STUDY_OUTCOMES_REFRESH, debounce_release, queue_job_once

    sent = []
    monkeypatch.setattr(queueing, "_send", lambda name, args: sent.append((name, args)))
    debounce_release(STUDY_OUTCOMES_REFRESH, 999_999)
    with django_capture_on_commit_callbacks(execute=True):
        queue_job_once(STUDY_OUTCOMES_REFRESH, 999_999)
        queue_job_once(STUDY_OUTCOMES_REFRESH, 999_999)
    assert sent == [(STUDY_OUTCOMES_REFRESH, (999_999,))]
    debounce_release(STUDY_OUTCOMES_REFRESH, 999_999)  # the job starts: events queue again
    with django_capture_on_commit_callbacks(execute=True):
        queue_job_once(STUDY_OUTCOMES_REFRESH, 999_999)
    assert sent == [(STUDY_OUTCOMES_REFRESH, (999_999,))] * 2
    debounce_release(STUDY_OUTCOMES_REFRESH, 999_999)
