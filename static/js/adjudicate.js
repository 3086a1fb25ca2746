/*
 * Claimgate adjudication page: the independent labels side by side, and the final label
 * built from the adjudicator's choices — one side's value per field (a radio per column)
 * or the adjudicator's own; evidence spans follow the value taken (the union of the spans
 * of every annotator who gave it), minus the ones removed, plus the ones added from a
 * selection in a snapshot.
 *
 * Spans are read and highlighted with spans.js (ClaimgateSpans). The page's data comes
 * from one json_script element (#adjudicate-data). The server checks everything again.
 */
(function () {
  "use strict";

  const Spans = window.ClaimgateSpans;
  const PREDICATE_JUDGMENTS = ["I", "A", "M", "D"];

  // --- small helpers ------------------------------------------------------------------

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(function ([name, value]) {
      if (value === null || value === undefined || value === false) {
        return;
      }
      if (name === "text") {
        node.textContent = value;
      } else if (name === "className") {
        node.className = value;
      } else {
        node.setAttribute(name, value === true ? "" : String(value));
      }
    });
    (children || []).forEach(function (child) {
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    });
    return node;
  }

  function shorten(text, size) {
    return text.length > size ? text.slice(0, size - 1) + "…" : text;
  }

  function spanKey(span) {
    return span.snapshot + ":" + span.start + ":" + span.end;
  }

  function sortSpans(spans) {
    const order = { query: 0, answer: 1, source: 2 };
    return spans.slice().sort(function (a, b) {
      return (
        (order[a.snapshot] || 0) - (order[b.snapshot] || 0) || a.start - b.start || a.end - b.end
      );
    });
  }

  function fieldOfJudgment(judgment) {
    return PREDICATE_JUDGMENTS.indexOf(judgment) >= 0 ? "pred-" + judgment : judgment;
  }

  /** What an annotation says about one field of the comparison table. */
  function fieldValue(annotation, field) {
    if (!annotation) {
      return undefined;
    }
    if (field.startsWith("pred-")) {
      return (annotation.predicates || {})[field.slice(5)];
    }
    if (field.startsWith("evidence-")) {
      return (annotation.evidence || {})[field.slice(9)];
    }
    if (field.startsWith("verdict-")) {
      return (annotation.verdicts || {})[field.slice(8)];
    }
    if (field === "claims") {
      return annotation.claims || [];
    }
    return annotation[field];
  }


  function verdictText(value) {
    if (value === true) {
      return "true";
    }
    return value === false ? "false" : "unknown";
  }

  // --- snapshots and highlights ---------------------------------------------------------


  function marksOf(annotation, snapshot, isTuple) {
    const marks = [];
    if (!annotation) {
      return marks;
    }
    if (isTuple) {
      Object.entries(annotation.spans || {}).forEach(function ([judgment, spans]) {
        (spans || []).forEach(function (span) {
          if (span.snapshot === snapshot.kind) {
            marks.push({
              start: span.start,
              end: span.end,
              className: "j-" + judgment,
              key: judgment,
              title: judgment,
            });
          }
        });
      });
      return marks;
    }
    (annotation.claims || []).forEach(function (claim) {
      const span = claim.span;
      if (span && snapshot.kind === "answer") {
        marks.push({ start: span.start, end: span.end, className: "j-claim", key: claim.id, title: "claim " + claim.id });
      }
      const quote = claim.quote_span;
      if (quote && snapshot.kind === "source" && snapshot.digest === claim.source_digest) {
        marks.push({ start: quote.start, end: quote.end, className: "j-quote", key: claim.id, title: "quote of " + claim.id });
      }
    });
    return marks;
  }

  // --- the page -------------------------------------------------------------------------

  function start() {
    const node = document.getElementById("adjudicate-data");
    if (!node || !Spans) {
      return;
    }
    const data = JSON.parse(node.textContent);
    const isTuple = data.unit === "tuple";
    const columns = data.columns || [];
    // A selection made while the page loaded: setting the texts and drawing the highlights
    // replace the text nodes it lies in, so it is taken here and given back at the end.
    const early = Spans.selectionWithin(document.querySelectorAll("[data-snapshot]"));
    const snapshots = ClaimgateSpans.attachSnapshots(data);
    const viewGroup = document.getElementById("highlight-view");
    let buildFinal = function () {
      return data.final;
    };

    function highlight() {
      const checked = viewGroup ? viewGroup.querySelector("input:checked") : null;
      const view = checked ? checked.value : "final";
      const annotation = view === "final" ? buildFinal() : (columns[Number(view)] || {}).annotation;
      snapshots.forEach(function (snapshot) {
        const marks = marksOf(annotation, snapshot, isTuple);
        // Redrawn only when the marks change, so that a selection being made survives.
        const signature = JSON.stringify(marks);
        if (snapshot.signature !== signature) {
          snapshot.signature = signature;
          Spans.renderHighlights(snapshot.el, snapshot.text, marks);
        }
      });
    }

    if (viewGroup) {
      viewGroup.addEventListener("change", highlight);
    }
    if (!data.editable) {
      highlight();
      Spans.reselect(early);
      return;
    }
    const editor = createEditor(data, snapshots, highlight);
    buildFinal = editor.annotation;
    editor.update();
    if (Spans.reselect(early)) {
      editor.selectionChanged();
    }
  }

  function createEditor(data, snapshots, highlight) {
    const isTuple = data.unit === "tuple";
    const columns = data.columns;
    const form = document.getElementById("adjudicate-form");
    const annotationInput = document.getElementById("annotation-input");
    const stateInput = document.getElementById("page-state-input");
    const submitButton = document.getElementById("submit-adjudication");
    const errorsBox = document.getElementById("form-errors");
    const pickStatus = document.getElementById("pick-status");
    const rationale = document.getElementById("rationale");
    const toolbar = document.getElementById("span-toolbar");
    const labels = {};
    const rows = [];
    form.querySelectorAll("tr.field-row").forEach(function (row) {
      labels[row.dataset.field] = row.querySelector(".field-label").textContent;
      if (!row.classList.contains("kind-spans") && !row.classList.contains("kind-note")) {
        rows.push(row);
      }
    });

    let state = { picks: {}, own: {}, ownReason: {}, removed: {}, added: {}, claims: [] };

    // --- the state, from the page's inputs and back -----------------------------------

    function claimKeysOf(column) {
      return ((columns[column].annotation || {}).claims || []).map(function (_, index) {
        return column + ":" + index;
      });
    }

    function initialState() {
      const restored = data.restored;
      if (restored && typeof restored === "object" && restored.picks) {
        return {
          picks: restored.picks || {},
          own: restored.own || {},
          ownReason: restored.ownReason || {},
          removed: restored.removed || {},
          added: restored.added || {},
          claims: Array.isArray(restored.claims) ? restored.claims : [],
        };
      }
      const fresh = { picks: {}, own: {}, ownReason: {}, removed: {}, added: {}, claims: [] };
      // Where every annotator agrees, their value is taken; elsewhere nothing is.
      rows.forEach(function (row) {
        if (!row.classList.contains("differs")) {
          fresh.picks[row.dataset.field] = "0";
        }
      });
      if (fresh.picks.claims === "0") {
        fresh.claims = claimKeysOf(0);
      }
      return fresh;
    }

    function applyState() {
      rows.forEach(function (row) {
        const field = row.dataset.field;
        const pick = state.picks[field];
        row.querySelectorAll('input[type="radio"][name="pick-' + field + '"]').forEach(function (input) {
          input.checked = pick !== undefined && input.value === pick;
        });
        const own = row.querySelector("[data-own]");
        if (own) {
          own.value = state.own[field] !== undefined ? state.own[field] : "";
        }
        const reason = row.querySelector("[data-own-reason]");
        if (reason) {
          reason.value = state.ownReason[field] || "";
        }
      });
      form.querySelectorAll("input[data-claim]").forEach(function (box) {
        box.checked = state.claims.indexOf(box.dataset.claim) >= 0;
      });
    }

    // --- the final label ----------------------------------------------------------------

    function ownValue(field) {
      const raw = state.own[field];
      if (raw === undefined || raw === "") {
        return undefined;
      }
      if (field.startsWith("pred-") || field === "passage_support") {
        return { 1: 1, 0: 0, U: null }[raw];
      }
      if (field.startsWith("evidence-")) {
        const value = Number(raw);
        return Number.isFinite(value) ? value : undefined;
      }
      if (field.startsWith("verdict-")) {
        const value = { true: true, false: false, null: null }[raw];
        return value === undefined ? undefined : { value: value, reason: state.ownReason[field] || "" };
      }
      return raw;
    }

    function finalValue(field) {
      const pick = state.picks[field];
      if (pick === undefined) {
        return undefined;
      }
      if (pick === "own") {
        return ownValue(field);
      }
      return fieldValue((columns[Number(pick)] || {}).annotation, field);
    }

    /** The columns whose value for `field` equals the final one (their spans are kept). */
    function agreeingColumns(field) {
      const value = finalValue(field);
      if (value === undefined) {
        return [];
      }
      return columns
        .map(function (column, index) {
          return fieldValue(column.annotation, field) === value ? index : -1;
        })
        .filter(function (index) {
          return index >= 0;
        });
    }

    /** Spans of a judgment: {kept: [...], removed: [...]} with `added` marked. */
    function spansOf(judgment) {
      const byKey = new Map();
      agreeingColumns(fieldOfJudgment(judgment)).forEach(function (index) {
        const spans = ((columns[index].annotation || {}).spans || {})[judgment] || [];
        spans.forEach(function (span) {
          byKey.set(spanKey(span), span);
        });
      });
      (state.added[judgment] || []).forEach(function (span) {
        if (!byKey.has(spanKey(span))) {
          byKey.set(spanKey(span), Object.assign({}, span, { added: true }));
        }
      });
      const removed = state.removed[judgment] || [];
      const kept = [];
      const dropped = [];
      sortSpans(Array.from(byKey.values())).forEach(function (span) {
        (removed.indexOf(spanKey(span)) >= 0 ? dropped : kept).push(span);
      });
      return { kept: kept, removed: dropped };
    }

    function plainSpan(span) {
      return { snapshot: span.snapshot, start: span.start, end: span.end, quote: span.quote };
    }

    function finalClaims() {
      const keys = state.claims.slice().sort(function (a, b) {
        const [ac, ai] = a.split(":").map(Number);
        const [bc, bi] = b.split(":").map(Number);
        return ac - bc || ai - bi;
      });
      const mixed = new Set(keys.map(function (key) {
        return key.split(":")[0];
      })).size > 1;
      const claims = [];
      keys.forEach(function (key) {
        const [column, index] = key.split(":").map(Number);
        const claim = (((columns[column] || {}).annotation || {}).claims || [])[index];
        if (claim) {
          // Ids stay unique when claims of several annotators are kept.
          claims.push(Object.assign({}, claim, { id: mixed ? "a" + (column + 1) + "-" + claim.id : claim.id }));
        }
      });
      return claims;
    }

    function annotation() {
      if (isTuple) {
        const predicates = {};
        PREDICATE_JUDGMENTS.forEach(function (key) {
          predicates[key] = finalValue("pred-" + key);
        });
        const spans = {};
        data.span_judgments.forEach(function (judgment) {
          const kept = spansOf(judgment).kept.map(plainSpan);
          if (kept.length) {
            spans[judgment] = kept;
          }
        });
        const evidence = {};
        (data.codebook.evidence_dimensions || []).forEach(function (item) {
          evidence[item.key] = finalValue("evidence-" + item.key);
        });
        return {
          predicates: predicates,
          passage_support: finalValue("passage_support"),
          source_role: finalValue("source_role"),
          spans: spans,
          evidence: evidence,
          assisted: null,
        };
      }
      const verdicts = {};
      (data.codebook.verdicts || []).forEach(function (item) {
        const verdict = finalValue("verdict-" + item.key);
        verdicts[item.key] = verdict ? { value: verdict.value, reason: verdict.reason } : undefined;
      });
      return { claims: finalClaims(), verdicts: verdicts, assisted: null };
    }

    function problems() {
      const found = [];
      rows.forEach(function (row) {
        const field = row.dataset.field;
        if (field === "claims") {
          return;
        }
        if (finalValue(field) === undefined) {
          found.push(
            labels[field] + ": " + (state.picks[field] === "own" ? "write your own value" : "take a side or write your own value")
          );
        } else if (field.startsWith("verdict-") && !String(finalValue(field).reason || "").trim()) {
          found.push(labels[field] + ": give a reason");
        }
      });
      if (isTuple) {
        data.span_judgments.forEach(function (judgment) {
          const value = finalValue(fieldOfJudgment(judgment));
          if ((value === 0 || value === 1) && spansOf(judgment).kept.length === 0) {
            found.push(labels["spans-" + judgment] + ": a resolved value needs at least one span");
          }
        });
      } else {
        if (state.picks.claims === undefined) {
          found.push("Claims: take one annotator’s claims or tick the ones to keep");
        }
        const supported = finalValue("verdict-supported");
        if (supported && supported.value !== ClaimgateSpans.summarizeSupported(finalClaims())) {
          found.push("Supported: the verdict disagrees with the kept claims (summary_mismatch)");
        }
      }
      if (!rationale.value.trim()) {
        found.push("Rationale: write why the final label is right — the server refuses an adjudication without one");
      }
      return found;
    }

    // --- rendering ----------------------------------------------------------------------

    function spanItems(judgment, spans) {
      const items = spans.kept.map(function (span) {
        return el("li", { className: "span-item" + (span.added ? " added" : "") }, [
          el("span", { className: "span-where muted", text: span.snapshot + " [" + span.start + ", " + span.end + ")" }),
          " ",
          el("span", { className: "span-quote", dir: "auto", text: "“" + shorten(span.quote, 140) + "”" }),
          span.added ? el("span", { className: "span-tag", text: "added" }) : "",
          el("button", {
            type: "button",
            className: "span-remove",
            "data-remove-span": spanKey(span),
            "data-judgment": judgment,
            "aria-label": "Remove this span from " + judgment,
            title: "Remove",
            text: "×",
          }),
        ]);
      });
      spans.removed.forEach(function (span) {
        items.push(
          el("li", { className: "span-item removed" }, [
            el("span", { className: "span-where muted", text: span.snapshot + " [" + span.start + ", " + span.end + ")" }),
            " ",
            el("s", { className: "span-quote", dir: "auto", text: "“" + shorten(span.quote, 80) + "”" }),
            el("button", {
              type: "button",
              className: "span-restore",
              "data-restore-span": spanKey(span),
              "data-judgment": judgment,
              text: "restore",
            }),
          ])
        );
      });
      if (!items.length) {
        items.push(el("li", { className: "muted", text: "no spans" }));
    }
    return items;
    }

    function renderSpans() {
      form.querySelectorAll("ul[data-final-spans]").forEach(function (list) {
        const judgment = list.dataset.judgment;
        const spans = spansOf(judgment);
        // Rebuilt only when its spans change: a list rebuilt under the pointer (a blur's
        // change event fires between mousedown and click) would swallow the click.
        const signature = JSON.stringify([spans.kept, spans.removed]);
        if (list.dataset.signature !== signature) {
          list.dataset.signature = signature;
          list.replaceChildren.apply(list, spanItems(judgment, spans));
        }
        const value = finalValue(fieldOfJudgment(judgment));
        const missing = form.querySelector('[data-missing-for="' + judgment + '"]');
        if (missing) {
          missing.hidden = !((value === 0 || value === 1) && spans.kept.length === 0);
        }
        // The columns whose spans the final label keeps.
        const agreeing = agreeingColumns(fieldOfJudgment(judgment));
        list.closest("tr").querySelectorAll("td[data-column]").forEach(function (cell) {
          cell.classList.toggle("contributes", agreeing.indexOf(Number(cell.dataset.column)) >= 0);
        });
      });
    }

    function renderClaims() {
      const value = document.getElementById("claims-summary-value");
      if (!value) {
        return;
      }
      const summary = ClaimgateSpans.summarizeSupported(finalClaims());
      value.textContent = verdictText(summary) + " (" + state.claims.length + " kept)";
      const supported = finalValue("verdict-supported");
      document.getElementById("summary-mismatch").hidden = !supported || supported.value === summary;
    }

    function update() {
      renderSpans();
      renderClaims();
      rows.forEach(function (row) {
        row.classList.toggle("unpicked", finalValue(row.dataset.field) === undefined && row.dataset.field !== "claims");
      });
      const open = rows.filter(function (row) {
        return row.classList.contains("unpicked");
      }).length;
      pickStatus.textContent = open
        ? open + " field" + (open === 1 ? "" : "s") + " still to decide"
        : "Every field is decided";
      highlight();
    }

    // --- events ---------------------------------------------------------------------------

    form.addEventListener("change", function (event) {
      const target = event.target;
      if (target.name && target.name.startsWith("pick-")) {
        const field = target.name.slice(5);
        state.picks[field] = target.value;
        if (field === "claims" && target.value !== "own") {
          state.claims = claimKeysOf(Number(target.value));
          applyState();
        }
      } else if (target.dataset.claim) {
        const keys = new Set(state.claims);
        if (target.checked) {
          keys.add(target.dataset.claim);
        } else {
          keys.delete(target.dataset.claim);
        }
        state.claims = Array.from(keys);
        state.picks.claims = "own";
        applyState();
      }
      update();
    });
    form.addEventListener("input", function (event) {
      const target = event.target;
      const field = target.dataset.own || target.dataset.ownReason;
      if (!field) {
        return;
      }
      if (target.dataset.own) {
        state.own[field] = target.value;
      } else {
        state.ownReason[field] = target.value;
      }
      // Writing a value of one's own takes it.
      state.picks[field] = "own";
      const radio = form.querySelector('input[name="pick-' + field + '"][value="own"]');
      if (radio) {
        radio.checked = true;
      }
      update();
    });

    // Keys on a row's radio: 1–9 take that annotator's value, o goes to one's own.
    form.addEventListener("keydown", function (event) {
      const target = event.target;
      if (target.type !== "radio" || !target.name.startsWith("pick-") || event.ctrlKey || event.metaKey || event.altKey) {
        return;
      }
      const row = target.closest("tr");
      let choice = null;
      if (/^[1-9]$/.test(event.key) && Number(event.key) <= columns.length) {
        choice = row.querySelector('input[name="' + target.name + '"][value="' + (Number(event.key) - 1) + '"]');
      } else if (event.key === "o") {
        choice = row.querySelector('input[name="' + target.name + '"][value="own"]');
      }
      if (!choice) {
        return;
      }
      event.preventDefault();
      choice.checked = true;
      choice.dispatchEvent(new Event("change", { bubbles: true }));
      const own = row.querySelector("[data-own]");
      (choice.value === "own" && own ? own : choice).focus();
    });

    form.addEventListener("click", function (event) {
      const remove = event.target.closest("[data-remove-span]");
      const restore = event.target.closest("[data-restore-span]");
      if (!remove && !restore) {
        return;
      }
      const button = remove || restore;
      const judgment = button.dataset.judgment;
      const key = remove ? remove.dataset.removeSpan : restore.dataset.restoreSpan;
      const removed = new Set(state.removed[judgment] || []);
      const added = state.added[judgment] || [];
      if (remove) {
        const index = added.findIndex(function (span) {
          return spanKey(span) === key;
        });
        if (index >= 0) {
          added.splice(index, 1); // an added span simply goes
          state.added[judgment] = added;
        } else {
          removed.add(key);
        }
      } else {
        removed.delete(key);
      }
      state.removed[judgment] = Array.from(removed);
      update();
      const list = form.querySelector('ul[data-judgment="' + judgment + '"]');
      const next = list && list.querySelector("button");
      if (next) {
        next.focus();
      }
    });

    // --- adding a span from a selection (spans.js converts the offsets) --------------------

    // The selection the toolbar shows; the toolbar attaches the live selection when there is
    // one (what the person sees selected), this one only when the live one is gone.
    let selection = null;
    let selectionTimer = null;
    // While the mouse button is down the person is still dragging: a toolbar shown then (for
    // half a selection) would sit under the pointer, be dragged into the selection, or be
    // clicked with the half selection. It is hidden when a press starts and shown once the
    // selection is made.
    let dragging = false;

    function readSelection() {
      const sel = window.getSelection();
      if (!sel || sel.rangeCount === 0 || sel.isCollapsed) {
        return null;
      }
      const range = sel.getRangeAt(0);
      const hits = snapshots.filter(function (snapshot) {
        return range.intersectsNode(snapshot.el);
      });
      if (hits.length !== 1) {
        return null;
      }
      const offsets = Spans.rangeOffsets(hits[0].el, range);
      if (!offsets) {
        return null;
      }
      const span = Spans.spanFromUtf16(hits[0].text, hits[0].kind, offsets[0], offsets[1]);
      return span ? { span: span, rect: range.getBoundingClientRect() } : null;
    }

    function hideToolbar() {
      toolbar.hidden = true;
      selection = null;
    }

    function showToolbar(found) {
      selection = found;
      toolbar.hidden = false;
      const top = window.scrollY + found.rect.bottom + 6;
      const left = Math.max(8, Math.min(window.scrollX + found.rect.left, window.scrollX + document.documentElement.clientWidth - toolbar.offsetWidth - 8));
      toolbar.style.top = top + "px";
      toolbar.style.left = left + "px";
    }

    function selectionChanged() {
      if (!toolbar) {
        return;
      }
      // One pending read: the latest change decides, whatever order timers run in.
      window.clearTimeout(selectionTimer);
      selectionTimer = window.setTimeout(function () {
        if (dragging) {
          return;
        }
        const found = readSelection();
        if (found) {
          showToolbar(found);
        } else if (!toolbar.contains(document.activeElement)) {
          hideToolbar();
        }
      }, 40);
    }

    if (toolbar) {
      document.addEventListener("selectionchange", selectionChanged);
      document.addEventListener(
        "mousedown",
        function (event) {
          if (toolbar.contains(event.target)) {
            return; // a toolbar button: the selection stays (see below)
          }
          dragging = event.button === 0;
          if (dragging) {
            hideToolbar();
          }
        },
        true,
      );
      document.addEventListener(
        "mouseup",
        function () {
          dragging = false;
          selectionChanged();
        },
        true,
      );
      toolbar.addEventListener("mousedown", function (event) {
        event.preventDefault(); // keep the selection while a button is pressed
      });
      toolbar.addEventListener("click", function (event) {
        const button = event.target.closest("[data-attach]");
        const found = readSelection() || selection;
        if (!button || !found) {
          return;
        }
        const judgment = button.dataset.attach;
        const span = found.span;
        const key = spanKey(span);
        state.removed[judgment] = (state.removed[judgment] || []).filter(function (k) {
          return k !== key;
        });
        const added = state.added[judgment] || [];
        if (!added.some(function (s) { return spanKey(s) === key; })) {
          added.push(span);
        }
        state.added[judgment] = added;
        hideToolbar();
        const sel = window.getSelection();
        if (sel) {
          sel.removeAllRanges();
        }
        update();
      });
      document.addEventListener("keydown", function (event) {
        if (event.key === "Escape" && !toolbar.hidden) {
          hideToolbar();
        }
      });
    }

    // --- submission ---------------------------------------------------------------------

    ClaimgateSubmit.guard({
      form: form,
      button: submitButton,
      errorsBox: errorsBox,
      heading: "Before you store the final label:",
      busyText: "Storing…",
      problems: problems,
      prepare: function () {
        annotationInput.value = JSON.stringify(annotation());
        stateInput.value = JSON.stringify(state);
      },
    });

    state = initialState();
    applyState();
    return { annotation: annotation, update: update, selectionChanged: selectionChanged };
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
