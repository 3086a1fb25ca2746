"""static/js/spans.js under node: UTF-16 offsets of the browser become Python's code point
indices, for emoji (ZWJ sequences, flags), CJK, decomposed accents and right-to-left text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

SPANS_JS = Path(settings.BASE_DIR) / "static" / "js" / "spans.js"
NODE = shutil.which("node")


@pytest.fixture(autouse=True)
def _node() -> None:
    """These tests run the page's own script under Node.js; .ci/run installs it, so under
    CI=true a missing node is a failure, elsewhere a one-line skip."""
    if NODE is not None:
        return
    if os.environ.get("CI", "").strip().lower() == "true":
        pytest.fail("CI=true needs node (Debian package nodejs) to run static/js/spans.js")
    pytest.skip("needs node (Debian package nodejs) to run static/js/spans.js")


TEXTS = [
    "",
    "plain ASCII text",
    "Café 😀 ok",
    "👨\u200d👩\u200d👧\u200d👦 family, 🏳️\u200d🌈 flag",
    "flags 🇩🇪🇫🇷🇯🇵 in a row",
    "漢字かな交じり文、中文句子。한국어",
    "e\u0301cole, n\u0303, a\u030a\u0301 (NFD)",
    "שלום עולם — مرحبا بالعالم 123",
    "𝒳𝒴𝒵 math 𝔘 and 🀄 tiles",
    "line one\r\nline two\n\ttabbed ",
    "😀",
    "  padded 😀  ",
]

# Runs the module's functions over every offset and reports what it computed.
PROGRAM = r"""
const Spans = require(process.argv[1]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = input.map(function (text) {
  const u16 = text.length;
  const toPoint = [], toPointUp = [], toUnit = [];
  for (let i = 0; i <= u16; i += 1) {
    toPoint.push(Spans.utf16ToCodePoint(text, i, false));
    toPointUp.push(Spans.utf16ToCodePoint(text, i, true));
  }
  const length = Spans.codePointLength(text);
  for (let p = 0; p <= length; p += 1) {
    toUnit.push(Spans.codePointToUtf16(text, p));
  }
  const slices = {}, spans = {};
  for (let a = 0; a <= length; a += 1) {
    for (let b = a; b <= length; b += 1) {
      slices[a + ":" + b] = Spans.sliceCodePoints(text, a, b);
      spans[a + ":" + b] = Spans.spanFromUtf16(text, "answer", toUnit[a], toUnit[b]);
    }
  }
  const segments = Spans.segments(text, [{start: 1, end: 3}, {start: 2, end: length}]);
  return {length, toPoint, toPointUp, toUnit, slices, spans, segments};
});
process.stdout.write(JSON.stringify(out));
"""


def utf16_offset(text: str, index: int) -> int:
    """Where Python's code point ``index`` falls in UTF-16 code units."""
    return len(text[:index].encode("utf-16-le")) // 2


@pytest.fixture(scope="module")
def computed() -> list[dict]:
    result = subprocess.run(
        [NODE, "-e", PROGRAM, str(SPANS_JS)],
        input=json.dumps(TEXTS),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(result.stdout)


@pytest.mark.parametrize("index", range(len(TEXTS)))
def test_offsets_convert_both_ways_like_python(computed, index):
    text = TEXTS[index]
    got = computed[index]
    assert got["length"] == len(text)
    assert got["toUnit"] == [utf16_offset(text, i) for i in range(len(text) + 1)]
    for i in range(len(text) + 1):
        assert got["toPoint"][utf16_offset(text, i)] == i


@pytest.mark.parametrize("index", range(len(TEXTS)))
def test_an_offset_inside_a_surrogate_pair_rounds_to_a_whole_code_point(computed, index):
    text = TEXTS[index]
    got = computed[index]
    starts = {utf16_offset(text, i): i for i in range(len(text) + 1)}
    for unit in range(len(text.encode("utf-16-le")) // 2 + 1):
        if unit in starts:
            assert got["toPoint"][unit] == got["toPointUp"][unit] == starts[unit]
        else:  # between the halves of an astral character
            below = max(i for offset, i in starts.items() if offset < unit)
            assert (got["toPoint"][unit], got["toPointUp"][unit]) == (below, below + 1)


@pytest.mark.parametrize("index", range(len(TEXTS)))
def test_slices_and_spans_are_python_slices(computed, index):
    text = TEXTS[index]
    got = computed[index]
    for a in range(len(text) + 1):
        for b in range(a, len(text) + 1):
            assert got["slices"][f"{a}:{b}"] == text[a:b]
            span = got["spans"][f"{a}:{b}"]
            if not text[a:b].strip():
                assert span is None
                continue
            # Surrounding white space is trimmed; the quote is always text[start:end].
            assert span["snapshot"] == "answer"
            assert span["quote"] == text[span["start"] : span["end"]]
            assert span["quote"] == text[a:b].strip()
            assert a <= span["start"] < span["end"] <= b


def test_segments_cut_at_every_mark_boundary(computed):
    text = TEXTS[3]
    got = computed[3]["segments"]
    assert [(s["start"], s["end"], s["marks"]) for s in got] == [
        (0, 1, []),
        (1, 2, [0]),
        (2, 3, [0, 1]),
        (3, len(text), [1]),
    ]
    for segment in got:
        assert segment["from"] == utf16_offset(text, segment["start"])
        assert segment["to"] == utf16_offset(text, segment["end"])
