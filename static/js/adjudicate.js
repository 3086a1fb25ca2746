/*
 * Claimgate adjudication page, for every codebook: the independent labels side by side
 * (engine views, one row per field), and the final label built from the adjudicator's
 * choices — one label's value per field (a radio per column: its reason and evidence
 * spans come with it) or the adjudicator's own; evidence spans removed or added from a
 * selection in a snapshot; for a claims field, the final claims kept from an annotator or
 * written.
 *
 * The picks are the form's radios; everything else goes to the server as one JSON object
 * (`edits`, see annotator/adjudication/final.py), which builds the final engine view and
 * writes it with the codebook's writer. The page works without this script (picks only).
 * Spans are read and highlighted with spans.js (ClaimgateSpans). The server checks
 * everything again.
 */
(function () {
  "use strict";

  const Spans = window.ClaimgateSpans;

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

  /** What identifies an evidence span: its field, snapshot and offsets. */
  function spanKey(span) {
    return span.field + ":" + span.snapshot + ":" + span.start + ":" + span.end;
  }

  function sortSpans(spans) {
    return spans.slice().sort(function (a, b) {
      return (
        String(a.snapshot).localeCompare(String(b.snapshot)) || a.start - b.start || a.end - b.end
      );
    });
  }

  function verdictText(value) {
    if (value === true) {
      return "true";
    }
    return value === false ? "false" : "unknown";
  }

  /** A field's value in an engine view (`undefined` when not answered); `key` is a
   * field's code or "code:N" for a per-document field on document N. */
  function valueOf(view, key) {
    if (!view) {
      return undefined;
    }
    const found = /^(.*):(\d+)$/.exec(key);
    let values = view.values;
    let code = key;
    if (found) {
      const entry = (view.documents || [])[Number(found[2])];
      values = entry ? entry.values : null;
      code = found[1];
    }
    if (!values || typeof values !== "object" || !(code in values)) {
      return undefined;
    }
    return values[code];
  }

  // --- snapshots and highlights ---------------------------------------------------------

  /** The page's snapshots (their texts as the server wrote them), each with the source
   * digest a format-1 claim names it by ("source:N" is the answer's source N). */
  function snapshotsOf(data) {
    const out = [];
    document.querySelectorAll("[data-snapshot]").forEach(function (node) {
      const kind = node.dataset.snapshot;
      const found = /^source:(\d+)$/.exec(kind);
      const source = found ? (data.sources || [])[Number(found[1])] : null;
      out.push({ el: node, kind: kind, digest: source ? source.digest : null, text: node.textContent });
    });
    return out;
  }

  function marksOf(view, claims, snapshot) {
    const marks = [];
    ((view && view.spans) || []).forEach(function (span) {
      if (span.snapshot === snapshot.kind) {
        marks.push({ start: span.start, end: span.end, className: "j-" + span.field, key: span.field, title: span.field });
      }
    });
    (claims || []).forEach(function (claim) {
      const span = claim.span;
      if (span && snapshot.kind === span.snapshot) {
        marks.push({ start: span.start, end: span.end, className: "j-claim", key: claim.id, title: "claim " + (claim.id || "") });
      }
      const quote = claim.quote_span;
      if (quote && snapshot.digest && snapshot.digest === claim.source_digest) {
        marks.push({ start: quote.start, end: quote.end, className: "j-quote", key: claim.id, title: "quote of " + (claim.id || "") });
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
    const columns = data.columns || [];
    const claimsCode = data.claims ? data.claims.code : null;
    // A selection made while the page loaded: drawing the highlights replaces the text
    // nodes it lies in, so it is taken here and given back at the end.
    const early = Spans.selectionWithin(document.querySelectorAll("[data-snapshot]"));
    const snapshots = snapshotsOf(data);
    const viewGroup = document.getElementById("highlight-view");
    let finalShown = function () {
      return { view: data.final, claims: claimsCode ? valueOf(data.final, claimsCode) : [] };
    };

    function highlight() {
      const checked = viewGroup ? viewGroup.querySelector("input:checked") : null;
      const which = checked ? checked.value : "final";
      let shown = finalShown();
      if (which !== "final") {
        const view = (columns[Number(which)] || {}).view;
        shown = { view: view, claims: claimsCode ? valueOf(view, claimsCode) : [] };
      }
      snapshots.forEach(function (snapshot) {
        const marks = marksOf(shown.view, shown.claims || [], snapshot);
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
    finalShown = editor.shown;
    editor.update();
    if (Spans.reselect(early)) {
      editor.selectionChanged();
    }
  }

  function createEditor(data, snapshots, highlight) {
    const columns = data.columns;
    const fields = data.fields || {};
    const claimsInfo = data.claims;
    const form = document.getElementById("adjudicate-form");
    const editsInput = document.getElementById("edits-input");
    const stateInput = document.getElementById("page-state-input");
    const submitButton = document.getElementById("submit-adjudication");
    const errorsBox = document.getElementById("form-errors");
    const pickStatus = document.getElementById("pick-status");
    const rationale = document.getElementById("rationale");
    const toolbar = document.getElementById("span-toolbar");
    const labels = {};
    const rows = [];
    form.querySelectorAll("tr.field-row[data-pickable]").forEach(function (row) {
      labels[row.dataset.field] = row.querySelector(".field-label").textContent;
      rows.push(row);
    });

    let state = { own: {}, ownReason: {}, removed: [], added: [], claims: [] };
    const claimKinds = claimsInfo ? claimsInfo.kinds : [];
    const claimVerdicts = claimsInfo ? claimsInfo.verdicts : [];
    const sourceLabels = {};
    (data.sources || []).forEach(function (source) {
      if (source.digest) {
        sourceLabels[source.digest] = source.label;
      }
    });

    function column(digest) {
      return columns.find(function (item) {
        return item.digest === digest;
      });
    }

    // --- the state, from the page's inputs and back -----------------------------------

    function pickOf(code) {
      const checked = form.querySelector('input[type="radio"][name="pick-' + CSS.escape(code) + '"]:checked');
      return checked ? checked.value : undefined;
    }

    /** An annotator's claim ("column:index"), copied as a final claim the page can edit. */
    function keptClaim(key) {
      const [index, position] = key.split(":").map(Number);
      const claim = ((valueOf((columns[index] || {}).view, claimsInfo.code)) || [])[position];
      if (!claim) {
        return null;
      }
      const kept = {
        origin: key,
        span: claim.span,
        source_digest: claim.source_digest || null,
        quote_span: claim.quote_span || null,
        kind: claim.kind,
        reason: claim.reason || "",
      };
      claimVerdicts.forEach(function (name) {
        kept[name] = claim[name] === undefined ? null : claim[name];
      });
      return kept;
    }

    function initialState() {
      const restored = data.restored;
      if (restored && typeof restored === "object" && restored.own) {
        return {
          own: restored.own || {},
          ownReason: restored.ownReason || {},
          removed: Array.isArray(restored.removed) ? restored.removed : [],
          added: Array.isArray(restored.added) ? restored.added : [],
          claims: Array.isArray(restored.claims)
            ? restored.claims.filter(function (claim) {
                return claim && claim.span && Number.isInteger(claim.span.start);
              })
            : [],
        };
      }
      const fresh = { own: {}, ownReason: {}, removed: [], added: [], claims: [] };
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
        const code = row.dataset.field;
        const own = row.querySelector("[data-own]");
        if (own) {
          own.value = state.own[code] !== undefined ? state.own[code] : "";
        }
        const reason = row.querySelector("[data-own-reason]");
        if (reason) {
          reason.value = state.ownReason[code] || "";
        }
      });
      renderFinalClaims();
    }

    // --- the final label ----------------------------------------------------------------

    /** The adjudicator's own value of a field, typed as the engine stores it. */
    function ownValue(code) {
      const raw = state.own[code];
      const type = (fields[code] || {}).type;
      if (raw === undefined || raw === "") {
        return undefined;
      }
      if (raw === "U" && (type === "grade" || type === "choice" || type === "verdict")) {
        return null;
      }
      if (type === "grade" || type === "number") {
        const value = Number(raw);
        return Number.isFinite(value) ? value : undefined;
      }
      if (type === "verdict") {
        return { true: true, false: false }[raw];
      }
      return raw;
    }

    function decided(code) {
      const pick = pickOf(code);
      return pick !== undefined && (pick !== "own" || ownValue(code) !== undefined);
    }

    function finalValue(code) {
      const pick = pickOf(code);
      if (pick === undefined) {
        return undefined;
      }
      if (pick === "own") {
        return ownValue(code);
      }
      return valueOf((column(pick) || {}).view, code);
    }

    /** Evidence spans of a unit-level field: {kept: [...], removed: [...]}, added marked. */
    function spansOf(code) {
      const pick = pickOf(code);
      const byKey = new Map();
      const picked = pick && pick !== "own" ? column(pick) : null;
      ((picked && picked.view.spans) || []).forEach(function (span) {
        if (span.field === code) {
          byKey.set(spanKey(span), span);
        }
      });
      state.added.forEach(function (span) {
        if (span.field === code && !byKey.has(spanKey(span))) {
          byKey.set(spanKey(span), Object.assign({}, span, { added: true }));
        }
      });
      const kept = [];
      const dropped = [];
      sortSpans(Array.from(byKey.values())).forEach(function (span) {
        (state.removed.indexOf(spanKey(span)) >= 0 ? dropped : kept).push(span);
      });
      return { kept: kept, removed: dropped };
    }

    function plainSpan(span) {
      return { field: span.field, snapshot: span.snapshot, start: span.start, end: span.end, quote: span.quote };
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
          const out = {
            id: "c" + (index + 1),
            span: claim.span,
            source_digest: claim.source_digest || null,
            quote_span: claim.quote_span || null,
          };
          claimVerdicts.forEach(function (name) {
            out[name] = opinion ? null : claim[name] === undefined ? null : claim[name];
          });
          out.kind = claim.kind;
          out.reason = claim.reason && claim.reason.trim() ? claim.reason : null;
          return out;
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

    /** What the server needs besides the picks (annotator/adjudication/final.py). */
    function edits() {
      const own = {};
      rows.forEach(function (row) {
        const code = row.dataset.field;
        if (pickOf(code) === "own" && ownValue(code) !== undefined) {
          own[code] = { value: ownValue(code), reason: state.ownReason[code] || "" };
        }
      });
      const keys = {};
      const removed = [];
      state.removed.forEach(function (key) {
        keys[key] = true;
      });
      columns.forEach(function (item) {
        (item.view.spans || []).forEach(function (span) {
          if (keys[spanKey(span)]) {
            keys[spanKey(span)] = false;
            removed.push({ field: span.field, snapshot: span.snapshot, start: span.start, end: span.end });
          }
        });
      });
      const out = {
        own: own,
        removed: removed,
        added: state.added
          .filter(function (span) {
            return state.removed.indexOf(spanKey(span)) < 0;
          })
          .map(plainSpan),
      };
      if (claimsInfo) {
        out.claims = {};
        out.claims[claimsInfo.code] = finalClaims();
      }
      return out;
    }

    /** The final label as the highlights show it: its spans and claims. */
    function shown() {
      const spans = [];
      rows.forEach(function (row) {
        if (row.querySelector("ul[data-final-spans]")) {
          spans.push.apply(spans, spansOf(row.dataset.field).kept);
        }
      });
      return { view: { spans: spans }, claims: claimsInfo ? finalClaims() : [] };
    }

    function summaryVerdict() {
      if (!claimsInfo || !claimsInfo.summary) {
        return undefined;
      }
      return finalValue(claimsInfo.summary);
    }

    function problems() {
      const found = [];
      rows.forEach(function (row) {
        const code = row.dataset.field;
        const field = fields[code] || {};
        const pick = pickOf(code);
        if (pick === "own") {
          if (ownValue(code) === undefined) {
            found.push(labels[code] + ": write your own value");
          } else if (field.reason === "required" && !String(state.ownReason[code] || "").trim()) {
            found.push(labels[code] + ": give a reason");
          }
        }
        const value = finalValue(code);
        if (
          row.querySelector("ul[data-final-spans]") &&
          field.evidence === "required" &&
          value !== undefined &&
          value !== null &&
          spansOf(code).kept.length === 0
        ) {
          found.push(labels[code] + ": a resolved value needs at least one span");
        }
      });
      if (claimsInfo) {
        found.push.apply(found, claimProblems());
        const supported = summaryVerdict();
        if (supported !== undefined && supported !== Spans.summarizeSupported(finalClaims())) {
          found.push(labels[claimsInfo.summary] + ": the verdict disagrees with the final claims (summary_mismatch)");
        }
      }
      if (!rationale.value.trim()) {
        found.push("Rationale: write why the final label is right — the server refuses an adjudication without one");
      }
      return found;
    }

    // --- rendering ----------------------------------------------------------------------

    function spanItems(code, spans) {
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
            "data-judgment": code,
            "aria-label": "Remove this span from " + labels[code],
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
              "data-judgment": code,
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
        const code = list.dataset.finalSpans;
        const spans = spansOf(code);
        // Rebuilt only when its spans change: a list rebuilt under the pointer (a blur's
        // change event fires between mousedown and click) would swallow the click.
        const signature = JSON.stringify([spans.kept, spans.removed]);
        if (list.dataset.signature !== signature) {
          list.dataset.signature = signature;
          list.replaceChildren.apply(list, spanItems(code, spans));
        }
        const value = finalValue(code);
        const missing = form.querySelector('[data-missing-for="' + CSS.escape(code) + '"]');
        if (missing) {
          missing.hidden = !(
            (fields[code] || {}).evidence === "required" &&
            value !== undefined &&
            value !== null &&
            spans.kept.length === 0
          );
        }
      });
    }

    function renderClaims() {
      const value = document.getElementById("claims-summary-value");
      if (!value) {
        return;
      }
      const summary = Spans.summarizeSupported(finalClaims());
      value.textContent =
        verdictText(summary) + " (" + state.claims.length + " claim" + (state.claims.length === 1 ? "" : "s") + ")";
      const supported = summaryVerdict();
      document.getElementById("summary-mismatch").hidden = supported === undefined || supported === summary;
    }

    function update() {
      renderSpans();
      renderClaims();
      rows.forEach(function (row) {
        row.classList.toggle("unpicked", !decided(row.dataset.field));
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
      if (target.closest("#final-claims")) {
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
      const code = target.dataset.own || target.dataset.ownReason;
      if (!code) {
        return;
      }
      if (target.dataset.own) {
        state.own[code] = target.value;
      } else {
        state.ownReason[code] = target.value;
      }
      // Writing a value of one's own takes it.
      const radio = form.querySelector('input[name="pick-' + CSS.escape(code) + '"][value="own"]');
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
        choice = row.querySelector('td[data-column="' + (Number(event.key) - 1) + '"] input[type="radio"]');
      } else if (event.key === "o") {
        choice = row.querySelector('input[type="radio"][value="own"]');
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
      const code = button.dataset.judgment;
      const key = remove ? remove.dataset.removeSpan : restore.dataset.restoreSpan;
      const removed = new Set(state.removed);
      if (remove) {
        const index = state.added.findIndex(function (span) {
          return spanKey(span) === key;
        });
        if (index >= 0) {
          state.added.splice(index, 1); // an added span simply goes
        } else {
          removed.add(key);
        }
      } else {
        removed.delete(key);
      }
      state.removed = Array.from(removed);
      update();
      const list = form.querySelector('ul[data-judgment="' + CSS.escape(code) + '"]');
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
        const span = Object.assign({ field: button.dataset.attach }, found.span);
        const key = spanKey(span);
        state.removed = state.removed.filter(function (k) {
          return k !== key;
        });
        if (!state.added.some(function (s) { return spanKey(s) === key; })) {
          state.added.push(span);
        }
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

    // --- final claims: kept, edited or written (claims fields) ------------------------------

    const claimList = document.getElementById("final-claims");
    const writeButton = document.getElementById("write-claim");
    const claimSelection = document.getElementById("claim-selection");
    // The last selection made in a snapshot: the buttons below act on it even when pressing
    // them moved the focus.
    let claimSource = null;

    function choiceSelect(claim, name, index) {
      const id = "final-claim-" + index + "-" + name;
      const current = claim[name] === true ? "true" : claim[name] === false ? "false" : "null";
      const select = el("select", { id: id, "data-claim-field": name }, [
        el("option", { value: "true", text: "true" }),
        el("option", { value: "false", text: "false" }),
        el("option", { value: "null", text: "unknown" }),
      ]);
      select.value = current;
      select.disabled = claim.kind !== "verifiable";
      const label = name === "supported" ? "Supported by the quote" : name.charAt(0).toUpperCase() + name.slice(1);
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
        (data.sources || []).filter(function (item) {
          return item.digest;
        }).map(function (item) {
          return el("option", { value: item.digest, text: item.label });
        })
      ));
      source.value = claim.source_digest || "";
      const kindId = "final-claim-" + index + "-kind";
      const kind = el("select", { id: kindId, "data-claim-field": "kind" }, claimKinds.map(function (key) {
        return el("option", { value: key, text: key });
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
        ].concat(
          claimVerdicts.map(function (name) {
            return choiceSelect(claim, name, index);
          })
        )),
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
      const name = target.dataset.claimField;
      const claim = card ? state.claims[Number(card.dataset.finalClaim)] : null;
      if (!claim || !name) {
        return;
      }
      if (claimVerdicts.indexOf(name) >= 0) {
        claim[name] = { true: true, false: false, null: null }[target.value];
      } else if (name === "source_digest") {
        claim.source_digest = target.value || null;
        if (claim.quote_span) {
          claim.quote_span = null; // the quote belonged to the previous source
          renderFinalClaims();
        }
      } else if (name === "kind") {
        claim.kind = target.value;
        if (claim.kind !== "verifiable") {
          claimVerdicts.forEach(function (verdict) {
            claim[verdict] = null;
          });
        }
        renderFinalClaims();
      } else {
        claim[name] = target.value;
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
        const where = found.snapshot.digest ? sourceLabels[found.snapshot.digest] || "a source" : "the " + found.snapshot.kind;
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
        const claim = {
          origin: null,
          span: found.span,
          source_digest: null,
          quote_span: null,
          kind: claimKinds[0],
          reason: "",
        };
        claimVerdicts.forEach(function (name) {
          claim[name] = null;
        });
        state.claims.push(claim);
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
          const fits = found && (what === "span" ? found.snapshot.kind === "answer" : Boolean(found.snapshot.digest));
          if (!fits) {
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
        editsInput.value = JSON.stringify(edits());
        stateInput.value = JSON.stringify(state);
      },
    });

    state = initialState();
    applyState();
    return { shown: shown, update: update, selectionChanged: selectionChanged };
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
