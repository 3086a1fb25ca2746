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
    const claimKinds = (data.codebook.claim_kinds || []).map(function (item) {
      return item.key;
    });
    const sourceLabels = {};
    (data.sources || []).forEach(function (source) {
      sourceLabels[source.digest] = source.label;
    });

    // --- the state, from the page's inputs and back -----------------------------------

    /** An annotator's claim ("column:index"), copied as a final claim the page can edit. */
    function keptClaim(key) {
      const [column, index] = key.split(":").map(Number);
      const claim = (((columns[column] || {}).annotation || {}).claims || [])[index];
      if (!claim) {
        return null;
      }
      return {
        origin: key,
        span: claim.span,
        source_digest: claim.source_digest || null,
        quote_span: claim.quote_span || null,
        supported: claim.supported === undefined ? null : claim.supported,
        accurate: claim.accurate === undefined ? null : claim.accurate,
        kind: claim.kind,
        reason: claim.reason || "",
      };
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
          claims: Array.isArray(restored.claims)
            ? restored.claims.filter(function (claim) {
                return claim && claim.span && Number.isInteger(claim.span.start);
              })
            : [],
        };
      }
      const fresh = { picks: {}, own: {}, ownReason: {}, removed: {}, added: {}, claims: [] };
      // Where every annotator agrees, their value is taken; elsewhere nothing is.
      rows.forEach(function (row) {
        if (!row.classList.contains("differs")) {
          fresh.picks[row.dataset.field] = "0";
        }
      });
      // Aligned claims that agree are kept (the first annotator's copy); the others wait
      // for a decision.
      document.querySelectorAll("tr.claim-row:not(.differs)").forEach(function (row) {
        const first = row.querySelector("[data-claim-key]");
        const claim = first ? keptClaim(first.dataset.claimKey) : null;
        if (claim) {
          fresh.claims.push(claim);
        }
      });
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
      renderFinalClaims();
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

    /** The final claims as the record stores them, numbered c1, c2 … in answer order. */
    function finalClaims() {
      return state.claims
        .map(function (claim, position) {
          return { claim: claim, position: position };
        })
        .sort(function (a, b) {
          return a.claim.span.start - b.claim.span.start || a.claim.span.end - b.claim.span.end || a.position - b.position;
        })
        .map(function (item, index) {
          const claim = item.claim;
          const opinion = claim.kind !== "verifiable";
          return {
            id: "c" + (index + 1),
            span: claim.span,
            source_digest: claim.source_digest || null,
            quote_span: claim.quote_span || null,
            supported: opinion ? null : claim.supported,
            accurate: opinion ? null : claim.accurate,
            kind: claim.kind,
            reason: claim.reason && claim.reason.trim() ? claim.reason : null,
          };
        });
    }

    function claimProblems() {
      const found = [];
      state.claims.forEach(function (claim, index) {
        const name = "Final claim " + (index + 1);
        if (claim.kind === "verifiable" && (claim.supported === true || claim.supported === false) && !claim.quote_span) {
          found.push(name + ": a resolved “supported” needs a quote: select the passage in a source, then “Use selection as quote”");
        }
        if (claim.quote_span && !claim.source_digest) {
          found.push(name + ": choose the source the quote is taken from");
        }
        if (!String(claim.reason || "").trim()) {
          found.push(name + ": give a reason");
        }
      });
      return found;
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
        found.push.apply(found, claimProblems());
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
      value.textContent =
        verdictText(summary) + " (" + state.claims.length + " claim" + (state.claims.length === 1 ? "" : "s") + ")";
      const supported = finalValue("verdict-supported");
      document.getElementById("summary-mismatch").hidden = !supported || supported.value === summary;
    }

    function update() {
      renderSpans();
      renderClaims();
      rows.forEach(function (row) {
        row.classList.toggle("unpicked", finalValue(row.dataset.field) === undefined);
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
      } else if (target.closest("#final-claims")) {
        claimEdited(target);
      }
      update();
    });
    form.addEventListener("input", function (event) {
      const target = event.target;
      if (target.closest("#final-claims")) {
        claimEdited(target);
        update();
        return;
      }
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
      return span ? { span: span, snapshot: hits[0], rect: range.getBoundingClientRect() } : null;
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

    // --- final claims: kept, edited or written (answer units) ------------------------------

    const claimList = document.getElementById("final-claims");
    const writeButton = document.getElementById("write-claim");
    const claimSelection = document.getElementById("claim-selection");
    // The last selection made in a snapshot: the buttons below act on it even when pressing
    // them moved the focus.
    let claimSource = null;

    function choiceSelect(claim, field, index, label) {
      const id = "final-claim-" + index + "-" + field;
      const current = claim[field] === true ? "true" : claim[field] === false ? "false" : "null";
      const select = el("select", { id: id, "data-claim-field": field }, [
        el("option", { value: "true", text: "true" }),
        el("option", { value: "false", text: "false" }),
        el("option", { value: "null", text: "unknown" }),
      ]);
      select.value = current;
      select.disabled = claim.kind !== "verifiable";
      return el("div", { className: "field claim-field" }, [el("label", { for: id, text: label }), select]);
    }

    function claimCard(claim, index) {
      const origin = claim.origin
        ? "kept from annotator " + (Number(claim.origin.split(":")[0]) + 1)
        : "written by you";
      const sourceId = "final-claim-" + index + "-source";
      const source = el("select", { id: sourceId, "data-claim-field": "source_digest" }, [
        el("option", { value: "", text: "— no source —" }),
      ].concat(
        (data.sources || []).map(function (item) {
          return el("option", { value: item.digest, text: item.label });
        })
      ));
      source.value = claim.source_digest || "";
      const kindId = "final-claim-" + index + "-kind";
      const kind = el("select", { id: kindId, "data-claim-field": "kind" }, (data.codebook.claim_kinds || []).map(function (item) {
        return el("option", { value: item.key, text: item.label });
      }));
      kind.value = claimKinds.indexOf(claim.kind) >= 0 ? claim.kind : claimKinds[0];
      const reasonId = "final-claim-" + index + "-reason";
      const reason = el("textarea", { id: reasonId, rows: 2, dir: "auto", "data-claim-field": "reason" });
      reason.value = claim.reason || "";
      const quote = claim.quote_span;
      return el("li", { className: "claim card final-claim", "data-final-claim": index }, [
        el("div", { className: "claim-head" }, [
          el("h4", { className: "claim-title", text: "Final claim " + (index + 1) }),
          el("span", { className: "muted", text: origin }),
          el("button", { type: "button", "data-claim-action": "remove", "aria-label": "Drop final claim " + (index + 1), text: "Drop" }),
        ]),
        el("blockquote", { className: "claim-text", dir: "auto" }, [
          "“" + shorten(claim.span.quote, 200) + "” ",
          el("span", { className: "muted", text: "answer [" + claim.span.start + ", " + claim.span.end + ")" }),
        ]),
        el("div", { className: "claim-quote-row" }, [
          el("button", { type: "button", "data-claim-action": "span", text: "Use answer selection as claim" }),
          el("button", { type: "button", "data-claim-action": "quote", text: "Use selection as quote" }),
          quote ? el("button", { type: "button", "data-claim-action": "unquote", text: "Remove quote" }) : "",
        ]),
        quote
          ? el("blockquote", { className: "claim-quote-text", dir: "auto" }, [
              "“" + shorten(quote.quote, 200) + "” ",
              el("span", { className: "muted", text: (sourceLabels[claim.source_digest] || "source") + " [" + quote.start + ", " + quote.end + ")" }),
            ])
          : el("p", { className: "muted", text: "No quote." }),
        el("div", { className: "claim-grid" }, [
          el("div", { className: "field claim-field" }, [el("label", { for: sourceId, text: "Source it relies on" }), source]),
          el("div", { className: "field claim-field" }, [el("label", { for: kindId, text: "Kind" }), kind]),
          choiceSelect(claim, "supported", index, "Supported by the quote"),
          choiceSelect(claim, "accurate", index, "Accurate"),
        ]),
        el("div", { className: "field claim-field" }, [el("label", { for: reasonId, text: "Reason (required)" }), reason]),
        el("p", { className: "claim-problem warning", role: "status", hidden: true }),
      ]);
    }

    function renderFinalClaims() {
      if (!claimList) {
        return;
      }
      claimList.replaceChildren.apply(
        claimList,
        state.claims.length
          ? state.claims.map(claimCard)
          : [el("li", { className: "muted", text: "No final claims yet: keep an annotator’s claim or write one." })]
      );
      document.querySelectorAll("[data-keep-claim]").forEach(function (button) {
        const kept = state.claims.some(function (claim) {
          return claim.origin === button.dataset.keepClaim;
        });
        button.disabled = kept;
        button.textContent = kept ? "Kept" : "Keep";
      });
    }

    function claimEdited(target) {
      const card = target.closest("[data-final-claim]");
      const field = target.dataset.claimField;
      const claim = card ? state.claims[Number(card.dataset.finalClaim)] : null;
      if (!claim || !field) {
        return;
      }
      if (field === "supported" || field === "accurate") {
        claim[field] = { true: true, false: false, null: null }[target.value];
      } else if (field === "source_digest") {
        claim.source_digest = target.value || null;
        if (claim.quote_span) {
          claim.quote_span = null; // the quote belonged to the previous source
          renderFinalClaims();
        }
      } else if (field === "kind") {
        claim.kind = target.value;
        if (claim.kind !== "verifiable") {
          claim.supported = null;
          claim.accurate = null;
        }
        renderFinalClaims();
      } else {
        claim[field] = target.value;
      }
    }

    function sayClaim(card, message) {
      const box = card ? card.querySelector(".claim-problem") : claimSelection;
      if (box) {
        box.textContent = message;
        box.hidden = false;
        box.classList.add("is-warning");
      }
    }

    function currentSelection() {
      return readSelection() || claimSource;
    }

    if (claimList) {
      document.addEventListener("selectionchange", function () {
        const found = readSelection();
        if (!found) {
          return;
        }
        claimSource = found;
        const where = found.snapshot.kind === "source" ? sourceLabels[found.snapshot.digest] || "a source" : "the " + found.snapshot.kind;
        claimSelection.classList.remove("is-warning");
        claimSelection.textContent = "Selected in " + where + ": “" + shorten(found.span.quote, 120) + "”";
      });
      // Pressing these buttons must not take the selection away first.
      form.addEventListener("mousedown", function (event) {
        if (event.target.closest("#write-claim, [data-claim-action='quote'], [data-claim-action='span']")) {
          event.preventDefault();
        }
      });
      writeButton.addEventListener("click", function () {
        const found = currentSelection();
        if (!found || found.snapshot.kind !== "answer") {
          sayClaim(null, "Select the claim in the answer text first, then press “Write a claim”.");
          return;
        }
        state.claims.push({
          origin: null,
          span: found.span,
          source_digest: null,
          quote_span: null,
          supported: null,
          accurate: null,
          kind: claimKinds[0],
          reason: "",
        });
        claimSource = null;
        claimSelection.textContent = "No text selected.";
        window.getSelection().removeAllRanges();
        renderFinalClaims();
        update();
        const cards = claimList.querySelectorAll("[data-final-claim]");
        const card = cards[cards.length - 1];
        card.querySelector("select").focus({ preventScroll: true });
        card.scrollIntoView({ block: "nearest" });
      });
      form.addEventListener("click", function (event) {
        const keep = event.target.closest("[data-keep-claim]");
        if (keep) {
          const claim = keptClaim(keep.dataset.keepClaim);
          if (claim) {
            state.claims.push(claim);
            renderFinalClaims();
            update();
          }
          return;
        }
        const action = event.target.closest("[data-claim-action]");
        const card = action && action.closest("[data-final-claim]");
        if (!card) {
          return;
        }
        const index = Number(card.dataset.finalClaim);
        const claim = state.claims[index];
        const what = action.dataset.claimAction;
        if (what === "remove") {
          state.claims.splice(index, 1);
        } else if (what === "unquote") {
          claim.quote_span = null;
        } else if (what === "span" || what === "quote") {
          const found = currentSelection();
          const wanted = what === "span" ? "answer" : "source";
          if (!found || found.snapshot.kind !== wanted) {
            sayClaim(
              card,
              what === "span"
                ? "Select the claim in the answer text first, then press “Use answer selection as claim”."
                : "Select the passage in a source first, then press “Use selection as quote”."
            );
            return;
          }
          if (what === "span") {
            claim.span = found.span;
          } else {
            claim.source_digest = found.snapshot.digest;
            claim.quote_span = { snapshot: "source", start: found.span.start, end: found.span.end, quote: found.span.quote };
          }
          claimSource = null;
          claimSelection.textContent = "No text selected.";
          window.getSelection().removeAllRanges();
        }
        renderFinalClaims();
        update();
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
