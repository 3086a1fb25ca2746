"""One rule for every CSV cell: what a spreadsheet could run gets an apostrophe."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from audit.contract.cells import runs_as_formula, spreadsheet_safe


@pytest.mark.parametrize(
    ("text", "written"),
    [
        ("=1+1", "'=1+1"),
        ("+cmd", "'+cmd"),
        ("-2", "'-2"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("\n=HYPERLINK(1)", "'\n=HYPERLINK(1)"),
        ("   =1+1", "'   =1+1"),
        ("\u3000+cmd", "'\u3000+cmd"),
        ("＝1+1", "'＝1+1"),
        ("＋cmd", "'＋cmd"),
        ("－2", "'－2"),
        ("＠SUM(A1)", "'＠SUM(A1)"),
        (" ＝1", "' ＝1"),
        ("   plain", "   plain"),
        ("plain = text", "plain = text"),
        ("affiliate_marketing", "affiliate_marketing"),
        ("", ""),
        ("   ", "   "),
    ],
)
def test_a_cell_a_spreadsheet_would_run_is_escaped(text, written):
    assert spreadsheet_safe(text) == written


@given(st.text())
def test_no_written_cell_runs_and_a_harmless_one_is_unchanged(text):
    written = spreadsheet_safe(text)
    assert not runs_as_formula(written)
    assert written == (f"'{text}" if runs_as_formula(text) else text)
