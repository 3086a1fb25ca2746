/*
 * Evidence spans for Claimgate's annotation forms.
 *
 * A span is {snapshot, start, end, quote}: a half-open range [start, end) counted in
 * Unicode code points of the snapshot text (Python str indices), with quote equal to
 * text[start:end]. Browsers count UTF-16 code units (an emoji outside the Basic
 * Multilingual Plane is two of them), so every offset taken from the DOM is converted here
 * before it leaves the page. The pure functions at the top need no DOM and are tested under
 * node (tests/annotation/test_spans_js.py); the DOM helpers below them read a selection
 * against one snapshot element whose text is exactly the snapshot text.
 */
(function (root, factory) {
  "use strict";
  const api = factory();
  if (typeof module === "object" && module.exports) {
    module.exports = api;
  } else {
    root.ClaimgateSpans = api;
  }
})(typeof self !== "undefined" ? self : this, function () {
  "use strict";

  function isHigh(unit) {
    return unit >= 0xd800 && unit <= 0xdbff;
  }

  function isLow(unit) {
    return unit >= 0xdc00 && unit <= 0xdfff;
  }

  function checkOffset(text, offset, limit) {
    if (!Number.isInteger(offset) || offset < 0 || offset > limit) {
      throw new RangeError("offset " + offset + " is outside a text of length " + limit);
    }
  }

  /**
   * The number of code points in the first `offset` UTF-16 code units of `text`.
   * An offset that falls between the two halves of a surrogate pair counts that pair
   * as not reached (roundUp false) or as reached (roundUp true). A lone surrogate counts
   * as one code point, as it does in Python.
   */
  function utf16ToCodePoint(text, offset, roundUp) {
    checkOffset(text, offset, text.length);
    let points = 0;
    let i = 0;
    while (i < offset) {
      const pair = isHigh(text.charCodeAt(i)) && i + 1 < text.length && isLow(text.charCodeAt(i + 1));
      if (pair && i + 1 === offset) {
        return roundUp ? points + 1 : points;
      }
      i += pair ? 2 : 1;
      points += 1;
    }
    return points;
  }

  /** The UTF-16 offset of code point `points` of `text` (the inverse of the above). */
  function codePointToUtf16(text, points) {
    checkOffset(text, points, text.length);
    let i = 0;
    let seen = 0;
    while (seen < points) {
      if (i >= text.length) {
        throw new RangeError("code point " + points + " is outside a text of " + seen);
      }
      const pair = isHigh(text.charCodeAt(i)) && i + 1 < text.length && isLow(text.charCodeAt(i + 1));
      i += pair ? 2 : 1;
      seen += 1;
    }
    return i;
  }

  /** len(text) in Python. */
  function codePointLength(text) {
    return utf16ToCodePoint(text, text.length, false);
  }

  /** text[start:end] in Python, for code point offsets. */
  function sliceCodePoints(text, start, end) {
    return text.slice(codePointToUtf16(text, start), codePointToUtf16(text, end));
  }

  const SPACE = /\s/u;

  /**
   * A span from a UTF-16 range [u16start, u16end) of `text`: converted to code points,
   * widened to whole surrogate pairs, trimmed of surrounding white space. Null when
   * nothing but white space is selected.
   */
  function spanFromUtf16(text, snapshot, u16start, u16end) {
    let lo = Math.min(u16start, u16end);
    let hi = Math.max(u16start, u16end);
    let start = utf16ToCodePoint(text, lo, false);
    let end = utf16ToCodePoint(text, hi, true);
    const points = Array.from(text.slice(codePointToUtf16(text, start), codePointToUtf16(text, end)));
    let first = 0;
    let last = points.length;
    while (first < last && SPACE.test(points[first])) {
      first += 1;
    }
    while (last > first && SPACE.test(points[last - 1])) {
      last -= 1;
    }
    if (first >= last) {
      return null;
    }
    end = start + last;
    start += first;
    return { snapshot: snapshot, start: start, end: end, quote: points.slice(first, last).join("") };
  }

  /** Whether `span` is a well-formed span of `text` (the server checks this again). */
  function spanMatches(text, span) {
    if (!span || !Number.isInteger(span.start) || !Number.isInteger(span.end)) {
      return false;
    }
    if (span.start < 0 || span.start >= span.end || span.end > codePointLength(text)) {
      return false;
    }
    return sliceCodePoints(text, span.start, span.end) === span.quote;
  }

  /**
   * Cut `text` into segments at every mark boundary, for highlighting overlapping marks.
   * `marks` is a list of {start, end} in code points; each segment is
   * {start, end, from, to, marks} with code point offsets, UTF-16 offsets (from, to) and the
   * indices of the marks that cover it.
   */
  function segments(text, marks) {
    const length = codePointLength(text);
    const cuts = new Set([0, length]);
    const usable = [];
    marks.forEach(function (mark, index) {
      const start = Math.max(0, Math.min(length, mark.start));
      const end = Math.max(0, Math.min(length, mark.end));
      if (start < end) {
        usable.push({ start: start, end: end, index: index });
        cuts.add(start);
        cuts.add(end);
      }
    });
    const points = Array.from(cuts).sort(function (a, b) {
      return a - b;
    });
    // One pass from code points to UTF-16 offsets for every cut.
    const units = new Map();
    let i = 0;
    let seen = 0;
    points.forEach(function (point) {
      while (seen < point) {
        const pair = isHigh(text.charCodeAt(i)) && i + 1 < text.length && isLow(text.charCodeAt(i + 1));
        i += pair ? 2 : 1;
        seen += 1;
      }
      units.set(point, i);
    });
    const result = [];
    for (let k = 0; k + 1 < points.length; k += 1) {
      const start = points[k];
      const end = points[k + 1];
      const covering = usable
        .filter(function (mark) {
          return mark.start <= start && mark.end >= end;
        })
        .map(function (mark) {
          return mark.index;
        });
      result.push({ start: start, end: end, from: units.get(start), to: units.get(end), marks: covering });
    }
    return result;
  }

  // --- DOM helpers (browser only) ---------------------------------------------------

  function pointOffset(element, node, offset) {
    const range = element.ownerDocument.createRange();
    range.setStart(element, 0);
    range.setEnd(node, offset);
    return range.toString().length;
  }

  /**
   * The UTF-16 offsets [from, to) of `range` within `element`'s text, clamped to the
   * element, or null when the range does not touch it. Derived from a Range relative to
   * the element, never from its markup, so highlights inside it do not shift offsets.
   */
  function rangeOffsets(element, range) {
    if (!range.intersectsNode(element)) {
      return null;
    }
    const length = element.textContent.length;
    const from = element.contains(range.startContainer)
      ? pointOffset(element, range.startContainer, range.startOffset)
      : 0;
    const to = element.contains(range.endContainer)
      ? pointOffset(element, range.endContainer, range.endOffset)
      : length;
    if (from >= to) {
      return null;
    }
    return [from, to];
  }

  /**
   * Show `text` in `element` with `marks` highlighted. Each mark is {start, end (code
   * points), className, key, title}; overlapping marks share a <mark> carrying every
   * class and key. The element's text stays exactly `text`.
   */
  function renderHighlights(element, text, marks) {
    const doc = element.ownerDocument;
    const fragment = doc.createDocumentFragment();
    segments(text, marks).forEach(function (segment) {
      const piece = text.slice(segment.from, segment.to);
      if (segment.marks.length === 0) {
        fragment.appendChild(doc.createTextNode(piece));
        return;
      }
      const mark = doc.createElement("mark");
      mark.className = "span-highlight";
      const keys = [];
      const titles = [];
      segment.marks.forEach(function (index) {
        const item = marks[index];
        if (item.className) {
          item.className.split(/\s+/).forEach(function (name) {
            if (name) {
              mark.classList.add(name);
            }
          });
        }
        if (item.key) {
          keys.push(item.key);
        }
        if (item.title && titles.indexOf(item.title) < 0) {
          titles.push(item.title);
        }
      });
      if (segment.marks.length > 1) {
        mark.classList.add("span-overlap");
      }
      mark.dataset.keys = keys.join(" ");
      if (titles.length) {
        mark.title = titles.join(", ");
      }
      mark.textContent = piece;
      fragment.appendChild(mark);
    });
    element.replaceChildren(fragment);
  }

  /**
   * The answer-level `supported` that claims imply — the server's rule (audit.contract
   * summarize_supported), used as a live hint: false if any verifiable claim is false,
   * true only if there is one and all are true, otherwise null (unknown).
   */
  function summarizeSupported(claims) {
    let seen = false;
    let unresolved = false;
    for (const claim of claims) {
      if (claim.kind !== "verifiable") {
        continue;
      }
      if (claim.supported === false) {
        return false;
      }
      seen = true;
      if (claim.supported !== true) {
        unresolved = true;
      }
    }
    return seen && !unresolved ? true : null;
  }

  /**
   * The document's selection when it lies inside exactly one of `elements`, as UTF-16
   * offsets of that element's text: {element, text, from, to}, or null. Taken before a
   * script replaces the element's text nodes (setting its text, drawing highlights) and
   * given back with `reselect`, so that a selection made while the page was still loading
   * survives the page's start.
   */
  function selectionWithin(elements) {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) {
      return null;
    }
    const range = sel.getRangeAt(0);
    const hits = Array.from(elements).filter(function (element) {
      return range.intersectsNode(element);
    });
    const offsets = hits.length === 1 ? rangeOffsets(hits[0], range) : null;
    if (!offsets) {
      return null;
    }
    return { element: hits[0], text: hits[0].textContent, from: offsets[0], to: offsets[1] };
  }

  /** Select `saved` (from `selectionWithin`) again if its element still shows the same
   * text; true when it did. */
  function reselect(saved) {
    if (!saved || !saved.element.isConnected || saved.element.textContent !== saved.text) {
      return false;
    }
    const walker = saved.element.ownerDocument.createTreeWalker(saved.element, NodeFilter.SHOW_TEXT);
    const range = saved.element.ownerDocument.createRange();
    let seen = 0;
    let started = false;
    let node;
    while ((node = walker.nextNode())) {
      const length = node.data.length;
      if (!started && saved.from < seen + length) {
        range.setStart(node, saved.from - seen);
        started = true;
      }
      if (started && saved.to <= seen + length) {
        range.setEnd(node, saved.to - seen);
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        return true;
      }
      seen += length;
    }
    return false;
  }

  /**
   * Give every `[data-snapshot]` element exactly its text from the page's JSON data (the
   * HTML parser turns CR LF into LF; the JSON copy is byte-exact) and return the list of
   * {el, kind, digest, text}. Sources are told apart by `data-source-digest`.
   */
  function attachSnapshots(data, root) {
    const sourceTexts = {};
    (data.sources || []).forEach(function (source) {
      sourceTexts[source.digest] = source.text;
    });
    const snapshots = [];
    (root || document).querySelectorAll("[data-snapshot]").forEach(function (node) {
      const kind = node.dataset.snapshot;
      const digest = node.dataset.sourceDigest || null;
      const text = digest ? sourceTexts[digest] : data.texts[kind];
      if (typeof text !== "string") {
        return;
      }
      node.textContent = text;
      snapshots.push({ el: node, kind: kind, digest: digest, text: text });
    });
    return snapshots;
  }

  return {
    utf16ToCodePoint: utf16ToCodePoint,
    codePointToUtf16: codePointToUtf16,
    codePointLength: codePointLength,
    sliceCodePoints: sliceCodePoints,
    spanFromUtf16: spanFromUtf16,
    spanMatches: spanMatches,
    segments: segments,
    rangeOffsets: rangeOffsets,
    renderHighlights: renderHighlights,
    summarizeSupported: summarizeSupported,
    attachSnapshots: attachSnapshots,
    selectionWithin: selectionWithin,
    reselect: reselect,
  };
});
