"""A text cell a spreadsheet will not run: one rule for every CSV Claimgate writes.

A spreadsheet treats a cell as a formula when its text starts with ``=``, ``+``, ``-`` or
``@`` — also after leading spaces or a line break, and also in their full-width forms
(``＝＋－＠``), which some spreadsheets fold to ASCII. A tab or a carriage return at the start
is refused for the same reason. Such a cell gets a leading apostrophe, which spreadsheets
show as text and never evaluate; every other cell is written as it is.
"""

from __future__ import annotations

#: Characters that start a formula (ASCII and full-width) or hide one behind them.
FORMULA_STARTS = frozenset("=+-@\t\r\n＝＋－＠")


def runs_as_formula(text: str) -> bool:
    """True when a spreadsheet could evaluate ``text`` as a formula."""
    if not text:
        return False
    if text[0] in FORMULA_STARTS:
        return True
    if text[0].isspace():
        rest = text.lstrip()
        return bool(rest) and rest[0] in FORMULA_STARTS
    return False


def spreadsheet_safe(text: str) -> str:
    """``text`` with a leading apostrophe where a spreadsheet would run it."""
    return "'" + text if runs_as_formula(text) else text
