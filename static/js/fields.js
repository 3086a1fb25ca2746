/*
 * Claimgate's generic annotation form: any codebook, from its engine fields
 * (server-rendered in templates/annotator/fields/; a format-1 codebook's judgments and
 * evidence dimensions are fields too, annotator.labelling.fields_page). Plugs into the
 * shared machinery of annotate.js (autosave, browser copy, submission); spans are made
 * with spans.js.
 *
 * The state is the engine's view of the annotation: {values, reasons, spans, rationale}.
 * A field not answered is absent from `values`; U is null. The server writes it in the
 * codebook's stored shape (audit.contract.engine.annotation_from_view), checks everything
 * again through the record contract and names every problem next to its field.
 *
 * A query_documents codebook adds `documents` (one {values, reasons} per document, in
 * rank order): each per-document field is rendered once per document, its inputs named
 * `field-<code>-<N>`; its set-level relations (`links`, `groups`) are edited here and
 * stored as lists of document positions (from 0; the page numbers documents from 1).
 */
(function () {
  "use strict";

  function fieldsForm(core) {
    const codebook = core.data.codebook;
    const form = document.getElementById("label-form");
    const fields = codebook.fields;
    const byCode = {};
    fields.forEach(function (field) {
      byCode[field.code] = field;
    });
    // A field type with an editor of its own (claims.js: window.ClaimgateFieldWidgets) is
    // edited by it: it reads and writes the field's value, names what the value still
    // needs and marks the texts; registered first, its keys go before the form's.
    const widgets = {};
    const makers = window.ClaimgateFieldWidgets || {};
    fields.forEach(function (field) {
      if (field.placement !== "document" && makers[field.type]) {
        const widget = makers[field.type](core, field, fields);
        if (widget) {
          widgets[field.code] = widget;
        }
      }
    });
    const isDocuments = codebook.unit === "query_documents";
    const nDocuments = isDocuments ? Number(core.data.documents || 0) : 0;
    const RELATIONS = { links: true, groups: true };
    // Every place a value is entered: a unit-level field once, a per-document field once
    // per document (its `code` the page's name for it, `base` the field's code).
    const slots = [];
    fields.forEach(function (field) {
      if (field.placement !== "document") {
        slots.push({ field: field, code: field.code, base: field.code, document: null });
      }
    });
    for (let n = 0; n < nDocuments; n += 1) {
      fields.forEach(function (field) {
        if (field.placement === "document") {
          slots.push({ field: field, code: field.code + "-" + n, base: field.code, document: n });
        }
      });
    }
    const relations = {};
    fields.forEach(function (field) {
      if (RELATIONS[field.type]) {
        relations[field.code] = [];
      }
    });
    let activeDocument = 0;
    const rationale = form.querySelector('textarea[name="rationale"]');
    // The toolbar is there when a field takes evidence spans.
    const toolbar = document.querySelector("#span-toolbar button[data-attach]")
      ? document.getElementById("span-toolbar")
      : null;
    const snapshotNames = {};
    core.snapshots.forEach(function (snapshot) {
      snapshotNames[snapshot.kind] = true;
    });
    let spans = [];
    let pending = null;
    let active = null;
    let highlighted = null;

    function fieldset(code) {
      return form.querySelector('fieldset.judgment[data-field="' + code + '"]');
    }

    function uBox(code) {
      return form.querySelector('input[data-u-for="' + code + '"]');
    }

    function slotName(slot) {
      return slot.document === null ? slot.field.label : "Document " + (slot.document + 1) + " · " + slot.field.label;
    }

    function spanDocument(span) {
      const match = /^document:(\d+)$/.exec(span.snapshot);
      return match ? Number(match[1]) : 0;
    }

    function readValue(slot) {
      if (widgets[slot.code]) {
        return widgets[slot.code].read();
      }
      const field = slot.field;
      const name = "field-" + slot.code;
      if (field.type === "choice" || field.type === "grade" || field.type === "verdict") {
        const raw = core.radioValue(form, name);
        if (raw === undefined) {
          return undefined;
        }
        if (raw === "U") {
          return null;
        }
        if (field.type === "grade") {
          return Number(raw);
        }
        if (field.type === "verdict") {
          return raw === "true";
        }
        return raw;
      }
      if (field.type === "number" || field.type === "date" || field.type === "text") {
        const box = uBox(slot.code);
        if (box && box.checked) {
          return null;
        }
        const input = form.querySelector('[name="' + name + '"]');
        const raw = input.value;
        if (raw.trim() === "") {
          return undefined;
        }
        if (field.type === "number") {
          const number = Number(raw);
          return Number.isFinite(number) ? number : raw;
        }
        return raw;
      }
      return undefined;
    }

    function writeValue(slot, present, value) {
      if (widgets[slot.code]) {
        widgets[slot.code].write(present, value);
        return;
      }
      const field = slot.field;
      const name = "field-" + slot.code;
      if (field.type === "choice" || field.type === "grade" || field.type === "verdict") {
        let radio;
        if (!present) {
          radio = undefined;
        } else if (value === null) {
          radio = "U";
        } else {
          radio = String(value);
        }
        core.setRadio(form, name, radio);
        return;
      }
      const input = form.querySelector('[name="' + name + '"]');
      const box = uBox(slot.code);
      if (box) {
        box.checked = present && value === null;
      }
      if (input) {
        input.value = present && value !== null && value !== undefined ? String(value) : "";
        input.disabled = Boolean(box && box.checked);
      }
    }

    function reasonBox(slot) {
      return form.querySelector('textarea[data-reason-for="' + slot.code + '"]');
    }

    function spanValue(span) {
      return { snapshot: span.snapshot, start: span.start, end: span.end, quote: span.quote };
    }

    function collect() {
      const state = { values: {}, reasons: {}, spans: [], rationale: null };
      const documents = [];
      for (let n = 0; n < nDocuments; n += 1) {
        documents.push({ values: {}, reasons: {} });
      }
      slots.forEach(function (slot) {
        const target = slot.document === null ? state : documents[slot.document];
        const field = slot.field;
        if (RELATIONS[field.type]) {
          target.values[field.code] = relations[field.code].map(function (entry) {
            return Object.assign({}, entry, entry.members ? { members: entry.members.slice() } : {});
          });
          return;
        }
        if (field.type === "spans") {
          // A spans field holds its spans as its value; every other field's evidence is
          // in the annotation's span list, each span naming its field.
          const own = spansFor(field.code, slot.document).map(spanValue);
          if (own.length) {
            target.values[field.code] = own;
          } else if (field.required) {
            target.values[field.code] = [];
          }
          return;
        }
        const value = readValue(slot);
        if (value !== undefined) {
          target.values[field.code] = value;
        }
        const reason = reasonBox(slot);
        if (reason && reason.value.trim()) {
          target.reasons[field.code] = reason.value;
        }
      });
      if (isDocuments) {
        state.documents = documents;
      }
      state.spans = spans
        .filter(function (span) {
          return byCode[span.field].type !== "spans";
        })
        .map(function (span) {
          return Object.assign({ field: span.field }, spanValue(span));
        });
      state.rationale = rationale.value.trim() ? rationale.value : null;
      return state;
    }

    function validRelation(kind, entry) {
      const position = function (value) {
        return Number.isInteger(value) && value >= 0 && value < nDocuments;
      };
      if (!entry || typeof entry !== "object") {
        return false;
      }
      if (kind === "links") {
        return position(entry.document) && position(entry.by);
      }
      return Array.isArray(entry.members) && entry.members.every(position) && position(entry.representative);
    }

    function apply(state) {
      state = state && typeof state === "object" ? state : {};
      const values = state.values && typeof state.values === "object" ? state.values : {};
      const reasons = state.reasons && typeof state.reasons === "object" ? state.reasons : {};
      const documents = Array.isArray(state.documents) ? state.documents : [];
      const given = (Array.isArray(state.spans) ? state.spans : []).slice();
      slots.forEach(function (slot) {
        const field = slot.field;
        let source = { values: values, reasons: reasons };
        if (slot.document !== null) {
          const entry = documents[slot.document];
          source = entry && typeof entry === "object" ? entry : {};
        }
        const slotValues = source.values && typeof source.values === "object" ? source.values : {};
        const slotReasons = source.reasons && typeof source.reasons === "object" ? source.reasons : {};
        if (RELATIONS[field.type]) {
          relations[field.code] = (Array.isArray(slotValues[field.code]) ? slotValues[field.code] : [])
            .filter(function (entry) {
              return validRelation(field.type, entry);
            })
            .map(function (entry) {
              return field.type === "links"
                ? { document: entry.document, by: entry.by }
                : { representative: entry.representative, members: entry.members.slice() };
            });
          return;
        }
        if (field.type === "spans") {
          if (Array.isArray(slotValues[field.code])) {
            slotValues[field.code].forEach(function (span) {
              given.push(Object.assign({}, span, { field: field.code }));
            });
          }
          return;
        }
        writeValue(slot, field.code in slotValues, slotValues[field.code]);
        const reason = reasonBox(slot);
        if (reason) {
          reason.value = typeof slotReasons[field.code] === "string" ? slotReasons[field.code] : "";
        }
      });
      spans = [];
      given.forEach(function (span) {
        if (
          span &&
          byCode[span.field] &&
          snapshotNames[span.snapshot] &&
          Number.isInteger(span.start) &&
          Number.isInteger(span.end)
        ) {
          spans.push({ field: span.field, snapshot: span.snapshot, start: span.start, end: span.end, quote: String(span.quote) });
        }
      });
      rationale.value = typeof state.rationale === "string" ? state.rationale : "";
    }

    // A failed answer has nothing to judge: its annotation has no values (`values: null`).
    const failed = Boolean(core.data.failed);

    function toAnnotation(state) {
      if (failed) {
        return { values: null, reasons: {}, spans: [], rationale: state.rationale };
      }
      const values = Object.assign({}, state.values);
      Object.keys(widgets).forEach(function (code) {
        if (code in values) {
          values[code] = widgets[code].toValue(values[code]);
        }
      });
      const annotation = { values: values, reasons: state.reasons, spans: state.spans, rationale: state.rationale };
      if (isDocuments) {
        annotation.documents = state.documents;
      }
      return annotation;
    }

    /** The values and reasons a slot reads from a state: the unit's or its document's. */
    function slotPart(state, slot) {
      if (slot.document === null) {
        return state;
      }
      const entry = (state.documents || [])[slot.document];
      return entry || { values: {}, reasons: {} };
    }

    function resolved(state, slot) {
      const part = slotPart(state, slot);
      return slot.base in part.values && part.values[slot.base] !== null;
    }

    /** The spans of field `code`; of a per-document field's `document` when given. */
    function spansFor(code, document) {
      return spans.filter(function (span) {
        return span.field === code && (document === null || document === undefined || spanDocument(span) === document);
      });
    }

    function problems(state) {
      const found = [];
      if (failed) {
        return found;
      }
      slots.forEach(function (slot) {
        const field = slot.field;
        if (RELATIONS[field.type]) {
          return;
        }
        const part = slotPart(state, slot);
        const name = slotName(slot);
        const present = field.code in part.values;
        if (widgets[slot.code]) {
          found.push.apply(found, widgets[slot.code].problems(present ? part.values[field.code] : [], state));
        }
        if (field.required && !present && field.type !== "spans") {
          found.push(name + ": give a value" + (field.allow_u ? " or U." : "."));
        }
        if (present && part.values[field.code] === null && !field.allow_u) {
          found.push(name + ": U is not allowed here.");
        }
        const hasReason = Boolean(part.reasons[field.code]);
        if (field.reason === "required" && present && !hasReason) {
          found.push(name + ": give a reason.");
        }
        if (field.reason === "required_when_resolved" && resolved(state, slot) && !hasReason) {
          found.push(name + ": a resolved value needs a reason.");
        }
        if (field.evidence === "required" && resolved(state, slot) && !spansFor(field.code, slot.document).length) {
          found.push(name + ": a resolved value needs an evidence span: select the passage and attach it.");
        }
      });
      return found;
    }

    // --- set-level relations between documents (links, groups) ----------------------------
    function documentWord(position, capital) {
      return (capital ? "Document " : "document ") + (position + 1);
    }

    function relationText(kind, entry) {
      if (kind === "links") {
        return documentWord(entry.document, true) + " is contradicted by " + documentWord(entry.by);
      }
      const others = entry.members.filter(function (member) {
        return member !== entry.representative;
      });
      return (
        "Documents " +
        entry.members.map(function (m) { return m + 1; }).join(", ") +
        " are redundant; " + documentWord(entry.representative) + " represents them (" +
        others.map(function (m) { return documentWord(m); }).join(", ") + " get a′ = 0)"
      );
    }

    function relationNote(code, text) {
      const note = form.querySelector('[data-note-for="' + code + '"]');
      if (note) {
        note.textContent = text || "";
        note.classList.toggle("form-error", Boolean(text));
      }
    }

    function addLink(code) {
      const editor = form.querySelector('[data-link-editor="' + code + '"]');
      const documentPosition = Number(editor.querySelector("select[data-link-document]").value);
      const by = Number(editor.querySelector("select[data-link-by]").value);
      if (documentPosition === by) {
        relationNote(code, "A document cannot contradict itself: choose two different documents.");
        return;
      }
      const exists = relations[code].some(function (entry) {
        return entry.document === documentPosition && entry.by === by;
      });
      if (exists) {
        relationNote(code, "This link is already listed.");
        return;
      }
      relations[code].push({ document: documentPosition, by: by });
      relations[code].sort(function (a, b) {
        return a.document - b.document || a.by - b.by;
      });
      relationNote(code, "");
      core.changed();
    }

    function addGroup(code) {
      const editor = form.querySelector('[data-group-editor="' + code + '"]');
      const members = Array.from(editor.querySelectorAll("input[data-group-member]:checked")).map(function (box) {
        return Number(box.value);
      });
      const representative = Number(editor.querySelector("select[data-group-representative]").value);
      if (members.length < 2) {
        relationNote(code, "A group has two or more documents: tick its members.");
        return;
      }
      if (members.indexOf(representative) < 0) {
        relationNote(code, "The representative must be one of the ticked members.");
        return;
      }
      const taken = members.filter(function (member) {
        return relations[code].some(function (group) {
          return group.members.indexOf(member) >= 0;
        });
      });
      if (taken.length) {
        relationNote(code, documentWord(taken[0], true) + " is already in a group: a document is in one group at most.");
        return;
      }
      relations[code].push({ representative: representative, members: members.sort(function (a, b) { return a - b; }) });
      relations[code].sort(function (a, b) {
        return a.members[0] - b.members[0];
      });
      editor.querySelectorAll("input[data-group-member]").forEach(function (box) {
        box.checked = false;
      });
      relationNote(code, "");
      core.changed();
    }

    function renderRelations() {
      Object.keys(relations).forEach(function (code) {
        const kind = byCode[code].type;
        const list = form.querySelector("[data-" + kind + '-for="' + code + '"]');
        if (!list) {
          return;
        }
        const items = relations[code].map(function (entry, index) {
          return core.el("li", { className: "relation-item", "data-relation-index": index }, [
            core.el("span", { className: "relation-text", text: relationText(kind, entry) }),
            core.el("button", {
              type: "button",
              className: "relation-remove",
              "data-relation-remove": code,
              "data-relation-index": index,
              "aria-label": "Remove: " + relationText(kind, entry),
              text: "×",
            }),
          ]);
        });
        list.replaceChildren.apply(list, items);
        const empty = form.querySelector('[data-empty-for="' + code + '"]');
        if (empty) {
          empty.hidden = items.length > 0;
        }
      });
    }

    function spanItem(span, index) {
      return core.el(
        "li",
        { className: "span-item", "data-field": span.field, "data-start": span.start, "data-end": span.end, "data-in": span.snapshot },
        [
          core.el("button", {
            type: "button",
            className: "span-quote",
            "data-span-index": index,
            title: "Show in the " + span.snapshot,
            text: "“" + core.shorten(span.quote, 90) + "”",
          }),
          core.el("span", { className: "span-where muted", text: span.snapshot + " " + span.start + "–" + span.end }),
          core.el("button", {
            type: "button",
            className: "span-remove",
            "data-span-index": index,
            "aria-label": "Remove this span from " + byCode[span.field].label,
            text: "×",
          }),
        ]
      );
    }

    function refresh(state) {
      slots.forEach(function (slot) {
        const missing = form.querySelector('[data-missing-for="' + slot.code + '"]');
        if (missing) {
          const lacking = resolved(state, slot) && spansFor(slot.base, slot.document).length === 0;
          missing.hidden = !lacking;
          fieldset(slot.code).classList.toggle("has-problem", lacking);
        }
        const box = uBox(slot.code);
        const input = form.querySelector('[name="field-' + slot.code + '"]:not([type="radio"])');
        if (box && input) {
          input.disabled = box.checked;
        }
      });
      renderRelations();
      // A number's slider mirrors its input, which holds the value.
      form.querySelectorAll("input[data-range-for]").forEach(function (range) {
        const number = document.getElementById(range.dataset.rangeFor);
        const value = Number(number.value);
        const set = number.value.trim() !== "" && Number.isFinite(value);
        range.classList.toggle("unset", !set);
        range.disabled = number.disabled;
        if (set) {
          range.value = String(value);
        }
      });
      const widgetKeys = [];
      Object.keys(widgets).forEach(function (code) {
        const value = Array.isArray(state.values[code]) ? state.values[code] : [];
        widgets[code].refresh(value, state);
        widgetKeys.push(widgets[code].marksKey(value));
      });
      const key = JSON.stringify(spans) + JSON.stringify(widgetKeys);
      if (key === highlighted) {
        return;
      }
      highlighted = key;
      form.querySelectorAll("[data-spans-for]").forEach(function (list) {
        const items = [];
        const only = list.dataset.spansDocument;
        spans.forEach(function (span, index) {
          if (span.field === list.dataset.spansFor && (only === undefined || spanDocument(span) === Number(only))) {
            items.push(spanItem(span, index));
          }
        });
        list.replaceChildren.apply(list, items);
      });
      core.highlight(function (snapshot) {
        const marks = [];
        spans.forEach(function (span, index) {
          if (span.snapshot === snapshot.kind) {
            marks.push({
              start: span.start,
              end: span.end,
              // Every field's marks share a look; a field may have its own colour too.
              className: "j-field j-" + span.field,
              key: "span:" + index,
              title: byCode[span.field].label,
            });
          }
        });
        Object.keys(widgets).forEach(function (code) {
          const value = Array.isArray(state.values[code]) ? state.values[code] : [];
          marks.push.apply(marks, widgets[code].marks(snapshot, value));
        });
        return marks;
      });
    }

    form.addEventListener("click", function (event) {
      const linkAdd = event.target.closest("button[data-link-add]");
      if (linkAdd) {
        addLink(linkAdd.dataset.linkAdd);
        return;
      }
      const groupAdd = event.target.closest("button[data-group-add]");
      if (groupAdd) {
        addGroup(groupAdd.dataset.groupAdd);
        return;
      }
      const relationRemove = event.target.closest("button[data-relation-remove]");
      if (relationRemove) {
        relations[relationRemove.dataset.relationRemove].splice(Number(relationRemove.dataset.relationIndex), 1);
        core.changed();
        return;
      }
      const remove = event.target.closest("button.span-remove");
      if (remove) {
        spans.splice(Number(remove.dataset.spanIndex), 1);
        core.changed();
        return;
      }
      const quote = event.target.closest("button.span-quote");
      if (quote) {
        core.flash("span:" + quote.dataset.spanIndex);
      }
    });

    form.querySelectorAll("input[data-range-for]").forEach(function (range) {
      range.addEventListener("input", function () {
        document.getElementById(range.dataset.rangeFor).value = range.value;
        core.changed();
      });
    });

    // --- the toolbar after a selection ------------------------------------------------
    function placeToolbar(found) {
      if (!toolbar || !found) {
        if (toolbar) {
          toolbar.hidden = true;
        }
        pending = null;
        return;
      }
      pending = found;
      toolbar.hidden = false;
      const rect = found.rect;
      const width = toolbar.offsetWidth;
      const left = Math.max(8, Math.min(window.innerWidth - width - 8, rect.left + rect.width / 2 - width / 2));
      let top = rect.bottom + 8;
      if (top + toolbar.offsetHeight > window.innerHeight - 8) {
        top = Math.max(8, rect.top - toolbar.offsetHeight - 8);
      }
      toolbar.style.left = left + window.scrollX + "px";
      toolbar.style.top = top + window.scrollY + "px";
    }

    core.onSelection(function (found, live) {
      placeToolbar(live ? found : null);
    });
    // The snapshot panes scroll on their own: keep the toolbar beside the selection.
    document.addEventListener(
      "scroll",
      function () {
        if (toolbar && !toolbar.hidden && pending) {
          const range = window.getSelection();
          if (range && range.rangeCount && !range.isCollapsed) {
            placeToolbar(Object.assign({}, pending, { rect: range.getRangeAt(0).getBoundingClientRect() }));
          }
        }
      },
      { capture: true, passive: true }
    );
    document.addEventListener(
      "mousedown",
      function (event) {
        if (toolbar && !toolbar.hidden && event.button === 0 && !toolbar.contains(event.target)) {
          placeToolbar(null);
        }
      },
      true
    );
    if (toolbar) {
      toolbar.addEventListener("mousedown", function (event) {
        event.preventDefault(); // keep the selection while a button is pressed
      });
      toolbar.addEventListener("click", function (event) {
        const button = event.target.closest("button[data-attach]");
        const found = core.selection() || pending;
        if (!button || !found) {
          return;
        }
        const span = Object.assign({ field: button.dataset.attach }, found.span);
        const duplicate = spans.some(function (item) {
          return item.field === span.field && item.snapshot === span.snapshot && item.start === span.start && item.end === span.end;
        });
        if (!duplicate) {
          spans.push(span);
          spans.sort(function (a, b) {
            if (a.field !== b.field) {
              return a.field < b.field ? -1 : 1;
            }
            if (a.snapshot !== b.snapshot) {
              return a.snapshot < b.snapshot ? -1 : 1;
            }
            return a.start - b.start || a.end - b.end;
          });
        }
        core.clearSelection();
        core.changed();
      });
    }

    // --- keyboard: a field's key goes to it, an option's key chooses it -----------------
    const byShortcut = {};
    fields.forEach(function (field) {
      if (field.key) {
        byShortcut[field.key.toLowerCase()] = field.code;
      }
    });

    // The document being worked on: the card last clicked or focused in.
    function markDocument(position) {
      activeDocument = position;
      form.querySelectorAll(".document-card[data-document]").forEach(function (card) {
        card.classList.toggle("is-current", Number(card.dataset.document) === position);
      });
    }

    function noteDocument(event) {
      const card = event.target.closest && event.target.closest(".document-card[data-document]");
      if (card) {
        markDocument(Number(card.dataset.document));
        // A click on the document outside its fields leaves the field last used: the
        // next key is a field's key again (a grade's "u" would otherwise choose U there).
        if (event.type === "mousedown" && !event.target.closest("fieldset.judgment[data-field]")) {
          active = null;
          form.querySelectorAll("fieldset.is-active").forEach(function (node) {
            node.classList.remove("is-active");
          });
        }
      }
    }
    document.addEventListener("focusin", noteDocument);
    document.addEventListener("mousedown", noteDocument, true);

    function activate(code) {
      active = code;
      form.querySelectorAll("fieldset.judgment[data-field]").forEach(function (node) {
        node.classList.toggle("is-active", node.dataset.field === code);
      });
      const node = fieldset(code);
      const target =
        node.querySelector('input[type="radio"]:checked') ||
        node.querySelector("input, textarea, select");
      if (target) {
        target.focus({ preventScroll: true });
      }
      node.scrollIntoView({ block: "nearest" });
      if (node.dataset.document !== undefined) {
        markDocument(Number(node.dataset.document));
      }
    }

    document.addEventListener("keydown", function (event) {
      if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) {
        return;
      }
      if (core.isTyping(event.target)) {
        return;
      }
      const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
      if (key === "Escape") {
        if (toolbar && !toolbar.hidden) {
          core.clearSelection();
        }
        return;
      }
      const focused = event.target.closest && event.target.closest("fieldset.judgment[data-field]");
      const code = focused ? focused.dataset.field : active;
      if (code) {
        const option = fieldset(code).querySelector('input[type="radio"][data-key="' + CSS.escape(key) + '"]');
        if (option) {
          event.preventDefault();
          option.checked = true;
          option.focus({ preventScroll: true });
          option.dispatchEvent(new Event("change", { bubbles: true }));
          return;
        }
      }
      if (byShortcut[key]) {
        event.preventDefault();
        const field = byCode[byShortcut[key]];
        // A per-document field's key goes to it on the document being worked on.
        activate(field.placement === "document" ? field.code + "-" + activeDocument : field.code);
      }
    });

    return { collect: collect, apply: apply, toAnnotation: toAnnotation, problems: problems, refresh: refresh };
  }

  window.ClaimgateAnnotate.register("fields", fieldsForm);
})();
