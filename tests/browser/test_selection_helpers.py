"""The selection helpers themselves, on a page of their own: code-point offsets select
exactly Python's ``text[start:end]``, across text nodes and elements, around emoji
(two UTF-16 code units), CJK and decomposed accents (NFD: a letter plus a combining
mark, two code points)."""

from __future__ import annotations

import html

import pytest

from tests.browser.conftest import VIEWPORT
from tests.browser.helpers import drag_select, select_text

pytestmark = pytest.mark.browser

# Three text nodes, the middle one inside a <mark>: as a form looks once it highlights.
PIECES = ("Café 😀 ", "漢字 👨\u200d👩\u200d👧", " e\u0301x ok")
TEXT = "".join(PIECES)


@pytest.fixture
def text_page(browser):
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    a, b, c = (html.escape(piece) for piece in PIECES)
    page.set_content(
        '<!doctype html><meta charset="utf-8">'
        '<body style="font: 20px sans-serif">'
        f'<div id="t" style="white-space: pre-wrap">{a}<mark>{b}</mark>{c}</div>'
    )
    yield page
    context.close()


def grapheme_boundaries(page) -> set[int]:
    """Code-point offsets where a user-perceived character starts or ends, as the browser
    segments the text (a selection never splits one: an emoji family or a letter with its
    combining accent is selected whole)."""
    return set(
        page.evaluate(
            """(text) => {
              const out = [Array.from(text).length];
              for (const {index} of new Intl.Segmenter("en", {granularity: "grapheme"})
                  .segment(text)) out.push(Array.from(text.slice(0, index)).length);
              return out;
            }""",
            TEXT,
        )
    )


def test_select_text_selects_python_slices_of_every_span(text_page):
    assert "\u0301" in TEXT
    assert any(ord(ch) > 0xFFFF for ch in TEXT)
    boundaries = grapheme_boundaries(text_page)
    assert TEXT.index("\u0301") not in boundaries  # e + accent is one character
    checked = 0
    for start in sorted(boundaries):
        for end in sorted(boundaries):
            if end > start:
                assert select_text(text_page, "#t", start, end) == TEXT[start:end], (start, end)
                checked += 1
    assert checked > 100


def test_a_selection_inside_a_character_grows_to_the_whole_character(text_page):
    family = TEXT.index("👨")
    assert select_text(text_page, "#t", family, family + 1) == "👨\u200d👩\u200d👧"
    accent = TEXT.index("\u0301")
    assert select_text(text_page, "#t", accent - 1, accent) == "e\u0301"


def test_select_text_rejects_offsets_outside_the_text(text_page):
    with pytest.raises(Exception, match="outside"):
        select_text(text_page, "#t", 0, len(TEXT) + 1)


@pytest.mark.parametrize("needle", ["Café", "😀 漢字", "e\u0301x ok", "字 👨\u200d👩\u200d👧"])
def test_a_mouse_drag_selects_the_same_slice(text_page, needle):
    start = TEXT.index(needle)
    assert drag_select(text_page, "#t", start, start + len(needle)) == needle
